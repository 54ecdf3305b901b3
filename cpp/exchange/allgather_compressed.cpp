// allgather-compressed: NEURON's compressed all-gather. Every rank contributes a buffer of the
// same fixed size: a count word, then compact records of a few bytes each (the neuron's
// rank-local index in as many bytes as the largest rank needs, the step offset in one byte, or
// two for long intervals) instead of 8. One fixed-size all-gather per interval, no count
// exchange. A rank with more spikes than fit sends the rest in an overflow round (an all-gather-v
// whose sizes every rank already knows from the counts), and the buffer grows for later
// intervals; it shrinks again when traffic falls. Cost per rank: (P - 1) fixed buffers out.
#include <cstring>

#include "exchange/exchange.hpp"
#include "exchange/fixed_buffer.hpp"

namespace ranvier {
namespace {

int bytes_for(uint64_t max_value) {
  int b = 1;
  while (b < 8 && (max_value >> (8 * b))) ++b;
  return b;
}

class AllgatherCompressedExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement& placement, const TargetTable&, uint32_t steps) override {
    comm_ = &comm;
    placement_ = &placement;
    uint64_t most = 1;
    for (int r = 0; r < comm.size(); ++r) most = std::max(most, placement.rank_count(r));
    index_bytes_ = bytes_for(most - 1);
    offset_bytes_ = steps <= 256 ? 1 : 2;
    counts_.resize(comm.size());
    displs_.resize(comm.size());
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    const int P = comm_->size();
    local_ = local;
    const size_t fit = std::min<size_t>(local.size(), capacity_.capacity());
    send_.assign(words_per_rank(), 0);
    send_[0] = local.size();
    pack(local.subspan(0, fit), reinterpret_cast<uint8_t*>(send_.data() + 1));
    recv_.resize(size_t(P) * words_per_rank());
    in_flight_.begin(*comm_, comm_->iallgather(send_.data(), words_per_rank(), recv_.data()));
    c.spikes_sent += local.size() * P;
    c.bytes_sent += (P - 1) * sizeof(uint64_t) * words_per_rank();
    c.messages_sent += P - 1;
  }

  void progress() override {
    in_flight_.progress();
  }

  void finish(std::vector<SpikeRecord>& received, ExchangeCounters& c) override {
    in_flight_.complete();
    const int P = comm_->size(), me = comm_->rank();
    const size_t W = words_per_rank(), cap = capacity_.capacity();
    received.clear();
    uint64_t most = 0;
    for (int r = 0; r < P; ++r) {
      const uint64_t n = recv_[size_t(r) * W];
      most = std::max(most, n);
      unpack(r, reinterpret_cast<const uint8_t*>(recv_.data() + size_t(r) * W + 1), std::min<uint64_t>(n, cap),
             received);
    }
    if (most > cap) {  // overflow round: the records past the capacity, sizes known to all
      size_t total = 0;
      for (int r = 0; r < P; ++r) {
        const uint64_t n = recv_[size_t(r) * W];
        counts_[r] = n > cap ? words_for(n - cap) : 0;
        displs_[r] = total;
        total += counts_[r];
      }
      const size_t mine = counts_[me];
      std::vector<uint64_t> extra_out(mine, 0), extra_in(total, 0);
      if (mine) pack(local_.subspan(cap), reinterpret_cast<uint8_t*>(extra_out.data()));
      comm_->allgatherv(extra_out.data(), mine, extra_in.data(), counts_, displs_);
      for (int r = 0; r < P; ++r) {
        const uint64_t n = recv_[size_t(r) * W];
        if (n > cap) unpack(r, reinterpret_cast<const uint8_t*>(extra_in.data() + displs_[r]), n - cap, received);
      }
      c.overflow_rounds += 1;
      if (mine) { c.bytes_sent += (P - 1) * sizeof(uint64_t) * mine; c.messages_sent += P - 1; }
    }
    c.spikes_received += received.size();
    if (capacity_.update(most)) c.exchange_resizes += 1;
  }

 private:
  size_t record_bytes() const { return size_t(index_bytes_ + offset_bytes_); }
  size_t words_for(uint64_t records) const { return (records * record_bytes() + 7) / 8; }
  size_t words_per_rank() const { return 1 + words_for(capacity_.capacity()); }

  void pack(std::span<const SpikeRecord> recs, uint8_t* out) const {
    for (SpikeRecord rec : recs) {
      const uint64_t j = placement_->rank_index(record_gid(rec));
      const uint32_t o = record_offset(rec);
      std::memcpy(out, &j, index_bytes_);  // little-endian: the low bytes
      std::memcpy(out + index_bytes_, &o, offset_bytes_);
      out += record_bytes();
    }
  }
  void unpack(int rank, const uint8_t* in, uint64_t n, std::vector<SpikeRecord>& out) const {
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t j = 0;
      uint32_t o = 0;
      std::memcpy(&j, in, index_bytes_);
      std::memcpy(&o, in + index_bytes_, offset_bytes_);
      out.push_back(make_record(placement_->rank_gid(rank, j), o));
      in += record_bytes();
    }
  }

  Communicator* comm_ = nullptr;
  const Placement* placement_ = nullptr;
  int index_bytes_ = 4, offset_bytes_ = 2;
  FixedCapacity capacity_{FixedCapacity::kMinimum};
  std::span<const SpikeRecord> local_;
  std::vector<uint64_t> send_, recv_;
  std::vector<size_t> counts_, displs_;
  InFlight in_flight_;
};

}  // namespace

std::unique_ptr<Exchange> make_allgather_compressed_exchange() {
  return std::make_unique<AllgatherCompressedExchange>();
}

}  // namespace ranvier
