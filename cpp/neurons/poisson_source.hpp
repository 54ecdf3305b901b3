// Poisson sources (thalamic input): no membrane, input ignored; each fires with probability
// rate_hz * h in each step of [start_step, stop_step), one draw per source and step keyed by
// (source, step).
#pragma once
#include <cstdint>

#include "core/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::poisson_source {

// The PopulationSpec fields the model reads.
struct Parameters {
  double rate_hz;
  int64_t start_step, stop_step;
  static Parameters of(const PopulationSpec& p) { return {p.source_rate_hz, p.start_step, p.stop_step}; }
};

// State: none.

extern const NeuronModel model;

}  // namespace ranvier::poisson_source
