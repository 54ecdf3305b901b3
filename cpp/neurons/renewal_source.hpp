// What the renewal spike sources (gamma_source, ppd_source) share: each source's constants drawn
// once from the population's per-neuron values, a window of active steps [start_ms, stop_ms)
// (whole steps, to the nearest), and one uniform draw per source and step, keyed by (source,
// step) as poisson_source's: the same on any decomposition. A source file supplies
//
//   struct Source {
//     Window window;
//     static Source of(const NeuronParameters&, uint64_t gid, double h);
//     // Whether the source fires in an active step; `refractory` is its state (the model's
//     // column), uniform() its draw for this step, called only where the step needs it.
//     template <class Uniform> bool fires(int32_t& refractory, const Uniform& uniform) const;
//   };
//
// and makes its update with std::make_unique<RenewalUpdate<Source>>(spec, ctx, s).
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "neurons/neuron_model.hpp"

namespace ranvier {

// A source's active steps. A bound beyond the engine's step counts (2^62 steps) is held at the
// last step it counts.
struct Window {
  int64_t start, stop;
  static Window of(const NeuronParameters& v, uint64_t gid, double h) {
    const double latest = 0x1p62 * h;
    return {steps_of(std::min(v("start_ms", gid), latest), h), steps_of(std::min(v("stop_ms", gid), latest), h)};
  }
  bool holds(int64_t step) const { return step >= start && step < stop; }
};

// Refuses a population-wide window that closes before it opens.
inline void check_window(const PopulationSpec& spec, const std::string& where) {
  if (parameter(spec, "stop_ms") < parameter(spec, "start_ms"))
    throw std::invalid_argument(where + "stop_ms must not be below start_ms");
}

template <class Source>
class RenewalUpdate final : public PopulationUpdate {
 public:
  RenewalUpdate(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& s) : key_(ctx.key) {
    const NeuronParameters v(spec, ctx.key);
    for (uint64_t k = 0; k < s.n; ++k) table_.push_back(Source::of(v, s.gid[k], ctx.h));
  }
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const uint32_t low = uint32_t(in.step), high = uint32_t(uint64_t(in.step) >> 32);
    for (uint64_t k = 0; k < s.n; ++k) {
      const Source& g = table_[k];
      const auto uniform = [&] {
        return to_uniform(philox4x32_10(make_counter(s.gid[k], Purpose::firing, 1, low, high), key_)[0]);
      };
      fired[k] = g.window.holds(in.step) && g.fires(s.refractory[k], uniform);
    }
  }

 private:
  std::vector<Source> table_;
  Key key_;
};

}  // namespace ranvier
