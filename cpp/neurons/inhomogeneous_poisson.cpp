// Poisson sources with a piecewise-constant rate (NEST's inhomogeneous_poisson_generator feeding
// parrot neurons; PyNN's SpikeSourceInhomogeneousPoisson): no membrane, input ignored; each source
// fires with probability rates_hz[i] * h in every step from rate_steps[i] until rate_steps[i + 1]
// (the last rate until the end), silent before rate_steps[0]. One draw per source and step, keyed
// by (source, step) as poisson_source's: the same on any decomposition. rates_hz: the sequence of
// that name (PopulationSpec::sequences); rate_steps: the integer one (the front end's
// rate_times_ms in steps).
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "neurons/neuron_model.hpp"

namespace ranvier::inhomogeneous_poisson {
namespace {

class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx) : steps_(integer_sequence(spec, "rate_steps")), key_(ctx.key) {
    for (double r : sequence(spec, "rates_hz")) probability_.push_back(r * 1e-3 * ctx.h);
  }
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    // The segment of this step: the last change at or before it.
    const auto at = std::upper_bound(steps_.begin(), steps_.end(), in.step);
    const double p = at == steps_.begin() ? 0.0 : probability_[size_t(at - steps_.begin()) - 1];
    if (p <= 0.0) {
      std::fill(fired, fired + s.n, 0);
      return;
    }
    for (uint64_t k = 0; k < s.n; ++k) {
      const Counter r = philox4x32_10(make_counter(s.gid[k], Purpose::firing, 1, uint32_t(in.step), 0), key_);
      fired[k] = to_uniform(r[0]) < p;
    }
  }

 private:
  std::vector<int64_t> steps_;
  std::vector<double> probability_;  // of a spike per step, per segment
  Key key_;
};

void check(const PopulationSpec& spec, double) {
  check_no_per_neuron(spec);
  check_initial(spec, kInitialReset);
  const std::vector<int64_t>& steps = integer_sequence(spec, "rate_steps");
  if (steps.size() != sequence(spec, "rates_hz").size() || steps.empty())
    throw std::invalid_argument("inhomogeneous_poisson population '" + spec.name +
                                "' needs as many rate steps as rates, at least one");
  if (!std::is_sorted(steps.begin(), steps.end()))
    throw std::invalid_argument("inhomogeneous_poisson population '" + spec.name + "': rate steps must increase");
}
void initialize(const PopulationSpec&, const Key&, double, const NeuronColumns&) {}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns&) {
  return std::make_unique<Update>(spec, ctx);
}

}  // namespace

extern const NeuronModel model{"inhomogeneous_poisson", check, initialize, make_update};

}  // namespace ranvier::inhomogeneous_poisson
