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
#include <stdexcept>
#include <vector>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier::iaf_cond_exp {

// The population's parameters by the front end's names, read once when the engine is built
// (potentials relative to rest: the front end's absolute ones are taken relative to E_L_mV
// here); or one neuron's, where parameters vary per neuron.
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

// State (columns of NeuronColumns): V, c = g_ex (nS, traced), extra[0] = g_in (nS), extra[1] =
// the step size the integrator tries first in the next time step (0: not yet set, h),
// refractory. Initial V: initial_potentials_absolute.

// The constants of one neuron's update.
struct Constants {
  double g_L, c_m, E_ex, E_in, tau_ex, tau_in, i_e, theta, reset, h, inv_c_m, inv_tau_ex, inv_tau_in;
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
        inv_c_m(1 / c_m), inv_tau_ex(1 / tau_ex), inv_tau_in(1 / tau_in),
        refractory(int32_t(p.refractory_steps)) {}
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
      fired[k] = iaf_cond_exp::step(p_, double(in.input[k]) * scale, double(in.inhibitory[k]) * scale, s.V[k],
                                    s.c[k], s.extra[0][k], s.extra[1][k], s.refractory[k],
                                    in.current ? in.current[k] : 0.0);
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
      fired[k] = iaf_cond_exp::step(table_[k], double(in.input[k]) * scale, double(in.inhibitory[k]) * scale,
                                    s.V[k], s.c[k], s.extra[0][k], s.extra[1][k], s.refractory[k],
                                    in.current ? in.current[k] : 0.0);
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
    throw std::invalid_argument("iaf_cond_exp population '" + spec.name +
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
extern const NeuronModel model{"iaf_cond_exp", check, initialize, make_update,
                               /*split_input=*/true, /*extra_columns=*/2, /*layout=*/nullptr, /*takes_current=*/true,
                               /*inhibitory_column=*/0};

}  // namespace ranvier::iaf_cond_exp
