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
#include <stdexcept>
#include <vector>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier::iaf_cond_alpha {

// The parameters the model reads by the front end's names (potentials relative to rest: the
// front end's absolute ones are taken relative to E_L_mV here), for the population or one neuron
// where parameters vary per neuron.
struct Parameters {
  double g_L_nS, c_m_pF, E_ex_mV, E_in_mV, tau_syn_ex_ms, tau_syn_in_ms, i_e_pA, theta_mV, reset_mV;
  int64_t refractory_steps;
  static Parameters of(const PopulationSpec& p, double h) {
    const double E_L = parameter(p, "E_L_mV");
    return {parameter(p, "g_L_nS"),           parameter(p, "C_m_pF"),
            parameter(p, "E_ex_mV") - E_L,    parameter(p, "E_in_mV") - E_L,
            parameter(p, "tau_syn_ex_ms"),    parameter(p, "tau_syn_in_ms"),
            parameter(p, "I_e_pA"),           parameter(p, "V_th_mV") - E_L,
            parameter(p, "V_reset_mV") - E_L, steps_of(parameter(p, "tau_arp_ms"), h)};
  }
  static Parameters of_neuron(const NeuronParameters& v, uint64_t gid, double h) {
    const double E_L = v("E_L_mV", gid);
    return {v("g_L_nS", gid),         v("C_m_pF", gid),          v("E_ex_mV", gid) - E_L,
            v("E_in_mV", gid) - E_L,  v("tau_syn_ex_ms", gid),   v("tau_syn_in_ms", gid),
            v("I_e_pA", gid),         v("V_th_mV", gid) - E_L,   v("V_reset_mV", gid) - E_L,
            steps_of(v("tau_arp_ms", gid), h)};
  }
};

// The parameters that may vary per neuron (all but those of the initial V).
constexpr const char* kPerNeuron[] = {"E_L_mV",        "V_th_mV",       "V_reset_mV", "C_m_pF",
                                      "g_L_nS",        "E_ex_mV",       "E_in_mV",    "tau_syn_ex_ms",
                                      "tau_syn_in_ms", "tau_arp_ms",    "I_e_pA",     nullptr};
// Those of the initial V, besides.
constexpr const char* kInitialParameters[] = {"V0_mean_mV", "V0_sd_mV", nullptr};

// State (columns of NeuronColumns): V, c = g_ex (nS, traced), extra[0] = g_in (nS; recorded as
// c_in), extra[1] = the step size the integrator tries first in the next time step (0: not yet
// set, h), extra[2] = dg_ex, extra[3] = dg_in (nS/ms), refractory. Initial V:
// initial_potentials_absolute.

// The constants of one neuron's update.
struct Constants {
  double g_L, c_m, E_ex, E_in, tau_ex, tau_in, i_e, theta, reset, h, jump_ex, jump_in;
  int32_t refractory;
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
        h(h_ms),
        jump_ex(M_E / p.tau_syn_ex_ms), jump_in(M_E / p.tau_syn_in_ms),   // peak conductance w at tau_syn
        refractory(int32_t(p.refractory_steps)) {}
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
  if (r > 0) {
    --r;
    V = p.reset;
    return false;
  }
  if (V < p.theta) return false;
  r = p.refractory;
  V = p.reset;
  return true;
}

namespace {

// The homogeneous update: one set of constants for the range.
class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx) : p_(Parameters::of(spec, ctx.h), ctx.h) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const double scale = in.input_scale;
    for (uint64_t k = 0; k < s.n; ++k)
      fired[k] = iaf_cond_alpha::step(p_, double(in.input[k]) * scale, double(in.inhibitory[k]) * scale, s.V[k],
                                      s.c[k], s.extra[0][k], s.extra[2][k], s.extra[3][k], s.extra[1][k],
                                      s.refractory[k], in.current ? in.current[k] : 0.0);
  }

 private:
  Constants p_;
};

// Parameters that vary per neuron: one set of constants per neuron of the range, the same step.
class PerNeuronUpdate final : public PopulationUpdate {
 public:
  PerNeuronUpdate(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& s) {
    const NeuronParameters values(spec, ctx.key);
    table_.reserve(s.n);
    for (uint64_t k = 0; k < s.n; ++k) table_.emplace_back(Parameters::of_neuron(values, s.gid[k], ctx.h), ctx.h);
  }
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const double scale = in.input_scale;
    for (uint64_t k = 0; k < s.n; ++k)
      fired[k] = iaf_cond_alpha::step(table_[k], double(in.input[k]) * scale, double(in.inhibitory[k]) * scale,
                                      s.V[k], s.c[k], s.extra[0][k], s.extra[2][k], s.extra[3][k], s.extra[1][k],
                                      s.refractory[k], in.current ? in.current[k] : 0.0);
  }

 private:
  std::vector<Constants> table_;
};

void check(const PopulationSpec& spec, double h) {
  require_parameters(spec, kPerNeuron);
  require_parameters(spec, kInitialParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  const Parameters p = Parameters::of(spec, h);
  if (!(p.g_L_nS > 0 && p.c_m_pF > 0 && p.tau_syn_ex_ms > 0 && p.tau_syn_in_ms > 0))
    throw std::invalid_argument("iaf_cond_alpha population '" + spec.name +
                                "' needs positive g_L_nS, C_m_pF, tau_syn_ex_ms and tau_syn_in_ms");
}

void initialize(const PopulationSpec& spec, const Key& key, double, const NeuronColumns& s) {
  initial_potentials_absolute(spec, key, s);
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                              const NeuronColumns& s) {
  if (parameters_vary(spec)) return std::make_unique<PerNeuronUpdate>(spec, ctx, s);
  return std::make_unique<Update>(spec, ctx);
}

}  // namespace

// extern: a namespace-scope const has internal linkage otherwise (no header declares it).
extern const NeuronModel model{"iaf_cond_alpha", check, initialize, make_update,
                               /*split_input=*/true, /*extra_columns=*/4, /*layout=*/nullptr, /*takes_current=*/true,
                               /*inhibitory_column=*/0};

}  // namespace ranvier::iaf_cond_alpha
