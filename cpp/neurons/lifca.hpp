// LIF neuron with spike-frequency adaptation (LIFCA, the dpsnn neuron):
//   dV/dt = -V / tau_m - g_c c + dc,   dc/dt = -c / tau_c,
// V relative to rest; a spike when V >= theta, then V = reset for the refractory steps and
// c += alpha_c. Input (mV) jumps V. Integrated exactly over a step (the equations are linear).
// With alpha_c = g_c = 0 it is NEST's iaf_psc_delta (dc = I_e / C_m): input that arrives
// while refractory is dropped, as NEST's default (refractory_input = false).
#pragma once
#include <cstdint>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::lifca {

// The population's parameters, by the front end's names (read once, when the engine is built);
// or one neuron's, where parameters vary per neuron (of_neuron: the same numbers for the same
// parameters).
struct Parameters {
  double tau_m_ms, theta_mV, reset_mV, alpha_c, tau_c_ms, g_c, dc;
  int64_t refractory_steps;
  static Parameters of(const PopulationSpec& p, double h) {
    return {parameter(p, "tau_m_ms"),      parameter(p, "theta_mV"),     parameter(p, "reset_mV"),
            parameter(p, "alpha_c"),       parameter(p, "tau_c_ms"),     parameter(p, "g_c_mV_per_ms"),
            parameter(p, "dc_mV_per_ms"),  steps_of(parameter(p, "tau_arp_ms"), h)};
  }
  static Parameters of_neuron(const NeuronParameters& v, uint64_t gid, double h) {
    return {v("tau_m_ms", gid), v("theta_mV", gid), v("reset_mV", gid), v("alpha_c", gid), v("tau_c_ms", gid),
            v("g_c_mV_per_ms", gid), v("dc_mV_per_ms", gid), steps_of(v("tau_arp_ms", gid), h)};
  }
};

// The parameters that may vary per neuron (all of them).
inline constexpr const char* kPerNeuron[] = {"tau_m_ms", "theta_mV", "reset_mV", "tau_arp_ms", "alpha_c",
                                             "tau_c_ms", "g_c_mV_per_ms", "dc_mV_per_ms", nullptr};

// State (columns of NeuronColumns): V, c (adaptation), refractory. Initial V: reset (initial
// "reset"), U[reset, theta) (initial "uniform", uniform_potential), or per_neuron's initial_V_mV.

// Exact propagators over one step h.
struct Propagators {
  double P22, Pc, gP21, dc_term, theta, reset, alpha;
  int32_t refractory;
  Propagators(const Parameters& p, double h);
};

// One step: integrate exactly over h, add the step's input, threshold. Branch-free so loops
// over neurons vectorise; the vector kernels do these operations in this order, without fused
// multiply-adds, so a neuron's trajectory is the same in any lane. Returns whether it spiked.
inline bool step(const Propagators& p, double input, double& V, double& c, int32_t& r) {
  const double v = V * p.P22 + p.dc_term - p.gP21 * c + input;
  const double cn = c * p.Pc;
  const bool active = r == 0;
  const bool spike = active & (v >= p.theta);
  V = (active & !spike) ? v : p.reset;
  c = spike ? cn + p.alpha : cn;
  r = spike ? p.refractory : r - (r > 0);
  return spike;
}

extern const NeuronModel model;

}  // namespace ranvier::lifca
