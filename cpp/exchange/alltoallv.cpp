// alltoallv: each spike goes only to the ranks that hold at least one of its targets
// (the target table). Two collectives per cycle: an all-to-all of counts, then the records.
#include "exchange/exchange.hpp"

namespace ranvier {
namespace {

class AlltoallvExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement& placement, const TargetTable& targets) override {
    comm_ = &comm;
    placement_ = &placement;
    targets_ = &targets;
    const int P = comm.size();
    send_counts_.resize(P); send_displs_.resize(P); recv_counts_.resize(P); recv_displs_.resize(P);
    words_out_.resize(P); words_in_.resize(P); cursor_.resize(P);
  }

  void exchange(std::span<const SpikeRecord> local, std::vector<SpikeRecord>& received,
                ExchangeCounters& c) override {
    const int P = comm_->size(), me = comm_->rank();
    const auto& begin = targets_->dest_begin;
    const auto& ranks = targets_->dest_ranks;
    std::fill(send_counts_.begin(), send_counts_.end(), 0);
    for (SpikeRecord rec : local) {
      const uint64_t j = placement_->rank_index(record_gid(rec));
      for (uint64_t i = begin[j]; i < begin[j + 1]; ++i) ++send_counts_[ranks[i]];
    }
    size_t total_out = 0;
    for (int r = 0; r < P; ++r) { send_displs_[r] = total_out; cursor_[r] = total_out; total_out += send_counts_[r]; }
    send_.resize(total_out);
    for (SpikeRecord rec : local) {
      const uint64_t j = placement_->rank_index(record_gid(rec));
      for (uint64_t i = begin[j]; i < begin[j + 1]; ++i) send_[cursor_[ranks[i]]++] = rec;
    }
    for (int r = 0; r < P; ++r) words_out_[r] = send_counts_[r];
    comm_->alltoall_word(words_out_.data(), words_in_.data());
    size_t total_in = 0;
    for (int r = 0; r < P; ++r) { recv_counts_[r] = words_in_[r]; recv_displs_[r] = total_in; total_in += recv_counts_[r]; }
    received.resize(total_in);
    comm_->alltoallv(send_.data(), send_counts_, send_displs_, received.data(), recv_counts_, recv_displs_);

    c.spikes_sent += total_out;
    c.spikes_received += total_in;
    for (int r = 0; r < P; ++r) {
      if (r == me) continue;
      c.bytes_sent += sizeof(uint64_t) * (send_counts_[r] + 1);
      c.messages_sent += send_counts_[r] ? 2 : 1;
    }
  }

 private:
  Communicator* comm_ = nullptr;
  const Placement* placement_ = nullptr;
  const TargetTable* targets_ = nullptr;
  std::vector<size_t> send_counts_, send_displs_, recv_counts_, recv_displs_, cursor_;
  std::vector<uint64_t> words_out_, words_in_;
  std::vector<SpikeRecord> send_;
};

}  // namespace

std::unique_ptr<Exchange> make_alltoallv_exchange() { return std::make_unique<AlltoallvExchange>(); }

}  // namespace ranvier
