// Every neuron model, one line each: the engine finds a population's model here by its kind,
// the bindings by its name. Each line names the namespace of a model's file (which defines
// `const NeuronModel model`).
#include <stdexcept>
#include <string>

#include "neurons/neuron_model.hpp"

#define RANVIER_NEURON_MODELS(X) \
  X(lifca)                       \
  X(psc_exp)                     \
  X(ignore_and_fire)             \
  X(artificial)                  \
  X(poisson_source)              \
  X(iaf_psc_alpha)               \
  X(iaf_cond_exp)                \
  X(iaf_cond_alpha)              \
  X(spike_train)                 \
  X(inhomogeneous_poisson)

namespace ranvier {

#define RANVIER_DECLARE_MODEL(name) namespace name { extern const NeuronModel model; }
RANVIER_NEURON_MODELS(RANVIER_DECLARE_MODEL)

namespace {
#define RANVIER_LIST_MODEL(name) &name::model,
const NeuronModel* const kModels[] = {RANVIER_NEURON_MODELS(RANVIER_LIST_MODEL)};
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
