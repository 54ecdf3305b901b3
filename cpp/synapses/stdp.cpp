// NEST's stdp_synapse: all-to-all pairing. Facilitation by every target spike since the source's
// previous spike, each with the segment's K+ (the source's trace) decayed to it; depression by
// the target's trace K-.
#include "synapses/stdp_weight.hpp"

namespace ranvier::stdp {

template <class W>
struct Rule {
  static constexpr uint32_t kState = 0;
  static constexpr bool kSegmentTrace = true;
  W weight;
  StepDecay decay_plus;
  template <class Target>
  double facilitated(double w, const Target& t, const PreSpike& pre, const double*) const {
    for (uint32_t j = 0; j < t.count(); ++j) w = weight.up(w, pre.k_plus * t.pairing(j));
    return w;
  }
  template <class Target>
  double update(double w, const Target& t, const PreSpike& pre, double* state) const {
    return weight.down(facilitated(w, t, pre, state), t.k_minus());
  }
};

extern const SynapseRule rule;
const SynapseRule rule{"stdp", true, stdp_family::check, stdp_family::make<Rule>, 0, stdp_family::negative};

}  // namespace ranvier::stdp
