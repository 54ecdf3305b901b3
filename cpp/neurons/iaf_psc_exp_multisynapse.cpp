// Leaky integrate-and-fire with one exponential post-synaptic current per receptor (NEST's
// iaf_psc_exp_multisynapse):
//   tau_m dV/dt = -V + tau_m (sum_r I_r + i_e) / C_m,   dI_r/dt = -I_r / tau_syn[r],
// V relative to rest. The population has one receptor per entry of its tau_syn_ms sequence
// (NeuronModel::Layout::receptors); each projection names the receptor its input (pA, either
// sign) jumps. Integrated exactly on the time grid in NEST 3.10's order: V = V P22 + (i_e + I_stim)
// P20, then V += P21[r] I_r for each receptor in turn (unless refractory), each I_r decays and
// takes the step's input, then the threshold.
//
// State (columns of NeuronColumns): V, c = I of receptor 1 (pA, traced), extra[r - 1] = I of
// receptor r + 1 (recorded as c_in for receptor 2, c3, c4, ... for the others), refractory. Scalar: the receptors' loop.
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"
#include "neurons/psc_exp.hpp"

namespace ranvier::iaf_psc_exp_multisynapse {

namespace {

constexpr const char* kParameters[] = {"E_L_mV",   "V_th_mV", "V_reset_mV", "C_m_pF",   "tau_m_ms",
                                       "tau_arp_ms", "I_e_pA", "V0_mean_mV", "V0_sd_mV", nullptr};
constexpr const char* kPerNeuron[] = {nullptr};

int receptors_of(const PopulationSpec& p) { return int(sequence(p, "tau_syn_ms").size()); }

// The propagators of the population (NEST's pre_run_hook).
struct Propagators {
  double P22, P20, i_e, theta, reset;
  int32_t refractory;
  int receptors;
  double P11[kMaxReceptors], P21[kMaxReceptors];
  Propagators(const PopulationSpec& spec, double h) {
    const double E_L = parameter(spec, "E_L_mV"), tau_m = parameter(spec, "tau_m_ms"), c_m = parameter(spec, "C_m_pF");
    P22 = std::exp(-h / tau_m);
    P20 = tau_m / c_m * (1.0 - P22);
    i_e = parameter(spec, "I_e_pA");
    theta = parameter(spec, "V_th_mV") - E_L;
    reset = parameter(spec, "V_reset_mV") - E_L;
    refractory = int32_t(steps_of(parameter(spec, "tau_arp_ms"), h));
    const auto& tau = sequence(spec, "tau_syn_ms");
    receptors = int(tau.size());
    for (int r = 0; r < receptors; ++r) {
      P11[r] = std::exp(-h / tau[r]);
      P21[r] = psc_exp::p21(tau[r], tau_m, c_m, h);
    }
  }
};

class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx) : p_(spec, ctx.h) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const int R = p_.receptors;
    double* I[kMaxReceptors];
    const int32_t* input[kMaxReceptors];
    I[0] = s.c;
    for (int r = 1; r < R; ++r) I[r] = s.extra[r - 1];
    for (int r = 0; r < R; ++r) input[r] = in.receptor(r);
    const double scale = in.input_scale;
    for (uint64_t k = 0; k < s.n; ++k) {
      int32_t& refractory = s.refractory[k];
      double V = s.V[k];
      if (refractory == 0) {
        V = V * p_.P22 + (p_.i_e + (in.current ? in.current[k] : 0.0)) * p_.P20;
        for (int r = 0; r < R; ++r) V += p_.P21[r] * I[r][k];
      } else {
        --refractory;
      }
      for (int r = 0; r < R; ++r) I[r][k] = I[r][k] * p_.P11[r] + double(input[r][k]) * scale;
      const bool spike = V >= p_.theta;
      if (spike) {
        refractory = p_.refractory;
        V = p_.reset;
      }
      s.V[k] = V;
      fired[k] = spike;
    }
  }

 private:
  Propagators p_;
};

void check(const PopulationSpec& spec, double) {
  require_parameters(spec, kParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  const std::string where = "iaf_psc_exp_multisynapse population '" + spec.name + "'";
  const auto& tau = sequence(spec, "tau_syn_ms");
  if (tau.empty() || tau.size() > size_t(kMaxReceptors) || tau.size() > size_t(kMaxExtraColumns) + 1)
    throw std::invalid_argument(where + " needs 1 to " + std::to_string(kMaxReceptors) + " receptors (tau_syn_ms)");
  for (double t : tau)
    if (!(t > 0)) throw std::invalid_argument(where + " needs positive tau_syn_ms");
  if (!(parameter(spec, "tau_m_ms") > 0 && parameter(spec, "C_m_pF") > 0))
    throw std::invalid_argument(where + " needs positive tau_m_ms and C_m_pF");
  if (!(parameter(spec, "V_reset_mV") < parameter(spec, "V_th_mV")))
    throw std::invalid_argument(where + " needs V_reset_mV < V_th_mV");
}

NeuronModel::Layout layout(const PopulationSpec& spec) {
  const int R = receptors_of(spec);
  return {false, R > 1 ? R - 1 : 0, R};
}

void initialize(const PopulationSpec& spec, const Key& key, double, const NeuronColumns& s) {
  initial_potentials_absolute(spec, key, s);
}

// Receptor r's current (r >= 2, 0-based) for the state recorder: extra[r - 1].
int receptor_column(const PopulationSpec& spec, int r) { return r < receptors_of(spec) ? r - 1 : -1; }

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns&) {
  return std::make_unique<Update>(spec, ctx);
}

}  // namespace

extern const NeuronModel model{"iaf_psc_exp_multisynapse", check, initialize, make_update, /*split_input=*/false,
                               /*extra_columns=*/0, layout, /*takes_current=*/true, /*inhibitory_column=*/0,
                               /*parameters_changed=*/nullptr, /*adaptation_column=*/-1, receptor_column};

}  // namespace ranvier::iaf_psc_exp_multisynapse
