// persistent-p2p: record and replay on persistent point-to-point messages (MPI_Send_init,
// MPI_Recv_init): one fixed-size message per interval to each partner (each rank that holds
// targets of this rank's neurons, found once from the target table) and one from each rank for
// which this one is a partner, all initialised once in configure(), then started together
// (MPI_Startall) and completed together (MPI_Waitall) each interval. A message is a count word,
// then up to the pair's capacity of records; the receiver knows every message that will come, so
// no termination protocol is needed (as p2p needs its all-reduces, p2p-nbx its barrier).
//
// Each pair of ranks keeps its own capacity: the sender feeds the policy (fixed_buffer.hpp) its
// count for the pair, the receiver the same count read from the message, so both sides decide
// alike without any other message. When a pair's records did not fit, both re-initialise that
// pair's send and receive with a larger capacity (at least double) and redo that pair's message
// with them in a second round; no other rank takes part. The redo has the pair's tag, like every
// message of the pair: MPI keeps messages between two ranks in order, so the receiver's
// operations, posted in the order the sender sends (this interval, its redo, the next interval),
// match the right messages.
// Cost per rank: a message of 1 + capacity words to each partner per interval, whatever the traffic.
#include <algorithm>

#include "exchange/exchange.hpp"
#include "exchange/fixed_buffer.hpp"

namespace ranvier {
namespace {

class PersistentP2pExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement& placement, const TargetTable& targets, uint32_t) override {
    comm_ = &comm;
    ops_.bind(comm);
    out_.bind(placement, targets, comm.size());
    neighbour_ranks(comm, targets, destinations_, sources_);
    // receives first, so that no message of a started interval waits for its receive to be posted
    in_.resize(sources_.size());
    for (size_t k = 0; k < sources_.size(); ++k) {
      in_[k].buffer.assign(in_[k].words(), 0);
      ops_.add(comm.recv_init(in_[k].buffer.data(), in_[k].words(), sources_[k], kTag));
    }
    out_pairs_.resize(destinations_.size());
    for (size_t k = 0; k < destinations_.size(); ++k) {
      out_pairs_[k].buffer.assign(out_pairs_[k].words(), 0);
      ops_.add(comm.send_init(out_pairs_[k].buffer.data(), out_pairs_[k].words(), destinations_[k], kTag));
    }
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    out_.fill(local);
    for (size_t k = 0; k < destinations_.size(); ++k) {
      fill(k);
      count_message(k, c);
    }
    ops_.start();
    c.spikes_sent += out_.records.size();
  }

  void progress() override { ops_.progress(); }

  void finish(std::vector<SpikeRecord>& received, ExchangeCounters& c) override {
    ops_.complete();
    const int me = comm_->rank();
    const size_t S = sources_.size(), D = destinations_.size();
    received.assign(out_.records.begin() + out_.displs[me],
                    out_.records.begin() + out_.displs[me] + out_.counts[me]);
    // Second round: the pairs whose records did not fit grow, re-initialise and redo their message.
    redo_.clear();
    for (size_t k = 0; k < S; ++k) {
      Pair& p = in_[k];
      p.overflowed = p.buffer[0] > p.capacity.capacity();
      if (!p.overflowed) continue;
      p.capacity.update(p.buffer[0]);
      reinitialise_receive(k, c);
      redo_.push_back(ops_[k]);
    }
    for (size_t k = 0; k < D; ++k) {
      Pair& p = out_pairs_[k];
      const uint64_t n = out_.counts[destinations_[k]];
      p.overflowed = n > p.capacity.capacity();
      if (!p.overflowed) continue;
      p.capacity.update(n);
      reinitialise_send(k, c);
      fill(k);
      count_message(k, c);
      redo_.push_back(ops_[S + k]);
    }
    if (!redo_.empty()) {
      comm_->start_persistent(redo_);
      comm_->wait_persistent(redo_);
      c.overflow_rounds += 1;
    }
    for (const Pair& p : in_) received.insert(received.end(), p.buffer.data() + 1, p.buffer.data() + 1 + p.buffer[0]);
    // The pairs that fitted: their policy sees the count too and may shrink them (both sides of a
    // pair at once), smaller from the next interval.
    for (size_t k = 0; k < S; ++k)
      if (!in_[k].overflowed && in_[k].capacity.update(in_[k].buffer[0])) reinitialise_receive(k, c);
    for (size_t k = 0; k < D; ++k)
      if (!out_pairs_[k].overflowed && out_pairs_[k].capacity.update(out_.counts[destinations_[k]]))
        reinitialise_send(k, c);
    c.spikes_received += received.size();
  }

 private:
  // One direction of a pair of ranks: its message (count word, then records) and its capacity.
  struct Pair {
    FixedCapacity capacity{FixedCapacity::kMinimum, 256, 2};
    std::vector<uint64_t> buffer;
    bool overflowed = false;  // this interval
    size_t words() const { return 1 + capacity.capacity(); }
  };

  void fill(size_t k) {
    const int d = destinations_[k];
    Pair& p = out_pairs_[k];
    const uint64_t n = out_.counts[d];
    p.buffer[0] = n;
    std::copy_n(out_.records.data() + out_.displs[d], std::min<uint64_t>(n, p.capacity.capacity()),
                p.buffer.data() + 1);
  }

  // The pair's operation, freed and initialised again for its current capacity (the old buffer
  // goes with the old operation, which is inactive).
  void reinitialise_receive(size_t k, ExchangeCounters& c) {
    Pair& p = in_[k];
    p.buffer.assign(p.words(), 0);
    ops_.replace(k, comm_->recv_init(p.buffer.data(), p.words(), sources_[k], kTag));
    count_reinit(c);
  }
  void reinitialise_send(size_t k, ExchangeCounters& c) {
    Pair& p = out_pairs_[k];
    p.buffer.assign(p.words(), 0);
    ops_.replace(sources_.size() + k, comm_->send_init(p.buffer.data(), p.words(), destinations_[k], kTag));
    count_reinit(c);
  }

  void count_message(size_t k, ExchangeCounters& c) const {
    c.bytes_sent += sizeof(uint64_t) * out_pairs_[k].words();
    c.messages_sent += 1;
  }

  static void count_reinit(ExchangeCounters& c) {
    c.exchange_resizes += 1;
    c.persistent_reinits += 1;
  }

  static constexpr int kTag = 7500;
  Communicator* comm_ = nullptr;
  Buckets out_;
  std::vector<int> destinations_, sources_;
  std::vector<Pair> in_, out_pairs_;  // per source, per destination
  std::vector<Persistent> redo_;
  PersistentOps ops_;  // receives from sources_, then sends to destinations_; declared last: freed first
};

}  // namespace

std::unique_ptr<Exchange> make_persistent_p2p_exchange() { return std::make_unique<PersistentP2pExchange>(); }

}  // namespace ranvier
