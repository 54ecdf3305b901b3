// neighbor: MPI neighbourhood collectives over the graph of ranks that actually exchange spikes
// (a distributed graph topology built once from the target tables: an edge r -> d when some
// neuron of r has a target on d). Per interval, a neighbour all-to-all of counts, then a
// non-blocking neighbour all-to-all-v of the records. With sparse connectivity between ranks
// each rank talks to its graph neighbours only, not to all P - 1 ranks.
// Cost per rank: one count word per out-neighbour, plus its records once per destination rank.
#include "exchange/exchange.hpp"

namespace ranvier {
namespace {

class NeighborExchange final : public Exchange {
 public:
  void configure(Communicator& comm, const Placement& placement, const TargetTable& targets, uint32_t) override {
    comm_ = &comm;
    out_.bind(placement, targets, comm.size());
    neighbour_ranks(comm, targets, destinations_, sources_);
    graph_ = comm.graph(sources_, destinations_);
    const size_t out = destinations_.size(), in = sources_.size();
    count_out_.resize(std::max<size_t>(out, 1)); send_counts_.resize(out); send_displs_.resize(out);
    count_in_.resize(std::max<size_t>(in, 1)); recv_counts_.resize(in); recv_displs_.resize(in);
  }

  void start(std::span<const SpikeRecord> local, ExchangeCounters& c) override {
    const int me = comm_->rank();
    out_.fill(local);
    for (size_t k = 0; k < destinations_.size(); ++k) {
      const int d = destinations_[k];
      count_out_[k] = send_counts_[k] = out_.counts[d];
      send_displs_[k] = out_.displs[d];
      c.bytes_sent += sizeof(uint64_t) * (1 + out_.counts[d]);
      c.messages_sent += out_.counts[d] ? 2 : 1;
    }
    graph_->neighbor_alltoall_word(count_out_.data(), count_in_.data());
    // Own records first, then each source's, in graph order.
    const size_t own = out_.counts[me];
    size_t total = own;
    for (size_t k = 0; k < sources_.size(); ++k) {
      recv_counts_[k] = count_in_[k];
      recv_displs_[k] = total;
      total += count_in_[k];
    }
    buffer_.resize(total);
    std::copy_n(out_.records.data() + out_.displs[me], own, buffer_.data());
    in_flight_.begin(*graph_, graph_->ineighbor_alltoallv(out_.records.data(), send_counts_, send_displs_,
                                                          buffer_.data(), recv_counts_, recv_displs_));
    c.spikes_sent += out_.records.size();
    c.spikes_received += total;
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
  std::vector<int> destinations_, sources_;
  std::unique_ptr<Communicator> graph_;
  Buckets out_;
  std::vector<uint64_t> count_out_, count_in_;
  std::vector<size_t> send_counts_, send_displs_, recv_counts_, recv_displs_;
  std::vector<SpikeRecord> buffer_;
  InFlight in_flight_;
};

}  // namespace

std::unique_ptr<Exchange> make_neighbor_exchange() { return std::make_unique<NeighborExchange>(); }

}  // namespace ranvier
