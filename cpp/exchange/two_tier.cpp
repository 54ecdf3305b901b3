#include "exchange/two_tier.hpp"

#include <omp.h>

#include <algorithm>

namespace ranvier {

TwoTierPathway::TwoTierPathway(const std::vector<PopulationSpec>& populations, const std::string& exchange,
                               int64_t global_interval, bool barrier, bool overlap)
    : populations_(populations),
      interval_(global_interval),
      barrier_(barrier),
      overlap_(overlap),
      group_exchange_(make_exchange(exchange)),
      global_exchange_(make_exchange(exchange)) {}

void TwoTierPathway::configure(Communicator& world, const Placement& placement, const TargetTable& targets,
                               const std::vector<uint8_t>& has_targets, uint32_t steps_per_cycle) {
  world_ = &world;
  placement_ = &placement;
  has_targets_ = &has_targets;
  steps_per_cycle_ = steps_per_cycle;
  build_area_groups();
  split_targets(targets);
  group_exchange_->configure(*group_comm_, *group_placement_, group_targets_, steps_per_cycle);
  global_exchange_->configure(world, placement, global_targets_, uint32_t(interval_ * steps_per_cycle));
}

// Area groups: ranks that hold neurons of one area are joined, transitively (union-find over
// ranks). Each group gets a sub-communicator for the exchange every cycle; everything leaving
// the group then crosses an area boundary, whose delays allow the global exchange every D cycles.
void TwoTierPathway::build_area_groups() {
  const int P = world_->size(), me = world_->rank();
  std::vector<int> parent(P);
  for (int r = 0; r < P; ++r) parent[r] = r;
  auto root = [&](int r) {
    while (parent[r] != r) r = parent[r] = parent[parent[r]];
    return r;
  };
  std::vector<int> first_rank_of_area;
  for (const auto& p : populations_) {
    if (size_t(p.area) >= first_rank_of_area.size()) first_rank_of_area.resize(p.area + 1, -1);
    for (int r : placement_->ranks_of_range(p.first, p.size)) {
      int& first = first_rank_of_area[p.area];
      if (first < 0) first = r;
      const int a = root(first), b = root(r);
      parent[std::max(a, b)] = std::min(a, b);
    }
  }
  group_of_rank_.resize(P);
  for (int r = 0; r < P; ++r) group_of_rank_[r] = root(r);
  std::vector<int> members;
  for (int r = 0; r < P; ++r)
    if (group_of_rank_[r] == group_of_rank_[me]) members.push_back(r);
  group_comm_ = world_->split(group_of_rank_[me], me);
  group_placement_ = std::make_unique<Placement>(placement_->restricted(members));
}

// Destinations in the area group go to the group's table (as group ranks), the others to the
// global table (world ranks).
void TwoTierPathway::split_targets(const TargetTable& world_targets) {
  const int P = world_->size(), me = world_->rank();
  std::vector<int> group_rank(P, -1);
  for (int r = 0, i = 0; r < P; ++r)
    if (group_of_rank_[r] == group_of_rank_[me]) group_rank[r] = i++;
  const size_t neurons = world_targets.dest_begin.size() - 1;
  for (TargetTable* t : {&group_targets_, &global_targets_}) {
    t->dest_begin.assign(neurons + 1, 0);
    t->dest_ranks.clear();
  }
  for (size_t j = 0; j < neurons; ++j) {
    for (uint64_t i = world_targets.dest_begin[j]; i < world_targets.dest_begin[j + 1]; ++i) {
      const uint32_t r = world_targets.dest_ranks[i];
      if (group_rank[r] >= 0) group_targets_.dest_ranks.push_back(uint32_t(group_rank[r]));
      else global_targets_.dest_ranks.push_back(r);
    }
    group_targets_.dest_begin[j + 1] = group_targets_.dest_ranks.size();
    global_targets_.dest_begin[j + 1] = global_targets_.dest_ranks.size();
  }
}

// A spike goes to the group's buffer if it has targets in the group, and to the global buffer,
// with its offset counted from the start of the D-cycle window, if it has targets elsewhere.
// Buffers alternate (the group's by cycle, the global one by window): with overlap, the other
// one may still be in flight.
void TwoTierPathway::collocate(int64_t cycle, std::span<const std::vector<SpikeRecord>* const> per_thread) {
  auto& send = send_[cycle & 1];
  auto& global_send = global_send_[(cycle / interval_) & 1];
  send.clear();
  const uint32_t shift = uint32_t((cycle % interval_) * steps_per_cycle_);
  const auto& local = group_targets_.dest_begin;
  const auto& global = global_targets_.dest_begin;
  for (const auto* spikes : per_thread)
    for (SpikeRecord rec : *spikes) {
      const uint64_t j = placement_->rank_index(record_gid(rec));
      if (local[j + 1] > local[j]) send.push_back(rec);
      if (global[j + 1] > global[j]) global_send.push_back(make_record(record_gid(rec), record_offset(rec) + shift));
    }
}

// Inside the area group now; among all ranks at the end of each window of D cycles (and at the
// end of a call, so every call leaves all spikes queued or in flight). A barrier before each, on
// the same communicator, counts as synchronisation. With overlap, each tier first finishes the
// exchange it started in the previous cycle, then starts this cycle's; without, it finishes at once.
void TwoTierPathway::exchange(int64_t cycle, bool last, double& synchronize, double& communicate) {
  n_batches_ = 0;
  double t = omp_get_wtime();
  if (barrier_) group_comm_->barrier();
  double u = omp_get_wtime();
  synchronize += u - t;
  if (group_in_flight_ >= 0) finish_group();
  group_exchange_->start(send_[cycle & 1], group_counters_);
  group_in_flight_ = cycle;
  if (!overlap_) finish_group();
  if (global_in_flight_ >= 0) finish_global();   // overlap: the window that ended last cycle
  t = omp_get_wtime();
  communicate += t - u;
  if ((cycle + 1) % interval_ != 0 && !last) return;
  if (barrier_) world_->barrier();
  u = omp_get_wtime();
  synchronize += u - t;
  global_exchange_->start(global_send_[(cycle / interval_) & 1], global_counters_);
  global_in_flight_ = cycle;
  if (!overlap_) finish_global();
  communicate += omp_get_wtime() - u;
}

void TwoTierPathway::progress() {
  if (group_in_flight_ >= 0) group_exchange_->progress();
  if (global_in_flight_ >= 0) global_exchange_->progress();
}

void TwoTierPathway::finish_in_flight() {
  n_batches_ = 0;
  if (group_in_flight_ >= 0) finish_group();
  if (global_in_flight_ >= 0) finish_global();
}

void TwoTierPathway::finish_group() {
  group_exchange_->finish(received_, group_counters_);
  ++exchanges_local_;
  for (SpikeRecord rec : received_) spikes_delivered_ += (*has_targets_)[record_gid(rec)];
  batches_[n_batches_++] = {&received_, group_in_flight_};
  group_in_flight_ = -1;
}

void TwoTierPathway::finish_global() {
  const int64_t cycle = global_in_flight_;
  global_exchange_->finish(global_received_, global_counters_);
  global_send_[(cycle / interval_) & 1].clear();
  ++exchanges_global_;
  // Strategies that send every record everywhere (all-gathers) also bring this group's own
  // spikes, which the group exchange has delivered already.
  const int group = group_of_rank_[world_->rank()];
  size_t kept = 0;
  for (SpikeRecord rec : global_received_) {
    const uint64_t g = record_gid(rec);
    if (group_of_rank_[placement_->rank_of(g)] == group) continue;
    global_received_[kept++] = rec;
    spikes_delivered_ += (*has_targets_)[g];
  }
  global_received_.resize(kept);
  batches_[n_batches_++] = {&global_received_, cycle - cycle % interval_};   // offsets count from the window's start
  global_in_flight_ = -1;
}

PathwayCounters TwoTierPathway::counters() const {
  PathwayCounters c;
  c.spikes_delivered = spikes_delivered_;
  c.exchanges_local = exchanges_local_;
  c.exchanges_global = exchanges_global_;
  const ExchangeCounters& a = group_counters_;
  const ExchangeCounters& b = global_counters_;
  c.exchange = {a.spikes_sent + b.spikes_sent, a.spikes_received + b.spikes_received, a.bytes_sent + b.bytes_sent,
                a.messages_sent + b.messages_sent, a.overflow_rounds + b.overflow_rounds,
                a.exchange_resizes + b.exchange_resizes, a.persistent_reinits + b.persistent_reinits};
  c.exchange_global = b;
  return c;
}

}  // namespace ranvier
