// Leaky integrate-and-fire with exponential post-synaptic currents (NEST's iaf_psc_exp):
//   tau_m dV/dt = -V + tau_m (I_ex + I_in + i_e) / C_m,   dI_x/dt = -I_x / tau_syn_x,
// V relative to rest (theta_mV, reset_mV likewise); synaptic input (pA) jumps the currents:
// positive weights I_ex, negative ones I_in. Integrated exactly on the time grid, in NEST's order.
//
// Two forms, chosen per population when the engine is built (splits()):
// - one current I = I_ex + I_in where the two time constants are the same for every neuron
//   (the form every network had before the two were separate, and its vector kernels: the same
//   spikes bit for bit);
// - two currents where they differ: the input is split (NeuronModel::layout), I_in is a further
//   state column, and the step is NEST's, propagators included (IAFPropagatorExp's rule for
//   tau_syn near tau_m), scalar.
#pragma once
#include <cstdint>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::psc_exp {

// The population's parameters, by the front end's names (the front end resolves its tau_syn_ms
// into tau_syn_ex_ms and tau_syn_in_ms). Potentials absolute there: theta and reset are taken
// relative to E_L, here and per neuron.
inline constexpr const char* kParameters[] = {"E_L_mV",        "V_th_mV",       "V_reset_mV", "C_m_pF",
                                              "tau_m_ms",      "tau_syn_ex_ms", "tau_syn_in_ms", "tau_arp_ms",
                                              "I_e_pA",        "V0_mean_mV",    "V0_sd_mV",   nullptr};

// Whether the population needs two currents: its time constants differ for some neuron (one
// varies per neuron and the other does not, or not by the same values or draws, or the two
// numbers differ).
bool splits(const PopulationSpec& p);

// NEST's P21 of one synapse type (IAFPropagatorExp; propagator_32): the step's effect of a
// current of 1 pA at its start on V, with its limit where tau_syn is at or near tau_m.
double p21(double tau_syn, double tau_m, double c_m, double h);

// One current (its time constant tau_syn_ex, equal to tau_syn_in): the population's parameters
// (read once, when the engine is built), or one neuron's, where parameters vary per neuron.
struct Parameters {
  double tau_m_ms, tau_syn_ms, c_m_pF, i_e_pA, theta_mV, reset_mV;
  int64_t refractory_steps;
  static Parameters of(const PopulationSpec& p, double h) {
    const double E_L = parameter(p, "E_L_mV");
    return {parameter(p, "tau_m_ms"),         parameter(p, "tau_syn_ex_ms"),     parameter(p, "C_m_pF"),
            parameter(p, "I_e_pA"),           parameter(p, "V_th_mV") - E_L,     parameter(p, "V_reset_mV") - E_L,
            steps_of(parameter(p, "tau_arp_ms"), h)};
  }
  static Parameters of_neuron(const NeuronParameters& v, uint64_t gid, double h) {
    const double E_L = v("E_L_mV", gid);
    return {v("tau_m_ms", gid),      v("tau_syn_ex_ms", gid),     v("C_m_pF", gid),
            v("I_e_pA", gid),        v("V_th_mV", gid) - E_L,     v("V_reset_mV", gid) - E_L,
            steps_of(v("tau_arp_ms", gid), h)};
  }
};

// The parameters that may vary per neuron (all but those of the initial V, V0_mean_mV and V0_sd_mV).
inline constexpr const char* kPerNeuron[] = {"E_L_mV", "V_th_mV", "V_reset_mV", "C_m_pF", "tau_m_ms",
                                             "tau_syn_ex_ms", "tau_syn_in_ms", "tau_arp_ms", "I_e_pA", nullptr};

// State (columns of NeuronColumns): V, c (the synaptic current I, pA; I_ex with two currents,
// and I_in in extra[0]), refractory. Initial V: initial_potentials_absolute.

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

// Two currents (the time constants differ): the parameters, as above with both time constants.
struct SplitParameters {
  double tau_m_ms, tau_syn_ex_ms, tau_syn_in_ms, c_m_pF, i_e_pA, theta_mV, reset_mV;
  int64_t refractory_steps;
  static SplitParameters of(const PopulationSpec& p, double h) {
    const double E_L = parameter(p, "E_L_mV");
    return {parameter(p, "tau_m_ms"),      parameter(p, "tau_syn_ex_ms"),  parameter(p, "tau_syn_in_ms"),
            parameter(p, "C_m_pF"),        parameter(p, "I_e_pA"),         parameter(p, "V_th_mV") - E_L,
            parameter(p, "V_reset_mV") - E_L, steps_of(parameter(p, "tau_arp_ms"), h)};
  }
  static SplitParameters of_neuron(const NeuronParameters& v, uint64_t gid, double h) {
    const double E_L = v("E_L_mV", gid);
    return {v("tau_m_ms", gid), v("tau_syn_ex_ms", gid),     v("tau_syn_in_ms", gid),
            v("C_m_pF", gid),   v("I_e_pA", gid),            v("V_th_mV", gid) - E_L,
            v("V_reset_mV", gid) - E_L, steps_of(v("tau_arp_ms", gid), h)};
  }
};

// NEST's propagators over h: P22 = exp(-h/tau_m), P11_x = exp(-h/tau_syn_x), P21_x (current ->
// V) by IAFPropagatorExp's rule, P20 = tau_m / C_m (1 - P22) (constant current -> V).
struct SplitPropagators {
  double P22, P11ex, P11in, P21ex, P21in, P20, i_e, theta, reset;
  int32_t refractory;
  SplitPropagators(const SplitParameters& p, double h);
};

// One step, NEST's order: V integrates the currents of the step's start unless refractory
// (V P22 + I_ex P21ex + I_in P21in + i_e P20, left to right), the currents decay and take the
// step's input, then the threshold. State: V, I_ex (column c), I_in (extra[0]), refractory.
// `current`: the injected current of the step (pA; NEST's i_0, with I_e in P20's term).
inline bool step_split(const SplitPropagators& p, double input_ex, double input_in, double& V, double& I_ex,
                       double& I_in, int32_t& r, double current = 0.0) {
  const double v = V * p.P22 + I_ex * p.P21ex + I_in * p.P21in + (p.i_e + current) * p.P20;
  const bool active = r == 0;
  const bool spike = active & (v >= p.theta);
  V = spike ? p.reset : (active ? v : V);
  I_ex = I_ex * p.P11ex + input_ex;
  I_in = I_in * p.P11in + input_in;
  r = spike ? p.refractory : r - (r > 0);
  return spike;
}

extern const NeuronModel model;

}  // namespace ranvier::psc_exp
