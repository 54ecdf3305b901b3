// Every neuron model: the engine and the bindings find a population's model here by its name.
// The list is made by the build from the files: neuron_models.inc holds RANVIER_NEURON_MODEL(x)
// for each cpp/neurons/x.cpp but this one (CMakeLists.txt), whose namespace ranvier::x defines
// `const NeuronModel model` (named "x" too).
//
// Besides the built-in models, models compiled later into shared objects (ranvier.nestml:
// models generated from NESTML files, docs/nestml.md) join the registry through
// load_neuron_model(). The registry holds them because it is where every engine of the process
// looks a model up by name, and a loaded shared object is itself process-wide: once dlopen()ed
// it stays loaded to the end of the process (never dlclose()d), so the NeuronModel it defines,
// and every reference neuron_model() returned to it, stays valid for any engine that uses it.
#include <dlfcn.h>

#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "neurons/model_abi.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier {

#define RANVIER_NEURON_MODEL(name) namespace name { extern const NeuronModel model; }
#include "neuron_models.inc"
#undef RANVIER_NEURON_MODEL

namespace {
const NeuronModel* const kModels[] = {
#define RANVIER_NEURON_MODEL(name) &name::model,
#include "neuron_models.inc"
#undef RANVIER_NEURON_MODEL
};

// The models loaded from shared objects, in the order loaded; read under a shared lock (engines
// may build on several threads), appended to under an exclusive one.
struct Loaded {
  std::shared_mutex mutex;
  std::vector<const NeuronModel*> models;
};
Loaded& loaded() {
  static Loaded table;
  return table;
}

const NeuronModel* built_in(const std::string& name) {
  for (const NeuronModel* m : kModels)
    if (name == m->name) return m;
  return nullptr;
}
}  // namespace

const NeuronModel& neuron_model(const std::string& name) {
  if (const NeuronModel* m = built_in(name)) return *m;
  Loaded& table = loaded();
  std::shared_lock lock(table.mutex);
  for (const NeuronModel* m : table.models)
    if (name == m->name) return *m;
  std::string known;
  for (const NeuronModel* m : kModels) known += (known.empty() ? "" : ", ") + std::string(m->name);
  for (const NeuronModel* m : table.models) known += ", " + std::string(m->name);
  throw std::invalid_argument("unknown neuron model '" + name + "'; known: " + known);
}

std::string load_neuron_model(const std::string& path) {
  // RTLD_LOCAL: the model's symbols stay its own (two models never see each other's);
  // RTLD_NOW: an unresolved symbol is refused here, not in the middle of a run.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw std::runtime_error("cannot load the neuron model '" + path + "': " + (why ? why : "dlopen failed"));
  }
  using AbiFunction = const char* (*)();
  using ModelFunction = const NeuronModel* (*)();
  const auto abi = reinterpret_cast<AbiFunction>(dlsym(handle, kModelAbiSymbol));
  if (!abi)
    throw std::runtime_error("'" + path + "' is not a Ranvier neuron model: it lacks the entry point " +
                             kModelAbiSymbol + "(); compile it with ranvier.nestml (docs/nestml.md)");
  if (std::string(abi()) != kModelAbi)
    throw std::runtime_error("the neuron model '" + path + "' was compiled against Ranvier's model interface " +
                             abi() + ", this engine has " + kModelAbi + ": delete it and compile it again "
                             "with this Ranvier (ranvier.nestml does on first use; docs/nestml.md, the cache)");
  const auto entry = reinterpret_cast<ModelFunction>(dlsym(handle, kModelEntrySymbol));
  const NeuronModel* model = entry ? entry() : nullptr;
  if (!model || !model->name || !*model->name)
    throw std::runtime_error("'" + path + "' lacks the entry point " + kModelEntrySymbol +
                             "() returning a named neuron model");
  const std::string name = model->name;
  if (built_in(name))
    throw std::runtime_error("the neuron model '" + path + "' is named '" + name +
                             "', the name of a built-in model; rename it");
  Loaded& table = loaded();
  std::unique_lock lock(table.mutex);
  for (const NeuronModel* m : table.models)
    if (name == m->name) return name;   // loaded before (the name holds the digest of its source)
  if (model->extra_columns > kMaxExtraColumns)
    throw std::runtime_error("the neuron model '" + name + "' needs " + std::to_string(model->extra_columns) +
                             " extra state columns; this engine has " + std::to_string(kMaxExtraColumns));
  table.models.push_back(model);
  return name;
}

const char* neuron_model_abi() { return kModelAbi; }

}  // namespace ranvier
