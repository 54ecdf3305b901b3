// Injected currents (Python: rv.StepCurrent, rv.DCCurrent; SONATA current clamps): each
// source's amplitude changes become, per thread, one list of changes ordered by step, applied
// as the update reaches their step (InjectedCurrents::advance_to in engine.hpp). Only the
// neurons' global ids and the sources' order decide the result: the same on any decomposition.
#include <algorithm>
#include <stdexcept>

#include "core/engine.hpp"

namespace ranvier {

void Engine::build_current_sources() {
  for (auto& ts : threads_) ts.currents = InjectedCurrents();
  if (cfg_.current_sources.empty()) return;
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
    std::sort(p.begin(), p.end());               // by neuron, then source: a neuron's slots in source order
    const uint64_t n = ts.neurons.size();
    ic.current.assign(n, 0.0);
    ic.slot_begin.assign(n + 1, 0);
    for (const auto& [neuron, src] : p) ++ic.slot_begin[neuron + 1];
    for (uint64_t k = 0; k < n; ++k) ic.slot_begin[k + 1] += ic.slot_begin[k];
    ic.slot_amplitude.assign(p.size(), 0.0);
    for (uint32_t slot = 0; slot < p.size(); ++slot) {
      const auto& [neuron, src] = p[slot];
      const CurrentSourceSpec& cs = cfg_.current_sources[src];
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

}  // namespace ranvier
