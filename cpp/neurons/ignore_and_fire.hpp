// Ignore-and-fire (the multi-area benchmark): fires with a fixed period, the first spike at a
// uniform phase in [0, period) drawn per neuron; receives and buffers input like any neuron but
// ignores it, so its traffic is fixed by design. The period is 1000 / rate_hz ms in whole steps
// (to the nearest, at least one).
#pragma once
#include <algorithm>
#include <cstdint>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::ignore_and_fire {

// The population's parameter (the front end's rate_hz) as a period in steps of h.
struct Parameters {
  int64_t period_steps;
  static Parameters of(const PopulationSpec& p, double h) {
    return {std::max<int64_t>(1, steps_of(1000.0 / parameter(p, "rate_hz"), h))};
  }
};

// State (columns of NeuronColumns): next_spike.

extern const NeuronModel model;

}  // namespace ranvier::ignore_and_fire
