// p2p: multisend. Each spike goes by non-blocking point-to-point messages to exactly the ranks
// that hold its targets, one message per destination rank with records this interval (none to
// ranks without). The receiver does not know how many messages will come; two ways to know
// when all have arrived:
//  - conservation ("p2p"): drain what has arrived, then all-reduce (messages sent - received)
//    over all ranks; repeat until the sum is zero (the Blue Gene/P study's spike conservation);
//  - NBX ("p2p-nbx", Hoefler's non-blocking consensus): synchronous sends complete only once
//    matched; when all of a rank's sends have completed it enters a non-blocking barrier, and
//    keeps receiving until the barrier completes.
// Messages of consecutive intervals carry alternating tags: a rank can be at most one interval
// ahead of another (finishing an interval needs every rank), so two tags keep them apart.
// Cost per rank: one message per destination rank with spikes, 8 bytes per record.
#include "exchange/exchange.hpp"

namespace ranvier {
namespace {

class P2pExchange final : public Exchange {
 public:
  explicit P2pExchange(bool nbx) : nbx_(nbx) {}

  void configure(Communicator& comm, const Placement& placement, const TargetTable& targets, uint32_t) override {
    comm_ = &comm;
    out_.bind(placement, targets, comm.size());
    std::vector<int> sources;
    neighbour_ranks(comm, targets, destinations_, sources);
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    const int me = comm_->rank();
    tag_ = kTag + int(interval_++ & 1);
    out_.fill(local);
    buffer_.assign(out_.records.begin() + out_.displs[me], out_.records.begin() + out_.displs[me] + out_.counts[me]);
    messages_out_ = messages_in_ = 0;
    for (int d : destinations_) {
      const size_t n = out_.counts[d];
      if (!n) continue;
      sends_.push_back(comm_->isend(out_.records.data() + out_.displs[d], n, d, tag_, nbx_));
      ++messages_out_;
      c.bytes_sent += sizeof(uint64_t) * n;
    }
    c.messages_sent += messages_out_;
    c.spikes_sent += out_.records.size();
  }

  void progress() override { drain(); }

  void finish(std::vector<SpikeRecord>& received, ExchangeCounters& c) override {
    if (nbx_) {
      Request barrier = -1;
      for (;;) {
        drain();
        if (barrier < 0) {
          std::erase_if(sends_, [&](Request r) { return comm_->test(r); });
          if (sends_.empty()) barrier = comm_->ibarrier();
        } else if (comm_->test(barrier)) {
          break;
        }
      }
    } else {
      for (;;) {
        drain();
        uint64_t balance = messages_out_ - messages_in_;  // summed modulo 2^64: zero iff equal
        comm_->allreduce_sum(&balance, 1);
        if (balance == 0) break;
      }
      comm_->wait_all(sends_);  // all matched: completes at once
    }
    c.spikes_received += buffer_.size();
    received.swap(buffer_);
  }

 private:
  void drain() {
    int source = 0;
    size_t n = 0;
    while (comm_->iprobe(tag_, source, n)) {
      const size_t at = buffer_.size();
      buffer_.resize(at + n);
      comm_->recv(buffer_.data() + at, n, source, tag_);
      ++messages_in_;
    }
  }

  static constexpr int kTag = 7100;
  const bool nbx_;
  Communicator* comm_ = nullptr;
  std::vector<int> destinations_;
  Buckets out_;
  std::vector<SpikeRecord> buffer_;
  std::vector<Request> sends_;
  uint64_t messages_out_ = 0, messages_in_ = 0, interval_ = 0;
  int tag_ = kTag;
};

}  // namespace

std::unique_ptr<Exchange> make_p2p_exchange() { return std::make_unique<P2pExchange>(false); }
std::unique_ptr<Exchange> make_p2p_nbx_exchange() { return std::make_unique<P2pExchange>(true); }

}  // namespace ranvier
