// persistent-alltoall: record and replay on a persistent all-to-all-v (MPI_Alltoallv_init),
// initialised once in configure() and then only started and completed each interval. Its counts
// are bound at initialisation, so they are fixed sizes: to each rank that holds targets of this
// rank's neurons (the partners, found once from the target table) a block of a header word and
// up to `capacity` records; to every other rank the header word alone; nothing to itself (its
// own records are copied). Every rank receives a header from every rank: low 32 bits, the
// records for it; high 32 bits, the sender's largest count to any rank. So every rank knows the
// same global maximum and all agree, without another message, when a block overflowed: then
// every rank frees the operation, initialises it again with larger blocks (at least double) and
// redoes the interval's exchange, so nothing is lost and all grow together. After 256 quiet
// intervals the blocks shrink the same way (fixed_buffer.hpp).
// Cost per rank: a block of 1 + capacity words to each partner, one word to each other rank.
#include <algorithm>
#include <stdexcept>

#include "exchange/exchange.hpp"
#include "exchange/fixed_buffer.hpp"

namespace ranvier {
namespace {

class PersistentAlltoallExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement& placement, const TargetTable& targets, uint32_t) override {
    comm_ = &comm;
    op_.bind(comm);
    out_.bind(placement, targets, comm.size());
    std::vector<int> destinations, sources;
    neighbour_ranks(comm, targets, destinations, sources);
    const int P = comm.size();
    to_partner_.assign(P, 0);
    from_partner_.assign(P, 0);
    for (int d : destinations) to_partner_[d] = 1;
    for (int s : sources) from_partner_[s] = 1;
    send_counts_.resize(P); send_displs_.resize(P); recv_counts_.resize(P); recv_displs_.resize(P);
    initialise();
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    const int P = comm_->size(), me = comm_->rank();
    out_.fill(local);
    most_ = 0;
    for (int d = 0; d < P; ++d)
      if (d != me) most_ = std::max<uint64_t>(most_, out_.counts[d]);
    if (most_ >= (uint64_t(1) << 32))
      throw std::runtime_error("persistent-alltoall: more than 2^32 records to one rank");
    fill();
    op_.start();
    count_round(c);
    c.spikes_sent += out_.records.size();
  }

  void progress() override { op_.progress(); }

  void finish(std::vector<SpikeRecord>& received, ExchangeCounters& c) override {
    op_.complete();
    const int P = comm_->size(), me = comm_->rank();
    uint64_t most = most_;
    for (int s = 0; s < P; ++s)
      if (s != me) most = std::max<uint64_t>(most, recv_[recv_displs_[s]] >> 32);
    const bool overflow = most > capacity_.capacity();
    if (overflow) {  // every rank knows the same maximum: all grow together and redo the interval
      capacity_.update(most);
      reinitialise(c);
      fill();
      op_.start();
      op_.complete();
      count_round(c);
      c.overflow_rounds += 1;
    }
    received.assign(out_.records.begin() + out_.displs[me],
                    out_.records.begin() + out_.displs[me] + out_.counts[me]);
    for (int s = 0; s < P; ++s) {
      if (s == me) continue;
      const uint64_t* block = recv_.data() + recv_displs_[s];
      received.insert(received.end(), block + 1, block + 1 + (block[0] & 0xFFFFFFFFu));
    }
    if (!overflow && capacity_.update(most)) reinitialise(c);  // shrunk: smaller blocks from the next interval
    c.spikes_received += received.size();
  }

 private:
  // Collective: (re)initialises the operation for the current capacity.
  void initialise() {
    op_.release();
    const int P = comm_->size(), me = comm_->rank();
    const size_t W = 1 + capacity_.capacity();
    size_t out = 0, in = 0;
    for (int r = 0; r < P; ++r) {
      send_counts_[r] = r == me ? 0 : to_partner_[r] ? W : 1;
      recv_counts_[r] = r == me ? 0 : from_partner_[r] ? W : 1;
      send_displs_[r] = out;
      recv_displs_[r] = in;
      out += send_counts_[r];
      in += recv_counts_[r];
    }
    send_.assign(std::max<size_t>(out, 1), 0);
    recv_.assign(std::max<size_t>(in, 1), 0);
    op_.add(comm_->alltoallv_init(send_.data(), send_counts_, send_displs_, recv_.data(), recv_counts_,
                                  recv_displs_));
  }

  void reinitialise(ExchangeCounters& c) {
    initialise();
    c.exchange_resizes += 1;
    c.persistent_reinits += 1;
  }

  // Each block: its header, then as many of the records for that rank as fit (all, after a growth).
  // Only partners have records (Buckets sends a record only where it has targets).
  void fill() {
    const int P = comm_->size(), me = comm_->rank();
    const uint64_t cap = capacity_.capacity();
    for (int d = 0; d < P; ++d) {
      if (d == me) continue;
      uint64_t* block = send_.data() + send_displs_[d];
      const uint64_t n = out_.counts[d];
      block[0] = (most_ << 32) | n;
      if (to_partner_[d]) std::copy_n(out_.records.data() + out_.displs[d], std::min(n, cap), block + 1);
    }
  }

  void count_round(ExchangeCounters& c) const {
    const int P = comm_->size(), me = comm_->rank();
    for (int d = 0; d < P; ++d)
      if (d != me) c.bytes_sent += sizeof(uint64_t) * send_counts_[d];
    c.messages_sent += P - 1;
  }

  Communicator* comm_ = nullptr;
  FixedCapacity capacity_{FixedCapacity::kMinimum, 256, 2};
  Buckets out_;
  std::vector<uint8_t> to_partner_, from_partner_;
  uint64_t most_ = 0;  // this interval's largest count from this rank to another
  std::vector<size_t> send_counts_, send_displs_, recv_counts_, recv_displs_;
  std::vector<uint64_t> send_, recv_;
  PersistentOps op_;  // declared last: freed first, while the buffers it names still exist
};

}  // namespace

std::unique_ptr<Exchange> make_persistent_alltoall_exchange() {
  return std::make_unique<PersistentAlltoallExchange>();
}

}  // namespace ranvier
