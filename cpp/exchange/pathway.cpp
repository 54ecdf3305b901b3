// DirectPathway: one exchange among all ranks per cycle. With the overlapped schedule the
// exchange of cycle c finishes in cycle c + 1's exchange call, after c + 1 has been computed
// (the engine's run_cycles says why that is correct); two send buffers alternate so the records
// of c in flight are never overwritten.
#include "exchange/pathway.hpp"

#include <omp.h>

#include "exchange/two_tier.hpp"

namespace ranvier {
namespace {

class DirectPathway final : public SpikePathway {
 public:
  DirectPathway(const std::string& exchange, bool overlap, bool barrier)
      : exchange_(make_exchange(exchange)), overlap_(overlap), barrier_(barrier) {}

  void configure(Communicator& world, const Placement& placement, const TargetTable& targets,
                 const std::vector<uint8_t>& has_targets, uint32_t steps_per_cycle) override {
    comm_ = &world;
    has_targets_ = &has_targets;
    exchange_->configure(world, placement, targets, steps_per_cycle);
  }
  int64_t window_cycles() const override { return 1; }

  void collocate(int64_t cycle, std::span<const std::vector<SpikeRecord>* const> per_thread) override {
    auto& send = send_[cycle & 1];
    send.clear();
    for (const auto* spikes : per_thread) send.insert(send.end(), spikes->begin(), spikes->end());
  }

  void exchange(int64_t cycle, bool, double& synchronize, double& communicate) override {
    const double t0 = omp_get_wtime();
    if (barrier_) comm_->barrier();
    const double t1 = omp_get_wtime();
    if (in_flight_cycle_ >= 0) finish();
    exchange_->start(send_[cycle & 1], counters_.exchange);
    in_flight_cycle_ = cycle;
    if (!overlap_) finish();
    synchronize += t1 - t0;
    communicate += omp_get_wtime() - t1;
  }

  void progress() override {
    if (in_flight_cycle_ >= 0) exchange_->progress();
  }
  bool in_flight() const override { return in_flight_cycle_ >= 0; }
  void finish_in_flight() override { finish(); }

  std::span<const SpikeBatch> received() const override {
    return {&batch_, received_cycle_ >= 0 ? size_t(1) : size_t(0)};
  }
  void forget_received() override { received_cycle_ = -1; }

  PathwayCounters counters() const override {
    PathwayCounters c = counters_;
    c.exchange_global = c.exchange;
    return c;
  }

 private:
  // Completes the exchange in flight: received_ holds the spikes of received_cycle_.
  void finish() {
    exchange_->finish(received_, counters_.exchange);
    received_cycle_ = in_flight_cycle_;
    batch_ = {&received_, received_cycle_};
    in_flight_cycle_ = -1;
    ++counters_.exchanges_global;
    for (SpikeRecord rec : received_) counters_.spikes_delivered += (*has_targets_)[record_gid(rec)];
  }

  std::unique_ptr<Exchange> exchange_;
  bool overlap_, barrier_;
  Communicator* comm_ = nullptr;
  const std::vector<uint8_t>* has_targets_ = nullptr;
  std::vector<SpikeRecord> send_[2];       // alternate cycles: one may be in flight
  std::vector<SpikeRecord> received_;
  SpikeBatch batch_{&received_, -1};
  int64_t in_flight_cycle_ = -1;           // the cycle whose exchange has started, not finished
  int64_t received_cycle_ = -1;            // the cycle whose spikes are in received_, to schedule
  PathwayCounters counters_;
};

}  // namespace

std::unique_ptr<SpikePathway> make_pathway(const EngineConfig& cfg) {
  if (cfg.global_interval > 0)
    return std::make_unique<TwoTierPathway>(cfg.populations, cfg.exchange, cfg.global_interval, cfg.barrier,
                                            cfg.overlap);
  return std::make_unique<DirectPathway>(cfg.exchange, cfg.overlap, cfg.barrier);
}

}  // namespace ranvier
