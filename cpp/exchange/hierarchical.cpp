// hierarchical: the two-phase idea for ranks that share a node. Ranks of one node (a shared-
// memory communicator) send their spikes to the node's leader; leaders all-gather among
// themselves, so only leaders cross the network, one message per node pair instead of one per
// rank pair; each leader broadcasts everything to its node. Every rank receives every spike,
// as with allgather. RANVIER_RANKS_PER_NODE=k (EngineConfig::ranks_per_node) groups consecutive ranks into nodes of k
// (to study the scheme on one machine). Cost per interval: a non-leader sends one message with
// its records; a leader sends its node's records to the other leaders and all S to its node.
#include <string>

#include "exchange/exchange.hpp"

namespace ranvier {
namespace {

class HierarchicalExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement&, const TargetTable&, uint32_t) override {
    comm_ = &comm;
    node_ = comm.split_node();
    leader_ = node_->rank() == 0;
    leaders_ = comm.split(leader_ ? 0 : -1, comm.rank());
    if (leader_) {
      counts_.resize(leaders_->size());
      displs_.resize(leaders_->size());
      words_.resize(leaders_->size());
    }
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    const int P = comm_->size(), n = node_->size();
    c.spikes_sent += local.size() * P;
    buffer_.clear();
    if (!leader_) {  // phase 1: to the leader, one message even when empty (it counts on it)
      send_request_ = node_->isend(local.data(), local.size(), 0, kTag, false);
      pending_send_ = true;
      c.messages_sent += 1;
      c.bytes_sent += sizeof(uint64_t) * local.size();
    } else {
      node_spikes_.assign(local.begin(), local.end());
      for (int k = 1; k < n; ++k) {
        int source = 0;
        size_t m = 0;
        while (!node_->iprobe(kTag, source, m)) {}
        const size_t at = node_spikes_.size();
        node_spikes_.resize(at + m);
        node_->recv(node_spikes_.data() + at, m, source, kTag);
      }
      // Phase 2: leaders exchange their nodes' spikes.
      const int L = leaders_->size();
      leaders_->allgather_word(node_spikes_.size(), words_.data());
      size_t total = 0;
      for (int r = 0; r < L; ++r) { counts_[r] = words_[r]; displs_[r] = total; total += words_[r]; }
      buffer_.resize(total);
      leaders_->allgatherv(node_spikes_.data(), node_spikes_.size(), buffer_.data(), counts_, displs_);
      c.messages_sent += (L - 1) * (node_spikes_.empty() ? 1 : 2);
      c.bytes_sent += (L - 1) * sizeof(uint64_t) * (1 + node_spikes_.size());
    }
    // Phase 3: the leader hands every spike to its node.
    uint64_t total = buffer_.size();
    node_->bcast(&total, 1, 0);
    buffer_.resize(total);
    node_->bcast(buffer_.data(), total, 0);
    if (leader_) {
      c.messages_sent += (n - 1) * (total ? 2 : 1);
      c.bytes_sent += (n - 1) * sizeof(uint64_t) * (1 + total);
    }
    c.spikes_received += total;
  }

  void finish(std::vector<SpikeRecord>& received, ExchangeCounters&) override {
    // Phase 1's send completed when the leader received it, before phase 3's broadcast.
    if (pending_send_) node_->wait(send_request_);
    pending_send_ = false;
    received.swap(buffer_);
  }

 private:
  static constexpr int kTag = 7300;
  Communicator* comm_ = nullptr;
  std::unique_ptr<Communicator> node_, leaders_;
  bool leader_ = false, pending_send_ = false;
  Request send_request_ = -1;
  std::vector<SpikeRecord> node_spikes_, buffer_;
  std::vector<size_t> counts_, displs_;
  std::vector<uint64_t> words_;
};

}  // namespace

std::unique_ptr<Exchange> make_hierarchical_exchange() { return std::make_unique<HierarchicalExchange>(); }

}  // namespace ranvier
