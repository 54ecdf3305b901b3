// NEST's stdp_triplet_synapse (Pfister & Gerstner 2006), all-to-all pairing, in absolute units
// with weights of w_max's sign (|w| in [0, |w_max|]):
//   facilitation by each target spike since the source's previous one:
//     |w| += K+ (A_plus + A_plus_triplet y), y the target's triplet trace just before that spike;
//   depression at the pre-synaptic spike: |w| -= K- (A_minus + A_minus_triplet x), x the
//     synapse's triplet pre-synaptic trace (tau_plus_triplet) just before this spike.
// K+ is the segment's trace (tau_plus), K- the target's (tau_minus), y its triplet trace
// (PostHistory::TripletTrace, tau_minus_triplet of the target population); x is the synapse's
// state (one double).
#include <cmath>

#include "synapses/segment_delivery.hpp"
#include "synapses/stdp_weight.hpp"

namespace ranvier::stdp_triplet {

struct Parameters {
  double tau_plus_ms, tau_plus_triplet_ms, a_plus, a_minus, a_plus_triplet, a_minus_triplet, w_max;
  explicit Parameters(const PlasticitySpec& p)
      : tau_plus_ms(rule_parameter(p, "tau_plus_ms")), tau_plus_triplet_ms(rule_parameter(p, "tau_plus_triplet_ms")),
        a_plus(rule_parameter(p, "Aplus")), a_minus(rule_parameter(p, "Aminus")),
        a_plus_triplet(rule_parameter(p, "Aplus_triplet")), a_minus_triplet(rule_parameter(p, "Aminus_triplet")),
        w_max(rule_parameter(p, "w_max")) {}
};

struct Rule {
  static constexpr uint32_t kState = 1;      // the triplet pre-synaptic trace, just after the last spike
  static constexpr bool kSegmentTrace = true;
  static constexpr bool kTripletTrace = true;
  Parameters p;
  StepDecay decay_plus;                      // exp(-k h / tau_plus), a division as NEST's
  StepDecay decay_triplet;                   // exp(-k h / tau_plus_triplet)
  double up(double w, double k_plus, double y) const {
    const double new_w = std::abs(w) + k_plus * (p.a_plus + p.a_plus_triplet * y);
    return std::copysign(new_w < std::abs(p.w_max) ? new_w : p.w_max, p.w_max);
  }
  double down(double w, double k_minus, double x) const {
    const double new_w = std::abs(w) - k_minus * (p.a_minus + p.a_minus_triplet * x);
    return std::copysign(new_w > 0.0 ? new_w : 0.0, p.w_max);
  }
  template <class Target>
  double facilitated(double w, const Target& t, const PreSpike& pre, const double*) const {
    // The triplet trace just before the spike: the one after it less the spike's 1.
    for (uint32_t j = 0; j < t.count(); ++j) w = up(w, pre.k_plus * t.pairing(j), t.triplet(j) - 1.0);
    return w;
  }
  template <class Target>
  double update(double w, const Target& t, const PreSpike& pre, double* state) const {
    w = facilitated(w, t, pre, state);
    const double x = state[0] * decay_triplet(pre.since_last);
    state[0] = x + 1.0;
    return down(w, t.k_minus(), x);
  }
};

void check(const PlasticitySpec& spec, const std::string& where) {
  const Parameters p(spec);
  if (!(p.tau_plus_ms > 0)) throw std::invalid_argument(where + "tau_plus_ms must be positive");
  if (!(p.tau_plus_triplet_ms > 0)) throw std::invalid_argument(where + "tau_plus_triplet_ms must be positive");
  if (!(p.w_max != 0)) throw std::invalid_argument(where + "w_max must not be zero");
}

std::unique_ptr<PlasticDelivery> make(const PlasticitySpec& spec, const RuleBuild& b) {
  const Parameters p(spec);
  return compiled(Rule{p, StepDecay(b.h, p.tau_plus_ms, true), StepDecay(b.h, p.tau_plus_triplet_ms, true)});
}

extern const SynapseRule rule;
// Weights share w_max's sign, as in the stdp_synapse family.
const SynapseRule rule{"stdp_triplet", true, check, make, 1, stdp_family::negative, true};

}  // namespace ranvier::stdp_triplet
