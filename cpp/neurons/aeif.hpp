// What NEST's two conductance-based adaptive exponential integrate-and-fire models share
// (aeif_cond_exp.cpp, aeif_cond_alpha.cpp): the parameters they read and how they check them,
// the membrane's right-hand side (dV/dt, dw/dt) and what happens after each accepted integration
// step (the spike, inside the time step). What is a model's own (the shape of its conductances,
// its state vector and its step) stays in the model's file; the two updates around the step are
// conductance_lif.hpp's.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "base/spec.hpp"
#include "neurons/conductance_lif.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::aeif {

// The parameters the models read by the front end's names (potentials relative to rest: the
// front end's absolute ones are taken relative to E_L_mV here), for the population or one neuron
// where parameters vary per neuron.
struct Parameters {
  double g_L_nS, c_m_pF, E_ex_mV, E_in_mV, tau_syn_ex_ms, tau_syn_in_ms, i_e_pA, theta_mV, reset_mV, peak_mV,
      delta_T_mV, tau_w_ms, a_nS, b_pA, tolerance;
  int64_t refractory_steps;
  static Parameters of(const PopulationSpec& p, double h) {
    const double E_L = parameter(p, "E_L_mV");
    return {parameter(p, "g_L_nS"),           parameter(p, "C_m_pF"),
            parameter(p, "E_ex_mV") - E_L,    parameter(p, "E_in_mV") - E_L,
            parameter(p, "tau_syn_ex_ms"),    parameter(p, "tau_syn_in_ms"),
            parameter(p, "I_e_pA"),           parameter(p, "V_th_mV") - E_L,
            parameter(p, "V_reset_mV") - E_L, parameter(p, "V_peak_mV") - E_L,
            parameter(p, "Delta_T_mV"),       parameter(p, "tau_w_ms"),
            parameter(p, "a_nS"),             parameter(p, "b_pA"),
            parameter(p, "gsl_error_tol"),    steps_of(parameter(p, "tau_arp_ms"), h)};
  }
  static Parameters of_neuron(const NeuronParameters& v, uint64_t gid, double h) {
    const double E_L = v("E_L_mV", gid);
    return {v("g_L_nS", gid),           v("C_m_pF", gid),        v("E_ex_mV", gid) - E_L,
            v("E_in_mV", gid) - E_L,    v("tau_syn_ex_ms", gid), v("tau_syn_in_ms", gid),
            v("I_e_pA", gid),           v("V_th_mV", gid) - E_L, v("V_reset_mV", gid) - E_L,
            v("V_peak_mV", gid) - E_L,  v("Delta_T_mV", gid),    v("tau_w_ms", gid),
            v("a_nS", gid),             v("b_pA", gid),          v("gsl_error_tol", gid),
            steps_of(v("tau_arp_ms", gid), h)};
  }
};

// The parameters that may vary per neuron (all but those of the initial V; the initial w,
// w0_pA, among them: the dynamics do not read it, but where it varies the population runs the
// per-neuron update).
inline constexpr const char* kPerNeuron[] = {"E_L_mV",     "V_th_mV",       "V_reset_mV",    "V_peak_mV",
                                             "C_m_pF",     "g_L_nS",        "Delta_T_mV",    "tau_w_ms",
                                             "a_nS",       "b_pA",          "E_ex_mV",       "E_in_mV",
                                             "tau_syn_ex_ms", "tau_syn_in_ms", "tau_arp_ms", "I_e_pA",
                                             "gsl_error_tol", "w0_pA",    nullptr};
// Those of the initial V, besides.
inline constexpr const char* kInitialParameters[] = {"V0_mean_mV", "V0_sd_mV", nullptr};

// The constants of one neuron's update that both models read.
struct Constants {
  double g_L, c_m, E_ex, E_in, tau_ex, tau_in, i_e, theta, reset, peak, delta_T, tau_w, a, b, tolerance, h;
  double spike_at;      // where a spike is detected: V_peak, or V_th where Delta_T is 0 (NEST's V_.V_peak)
  int32_t refractory;   // t_ref in steps
  Constants(const Parameters& p, double h_ms)
      : g_L(p.g_L_nS),
        c_m(p.c_m_pF),
        E_ex(p.E_ex_mV),
        E_in(p.E_in_mV),
        tau_ex(p.tau_syn_ex_ms),
        tau_in(p.tau_syn_in_ms),
        i_e(p.i_e_pA),
        theta(p.theta_mV),
        reset(p.reset_mV),
        peak(p.peak_mV),
        delta_T(p.delta_T_mV),
        tau_w(p.tau_w_ms),
        a(p.a_nS),
        b(p.b_pA),
        tolerance(p.tolerance),
        h(h_ms),
        spike_at(p.delta_T_mV > 0 ? p.peak_mV : p.theta_mV),
        refractory(int32_t(p.refractory_steps)) {}
};

