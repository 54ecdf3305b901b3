#include "neurons/poisson_source.hpp"

#include <algorithm>

namespace ranvier::poisson_source {
namespace {

class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx)
      : p_(Parameters::of(spec)), probability_(p_.rate_hz * 1e-3 * ctx.h), key_(ctx.key) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    if (in.step < p_.start_step || in.step >= p_.stop_step) {
      std::fill(fired, fired + s.n, 0);
      return;
    }
    for (uint64_t k = 0; k < s.n; ++k) {
      const Counter r = philox4x32_10(make_counter(s.gid[k], Purpose::firing, 1, uint32_t(in.step), 0), key_);
      fired[k] = to_uniform(r[0]) < probability_;
    }
  }

 private:
  Parameters p_;
  double probability_;  // of a spike per step
  Key key_;
};

void check(const PopulationSpec& spec) { check_no_per_neuron(spec); }
void initialize(const PopulationSpec&, const Key&, const NeuronColumns&) {}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns&) {
  return std::make_unique<Update>(spec, ctx);
}

}  // namespace

const NeuronModel model{"poisson_source", check, initialize, make_update};

}  // namespace ranvier::poisson_source
