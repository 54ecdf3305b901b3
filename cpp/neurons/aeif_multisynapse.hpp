// What NEST's two multisynapse adaptive exponential models share (aeif_cond_alpha_multisynapse.cpp,
// aeif_cond_beta_multisynapse.cpp): the membrane and adaptation of aeif_cond_exp,
//   C_m dV/dt = -g_L V + g_L Delta_T exp((V - V_th) / Delta_T) + sum_r g_r (E_rev[r] - V) - w + i_e,
//   tau_w dw/dt = a V - w,
// and R receptors, each a conductance of two stages,
//   d(dg_r)/dt = -dg_r / tau_rise[r],   dg_r/dt = dg_r - g_r / tau_decay[r],
// that a spike of weight w (nS, at least 0) onto receptor r starts by jumping dg_r by w jump[r]
// (the models' files give the time constants and the jump: alpha, tau_rise = tau_decay; beta,
// NEST's beta_normalization_factor). V relative to rest; E_rev_mV, one per receptor, says how
// many receptors the population has.
//
// Integrated as NEST 3.10 integrates them: rkf45.hpp's integrate_yp under gsl_error_tol, NEST's
// state order (V, w, then dg_r, g_r per receptor), the first trial step min(0.01 ms, h), the
// spike inside the time step (V >= V_peak, or V_th where Delta_T is 0: V to V_reset, w += b);
// then the refractory count down and the input.
//
// State (columns of NeuronColumns): V, c = g of receptor 1 (nS, traced), extra[0] = g of
// receptor 2 (recorded as c_in), extra[1] = the integrator's next trial step, extra[2] = w (pA),
// extra[3] = dg of receptor 1, extra[4] = dg of receptor 2, then g and dg of receptors 3, 4, ...
// (extra[5], extra[6], ...; recorded as c3, c4, ...), refractory. Scalar: the number of trial
// steps varies per neuron.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/rkf45.hpp"

namespace ranvier::aeif_multisynapse {

inline constexpr const char* kParameters[] = {"E_L_mV",     "V_th_mV", "V_reset_mV",    "V_peak_mV", "C_m_pF",
                                              "g_L_nS",     "Delta_T_mV", "tau_w_ms",   "a_nS",      "b_pA",
                                              "tau_arp_ms", "I_e_pA",  "gsl_error_tol", "w0_pA",     "V0_mean_mV",
                                              "V0_sd_mV",   nullptr};
inline constexpr const char* kPerNeuron[] = {nullptr};
inline constexpr int kWColumn = 2, kTrialColumn = 1;
// Receptors 1..7 fit the state columns (5 + 2 (R - 2) <= kMaxExtraColumns).
inline constexpr int kMostReceptors = std::min(kMaxReceptors, (kMaxExtraColumns - 5) / 2 + 2);

inline int receptors_of(const PopulationSpec& p) { return int(sequence(p, "E_rev_mV").size()); }

// Each receptor's time constants and jump of dg per nS of input (the model's file fills them).
struct Receptors {
  double tau_rise[kMaxReceptors], tau_decay[kMaxReceptors], jump[kMaxReceptors];
};

struct Constants {
  double g_L, c_m, i_e, theta, reset, peak, delta_T, tau_w, a, b, tolerance, h, spike_at;
  int32_t refractory;
  double E_rev[kMaxReceptors];
  Receptors receptors;
  Constants(const PopulationSpec& spec, double h_ms, const Receptors& r) : receptors(r) {
    const double E_L = parameter(spec, "E_L_mV");
    g_L = parameter(spec, "g_L_nS");
    c_m = parameter(spec, "C_m_pF");
    i_e = parameter(spec, "I_e_pA");
    theta = parameter(spec, "V_th_mV") - E_L;
    reset = parameter(spec, "V_reset_mV") - E_L;
    peak = parameter(spec, "V_peak_mV") - E_L;
    delta_T = parameter(spec, "Delta_T_mV");
    tau_w = parameter(spec, "tau_w_ms");
    a = parameter(spec, "a_nS");
    b = parameter(spec, "b_pA");
    tolerance = parameter(spec, "gsl_error_tol");
    h = h_ms;
    spike_at = delta_T > 0 ? peak : theta;          // NEST's V_.V_peak
    refractory = int32_t(steps_of(parameter(spec, "tau_arp_ms"), h_ms));
    const auto& e = sequence(spec, "E_rev_mV");
    for (size_t k = 0; k < e.size(); ++k) E_rev[k] = e[k] - E_L;
  }
};

// The right-hand side (NEST's *_multisynapse_dynamics, its order of operations), y = (V, w, dg_1,
// g_1, dg_2, g_2, ...).
template <int R>
inline void derivative(const Constants& p, bool refractory, double i_stim, const double* y, double* f) {
  const double v = refractory ? p.reset : std::min(y[0], p.peak);
  const double w = y[1];
  double i_syn = 0.0;
  for (int r = 0; r < R; ++r) i_syn += y[3 + 2 * r] * (p.E_rev[r] - v);
  const double i_spike = p.delta_T == 0. ? 0 : (p.delta_T * p.g_L * std::exp((v - p.theta) / p.delta_T));
  f[0] = refractory ? 0 : (-p.g_L * v + i_spike + i_syn - w + p.i_e + i_stim) / p.c_m;
  f[1] = (p.a * v - w) / p.tau_w;
  for (int r = 0; r < R; ++r) {
    f[2 + 2 * r] = -y[2 + 2 * r] / p.receptors.tau_rise[r];
    f[3 + 2 * r] = y[2 + 2 * r] - y[3 + 2 * r] / p.receptors.tau_decay[r];
  }
}

template <int R>
class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx, const Receptors& r) : p_(spec, ctx.h, r) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    constexpr int N = 2 + 2 * R;
    double* g[R];
    double* dg[R];
    const int32_t* input[R];
    for (int r = 0; r < R; ++r) {
      g[r] = r == 0 ? s.c : r == 1 ? s.extra[0] : s.extra[5 + 2 * (r - 2)];
      dg[r] = r < 2 ? s.extra[3 + r] : s.extra[6 + 2 * (r - 2)];
      input[r] = in.receptor(r);
    }
    const double scale = in.input_scale;
    for (uint64_t k = 0; k < s.n; ++k) {
      int32_t& refractory = s.refractory[k];
      double& w = s.extra[kWColumn][k];
      const double i_stim = in.current ? in.current[k] : 0.0;
      double y[N];
      y[0] = s.V[k];
      y[1] = w;
      for (int r = 0; r < R; ++r) {
        y[2 + 2 * r] = dg[r][k];
        y[3 + 2 * r] = g[r][k];
      }
      bool spiked = false;
      rkf45::integrate_yp<N>([&](const double* x, double* f) { derivative<R>(p_, refractory > 0, i_stim, x, f); },
                             [&](double* x) {
                               if (refractory > 0) {
                                 x[0] = p_.reset;
                               } else if (x[0] >= p_.spike_at) {
                                 x[0] = p_.reset;
                                 x[1] += p_.b;
                                 refractory = p_.refractory > 0 ? p_.refractory + 1 : 0;
                                 spiked = true;
                               }
                             },
                             p_.tolerance, p_.h, y, s.extra[kTrialColumn][k]);
      if (refractory > 0) --refractory;
      s.V[k] = y[0];
      w = y[1];
      for (int r = 0; r < R; ++r) {
        dg[r][k] = y[2 + 2 * r] + double(input[r][k]) * scale * p_.receptors.jump[r];
        g[r][k] = y[3 + 2 * r];
      }
      fired[k] = spiked;
    }
  }

 private:
  Constants p_;
};

