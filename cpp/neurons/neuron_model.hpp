// What every neuron model provides to the engine, and the one call the update loop makes per
// population range, thread and step. A model is one file under cpp/neurons/, named as the model
// (its parameters, read by name from the PopulationSpec, state, propagators, scalar step and
// vector kernels); the build lists every such file in the registry (registry.cpp).
//
// The kernel a population runs (model x SIMD level) is chosen once, at build: the update loop
// makes one virtual call per population range and step, never one per neuron.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/distributions.hpp"
#include "base/philox.hpp"
#include "base/simd.hpp"
#include "base/spec.hpp"

namespace ranvier {

// State variables a model may keep beyond V, c and the refractory counter (iaf_cond_alpha
// keeps four: g_in, its integrator's step size, dg_ex, dg_in; models generated from NESTML keep
// every state variable of theirs beyond the first two here). A thread allocates only the columns
// that its populations' models use (ThreadNeurons::extra), so the bound costs no memory.
inline constexpr int kMaxExtraColumns = 16;
// The most receptors (input columns per neuron) a model with receptors takes.
inline constexpr int kMaxReceptors = 8;

// A population range's slice of its thread's state, structure of arrays: each model reads the
// columns it declares (its State) and leaves the others alone.
struct NeuronColumns {
  const uint64_t* gid;        // global ids (keys of the models' random draws)
  double* V;                  // membrane potential (mV, relative to rest), traced
  double* c;                  // second variable (lifca: adaptation; psc_exp: current, pA), traced
  int32_t* refractory;        // steps left
  int64_t* next_spike;        // artificial cells: the step of the next spike
  uint32_t* spikes_fired;     // artificial cells: spikes so far (keys the next interval)
  double* extra[kMaxExtraColumns];   // further state variables (NeuronModel::extra_columns of them)
  uint64_t n;                 // neurons in the range
};

// One step of one range: the step's input row (fixed point, from the range's first neuron), the
// factor that turns it into the model's input unit, and the index of the step integrated
// (spikes found here have time (step + 1) h). Models with split input find the excitatory
// (positive) input in `input` and the inhibitory (negative) one in `inhibitory`. Models with
// receptors (NeuronModel::Layout::receptors) find receptor 0's input in `input` and receptor
// r >= 1's in receptor(r): `inhibitory` + (r - 1) * receptor_stride.
struct StepInput {
  const int32_t* input;
  double input_scale;
  int64_t step;
  const int32_t* inhibitory = nullptr;
  // Injected current (pA) per neuron of the range for this step (current sources), or nullptr
  // where none targets the range. Models that take it: NeuronModel::takes_current.
  const double* current = nullptr;
  uint64_t receptor_stride = 0;
  const int32_t* receptor(int r) const { return r == 0 ? input : inhibitory + uint64_t(r - 1) * receptor_stride; }
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
  // Refuses a population whose parameters the model cannot run at resolution h (ms): throws
  // std::invalid_argument naming the population and the parameter.
  void (*check)(const PopulationSpec&, double h);
  // Initial state of the range, drawn per neuron from (key, gid): the same for any placement.
  void (*initialize)(const PopulationSpec&, const Key&, double h, const NeuronColumns&);
  // The update of one range (its columns give the neurons' global ids, for per-neuron parameters).
  std::unique_ptr<PopulationUpdate> (*make_update)(const PopulationSpec&, const ModelContext&, const NeuronColumns&);
  bool split_input = false;   // excitatory and inhibitory input in separate columns
  int extra_columns = 0;      // state variables beyond V, c and the refractory counter (at most kMaxExtraColumns)
  // Where those two depend on the population's parameters (psc_exp splits its input only where
  // its excitatory and inhibitory time constants differ): the population's; null: the two above.
  // receptors > 0: the population has that many input columns per neuron, one per receptor
  // (NEST's receptor ports 1..receptors), and each projection names the receptor it adds into
  // (ProjectionSpec::receptor) instead of the weight's sign choosing; split_input is then false.
  struct Layout {
    bool split_input;
    int extra_columns;
    int receptors = 0;
    // Input columns per neuron.
    int input_columns() const { return receptors > 0 ? receptors : split_input ? 2 : 1; }
  };
  Layout (*layout)(const PopulationSpec&) = nullptr;
  Layout layout_of(const PopulationSpec& p) const { return layout ? layout(p) : Layout{split_input, extra_columns}; }
  bool takes_current = false; // reads StepInput::current (others: the front end refuses current sources)
  // The extra column holding the inhibitory synaptic variable (recorded as c_in: iaf_psc_alpha's
  // I_in, two-current psc_exp's I_in, iaf_cond_exp's g_in), where the population's layout has it;
  // -1: none.
  int inhibitory_column = -1;
  // After a population's parameters change between runs (Engine::set_population), the state that
  // follows from them, from step `now` on (spike_train: the next spike of each new train); null:
  // the state is kept as it is.
  void (*parameters_changed)(const PopulationSpec&, const NeuronColumns&, int64_t now) = nullptr;
  // The extra column holding an adaptation current w (recorded as w: the aeif models' w, pA);
  // -1: none.
  int adaptation_column = -1;
  // Models with receptors: the extra column holding receptor r's synaptic variable, for r >= 2
  // (0-based; receptor 0's is c, receptor 1's the inhibitory_column), recorded as c3, c4, ...;
  // -1 (or null): none.
  int (*receptor_column)(const PopulationSpec&, int receptor) = nullptr;
};

// The receptors beyond the first two whose synaptic variables the state recorder keeps.
inline constexpr int kMaxTracedReceptors = kMaxReceptors - 2;

// The model of a Python model name (PopulationSpec::model); throws std::invalid_argument naming
// the known ones for an unknown name. Looked up at build only, never in a loop.
const NeuronModel& neuron_model(const std::string& name);

// Loads a neuron model compiled apart from the engine (a shared object with the entry points of
// cpp/neurons/model_abi.hpp) and registers it, so that neuron_model() finds it by its name;
// returns the name. Throws std::runtime_error in one line for a file that cannot be loaded, that
// is not a model, or that was compiled against other headers (neuron_model_abi()). Loading the
// same model again returns its name.
std::string load_neuron_model(const std::string& path);
// The digest of the model interface this engine was built with (RANVIER_MODEL_ABI).
const char* neuron_model_abi();

// A parameter a model takes by name (PopulationSpec::parameters); throws std::invalid_argument
// naming the population, its model and the parameter when it is missing.
inline double parameter(const PopulationSpec& p, const char* name) {
  const auto it = p.parameters.find(name);
  if (it == p.parameters.end())
    throw std::invalid_argument("population '" + p.name + "' (" + p.model + ") lacks the parameter '" +
                                name + "'");
  return it->second;
}

// Refuses a population that lacks any of the parameters `names` (null-terminated): a model's
// check, so that a missing parameter is named before anything is built.
inline void require_parameters(const PopulationSpec& p, const char* const* names) {
  for (const char* const* n = names; *n; ++n) parameter(p, *n);
}

// A sequence parameter a model takes by name (PopulationSpec::sequences, integer_sequences);
// throws std::invalid_argument like parameter() when it is missing.
inline const std::vector<double>& sequence(const PopulationSpec& p, const char* name) {
  const auto it = p.sequences.find(name);
  if (it == p.sequences.end())
    throw std::invalid_argument("population '" + p.name + "' (" + p.model + ") lacks the sequence '" + name + "'");
  return it->second;
}
inline const std::vector<int64_t>& integer_sequence(const PopulationSpec& p, const char* name) {
  const auto it = p.integer_sequences.find(name);
  if (it == p.integer_sequences.end())
    throw std::invalid_argument("population '" + p.name + "' (" + p.model + ") lacks the integer sequence '" +
                                name + "'");
  return it->second;
}

// The name under which PopulationSpec::per_neuron holds the initial membrane potential.
inline constexpr const char* kInitialV = "initial_V_mV";

// A per-neuron parameter's value for neuron gid of a population whose first id is `first`: its
// array entry, or its draw from (key, gid, Purpose::parameter, tag), one uniform per value.
inline double neuron_value(const NeuronValues& v, const Key& key, uint64_t gid, uint64_t first) {
  if (!v.values.empty()) return v.values[gid - first];
  const double u = Stream(key, gid, Purpose::parameter, v.tag, 0).uniform();
  if (v.distribution == "uniform") return v.a + (v.b - v.a) * u;
  const double z = inverse_normal(u);
  return v.distribution == "lognormal" ? std::exp(v.a + v.b * z) : v.a + v.b * z;
}

// The parameters of single neurons, by the Python front end's names: a neuron's own value where
// the parameter varies per neuron (PopulationSpec::per_neuron), else the population's
// (PopulationSpec::parameters). Used at build only, never in a loop over steps.
class NeuronParameters {
 public:
  NeuronParameters(const PopulationSpec& spec, const Key& key) : spec_(spec), key_(key) {}
  bool varies(const char* name) const { return spec_.per_neuron.count(name) > 0; }
  double operator()(const char* name, uint64_t gid) const {
    const auto it = spec_.per_neuron.find(name);
    return it == spec_.per_neuron.end() ? parameter(spec_, name) : neuron_value(it->second, key_, gid, spec_.first);
  }

