// Leaky integrate-and-fire with exponential post-synaptic currents (NEST's iaf_psc_exp):
//   tau_m dV/dt = -V + tau_m (I + i_e) / C_m,   dI/dt = -I / tau_syn,
// V relative to rest (theta_mV, reset_mV likewise); synaptic input (pA) jumps I. Integrated
// exactly on the time grid, in NEST's order.
#pragma once
#include <cstdint>

#include "core/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::psc_exp {

// The PopulationSpec fields the model reads; or one neuron's values, by the front end's names
// (potentials absolute there: theta and reset are taken relative to the neuron's E_L, as the
// front end does for the fields), where parameters vary per neuron.
struct Parameters {
  double tau_m_ms, tau_syn_ms, c_m_pF, i_e_pA, theta_mV, reset_mV;
  int64_t refractory_steps;
  static Parameters of(const PopulationSpec& p) {
    return {p.tau_m_ms, p.tau_syn_ms, p.c_m_pF, p.i_e_pA, p.theta_mV, p.reset_mV, p.refractory_steps};
  }
  static Parameters of_neuron(const NeuronParameters& v, uint64_t gid, double h) {
    const double E_L = v("E_L_mV", gid);
    return {v("tau_m_ms", gid),      v("tau_syn_ms", gid),        v("C_m_pF", gid),
            v("I_e_pA", gid),        v("V_th_mV", gid) - E_L,     v("V_reset_mV", gid) - E_L,
            steps_of(v("tau_arp_ms", gid), h)};
  }
};

// The parameters that may vary per neuron (all but those of the initial V, V0_mean_mV and V0_sd_mV).
inline constexpr const char* kPerNeuron[] = {"E_L_mV", "V_th_mV", "V_reset_mV", "C_m_pF", "tau_m_ms",
                                             "tau_syn_ms", "tau_arp_ms", "I_e_pA", nullptr};

// State (columns of NeuronColumns): V, c (the synaptic current I, pA), refractory. Initial V:
// initial_potential (N(v0_mean, v0_sd), relative to rest), or per_neuron's initial_V_mV (absolute).

// Exact propagators over one step h: V gets P22 V + P21 I + dc_term (P20 i_e), I gets P11 I.
struct Propagators {
  double P22, P21, P11, dc_term, theta, reset;
  int32_t refractory;
  Propagators(const Parameters& p, double h);
};

// One step (NEST's order): V integrates the current of the step's start unless refractory,
// then I decays and takes the step's input, then the threshold. Branch-free, so loops over
// neurons vectorise; the vector kernels do the same operations in the same order.
inline bool step(const Propagators& p, double input, double& V, double& I, int32_t& r) {
  const double v = V * p.P22 + I * p.P21 + p.dc_term;
  const bool active = r == 0;
  const bool spike = active & (v >= p.theta);
  V = spike ? p.reset : (active ? v : V);
  I = I * p.P11 + input;
  r = spike ? p.refractory : r - (r > 0);
  return spike;
}

extern const NeuronModel model;

}  // namespace ranvier::psc_exp
