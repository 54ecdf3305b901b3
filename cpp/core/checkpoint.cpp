// Checkpoints: what a run holds that the seed cannot rebuild, keyed by global ids and steps, so
// that another number of ranks or threads, another placement or exchange can take it up
// (src/ranvier/checkpoint.py writes and reads the files).
//
// Taken between run_cycles calls, when every spike is queued (run_cycles finishes any exchange
// in flight). What is saved:
//   - each neuron's state variables and its rows of the input buffer (the drive of a window is
//     drawn at its start, so rows of later steps of the window already hold input);
//   - the spikes in flight: every (source, emission step) with a synapse segment still queued.
//     On restore each thread queues the segments of those spikes that arrive at or after the
//     resumed cycle; which segments those are depends on the delays alone, not on the queues;
//   - plastic synapses: weight and the rule's state (SynapseRule::synapse_state doubles: columns
//     state0, state1, ...) per synapse keyed by (source, delay, target), the source's trace per (source, delay) segment, each target's spike
//     history. Synapses with the same key are interchangeable: they see the same spikes;
//   - each current source's amplitude per target.
#include <algorithm>
#include <unordered_map>
#include <stdexcept>
#include <string>

#include "core/engine.hpp"

namespace ranvier {

namespace {

// The extra state columns a checkpoint holds: the first four always (the number there was before
// models could have more: such checkpoints are read as before), more where a model of the
// network keeps more (NeuronModel::extra_columns).
int checkpoint_extra_columns(const EngineConfig& cfg) {
  int n = 4;
  for (const auto& p : cfg.populations) n = std::max(n, neuron_model(p.model).layout_of(p).extra_columns);
  return std::min(n, kMaxExtraColumns);
}
// The input columns per neuron a checkpoint holds: neuron.input and neuron.input_inhibitory
// always, neuron.input_receptor<r> for r >= 2 where a model of the network has receptors.
int checkpoint_input_columns(const EngineConfig& cfg) {
  int n = 2;
  for (const auto& p : cfg.populations) n = std::max(n, neuron_model(p.model).layout_of(p).input_columns());
  return n;
}
std::string input_column_name(int port) {
  return port == 0 ? "neuron.input" : port == 1 ? "neuron.input_inhibitory" : "neuron.input_receptor" + std::to_string(port);
}
// Each neuron's input column of each port (~0: the neuron's model has no such column).
std::vector<std::vector<uint64_t>> port_columns(const ThreadNeurons& tn, int ports) {
  std::vector<std::vector<uint64_t>> out(size_t(ports), std::vector<uint64_t>(tn.size(), ~uint64_t(0)));
  for (uint64_t k = 0; k < tn.size(); ++k) out[0][k] = k;
  for (const auto& r : tn.ranges)
    for (uint32_t port = 1; port < r.input_columns; ++port)
      for (uint64_t k = r.begin; k < r.end; ++k) out[port][k] = r.column(k, port);
  return out;
}
// splitmix64's finaliser: a well-mixed 64-bit hash of one word.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t synapse_hash(uint64_t tag, uint64_t source, uint64_t target, uint64_t delay, uint64_t weight_bits) {
  return mix(mix(mix(mix(mix(tag) ^ source) ^ target) ^ delay) ^ weight_bits);
}

const std::vector<int64_t>& column(const StateTables& s, const std::string& name) {
  auto it = s.ints.find(name);
  if (it == s.ints.end()) throw std::invalid_argument("checkpoint state lacks '" + name + "'");
  return it->second;
}
const std::vector<double>& real_column(const StateTables& s, const std::string& name) {
  auto it = s.reals.find(name);
  if (it == s.reals.end()) throw std::invalid_argument("checkpoint state lacks '" + name + "'");
  return it->second;
}
}  // namespace

// The static network as an order-independent sum of one hash per synapse: the same for any
// decomposition (the caller adds the ranks' sums). Plastic synapses count without their
// weights, which the run changes.
bool Engine::has_plastic_store(uint32_t projection) const {
  for (const auto& ts : threads_)
    for (const auto& ps : ts.plastic)
      if (ps.projection == projection) return true;
  return false;
}

