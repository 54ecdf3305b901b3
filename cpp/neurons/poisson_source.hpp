// Poisson sources (thalamic input): no membrane, input ignored; each fires with probability
// rate_hz * h in each step of [start_ms, stop_ms) (in whole steps, to the nearest), one draw per
// source and step keyed by (source, step).
#pragma once
#include <algorithm>
#include <cstdint>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::poisson_source {

// The population's parameters, the window in steps of h. A bound beyond the engine's step
// counts (2^62 steps) lies beyond any run: held at the last step it counts.
struct Parameters {
  double rate_hz;
  int64_t start_step, stop_step;
  static Parameters of(const PopulationSpec& p, double h) {
    const double latest = 0x1p62 * h;
    return {parameter(p, "rate_hz"), steps_of(std::min(parameter(p, "start_ms"), latest), h),
            steps_of(std::min(parameter(p, "stop_ms"), latest), h)};
  }
};

// State: none.

extern const NeuronModel model;

}  // namespace ranvier::poisson_source
