// What every synapse rule provides to the engine. A rule is one file under cpp/synapses/ (its
// parameters, its update at a delivered spike, its facilitation for a weight read between spikes)
// and one line in registry.cpp; the engine and the bindings know a rule by its name
// (PlasticitySpec::rule), as they know neuron models.
//
// A plastic rule's delivery loop (segment_delivery.hpp) is generic over the rule and compiled for
// each rule and weight dependence; the one a projection runs is chosen once, at build: delivery
// makes one virtual call per received spike and store, never one per synapse.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "base/spec.hpp"

namespace ranvier {

struct PlasticStore;
struct PendingRing;
struct PostHistory;

// A plastic projection's rule with its parameters, compiled: the update of one segment at a
// delivered spike, and a weight brought up to date between spikes.
class PlasticDelivery {
 public:
  virtual ~PlasticDelivery() = default;
  // Delivers the spike of `source` at step `t_pre` to its row of the store, as it is received
  // (as NEST's Connection::send, long before it arrives: the whole delay is dendritic, so the
  // update reads only target spikes up to t_pre - d, all recorded by then): updates every
  // weight from the targets' histories and files each efficacy (fixed point, `scale` units per
  // input unit) under its arrival step in `pending`. Returns the synapses delivered.
  virtual uint64_t deliver(PlasticStore& store, uint64_t source, int64_t t_pre, PostHistory& history,
                           PendingRing& pending, double scale) const = 0;
  // Synapse i (its index in segment h) as of step `now`: the facilitation by the target's spikes
  // that reached it since its last pre-synaptic spike, which NEST applies only at the next one.
  virtual double weight_up_to_date(const PlasticStore& store, uint32_t h, uint32_t i, const PostHistory& history,
                                   int64_t now) const = 0;
};

// What a rule's make() gets besides its parameters: the resolution (ms), the run's seed and the
// projection's index (for rules that draw random numbers: keyed by these, never by ranks or
// threads).
struct RuleBuild {
  double h;
  uint64_t seed;
  uint32_t projection;
};

// A synapse as the build knows it, whatever the decomposition: its target's global id and its
// index among its projection's synapses onto that target, in draw order (the index that keys the
// draw of its weight and delay, cpp/core/network_build.cpp).
struct SynapseId {
  uint64_t target;
  uint32_t index;
};

// A registry entry.
struct SynapseRule {
  const char* name;        // as the Python front end names it (PlasticitySpec::rule)
  bool plastic;            // false: static synapses, kept in the static store (core/delivery.cpp)
  // Refuses bad parameters: throws std::invalid_argument starting with `where` and naming the
  // parameter. Null: nothing to check.
  void (*check)(const PlasticitySpec&, const std::string& where) = nullptr;
  // The compiled rule of a projection.
  std::unique_ptr<PlasticDelivery> (*make)(const PlasticitySpec&, const RuleBuild&) = nullptr;
  // Doubles of state per synapse beyond its weight (the nearest pre-centred rule's K+: 1), kept
  // in the segment's record and in checkpoints (columns "state0", "state1", ...).
  uint32_t synapse_state = 0;
  // Whether the projection's weights are negative (they then go to the inhibitory input of
  // targets with split input). Null: never.
  bool (*negative)(const PlasticitySpec&) = nullptr;
  // Whether the rule reads the target's triplet trace (PostHistory::triplet, tau_minus_triplet_ms
  // of the target population): the targets of its projections then keep it.
  bool triplet_trace = false;
  // Whether the rule reads the target's spikes at all (its Rule's kReadsTarget): neurons whose
  // incoming plastic synapses all have rules that do not keep no spike history.
  bool reads_target = true;
  // Fills one synapse's state (synapse_state doubles) as it starts, before any spike, from the
  // projection's parameters and the synapse's identity (build_plastic_store). Null: zeros.
  void (*initial_state)(const PlasticitySpec&, const SynapseId&, double* state) = nullptr;
};

// The rule of a name; throws std::invalid_argument naming the known ones for an unknown name.
// Looked up at build only, never in a loop.
const SynapseRule& synapse_rule(const std::string& name);

// Loads a rule compiled apart from the engine (a shared object, synapses/rule_abi.hpp) into the
// registry; returns its name. std::runtime_error in one line for a file that is not such a rule
// or was compiled against another model interface.
std::string load_synapse_rule(const std::string& path);

// A parameter a rule takes by name (PlasticitySpec::parameters); throws std::invalid_argument
// naming the rule and the parameter when it is missing.
inline double rule_parameter(const PlasticitySpec& p, const char* name) {
  const auto it = p.parameters.find(name);
  if (it == p.parameters.end())
    throw std::invalid_argument("synapse rule '" + p.rule + "' lacks the parameter '" + name + "'");
  return it->second;
}

}  // namespace ranvier