uint64_t Engine::network_digest() const {
  const uint64_t N = cfg_.neuron_count();
  uint64_t sum = 0;                               // a sum mod 2^64: any order, any split
  const int T = int(threads_.size());
#pragma omp parallel for num_threads(T) schedule(static, 1) reduction(+ : sum)
  for (int t = 0; t < T; ++t) {
    const auto& ts = threads_[t];
    const auto& st = ts.store;
    for (uint64_t s = 0; s < N; ++s)
      for (uint32_t h = st.row_head[s]; h < st.row_head[s + 1]; ++h)
        for (uint32_t i = st.seg_first[h]; i < st.seg_first[h + 1]; ++i)
          sum += synapse_hash(0, s, ts.neurons.gid[ts.neurons.neuron_of_column(st.target(i))], st.seg_delay[h],
                              uint64_t(uint32_t(st.weight(i))));
    for (const auto& ps : ts.plastic)
      for (uint64_t s = 0; s < N; ++s)
        for (uint32_t h = ps.row_head[s]; h < ps.row_head[s + 1]; ++h)
          for (uint32_t k = 0; k < ps.count(h); ++k)
            sum += synapse_hash(1 + ps.projection, s, ts.neurons.gid[ps.target(h, k)], ps.seg_delay[h], 0);
  }
  return sum;
}

StateTables Engine::checkpoint_state() const {
  // Inside a cycle, spikes of its first steps are neither exchanged nor queued: not a state to keep.
  if (offset_) throw std::logic_error("a checkpoint is taken at the end of a cycle, not inside one");
  StateTables out;
  save_neurons(out);
  save_pending(out);
  save_plastic(out);
  save_histories(out);
  save_currents(out);
  out.ints["engine.cycle"] = {cycle_};
  out.ints["engine.steps_per_cycle"] = {cfg_.steps_per_cycle};
  out.ints["engine.drive_steps"] = {cfg_.drive_steps};
  return out;
}

void Engine::save_neurons(StateTables& out) const {
  auto& I = out.ints;
  auto& R = out.reals;
  const int64_t rows = cfg_.drive_steps;
  // Neurons and their input rows ([neuron][row], row = step % drive_steps).
  auto& gid = I["neuron.gid"];
  auto& refractory = I["neuron.refractory"];
  auto& next_spike = I["neuron.next_spike"];
  auto& spikes_fired = I["neuron.spikes_fired"];
  const int ports = checkpoint_input_columns(cfg_);
  std::vector<std::vector<int64_t>*> input(static_cast<size_t>(ports));
  for (int port = 0; port < ports; ++port) input[port] = &I[input_column_name(port)];
  auto& V = R["neuron.V"];
  auto& c = R["neuron.c"];
  // Columns extra0..extra3 always (checkpoints written before there were more read as before);
  // the further ones where a model of the network has them (the same on every rank).
  std::vector<double>* extra[kMaxExtraColumns] = {};
  const int extra_used = checkpoint_extra_columns(cfg_);
  for (int e = 0; e < extra_used; ++e) extra[e] = &R["neuron.extra" + std::to_string(e)];
  for (const auto& ts : threads_) {
    const ThreadNeurons& tn = ts.neurons;
    const uint64_t n = tn.size();
    const auto columns = port_columns(tn, ports);
    for (uint64_t k = 0; k < n; ++k) {
      gid.push_back(int64_t(tn.gid[k]));
      V.push_back(tn.V[k]);
      c.push_back(tn.c[k]);
      refractory.push_back(tn.refractory[k]);
      next_spike.push_back(tn.next_spike.empty() ? 0 : tn.next_spike[k]);
      spikes_fired.push_back(tn.spikes_fired.empty() ? 0 : tn.spikes_fired[k]);
      for (int e = 0; e < kMaxExtraColumns; ++e)
        if (extra[e]) extra[e]->push_back(tn.extra[e].empty() ? 0.0 : tn.extra[e][k]);
      for (int64_t r = 0; r < rows; ++r) {
        const int32_t* row = ts.input.data() + r * ts.input_stride;
        for (int port = 0; port < ports; ++port)
          input[port]->push_back(columns[port][k] == ~uint64_t(0) ? 0 : row[columns[port][k]]);
      }
    }
  }
}

