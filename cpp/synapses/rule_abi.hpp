// The interface a synapse rule compiled apart from the engine presents to it (a shared object
// that load_synapse_rule(), cpp/synapses/registry.cpp, loads: ranvier.nestml's generated
// synapse models). As for neuron models (cpp/neurons/model_abi.hpp), the shared object shares
// the engine's structures only if both were compiled from the same headers by the same compiler:
// it returns RANVIER_MODEL_ABI (which digests these headers too) from ranvier_model_abi(), and
// the engine refuses any other.
#pragma once
#include "ranvier_model_abi.h"   // generated: #define RANVIER_MODEL_ABI "<digest>"
#include "synapses/synapse_rule.hpp"

namespace ranvier {

inline constexpr const char* kRuleEntrySymbol = "ranvier_synapse_rule";

}  // namespace ranvier

// In a rule's file, at namespace scope, after its `const SynapseRule`: the two entry points.
#define RANVIER_EXPORT_SYNAPSE_RULE(rule)                                                      \
  extern "C" __attribute__((visibility("default"))) const char* ranvier_model_abi() {          \
    return RANVIER_MODEL_ABI;                                                                  \
  }                                                                                            \
  extern "C" __attribute__((visibility("default"))) const ::ranvier::SynapseRule* ranvier_synapse_rule() { \
    return &(rule);                                                                            \
  }
