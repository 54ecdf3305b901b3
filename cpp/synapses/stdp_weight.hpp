// What NEST's stdp_synapse family shares (stdp_synapse, stdp_nn_symm_synapse,
// stdp_nn_pre_centered_synapse, stdp_nn_restr_synapse): the parameters and the weight dependence
// (NEST's facilitate_ / depress_), in units of w_max:
//   facilitation w/w_max += lambda (1 - w/w_max)^mu_plus K+, depression
//   w/w_max -= alpha lambda (w/w_max)^mu_minus K-, clipped to [0, 1].
// The shape is a template parameter, so the common cases compile to their own loops: mu 0
// (additive) and 1 (multiplicative) take no pow (pow(x, 0) = 1 and pow(x, 1) = x exactly, so no
// bit changes), any other mu takes pow as NEST does.
#pragma once
#include <cmath>
#include <memory>
#include <string>

#include "core/plasticity.hpp"
#include "synapses/segment_delivery.hpp"
#include "synapses/synapse_rule.hpp"

namespace ranvier::stdp_family {

struct Parameters {
  double tau_plus_ms, lambda, alpha, mu_plus, mu_minus, w_max;
  explicit Parameters(const PlasticitySpec& p)
      : tau_plus_ms(rule_parameter(p, "tau_plus_ms")), lambda(rule_parameter(p, "lambda")),
        alpha(rule_parameter(p, "alpha")), mu_plus(rule_parameter(p, "mu_plus")),
        mu_minus(rule_parameter(p, "mu_minus")), w_max(rule_parameter(p, "w_max")) {}
};

enum class Shape { additive, multiplicative, general };

template <Shape S>
struct Weight {
  Parameters p;
  double up(double w, double k_plus) const {
    const double x = 1.0 - (w / p.w_max);
    const double f = S == Shape::additive ? 1.0 : S == Shape::multiplicative ? x : std::pow(x, p.mu_plus);
    const double norm_w = (w / p.w_max) + (p.lambda * f * k_plus);
    return norm_w < 1.0 ? norm_w * p.w_max : p.w_max;
  }
  double down(double w, double k_minus) const {
    const double x = w / p.w_max;
    const double f = S == Shape::additive ? 1.0 : S == Shape::multiplicative ? x : std::pow(x, p.mu_minus);
    const double norm_w = (w / p.w_max) - (p.alpha * p.lambda * f * k_minus);
    return norm_w > 0.0 ? norm_w * p.w_max : 0.0;
  }
};

inline void check(const PlasticitySpec& spec, const std::string& where) {
  const Parameters p(spec);
  if (!(p.tau_plus_ms > 0)) throw std::invalid_argument(where + "tau_plus_ms must be positive");
  if (!(p.w_max != 0)) throw std::invalid_argument(where + "w_max must not be zero");
}

// The weights share w_max's sign (the front end checks the initial ones).
inline bool negative(const PlasticitySpec& spec) { return rule_parameter(spec, "w_max") < 0; }

// Rule<Weight<shape>> compiled for the shape of the projection's mu_plus and mu_minus; the rule
// is built from (weight dependence, exp(-k h / tau_plus) as NEST's stdp synapses compute it: a
// division).
template <template <class> class Rule>
std::unique_ptr<PlasticDelivery> make(const PlasticitySpec& spec, const RuleBuild& b) {
  const Parameters p(spec);
  const StepDecay decay_plus(b.h, p.tau_plus_ms, true);
  if (p.mu_plus == 0.0 && p.mu_minus == 0.0) return compiled(Rule<Weight<Shape::additive>>{{p}, decay_plus});
  if (p.mu_plus == 1.0 && p.mu_minus == 1.0) return compiled(Rule<Weight<Shape::multiplicative>>{{p}, decay_plus});
  return compiled(Rule<Weight<Shape::general>>{{p}, decay_plus});
}

}  // namespace ranvier::stdp_family
