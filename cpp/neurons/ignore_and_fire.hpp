// Ignore-and-fire (the multi-area benchmark): fires with a fixed period, the first spike at a
// uniform phase in [0, period) drawn per neuron; receives and buffers input like any neuron but
// ignores it, so its traffic is fixed by design. The period is isi_min_steps = isi_max_steps.
#pragma once
#include <cstdint>

#include "core/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::ignore_and_fire {

// The PopulationSpec fields the model reads.
struct Parameters {
  int64_t period_steps;
  static Parameters of(const PopulationSpec& p) { return {p.isi_min_steps}; }
};

// State (columns of NeuronColumns): next_spike.

extern const NeuronModel model;

}  // namespace ranvier::ignore_and_fire
