#include "core/engine.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <chrono>
#include <thread>

#include "core/config_checks.hpp"
#include "base/philox.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier {

namespace {

// Zeroes a consumed input row with vector stores. std::fill becomes glibc's memset, which for
// rows this long is `rep stosb`: callgrind counts it once per byte (4 of the update's 12
// instructions per neuron-step), though the hardware stores 32 bytes or more per cycle, and
// bench/instructions.py and the roofline's floors would carry those counts. The attribute keeps
// gcc from turning the loop back into a memset call.
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void zero_row(int32_t* __restrict row, uint64_t n) {
#pragma omp simd
  for (uint64_t i = 0; i < n; ++i) row[i] = 0;
}

// Waits until wall_time() reaches `deadline`: sleeps while more than 200 us remain (the scheduler
// wakes a sleeper tens of microseconds late), then spins. Adds the time waited to `waited`.
void hold_until(double deadline, double& waited) {
  const double start = omp_get_wtime();
  double now = start;
  while (deadline - now > 200e-6) {
    std::this_thread::sleep_for(std::chrono::duration<double>(deadline - now - 150e-6));
    now = omp_get_wtime();
  }
  while (now < deadline) now = omp_get_wtime();
  waited += now - start;
}

Placement make_placement(const EngineConfig& cfg, int ranks) {
  if (cfg.placement == "random") {
    std::vector<uint64_t> first;
    for (const auto& pop : cfg.populations) first.push_back(pop.first);
    first.push_back(cfg.neuron_count());
    return Placement::random(first, ranks, cfg.threads, cfg.seed);
  }
  if (cfg.placement != "segments") return Placement(cfg.placement, cfg.neuron_count(), ranks, cfg.threads);
  if (cfg.placement_bounds.empty() || cfg.placement_bounds.back() != cfg.neuron_count())
    throw std::invalid_argument("placement segments must cover every neuron: their bounds must end at the neuron count");
  return Placement(cfg.placement_bounds, cfg.placement_ranks, ranks, cfg.threads);
}
}  // namespace

Engine::Engine(EngineConfig cfg, std::unique_ptr<Communicator> comm)
    : cfg_(std::move(cfg)), comm_(std::move(comm)), placement_(make_placement(cfg_, comm_->size())) {
  check_config(cfg_);
  process_simd_level() = simd_level_named(cfg_.simd);   // the process's loops run what the configuration says
  pathway_ = make_pathway(cfg_);
}

Engine::~Engine() = default;

