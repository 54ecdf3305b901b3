// rma: one-sided puts, the modern stand-in for the Blue Gene/P study's direct-memory multicast.
// Every rank exposes a window: word 0 counts the records written to it this interval, the
// records follow. Per interval, two access epochs:
//   1. reserve: for each destination with records, an atomic fetch-and-add of the record count
//      on the destination's word 0 returns the offset where this rank may write;
//   2. put: the records go to [offset, offset + n) of the destination's window.
// Epochs are closed by fences ("rma": collective over all ranks) or by post-start-complete-wait
// ("rma-pscw": each rank synchronises with its graph neighbours only). The put epoch is left
// open by start() and closed by finish(), so the overlapped schedule computes while data moves.
// Records past a window's capacity go in an overflow round by point-to-point messages (both
// sides know the counts). Window size is collective, so capacity is agreed every
// kAgreeEvery intervals by an all-reduce of the largest need seen (grow, or shrink).
// Cost per rank: two one-sided operations per destination rank with records, 8 bytes a record.
#include "exchange/exchange.hpp"
#include "exchange/fixed_buffer.hpp"

namespace ranvier {
namespace {

class RmaExchange final : public Exchange {
 public:
  explicit RmaExchange(bool pscw) : pscw_(pscw) {}

  void configure(Communicator& comm, const Placement& placement, const TargetTable& targets, uint32_t) override {
    comm_ = &comm;
    out_.bind(placement, targets, comm.size());
    neighbour_ranks(comm, targets, destinations_, sources_);
    window_ = comm.window(1 + capacity_.capacity());
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    const int me = comm_->rank();
    tag_ = kTag + int(interval_++ & 1);  // as in p2p: overflow messages of consecutive intervals apart
    out_.fill(local);
    buffer_.assign(out_.records.begin() + out_.displs[me], out_.records.begin() + out_.displs[me] + out_.counts[me]);
    window_->data()[0] = 0;  // between epochs: local access is allowed
    offsets_.assign(destinations_.size(), 0);
    open_epoch();
    for (size_t k = 0; k < destinations_.size(); ++k) {
      const int d = destinations_[k];
      if (out_.counts[d]) window_->fetch_add(d, 0, out_.counts[d], &offsets_[k]);
    }
    close_epoch();
    open_epoch();
    const uint64_t cap = capacity_.capacity();
    for (size_t k = 0; k < destinations_.size(); ++k) {
      const int d = destinations_[k];
      const uint64_t n = out_.counts[d], at = offsets_[k];
      if (!n) continue;
      if (at < cap) window_->put(out_.records.data() + out_.displs[d], std::min(n, cap - at), d, 1 + at);
      c.bytes_sent += sizeof(uint64_t) * (1 + n);
      c.messages_sent += 2;
    }
    c.spikes_sent += out_.records.size();
  }

  void finish(std::vector<SpikeRecord>& received, ExchangeCounters& c) override {
    close_epoch();
    const uint64_t cap = capacity_.capacity();
    const uint64_t incoming = window_->data()[0];
    const uint64_t* slots = window_->data() + 1;
    buffer_.insert(buffer_.end(), slots, slots + std::min(incoming, cap));
    if (incoming > cap) c.overflow_rounds += 1;
    // Overflow round: what did not fit goes by message; the receiver knows how much to expect.
    std::vector<Request> sends;
    for (size_t k = 0; k < destinations_.size(); ++k) {
      const int d = destinations_[k];
      const uint64_t n = out_.counts[d], at = offsets_[k];
      if (at + n <= cap) continue;
      const uint64_t skip = at < cap ? cap - at : 0;
      sends.push_back(comm_->isend(out_.records.data() + out_.displs[d] + skip, n - skip, d, tag_, false));
      c.messages_sent += 1;
      c.bytes_sent += sizeof(uint64_t) * (n - skip);
    }
    for (uint64_t missing = incoming > cap ? incoming - cap : 0; missing;) {
      int source = 0;
      size_t n = 0;
      if (!comm_->iprobe(tag_, source, n)) continue;
      const size_t at = buffer_.size();
      buffer_.resize(at + n);
      comm_->recv(buffer_.data() + at, n, source, tag_);
      missing -= n;
    }
    comm_->wait_all(sends);
    need_ = std::max(need_, incoming);
    if (++since_agreement_ == kAgreeEvery) agree_capacity(c);
    c.spikes_received += buffer_.size();
    received.swap(buffer_);
  }

 private:
  void open_epoch() {
    if (!pscw_) { window_->fence(); return; }
    window_->post(sources_);
    window_->start(destinations_);
  }
  void close_epoch() {
    if (!pscw_) { window_->fence(); return; }
    window_->complete();
    window_->wait();
  }
  // Collective, every kAgreeEvery intervals: the window size follows the largest need.
  void agree_capacity(ExchangeCounters& c) {
    comm_->allreduce_max(&need_, 1);
    if (capacity_.update(need_)) {
      window_.reset();
      window_ = comm_->window(1 + capacity_.capacity());
      c.exchange_resizes += 1;
    }
    need_ = 0;
    since_agreement_ = 0;
  }

  static constexpr int kTag = 7200;
  static constexpr uint64_t kAgreeEvery = 16;
  const bool pscw_;
  Communicator* comm_ = nullptr;
  std::vector<int> destinations_, sources_;
  std::unique_ptr<Window> window_;
  FixedCapacity capacity_{FixedCapacity::kMinimum, 256 / kAgreeEvery};
  Buckets out_;
  std::vector<uint64_t> offsets_;
  std::vector<SpikeRecord> buffer_;
  uint64_t need_ = 0, since_agreement_ = 0, interval_ = 0;
  int tag_ = kTag;
};

}  // namespace

std::unique_ptr<Exchange> make_rma_fence_exchange() { return std::make_unique<RmaExchange>(false); }
std::unique_ptr<Exchange> make_rma_pscw_exchange() { return std::make_unique<RmaExchange>(true); }

}  // namespace ranvier
