// Every neuron model, one line each: the engine finds a population's model here by its kind.
#include <stdexcept>
#include <string>

#include "neurons/artificial.hpp"
#include "neurons/ignore_and_fire.hpp"
#include "neurons/lifca.hpp"
#include "neurons/poisson_source.hpp"
#include "neurons/psc_exp.hpp"

namespace ranvier {
namespace {

const NeuronModel* const kModels[] = {
    &lifca::model,
    &psc_exp::model,
    &ignore_and_fire::model,
    &artificial::model,
    &poisson_source::model,
};

}  // namespace

const NeuronModel& neuron_model(NeuronKind kind) {
  for (const NeuronModel* m : kModels)
    if (m->kind == kind) return *m;
  throw std::invalid_argument("unknown neuron kind " + std::to_string(int(kind)));
}

NeuronKind neuron_kind(const std::string& name) {
  std::string known;
  for (const NeuronModel* m : kModels) {
    if (name == m->name) return m->kind;
    known += (known.empty() ? "" : ", ") + std::string(m->name);
  }
  throw std::invalid_argument("unknown neuron model '" + name + "'; known: " + known);
}

}  // namespace ranvier
