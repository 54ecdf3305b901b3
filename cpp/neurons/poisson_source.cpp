#include "neurons/poisson_source.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ranvier::poisson_source {
namespace {

class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx)
      : p_(Parameters::of(spec, ctx.h)), probability_(p_.rate_hz * 1e-3 * ctx.h), key_(ctx.key) {}
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

// Rates or windows that vary per neuron (a PyNN SpikeSourcePoisson with one rate per cell): one
// probability and window per neuron of the range, the same draws.
class PerNeuronUpdate final : public PopulationUpdate {
 public:
  PerNeuronUpdate(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& s) : key_(ctx.key) {
    const NeuronParameters v(spec, ctx.key);
    for (uint64_t k = 0; k < s.n; ++k) {
      const uint64_t g = s.gid[k];
      table_.push_back({v("rate_hz", g) * 1e-3 * ctx.h, int64_t(std::llround(v("start_ms", g) / ctx.h)),
                        int64_t(std::llround(std::min(v("stop_ms", g) / ctx.h, 4e18)))});
    }
  }
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    for (uint64_t k = 0; k < s.n; ++k) {
      const Window& w = table_[k];
      if (in.step < w.start || in.step >= w.stop) {
        fired[k] = 0;
        continue;
      }
      const Counter r = philox4x32_10(make_counter(s.gid[k], Purpose::firing, 1, uint32_t(in.step), 0), key_);
      fired[k] = to_uniform(r[0]) < w.probability;
    }
  }

 private:
  struct Window { double probability; int64_t start, stop; };
  std::vector<Window> table_;
  Key key_;
};

const char* const kPerNeuron[] = {"rate_hz", "start_ms", "stop_ms", nullptr};

void check(const PopulationSpec& spec, double) {
  require_parameters(spec, kPerNeuron);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
}
void initialize(const PopulationSpec&, const Key&, double, const NeuronColumns&) {}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                              const NeuronColumns& s) {
  if (!spec.per_neuron.empty()) return std::make_unique<PerNeuronUpdate>(spec, ctx, s);
  return std::make_unique<Update>(spec, ctx);
}

}  // namespace

const NeuronModel model{"poisson_source", check, initialize, make_update};

}  // namespace ranvier::poisson_source
