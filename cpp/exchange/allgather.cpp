// allgather: every rank receives every spike (the DPSNN and NEST default). Per interval, one
// all-gather of counts, then an all-gather-v of the records (non-blocking, so the overlapped
// schedule can compute while it moves). Cost per rank: sends its s records to P - 1 ranks,
// receives all S.
#include "exchange/exchange.hpp"

namespace ranvier {
namespace {

class AllgatherExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement&, const TargetTable&, uint32_t) override {
    comm_ = &comm;
    counts_.resize(comm.size());
    displs_.resize(comm.size());
    words_.resize(comm.size());
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    const int P = comm_->size();
    comm_->allgather_word(local.size(), words_.data());
    size_t total = 0;
    for (int r = 0; r < P; ++r) { counts_[r] = words_[r]; displs_[r] = total; total += counts_[r]; }
    buffer_.resize(total);
    in_flight_.begin(*comm_, comm_->iallgatherv(local.data(), local.size(), buffer_.data(), counts_, displs_));
    c.spikes_sent += local.size() * P;
    c.spikes_received += total;
    c.bytes_sent += (P - 1) * (sizeof(uint64_t) * (local.size() + 1));
    c.messages_sent += (P - 1) * (local.empty() ? 1 : 2);
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
  std::vector<size_t> counts_, displs_;
  std::vector<uint64_t> words_;
  std::vector<SpikeRecord> buffer_;
  InFlight in_flight_;
};

}  // namespace

std::unique_ptr<Exchange> make_allgather_exchange() { return std::make_unique<AllgatherExchange>(); }

}  // namespace ranvier
