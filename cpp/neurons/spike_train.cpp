// Spike trains given in advance (NEST's spike_generator feeding a parrot_neuron, in one
// population): each neuron fires at the times its train lists, ignores all input, has no
// membrane. The trains are PopulationSpec::train_steps, neuron x's in
// [train_begin[x], train_begin[x + 1]): the steps s of the spikes, so that each spike has the
// engine's spike time (s + 1) h, the time the user gave.
#include <algorithm>
#include <stdexcept>

#include "neurons/artificial.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::spike_train {
namespace {

class Update final : public PopulationUpdate {
 public:
  explicit Update(const PopulationSpec& spec) : spec_(spec) {}
  // A vectorised compare for all cells, then the few that fired move to their next spike.
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const int64_t step = in.step;
    int64_t* next = s.next_spike;
#pragma omp simd
    for (uint64_t k = 0; k < s.n; ++k) fired[k] = next[k] == step;
    for_each_fired(fired, s.n, [&](uint64_t k) { next[k] = next_spike(s.gid[k], ++s.spikes_fired[k]); });
  }
  int64_t next_spike(uint64_t gid, uint32_t fired) const {
    const uint64_t x = gid - spec_.first;
    const uint64_t at = spec_.train_begin[x] + fired;
    return at < spec_.train_begin[x + 1] ? spec_.train_steps[at] : -1;   // -1: no more
  }

 private:
  const PopulationSpec& spec_;     // the engine's configuration outlives every update
};

void check(const PopulationSpec& spec) {
  check_no_per_neuron(spec);
  if (spec.train_begin.size() != spec.size + 1 || spec.train_begin.back() != spec.train_steps.size())
    throw std::invalid_argument("spike_train '" + spec.name + "': train_begin needs size + 1 offsets into train_steps");
  for (uint64_t x = 0; x < spec.size; ++x)
    for (uint64_t i = spec.train_begin[x]; i < spec.train_begin[x + 1]; ++i)
      if (spec.train_steps[i] < 0 || (i > spec.train_begin[x] && spec.train_steps[i] <= spec.train_steps[i - 1]))
        throw std::invalid_argument("spike_train '" + spec.name + "': each train's steps must be increasing and >= 0");
}

void initialize(const PopulationSpec& spec, const Key&, const NeuronColumns& s) {
  for (uint64_t k = 0; k < s.n; ++k) {
    const uint64_t x = s.gid[k] - spec.first;
    s.spikes_fired[k] = 0;
    s.next_spike[k] = spec.train_begin[x] < spec.train_begin[x + 1] ? spec.train_steps[spec.train_begin[x]] : -1;
  }
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext&, const NeuronColumns&) {
  return std::make_unique<Update>(spec);
}

// New trains between runs: each neuron goes on with its first spike at or after step `now`.
void parameters_changed(const PopulationSpec& spec, const NeuronColumns& s, int64_t now) {
  for (uint64_t k = 0; k < s.n; ++k) {
    const uint64_t x = s.gid[k] - spec.first;
    const auto first = spec.train_steps.begin() + ptrdiff_t(spec.train_begin[x]);
    const auto last = spec.train_steps.begin() + ptrdiff_t(spec.train_begin[x + 1]);
    const auto at = std::lower_bound(first, last, now);
    s.spikes_fired[k] = uint32_t(at - first);
    s.next_spike[k] = at < last ? *at : -1;
  }
}

}  // namespace

extern const NeuronModel model;   // external linkage: registry.cpp lists it
const NeuronModel model{"spike_train", check, initialize, make_update, false, 0, nullptr, false, -1, parameters_changed};

}  // namespace ranvier::spike_train