void Engine::build() {
  const int T = cfg_.threads;
  threads_.clear();
  threads_.resize(T);
  const int64_t L = cfg_.steps_per_cycle;
  std::vector<std::string> errors(T);
  // The per-rank plan of the projections that need one (ConnectivityPlan): fixed-total in-degrees
  // and explicit lists, the threads sharing out the projections; then each fixed out-degree
  // projection with all threads (every rank draws all its N_source * K targets).
  ConnectivityPlan plan(cfg_.projections.size());
#pragma omp parallel for num_threads(T) schedule(dynamic)
  for (size_t j = 0; j < cfg_.projections.size(); ++j) {
    try {
      if (cfg_.projections[j].rule == ConnectionRule::fixed_total) draw_indegrees(cfg_, uint32_t(j), plan[j].indegrees);
      if (cfg_.projections[j].rule == ConnectionRule::list) plan_list(cfg_, placement_, rank(), uint32_t(j), plan[j]);
    } catch (const std::exception& e) {
      errors[omp_get_thread_num()] = e.what();
    }
  }
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
  for (size_t j = 0; j < cfg_.projections.size(); ++j)
    if (cfg_.projections[j].rule == ConnectionRule::fixed_outdegree)
      plan_fixed_outdegree(cfg_, placement_, rank(), T, uint32_t(j), plan[j]);
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num();
    try {
      ThreadState& ts = threads_[t];
      build_thread_neurons(cfg_, placement_, rank(), t, ts.neurons);
      build_thread_synapses(cfg_, placement_, plan, ts.neurons, ts.store);
      ts.plastic.clear();
      for (uint32_t j = 0; j < cfg_.projections.size(); ++j) {
        if (!cfg_.projections[j].plastic()) continue;
        SynapseStore grouped;
        std::vector<double> drawn;
        build_thread_synapses(cfg_, placement_, plan, ts.neurons, grouped, int(j), &drawn);
        if (ts.plastic.size() == 0xFFFF) throw std::runtime_error("more than 65535 plastic projections");
        ts.plastic.emplace_back();
        build_plastic_store(cfg_, j, ts.neurons, grouped, drawn, ts.plastic.back());
      }
      // Rows padded by one cache line and never a multiple of 4 KiB apart: rows of the input
      // buffer otherwise map to the same cache sets and evict each other.
      ts.input_stride = (ts.neurons.input_columns + 15) / 16 * 16 + 16;
      ts.input.assign(size_t(cfg_.drive_steps) * ts.input_stride, 0);
      ts.fired.assign(ts.neurons.size() + 64, 0);  // read 64 at a time (update)
      ts.fixed_drive_words.assign(cfg_.drives.size(), {});
      ts.fixed_drive_group.assign(cfg_.drives.size(), 0);
      // One update per population range, its kernel chosen here once.
      const ModelContext context{cfg_.resolution_ms, key_from_seed(cfg_.seed), simd_level_named(cfg_.simd)};
      ts.updates.clear();
      for (const auto& range : ts.neurons.ranges) {
        const PopulationSpec& pop = cfg_.populations[range.population];
        ts.updates.push_back(neuron_model(pop.model).make_update(pop, context, columns_of(ts.neurons, range)));
      }
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
  }
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error(e);

  // External events per neuron and cycle: one table per population (one drive each).
  poisson_.assign(cfg_.populations.size(), PoissonTable());
  for (const auto& d : cfg_.drives)
    poisson_[d.target] = PoissonTable(double(d.n_synapses) * d.rate_hz * 1e-3 * cfg_.resolution_ms * cfg_.drive_steps);

  // The build's scratch memory back to the system before the run's buffers are placed: where
  // they landed in the build's leftovers, dpsnn's update ran about 5 % slower (AVX-512, measured
  // back to back against the same store).
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  build_delivery_queues();
  build_state_recorder();
  build_current_sources();

  // Who needs each of this rank's spikes, then the pathway that takes them there.
  build_target_table();
  pathway_->configure(*comm_, placement_, targets_, has_targets_, uint32_t(L));
  thread_spikes_.clear();
  for (const auto& ts : threads_) thread_spikes_.push_back(&ts.spikes_out);
}

void Engine::build_target_table() {
  const uint64_t N = cfg_.neuron_count();
  const int P = comm_->size();
  // Synapses on this rank per global source.
  std::vector<uint64_t> local_count(N, 0);
  for (const auto& ts : threads_) {
    const auto& st = ts.store;
    for (uint64_t s = 0; s < N; ++s) local_count[s] += st.seg_first[st.row_head[s + 1]] - st.seg_first[st.row_head[s]];
    for (const auto& ps : ts.plastic)
      for (uint64_t s = 0; s < N; ++s) local_count[s] += ps.seg_first[ps.row_head[s + 1]] - ps.seg_first[ps.row_head[s]];
  }
  has_targets_.assign(N, 0);
  for (uint64_t s = 0; s < N; ++s) has_targets_[s] = local_count[s] > 0;

  // Tell each owner rank how many synapses its neurons have here.
  std::vector<size_t> send_counts(P), send_displs(P), recv_counts(P), recv_displs(P);
  const uint64_t mine = placement_.rank_count(rank());
  std::vector<uint64_t> send(N), recv(size_t(P) * mine);
  size_t off = 0;
  for (int r = 0; r < P; ++r) {
    send_displs[r] = off;
    send_counts[r] = placement_.rank_count(r);
    for (uint64_t j = 0; j < send_counts[r]; ++j) send[off + j] = local_count[placement_.rank_gid(r, j)];
    off += send_counts[r];
    recv_counts[r] = mine;
    recv_displs[r] = size_t(r) * mine;
  }
  comm_->alltoallv(send.data(), send_counts, send_displs, recv.data(), recv_counts, recv_displs);

  out_degree_.assign(mine, 0);
  targets_.dest_begin.assign(mine + 1, 0);
  targets_.dest_ranks.clear();
  for (uint64_t j = 0; j < mine; ++j) {
    for (int r = 0; r < P; ++r) {
      const uint64_t k = recv[size_t(r) * mine + j];
      out_degree_[j] += k;
      if (k) targets_.dest_ranks.push_back(uint32_t(r));
    }
    targets_.dest_begin[j + 1] = targets_.dest_ranks.size();
  }
}

