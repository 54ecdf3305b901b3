// Gamma-process sources (NEST's gamma_sup_generator with one component process, n_proc = 1,
// feeding parrot neurons; PyNN's SpikeSourceGamma): no membrane, input ignored. Each source is
// a Markov chain of gamma_shape = k phases that it leaves one after the other, each with
// probability q = k * rate_hz * h per step (at most one phase a step, as NEST's chain); leaving
// the last phase is a spike. An interval is then the sum of k geometric waits of mean 1/q steps:
// mean 1 / rate_hz, coefficient of variation sqrt((1 - q) / k), 1 / sqrt(k) as q h -> 0.
// A source starts in its last phase (NEST's initial occupation for n_proc < k) and moves only
// in the steps of [start_ms, stop_ms) (whole steps, to the nearest); one draw per source and
// active step, keyed by (source, step) as poisson_source's: the same on any decomposition.
// State: `refractory` holds the phases left before the next spike (1 at the start).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "neurons/renewal_source.hpp"

namespace ranvier::gamma_source {
namespace {

const char* const kPerNeuron[] = {"rate_hz", "gamma_shape", "start_ms", "stop_ms", nullptr};

// One source's constants: its transition probability per step and its order.
struct Source {
  double q;
  int32_t k;
  Window window;
  static Source of(const NeuronParameters& v, uint64_t gid, double h) {
    const double k = v("gamma_shape", gid);
    return {v("rate_hz", gid) * k * 1e-3 * h, int32_t(k), Window::of(v, gid, h)};
  }
  template <class Uniform>
  bool fires(int32_t& phases_left, const Uniform& uniform) const {
    if (q <= 0.0 || !(uniform() < q)) return false;
    if (--phases_left > 0) return false;         // a phase left, not the last
    phases_left = k;
    return true;
  }
};

void check(const PopulationSpec& spec, double h) {
  require_parameters(spec, kPerNeuron);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  // The population's values; per-neuron ones are checked by the front end (gamma_source.py).
  if (!spec.per_neuron.empty()) return;
  const double k = parameter(spec, "gamma_shape"), rate = parameter(spec, "rate_hz");
  const std::string where = "gamma_source population '" + spec.name + "': ";
  if (!(k >= 1 && k <= 2147483647.0 && k == std::floor(k)))
    throw std::invalid_argument(where + "gamma_shape must be a whole number >= 1, got " + std::to_string(k));
  if (!(rate >= 0 && std::isfinite(rate)))
    throw std::invalid_argument(where + "rate_hz must be a finite number >= 0, got " + std::to_string(rate));
  if (rate * k * 1e-3 * h > 1.0)
    throw std::invalid_argument(where + "rate_hz * gamma_shape = " + std::to_string(rate * k) +
                                " Hz exceeds one transition per step of " + std::to_string(h) +
                                " ms; lower the rate or the resolution");
  check_window(spec, where);
}

void initialize(const PopulationSpec&, const Key&, double, const NeuronColumns& s) {
  std::fill(s.refractory, s.refractory + s.n, 1);   // in the last phase: the first transition fires
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                              const NeuronColumns& s) {
  return std::make_unique<RenewalUpdate<Source>>(spec, ctx, s);
}

}  // namespace

extern const NeuronModel model;   // external linkage: registry.cpp lists it
const NeuronModel model{"gamma_source", check, initialize, make_update};

}  // namespace ranvier::gamma_source
