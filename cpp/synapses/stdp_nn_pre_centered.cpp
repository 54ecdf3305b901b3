// NEST's stdp_nn_pre_centered_synapse: nearest-neighbour, pre-synaptically centred. The synapse
// keeps its own K+ (its state, one double): the first target spike since the source's previous
// spike pairs with it and resets it; depression by the target's last spike alone; K+ then decays
// to this spike and grows by 1.
#include "synapses/stdp_weight.hpp"

namespace ranvier::stdp_nn_pre_centered {

template <class W>
struct Rule {
  static constexpr uint32_t kState = 1;   // K+
  static constexpr bool kSegmentTrace = false;
  W weight;
  StepDecay decay_plus;
  template <class Target>
  double facilitated(double w, const Target& t, const PreSpike&, const double* state) const {
    return t.count() ? weight.up(w, state[0] * t.pairing(0)) : w;
  }
  template <class Target>
  double update(double w, const Target& t, const PreSpike& pre, double* state) const {
    double k_plus = state[0];
    if (t.count()) {
      w = weight.up(w, k_plus * t.pairing(0));
      k_plus = 0;
    }
    w = weight.down(w, t.nearest());
    state[0] = k_plus * decay_plus(pre.since_last) + 1.0;
    return w;
  }
};

extern const SynapseRule rule;
const SynapseRule rule{"stdp_nn_pre_centered", true, stdp_family::check, stdp_family::make<Rule>, 1,
                       stdp_family::negative};

}  // namespace ranvier::stdp_nn_pre_centered
