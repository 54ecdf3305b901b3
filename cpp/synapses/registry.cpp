// Every synapse rule, one line each: the engine finds a projection's rule here by its name
// (PlasticitySpec::rule), and so do the bindings. Each line names the namespace of a rule's file
// (which defines `const SynapseRule rule`).
#include <stdexcept>
#include <string>

#include "synapses/synapse_rule.hpp"

#define RANVIER_SYNAPSE_RULES(X) \
  X(static_synapse)              \
  X(stdp)                        \
  X(stdp_nn_symmetric)           \
  X(stdp_nn_pre_centered)        \
  X(stdp_nn_restricted)          \
  X(stdp_power_law)              \
  X(stdp_triplet)                \
  X(tsodyks)                     \
  X(bernoulli)                   \
  X(quantal_stp)                 \
  X(vogels_sprekeler)

namespace ranvier {

#define RANVIER_DECLARE_RULE(name) namespace name { extern const SynapseRule rule; }
RANVIER_SYNAPSE_RULES(RANVIER_DECLARE_RULE)

namespace {
#define RANVIER_LIST_RULE(name) &name::rule,
const SynapseRule* const kRules[] = {RANVIER_SYNAPSE_RULES(RANVIER_LIST_RULE)};
}  // namespace

const SynapseRule& synapse_rule(const std::string& name) {
  std::string known;
  for (const SynapseRule* r : kRules) {
    if (name == r->name) return *r;
    known += (known.empty() ? "" : ", ") + std::string(r->name);
  }
  throw std::invalid_argument("unknown synapse rule '" + name + "'; known: " + known);
}

}  // namespace ranvier
