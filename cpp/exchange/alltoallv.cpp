// alltoallv: each spike goes only to the ranks that hold at least one of its targets (the
// target table). Per interval, an all-to-all of counts, then an all-to-all-v of the records
// (non-blocking). Cost per rank: P - 1 count words, plus its records once per destination rank.
#include "exchange/exchange.hpp"

namespace ranvier {
namespace {

class AlltoallvExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement& placement, const TargetTable& targets, uint32_t) override {
    comm_ = &comm;
    out_.bind(placement, targets, comm.size());
    const int P = comm.size();
    recv_counts_.resize(P); recv_displs_.resize(P); words_out_.resize(P); words_in_.resize(P);
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    const int P = comm_->size(), me = comm_->rank();
    out_.fill(local);
    for (int r = 0; r < P; ++r) words_out_[r] = out_.counts[r];
    comm_->alltoall_word(words_out_.data(), words_in_.data());
    size_t total_in = 0;
    for (int r = 0; r < P; ++r) { recv_counts_[r] = words_in_[r]; recv_displs_[r] = total_in; total_in += recv_counts_[r]; }
    buffer_.resize(total_in);
    in_flight_.begin(*comm_, comm_->ialltoallv(out_.records.data(), out_.counts, out_.displs, buffer_.data(),
                                               recv_counts_, recv_displs_));
    c.spikes_sent += out_.records.size();
    c.spikes_received += total_in;
    for (int r = 0; r < P; ++r) {
      if (r == me) continue;
      c.bytes_sent += sizeof(uint64_t) * (out_.counts[r] + 1);
      c.messages_sent += out_.counts[r] ? 2 : 1;
    }
  }

  void progress() override {
    in_flight_.progress();
  }

  void finish(std::vector<SpikeRecord>& received, ExchangeCounters&) override {
    in_flight_.complete();
    received.swap(buffer_);
  }

 private:
  Communicator* comm_ = nullptr;
  Buckets out_;
  std::vector<size_t> recv_counts_, recv_displs_;
  std::vector<uint64_t> words_out_, words_in_;
  std::vector<SpikeRecord> buffer_;
  InFlight in_flight_;
};

}  // namespace

std::unique_ptr<Exchange> make_alltoallv_exchange() { return std::make_unique<AlltoallvExchange>(); }

}  // namespace ranvier
