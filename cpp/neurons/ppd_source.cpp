// Poisson sources with a dead time (NEST's ppd_sup_generator with one component process,
// n_proc = 1, feeding parrot neurons; PyNN's SpikeSourcePoissonRefractory): no membrane, input
// ignored. After each spike a source is dead for d = floor(dead_time_ms / h) steps, then fires
// with probability h / (1000 / rate_hz - dead_time_ms) per step (NEST's hazard per step), so that
// its mean interval is 1000 / rate_hz ms where the dead time is a whole number of steps, and no
// interval is shorter than d + 1 steps. It moves only in the steps of [start_ms, stop_ms)
// (whole steps, to the nearest); one draw per source and active step that is not dead, keyed by
// (source, step) as poisson_source's: the same on any decomposition.
// State: `refractory` holds the dead steps left (0 at the start: NEST's initial occupation for
// one process).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "neurons/neuron_model.hpp"

namespace ranvier::ppd_source {
namespace {

const char* const kPerNeuron[] = {"rate_hz", "dead_time_ms", "start_ms", "stop_ms", nullptr};

// The dead time in steps: NEST's floor(dead_time / h), with a margin for the rounding of a
// whole number of steps (0.3 / 0.1 = 2.9999999999999996 is 3 steps).
int32_t dead_steps(double dead_time_ms, double h) { return int32_t(std::floor(dead_time_ms / h + 1e-9)); }

// One source's constants: its firing probability per live step, its dead time in steps, its
// window in steps (a bound beyond the engine's step counts, 2^62, held at the last step it counts).
struct Source {
  double p;
  int32_t dead;
  int64_t start, stop;
};

Source source_of(const NeuronParameters& v, uint64_t gid, double h) {
  const double latest = 0x1p62 * h;
  const double rate = v("rate_hz", gid), d = v("dead_time_ms", gid);
  return {rate > 0 ? h / (1000.0 / rate - d) : 0.0, dead_steps(d, h),
          steps_of(std::min(v("start_ms", gid), latest), h), steps_of(std::min(v("stop_ms", gid), latest), h)};
}

class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& s) : key_(ctx.key) {
    const NeuronParameters v(spec, ctx.key);
    for (uint64_t k = 0; k < s.n; ++k) table_.push_back(source_of(v, s.gid[k], ctx.h));
  }
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const uint32_t low = uint32_t(in.step), high = uint32_t(uint64_t(in.step) >> 32);
    for (uint64_t k = 0; k < s.n; ++k) {
      const Source& g = table_[k];
      fired[k] = 0;
      if (in.step < g.start || in.step >= g.stop) continue;
      if (s.refractory[k] > 0) {                    // dead
        --s.refractory[k];
        continue;
      }
      if (g.p <= 0.0) continue;
      const Counter r = philox4x32_10(make_counter(s.gid[k], Purpose::firing, 1, low, high), key_);
      if (to_uniform(r[0]) < g.p) {
        fired[k] = 1;
        s.refractory[k] = g.dead;
      }
    }
  }

 private:
  std::vector<Source> table_;
  Key key_;
};

void check(const PopulationSpec& spec, double h) {
  require_parameters(spec, kPerNeuron);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  // The population's values; per-neuron ones are checked by the front end (ppd_source.py).
  if (!spec.per_neuron.empty()) return;
  const double rate = parameter(spec, "rate_hz"), d = parameter(spec, "dead_time_ms");
  const std::string where = "ppd_source population '" + spec.name + "': ";
  if (!(rate >= 0 && std::isfinite(rate)))
    throw std::invalid_argument(where + "rate_hz must be a finite number >= 0, got " + std::to_string(rate));
  if (!(d >= 0 && d / h < 2147483647.0))
    throw std::invalid_argument(where + "dead_time_ms must be >= 0 and below 2^31 steps, got " + std::to_string(d));
  if (rate > 0 && 1000.0 / rate - d < h)
    throw std::invalid_argument(where + "1000 / rate_hz - dead_time_ms = " + std::to_string(1000.0 / rate - d) +
                                " ms must be at least one step (" + std::to_string(h) +
                                " ms): lower the rate or the dead time");
  if (parameter(spec, "stop_ms") < parameter(spec, "start_ms"))
    throw std::invalid_argument(where + "stop_ms must not be below start_ms");
}

void initialize(const PopulationSpec&, const Key&, double, const NeuronColumns& s) {
  std::fill(s.refractory, s.refractory + s.n, 0);
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                              const NeuronColumns& s) {
  return std::make_unique<Update>(spec, ctx, s);
}

}  // namespace

extern const NeuronModel model;   // external linkage: registry.cpp lists it
const NeuronModel model{"ppd_source", check, initialize, make_update};

}  // namespace ranvier::ppd_source
