// Leaky integrate-and-fire with alpha-shaped synaptic conductances (NEST's iaf_cond_alpha):
//   C_m dV/dt = -g_L V + i_e - g_ex (V - E_ex) - g_in (V - E_in),
//   d(dg_x)/dt = -dg_x / tau_syn_x,   dg_x/dt = dg_x - g_x / tau_syn_x,
// so a spike of weight w (nS) at t = 0 gives g_x(t) = w e / tau_syn_x t exp(-t / tau_syn_x), which
// peaks at w at t = tau_syn_x. V relative to rest (E_ex, E_in, theta, reset likewise; the front
// end's are absolute). Input is in nS: positive weights jump dg_ex by w e / tau_syn_ex, negative
// ones dg_in by |w| e / tau_syn_in (split input).
//
// Integrated as NEST 3.10 integrates it (rkf45.hpp: adaptive Runge-Kutta-Fehlberg 4(5), absolute
// tolerance 1e-3 in mV, nS and nS/ms), each neuron with its own step size. Then NEST's order: the
// step's input jumps dg_ex and dg_in; while refractory V is held at the reset and the counter
// counts down, else V >= theta spikes. During the integration the right-hand side holds V at the
// reset while refractory (dV/dt = 0) and uses min(V, theta) otherwise, as NEST's.
//
// How close this is to NEST: docs/neuron-models.md (measured by tests/test_iaf_cond_alpha.py).
// Scalar kernel: the number of trial steps varies per neuron.
#include <algorithm>
#include <cmath>

#include "base/spec.hpp"
#include "neurons/conductance_lif.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier::iaf_cond_alpha {

// The parameters, the per-neuron ones and the checks: conductance_lif.hpp (shared with iaf_cond_exp).
using conductance_lif::Parameters;

// State (columns of NeuronColumns): V, c = g_ex (nS, traced), extra[0] = g_in (nS; recorded as
// c_in), extra[1] = the step size the integrator tries first in the next time step (0: not yet
// set, h), extra[2] = dg_ex, extra[3] = dg_in (nS/ms), refractory. Initial V:
// initial_potentials_absolute.

// The constants of one neuron's update: the shared ones, and the jump of dg per nS of input.
struct Constants : conductance_lif::Constants {
  double jump_ex, jump_in;
  Constants(const Parameters& p, double h_ms)
      : conductance_lif::Constants(p, h_ms),
        jump_ex(M_E / p.tau_syn_ex_ms), jump_in(M_E / p.tau_syn_in_ms) {}   // peak conductance w at tau_syn
};

// The state vector of the integrator, in NEST's order: V (mV, relative to rest), dg_ex, g_ex,
// dg_in, g_in (nS/ms, nS).
constexpr int kDim = 5;
enum : int { kV, kDgEx, kGEx, kDgIn, kGIn };

// The right-hand side (NEST's): V held at the reset while refractory, else bounded by theta.
// It divides by C_m and tau_syn as NEST does: multiplying by their inverses, as iaf_cond_exp
// does, took the largest difference from NEST's trace in tests/test_iaf_cond_alpha.py from
// 4.3e-14 to 2.7e-13 mV (NEST's defaults), for no measurable gain in speed (20,000 neurons).
inline void derivative(const Constants& p, bool refractory, double i_stim, const double* y, double* f) {
  const double v = refractory ? p.reset : std::min(y[kV], p.theta);
  const double i_ex = y[kGEx] * (v - p.E_ex);
  const double i_in = y[kGIn] * (v - p.E_in);
  const double i_leak = p.g_L * v;
  f[kV] = refractory ? 0.0 : (-i_leak + i_stim + p.i_e - i_ex - i_in) / p.c_m;
  f[kDgEx] = -y[kDgEx] / p.tau_ex;
  f[kGEx] = y[kDgEx] - y[kGEx] / p.tau_ex;
  f[kDgIn] = -y[kDgIn] / p.tau_in;
  f[kGIn] = y[kDgIn] - y[kGIn] / p.tau_in;
}

// One time step of one neuron: integrate, take the input (nS; inhibitory input is negative),
// then the refractory period or the threshold.
// `current`: the injected current of the step (pA; NEST's I_stim).
inline bool step(const Constants& p, double input_ex, double input_in, double& V, double& g_ex, double& g_in,
                 double& dg_ex, double& dg_in, double& trial, int32_t& r, double current = 0.0) {
  const bool refractory = r > 0;
  double y[kDim] = {V, dg_ex, g_ex, dg_in, g_in};
  rkf45::integrate<kDim>([&](const double* x, double* f) { derivative(p, refractory, current, x, f); }, p.h, y,
                         trial);
  V = y[kV];
  g_ex = y[kGEx];
  g_in = y[kGIn];
  dg_ex = y[kDgEx] + input_ex * p.jump_ex;
  dg_in = y[kDgIn] - input_in * p.jump_in;
  return conductance_lif::refractory_or_spike(p, V, r);
}

namespace {

// The model as conductance_lif's updates take it: its constants and the step of neuron k of a range.
struct Model {
  using Parameters = conductance_lif::Parameters;
  using Constants = iaf_cond_alpha::Constants;
  static bool step(const Constants& p, const StepInput& in, const NeuronColumns& s, uint64_t k, double scale) {
    return iaf_cond_alpha::step(p, double(in.input[k]) * scale, double(in.inhibitory[k]) * scale, s.V[k], s.c[k],
                                s.extra[0][k], s.extra[2][k], s.extra[3][k], s.extra[1][k], s.refractory[k],
                                in.current ? in.current[k] : 0.0);
  }
};

void check(const PopulationSpec& spec, double h) { conductance_lif::check(spec, h, "iaf_cond_alpha"); }

}  // namespace

// extern: a namespace-scope const has internal linkage otherwise (no header declares it).
extern const NeuronModel model{"iaf_cond_alpha", check, conductance_lif::initialize,
                               conductance_lif::make_update<Model>,
                               /*split_input=*/true, /*extra_columns=*/4, /*layout=*/nullptr, /*takes_current=*/true,
                               /*inhibitory_column=*/0};

}  // namespace ranvier::iaf_cond_alpha
