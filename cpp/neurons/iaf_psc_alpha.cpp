// Leaky integrate-and-fire with alpha-shaped post-synaptic currents (NEST's iaf_psc_alpha):
//   tau_m dV/dt = -V + tau_m (I_ex + I_in + i_e) / C_m,
//   I_x(t) = w e / tau_x * t * exp(-t / tau_x) for a spike of weight w (pA) at t = 0,
// V relative to rest. Each current is the pair (dI_x, I_x): dI_x' = -dI_x / tau_x, I_x' =
// dI_x - I_x / tau_x. Positive weights are excitatory (tau_syn_ex), negative inhibitory
// (tau_syn_in): the input is split (NeuronModel::split_input). Integrated exactly on the time
// grid in NEST's order, with NEST's propagators (P11 = P22 = exp(-h/tau_x), P21 = h P11, P31,
// P32 by the same stability rule) so the trajectory matches NEST's to rounding.
//
// Scalar kernel only: a vector kernel would do these operations in the same order, as
// psc_exp's do (not written yet).
#include <cmath>
#include <stdexcept>
#include <vector>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::iaf_psc_alpha {

// The population's parameters by the front end's names (read once, when the engine is built;
// potentials absolute there, taken relative to E_L); or one neuron's, where parameters vary.
struct Parameters {
  double tau_m_ms, tau_syn_ex_ms, tau_syn_in_ms, c_m_pF, i_e_pA, theta_mV, reset_mV;
  int64_t refractory_steps;
  static Parameters of(const PopulationSpec& p, double h) {
    const double E_L = parameter(p, "E_L_mV");
    return {parameter(p, "tau_m_ms"),      parameter(p, "tau_syn_ex_ms"),  parameter(p, "tau_syn_in_ms"),
            parameter(p, "C_m_pF"),        parameter(p, "I_e_pA"),         parameter(p, "V_th_mV") - E_L,
            parameter(p, "V_reset_mV") - E_L, steps_of(parameter(p, "tau_arp_ms"), h)};
  }
  static Parameters of_neuron(const NeuronParameters& v, uint64_t gid, double h) {
    const double E_L = v("E_L_mV", gid);
    return {v("tau_m_ms", gid),      v("tau_syn_ex_ms", gid),     v("tau_syn_in_ms", gid),
            v("C_m_pF", gid),        v("I_e_pA", gid),            v("V_th_mV", gid) - E_L,
            v("V_reset_mV", gid) - E_L, steps_of(v("tau_arp_ms", gid), h)};
  }
};

// The parameters that may vary per neuron (all but those of the initial V).
constexpr const char* kPerNeuron[] = {"E_L_mV",        "V_th_mV",    "V_reset_mV", "C_m_pF", "tau_m_ms",
                                      "tau_syn_ex_ms", "tau_syn_in_ms", "tau_arp_ms", "I_e_pA", nullptr};
// Those of the initial V, besides.
constexpr const char* kInitialParameters[] = {"V0_mean_mV", "V0_sd_mV", nullptr};

// State (columns of NeuronColumns): V, c = I_ex (traced), extra[0] = dI_ex, extra[1] = I_in,
// extra[2] = dI_in, refractory. Initial V: initial_potentials_absolute.

// The propagators of one synapse type over h: P11 (dI -> dI, = P22: I -> I), P21 (dI -> I),
// P31 and P32 (dI and I -> V), and the jump of dI per pA of input (e / tau).
struct SynapsePropagators {
  double P11, P21, P31, P32, jump;
  SynapsePropagators(double tau_syn, double tau_m, double c_m, double h) {
    P11 = std::exp(-h / tau_syn);
    P21 = h * P11;
    jump = M_E / tau_syn;
    // P32 = gamma exp(-h/tau_syn) expm1(h (1/tau_syn - 1/tau_m)), gamma = beta / C_m with
    // beta = tau_syn tau_m / (tau_m - tau_syn); where that is not a positive normal number
    // (tau_syn near tau_m) its limit h / C_m exp(-h/tau_m). P31 likewise, regular when h is
    // above 1e-7 tau_m^2 / |tau_m - tau_syn| (NEST's rule, so the same branch is taken).
    const double beta = tau_syn * tau_m / (tau_m - tau_syn);
    const double gamma = beta / c_m;
    const double exp_syn = std::exp(-h * (1 / tau_syn));
    const double expm1_diff = std::expm1(h * ((tau_m - tau_syn) / (tau_syn * tau_m)));
    const double p32 = gamma * exp_syn * expm1_diff;
    const bool regular32 = std::isnormal(p32) && p32 > 0;
    const double exp_m = std::exp(-h * (1 / tau_m));
    P32 = regular32 ? p32 : h * (1 / c_m) * exp_m;
    const double h_min_regular = 1e-7 * tau_m * tau_m / std::abs(tau_m - tau_syn);
    P31 = h > h_min_regular ? gamma * exp_syn * (beta * expm1_diff - h) : 0.5 * h * h * (1 / c_m) * exp_m;
  }
};

