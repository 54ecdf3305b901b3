// Injected currents (Python: rv.StepCurrent, rv.DCCurrent, rv.NoiseCurrent, rv.ACCurrent; SONATA
// current clamps). Per thread, each source's amplitude changes become one list ordered by step,
// applied as the update reaches their step; a noise source draws each target's current at the
// start of every interval from (seed, gid, source, interval); a sine source turns its oscillator
// once a step (NEST's ac_generator). Only global ids and the sources' order decide the result:
// the same on any decomposition.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "base/distributions.hpp"
#include "core/engine.hpp"
#include "base/philox.hpp"

namespace ranvier {

namespace {
constexpr double kPi = 3.14159265358979323846;   // NEST's numerics::pi
}

// NEST 3.10's ac_generator (models/ac_generator.cpp, pre_run_hook and update): the same
// expressions for omega, the phase and the rotation's elements, and the same rotation in the same
// order of operations; the initial state is NEST's at t = 0 (NEST sets it again at the start of
// each Simulate call, from that time: a difference of rounding, tests/test_currents.py).
SineOscillator::SineOscillator(double amplitude_pA, double frequency_hz, double phase_deg, double resolution_ms)
    : amplitude(amplitude_pA) {
  const double omega = 2.0 * kPi * frequency_hz / 1000.0;      // per ms
  phi_rad = phase_deg * 2.0 * kPi / 360.0;
  a00 = std::cos(omega * resolution_ms);
  a01 = -std::sin(omega * resolution_ms);
  a10 = std::sin(omega * resolution_ms);
  a11 = std::cos(omega * resolution_ms);
}

double SineOscillator::value_at(int64_t s) {
  if (turns < 0 || s < turns) {
    y0 = amplitude * std::cos(phi_rad);
    y1 = amplitude * std::sin(phi_rad);
    turns = 0;
  }
  for (; turns < s; ++turns) {
    const double y = y0;
    y0 = a00 * y + a01 * y1;
    y1 = a10 * y + a11 * y1;
  }
  return y1;
}

std::vector<double> current_source_values(const CurrentSourceSpec& cs, uint32_t source,
                                          const std::vector<uint64_t>& targets, uint64_t seed,
                                          double resolution_ms, int64_t first, int64_t n) {
  if (targets.empty()) throw std::invalid_argument("current_source_values: no targets");
  if (first < 0 || n < 0) throw std::invalid_argument("current_source_values: steps must not be negative");
  std::vector<double> out(size_t(n), 0.0);
  if (cs.sine) {
    SineOscillator osc(cs.sine_amplitude_pA, cs.sine_frequency_hz, cs.sine_phase_deg, resolution_ms);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t s = first + k;
      if (s >= cs.start_step && s < cs.stop_step) out[size_t(k)] = cs.sine_offset_pA + osc.value_at(s);
    }
  } else if (cs.noise_interval_steps > 0) {
    const Key key = key_from_seed(seed);
    for (uint64_t g : targets)
      for (int64_t k = 0; k < n; ++k) {
        const int64_t s = first + k;
        if (s < cs.start_step || s >= cs.stop_step) continue;
        const uint32_t interval = uint32_t((s - cs.start_step) / cs.noise_interval_steps);
        const double u = Stream(key, g, Purpose::noise_current, source, interval).uniform();
        out[size_t(k)] += cs.noise_mean_pA + cs.noise_std_pA * inverse_normal(u);
      }
    for (double& v : out) v /= double(targets.size());
  } else {
    if (cs.steps.size() != cs.amplitudes_pA.size())
      throw std::invalid_argument("current_source_values: steps and amplitudes differ in length");
    size_t i = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t s = first + k;
      while (i < cs.steps.size() && cs.steps[i] <= s) ++i;
      if (i > 0) out[size_t(k)] = cs.amplitudes_pA[i - 1];
    }
  }
  return out;
}

void InjectedCurrents::set_slot(uint32_t slot, double amplitude_pA) {
  slot_amplitude[slot] = amplitude_pA;
  const uint32_t neuron = slot_neuron[slot];
  double sum = 0.0;                              // in source order
  for (uint32_t k = slot_begin[neuron]; k < slot_begin[neuron + 1]; ++k) sum += slot_amplitude[k];
  current[neuron] = sum;
}

