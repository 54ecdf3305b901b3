#include "neurons/ignore_and_fire.hpp"

#include <stdexcept>

#include "neurons/artificial.hpp"

namespace ranvier::ignore_and_fire {
namespace {

class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, double h) : p_(Parameters::of(spec, h)) {}
  // A vectorised compare for all cells, then the few that fired: no draw, a fixed period.
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const int64_t step = in.step;
    int64_t* next = s.next_spike;
#pragma omp simd
    for (uint64_t k = 0; k < s.n; ++k) fired[k] = next[k] == step;
    for_each_fired(fired, s.n, [&](uint64_t k) { next[k] = step + p_.period_steps; });
  }

 private:
  Parameters p_;
};

void check(const PopulationSpec& spec, double) {
  check_no_per_neuron(spec);
  check_initial(spec, kInitialReset);
  if (!(parameter(spec, "rate_hz") > 0))
    throw std::invalid_argument("ignore_and_fire population '" + spec.name + "' needs a positive rate_hz");
}

// The first spike as an artificial cell's with the same period: uniform in [0, period).
void initialize(const PopulationSpec& spec, const Key& key, double h, const NeuronColumns& s) {
  const int64_t period = Parameters::of(spec, h).period_steps;
  for (uint64_t k = 0; k < s.n; ++k) s.next_spike[k] = artificial::first_spike(key, s.gid[k], period);
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns&) {
  return std::make_unique<Update>(spec, ctx.h);
}

}  // namespace

const NeuronModel model{"ignore_and_fire", check, initialize, make_update};

}  // namespace ranvier::ignore_and_fire