struct Propagators {
  double expm1_m, P30, theta, reset, i_e;
  SynapsePropagators ex, in;
  int32_t refractory;
  Propagators(const Parameters& p, double h)
      : expm1_m(std::expm1(-h / p.tau_m_ms)),
        P30(-p.tau_m_ms / p.c_m_pF * std::expm1(-h / p.tau_m_ms)),
        theta(p.theta_mV),
        reset(p.reset_mV),
        i_e(p.i_e_pA),
        ex(p.tau_syn_ex_ms, p.tau_m_ms, p.c_m_pF, h),
        in(p.tau_syn_in_ms, p.tau_m_ms, p.c_m_pF, h),
        refractory(int32_t(p.refractory_steps)) {}
};

// One step, NEST's order: V integrates over h from the currents at the step's start unless
// refractory; the currents advance and take the step's input; then the threshold.
// `current`: the injected current of the step (pA; NEST's y0, the stimulus current).
inline bool step(const Propagators& p, double input_ex, double input_in, double& V, double& I_ex, double& dI_ex,
                 double& I_in, double& dI_in, int32_t& r, double current = 0.0) {
  if (r == 0)
    V = p.P30 * (current + p.i_e) + p.ex.P31 * dI_ex + p.ex.P32 * I_ex + p.in.P31 * dI_in + p.in.P32 * I_in +
        p.expm1_m * V + V;
  else
    --r;
  I_ex = p.ex.P21 * dI_ex + p.ex.P11 * I_ex;
  dI_ex = dI_ex * p.ex.P11 + p.ex.jump * input_ex;
  I_in = p.in.P21 * dI_in + p.in.P11 * I_in;
  dI_in = dI_in * p.in.P11 + p.in.jump * input_in;
  if (V < p.theta) return false;
  r = p.refractory;
  V = p.reset;
  return true;
}

namespace {

// The homogeneous update: one set of propagators for the range.
class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx) : p_(Parameters::of(spec, ctx.h), ctx.h) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const double scale = in.input_scale;
    const double* current = in.current;
    for (uint64_t k = 0; k < s.n; ++k)
      fired[k] = iaf_psc_alpha::step(p_, double(in.input[k]) * scale, double(in.inhibitory[k]) * scale, s.V[k],
                                     s.c[k], s.extra[0][k], s.extra[1][k], s.extra[2][k], s.refractory[k],
                                     current ? current[k] : 0.0);
  }

 private:
  Propagators p_;
};

// Parameters that vary per neuron: one set of propagators per neuron of the range, the same step.
class PerNeuronUpdate final : public PopulationUpdate {
 public:
  PerNeuronUpdate(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& s) {
    const NeuronParameters values(spec, ctx.key);
    table_.reserve(s.n);
    for (uint64_t k = 0; k < s.n; ++k) table_.emplace_back(Parameters::of_neuron(values, s.gid[k], ctx.h), ctx.h);
  }
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const double scale = in.input_scale;
    const double* current = in.current;
    for (uint64_t k = 0; k < s.n; ++k)
      fired[k] = iaf_psc_alpha::step(table_[k], double(in.input[k]) * scale, double(in.inhibitory[k]) * scale,
                                     s.V[k], s.c[k], s.extra[0][k], s.extra[1][k], s.extra[2][k], s.refractory[k],
                                     current ? current[k] : 0.0);
  }

 private:
  std::vector<Propagators> table_;
};

void check(const PopulationSpec& spec, double h) {
  require_parameters(spec, kPerNeuron);
  require_parameters(spec, kInitialParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  const Parameters p = Parameters::of(spec, h);
  if (!(p.tau_m_ms > 0 && p.tau_syn_ex_ms > 0 && p.tau_syn_in_ms > 0 && p.c_m_pF > 0))
    throw std::invalid_argument("iaf_psc_alpha population '" + spec.name +
                                "' needs positive tau_m_ms, tau_syn_ex_ms, tau_syn_in_ms and C_m_pF");
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
extern const NeuronModel model{"iaf_psc_alpha", check, initialize, make_update,
                        /*split_input=*/true, /*extra_columns=*/3, /*layout=*/nullptr, /*takes_current=*/true,
                        /*inhibitory_column=*/1};

}  // namespace ranvier::iaf_psc_alpha
