// Artificial cells (the spike-exchange benchmark): no membrane, input ignored. Each cell fires
// after intervals drawn uniformly from [isi_min_steps, isi_max_steps], the first spike at a
// uniform phase in [0, isi_max_steps). The next interval is drawn when a cell fires, keyed by
// (cell, spike number), so it does not depend on where the cell lives.
#pragma once
#include <cstdint>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::artificial {

// The population's parameters (the front end's isi_min_ms, isi_max_ms) in steps of h.
struct Parameters {
  int64_t isi_min_steps, isi_max_steps;
  static Parameters of(const PopulationSpec& p, double h) {
    return {steps_of(parameter(p, "isi_min_ms"), h), steps_of(parameter(p, "isi_max_ms"), h)};
  }
};

// State (columns of NeuronColumns): next_spike, spikes_fired.

// The first spike's step, at a uniform phase in [0, period_steps): shared with ignore-and-fire.
inline int64_t first_spike(const Key& key, uint64_t gid, int64_t period_steps) {
  Stream s(key, gid, Purpose::firing, 0, 0);
  return int64_t(double(s.next()) * 0x1p-32 * double(period_steps));
}

extern const NeuronModel model;

}  // namespace ranvier::artificial
