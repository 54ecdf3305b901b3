// The generalised integrate-and-fire neuron with exponential synaptic conductances (NEST's
// gif_cond_exp; Mensi et al. 2012, Pozzorini et al. 2015): a leaky membrane with a spike-triggered
// current I_stc and a moving threshold E_sfa, each a sum of exponentials that every spike jumps
// (q_stc_pA, q_sfa_mV with time constants tau_stc_ms, tau_sfa_ms), and stochastic spiking:
//   C_m dV/dt = -g_L V + I_e + I_stim - I_stc - g_ex (V - E_ex) - g_in (V - E_in),
//   dg_x/dt = -g_x / tau_syn_x,
// a neuron out of its refractory period spikes in a step with probability
// 1 - exp(-lambda h), lambda = lambda_0 exp((V - E_sfa) / Delta_V).
// V relative to rest (E_ex, E_in, V_reset, V_T_star likewise; the front end's are absolute).
// Input in nS: positive weights jump g_ex, negative ones g_in by their magnitude (split input).
//
// In NEST's order within a step: the sums I_stc and E_sfa are taken and their elements decay;
// V, g_ex, g_in are integrated over the step (rkf45.hpp, GSL's control with absolute tolerance
// gsl_error_tol; each neuron its own step size; V held at the reset, dV/dt = 0, while refractory);
// the step's input jumps the conductances; then a refractory neuron counts down with V at the
// reset, another draws its spike. The draw is the neuron's own Philox stream keyed by (seed, gid,
// step), so a neuron's spikes depend on no other neuron, thread or rank (NEST draws from its
// thread's generator: the same law, other numbers).
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/philox.hpp"
#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier::gif_cond_exp {

