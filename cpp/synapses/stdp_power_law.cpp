// NEST's stdp_pl_synapse_hom (van Rossum, Gütig, Morrison): all-to-all pairing as stdp, in
// absolute units: facilitation w += lambda w^mu K+, depression w -= lambda alpha w K-, w >= 0.
#include <cmath>

#include "synapses/segment_delivery.hpp"

namespace ranvier::stdp_power_law {

struct Parameters {
  double tau_plus_ms, lambda, alpha, mu;
  explicit Parameters(const PlasticitySpec& p)
      : tau_plus_ms(rule_parameter(p, "tau_plus_ms")), lambda(rule_parameter(p, "lambda")),
        alpha(rule_parameter(p, "alpha")), mu(rule_parameter(p, "mu")) {}
};

struct Rule {
  static constexpr uint32_t kState = 0;
  static constexpr bool kSegmentTrace = true;
  Parameters p;
  StepDecay decay_plus;
  double up(double w, double k_plus) const { return w + (p.lambda * std::pow(w, p.mu) * k_plus); }
  double down(double w, double k_minus) const {
    const double new_w = w - (p.lambda * p.alpha * w * k_minus);
    return new_w > 0.0 ? new_w : 0.0;
  }
  template <class Target>
  double facilitated(double w, const Target& t, const PreSpike& pre, const double*) const {
    for (uint32_t j = 0; j < t.count(); ++j) w = up(w, pre.k_plus * t.pairing(j));
    return w;
  }
  template <class Target>
  double update(double w, const Target& t, const PreSpike& pre, double* state) const {
    return down(facilitated(w, t, pre, state), t.k_minus());
  }
};

void check(const PlasticitySpec& spec, const std::string& where) {
  if (!(Parameters(spec).tau_plus_ms > 0)) throw std::invalid_argument(where + "tau_plus_ms must be positive");
}

// exp(-k h / tau_plus) as NEST's power law computes it: a product with the inverse.
std::unique_ptr<PlasticDelivery> make(const PlasticitySpec& spec, const RuleBuild& b) {
  const Parameters p(spec);
  return compiled(Rule{p, StepDecay(b.h, p.tau_plus_ms, false)});
}

extern const SynapseRule rule;
const SynapseRule rule{"stdp_power_law", true, check, make, 0, nullptr};

}  // namespace ranvier::stdp_power_law
