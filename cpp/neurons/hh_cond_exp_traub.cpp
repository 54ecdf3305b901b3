// Hodgkin-Huxley neuron of Traub and Miles with exponential synaptic conductances (NEST's
// hh_cond_exp_traub; PyNN's HH_cond_exp):
//   C_m dV/dt = -g_Na m^3 h (V - E_Na) - g_K n^4 (V - E_K) - g_L (V - E_L)
//               - g_ex (V - E_ex) - g_in (V - E_in) + I_e + I_stim,
//   dx/dt = alpha_x(u) - (alpha_x(u) + beta_x(u)) x for x = m, h, n, u = V - V_T,
//   dg_x/dt = -g_x / tau_syn_x,
// with NEST's rate functions. V is held relative to rest (E_L) in the engine; the right-hand side
// works on the absolute V, as NEST's. Input is in nS: positive weights jump g_ex, negative ones
// jump g_in by their magnitude (split input).
//
// Integrated as NEST 3.10 integrates it (rkf45.hpp, absolute tolerance 1e-3 per component), each
// neuron with its own step size. Then NEST's order: the step's input jumps the conductances;
// while refractory the counter counts down, else the neuron spikes where V >= V_T + 30 mV and V
// fell during the step (past its maximum); V is not reset. Initial gates: the parameters
// Act_m0, Inact_h0, Act_n0 (the front end's defaults: NEST's, the steady state at -60 mV).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier::hh_cond_exp_traub {
namespace {

// State (columns of NeuronColumns): V (mV, relative to E_L), c = g_ex (nS, traced), extra[0] =
// g_in (nS), extra[1] = the integrator's next trial step (0: h), extra[2..4] = m, h, n,
// refractory. Initial V: initial_potentials_absolute.
constexpr int kDim = 6;   // V (relative), m, h, n, g_ex, g_in

struct Constants {
  double g_Na, g_K, g_L, C_m, E_Na, E_K, E_L, V_T, E_ex, E_in, tau_ex, tau_in, I_e, h;
  int32_t refractory;
  Constants(const PopulationSpec& p, double h_ms)
      : g_Na(parameter(p, "g_Na_nS")), g_K(parameter(p, "g_K_nS")), g_L(parameter(p, "g_L_nS")),
        C_m(parameter(p, "C_m_pF")), E_Na(parameter(p, "E_Na_mV")), E_K(parameter(p, "E_K_mV")),
        E_L(parameter(p, "E_L_mV")), V_T(parameter(p, "V_T_mV")), E_ex(parameter(p, "E_ex_mV")),
        E_in(parameter(p, "E_in_mV")), tau_ex(parameter(p, "tau_syn_ex_ms")), tau_in(parameter(p, "tau_syn_in_ms")),
        I_e(parameter(p, "I_e_pA")), h(h_ms), refractory(int32_t(steps_of(parameter(p, "tau_arp_ms"), h_ms))) {}
};

// NEST's right-hand side (hh_cond_exp_traub_dynamics), on the absolute V.
inline void derivative(const Constants& p, double i_stim, const double* y, double* f) {
  const double V_m = y[0] + p.E_L, m = y[1], hh = y[2], n = y[3];
  const double I_Na = p.g_Na * m * m * m * hh * (V_m - p.E_Na);
  const double I_K = p.g_K * n * n * n * n * (V_m - p.E_K);
  const double I_L = p.g_L * (V_m - p.E_L);
  const double I_syn_exc = y[4] * (V_m - p.E_ex);
  const double I_syn_inh = y[5] * (V_m - p.E_in);
  f[0] = (-I_Na - I_K - I_L - I_syn_exc - I_syn_inh + i_stim + p.I_e) / p.C_m;
  const double V = V_m - p.V_T;
  const double alpha_n = 0.032 * (15. - V) / (std::exp((15. - V) / 5.) - 1.);
  const double beta_n = 0.5 * std::exp((10. - V) / 40.);
  const double alpha_m = 0.32 * (13. - V) / (std::exp((13. - V) / 4.) - 1.);
  const double beta_m = 0.28 * (V - 40.) / (std::exp((V - 40.) / 5.) - 1.);
  const double alpha_h = 0.128 * std::exp((17. - V) / 18.);
  const double beta_h = 4. / (1. + std::exp((40. - V) / 5.));
  f[1] = alpha_m - (alpha_m + beta_m) * m;
  f[2] = alpha_h - (alpha_h + beta_h) * hh;
  f[3] = alpha_n - (alpha_n + beta_n) * n;
  f[4] = -y[4] / p.tau_ex;
  f[5] = -y[5] / p.tau_in;
}

class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx) : p_(spec, ctx.h), threshold_(p_.V_T + 30. - p_.E_L) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    for (uint64_t k = 0; k < s.n; ++k) {
      const double current = in.current ? in.current[k] : 0.0;
      const double U_old = s.V[k];
      double y[kDim] = {s.V[k], s.extra[2][k], s.extra[3][k], s.extra[4][k], s.c[k], s.extra[0][k]};
      rkf45::integrate<kDim>([&](const double* x, double* f) { derivative(p_, current, x, f); }, p_.h, y,
                             s.extra[1][k]);
      s.V[k] = y[0];
      s.extra[2][k] = y[1];
      s.extra[3][k] = y[2];
      s.extra[4][k] = y[3];
      s.c[k] = y[4] + double(in.input[k]) * in.input_scale;
      s.extra[0][k] = y[5] - double(in.inhibitory[k]) * in.input_scale;
      fired[k] = 0;
      if (s.refractory[k] > 0) {
        --s.refractory[k];
      } else if (s.V[k] >= threshold_ && U_old > s.V[k]) {   // threshold and past the maximum
        s.refractory[k] = p_.refractory;
        fired[k] = 1;
      }
    }
  }

 private:
  Constants p_;
  double threshold_;   // V_T + 30 mV, relative to E_L
};