namespace {

// The parameters that may vary per neuron (the adaptation's time constants and jumps are the
// population's: sequences).
constexpr const char* kPerNeuron[] = {"E_L_mV",     "V_reset_mV",  "V_T_star_mV", "Delta_V_mV",    "lambda_0_hz",
                                      "C_m_pF",     "g_L_nS",      "E_ex_mV",     "E_in_mV",       "tau_syn_ex_ms",
                                      "tau_syn_in_ms", "tau_arp_ms", "I_e_pA",    "gsl_error_tol", nullptr};
constexpr const char* kInitialParameters[] = {"V0_mean_mV", "V0_sd_mV", nullptr};
constexpr const char* kSequences[] = {"tau_stc_ms", "q_stc_pA", "tau_sfa_ms", "q_sfa_mV"};

// State columns: V, c = g_ex, extra[0] = g_in, extra[1] = the integrator's next step size (0:
// h), extra[2] = I_stc (pA) and extra[3] = E_sfa (mV, absolute) of the step, then the elements of
// I_stc and of E_sfa; the refractory counter.
constexpr int kFixedColumns = 4;

// One neuron's constants (NEST's names; potentials relative to rest).
struct Constants {
  double g_L, c_m, E_ex, E_in, tau_ex, tau_in, i_e, reset, V_T_star, Delta_V, lambda_0, tol, E_L, h;
  int32_t refractory;
};

Constants constants_of(double E_L, double reset, double V_T_star, double Delta_V, double lambda_0_hz, double c_m,
                       double g_L, double E_ex, double E_in, double tau_ex, double tau_in, double tau_arp, double i_e,
                       double tol, double h) {
  return {g_L, c_m, E_ex - E_L, E_in - E_L, tau_ex, tau_in, i_e, reset - E_L, V_T_star - E_L, Delta_V,
          lambda_0_hz / 1000.0,                      // per ms, as NEST keeps it
          tol, E_L, h, int32_t(steps_of(tau_arp, h))};
}

Constants of_population(const PopulationSpec& p, double h) {
  auto v = [&](const char* n) { return parameter(p, n); };
  return constants_of(v("E_L_mV"), v("V_reset_mV"), v("V_T_star_mV"), v("Delta_V_mV"), v("lambda_0_hz"),
                      v("C_m_pF"), v("g_L_nS"), v("E_ex_mV"), v("E_in_mV"), v("tau_syn_ex_ms"), v("tau_syn_in_ms"),
                      v("tau_arp_ms"), v("I_e_pA"), v("gsl_error_tol"), h);
}

Constants of_neuron(const NeuronParameters& values, uint64_t gid, double h) {
  auto v = [&](const char* n) { return values(n, gid); };
  return constants_of(v("E_L_mV"), v("V_reset_mV"), v("V_T_star_mV"), v("Delta_V_mV"), v("lambda_0_hz"),
                      v("C_m_pF"), v("g_L_nS"), v("E_ex_mV"), v("E_in_mV"), v("tau_syn_ex_ms"), v("tau_syn_in_ms"),
                      v("tau_arp_ms"), v("I_e_pA"), v("gsl_error_tol"), h);
}

// The adaptation, the population's: the elements' propagators exp(-h / tau) and jumps.
struct Adaptation {
  std::vector<double> stc_decay, stc_jump, sfa_decay, sfa_jump;
  Adaptation(const PopulationSpec& p, double h) {
    for (double tau : sequence(p, "tau_stc_ms")) stc_decay.push_back(std::exp(-h / tau));
    stc_jump = sequence(p, "q_stc_pA");
    for (double tau : sequence(p, "tau_sfa_ms")) sfa_decay.push_back(std::exp(-h / tau));
    sfa_jump = sequence(p, "q_sfa_mV");
  }
};

constexpr int kDim = 3;   // V, g_ex, g_in

// NEST's right-hand side, its divisions and order.
inline void derivative(const Constants& p, bool refractory, double i_stim, double stc, const double* y, double* f) {
  const double V = refractory ? p.reset : y[0];
  const double i_ex = y[1] * (V - p.E_ex);
  const double i_in = y[2] * (V - p.E_in);
  const double i_leak = p.g_L * V;
  f[0] = refractory ? 0.0 : (-i_leak + i_stim + p.i_e - i_ex - i_in - stc) / p.c_m;
  f[1] = -y[1] / p.tau_ex;
  f[2] = -y[2] / p.tau_in;
}

// One time step of neuron k; returns whether it spiked.
inline bool step(const Constants& p, const Adaptation& a, const Key& key, const StepInput& in, const NeuronColumns& s,
                 uint64_t k, double scale) {
  const size_t n_stc = a.stc_decay.size(), n_sfa = a.sfa_decay.size();
  double stc = 0.0, sfa = p.V_T_star;
  for (size_t i = 0; i < n_stc; ++i) {
    double& e = s.extra[kFixedColumns + i][k];
    stc += e;
    e = a.stc_decay[i] * e;
  }
  for (size_t i = 0; i < n_sfa; ++i) {
    double& e = s.extra[kFixedColumns + n_stc + i][k];
    sfa += e;
    e = a.sfa_decay[i] * e;
  }
  s.extra[2][k] = stc;
  s.extra[3][k] = sfa + p.E_L;
  int32_t& r = s.refractory[k];
  const bool refractory = r > 0;
  const double i_stim = in.current ? in.current[k] : 0.0;
  double y[kDim] = {s.V[k], s.c[k], s.extra[0][k]};
  rkf45::integrate<kDim>([&](const double* x, double* f) { derivative(p, refractory, i_stim, stc, x, f); }, p.h, y,
                         s.extra[1][k], rkf45::SolutionControl{p.tol, 0.0});
  s.V[k] = y[0];
  s.c[k] = y[1] + double(in.input[k]) * scale;
  s.extra[0][k] = y[2] - double(in.inhibitory[k]) * scale;   // the inhibitory row holds -|w|
  if (refractory) {
    --r;
    s.V[k] = p.reset;
    return false;
  }
  const double lambda = p.lambda_0 * std::exp((s.V[k] - sfa) / p.Delta_V);
  if (!(lambda > 0.0)) return false;
  const uint64_t t = uint64_t(in.step);
  const double u = Stream(key, s.gid[k], Purpose::firing, uint32_t(t >> 32), uint32_t(t)).uniform();
  if (!(u < -std::expm1(-lambda * p.h))) return false;
  for (size_t i = 0; i < n_stc; ++i) s.extra[kFixedColumns + i][k] += a.stc_jump[i];
  for (size_t i = 0; i < n_sfa; ++i) s.extra[kFixedColumns + n_stc + i][k] += a.sfa_jump[i];
  r = p.refractory;
  return true;
}

class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& s)
      : population_(of_population(spec, ctx.h)), adaptation_(spec, ctx.h), key_(ctx.key) {
    if (!parameters_vary(spec)) return;
    const NeuronParameters values(spec, ctx.key);
    for (uint64_t k = 0; k < s.n; ++k) table_.push_back(of_neuron(values, s.gid[k], ctx.h));
  }
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const double scale = in.input_scale;
    for (uint64_t k = 0; k < s.n; ++k)
      fired[k] = gif_cond_exp::step(table_.empty() ? population_ : table_[k], adaptation_, key_, in, s, k, scale);
  }

 private:
  Constants population_;
  Adaptation adaptation_;
  Key key_;
  std::vector<Constants> table_;      // per neuron of the range, where parameters vary
};

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                              const NeuronColumns& s) {
  return std::make_unique<Update>(spec, ctx, s);
}