namespace {
// The neuron and port of a further input column `column` (PopulationRange::inhibitory_offset).
uint64_t further_column_neuron(const ThreadNeurons& tn, uint64_t column, uint32_t& port) {
  uint64_t k = 0;
  for (const auto& r : tn.ranges)
    if (r.holds_further_column(column, k)) {
      port = 1 + uint32_t((column - r.begin - r.inhibitory_offset) / (r.end - r.begin));
      return k;
    }
  throw std::logic_error("a pending efficacy onto an input column of no neuron");
}
}  // namespace

void Engine::save_pending(StateTables& out) const {
  auto& I = out.ints;
  const int64_t L = cfg_.steps_per_cycle;
  // Spikes in flight: from each queued segment, its source and emission step (arrival - delay).
  auto& pending_gid = I["pending.gid"];
  auto& pending_step = I["pending.step"];
  auto& efficacy_gid = I["pending_plastic.gid"];
  auto& efficacy_inhibitory = I["pending_plastic.inhibitory"];
  auto& efficacy_arrival = I["pending_plastic.arrival"];
  auto& efficacy_value = I["pending_plastic.efficacy"];
  auto arrival_step = [&](size_t q) {       // queue q = slot * L + offset holds arrivals in [boundary, ...)
    const int64_t slot = int64_t(q) / L, offset = int64_t(q) % L;
    int64_t arrival_cycle = cycle_ - (cycle_ % queue_cycles_) + slot;
    if (arrival_cycle < cycle_) arrival_cycle += queue_cycles_;
    return arrival_cycle * L + offset;
  };
  auto source_of = [](const std::vector<uint32_t>& row_head, uint32_t h) {
    return uint64_t(std::upper_bound(row_head.begin(), row_head.end(), h) - row_head.begin() - 1);
  };
  for (const auto& ts : threads_) {
    const auto& st = ts.store;
    for (size_t q = 0; q < ts.queue.size(); ++q) {
      if (ts.queue[q].empty()) continue;
      const int64_t at = arrival_step(q);
      for (const DeliveryEntry& e : ts.queue[q]) {
        const uint32_t h = uint32_t(std::upper_bound(st.seg_first.begin(), st.seg_first.end(), e.first) -
                                    st.seg_first.begin() - 1);
        pending_gid.push_back(int64_t(source_of(st.row_head, h)));
        pending_step.push_back(at - st.seg_delay[h]);
      }
    }
    // Plastic efficacies on their way (their synapses were updated when the spike was received):
    // each by its target, the input column's kind and its arrival step.
    for (size_t q = 0; q < ts.plastic_pending.size(); ++q) {
      if (ts.plastic_pending[q].empty()) continue;
      const int64_t at = arrival_step(q);
      const uint64_t n = ts.neurons.size();
      for (const PendingEfficacy& p : ts.plastic_pending[q]) {
        uint32_t port = 0;
        const uint64_t k = p.column < n ? p.column : further_column_neuron(ts.neurons, p.column, port);
        efficacy_gid.push_back(int64_t(ts.neurons.gid[k]));
        efficacy_inhibitory.push_back(port);   // the port: 1 the inhibitory column, r a receptor
        efficacy_arrival.push_back(at);
        efficacy_value.push_back(p.efficacy);
      }
    }
  }
}

