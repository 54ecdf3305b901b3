// Adaptive exponential integrate-and-fire with one beta-shaped conductance per receptor (NEST's
// aeif_cond_beta_multisynapse): aeif_multisynapse.hpp's membrane and receptors with the rise and
// decay times tau_rise_ms[r] <= tau_decay_ms[r], so a spike of weight w (nS, at least 0) onto
// receptor r gives a conductance that rises and decays as exp(-t / tau_decay) - exp(-t / tau_rise),
// normalised to peak at w (NEST's beta_normalization_factor; the alpha function's e / tau where
// the two times are within rounding of each other). One receptor per entry of tau_rise_ms,
// tau_decay_ms and E_rev_mV. Integrated, ordered and laid out as aeif_multisynapse.hpp says.
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "base/spec.hpp"
#include "neurons/aeif_multisynapse.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::aeif_cond_beta_multisynapse {

namespace {

// NEST's beta_normalization_factor: the jump of dg per nS that makes the conductance peak at 1 nS.
double normalisation(double tau_rise, double tau_decay) {
  const double difference = tau_decay - tau_rise;
  double peak = 0;
  if (std::abs(difference) > std::numeric_limits<double>::epsilon()) {
    const double t_peak = tau_decay * tau_rise * std::log(tau_decay / tau_rise) / difference;
    peak = std::exp(-t_peak / tau_decay) - std::exp(-t_peak / tau_rise);
  }
  if (std::abs(peak) < std::numeric_limits<double>::epsilon()) return 1. * M_E / tau_decay;
  return (1. / tau_rise - 1. / tau_decay) / peak;
}

aeif_multisynapse::Receptors receptors(const PopulationSpec& spec) {
  aeif_multisynapse::Receptors r{};
  const auto& rise = sequence(spec, "tau_rise_ms");
  const auto& decay = sequence(spec, "tau_decay_ms");
  for (size_t k = 0; k < rise.size() && k < decay.size() && k < size_t(kMaxReceptors); ++k) {
    r.tau_rise[k] = rise[k];
    r.tau_decay[k] = decay[k];
    r.jump[k] = normalisation(rise[k], decay[k]);
  }
  return r;
}

void check(const PopulationSpec& spec, double h) {
  aeif_multisynapse::check(spec, h, "aeif_cond_beta_multisynapse");
  const std::string where = "aeif_cond_beta_multisynapse population '" + spec.name + "'";
  const auto& rise = sequence(spec, "tau_rise_ms");
  const auto& decay = sequence(spec, "tau_decay_ms");
  const size_t R = sequence(spec, "E_rev_mV").size();
  if (rise.size() != R || decay.size() != R)
    throw std::invalid_argument(where + ": tau_rise_ms, tau_decay_ms and E_rev_mV must have the same length (one "
                                "per receptor)");
  for (size_t k = 0; k < R; ++k) {
    if (!(rise[k] > 0 && decay[k] > 0)) throw std::invalid_argument(where + " needs positive tau_rise_ms and tau_decay_ms");
    if (decay[k] < rise[k]) throw std::invalid_argument(where + " needs tau_rise_ms <= tau_decay_ms for every receptor");
  }
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns&) {
  return aeif_multisynapse::make_update(aeif_multisynapse::receptors_of(spec), spec, ctx, receptors(spec));
}

}  // namespace

extern const NeuronModel model{"aeif_cond_beta_multisynapse", check, aeif_multisynapse::initialize, make_update,
                               /*split_input=*/false, /*extra_columns=*/5, aeif_multisynapse::layout,
                               /*takes_current=*/true, /*inhibitory_column=*/0, /*parameters_changed=*/nullptr,
                               /*adaptation_column=*/aeif_multisynapse::kWColumn, aeif_multisynapse::receptor_column};

}  // namespace ranvier::aeif_cond_beta_multisynapse
