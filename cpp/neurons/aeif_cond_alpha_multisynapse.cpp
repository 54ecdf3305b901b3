// Adaptive exponential integrate-and-fire with one alpha-shaped conductance per receptor (NEST's
// aeif_cond_alpha_multisynapse): aeif_multisynapse.hpp's membrane and receptors with
// tau_rise = tau_decay = tau_syn_ms[r], so a spike of weight w (nS, at least 0) onto receptor r
// gives g_r(t) = w e / tau t exp(-t / tau), peak w at t = tau (dg_r jumps by w e / tau, NEST's
// g0_). One receptor per entry of tau_syn_ms and E_rev_mV. Integrated, ordered and laid out in
// the state columns as aeif_multisynapse.hpp says.
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "base/spec.hpp"
#include "neurons/aeif_multisynapse.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::aeif_cond_alpha_multisynapse {

namespace {

aeif_multisynapse::Receptors receptors(const PopulationSpec& spec) {
  aeif_multisynapse::Receptors r{};
  const auto& tau = sequence(spec, "tau_syn_ms");
  for (size_t k = 0; k < tau.size() && k < size_t(kMaxReceptors); ++k) {
    r.tau_rise[k] = r.tau_decay[k] = tau[k];
    r.jump[k] = 1.0 * M_E / tau[k];
  }
  return r;
}

void check(const PopulationSpec& spec, double h) {
  aeif_multisynapse::check(spec, h, "aeif_cond_alpha_multisynapse");
  const std::string where = "aeif_cond_alpha_multisynapse population '" + spec.name + "'";
  const auto& tau = sequence(spec, "tau_syn_ms");
  if (tau.size() != sequence(spec, "E_rev_mV").size())
    throw std::invalid_argument(where + ": tau_syn_ms and E_rev_mV must have the same length (one per receptor)");
  for (double t : tau)
    if (!(t > 0)) throw std::invalid_argument(where + " needs positive tau_syn_ms");
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns&) {
  return aeif_multisynapse::make_update(aeif_multisynapse::receptors_of(spec), spec, ctx, receptors(spec));
}

}  // namespace

extern const NeuronModel model{"aeif_cond_alpha_multisynapse", check, aeif_multisynapse::initialize, make_update,
                               /*split_input=*/false, /*extra_columns=*/5, aeif_multisynapse::layout,
                               /*takes_current=*/true, /*inhibitory_column=*/0, /*parameters_changed=*/nullptr,
                               /*adaptation_column=*/aeif_multisynapse::kWColumn, aeif_multisynapse::receptor_column};

}  // namespace ranvier::aeif_cond_alpha_multisynapse
