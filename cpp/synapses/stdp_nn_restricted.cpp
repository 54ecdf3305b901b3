// NEST's stdp_nn_restr_synapse: nearest-neighbour, restricted. Only where the target spiked since
// the source's previous spike: its first such spike pairs with that spike (K+ = 1), and the
// target's last spike before this one depresses; otherwise the weight stays.
#include "synapses/stdp_weight.hpp"

namespace ranvier::stdp_nn_restricted {

template <class W>
struct Rule {
  static constexpr uint32_t kState = 0;
  static constexpr bool kSegmentTrace = false;
  W weight;
  StepDecay decay_plus;
  template <class Target>
  double facilitated(double w, const Target& t, const PreSpike&, const double*) const {
    return t.count() ? weight.up(w, t.pairing(0)) : w;
  }
  template <class Target>
  double update(double w, const Target& t, const PreSpike&, double*) const {
    return t.count() ? weight.down(weight.up(w, t.pairing(0)), t.nearest()) : w;
  }
};

extern const SynapseRule rule;
const SynapseRule rule{"stdp_nn_restricted", true, stdp_family::check, stdp_family::make<Rule>, 0,
                       stdp_family::negative};

}  // namespace ranvier::stdp_nn_restricted