void Engine::save_plastic(StateTables& out) const {
  auto& I = out.ints;
  auto& R = out.reals;
  // Plastic projections: synapses, segment traces; the targets' histories once per rank.
  const uint64_t N = cfg_.neuron_count();
  for (uint32_t j = 0; j < cfg_.projections.size(); ++j) {
    const std::string p = "plastic" + std::to_string(j) + ".";
    if (!has_plastic_store(j)) continue;
    auto& src = I[p + "source"];
    auto& tgt = I[p + "target"];
    auto& delay = I[p + "delay"];
    auto& weight = R[p + "weight"];
    std::vector<std::vector<double>> state;         // the rule's state, one column per double
    auto& seg_src = I[p + "segment.source"];
    auto& seg_delay = I[p + "segment.delay"];
    auto& seg_last = I[p + "segment.last"];
    auto& seg_k_plus = R[p + "segment.k_plus"];
    for (const auto& ts : threads_)
      for (const auto& ps : ts.plastic) {
        if (ps.projection != j) continue;
        for (uint64_t s = 0; s < N; ++s)
          for (uint32_t h = ps.row_head[s]; h < ps.row_head[s + 1]; ++h) {
            seg_src.push_back(int64_t(s));
            seg_delay.push_back(ps.seg_delay[h]);
            seg_last.push_back(ps.trace(h).last);
            seg_k_plus.push_back(ps.trace(h).k_plus);
            for (uint32_t k = 0; k < ps.count(h); ++k) {
              src.push_back(int64_t(s));
              tgt.push_back(int64_t(ts.neurons.gid[ps.target(h, k)]));
              delay.push_back(ps.seg_delay[h]);
              weight.push_back(ps.weight(h, k));
              state.resize(ps.synapse_state);
              for (uint32_t i = 0; i < ps.synapse_state; ++i) state[i].push_back(ps.state(h, k)[i]);
            }
          }
      }
    for (size_t i = 0; i < state.size(); ++i) R[p + "state" + std::to_string(i)] = std::move(state[i]);
  }
}

void Engine::save_histories(StateTables& out) const {
  auto& I = out.ints;
  auto& R = out.reals;
  auto& post_gid = I["post.gid"];
  auto& post_last = I["post.last"];
  auto& post_previous = I["post.previous"];
  auto& post_last_reads = I["post.last_reads"];
  auto& post_spikes = I["post.spikes"];             // entries of the history kept, per neuron
  auto& post_k_minus = R["post.k_minus"];
  auto& spike_step = I["post.spike.step"];
  auto& spike_reads = I["post.spike.reads"];
  auto& spike_k_minus = R["post.spike.k_minus"];
  // The triplet trace, where the targets keep it (PostHistory::TripletTrace), by the same rows.
  std::vector<int64_t> triplet_gid;
  std::vector<double> triplet_last, triplet_spike;
  for (const auto& ts : threads_) {
    const PostHistory& ph = ts.history;
    if (ph.empty()) continue;
    if (!ph.triplet.empty())
      for (uint64_t k = 0; k < ph.cold.size(); ++k) {
        if (!ph.cold[k].incoming || !ph.triplet.decay[k]) continue;
        triplet_gid.push_back(int64_t(ts.neurons.gid[k]));
        triplet_last.push_back(ph.triplet.last[k]);
        for (uint32_t e = ph.where[k].head; e < ph.where[k].size; ++e) triplet_spike.push_back(ph.triplet.k[k][e]);
      }
    for (uint64_t k = 0; k < ph.cold.size(); ++k) {
      if (!ph.cold[k].incoming) continue;
      const auto& hot = ph.hot[k];
      const auto& at = ph.where[k];
      post_gid.push_back(int64_t(ts.neurons.gid[k]));
      post_last.push_back(hot.last);
      post_previous.push_back(hot.previous);
      post_last_reads.push_back(hot.last_reads);
      post_k_minus.push_back(hot.k_minus);
      post_spikes.push_back(int64_t(at.size - at.head));
      for (uint32_t e = at.head; e < at.size; ++e) {
        spike_step.push_back(ph.cold[k].spikes[e].step);
        spike_reads.push_back(int64_t(ph.cold[k].spikes[e].reads));
        spike_k_minus.push_back(ph.cold[k].spikes[e].k_minus);
      }
    }
  }
  if (!triplet_gid.empty()) {
    I["post.triplet.gid"] = std::move(triplet_gid);
    R["post.triplet.k_minus"] = std::move(triplet_last);
    R["post.triplet.spike.k_minus"] = std::move(triplet_spike);
  }
}

void Engine::save_currents(StateTables& out) const {
  auto& I = out.ints;
  auto& R = out.reals;
  // Current sources: each slot's amplitude now, keyed by (source, target).
  auto& cur_source = I["current.source"];
  auto& cur_gid = I["current.gid"];
  auto& cur_amplitude = R["current.amplitude"];
  for (const auto& ts : threads_) {
    const InjectedCurrents& ic = ts.currents;
    for (size_t slot = 0; slot < ic.slot_amplitude.size(); ++slot) {
      cur_source.push_back(ic.slot_source[slot]);
      cur_gid.push_back(int64_t(ts.neurons.gid[ic.slot_neuron[slot]]));
      cur_amplitude.push_back(ic.slot_amplitude[slot]);
    }
  }
}

