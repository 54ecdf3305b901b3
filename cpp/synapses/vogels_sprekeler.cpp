// NEST's vogels_sprekeler_synapse (Vogels et al. 2011, inhibitory plasticity; PyNN's
// Vogels2011Rule): symmetric STDP in absolute units, all-to-all pairing. Each target spike since
// the source's previous spike facilitates by eta K+ (the source's trace, time constant tau,
// decayed to it), the arriving spike by eta K- (the target's trace, its tau_minus), then every
// arriving spike depresses by alpha eta; |w| is kept in [0, |w_max|], with w_max's sign.
#include <cmath>

#include "synapses/segment_delivery.hpp"

namespace ranvier::vogels_sprekeler {

struct Parameters {
  double tau_ms, eta, alpha, w_max;
  explicit Parameters(const PlasticitySpec& p)
      : tau_ms(rule_parameter(p, "tau_ms")), eta(rule_parameter(p, "eta")), alpha(rule_parameter(p, "alpha")),
        w_max(rule_parameter(p, "w_max")) {}
};

struct Rule {
  static constexpr uint32_t kState = 0;
  static constexpr bool kSegmentTrace = true;
  Parameters p;
  StepDecay decay_plus;
  // NEST's facilitate_ and depress_, their operations in their order.
  double up(double w, double k) const {
    const double new_w = std::abs(w) + (p.eta * k);
    return std::copysign(new_w < std::abs(p.w_max) ? new_w : p.w_max, p.w_max);
  }
  double down(double w) const {
    const double new_w = std::abs(w) - (p.alpha * p.eta);
    return std::copysign(new_w > 0.0 ? new_w : 0.0, p.w_max);
  }
  template <class Target>
  double facilitated(double w, const Target& t, const PreSpike& pre, const double*) const {
    for (uint32_t j = 0; j < t.count(); ++j) w = up(w, pre.k_plus * t.pairing(j));
    return w;
  }
  template <class Target>
  double update(double w, const Target& t, const PreSpike& pre, double* state) const {
    return down(up(facilitated(w, t, pre, state), t.k_minus()));
  }
};

void check(const PlasticitySpec& spec, const std::string& where) {
  const Parameters p(spec);
  if (!(p.tau_ms > 0)) throw std::invalid_argument(where + "tau_ms must be positive");
  if (!(p.w_max != 0)) throw std::invalid_argument(where + "w_max must not be zero");
}

bool negative(const PlasticitySpec& spec) { return rule_parameter(spec, "w_max") < 0; }

// exp(-k h / tau) as NEST's synapse computes it: a division.
std::unique_ptr<PlasticDelivery> make(const PlasticitySpec& spec, const RuleBuild& b) {
  const Parameters p(spec);
  return compiled(Rule{p, StepDecay(b.h, p.tau_ms, true)});
}

extern const SynapseRule rule;
const SynapseRule rule{"vogels_sprekeler", true, check, make, 0, negative};

}  // namespace ranvier::vogels_sprekeler
