// Leaky integrate-and-fire with exponential synaptic conductances, a spike-frequency adaptation
// conductance and a relative refractory conductance (NEST's iaf_cond_exp_sfa_rr):
//   C_m dV/dt = -g_L V + i_e - g_ex (V - E_ex) - g_in (V - E_in) - g_sfa (V - E_sfa) - g_rr (V - E_rr),
//   dg_x/dt = -g_x / tau_syn_x,   dg_sfa/dt = -g_sfa / tau_sfa,   dg_rr/dt = -g_rr / tau_rr,
// and at each spike g_sfa += q_sfa, g_rr += q_rr. V relative to rest (E_ex, E_in, E_sfa, E_rr,
// theta, reset likewise; the front end's are absolute). Input is in nS: positive weights jump g_ex,
// negative ones jump g_in by their magnitude (split input).
//
// Integrated as NEST 3.10 integrates it (rkf45.hpp: adaptive Runge-Kutta-Fehlberg 4(5), absolute
// tolerance 1e-3 in mV and nS), each neuron with its own step size (a state column). Then NEST's
// order: the step's input jumps g_ex and g_in; while refractory V is held at the reset and the
// counter counts down, else V >= theta spikes, resets V, starts the refractory period and jumps
// g_sfa and g_rr. During the integration the right-hand side holds V at the reset while refractory
// (dV/dt = 0) and uses min(V, theta) otherwise, as NEST's.
//
// How close this is to NEST: docs/neuron-models.md (measured by tests/test_iaf_cond_exp_sfa_rr.py).
// Scalar kernel: the number of trial steps varies per neuron.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "base/spec.hpp"
#include "neurons/conductance_lif.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier::iaf_cond_exp_sfa_rr {

// State (columns of NeuronColumns): V, c = g_ex (nS, traced), extra[0] = g_in (nS; recorded as
// c_in), extra[1] = the step size the integrator tries first in the next time step (0: not yet
// set, h), extra[2] = g_sfa (nS; recorded as w), extra[3] = g_rr (nS), refractory. Initial V:
// initial_potentials_absolute (the conductances start at 0).
constexpr int kSfaColumn = 2;
constexpr int kRrColumn = 3;

// The parameters: conductance_lif's and those of the two spike-triggered conductances, by the
// front end's names (potentials relative to rest here).
struct Parameters {
  conductance_lif::Parameters base;
  double tau_sfa_ms, tau_rr_ms, E_sfa_mV, E_rr_mV, q_sfa_nS, q_rr_nS;
  static Parameters of(const PopulationSpec& p, double h) {
    const double E_L = parameter(p, "E_L_mV");
    return {conductance_lif::Parameters::of(p, h),   parameter(p, "tau_sfa_ms"),
            parameter(p, "tau_rr_ms"),               parameter(p, "E_sfa_mV") - E_L,
            parameter(p, "E_rr_mV") - E_L,           parameter(p, "q_sfa_nS"),
            parameter(p, "q_rr_nS")};
  }
  static Parameters of_neuron(const NeuronParameters& v, uint64_t gid, double h) {
    const double E_L = v("E_L_mV", gid);
    return {conductance_lif::Parameters::of_neuron(v, gid, h), v("tau_sfa_ms", gid), v("tau_rr_ms", gid),
            v("E_sfa_mV", gid) - E_L, v("E_rr_mV", gid) - E_L, v("q_sfa_nS", gid), v("q_rr_nS", gid)};
  }
};

// The parameters that may vary per neuron: conductance_lif's and these.
inline constexpr const char* kPerNeuron[] = {"E_L_mV",        "V_th_mV",       "V_reset_mV", "C_m_pF",
                                             "g_L_nS",        "E_ex_mV",       "E_in_mV",    "tau_syn_ex_ms",
                                             "tau_syn_in_ms", "tau_arp_ms",    "I_e_pA",     "tau_sfa_ms",
                                             "tau_rr_ms",     "E_sfa_mV",      "E_rr_mV",    "q_sfa_nS",
                                             "q_rr_nS",       nullptr};

// The constants of one neuron's update: the shared ones and those of g_sfa and g_rr.
struct Constants : conductance_lif::Constants {
  double tau_sfa, tau_rr, E_sfa, E_rr, q_sfa, q_rr;
  Constants(const Parameters& p, double h_ms)
      : conductance_lif::Constants(p.base, h_ms),
        tau_sfa(p.tau_sfa_ms),
        tau_rr(p.tau_rr_ms),
        E_sfa(p.E_sfa_mV),
        E_rr(p.E_rr_mV),
        q_sfa(p.q_sfa_nS),
        q_rr(p.q_rr_nS) {}
};