 private:
  const PopulationSpec& spec_;
  Key key_;
};

// A duration or time in whole steps of h, to the nearest step, halves to even (the front end's
// rounding, Python's round and numpy's rint; it checks that refractory periods given as numbers
// or arrays hold whole steps, and documents that drawn ones are rounded to the nearest step).
inline int64_t steps_of(double ms, double h) { return int64_t(std::nearbyint(ms / h)); }

// Whether a population has parameters of its dynamics that vary per neuron (its initial V aside):
// it then runs the per-neuron update, the others keep their vector kernels.
inline bool parameters_vary(const PopulationSpec& p) {
  for (const auto& [name, values] : p.per_neuron)
    if (name != kInitialV) return true;
  return false;
}

// Refuses per-neuron entries that a model does not read (`names`, null-terminated) and entries of
// the wrong size or an unknown distribution (check_per_neuron's checks of the entries alone: the
// generated NESTML models, whose left-out parameters take the model's defaults).
inline void check_per_neuron_entries(const PopulationSpec& p, const char* const* names) {
  for (const auto& [name, v] : p.per_neuron) {
    bool known = name == kInitialV;
    for (const char* const* n = names; *n && !known; ++n) known = name == *n;
    const std::string where = "population '" + p.name + "' (" + p.model + "): per-neuron '" + name + "'";
    if (!known) throw std::invalid_argument(where + " is not a parameter that can vary per neuron");
    if (v.values.empty() && v.distribution != "normal" && v.distribution != "uniform" && v.distribution != "lognormal")
      throw std::invalid_argument(where + " has neither values nor a known distribution ('" + v.distribution + "')");
    if (!v.values.empty() && v.values.size() != p.size)
      throw std::invalid_argument(where + " has " + std::to_string(v.values.size()) + " values for " +
                                  std::to_string(p.size) + " neurons");
  }
}

// Refuses per-neuron entries that a model does not read (`names`, null-terminated), entries of
// the wrong size or an unknown distribution, and, where any parameter varies, a parameter that
// is neither per neuron nor in PopulationSpec::parameters (where NeuronParameters reads it).
inline void check_per_neuron(const PopulationSpec& p, const char* const* names) {
  if (!p.per_neuron.empty())
    for (const char* const* n = names; *n; ++n)
      if (!p.per_neuron.count(*n) && !p.parameters.count(*n))
        throw std::invalid_argument("population '" + p.name + "' (" + p.model + ") varies per neuron but lacks the "
                                    "parameter '" + *n + "'");
  check_per_neuron_entries(p, names);
}

// Refuses per-neuron entries in a model whose parameters are the population's (artificial cells,
// Poisson sources).
inline void check_no_per_neuron(const PopulationSpec& p) {
  if (!p.per_neuron.empty())
    throw std::invalid_argument("population '" + p.name + "' (" + p.model + "): per-neuron '" +
                                p.per_neuron.begin()->first + "', but no parameter of this model varies per neuron");
}

// Initial membrane potentials, drawn per neuron from (key, gid, Purpose::initial): the same for
// any placement. normal_potential: V ~ N(mean, sd); uniform_potential: V ~ U[reset, theta).
inline double normal_potential(const Key& key, uint64_t gid, double mean, double sd) {
  Stream stream(key, gid, Purpose::initial, 0, 0);
  return mean + sd * inverse_normal(stream.uniform());
}
inline double uniform_potential(const Key& key, uint64_t gid, double reset, double theta) {
  Stream stream(key, gid, Purpose::initial, 0, 0);
  return reset + (theta - reset) * (double(stream.next()) * 0x1p-32);
}

// The initial V of the models whose parameters are absolute potentials (psc_exp, iaf_psc_alpha,
// iaf_cond_exp; every model's V is relative to rest): V ~ N(V0_mean_mV - E_L_mV, V0_sd_mV), or
// per_neuron's initial_V_mV (absolute) - E_L_mV; each neuron's E_L_mV and V0_mean_mV where they
// vary per neuron.
inline void initial_potentials_absolute(const PopulationSpec& spec, const Key& key, const NeuronColumns& s) {
  const double sd = parameter(spec, "V0_sd_mV");
  if (spec.per_neuron.empty()) {
    const double E_L = parameter(spec, "E_L_mV"), mean = parameter(spec, "V0_mean_mV") - E_L;
    for (uint64_t k = 0; k < s.n; ++k) s.V[k] = normal_potential(key, s.gid[k], mean, sd);
    return;
  }
  const NeuronParameters v(spec, key);
  for (uint64_t k = 0; k < s.n; ++k) {
    const uint64_t g = s.gid[k];
    const double E_L = v("E_L_mV", g);
    s.V[k] = v.varies(kInitialV) ? v(kInitialV, g) - E_L : normal_potential(key, g, v("V0_mean_mV", g) - E_L, sd);
  }
}

// The initial state words of the models that know "reset" alone (their rule of the initial V, or
// none: psc_exp's is a normal draw, a source has no membrane).
inline constexpr const char* kInitialReset[] = {"reset", nullptr};

// Refuses an initial state word a model does not know (`words`, null-terminated).
inline void check_initial(const PopulationSpec& p, const char* const* words) {
  for (const char* const* w = words; *w; ++w)
    if (p.initial == *w) return;
  std::string known;
  for (const char* const* w = words; *w; ++w) known += (known.empty() ? "'" : ", '") + std::string(*w) + "'";
  throw std::invalid_argument("population '" + p.name + "' (" + p.model + "): initial state '" + p.initial +
                              "' is not one of " + known);
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