void Engine::restore_state(const StateTables& s, int64_t boundary_step) {
  if (threads_.empty()) throw std::logic_error("build() must be called before restore_state()");
  const int64_t L = cfg_.steps_per_cycle, rows = cfg_.drive_steps;
  if (boundary_step < 0 || boundary_step % L)
    throw std::invalid_argument("the checkpoint's step " + std::to_string(boundary_step) +
                                " is not a whole number of this run's cycles of " + std::to_string(L) + " steps");
  if (column(s, "engine.drive_steps").at(0) != rows)
    throw std::invalid_argument("the checkpoint's drive window differs from this run's");
  cycle_ = boundary_step / L;
  offset_ = 0;
  partial_timer_ = {};
  restore_neurons(s);
  restore_pending(s, boundary_step);
  restore_plastic(s);
  restore_histories(s);
  restore_currents(s, boundary_step);
}

void Engine::restore_neurons(const StateTables& s) {
  const int64_t rows = cfg_.drive_steps;
  // Neurons: state and input rows, each on the thread that now holds it.
  const auto& gid = column(s, "neuron.gid");
  const auto& V = real_column(s, "neuron.V");
  const auto& c = real_column(s, "neuron.c");
  const auto& refractory = column(s, "neuron.refractory");
  const auto& next_spike = column(s, "neuron.next_spike");
  const auto& spikes_fired = column(s, "neuron.spikes_fired");
  const int ports = checkpoint_input_columns(cfg_);
  std::vector<const std::vector<int64_t>*> input(static_cast<size_t>(ports));
  for (int port = 0; port < ports; ++port) input[port] = &column(s, input_column_name(port));
  // extra0..extra3 always; the further ones where a model of the network has them.
  const std::vector<double>* extra[kMaxExtraColumns] = {};
  const int extra_used = checkpoint_extra_columns(cfg_);
  for (int e = 0; e < extra_used; ++e) extra[e] = &real_column(s, "neuron.extra" + std::to_string(e));
  for (int port = 0; port < ports; ++port)
    if (input[port]->size() != gid.size() * size_t(rows)) throw std::invalid_argument("checkpoint input rows malformed");
  std::vector<std::vector<std::vector<uint64_t>>> columns(threads_.size());
  for (size_t t = 0; t < threads_.size(); ++t) {
    columns[t] = port_columns(threads_[t].neurons, ports);
    std::fill(threads_[t].input.begin(), threads_[t].input.end(), 0);
  }
  uint64_t restored = 0;
  for (size_t x = 0; x < gid.size(); ++x) {
    const Location loc = placement_.locate(uint64_t(gid[x]));
    if (loc.rank != rank()) continue;
    ThreadState& ts = threads_[loc.thread];
    ThreadNeurons& tn = ts.neurons;
    const uint64_t k = loc.index;
    tn.V[k] = V[x];
    tn.c[k] = c[x];
    tn.refractory[k] = int32_t(refractory[x]);
    if (!tn.next_spike.empty()) tn.next_spike[k] = next_spike[x];
    if (!tn.spikes_fired.empty()) tn.spikes_fired[k] = uint32_t(spikes_fired[x]);
    for (int e = 0; e < kMaxExtraColumns; ++e)
      if (!tn.extra[e].empty()) tn.extra[e][k] = (*extra[e])[x];   // extra[e] is set: the column is used
    for (int64_t r = 0; r < rows; ++r) {
      int32_t* row = ts.input.data() + r * ts.input_stride;
      for (int port = 0; port < ports; ++port) {
        const uint64_t at = columns[loc.thread][port][k];
        if (at != ~uint64_t(0)) row[at] = int32_t((*input[port])[x * rows + r]);
      }
    }
    ++restored;
  }
  uint64_t local = 0;
  for (const auto& ts : threads_) local += ts.neurons.size();
  if (restored != local)
    throw std::invalid_argument("the checkpoint holds " + std::to_string(restored) + " of this rank's " +
                                std::to_string(local) + " neurons");
}

