// Static synapses: a fixed weight, rounded once to the input's fixed point at build and kept in
// the thread's static store, whose delivery is core/delivery.cpp's (4 or 8 bytes a synapse, no
// state). The rule of every projection not given a plastic one.
#include "synapses/synapse_rule.hpp"

namespace ranvier::static_synapse {

extern const SynapseRule rule;
const SynapseRule rule{"static", false};

}  // namespace ranvier::static_synapse
