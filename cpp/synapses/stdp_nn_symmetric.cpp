// NEST's stdp_nn_symm_synapse: nearest-neighbour, symmetric. Each target spike since the source's
// previous spike pairs with that spike alone (K+ = 1 there); depression by the target's last
// spike before this one alone.
#include "synapses/stdp_weight.hpp"

namespace ranvier::stdp_nn_symmetric {

template <class W>
struct Rule {
  static constexpr uint32_t kState = 0;
  static constexpr bool kSegmentTrace = false;
  W weight;
  StepDecay decay_plus;
  template <class Target>
  double facilitated(double w, const Target& t, const PreSpike&, const double*) const {
    for (uint32_t j = 0; j < t.count(); ++j) w = weight.up(w, t.pairing(j));
    return w;
  }
  template <class Target>
  double update(double w, const Target& t, const PreSpike& pre, double* state) const {
    return weight.down(facilitated(w, t, pre, state), t.nearest());
  }
};

extern const SynapseRule rule;
const SynapseRule rule{"stdp_nn_symmetric", true, stdp_family::check, stdp_family::make<Rule>, 0,
                       stdp_family::negative};

}  // namespace ranvier::stdp_nn_symmetric