template <int R = 1>
std::unique_ptr<PopulationUpdate> make_update(int receptors, const PopulationSpec& spec, const ModelContext& ctx,
                                              const Receptors& r) {
  if (receptors == R) return std::make_unique<Update<R>>(spec, ctx, r);
  if constexpr (R < kMostReceptors) return make_update<R + 1>(receptors, spec, ctx, r);
  throw std::logic_error("aeif multisynapse model: receptors out of range");
}

// The checks of the membrane and of the receptors' count (`model` names the population's model;
// the model's file checks its time constants).
inline void check(const PopulationSpec& spec, double h, const char* model) {
  require_parameters(spec, kParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  const std::string where = std::string(model) + " population '" + spec.name + "'";
  const int R = receptors_of(spec);
  if (R < 1 || R > kMostReceptors)
    throw std::invalid_argument(where + " needs 1 to " + std::to_string(kMostReceptors) + " receptors (E_rev_mV)");
  const double V_th = parameter(spec, "V_th_mV"), V_peak = parameter(spec, "V_peak_mV"),
               V_reset = parameter(spec, "V_reset_mV"), delta_T = parameter(spec, "Delta_T_mV");
  if (!(parameter(spec, "g_L_nS") > 0 && parameter(spec, "C_m_pF") > 0 && parameter(spec, "tau_w_ms") > 0))
    throw std::invalid_argument(where + " needs positive g_L_nS, C_m_pF and tau_w_ms");
  if (!(parameter(spec, "gsl_error_tol") > 0)) throw std::invalid_argument(where + " needs a positive gsl_error_tol");
  if (!(delta_T >= 0)) throw std::invalid_argument(where + " needs Delta_T_mV >= 0");
  if (!(V_peak >= V_th)) throw std::invalid_argument(where + " needs V_peak_mV >= V_th_mV");
  if (!(V_reset < V_peak)) throw std::invalid_argument(where + " needs V_reset_mV < V_peak_mV");
  if (steps_of(parameter(spec, "tau_arp_ms"), h) >= std::numeric_limits<int32_t>::max())
    throw std::invalid_argument(where + ": tau_arp_ms out of the refractory counter's range");
  if (delta_T > 0 && (V_peak - V_th) / delta_T >= std::log(std::numeric_limits<double>::max() / 1e20))
    throw std::invalid_argument(where + ": (V_peak_mV - V_th_mV) / Delta_T_mV overflows exp() at a spike; raise "
                                "Delta_T_mV or lower V_peak_mV");
}

inline NeuronModel::Layout layout(const PopulationSpec& spec) {
  const int R = receptors_of(spec);
  return {false, 5 + 2 * std::max(R - 2, 0), R};
}

// V by initial_potentials_absolute, w = w0_pA, the conductances 0, the first trial step NEST's
// min(0.01 ms, h).
inline void initialize(const PopulationSpec& spec, const Key& key, double h, const NeuronColumns& s) {
  initial_potentials_absolute(spec, key, s);
  const double w0 = parameter(spec, "w0_pA");
  for (uint64_t k = 0; k < s.n; ++k) {
    s.extra[kWColumn][k] = w0;
    s.extra[kTrialColumn][k] = std::min(0.01, h);
  }
}

// Receptor r's conductance (r >= 2, 0-based) for the state recorder: extra[5 + 2 (r - 2)].
inline int receptor_column(const PopulationSpec& spec, int r) { return r < receptors_of(spec) ? 5 + 2 * (r - 2) : -1; }

}  // namespace ranvier::aeif_multisynapse
