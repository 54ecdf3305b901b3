// Leaky integrate-and-fire with exponential synaptic conductances (NEST's iaf_cond_exp):
//   C_m dV/dt = -g_L V + i_e - g_ex (V - E_ex) - g_in (V - E_in),
//   dg_x/dt = -g_x / tau_syn_x,
// V relative to rest (E_ex, E_in, theta, reset likewise; the front end's are absolute). Input is in
// nS: positive weights jump g_ex, negative ones jump g_in by their magnitude (split input).
//
// Integrated as NEST 3.10 integrates it (rkf45.hpp: adaptive Runge-Kutta-Fehlberg 4(5), absolute
// tolerance 1e-3 in mV and nS), each neuron with its own step size (a state column), so a
// neuron's trajectory does not depend on any other neuron, thread or rank. Then NEST's order: the
// step's input jumps the conductances; while refractory V is held at the reset and the counter
// counts down, else V >= theta spikes. During the integration the right-hand side holds V at the
// reset while refractory (dV/dt = 0) and uses min(V, theta) otherwise, as NEST's.
//
// How close this is to the exact solution and to NEST: docs/neuron-models.md (measured by
// tests/test_pynn_cells.py). Scalar kernel: the number of trial steps varies per neuron.
#include <algorithm>
#include <cmath>

#include "base/spec.hpp"
#include "neurons/conductance_lif.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier::iaf_cond_exp {

// The parameters, the per-neuron ones and the checks: conductance_lif.hpp (shared with iaf_cond_alpha).
using conductance_lif::Parameters;

// State (columns of NeuronColumns): V, c = g_ex (nS, traced), extra[0] = g_in (nS), extra[1] =
// the step size the integrator tries first in the next time step (0: not yet set, h),
// refractory. Initial V: initial_potentials_absolute.

// The constants of one neuron's update: the shared ones, and the inverses the right-hand side
// multiplies by.
struct Constants : conductance_lif::Constants {
  double inv_c_m, inv_tau_ex, inv_tau_in;
  Constants(const Parameters& p, double h_ms)
      : conductance_lif::Constants(p, h_ms), inv_c_m(1 / c_m), inv_tau_ex(1 / tau_ex), inv_tau_in(1 / tau_in) {}
};

// The state vector of the integrator: V (mV, relative to rest), g_ex, g_in (nS).
constexpr int kDim = 3;

// The right-hand side (NEST's): V held at the reset while refractory, else bounded by theta.
// It multiplies by 1/C_m and 1/tau_syn where NEST divides (20 % faster; the largest difference
// from NEST's trace in tests/test_pynn_cells.py stayed 5e-14 mV).
inline void derivative(const Constants& p, bool refractory, double i_stim, const double* y, double* f) {
  const double v = refractory ? p.reset : std::min(y[0], p.theta);
  const double i_ex = y[1] * (v - p.E_ex);
  const double i_in = y[2] * (v - p.E_in);
  const double i_leak = p.g_L * v;
  f[0] = refractory ? 0.0 : (-i_leak + i_stim + p.i_e - i_ex - i_in) * p.inv_c_m;
  f[1] = -y[1] * p.inv_tau_ex;
  f[2] = -y[2] * p.inv_tau_in;
}

// One time step of one neuron: integrate, take the input (nS; inhibitory input is negative),
// then the refractory period or the threshold.
// `current`: the injected current of the step (pA; NEST's I_stim).
inline bool step(const Constants& p, double input_ex, double input_in, double& V, double& g_ex, double& g_in,
                 double& trial, int32_t& r, double current = 0.0) {
  const bool refractory = r > 0;
  double y[kDim] = {V, g_ex, g_in};
  rkf45::integrate<kDim>([&](const double* x, double* f) { derivative(p, refractory, current, x, f); }, p.h, y,
                         trial);
  V = y[0];
  g_ex = y[1] + input_ex;
  g_in = y[2] - input_in;
  return conductance_lif::refractory_or_spike(p, V, r);
}

namespace {

// The model as conductance_lif's updates take it: its constants and the step of neuron k of a range.
struct Model {
  using Parameters = conductance_lif::Parameters;
  using Constants = iaf_cond_exp::Constants;
  static bool step(const Constants& p, const StepInput& in, const NeuronColumns& s, uint64_t k, double scale) {
    return iaf_cond_exp::step(p, double(in.input[k]) * scale, double(in.inhibitory[k]) * scale, s.V[k], s.c[k],
                              s.extra[0][k], s.extra[1][k], s.refractory[k], in.current ? in.current[k] : 0.0);
  }
};

void check(const PopulationSpec& spec, double h) { conductance_lif::check(spec, h, "iaf_cond_exp"); }

}  // namespace

// extern: a namespace-scope const has internal linkage otherwise (no header declares it).
extern const NeuronModel model{"iaf_cond_exp", check, conductance_lif::initialize,
                               conductance_lif::make_update<Model>,
                               /*split_input=*/true, /*extra_columns=*/2, /*layout=*/nullptr, /*takes_current=*/true,
                               /*inhibitory_column=*/0};

}  // namespace ranvier::iaf_cond_exp
