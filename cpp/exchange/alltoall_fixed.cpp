// alltoall-fixed: one fixed-size all-to-all per interval, no separate count exchange. The block
// for each destination starts with a header word (low 32 bits: records for that destination;
// high 32 bits: the sender's largest count to any destination), then up to `capacity` records.
// The headers give every rank the same global maximum, so all agree without another collective
// on an overflow round (an all-to-all-v of the records past the capacity, sizes known to both
// sides) and on growing or shrinking the blocks. Cost per rank: (P - 1) blocks of 1 + capacity
// words out, whatever the traffic.
#include <stdexcept>

#include "exchange/exchange.hpp"
#include "exchange/fixed_buffer.hpp"

namespace ranvier {
namespace {

class AlltoallFixedExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement& placement, const TargetTable& targets, uint32_t) override {
    comm_ = &comm;
    out_.bind(placement, targets, comm.size());
    const int P = comm.size();
    extra_counts_out_.resize(P); extra_displs_out_.resize(P); extra_counts_in_.resize(P); extra_displs_in_.resize(P);
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    const int P = comm_->size();
    out_.fill(local);
    const size_t W = block_words(), cap = capacity_.capacity();
    uint64_t most = 0;
    for (int r = 0; r < P; ++r) most = std::max<uint64_t>(most, out_.counts[r]);
    if (most >= (uint64_t(1) << 32)) throw std::runtime_error("alltoall-fixed: more than 2^32 records to one rank");
    send_.resize(size_t(P) * W);
    for (int r = 0; r < P; ++r) {
      uint64_t* block = send_.data() + size_t(r) * W;
      const size_t n = out_.counts[r], fit = std::min(n, cap);
      block[0] = (most << 32) | n;
      std::copy_n(out_.records.data() + out_.displs[r], fit, block + 1);
      std::fill(block + 1 + fit, block + W, 0);
    }
    recv_.resize(size_t(P) * W);
    in_flight_.begin(*comm_, comm_->ialltoall(send_.data(), W, recv_.data()));
    c.spikes_sent += out_.records.size();
    c.bytes_sent += (P - 1) * sizeof(uint64_t) * W;
    c.messages_sent += P - 1;
  }

  void progress() override {
    in_flight_.progress();
  }

  void finish(std::vector<SpikeRecord>& received, ExchangeCounters& c) override {
    in_flight_.complete();
    const int P = comm_->size(), me = comm_->rank();
    const size_t W = block_words(), cap = capacity_.capacity();
    received.clear();
    uint64_t most = 0;
    for (int r = 0; r < P; ++r) {
      const uint64_t* block = recv_.data() + size_t(r) * W;
      most = std::max<uint64_t>(most, block[0] >> 32);
      received.insert(received.end(), block + 1, block + 1 + std::min<uint64_t>(block[0] & 0xFFFFFFFFu, cap));
    }
    if (most > cap) {  // overflow round: every rank knows it happens, and both sides know the sizes
      size_t total_out = 0, total_in = 0;
      for (int r = 0; r < P; ++r) {
        const uint64_t n_out = out_.counts[r], n_in = recv_[size_t(r) * W] & 0xFFFFFFFFu;
        extra_counts_out_[r] = n_out > cap ? n_out - cap : 0;
        extra_displs_out_[r] = out_.displs[r] + cap;
        extra_counts_in_[r] = n_in > cap ? n_in - cap : 0;
        extra_displs_in_[r] = total_in;
        total_in += extra_counts_in_[r];
        if (r != me && extra_counts_out_[r]) {
          total_out += extra_counts_out_[r];
          c.messages_sent += 1;
        }
      }
      const size_t before = received.size();
      received.resize(before + total_in);
      comm_->alltoallv(out_.records.data(), extra_counts_out_, extra_displs_out_, received.data() + before,
                       extra_counts_in_, extra_displs_in_);
      c.bytes_sent += sizeof(uint64_t) * total_out;
      c.overflow_rounds += 1;
    }
    c.spikes_received += received.size();
    if (capacity_.update(most)) c.exchange_resizes += 1;
  }

 private:
  size_t block_words() const { return 1 + capacity_.capacity(); }

  Communicator* comm_ = nullptr;
  FixedCapacity capacity_{FixedCapacity::kMinimum};
  Buckets out_;
  std::vector<uint64_t> send_, recv_;
  std::vector<size_t> extra_counts_out_, extra_displs_out_, extra_counts_in_, extra_displs_in_;
  InFlight in_flight_;
};

}  // namespace

std::unique_ptr<Exchange> make_alltoall_fixed_exchange() { return std::make_unique<AlltoallFixedExchange>(); }

}  // namespace ranvier
