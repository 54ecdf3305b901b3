// Spike trains given in advance (NEST's spike_generator feeding a parrot_neuron, in one
// population): each neuron fires at the times its train lists, ignores all input, has no
// membrane. The trains are the integer sequence train_steps (PopulationSpec::integer_sequences),
// neuron x's in [train_begin[x], train_begin[x + 1]) (the sequence train_begin): the steps s of
// the spikes, so that each spike has the engine's spike time (s + 1) h, the time the user gave.
#include <algorithm>
#include <stdexcept>

#include "neurons/artificial.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::spike_train {
namespace {

class Update final : public PopulationUpdate {
 public:
  explicit Update(const PopulationSpec& spec)
      : first_(spec.first), begin_(integer_sequence(spec, "train_begin")), steps_(integer_sequence(spec, "train_steps")) {}
  // A vectorised compare for all cells, then the few that fired move to their next spike.
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const int64_t step = in.step;
    int64_t* next = s.next_spike;
#pragma omp simd
    for (uint64_t k = 0; k < s.n; ++k) fired[k] = next[k] == step;
    for_each_fired(fired, s.n, [&](uint64_t k) { next[k] = next_spike(s.gid[k], ++s.spikes_fired[k]); });
  }
  int64_t next_spike(uint64_t gid, uint32_t fired) const {
    const uint64_t x = gid - first_;
    const uint64_t at = uint64_t(begin_[x]) + fired;
    return at < uint64_t(begin_[x + 1]) ? steps_[at] : -1;   // -1: no more
  }

 private:
  // The engine's configuration outlives every update (set_population makes new ones).
  uint64_t first_;
  const std::vector<int64_t>& begin_;
  const std::vector<int64_t>& steps_;
};

void check(const PopulationSpec& spec, double) {
  check_no_per_neuron(spec);
  check_initial(spec, kInitialReset);
  const std::vector<int64_t>& begin = integer_sequence(spec, "train_begin");
  const std::vector<int64_t>& steps = integer_sequence(spec, "train_steps");
  if (begin.size() != spec.size + 1 || begin.front() != 0 || uint64_t(begin.back()) != steps.size() ||
      !std::is_sorted(begin.begin(), begin.end()))
    throw std::invalid_argument("spike_train '" + spec.name + "': train_begin needs size + 1 increasing offsets "
                                "into train_steps");
  for (uint64_t x = 0; x < spec.size; ++x)
    for (int64_t i = begin[x]; i < begin[x + 1]; ++i)
      if (steps[i] < 0 || (i > begin[x] && steps[i] <= steps[i - 1]))
        throw std::invalid_argument("spike_train '" + spec.name + "': each train's steps must be increasing and >= 0");
}

void initialize(const PopulationSpec& spec, const Key&, double, const NeuronColumns& s) {
  const std::vector<int64_t>& begin = integer_sequence(spec, "train_begin");
  const std::vector<int64_t>& steps = integer_sequence(spec, "train_steps");
  for (uint64_t k = 0; k < s.n; ++k) {
    const uint64_t x = s.gid[k] - spec.first;
    s.spikes_fired[k] = 0;
    s.next_spike[k] = begin[x] < begin[x + 1] ? steps[begin[x]] : -1;
  }
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext&, const NeuronColumns&) {
  return std::make_unique<Update>(spec);
}

// New trains between runs: each neuron goes on with its first spike at or after step `now`.
void parameters_changed(const PopulationSpec& spec, const NeuronColumns& s, int64_t now) {
  const std::vector<int64_t>& begin = integer_sequence(spec, "train_begin");
  const std::vector<int64_t>& steps = integer_sequence(spec, "train_steps");
  for (uint64_t k = 0; k < s.n; ++k) {
    const uint64_t x = s.gid[k] - spec.first;
    const auto first = steps.begin() + ptrdiff_t(begin[x]);
    const auto last = steps.begin() + ptrdiff_t(begin[x + 1]);
    const auto at = std::lower_bound(first, last, now);
    s.spikes_fired[k] = uint32_t(at - first);
    s.next_spike[k] = at < last ? *at : -1;
  }
}

}  // namespace

extern const NeuronModel model;   // external linkage: registry.cpp lists it
const NeuronModel model{"spike_train", check, initialize, make_update, false, 0, nullptr, false, -1, parameters_changed};

}  // namespace ranvier::spike_train