// Update: exact integration of every neuron over the cycle's steps, step by step; the loop over
// a population's neurons is vectorised (measured faster here than keeping a block of neurons in
// registers across the steps). Spikes are collected from a byte mask after each step.
RANVIER_PHASE void Engine::update(ThreadState& ts, int64_t cycle, int64_t begin, int64_t end) {
  const uint64_t n = ts.neurons.size(), stride = ts.input_stride;
  const int64_t L = cfg_.steps_per_cycle;
  const double scale = std::ldexp(1.0, -cfg_.fraction_bits);
  uint8_t* fired = ts.fired.data();
  if (begin == 0) ts.spikes_out.clear();   // a cycle begun by an earlier call keeps its spikes
  // The ranges' columns, once per cycle rather than once per step (the columns do not move
  // within a cycle).
  ts.columns.resize(ts.neurons.ranges.size());
  for (size_t ri = 0; ri < ts.neurons.ranges.size(); ++ri) ts.columns[ri] = columns_of(ts.neurons, ts.neurons.ranges[ri]);
  for (int64_t o = begin; o < end; ++o) {
    int32_t* in = ts.input.data() + input_row(cycle, o) * stride;
    // Each population range advances by its model's kernel, chosen at build: one call per range.
    InjectedCurrents& ic = ts.currents;
    if (!ic.current.empty()) ic.advance_to(cycle * L + o);
    for (size_t ri = 0; ri < ts.neurons.ranges.size(); ++ri) {
      const PopulationRange& range = ts.neurons.ranges[ri];
      const int32_t* inhibitory = range.inhibitory_offset ? in + range.begin + range.inhibitory_offset : nullptr;
      const double* current = !ic.current.empty() && ic.range_has_current[ri] ? ic.current.data() + range.begin : nullptr;
      ts.updates[ri]->step({in + range.begin, scale, cycle * L + o, inhibitory, current, range.end - range.begin},
                           ts.columns[ri], fired + range.begin);
    }
    zero_row(in, ts.neurons.input_columns);  // consumed: ready for the next cycle while the row is in cache
    const int64_t step = cycle * L + o + 1;
    // Spikes are rare (a neuron fires in about 1 step of 3000): 64 flags are tested at once.
    for (uint64_t block = 0; block < n; block += 64) {
      uint64_t w[8];
      std::memcpy(w, fired + block, 64);  // `fired` is padded by 64 zero bytes
      if (!((w[0] | w[1]) | (w[2] | w[3]) | (w[4] | w[5]) | (w[6] | w[7]))) continue;
      for (uint64_t k = block; k < std::min(block + 64, n); k += 8) {
        if (!w[(k - block) / 8]) continue;
        for (uint64_t i = k; i < std::min(k + 8, n); ++i) {
          if (!fired[i]) continue;
          ts.spikes_out.push_back(make_record(ts.neurons.gid[i], uint32_t(o)));
          if (!ts.history.empty()) {
            ts.history.record(i, step);
            if (!ts.history.triplet.empty()) ts.history.record_triplet(i, step);
          }
          if (cfg_.record_spikes) { ts.rec_gid.push_back(ts.neurons.gid[i]); ts.rec_step.push_back(step); }
        }
      }
    }
    if (!ts.traced.empty() && step % cfg_.record_state_interval == 0) record_state(ts, step);
  }
}

void Engine::run_cycles(int64_t cycles) {
  if (offset_) throw std::logic_error("run_cycles() inside a cycle: use run_steps()");
  run_steps(cycles * cfg_.steps_per_cycle);
}

// Room for the state samples of steps [start, stop): the steps that are whole multiples of the
// interval (V at those times).
void Engine::size_state_trace(int64_t start, int64_t stop) {
  const int64_t every = cfg_.record_state_interval;
  trace_base_ = trace_V_.size();
  trace_first_sample_ = start / every;
  trace_V_.resize(trace_base_ + size_t(stop / every - trace_first_sample_) * traced_ids_.size());
  trace_c_.resize(trace_V_.size());
  trace_c_in_.resize(trace_V_.size());
  if (trace_w_used_) trace_w_.resize(trace_V_.size());
  for (int r = 0; r < trace_receptors_; ++r) trace_receptor_[r].resize(trace_V_.size());
}

