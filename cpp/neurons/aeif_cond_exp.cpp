// Adaptive exponential integrate-and-fire with exponential synaptic conductances (NEST's
// aeif_cond_exp; Brette and Gerstner 2005):
//   C_m dV/dt = -g_L V + g_L Delta_T exp((V - V_th) / Delta_T) - g_ex (V - E_ex) - g_in (V - E_in) - w + i_e,
//   tau_w dw/dt = a V - w,   dg_x/dt = -g_x / tau_syn_x,
// V relative to rest (E_ex, E_in, V_th, V_peak, the reset likewise; the front end's are
// absolute). Input is in nS: positive weights jump g_ex, negative ones jump g_in by their
// magnitude (split input).
//
// Integrated as NEST 3.10 integrates it (rkf45.hpp's integrate_yp: adaptive Runge-Kutta-Fehlberg
// 4(5) under GSL's yp control with NEST's gsl_error_tol, absolute and relative to |dt dy/dt|),
// each neuron with its own step size (a state column). NEST's order: after each accepted
// integration step V is held at the reset while refractory, else V >= V_peak (V_th where
// Delta_T is 0) spikes, inside the time step: V reset, w += b, refractory for t_ref (the rest of
// the time step too); then the refractory counter counts down and the step's input jumps the
// conductances. The right-hand side holds V at the reset while refractory (dV/dt = 0) and uses
// min(V, V_peak) otherwise, as NEST's (aeif.hpp).
//
// How close this is to NEST: docs/neuron-models.md (measured by tests/test_aeif.py). Scalar
// kernel: the number of trial steps varies per neuron.
#include "base/spec.hpp"
#include "neurons/aeif.hpp"
#include "neurons/conductance_lif.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier::aeif_cond_exp {

// The parameters, the per-neuron ones and the checks: aeif.hpp (shared with aeif_cond_alpha).
using aeif::Constants;
using aeif::Parameters;

// State (columns of NeuronColumns): V, c = g_ex (nS, traced), extra[0] = g_in (nS; recorded as
// c_in), extra[1] = the step size the integrator tries first in the next time step (0: not yet
// set, h), extra[2] = w (pA; aeif::kWColumn), refractory. Initial state: aeif::initialize.

// The state vector of the integrator, in NEST's order: V (mV, relative to rest), g_ex, g_in
// (nS), w (pA).
constexpr int kDim = 4;
enum : int { kV, kGEx, kGIn, kW };

// The right-hand side (NEST's aeif_cond_exp_dynamics).
inline void derivative(const Constants& p, bool refractory, double i_stim, const double* y, double* f) {
  aeif::membrane(p, refractory, i_stim, y[kV], y[kGEx], y[kGIn], y[kW], f[kV], f[kW]);
  f[kGEx] = -y[kGEx] / p.tau_ex;
  f[kGIn] = -y[kGIn] / p.tau_in;
}

// One time step of one neuron: integrate (spiking inside it), count the refractory period down,
// take the input (nS; inhibitory input is negative). Returns whether the neuron spiked.
// `current`: the injected current of the step (pA; NEST's I_stim).
inline bool step(const Constants& p, double input_ex, double input_in, double& V, double& g_ex, double& g_in,
                 double& w, double& trial, int32_t& r, double current = 0.0) {
  bool spiked = false;
  double y[kDim] = {V, g_ex, g_in, w};
  rkf45::integrate_yp<kDim>([&](const double* x, double* f) { derivative(p, r > 0, current, x, f); },
                            [&](double* x) { aeif::after_step(p, x[kV], x[kW], r, spiked); }, p.tolerance, p.h, y,
                            trial);
  if (r > 0) --r;
  V = y[kV];
  g_ex = y[kGEx] + input_ex;
  g_in = y[kGIn] - input_in;
  w = y[kW];
  return spiked;
}

namespace {

// The model as conductance_lif's updates take it: its parameters, its constants and the step of
// neuron k of a range.
struct Model {
  using Parameters = aeif::Parameters;
  using Constants = aeif::Constants;
  static bool step(const Constants& p, const StepInput& in, const NeuronColumns& s, uint64_t k, double scale) {
    return aeif_cond_exp::step(p, double(in.input[k]) * scale, double(in.inhibitory[k]) * scale, s.V[k], s.c[k],
                               s.extra[0][k], s.extra[aeif::kWColumn][k], s.extra[1][k], s.refractory[k],
                               in.current ? in.current[k] : 0.0);
  }
};

void check(const PopulationSpec& spec, double h) { aeif::check(spec, h, "aeif_cond_exp"); }

}  // namespace

// extern: a namespace-scope const has internal linkage otherwise (no header declares it).
extern const NeuronModel model{"aeif_cond_exp", check, aeif::initialize, conductance_lif::make_update<Model>,
                               /*split_input=*/true, /*extra_columns=*/3, /*layout=*/nullptr, /*takes_current=*/true,
                               /*inhibitory_column=*/0, /*parameters_changed=*/nullptr,
                               /*adaptation_column=*/aeif::kWColumn};

}  // namespace ranvier::aeif_cond_exp