void Engine::restore_pending(const StateTables& s, int64_t boundary_step) {
  const int64_t L = cfg_.steps_per_cycle;
  // Spikes in flight: each thread queues the segments that arrive from the resumed cycle on.
  // A spike with segments queued on several threads or ranks was saved once for each.
  std::vector<std::pair<int64_t, int64_t>> pending;
  {
    const auto& g = column(s, "pending.gid");
    const auto& e = column(s, "pending.step");
    for (size_t x = 0; x < g.size(); ++x) pending.push_back({e[x], g[x]});
    std::sort(pending.begin(), pending.end());
    pending.erase(std::unique(pending.begin(), pending.end()), pending.end());
  }
  const uint64_t N = cfg_.neuron_count();
  for (auto& ts : threads_) {
    for (auto& q : ts.queue) q.clear();
    for (auto& q : ts.plastic_pending) q.clear();
    uint64_t scheduled = 0;
    auto slot_of = [&](int64_t arrival) {
      return size_t(((arrival / L) % queue_cycles_) * L + arrival % L);
    };
    for (const auto& [e, source] : pending) {
      const uint64_t g = uint64_t(source);
      if (source < 0 || g >= N) throw std::invalid_argument("checkpoint: a spike in flight has an unknown source");
      const auto& st = ts.store;
      for (uint32_t h = st.row_head[g]; h < st.row_head[g + 1]; ++h) {
        const int64_t arrival = e + st.seg_delay[h];
        if (arrival < boundary_step) continue;
        const uint32_t first = st.seg_first[h], count = st.seg_first[h + 1] - first;
        ts.queue[slot_of(arrival)].push_back({first, count});
        scheduled += count;
      }
    }
    ts.counters.events_scheduled += scheduled;
  }
  // Plastic efficacies on their way, each onto the thread that now holds its target.
  const auto& gid = column(s, "pending_plastic.gid");
  const auto& inhibitory = column(s, "pending_plastic.inhibitory");
  const auto& arrival = column(s, "pending_plastic.arrival");
  const auto& efficacy = column(s, "pending_plastic.efficacy");
  for (size_t x = 0; x < gid.size(); ++x) {
    const Location loc = placement_.locate(uint64_t(gid[x]));
    if (loc.rank != rank()) continue;
    ThreadState& ts = threads_[loc.thread];
    if (ts.plastic_pending.empty() || arrival[x] < boundary_step)
      throw std::invalid_argument("checkpoint: a plastic efficacy in flight onto neuron " + std::to_string(gid[x]) +
                                  " has no plastic synapse to come from");
    uint64_t column = loc.index;
    if (inhibitory[x]) {     // the port (1: inhibitory, r: receptor r)
      for (const auto& r : ts.neurons.ranges)
        if (loc.index >= r.begin && loc.index < r.end && uint64_t(inhibitory[x]) < r.input_columns)
          column = r.column(loc.index, uint32_t(inhibitory[x]));
      if (column == loc.index) throw std::invalid_argument("checkpoint: a plastic efficacy onto an input column the neuron does not have");
    }
    ts.plastic_pending[size_t(((arrival[x] / L) % queue_cycles_) * L + arrival[x] % L)].push_back(
        {uint32_t(column), int32_t(efficacy[x])});
  }
}

