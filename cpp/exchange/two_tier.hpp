// The two-tier pathway of structure-aware simulation (multi-area models): ranks holding neurons
// of one area form an area group (transitively), with a sub-communicator. Every cycle the
// strategy runs inside the group; every D cycles (global_interval) it runs again among all
// ranks for the spikes with targets outside the group, their offsets counted from the start of
// the D-cycle window. Everything outside the group lies in another area, so this is in time
// when D cycles are at most the shortest inter-area delay (checked with the configuration).
//
// Overlapped (cfg.overlap, cycles of half the minimum delay): each tier's exchange is started
// after the cycle's collocate and finished in the next cycle's exchange call, after that cycle
// has been computed. The group tier is then in time as the direct pathway is (a spike of cycle c
// arrives in c + 2 or later). The global exchange of the window [w, w + D) finishes at the end of
// cycle w + D, one cycle later than without overlap, so every inter-area delay must last D + 1
// cycles: (D + 1) L <= d_min_inter (checked with the configuration). Two send buffers per tier
// alternate (by cycle for the group tier, by window for the global tier), so the records in
// flight are never overwritten; at most one exchange per tier is in flight.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "exchange/pathway.hpp"

namespace ranvier {

class TwoTierPathway final : public SpikePathway {
 public:
  TwoTierPathway(const std::vector<PopulationSpec>& populations, const std::string& exchange, int64_t global_interval,
                 bool barrier, bool overlap);
  void configure(Communicator& world, const Placement& placement, const TargetTable& targets,
                 const std::vector<uint8_t>& has_targets, uint32_t steps_per_cycle) override;
  int64_t window_cycles() const override { return interval_; }
  void collocate(int64_t cycle, std::span<const std::vector<SpikeRecord>* const> per_thread) override;
  void exchange(int64_t cycle, bool last, double& synchronize, double& communicate) override;
  void progress() override;
  bool in_flight() const override { return group_in_flight_ >= 0 || global_in_flight_ >= 0; }
  void finish_in_flight() override;
  std::span<const SpikeBatch> received() const override { return {batches_.data(), n_batches_}; }
  void forget_received() override { n_batches_ = 0; }
  PathwayCounters counters() const override;

 private:
  void build_area_groups();
  void split_targets(const TargetTable& world_targets);
  // Complete the exchange in flight of each tier; each adds its batch to received().
  void finish_group();
  void finish_global();

  std::vector<PopulationSpec> populations_;  // their areas and gid ranges, for the groups
  int64_t interval_;                       // D, cycles
  uint32_t steps_per_cycle_ = 1;
  bool barrier_, overlap_;
  Communicator* world_ = nullptr;
  const Placement* placement_ = nullptr;
  const std::vector<uint8_t>* has_targets_ = nullptr;
  std::vector<int> group_of_rank_;         // world rank -> its group's lowest world rank
  std::unique_ptr<Communicator> group_comm_;
  std::unique_ptr<Placement> group_placement_;
  // The group tier (every cycle) and the global tier (every D cycles).
  std::unique_ptr<Exchange> group_exchange_, global_exchange_;
  TargetTable group_targets_;              // destinations inside the group, as group ranks
  TargetTable global_targets_;             // destinations outside the group, as world ranks
  ExchangeCounters group_counters_, global_counters_;
  std::vector<SpikeRecord> send_[2], received_, global_send_[2], global_received_;
  int64_t group_in_flight_ = -1;           // the cycle whose group exchange has started, not finished
  int64_t global_in_flight_ = -1;          // the cycle that started the global exchange in flight
  std::array<SpikeBatch, 2> batches_{};
  size_t n_batches_ = 0;
  uint64_t spikes_delivered_ = 0, exchanges_local_ = 0, exchanges_global_ = 0;
};

}  // namespace ranvier
