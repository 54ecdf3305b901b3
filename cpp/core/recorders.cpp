// What the engine records and hands out: the spike recorder (filled by update, taken per chunk),
// the state recorder (V, c, c_in and w of chosen neurons every step), the cycle timers, and the synapses.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/engine.hpp"

namespace ranvier {

void Engine::build_state_recorder() {
  // State recorder: which thread holds each traced neuron.
  traced_ids_.clear();
  trace_w_used_ = false;
  trace_receptors_ = 0;
  for (uint64_t g : cfg_.record_state) {
    const Location loc = placement_.locate(g);
    if (loc.rank != rank()) continue;
    // The model's inhibitory synaptic variable and adaptation current, where its layout for this
    // population has them.
    const PopulationSpec* owner = &cfg_.populations.front();
    for (const auto& p : cfg_.populations)
      if (g >= p.first && g < p.first + p.size) owner = &p;
    const PopulationSpec& pop = *owner;
    const NeuronModel& model = neuron_model(pop.model);
    const int extra = model.layout_of(pop).extra_columns;
    const int column = model.inhibitory_column < extra ? model.inhibitory_column : -1;
    const int w_column = model.adaptation_column < extra ? model.adaptation_column : -1;
    trace_w_used_ = trace_w_used_ || w_column >= 0;
    ThreadState::Traced traced{loc.index, traced_ids_.size(), column, w_column, {}};
    const int receptors = model.layout_of(pop).receptors;
    for (int r = 0; r < kMaxTracedReceptors; ++r) {
      traced.receptor_columns[r] = model.receptor_column && r + 2 < receptors ? model.receptor_column(pop, r + 2) : -1;
      if (traced.receptor_columns[r] >= 0) trace_receptors_ = std::max(trace_receptors_, r + 1);
    }
    threads_[loc.thread].traced.push_back(traced);
    traced_ids_.push_back(g);
  }
}

// V, c, c_in and w of this thread's traced neurons after the step that ends at `step` (a multiple of the
// recording interval).
void Engine::record_state(const ThreadState& ts, int64_t step) {
  const size_t traced = traced_ids_.size();
  const size_t first = size_t(step / cfg_.record_state_interval - trace_first_sample_ - 1) * traced + trace_base_;
  for (const auto& [k, row, column, w_column, receptor_columns] : ts.traced) {
    trace_V_[first + row] = ts.neurons.V[k];
    trace_c_[first + row] = ts.neurons.c[k];
    trace_c_in_[first + row] = column >= 0 ? ts.neurons.extra[column][k] : std::nan("");
    if (trace_w_used_) trace_w_[first + row] = w_column >= 0 ? ts.neurons.extra[w_column][k] : std::nan("");
    for (int r = 0; r < trace_receptors_; ++r)
      trace_receptor_[r][first + row] = receptor_columns[r] >= 0 ? ts.neurons.extra[receptor_columns[r]][k] : std::nan("");
  }
}

void Engine::take_spikes(std::vector<uint64_t>& gid, std::vector<int64_t>& step) {
  gid.clear();
  step.clear();
  for (auto& ts : threads_) {
    gid.insert(gid.end(), ts.rec_gid.begin(), ts.rec_gid.end());
    step.insert(step.end(), ts.rec_step.begin(), ts.rec_step.end());
    ts.rec_gid.clear();      // capacity kept: the next chunk records into the same memory
    ts.rec_step.clear();
  }
}

std::vector<std::array<double, kPhases>> Engine::take_cycle_timers() {
  std::vector<std::array<double, kPhases>> taken;
  taken.reserve(timers_.capacity());
  taken.swap(timers_);
  return taken;
}

std::vector<double> Engine::take_cycle_ends() {
  std::vector<double> taken;
  taken.reserve(cycle_ends_.capacity());
  taken.swap(cycle_ends_);
  return taken;
}

std::vector<std::array<uint64_t, 2>> Engine::take_cycle_loads() {
  std::vector<std::array<uint64_t, 2>> taken;
  taken.reserve(cycle_loads_.capacity());
  taken.swap(cycle_loads_);
  return taken;
}

void Engine::set_pace(bool on, double origin, int64_t origin_step) {
  pace_ = on;
  pace_origin_ = origin;
  pace_origin_step_ = origin_step;
}

double Engine::wall_time() { return omp_get_wtime(); }

std::vector<uint32_t> Engine::partner_ranks() const {
  std::vector<uint8_t> seen(size_t(ranks()), 0);
  for (uint32_t r : targets_.dest_ranks) seen[r] = 1;
  std::vector<uint32_t> out;
  for (int r = 0; r < ranks(); ++r)
    if (seen[r] && r != rank()) out.push_back(uint32_t(r));
  return out;
}

void Engine::connections(std::vector<uint64_t>& src, std::vector<uint64_t>& tgt, std::vector<double>& w,
                         std::vector<int64_t>& d) const {
  const double scale = std::ldexp(1.0, -cfg_.fraction_bits);
  const uint64_t N = cfg_.neuron_count();
  for (const auto& ts : threads_) {
    const auto& st = ts.store;
    for (uint64_t s = 0; s < N; ++s)
      for (uint32_t h = st.row_head[s]; h < st.row_head[s + 1]; ++h)
        for (uint32_t i = st.seg_first[h]; i < st.seg_first[h + 1]; ++i) {
          src.push_back(s);
          tgt.push_back(ts.neurons.gid[ts.neurons.neuron_of_column(st.target(i))]);
          w.push_back(st.weight(i) * scale);
          d.push_back(st.seg_delay[h]);
        }
    for (const auto& ps : ts.plastic)
      for (uint64_t s = 0; s < N; ++s)
        for (uint32_t h = ps.row_head[s]; h < ps.row_head[s + 1]; ++h)
          for (uint32_t k = 0; k < ps.count(h); ++k) {
            src.push_back(s);
            tgt.push_back(ts.neurons.gid[ps.target(h, k)]);
            w.push_back(ps.weight(h, k));
            d.push_back(ps.seg_delay[h]);
          }
  }
}

void Engine::plastic_weights(uint32_t j, bool up_to_date, std::vector<uint64_t>& src, std::vector<uint64_t>& tgt,
                             std::vector<double>& w, std::vector<int64_t>& d) const {
  const uint64_t N = cfg_.neuron_count();
  const int64_t now = cycle_ * cfg_.steps_per_cycle;   // the last spike time integrated so far
  for (const auto& ts : threads_)
    for (const auto& ps : ts.plastic) {
      if (ps.projection != j) continue;
      for (uint64_t s = 0; s < N; ++s)
        for (uint32_t h = ps.row_head[s]; h < ps.row_head[s + 1]; ++h)
          for (uint32_t k = 0; k < ps.count(h); ++k) {
            src.push_back(s);
            tgt.push_back(ts.neurons.gid[ps.target(h, k)]);
            w.push_back(up_to_date ? weight_up_to_date(ps, h, k, ts.history, now) : ps.weight(h, k));
            d.push_back(ps.seg_delay[h]);
          }
    }
}

uint32_t Engine::plastic_state(uint32_t j, std::vector<double>& out) const {
  if (j >= cfg_.projections.size() || !cfg_.projections[j].plastic())
    throw std::invalid_argument("plastic_state: projection " + std::to_string(j) + " is not plastic");
  const uint64_t N = cfg_.neuron_count();
  const uint32_t doubles = synapse_rule(cfg_.projections[j].plasticity.rule).synapse_state;
  for (const auto& ts : threads_)
    for (const auto& ps : ts.plastic) {
      if (ps.projection != j) continue;
      for (uint64_t s = 0; s < N; ++s)
        for (uint32_t h = ps.row_head[s]; h < ps.row_head[s + 1]; ++h)
          for (uint32_t k = 0; k < ps.count(h); ++k) out.insert(out.end(), ps.state(h, k), ps.state(h, k) + doubles);
    }
  return doubles;
}

void Engine::state_trace(std::vector<uint64_t>& ids, std::vector<double>& V, std::vector<double>& c,
                         std::vector<double>& c_in, std::vector<double>& w, std::vector<double>& receptors,
                         int& traced_receptors) const {
  const size_t n = traced_ids_.size();
  const size_t steps = n ? trace_V_.size() / n : 0;
  ids = traced_ids_;
  V.assign(n * steps, 0.0);
  c.assign(n * steps, 0.0);
  c_in.assign(n * steps, 0.0);
  w.assign(n * steps, std::nan(""));
  const size_t R = size_t(trace_receptors_);
  traced_receptors = trace_receptors_;
  receptors.assign(n * R * steps, std::nan(""));
  for (size_t r = 0; r < n; ++r)
    for (size_t j = 0; j < R; ++j)
      for (size_t s = 0; s < steps; ++s) receptors[(r * R + j) * steps + s] = trace_receptor_[j][s * n + r];
  for (size_t s = 0; s < steps; ++s)
    for (size_t r = 0; r < n; ++r) {
      V[r * steps + s] = trace_V_[s * n + r];
      c[r * steps + s] = trace_c_[s * n + r];
      c_in[r * steps + s] = trace_c_in_[s * n + r];
      if (trace_w_used_) w[r * steps + s] = trace_w_[s * n + r];
    }
}

// plastic_weights lists a store's synapses row by row, segment by segment: the order of their
// index in the store. These two address synapses by their place in that list.
void Engine::set_plastic_weights(uint32_t j, const double* w, size_t n) {
  size_t at = 0;
  for (auto& ts : threads_)
    for (auto& ps : ts.plastic) {
      if (ps.projection != j) continue;
      if (at + ps.size() > n) throw std::invalid_argument("set_plastic_weights: fewer weights than synapses");
      for (uint32_t h = 0; h < ps.seg_delay.size(); ++h)
        for (uint32_t k = 0; k < ps.count(h); ++k) ps.weight(h, k) = w[at++];
    }
  if (at != n) throw std::invalid_argument("set_plastic_weights: more weights than synapses");
}

void Engine::plastic_weights_at(uint32_t j, const std::vector<uint64_t>& places, std::vector<double>& out) const {
  std::vector<const PlasticStore*> stores;
  std::vector<uint64_t> first;          // place of each store's first synapse
  uint64_t total = 0;
  for (const auto& ts : threads_)
    for (const auto& ps : ts.plastic)
      if (ps.projection == j) {
        stores.push_back(&ps);
        first.push_back(total);
        total += ps.size();
      }
  out.resize(places.size());
  for (size_t k = 0; k < places.size(); ++k) {
    if (places[k] >= total) throw std::invalid_argument("plastic_weights_at: a place beyond the synapses");
    const size_t s = size_t(std::upper_bound(first.begin(), first.end(), places[k]) - first.begin()) - 1;
    const uint64_t i = places[k] - first[s];
    const uint32_t h = stores[s]->segment_of(i);
    out[k] = stores[s]->weight(h, uint32_t(i - stores[s]->seg_first[h]));
  }
}

}  // namespace ranvier