void InjectedCurrents::advance_to(int64_t s) {
  while (next < changes.size() && changes[next].step <= s) {
    const Change& c = changes[next++];
    set_slot(c.slot, c.amplitude_pA);
  }
  for (const Noise& n : noise) {
    if (s < n.start || s > n.stop) continue;
    if (s == n.stop) {                           // off from its stop on
      for (uint32_t slot : n.slots) set_slot(slot, 0.0);
      continue;
    }
    if ((s - n.start) % n.interval) continue;
    const uint32_t interval = uint32_t((s - n.start) / n.interval);
    for (uint32_t slot : n.slots) {
      const double u = Stream(key, gid[slot_neuron[slot]], Purpose::noise_current, n.source, interval).uniform();
      set_slot(slot, n.mean + n.std * inverse_normal(u));
    }
  }
  for (Sine& c : sine) {
    if (s >= c.start && s < c.stop) {
      const double value = c.offset + c.oscillator.value_at(s);   // NEST: y_1 + offset
      for (uint32_t slot : c.slots) set_slot(slot, value);
      c.on = true;
    } else if (c.on) {                           // off outside its window
      for (uint32_t slot : c.slots) set_slot(slot, 0.0);
      c.on = false;
    }
  }
}

void Engine::build_current_sources() {
  for (auto& ts : threads_) ts.currents = InjectedCurrents();
  if (cfg_.current_sources.empty()) return;
  if (cfg_.current_sources.size() > 0xFFFFu) throw std::invalid_argument("at most 65,535 current sources");
  // Per thread: (neuron, source) pairs; a neuron's slots in source order.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> pairs(threads_.size());
  for (uint32_t src = 0; src < cfg_.current_sources.size(); ++src) {
    const CurrentSourceSpec& cs = cfg_.current_sources[src];
    if (cs.steps.size() != cs.amplitudes_pA.size())
      throw std::invalid_argument("current source " + std::to_string(src) + ": steps and amplitudes differ in length");
    for (uint64_t g : cs.targets) {
      const Location loc = placement_.locate(g);
      if (loc.rank != rank()) continue;
      pairs[loc.thread].push_back({uint32_t(loc.index), src});
    }
  }
  for (size_t t = 0; t < threads_.size(); ++t) {
    auto& p = pairs[t];
    if (p.empty()) continue;
    ThreadState& ts = threads_[t];
    InjectedCurrents& ic = ts.currents;
    ic.key = key_from_seed(cfg_.seed);
    ic.gid = ts.neurons.gid;
    std::sort(p.begin(), p.end());               // by neuron, then source: a neuron's slots in source order
    const uint64_t n = ts.neurons.size();
    ic.current.assign(n, 0.0);
    ic.slot_begin.assign(n + 1, 0);
    for (const auto& [neuron, src] : p) ++ic.slot_begin[neuron + 1];
    for (uint64_t k = 0; k < n; ++k) ic.slot_begin[k + 1] += ic.slot_begin[k];
    ic.slot_amplitude.assign(p.size(), 0.0);
    ic.slot_neuron.resize(p.size());
    ic.slot_source.resize(p.size());
    std::vector<int> noise_of(cfg_.current_sources.size(), -1), sine_of(cfg_.current_sources.size(), -1);
    for (uint32_t slot = 0; slot < p.size(); ++slot) {
      const auto& [neuron, src] = p[slot];
      ic.slot_neuron[slot] = neuron;
      ic.slot_source[slot] = src;
      const CurrentSourceSpec& cs = cfg_.current_sources[src];
      if (cs.noise_interval_steps > 0) {
        if (noise_of[src] < 0) {
          noise_of[src] = int(ic.noise.size());
          ic.noise.push_back({src, cs.noise_interval_steps, cs.start_step, cs.stop_step, cs.noise_mean_pA,
                              cs.noise_std_pA, {}});
        }
        ic.noise[size_t(noise_of[src])].slots.push_back(slot);
        continue;
      }
      if (cs.sine) {
        if (sine_of[src] < 0) {
          sine_of[src] = int(ic.sine.size());
          ic.sine.push_back({src, cs.start_step, cs.stop_step, cs.sine_offset_pA,
                             SineOscillator(cs.sine_amplitude_pA, cs.sine_frequency_hz, cs.sine_phase_deg,
                                            cfg_.resolution_ms), true, {}});
        }
        ic.sine[size_t(sine_of[src])].slots.push_back(slot);
        continue;
      }
      for (size_t i = 0; i < cs.steps.size(); ++i) ic.changes.push_back({cs.steps[i], neuron, slot, cs.amplitudes_pA[i]});
    }
    std::stable_sort(ic.changes.begin(), ic.changes.end(), [](const auto& a, const auto& b) {
      return a.step != b.step ? a.step < b.step : a.neuron != b.neuron ? a.neuron < b.neuron : a.slot < b.slot;
    });
    ic.range_has_current.assign(ts.neurons.ranges.size(), 0);
    for (size_t ri = 0; ri < ts.neurons.ranges.size(); ++ri) {
      const PopulationRange& r = ts.neurons.ranges[ri];
      ic.range_has_current[ri] = ic.slot_begin[r.end] > ic.slot_begin[r.begin];
    }
  }
}

