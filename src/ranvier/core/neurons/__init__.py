"""Neuron models, one module each: parameters, units, checks, recordables, and the engine's
PopulationSpec.

A population names its model (`Population(..., model="psc_exp")`); `NEURON_MODELS` maps that name
to the class that knows everything model-specific on the Python side, defined in the module of
the same name in this package (ranvier/core/neurons/psc_exp.py). The interface (ranvier.core.neurons.base):

- `parameters`: name -> Parameter(unit, description, default, per_neuron). A parameter with a
  default may be left out of a population's params; every other one must be given, and no other
  is accepted. One with per_neuron set may also be an array of one value per neuron or a
  distribution (ranvier.core.random); the others take one number.
- `input_unit`: the unit of synaptic weights into it (None: input ignored); `takes_current`:
  whether injected currents (ranvier.core.devices) reach it.
- `initial_states`: the words `Population.initial` accepts; models with a membrane potential
  (`has_potential`) also take an array or a distribution of initial potentials.
- `recordables`: what Simulation(record_state=...) records besides V ("c", "c_in", "w"), with the
  name, unit and description ranvier.io.neo gives each.
- `check(pop, where)`: the checks of the values alone (run when the population is added),
  element-wise for per-neuron values (the message names the first bad neuron).
- `check_resolution(pop, resolution_ms)`: the checks that need the time grid (run when a
  Simulation is made, before anything is built); by default tau_arp_ms in whole steps.
- `known_rate_hz(params)`: the rate the model fires at by construction, or None where the rate
  depends on the dynamics (the memory check of recorded spikes then assumes one).
- `to_engine(pop, resolution_ms)`: an `_engine.PopulationSpec` holding the model's parameters by
  name (the engine's model of the same name reads them; the fields every population has, name,
  first id, size and area, are set by ranvier.core.spec); by default every parameter, the lists
  (`list_parameters`) as sequences.
- `receptors(params)`: 0, or R for a model with receptors (NEST's multisynapse models): each
  projection onto it then names one, `rv.Projection(..., receptor=r)`, r in 1..R.
- `neuron_values(pop, name, seed)`: the value of a parameter (or "initial") for every neuron of
  the population, as the engine gives them.
- For the other formats: `pynn_weight_scale`, `from_absolute` and `initial_from_absolute`
  (pyNN.ranvier), `nest_model` (SONATA's model_template).

Units: potentials in mV, currents in pA, times in ms; each parameter's description says whether
its potential is relative to the resting potential or absolute. Every model's membrane potential
V, in the engine and as recorded (`Simulation(record_state=...)`, Result.state["V"]), is
relative to rest: V - E_L_mV for the models that have an E_L_mV.

Adding a model on the Python side is one module here, named as the model, holding one subclass
of NeuronModel; it is found and registered on import (docs/neuron-models.md walks through it, C++
kernel included).
"""
from __future__ import annotations

import importlib
import pkgutil

from .base import INITIAL_V, MAX_REFRACTORY_STEPS, MAX_TIME_STEPS, NeuronModel, Parameter, is_per_neuron, steps_beyond
from .lifca import INITIAL_STATES  # noqa: F401  (lifca's initial states, as ranvier.core.network names them)


def _models() -> dict[str, type[NeuronModel]]:
    """Every module of this package but base, each with the one model named as the module."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        models = [m for m in vars(module).values() if isinstance(m, type) and issubclass(m, NeuronModel)
                  and m.__module__ == module.__name__]
        if len(models) != 1 or models[0].name != info.name:
            raise ImportError(f"ranvier.core.neurons.{info.name} must define one NeuronModel subclass with name = "
                              f"{info.name!r}; it defines {[(m.__name__, m.name) for m in models]}")
        found[info.name] = models[0]
    return found


NEURON_MODELS: dict[str, type[NeuronModel]] = _models()
globals().update({m.__name__: m for m in NEURON_MODELS.values()})     # ranvier.core.neurons.PscExp, ...
__all__ = ["NEURON_MODELS", "NeuronModel", "Parameter", "INITIAL_STATES", "INITIAL_V", "MAX_REFRACTORY_STEPS",
           "MAX_TIME_STEPS", "is_per_neuron", "steps_beyond", *(m.__name__ for m in NEURON_MODELS.values())]