// The state vector of the integrator, in NEST's order: V (mV, relative to rest), g_ex, g_in,
// g_sfa, g_rr (nS).
constexpr int kDim = 5;
enum : int { kV, kGEx, kGIn, kGSfa, kGRr };

// The right-hand side (NEST's): V held at the reset while refractory, else bounded by theta;
// it divides by C_m and the time constants as NEST does.
inline void derivative(const Constants& p, bool refractory, double i_stim, const double* y, double* f) {
  const double v = refractory ? p.reset : std::min(y[kV], p.theta);
  const double i_ex = y[kGEx] * (v - p.E_ex);
  const double i_in = y[kGIn] * (v - p.E_in);
  const double i_leak = p.g_L * v;
  const double i_sfa = y[kGSfa] * (v - p.E_sfa);
  const double i_rr = y[kGRr] * (v - p.E_rr);
  f[kV] = refractory ? 0.0 : (-i_leak + i_stim + p.i_e - i_ex - i_in - i_sfa - i_rr) / p.c_m;
  f[kGEx] = -y[kGEx] / p.tau_ex;
  f[kGIn] = -y[kGIn] / p.tau_in;
  f[kGSfa] = -y[kGSfa] / p.tau_sfa;
  f[kGRr] = -y[kGRr] / p.tau_rr;
}

// One time step of one neuron: integrate, take the input (nS; inhibitory input is negative),
// then the refractory period or the threshold; a spike jumps g_sfa and g_rr.
// `current`: the injected current of the step (pA; NEST's I_stim).
inline bool step(const Constants& p, double input_ex, double input_in, double& V, double& g_ex, double& g_in,
                 double& g_sfa, double& g_rr, double& trial, int32_t& r, double current = 0.0) {
  const bool refractory = r > 0;
  double y[kDim] = {V, g_ex, g_in, g_sfa, g_rr};
  rkf45::integrate<kDim>([&](const double* x, double* f) { derivative(p, refractory, current, x, f); }, p.h, y,
                         trial);
  V = y[kV];
  g_ex = y[kGEx] + input_ex;
  g_in = y[kGIn] - input_in;
  g_sfa = y[kGSfa];
  g_rr = y[kGRr];
  const bool fired = conductance_lif::refractory_or_spike(p, V, r);
  if (fired) {
    g_sfa += p.q_sfa;
    g_rr += p.q_rr;
  }
  return fired;
}

namespace {

// The model as conductance_lif's updates take it: its constants and the step of neuron k of a range.
struct Model {
  using Parameters = iaf_cond_exp_sfa_rr::Parameters;
  using Constants = iaf_cond_exp_sfa_rr::Constants;
  static bool step(const Constants& p, const StepInput& in, const NeuronColumns& s, uint64_t k, double scale) {
    return iaf_cond_exp_sfa_rr::step(p, double(in.input[k]) * scale, double(in.inhibitory[k]) * scale, s.V[k],
                                     s.c[k], s.extra[0][k], s.extra[kSfaColumn][k], s.extra[kRrColumn][k],
                                     s.extra[1][k], s.refractory[k], in.current ? in.current[k] : 0.0);
  }
};

// Refuses a population whose parameters are missing, vary where they may not, or cannot be
// integrated (a capacitance, leak or time constant that is not positive).
void check(const PopulationSpec& spec, double h) {
  require_parameters(spec, kPerNeuron);
  require_parameters(spec, conductance_lif::kInitialParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  const Parameters p = Parameters::of(spec, h);
  const conductance_lif::Parameters& b = p.base;
  if (!(b.g_L_nS > 0 && b.c_m_pF > 0 && b.tau_syn_ex_ms > 0 && b.tau_syn_in_ms > 0 && p.tau_sfa_ms > 0 &&
        p.tau_rr_ms > 0))
    throw std::invalid_argument("iaf_cond_exp_sfa_rr population '" + spec.name +
                                "' needs positive g_L_nS, C_m_pF, tau_syn_ex_ms, tau_syn_in_ms, tau_sfa_ms and "
                                "tau_rr_ms");
}

}  // namespace

// extern: a namespace-scope const has internal linkage otherwise (no header declares it).
extern const NeuronModel model{"iaf_cond_exp_sfa_rr", check, conductance_lif::initialize,
                               conductance_lif::make_update<Model>,
                               /*split_input=*/true, /*extra_columns=*/4, /*layout=*/nullptr, /*takes_current=*/true,
                               /*inhibitory_column=*/0, /*parameters_changed=*/nullptr,
                               /*adaptation_column=*/kSfaColumn};

}  // namespace ranvier::iaf_cond_exp_sfa_rr
