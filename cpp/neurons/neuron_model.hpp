// What every neuron model provides to the engine, and the one call the update loop makes per
// population range, thread and step. A model is one file under cpp/neurons/ (its parameters,
// state, propagators, scalar step and vector kernels) and one line in registry.cpp.
//
// The kernel a population runs (model x SIMD level) is chosen once, at build: the update loop
// makes one virtual call per population range and step, never one per neuron.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/distributions.hpp"
#include "core/local_network.hpp"
#include "core/philox.hpp"
#include "core/simd.hpp"
#include "core/spec.hpp"

namespace ranvier {

// A population range's slice of its thread's state, structure of arrays: each model reads the
// columns it declares (its State) and leaves the others alone.
struct NeuronColumns {
  const uint64_t* gid;        // global ids (keys of the models' random draws)
  double* V;                  // membrane potential (mV, relative to rest), traced
  double* c;                  // second variable (lifca: adaptation; psc_exp: current, pA), traced
  int32_t* refractory;        // steps left
  int64_t* next_spike;        // artificial cells: the step of the next spike
  uint32_t* spikes_fired;     // artificial cells: spikes so far (keys the next interval)
  double* extra[3];           // further state variables (NeuronModel::extra_columns of them)
  uint64_t n;                 // neurons in the range
};

inline NeuronColumns columns_of(ThreadNeurons& t, const PopulationRange& r) {
  const uint64_t b = r.begin;
  auto extra = [&](int i) { return t.extra[i].empty() ? nullptr : t.extra[i].data() + b; };
  return {t.gid.data() + b,        t.V.data() + b,           t.c.data() + b, t.refractory.data() + b,
          t.next_spike.data() + b, t.spikes_fired.data() + b, {extra(0), extra(1), extra(2)}, r.end - b};
}

// One step of one range: the step's input row (fixed point, from the range's first neuron), the
// factor that turns it into the model's input unit, and the index of the step integrated
// (spikes found here have time (step + 1) h). Models with split input find the excitatory
// (positive) input in `input` and the inhibitory (negative) one in `inhibitory`.
struct StepInput {
  const int32_t* input;
  double input_scale;
  int64_t step;
  const int32_t* inhibitory = nullptr;
};

// The constants a model needs to make a population's update.
struct ModelContext {
  double h;          // resolution, ms
  Key key;           // the simulation's Philox key
  SimdLevel simd;    // the vector kernel to run
};

// A population's update on one thread: its constants (propagators) and its chosen kernel.
class PopulationUpdate {
 public:
  virtual ~PopulationUpdate() = default;
  // Advances every neuron of the range by one step; fired[k] = 1 for those that spike, else 0.
  virtual void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const = 0;
};

// A registry entry: how to check, initialise and update a population of this model.
struct NeuronModel {
  const char* name;                                    // as the Python front end names it
  void (*check)(const PopulationSpec&);                // throws std::invalid_argument
  // Initial state of the range, drawn per neuron from (key, gid): the same for any placement.
  void (*initialize)(const PopulationSpec&, const Key&, const NeuronColumns&);
  std::unique_ptr<PopulationUpdate> (*make_update)(const PopulationSpec&, const ModelContext&);
  bool split_input = false;   // excitatory and inhibitory input in separate columns
  int extra_columns = 0;      // state variables beyond V, c and the refractory counter (at most 3)
};

// The model of a Python model name (PopulationSpec::model); throws std::invalid_argument naming
// the known ones for an unknown name. Looked up at build only, never in a loop.
const NeuronModel& neuron_model(const std::string& name);

// A parameter a model takes by name (PopulationSpec::parameters); throws std::invalid_argument
// naming the population, its model and the parameter when it is missing.
inline double parameter(const PopulationSpec& p, const char* name) {
  const auto it = p.parameters.find(name);
  if (it == p.parameters.end())
    throw std::invalid_argument("population '" + p.name + "' (" + p.model + ") lacks the parameter '" +
                                name + "'");
  return it->second;
}

// The initial membrane potentials of the models with one (lifca, psc_exp): V ~ N(v0_mean,
// v0_sd) with initial_normal, else V ~ U[reset, theta) with initial_uniform, else V = reset.
inline void initial_potentials(const PopulationSpec& p, const Key& key, const NeuronColumns& s) {
  for (uint64_t k = 0; k < s.n; ++k) {
    if (p.initial_normal) {
      Stream stream(key, s.gid[k], Purpose::initial, 0, 0);
      s.V[k] = p.v0_mean_mV + p.v0_sd_mV * inverse_normal(stream.uniform());
    } else if (p.initial_uniform) {
      Stream stream(key, s.gid[k], Purpose::initial, 0, 0);
      s.V[k] = p.reset_mV + (p.theta_mV - p.reset_mV) * (double(stream.next()) * 0x1p-32);
    } else {
      s.V[k] = p.reset_mV;
    }
  }
}

// Calls f(k) for each k in [0, n) with fired[k] set; skips 8 clear bytes at a time (spikes
// are rare, so this costs a fraction of a nanosecond per neuron).
template <class F>
inline void for_each_fired(const uint8_t* fired, uint64_t n, F f) {
  for (uint64_t k = 0; k < n; ++k) {
    if (k % 8 == 0 && k + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, fired + k, 8);
      if (!word) { k += 7; continue; }
    }
    if (fired[k]) f(k);
  }
}

}  // namespace ranvier