void Engine::restore_plastic(const StateTables& s) {
  const uint64_t N = cfg_.neuron_count();
  // Plastic synapses, keyed (source, delay, target): the saved ones come sorted by key
  // (ranvier.checkpoint), this rank's are sorted here, and one merge walks both; synapses with
  // the same key take the saved values in order. Segment traces, keyed (source, delay): each
  // store's segments come in that order already.
  for (uint32_t j = 0; j < cfg_.projections.size(); ++j) {
    const std::string p = "plastic" + std::to_string(j) + ".";
    if (!has_plastic_store(j)) continue;
    const auto& src = column(s, p + "source");
    const auto& tgt = column(s, p + "target");
    const auto& delay = column(s, p + "delay");
    const auto& weight = real_column(s, p + "weight");
    // The rule's state, a column per double (a checkpoint written before named state0 k_plus).
    const uint32_t doubles = synapse_rule(cfg_.projections[j].plasticity.rule).synapse_state;
    std::vector<const std::vector<double>*> state(doubles);
    for (uint32_t i = 0; i < doubles; ++i) {
      auto found = s.reals.find(p + "state" + std::to_string(i));
      if (found == s.reals.end() && i == 0) found = s.reals.find(p + "k_plus");
      if (found == s.reals.end() || found->second.size() != src.size())
        throw std::invalid_argument("checkpoint: the synapses' state column " + p + "state" + std::to_string(i) +
                                    " is missing or short");
      state[i] = &found->second;
    }
    using SynKey = std::pair<uint64_t, uint64_t>;       // (source << 16 | delay, target)
    auto saved_key = [&](size_t x) { return SynKey((uint64_t(src[x]) << 16) | uint64_t(delay[x]), uint64_t(tgt[x])); };
    for (size_t x = 1; x < src.size(); ++x)
      if (saved_key(x) < saved_key(x - 1)) throw std::invalid_argument("checkpoint: plastic synapses out of order");
    struct Local {
      SynKey key;
      PlasticStore* store;
      uint32_t h, k;
    };
    std::vector<Local> local;
    for (auto& ts : threads_)
      for (auto& ps : ts.plastic) {
        if (ps.projection != j) continue;
        for (uint64_t g = 0; g < N; ++g)
          for (uint32_t h = ps.row_head[g]; h < ps.row_head[g + 1]; ++h)
            for (uint32_t k = 0; k < ps.count(h); ++k)
              local.push_back({SynKey((g << 16) | ps.seg_delay[h], ts.neurons.gid[ps.target(h, k)]), &ps, h, k});
      }
    std::stable_sort(local.begin(), local.end(), [](const Local& a, const Local& b) { return a.key < b.key; });
    size_t x = 0;
    for (const Local& l : local) {
      while (x < src.size() && saved_key(x) < l.key) ++x;
      if (x == src.size() || saved_key(x) != l.key)
        throw std::invalid_argument("checkpoint: a plastic synapse of this network is missing from it");
      l.store->weight(l.h, l.k) = weight[x];
      for (uint32_t i = 0; i < doubles; ++i) l.store->state(l.h, l.k)[i] = (*state[i])[x];
      ++x;
    }
    const auto& seg_src = column(s, p + "segment.source");
    const auto& seg_delay = column(s, p + "segment.delay");
    const auto& seg_last = column(s, p + "segment.last");
    const auto& seg_k_plus = real_column(s, p + "segment.k_plus");
    auto seg_key = [&](size_t y) { return std::make_pair(seg_src[y], seg_delay[y]); };
    for (size_t y = 1; y < seg_src.size(); ++y)
      if (seg_key(y) < seg_key(y - 1)) throw std::invalid_argument("checkpoint: plastic segments out of order");
    for (auto& ts : threads_)
      for (auto& ps : ts.plastic) {
        if (ps.projection != j) continue;
        size_t y = 0;
        for (uint64_t g = 0; g < N; ++g)
          for (uint32_t h = ps.row_head[g]; h < ps.row_head[g + 1]; ++h) {
            const auto key = std::make_pair(int64_t(g), int64_t(ps.seg_delay[h]));
            while (y < seg_src.size() && seg_key(y) < key) ++y;
            if (y == seg_src.size() || seg_key(y) != key) throw std::invalid_argument("checkpoint: a plastic segment is missing");
            ps.trace(h).last = seg_last[y];
            ps.trace(h).k_plus = seg_k_plus[y];
          }
      }
  }
}