void Engine::run_steps(int64_t steps) {
  if (threads_.empty()) throw std::logic_error("build() must be called before running");
  const int T = cfg_.threads;
  const int64_t L = cfg_.steps_per_cycle;
  const int64_t start = steps_done(), stop = start + steps;
  if (steps < 0 || stop / L >= (int64_t(1) << 32)) throw std::invalid_argument("runs are limited to 2^32 cycles");
  // The cycles this call completes: [cycle_, done_after); the last of them ends the call's exchanges.
  const int64_t done_after = stop / L, cycles = done_after - cycle_;
  size_state_trace(start, stop);
  // Room for this call's timers, grown geometrically: no allocation inside a cycle, and never an
  // exact reserve per call (that copied the whole history every chunk: quadratic in run length).
  // The caller takes the timers after each chunk (take_cycle_timers), so this stays one chunk.
  if (timers_.capacity() < timers_.size() + size_t(cycles))
    timers_.reserve(std::max(2 * timers_.capacity(), timers_.size() + size_t(cycles)));
  if (cycle_ends_.capacity() < cycle_ends_.size() + size_t(cycles))
    cycle_ends_.reserve(std::max(2 * cycle_ends_.capacity(), cycle_ends_.size() + size_t(cycles)));
  if (cycle_loads_.capacity() < cycle_loads_.size() + size_t(cycles))
    cycle_loads_.reserve(std::max(2 * cycle_loads_.capacity(), cycle_loads_.size() + size_t(cycles)));
  const double step_seconds = cfg_.resolution_ms * 1e-3;
  // One cycle: deliver (segments due now) -> drive and update (each thread its own neurons) ->
  // collocate and exchange (the master thread alone talks to the communicator) -> schedule (each
  // thread files the received spikes' segments under their arrival cycle and step). Barriers
  // make every phase time the slowest thread's, and make `received_` complete before any thread
  // schedules from it; it is not written again until the next cycle's exchange.
  //
  // A call that starts or ends inside a cycle runs part of it: deliver and drive where the cycle
  // begins, collocate, exchange and schedule where it ends. A spike of the part already run
  // cannot be due before the cycle ends (its delay is at least one cycle), so splitting a cycle
  // changes nothing but when its work is done: the spikes are the same.
  //
  // Overlapped schedule (cfg_.overlap): the exchange of cycle c starts after its collocate and
  // finishes after the update of cycle c + 1, so it moves while c + 1 is computed. Correct
  // because (1) a cycle is at most half the minimum delay, so a spike of cycle c arrives in
  // cycle c + 2 or later, and its segments are queued at the end of c + 1, before c + 2
  // delivers; (2) two send buffers alternate, so collocating c + 1 never touches the records of
  // c still in flight; (3) at most one exchange is in flight: c finishes before c + 1 starts.
  // The exchange still in flight at the end of a call is finished there, so every call leaves
  // all spikes queued and the counters whole. The two-tier pathway overlaps both of its tiers
  // alike; its global exchange of a window of D cycles finishes one cycle after the window, which
  // the configuration allows only where every inter-area delay lasts D + 1 cycles (two_tier.hpp).
#pragma omp parallel num_threads(T)
  {
    ThreadState& ts = threads_[omp_get_thread_num()];
    double t0 = 0, t1 = 0, t2 = 0, t3 = 0, t5 = 0, communicate = 0, synchronize = 0;
    for (int64_t at = start; at < stop;) {
      const int64_t cycle = at / L, begin = at - cycle * L, end = std::min(L, begin + (stop - at));
      at = cycle * L + end;
#pragma omp master
      t0 = omp_get_wtime();
      if (begin == 0) {
        deliver(ts, cycle);
#pragma omp master
        pathway_->progress();
      }
#pragma omp barrier
#pragma omp master
      t1 = omp_get_wtime();
      if (begin == 0) drive(ts, cycle);
      update(ts, cycle, begin, end);
#pragma omp barrier
      if (end < L) {  // the call ends inside this cycle: its exchange waits for the next call
#pragma omp master
        {
          partial_timer_[kDeliver] += t1 - t0;
          partial_timer_[kUpdate] += omp_get_wtime() - t1;
          offset_ = end;
          if (pace_) hold_until(pace_origin_ + double(steps_done() - pace_origin_step_) * step_seconds, pace_wait_);
        }
        break;
      }
#pragma omp master
      {
        t2 = omp_get_wtime();
        collocate(cycle);
        t3 = omp_get_wtime();
        communicate = synchronize = 0;
        pathway_->exchange(cycle, cycle + 1 == done_after, synchronize, communicate);
        t5 = omp_get_wtime();
      }
#pragma omp barrier
      for (const SpikeBatch& batch : pathway_->received()) schedule(ts, *batch.records, batch.cycle);
#pragma omp barrier
#pragma omp master
      {
        const double t6 = omp_get_wtime();
        timers_.push_back({(t1 - t0) + (t6 - t5) + partial_timer_[kDeliver], t2 - t1 + partial_timer_[kUpdate],
                           t3 - t2, communicate, synchronize});
        partial_timer_ = {};
        cycle_ends_.push_back(t6);
        cycle_loads_.push_back({rank_counters_.spikes_emitted, pathway_->counters().spikes_delivered});
        cycle_ = cycle + 1;
        offset_ = 0;
        pathway_->forget_received();
        if (pace_) hold_until(pace_origin_ + double(steps_done() - pace_origin_step_) * step_seconds, pace_wait_);
      }
    }
    if (pathway_->in_flight()) {  // only with overlap; every thread sees it after the barrier above
#pragma omp barrier
#pragma omp master
      {
        const double t7 = omp_get_wtime();
        pathway_->finish_in_flight();
        cycle_ends_.back() = omp_get_wtime();
        timers_.back()[kCommunicate] += cycle_ends_.back() - t7;
      }
#pragma omp barrier
      for (const SpikeBatch& batch : pathway_->received()) schedule(ts, *batch.records, batch.cycle);
#pragma omp barrier
#pragma omp master
      pathway_->forget_received();
    }
  }
}

