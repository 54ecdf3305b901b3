// allgather: every rank receives every spike (the DPSNN and NEST default). Two collectives
// per cycle: the counts, then the records. Cost per rank and cycle: receives all S spikes.
#include "exchange/exchange.hpp"

namespace ranvier {
namespace {

class AllgatherExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement&, const TargetTable&) override {
    comm_ = &comm;
    counts_.resize(comm.size());
    displs_.resize(comm.size());
    words_.resize(comm.size());
  }

  void exchange(std::span<const SpikeRecord> local, std::vector<SpikeRecord>& received,
                ExchangeCounters& c) override {
    const int P = comm_->size();
    comm_->allgather_word(local.size(), words_.data());
    size_t total = 0;
    for (int r = 0; r < P; ++r) { counts_[r] = words_[r]; displs_[r] = total; total += counts_[r]; }
    received.resize(total);
    comm_->allgatherv(local.data(), local.size(), received.data(), counts_, displs_);
    c.spikes_sent += local.size() * P;
    c.spikes_received += total;
    c.bytes_sent += (P - 1) * (sizeof(uint64_t) * (local.size() + 1));
    c.messages_sent += (P - 1) * (local.empty() ? 1 : 2);
  }

 private:
  Communicator* comm_ = nullptr;
  std::vector<size_t> counts_, displs_;
  std::vector<uint64_t> words_;
};

}  // namespace

std::unique_ptr<Exchange> make_allgather_exchange() { return std::make_unique<AllgatherExchange>(); }

}  // namespace ranvier
