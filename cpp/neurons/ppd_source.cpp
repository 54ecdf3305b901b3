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

#include "neurons/renewal_source.hpp"

namespace ranvier::ppd_source {
namespace {

const char* const kPerNeuron[] = {"rate_hz", "dead_time_ms", "start_ms", "stop_ms", nullptr};

// The dead time in steps: NEST's floor(dead_time / h), with a margin for the rounding of a
// whole number of steps (0.3 / 0.1 = 2.9999999999999996 is 3 steps).
int32_t dead_steps(double dead_time_ms, double h) { return int32_t(std::floor(dead_time_ms / h + 1e-9)); }

// One source's constants: its firing probability per live step, its dead time in steps.
struct Source {
  double p;
  int32_t dead;
  Window window;
  static Source of(const NeuronParameters& v, uint64_t gid, double h) {
    const double rate = v("rate_hz", gid), d = v("dead_time_ms", gid);
    return {rate > 0 ? h / (1000.0 / rate - d) : 0.0, dead_steps(d, h), Window::of(v, gid, h)};
  }
  template <class Uniform>
  bool fires(int32_t& dead_left, const Uniform& uniform) const {
    if (dead_left > 0) {                         // dead
      --dead_left;
      return false;
    }
    if (p <= 0.0 || !(uniform() < p)) return false;
    dead_left = dead;
    return true;
  }
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
  check_window(spec, where);
}

void initialize(const PopulationSpec&, const Key&, double, const NeuronColumns& s) {
  std::fill(s.refractory, s.refractory + s.n, 0);
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                              const NeuronColumns& s) {
  return std::make_unique<RenewalUpdate<Source>>(spec, ctx, s);
}

}  // namespace

extern const NeuronModel model;   // external linkage: registry.cpp lists it
const NeuronModel model{"ppd_source", check, initialize, make_update};

}  // namespace ranvier::ppd_source