// The membrane's part of the right-hand side (NEST's, in its order of operations): dV/dt and
// dw/dt from V, the conductances g_ex, g_in (nS) and w (pA). The V they take is held at the reset
// while refractory (and dV/dt = 0), else bounded by V_peak (NEST's clamp, V_peak even where
// Delta_T is 0); the exponential term is 0 where Delta_T is 0. It divides by C_m and tau_w as
// NEST does.
inline void membrane(const Constants& p, bool refractory, double i_stim, double V, double g_ex, double g_in, double w,
                     double& dV, double& dw) {
  const double v = refractory ? p.reset : std::min(V, p.peak);
  const double i_syn_ex = g_ex * (v - p.E_ex);
  const double i_syn_in = g_in * (v - p.E_in);
  const double i_spike = p.delta_T == 0. ? 0. : p.g_L * p.delta_T * std::exp((v - p.theta) / p.delta_T);
  dV = refractory ? 0. : (-p.g_L * v + i_spike - i_syn_ex - i_syn_in - w + p.i_e + i_stim) / p.c_m;
  dw = (p.a * v - w) / p.tau_w;
}

// After each accepted integration step (NEST's loop, inside the time step): while refractory V
// is held at the reset; else V >= V_peak (V_th where Delta_T is 0) spikes: V is reset, w jumps by
// b, and the refractory counter starts at t_ref + 1 steps (the count down at the end of the step
// takes one), 0 where t_ref is 0. Sets `spiked` where it spiked.
inline void after_step(const Constants& p, double& V, double& w, int32_t& r, bool& spiked) {
  if (r > 0) {
    V = p.reset;
  } else if (V >= p.spike_at) {
    V = p.reset;
    w += p.b;
    r = p.refractory > 0 ? p.refractory + 1 : 0;
    spiked = true;
  }
}

// Refuses a population of `model` whose parameters are missing, vary where they may not, or
// that NEST refuses (its messages' conditions, naming Ranvier's fields).
inline void check(const PopulationSpec& spec, double h, const char* model) {
  require_parameters(spec, kPerNeuron);
  require_parameters(spec, kInitialParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  const Parameters p = Parameters::of(spec, h);
  const std::string where = std::string(model) + " population '" + spec.name + "'";
  if (!(p.g_L_nS > 0 && p.c_m_pF > 0 && p.tau_syn_ex_ms > 0 && p.tau_syn_in_ms > 0 && p.tau_w_ms > 0))
    throw std::invalid_argument(where + " needs positive g_L_nS, C_m_pF, tau_syn_ex_ms, tau_syn_in_ms and tau_w_ms");
  if (!(p.tolerance > 0)) throw std::invalid_argument(where + " needs a positive gsl_error_tol");
  if (!(p.delta_T_mV >= 0)) throw std::invalid_argument(where + " needs Delta_T_mV >= 0");
  if (!(p.peak_mV >= p.theta_mV)) throw std::invalid_argument(where + " needs V_peak_mV >= V_th_mV");
  if (!(p.reset_mV < p.peak_mV)) throw std::invalid_argument(where + " needs V_reset_mV < V_peak_mV");
  if (p.refractory_steps < 0 || p.refractory_steps >= std::numeric_limits<int32_t>::max())
    throw std::invalid_argument(where + ": tau_arp_ms out of the refractory counter's range");
  if (p.delta_T_mV > 0 &&
      (p.peak_mV - p.theta_mV) / p.delta_T_mV >= std::log(std::numeric_limits<double>::max() / 1e20))
    throw std::invalid_argument(where + ": (V_peak_mV - V_th_mV) / Delta_T_mV overflows exp() at a spike; raise "
                                "Delta_T_mV or lower V_peak_mV");
}

// The column of w in both models' state (NeuronModel::adaptation_column).
inline constexpr int kWColumn = 2;

// The initial state: V by initial_potentials_absolute, w = w0_pA (each neuron's where it varies),
// the conductances 0.
inline void initialize(const PopulationSpec& spec, const Key& key, double, const NeuronColumns& s) {
  initial_potentials_absolute(spec, key, s);
  if (spec.per_neuron.count("w0_pA")) {
    const NeuronParameters v(spec, key);
    for (uint64_t k = 0; k < s.n; ++k) s.extra[kWColumn][k] = v("w0_pA", s.gid[k]);
  } else {
    const double w0 = parameter(spec, "w0_pA");
    for (uint64_t k = 0; k < s.n; ++k) s.extra[kWColumn][k] = w0;
  }
}

}  // namespace ranvier::aeif
