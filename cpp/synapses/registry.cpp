// Every synapse rule, one line each: the engine finds a projection's rule here by its name
// (PlasticitySpec::rule), and so do the bindings. Each line names the namespace of a rule's file
// (which defines `const SynapseRule rule`).
//
// Besides the built-in rules, rules compiled later into shared objects (ranvier.nestml: synapse
// models generated from NESTML files, docs/nestml.md) join the registry through
// load_synapse_rule(), as neuron models do (cpp/neurons/registry.cpp): a loaded object stays
// loaded to the end of the process, so the SynapseRule it defines stays valid for every engine.
#include <dlfcn.h>

#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "synapses/rule_abi.hpp"
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

// The rules loaded from shared objects; read under a shared lock, appended to under an
// exclusive one.
struct Loaded {
  std::shared_mutex mutex;
  std::vector<const SynapseRule*> rules;
};
Loaded& loaded() {
  static Loaded table;
  return table;
}

const SynapseRule* built_in(const std::string& name) {
  for (const SynapseRule* r : kRules)
    if (name == r->name) return r;
  return nullptr;
}
}  // namespace

const SynapseRule& synapse_rule(const std::string& name) {
  if (const SynapseRule* r = built_in(name)) return *r;
  Loaded& table = loaded();
  std::shared_lock lock(table.mutex);
  for (const SynapseRule* r : table.rules)
    if (name == r->name) return *r;
  std::string known;
  for (const SynapseRule* r : kRules) known += (known.empty() ? "" : ", ") + std::string(r->name);
  for (const SynapseRule* r : table.rules) known += ", " + std::string(r->name);
  throw std::invalid_argument("unknown synapse rule '" + name + "'; known: " + known);
}

std::string load_synapse_rule(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);   // as load_neuron_model()
  if (!handle) {
    const char* why = dlerror();
    throw std::runtime_error("cannot load the synapse rule '" + path + "': " + (why ? why : "dlopen failed"));
  }
  using AbiFunction = const char* (*)();
  using RuleFunction = const SynapseRule* (*)();
  const auto abi = reinterpret_cast<AbiFunction>(dlsym(handle, "ranvier_model_abi"));
  if (!abi)
    throw std::runtime_error("'" + path + "' is not a Ranvier synapse rule: it lacks the entry point "
                             "ranvier_model_abi(); compile it with ranvier.nestml (docs/nestml.md)");
  if (std::string(abi()) != RANVIER_MODEL_ABI)
    throw std::runtime_error("the synapse rule '" + path + "' was compiled against Ranvier's model interface " +
                             abi() + ", this engine has " + RANVIER_MODEL_ABI + ": delete it and compile it "
                             "again with this Ranvier (ranvier.nestml does on first use; docs/nestml.md, the cache)");
  const auto entry = reinterpret_cast<RuleFunction>(dlsym(handle, kRuleEntrySymbol));
  const SynapseRule* rule = entry ? entry() : nullptr;
  if (!rule || !rule->name || !*rule->name || !rule->make)
    throw std::runtime_error("'" + path + "' lacks the entry point " + std::string(kRuleEntrySymbol) +
                             "() returning a named synapse rule");
  const std::string name = rule->name;
  if (built_in(name))
    throw std::runtime_error("the synapse rule '" + path + "' is named '" + name +
                             "', the name of a built-in rule; rename it");
  Loaded& table = loaded();
  std::unique_lock lock(table.mutex);
  for (const SynapseRule* r : table.rules)
    if (name == r->name) return name;   // loaded before (the name holds the digest of its source)
  table.rules.push_back(rule);
  return name;
}

}  // namespace ranvier
