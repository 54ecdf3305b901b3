// Helpers shared by the strategies that address spikes to the ranks holding their targets.
#include <algorithm>

#include "exchange/exchange.hpp"

namespace ranvier {

void Buckets::fill(std::span<const SpikeRecord> local) {
  const Placement& placement = *placement_;
  const int ranks = ranks_;
  const auto& begin = targets_->dest_begin;
  const auto& dest = targets_->dest_ranks;
  counts.assign(ranks, 0);
  displs.resize(ranks);
  for (SpikeRecord rec : local) {
    const uint64_t j = placement.rank_index(record_gid(rec));
    for (uint64_t i = begin[j]; i < begin[j + 1]; ++i) ++counts[dest[i]];
  }
  size_t total = 0;
  for (int r = 0; r < ranks; ++r) { displs[r] = total; total += counts[r]; }
  records.resize(total);
  std::vector<size_t>& cursor = counts;  // reuse: counts are rebuilt as the cursor advances
  std::fill(cursor.begin(), cursor.end(), 0);
  for (SpikeRecord rec : local) {
    const uint64_t j = placement.rank_index(record_gid(rec));
    for (uint64_t i = begin[j]; i < begin[j + 1]; ++i) {
      const uint32_t r = dest[i];
      records[displs[r] + cursor[r]++] = rec;
    }
  }
}

void neighbour_ranks(Communicator& comm, const TargetTable& targets, std::vector<int>& destinations,
                     std::vector<int>& sources) {
  const int P = comm.size(), me = comm.rank();
  std::vector<uint64_t> out(P, 0), in(P, 0);
  for (uint32_t r : targets.dest_ranks) out[r] = 1;
  comm.alltoall_word(out.data(), in.data());
  destinations.clear();
  sources.clear();
  for (int r = 0; r < P; ++r) {
    if (r == me) continue;
    if (out[r]) destinations.push_back(r);
    if (in[r]) sources.push_back(r);
  }
}

}  // namespace ranvier
