// NEST's bernoulli_synapse (PyNN's SimpleStochasticSynapse): each pre-synaptic spike is
// transmitted with probability p_transmit, independently for every synapse and spike, with the
// synapse's fixed weight; a spike not transmitted is not delivered at all. Otherwise a static
// synapse: the weight never changes.
//
// The draw is Ranvier's own, a pure function of the run's seed and the synapse and spike
// (cpp/base/philox.hpp): Philox of make_counter(target gid, Purpose::transmit, projection,
// index onto the target, the spike's step), its first word as a uniform u in (0, 1); transmitted
// when u < p_transmit. The synapse's target gid and index (SynapseId: the same for any ranks,
// threads and placement) are its state, two doubles (exact: gids below 2^53), set at build and
// kept in checkpoints, so any decomposition, and a resumed run, transmits the same spikes. NEST
// draws from its own generators instead: the two agree in distribution, not spike for spike.
// The step enters as its low 32 bits (4.3e9 steps: 5 days at 0.1 ms), the projection as its low
// 16 (as every draw keyed by a projection).
#include <memory>
#include <string>

#include "base/philox.hpp"
#include "synapses/segment_delivery.hpp"
#include "synapses/synapse_rule.hpp"

namespace ranvier::bernoulli {

struct Rule {
  static constexpr uint32_t kState = 2;          // the target's gid, the synapse's index onto it
  static constexpr bool kSegmentTrace = false;
  static constexpr bool kReadsTarget = false;
  static constexpr bool kFixedWeight = true;
  double p_transmit;
  Key key;
  uint32_t projection;
  struct Spike {
    int64_t step;                                // the pre-synaptic spike's
  };
  Spike at_spike(const PreSpike& pre) const { return {pre.step}; }
  bool transmits(const Spike& spike, const double* s) const {
    if (p_transmit >= 1.0) return true;          // u < 1 always: the same answer without the draw
    const Counter c = make_counter(uint64_t(s[0]), Purpose::transmit, projection, uint32_t(s[1]), uint32_t(spike.step));
    return to_uniform(philox4x32_10(c, key)[0]) < p_transmit;
  }
  template <class Target>
  double update(double w, const Target&, const Spike&, double*) const {
    return w;
  }
  template <class Target>
  double facilitated(double w, const Target&, const PreSpike&, const double*) const {
    return w;
  }
};

void check(const PlasticitySpec& spec, const std::string& where) {
  const double p = rule_parameter(spec, "p_transmit");
  if (!(p >= 0 && p <= 1)) throw std::invalid_argument(where + "p_transmit must lie in [0, 1]");
}

std::unique_ptr<PlasticDelivery> make(const PlasticitySpec& spec, const RuleBuild& b) {
  return compiled(Rule{rule_parameter(spec, "p_transmit"), key_from_seed(b.seed), b.projection});
}

void initial_state(const PlasticitySpec&, const SynapseId& id, double* s) {
  s[0] = double(id.target);
  s[1] = double(id.index);
}

// The weights' sign, which the front end gives as a parameter (they are all of one sign).
bool negative(const PlasticitySpec& spec) { return rule_parameter(spec, "weight_sign") < 0; }

extern const SynapseRule rule;
const SynapseRule rule{"bernoulli", true, check, make, 2, negative, false, false, initial_state};

}  // namespace ranvier::bernoulli
