// Adaptive exponential integrate-and-fire with alpha-shaped synaptic conductances (NEST's
// aeif_cond_alpha): the membrane and adaptation of aeif_cond_exp (aeif.hpp),
//   C_m dV/dt = -g_L V + g_L Delta_T exp((V - V_th) / Delta_T) - g_ex (V - E_ex) - g_in (V - E_in) - w + i_e,
//   tau_w dw/dt = a V - w,
// with the conductances of iaf_cond_alpha,
//   d(dg_x)/dt = -dg_x / tau_syn_x,   dg_x/dt = dg_x - g_x / tau_syn_x,
// so a spike of weight w (nS) gives g_x(t) = w e / tau_syn_x t exp(-t / tau_syn_x), peak w at
// t = tau_syn_x. V relative to rest (the front end's potentials are absolute). Input is in nS:
// positive weights jump dg_ex by w e / tau_syn_ex, negative ones dg_in by |w| e / tau_syn_in
// (split input).
//
// Integrated and ordered as aeif_cond_exp (NEST 3.10's aeif_cond_alpha: rkf45.hpp's
// integrate_yp with gsl_error_tol; the spike inside the time step; then the refractory count
// down and the input).
//
// How close this is to NEST: docs/neuron-models.md (measured by tests/test_aeif.py). Scalar
// kernel: the number of trial steps varies per neuron.
#include <cmath>

#include "base/spec.hpp"
#include "neurons/aeif.hpp"
#include "neurons/conductance_lif.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier::aeif_cond_alpha {

// The parameters, the per-neuron ones and the checks: aeif.hpp (shared with aeif_cond_exp).
using aeif::Parameters;

// State (columns of NeuronColumns): V, c = g_ex (nS, traced), extra[0] = g_in (nS; recorded as
// c_in), extra[1] = the step size the integrator tries first in the next time step (0: not yet
// set, h), extra[2] = w (pA; aeif::kWColumn), extra[3] = dg_ex, extra[4] = dg_in (nS/ms),
// refractory. Initial state: aeif::initialize.

// The constants of one neuron's update: the shared ones, and the jump of dg per nS of input
// (NEST's g0_ex, g0_in).
struct Constants : aeif::Constants {
  double jump_ex, jump_in;
  Constants(const Parameters& p, double h_ms)
      : aeif::Constants(p, h_ms), jump_ex(1.0 * M_E / p.tau_syn_ex_ms), jump_in(1.0 * M_E / p.tau_syn_in_ms) {}
};

// The state vector of the integrator, in NEST's order: V (mV, relative to rest), dg_ex, g_ex,
// dg_in, g_in (nS/ms, nS), w (pA).
constexpr int kDim = 6;
enum : int { kV, kDgEx, kGEx, kDgIn, kGIn, kW };

// The right-hand side (NEST's aeif_cond_alpha_dynamics).
inline void derivative(const Constants& p, bool refractory, double i_stim, const double* y, double* f) {
  aeif::membrane(p, refractory, i_stim, y[kV], y[kGEx], y[kGIn], y[kW], f[kV], f[kW]);
  f[kDgEx] = -y[kDgEx] / p.tau_ex;
  f[kGEx] = y[kDgEx] - y[kGEx] / p.tau_ex;
  f[kDgIn] = -y[kDgIn] / p.tau_in;
  f[kGIn] = y[kDgIn] - y[kGIn] / p.tau_in;
}

// One time step of one neuron: integrate (spiking inside it), count the refractory period down,
// take the input (nS; inhibitory input is negative). Returns whether the neuron spiked.
// `current`: the injected current of the step (pA; NEST's I_stim).
inline bool step(const Constants& p, double input_ex, double input_in, double& V, double& g_ex, double& g_in,
                 double& dg_ex, double& dg_in, double& w, double& trial, int32_t& r, double current = 0.0) {
  bool spiked = false;
  double y[kDim] = {V, dg_ex, g_ex, dg_in, g_in, w};
  rkf45::integrate_yp<kDim>([&](const double* x, double* f) { derivative(p, r > 0, current, x, f); },
                            [&](double* x) { aeif::after_step(p, x[kV], x[kW], r, spiked); }, p.tolerance, p.h, y,
                            trial);
  if (r > 0) --r;
  V = y[kV];
  g_ex = y[kGEx];
  g_in = y[kGIn];
  dg_ex = y[kDgEx] + input_ex * p.jump_ex;
  dg_in = y[kDgIn] - input_in * p.jump_in;
  w = y[kW];
  return spiked;
}

namespace {

// The model as conductance_lif's updates take it: its parameters, its constants and the step of
// neuron k of a range.
struct Model {
  using Parameters = aeif::Parameters;
  using Constants = aeif_cond_alpha::Constants;
  static bool step(const Constants& p, const StepInput& in, const NeuronColumns& s, uint64_t k, double scale) {
    return aeif_cond_alpha::step(p, double(in.input[k]) * scale, double(in.inhibitory[k]) * scale, s.V[k], s.c[k],
                                 s.extra[0][k], s.extra[3][k], s.extra[4][k], s.extra[aeif::kWColumn][k],
                                 s.extra[1][k], s.refractory[k], in.current ? in.current[k] : 0.0);
  }
};

void check(const PopulationSpec& spec, double h) { aeif::check(spec, h, "aeif_cond_alpha"); }

}  // namespace

// extern: a namespace-scope const has internal linkage otherwise (no header declares it).
extern const NeuronModel model{"aeif_cond_alpha", check, aeif::initialize, conductance_lif::make_update<Model>,
                               /*split_input=*/true, /*extra_columns=*/5, /*layout=*/nullptr, /*takes_current=*/true,
                               /*inhibitory_column=*/0, /*parameters_changed=*/nullptr,
                               /*adaptation_column=*/aeif::kWColumn};

}  // namespace ranvier::aeif_cond_alpha