// Collocate: count this cycle's spikes and their expected synaptic events, and hand the threads'
// spikes to the pathway, which gathers them into its send buffer(s).
RANVIER_PHASE void Engine::collocate(int64_t cycle) {
  for (const auto& ts : threads_) {
    for (SpikeRecord rec : ts.spikes_out) rank_counters_.events_expected += out_degree_[placement_.rank_index(record_gid(rec))];
    rank_counters_.spikes_emitted += ts.spikes_out.size();
  }
  pathway_->collocate(cycle, thread_spikes_);
}

uint64_t Engine::spikes_unsent() const {
  uint64_t n = 0;
  if (offset_)
    for (const auto& ts : threads_) n += ts.spikes_out.size();
  return n;
}

uint64_t Engine::synapse_count() const {
  uint64_t n = 0;
  for (const auto& ts : threads_) {
    n += ts.store.size();
    for (const auto& ps : ts.plastic) n += ps.size();
  }
  return n;
}

std::vector<int> Engine::synapse_entry_bytes() const {
  std::vector<int> out;
  for (const auto& ts : threads_) out.push_back(ts.store.is_packed() ? 4 : 8);
  return out;
}

uint64_t Engine::synapse_bytes() const {
  uint64_t n = 0;
  for (const auto& ts : threads_) {
    n += ts.store.bytes();
    for (const auto& ps : ts.plastic) n += ps.bytes();
  }
  return n;
}

Counters Engine::counters() const {
  Counters c = rank_counters_;
  const PathwayCounters p = pathway_->counters();
  c.spikes_delivered = p.spikes_delivered;
  c.exchanges_local = p.exchanges_local;
  c.exchanges_global = p.exchanges_global;
  c.exchange = p.exchange;
  c.exchange_global = p.exchange_global;
  for (const auto& ts : threads_) {
    c.synaptic_events_recurrent += ts.counters.synaptic_events_recurrent;
    c.delivery_segments += ts.counters.delivery_segments;
    c.synaptic_events_external += ts.counters.synaptic_events_external;
    c.events_scheduled += ts.counters.events_scheduled;
  }
  return c;
}

}  // namespace ranvier
