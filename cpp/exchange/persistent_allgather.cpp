// persistent-allgather: record and replay. One persistent all-gather (MPI_Allgather_init) of a
// fixed-size slot per rank, initialised once in configure() and then only started and completed
// each interval: the library plans the operation (algorithm, schedule, buffers) once instead of
// every interval. A slot is a count word, then up to `capacity` records; every rank receives
// every slot, so every rank sees every count and all agree, without another message, when one
// rank's spikes did not fit: then every rank frees the operation, initialises it again with
// larger slots (at least double) and redoes the interval's exchange with it, so nothing is lost
// and all grow together. After 256 quiet intervals the slots shrink the same way (fixed_buffer.hpp).
// Cost per rank: (P - 1) slots of 1 + capacity words out, whatever the traffic.
#include <algorithm>

#include "exchange/exchange.hpp"
#include "exchange/fixed_buffer.hpp"

namespace ranvier {
namespace {

class PersistentAllgatherExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement&, const TargetTable&, uint32_t) override {
    comm_ = &comm;
    op_.bind(comm);
    initialise();
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    local_ = local;
    fill();
    op_.start();
    count_round(c);
    c.spikes_sent += local.size() * comm_->size();
  }

  void progress() override { op_.progress(); }

  void finish(std::vector<SpikeRecord>& received, ExchangeCounters& c) override {
    op_.complete();
    const int P = comm_->size();
    uint64_t most = 0;
    for (int r = 0; r < P; ++r) most = std::max(most, recv_[size_t(r) * slot_words()]);
    const bool overflow = most > capacity_.capacity();
    if (overflow) {  // every rank saw the same counts: all grow together and redo the interval
      capacity_.update(most);
      reinitialise(c);
      fill();
      op_.start();
      op_.complete();
      count_round(c);
      c.overflow_rounds += 1;
    }
    received.clear();
    const size_t W = slot_words();
    for (int r = 0; r < P; ++r) {
      const uint64_t* slot = recv_.data() + size_t(r) * W;
      received.insert(received.end(), slot + 1, slot + 1 + slot[0]);
    }
    if (!overflow && capacity_.update(most)) reinitialise(c);  // shrunk: smaller slots from the next interval
    c.spikes_received += received.size();
  }

 private:
  size_t slot_words() const { return 1 + capacity_.capacity(); }

  // Collective: (re)initialises the operation for the current capacity.
  void initialise() {
    op_.release();
    send_.assign(slot_words(), 0);
    recv_.assign(size_t(comm_->size()) * slot_words(), 0);
    op_.add(comm_->allgather_init(send_.data(), slot_words(), recv_.data()));
  }

  // This rank's slot: its count, then as many of its records as fit (all, after a growth).
  void fill() {
    const size_t fit = std::min<size_t>(local_.size(), capacity_.capacity());
    send_[0] = local_.size();
    std::copy_n(local_.data(), fit, send_.data() + 1);
  }

  void reinitialise(ExchangeCounters& c) {
    initialise();
    c.exchange_resizes += 1;
    c.persistent_reinits += 1;
  }

  void count_round(ExchangeCounters& c) const {
    const uint64_t P = comm_->size();
    c.bytes_sent += (P - 1) * sizeof(uint64_t) * slot_words();
    c.messages_sent += P - 1;
  }

  Communicator* comm_ = nullptr;
  FixedCapacity capacity_{FixedCapacity::kMinimum, 256, 2};
  std::span<const SpikeRecord> local_;
  std::vector<uint64_t> send_, recv_;
  PersistentOps op_;  // declared last: freed first, while the buffers it names still exist
};

}  // namespace

std::unique_ptr<Exchange> make_persistent_allgather_exchange() {
  return std::make_unique<PersistentAllgatherExchange>();
}

}  // namespace ranvier