void Engine::restore_histories(const StateTables& s) {
  // The targets' spike histories.
  const auto& post_gid = column(s, "post.gid");
  const auto& post_last = column(s, "post.last");
  const auto& post_previous = column(s, "post.previous");
  const auto& post_last_reads = column(s, "post.last_reads");
  const auto& post_spikes = column(s, "post.spikes");
  const auto& post_k_minus = real_column(s, "post.k_minus");
  const auto& spike_step = column(s, "post.spike.step");
  const auto& spike_reads = column(s, "post.spike.reads");
  const auto& spike_k_minus = real_column(s, "post.spike.k_minus");
  size_t first = 0;
  for (size_t x = 0; x < post_gid.size(); first += size_t(post_spikes[x]), ++x) {
    const Location loc = placement_.locate(uint64_t(post_gid[x]));
    if (loc.rank != rank()) continue;
    PostHistory& ph = threads_[loc.thread].history;
    const uint64_t k = loc.index;
    if (ph.empty() || !ph.cold[k].incoming) throw std::invalid_argument("checkpoint: a spike history has no neuron");
    auto& hot = ph.hot[k];
    hot.last = post_last[x];
    hot.previous = post_previous[x];
    hot.last_reads = uint32_t(post_last_reads[x]);
    hot.k_minus = post_k_minus[x];
    auto& v = ph.cold[k].spikes;
    v.clear();
    for (size_t e = first; e < first + size_t(post_spikes[x]); ++e) {
      PostSpike spike;
      spike.step = spike_step[e];
      spike.reads = uint64_t(spike_reads[e]);
      spike.k_minus = spike_k_minus[e];
      v.push_back(spike);
    }
    ph.where[k] = {v.data(), uint32_t(v.size()), 0};
  }
  restore_triplet_histories(s);
}

void Engine::restore_triplet_histories(const StateTables& s) {
  // The triplet traces, after the histories whose entries they follow (saved in the same order).
  bool any = false;
  for (const auto& ts : threads_) any = any || !ts.history.triplet.empty();
  if (!any) return;
  if (!s.ints.count("post.triplet.gid"))
    throw std::invalid_argument("checkpoint: the targets' triplet traces are missing (post.triplet.*)");
  const auto& post_gid = column(s, "post.gid");
  const auto& post_spikes = column(s, "post.spikes");
  const auto& triplet_gid = column(s, "post.triplet.gid");
  const auto& triplet_last = real_column(s, "post.triplet.k_minus");
  const auto& triplet_spike = real_column(s, "post.triplet.spike.k_minus");
  std::unordered_map<int64_t, int64_t> spikes_of;
  for (size_t x = 0; x < post_gid.size(); ++x) spikes_of[post_gid[x]] = post_spikes[x];
  size_t first = 0;
  for (size_t x = 0; x < triplet_gid.size(); ++x) {
    const auto spikes = spikes_of.find(triplet_gid[x]);
    if (spikes == spikes_of.end())
      throw std::invalid_argument("checkpoint: post.triplet.gid lists neuron " + std::to_string(triplet_gid[x]) +
                                  ", which has no spike history in post.gid: the state is corrupt; resume from "
                                  "an older checkpoint");
    const size_t count = size_t(spikes->second);
    if (first + count > triplet_spike.size()) throw std::invalid_argument("checkpoint: triplet traces cut short");
    const Location loc = placement_.locate(uint64_t(triplet_gid[x]));
    if (loc.rank == rank()) {
      PostHistory& ph = threads_[loc.thread].history;
      const uint64_t k = loc.index;
      if (ph.triplet.empty() || !ph.triplet.decay[k])
        throw std::invalid_argument("checkpoint: a triplet trace has no triplet target");
      ph.triplet.last[k] = triplet_last[x];
      ph.triplet.k[k].assign(triplet_spike.begin() + first, triplet_spike.begin() + first + count);
    }
    first += count;
  }
}

void Engine::restore_currents(const StateTables& s, int64_t boundary_step) {
  // Current sources: amplitudes as saved; changes before the boundary are not applied again.
  const auto& cur_source = column(s, "current.source");
  const auto& cur_gid = column(s, "current.gid");
  const auto& cur_amplitude = real_column(s, "current.amplitude");
  for (auto& ts : threads_) {
    InjectedCurrents& ic = ts.currents;
    if (ic.slot_amplitude.empty()) continue;
    while (ic.next < ic.changes.size() && ic.changes[ic.next].step < boundary_step) ++ic.next;
  }
  for (size_t x = 0; x < cur_gid.size(); ++x) {
    const Location loc = placement_.locate(uint64_t(cur_gid[x]));
    if (loc.rank != rank()) continue;
    InjectedCurrents& ic = threads_[loc.thread].currents;
    const uint64_t k = loc.index;
    for (uint32_t slot = ic.slot_begin[k]; slot < ic.slot_begin[k + 1]; ++slot)
      if (ic.slot_source[slot] == uint32_t(cur_source[x])) ic.set_amplitude(slot, cur_amplitude[x]);
  }
}

}  // namespace ranvier