const char* const kParameters[] = {"g_Na_nS", "g_K_nS",  "g_L_nS",  "C_m_pF",        "E_Na_mV",       "E_K_mV",
                                   "E_L_mV",  "V_T_mV",  "E_ex_mV", "E_in_mV",       "tau_syn_ex_ms", "tau_syn_in_ms",
                                   "tau_arp_ms", "I_e_pA", "Act_m0", "Inact_h0", "Act_n0", "V0_mean_mV", "V0_sd_mV",
                                   nullptr};
const char* const kPerNeuron[] = {nullptr};   // only the initial V may vary per neuron

void check(const PopulationSpec& spec, double h) {
  require_parameters(spec, kParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  const Constants p(spec, h);
  if (!(p.C_m > 0 && p.tau_ex > 0 && p.tau_in > 0))
    throw std::invalid_argument("hh_cond_exp_traub population '" + spec.name +
                                "' needs positive C_m_pF, tau_syn_ex_ms and tau_syn_in_ms");
  if (!(parameter(spec, "tau_arp_ms") >= 0))
    throw std::invalid_argument("hh_cond_exp_traub population '" + spec.name + "': tau_arp_ms must be >= 0");
  for (const char* gate : {"Act_m0", "Inact_h0", "Act_n0"})
    if (!(parameter(spec, gate) >= 0))
      throw std::invalid_argument("hh_cond_exp_traub population '" + spec.name + "': " + gate + " must be >= 0");
}

void initialize(const PopulationSpec& spec, const Key& key, double, const NeuronColumns& s) {
  initial_potentials_absolute(spec, key, s);
  const double m = parameter(spec, "Act_m0"), hh = parameter(spec, "Inact_h0"), n = parameter(spec, "Act_n0");
  for (uint64_t k = 0; k < s.n; ++k) {
    s.c[k] = s.extra[0][k] = s.extra[1][k] = 0.0;
    s.extra[2][k] = m;
    s.extra[3][k] = hh;
    s.extra[4][k] = n;
    s.refractory[k] = 0;
  }
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns&) {
  return std::make_unique<Update>(spec, ctx);
}

}  // namespace

extern const NeuronModel model;   // external linkage: registry.cpp lists it
const NeuronModel model{"hh_cond_exp_traub", check, initialize, make_update,
                        /*split_input=*/true, /*extra_columns=*/5, /*layout=*/nullptr, /*takes_current=*/true,
                        /*inhibitory_column=*/0};

}  // namespace ranvier::hh_cond_exp_traub