void Engine::set_current_source(uint32_t index, const CurrentSourceSpec& spec) {
  if (index >= cfg_.current_sources.size()) throw std::invalid_argument("set_current_source: no such source");
  const CurrentSourceSpec& old = cfg_.current_sources[index];
  if (spec.targets != old.targets || (spec.noise_interval_steps > 0) != (old.noise_interval_steps > 0) ||
      spec.sine != old.sine)
    throw std::invalid_argument("set_current_source: the same targets and kind of source are needed");
  if (spec.steps.size() != spec.amplitudes_pA.size())
    throw std::invalid_argument("set_current_source: steps and amplitudes differ in length");
  cfg_.current_sources[index] = spec;
  const int64_t now = steps_done();          // the next step to integrate
  for (auto& ts : threads_) {
    InjectedCurrents& ic = ts.currents;
    if (ic.current.empty()) continue;
    for (auto& n : ic.noise)
      if (n.source == index) n = {index, spec.noise_interval_steps, spec.start_step, spec.stop_step,
                                  spec.noise_mean_pA, spec.noise_std_pA, n.slots};
    for (auto& c : ic.sine)                      // the new oscillator, its turns counted from step 0
      if (c.source == index) c = {index, spec.start_step, spec.stop_step, spec.sine_offset_pA,
                                  SineOscillator(spec.sine_amplitude_pA, spec.sine_frequency_hz, spec.sine_phase_deg,
                                                 cfg_.resolution_ms), true, c.slots};
    // Drop the source's pending changes; its new ones from now on, the one in force now first.
    std::vector<InjectedCurrents::Change> kept(ic.changes.begin() + ptrdiff_t(ic.next), ic.changes.end());
    kept.erase(std::remove_if(kept.begin(), kept.end(),
                              [&](const auto& c) { return ic.slot_source[c.slot] == index; }), kept.end());
    for (uint32_t slot = 0; slot < ic.slot_source.size(); ++slot) {
      if (ic.slot_source[slot] != index || spec.noise_interval_steps > 0 || spec.sine) continue;
      const uint32_t neuron = ic.slot_neuron[slot];
      double in_force = 0.0;
      for (size_t i = 0; i < spec.steps.size(); ++i) {
        if (spec.steps[i] <= now) in_force = spec.amplitudes_pA[i];
        else kept.push_back({spec.steps[i], neuron, slot, spec.amplitudes_pA[i]});
      }
      kept.push_back({now, neuron, slot, in_force});
    }
    std::stable_sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
      return a.step != b.step ? a.step < b.step : a.neuron != b.neuron ? a.neuron < b.neuron : a.slot < b.slot;
    });
    ic.changes = std::move(kept);
    ic.next = 0;
  }
}

void Engine::set_population(uint32_t index, const PopulationSpec& spec) {
  if (index >= cfg_.populations.size()) throw std::invalid_argument("set_population: no such population");
  PopulationSpec& old = cfg_.populations[index];
  const NeuronModel& model = neuron_model(old.model);
  if (spec.model != old.model || spec.first != old.first || spec.size != old.size)
    throw std::invalid_argument("set_population: population '" + old.name + "' keeps its model and size");
  model.check(spec, cfg_.resolution_ms);
  const auto a = model.layout_of(old), b = model.layout_of(spec);
  if (a.split_input != b.split_input || a.extra_columns != b.extra_columns || a.receptors != b.receptors)
    throw std::invalid_argument("population '" + old.name + "': these parameters change how its input is held "
                                "(psc_exp: one time constant or two; the number of receptors); build a new simulation");
  old = spec;                                   // updates hold a reference to it, or copy it below
  const ModelContext context{cfg_.resolution_ms, key_from_seed(cfg_.seed), simd_level_named(cfg_.simd)};
  const int64_t now = steps_done();
  for (auto& ts : threads_)
    for (size_t ri = 0; ri < ts.neurons.ranges.size(); ++ri) {
      const PopulationRange& range = ts.neurons.ranges[ri];
      if (range.population != index) continue;
      const NeuronColumns columns = columns_of(ts.neurons, range);
      ts.updates[ri] = model.make_update(old, context, columns);
      if (model.parameters_changed) model.parameters_changed(old, columns, now);
    }
}

}  // namespace ranvier
