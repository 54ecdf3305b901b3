// Every neuron model: the engine and the bindings find a population's model here by its name.
// The list is made by the build from the files: neuron_models.inc holds RANVIER_NEURON_MODEL(x)
// for each cpp/neurons/x.cpp but this one (CMakeLists.txt), whose namespace ranvier::x defines
// `const NeuronModel model` (named "x" too).
#include <stdexcept>
#include <string>

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
}  // namespace

const NeuronModel& neuron_model(const std::string& name) {
  std::string known;
  for (const NeuronModel* m : kModels) {
    if (name == m->name) return *m;
    known += (known.empty() ? "" : ", ") + std::string(m->name);
  }
  throw std::invalid_argument("unknown neuron model '" + name + "'; known: " + known);
}

}  // namespace ranvier