NeuronModel::Layout layout(const PopulationSpec& p) {
  return {true, kFixedColumns + int(sequence(p, "tau_stc_ms").size() + sequence(p, "tau_sfa_ms").size())};
}

void check(const PopulationSpec& spec, double h) {
  require_parameters(spec, kPerNeuron);
  require_parameters(spec, kInitialParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  for (const char* name : kSequences) sequence(spec, name);
  const std::string where = "gif_cond_exp population '" + spec.name + "': ";
  if (sequence(spec, "tau_stc_ms").size() != sequence(spec, "q_stc_pA").size() ||
      sequence(spec, "tau_sfa_ms").size() != sequence(spec, "q_sfa_mV").size())
    throw std::invalid_argument(where + "tau_stc_ms and q_stc_pA, tau_sfa_ms and q_sfa_mV need as many values each");
  if (layout(spec).extra_columns > kMaxExtraColumns)
    throw std::invalid_argument(where + "at most " + std::to_string(kMaxExtraColumns - kFixedColumns) +
                                " time constants of tau_stc_ms and tau_sfa_ms together");
  const Constants p = of_population(spec, h);
  if (!(p.g_L > 0 && p.c_m > 0 && p.tau_ex > 0 && p.tau_in > 0 && p.Delta_V > 0 && p.tol > 0 && p.lambda_0 >= 0))
    throw std::invalid_argument(where + "needs positive g_L_nS, C_m_pF, tau_syn_ex_ms, tau_syn_in_ms, Delta_V_mV and "
                                "gsl_error_tol, and lambda_0_hz >= 0");
}

// Initial V: initial_potentials_absolute; the conductances and the adaptation start at 0, E_sfa
// at V_T_star.
void initialize(const PopulationSpec& spec, const Key& key, double, const NeuronColumns& s) {
  initial_potentials_absolute(spec, key, s);
  const double V_T_star = parameter(spec, "V_T_star_mV");
  for (uint64_t k = 0; k < s.n; ++k) s.extra[3][k] = V_T_star;
}

}  // namespace

// I_stc is recorded as the adaptation current w (pA).
extern const NeuronModel model{"gif_cond_exp", check, initialize, make_update,
                               /*split_input=*/true, /*extra_columns=*/kFixedColumns, layout,
                               /*takes_current=*/true, /*inhibitory_column=*/0,
                               /*parameters_changed=*/nullptr, /*adaptation_column=*/2};

}  // namespace ranvier::gif_cond_exp
