"""NESTML neuron and synapse models in pyNN.ranvier, as PyNN 0.13's pyNN.nest.nestml offers them:

    celltype = sim.nestml.nestml_cell_type("my_neuron", "my_neuron.nestml")   # or the source text
    cells = sim.Population(100, celltype(tau_m=20.0))
    stdp = sim.nestml.nestml_synapse_type("stdp", "stdp_synapse.nestml")
    sim.Projection(cells, cells, connector, stdp(weight=0.05, delay=1.5, Wmax=100.0))

The returned class is a cell type with the NESTML model's own names and NEST's units, as
pyNN.nest's native cell types are: its parameters (defaults the model's), its state variables
recordable by name (the membrane potential and the next two state variables the engine keeps
recordable: ranvier.nestml), weights in nA (or uS) scaled by 1000 into the model's pA (or nS, or
mV), receptor types 'excitatory' and 'inhibitory'. The model is generated, compiled (cached) and
loaded when the cell type is made (ranvier.nestml.neuron_model; docs/nestml.md), so a script may
call this before or after setup(). Parameters may vary per cell; initialize() sets the
membrane potential (the model's first state variable) per cell, and the others start from the
state block's initial values (initialize() to another value is refused).
"""
from __future__ import annotations

import hashlib
import math
from pathlib import Path

from pyNN.standardmodels import StandardCellType, build_translations

__all__ = ["nestml_cell_type", "nestml_synapse_type"]


def _model_file(nestml_description) -> Path:
    """A path to a .nestml file: the given one, or the source text kept in Ranvier's cache
    folder under its digest (so the compiled model is found again)."""
    text = str(nestml_description)
    if "\n" not in text and Path(text).is_file():
        return Path(text)
    if "model " not in text:
        from ranvier.errors import ConfigError
        raise ConfigError(f"pyNN.ranvier.nestml: {text[:80]!r} is neither a .nestml file nor NESTML source "
                          f"(a 'model <name>:' block)")
    from ranvier.nestml.build import cache_root
    folder = cache_root() / "pynn"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.nestml"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def _initial_value(state_variable, defaults: dict) -> float:
    """The value a state variable starts from, where the model gives a number or a parameter's
    name (V_m = E_L), else NaN."""
    text = (state_variable.initial or "").strip()
    if text in defaults:
        return float(defaults[text])
    try:
        return float(text)
    except ValueError:
        return math.nan


def nestml_cell_type(name: str, nestml_description) -> type:
    """A PyNN cell type for the NESTML neuron model `nestml_description` (a .nestml file's path
    or NESTML source), named `name`. Raises ranvier.errors.ConfigError in one line where NESTML
    or Ranvier's NESTML target refuses the model."""
    import ranvier.nestml

    model = ranvier.nestml.neuron_model(_model_file(nestml_description))
    g = model.generated
    defaults = {n: float(d) for n, _, d, _ in g.parameters if d is not None}
    # the state variables the engine records (ranvier.nestml: V, c, c_in) by their NESTML names
    keys = ["V"] + list(model.recordables)
    names = [g.state[0].name] + [model.recordables[k][0] for k in model.recordables]
    units = {n: (s.unit or "dimensionless") for s in g.state for n in [s.name] if n in names}
    initial = {s.name: _initial_value(s, defaults) for s in g.state if s.name in names}
    attributes = {
        "__doc__": f"NESTML model '{g.nestml_name}' ({g.path}) on Ranvier's engine.",
        "ranvier_model": model.name,
        "default_parameters": defaults,
        "default_initial_values": initial,
        "translations": build_translations(*[(n, n) for n in defaults]),
        "recordable": names + ["spikes"],
        "units": {**units, "spikes": "ms"},
        "variable_map": dict(zip(names, keys)),
        "scale_factors": {n: 1.0 for n in names},
        # several spike ports: receptors by the ports' names (pyNN.nest's receptor types of the model)
        "receptor_types": [n for n, _ in g.spike_ports] if g.receptors else ["excitatory", "inhibitory"],
        "receptor_numbers": {n: r + 1 for r, (n, _) in enumerate(g.spike_ports)} if g.receptors else None,
        "conductance_based": g.input_unit == "nS",
        "injectable": g.takes_current,
        "absolute_v": True,                 # V is the model's own variable, not V - E_L
        "nestml_model": model,
    }
    return type(name, (StandardCellType,), attributes)


def nestml_synapse_type(synapse_name, nestml_description, postsynaptic_neuron_nestml_description=None,
                        weight_variable="w", delay_variable=None) -> type:
    """A PyNN synapse type for the NESTML synapse model `nestml_description` (a .nestml file's
    path or NESTML source), named `synapse_name`, as pyNN.nest.nestml's: its parameters by the
    model's names in NEST's units (defaults the model's literal ones), weight and delay besides.
    As pyNN.nest's native and NESTML synapse types, the weight is in NEST's units (pA or nS, not
    scaled), and Projection.get("weight") gives it divided by 1000. The rule keeps the post-synaptic
    traces in the synapse (rv.nestml.synapse_model, docs/nestml.md), so no neuron is generated
    with it: `postsynaptic_neuron_nestml_description`, where given, is made the class's
    `postsynaptic_cell_type` with nestml_cell_type, the neuron to connect to as with pyNN.nest.
    Raises ranvier.errors.ConfigError in one line where NESTML or Ranvier refuses the model."""
    import ranvier.nestml
    from pyNN.standardmodels import StandardSynapseType

    if delay_variable is not None:
        raise NotImplementedError(f"pyNN.ranvier: nestml_synapse_type({synapse_name!r}, delay_variable="
                                  f"{delay_variable!r}): a synapse's delay is its connection's; a model that reads "
                                  f"its delay as a variable is not supported yet")
    kind = ranvier.nestml.synapse_model(_model_file(nestml_description), weight_variable=weight_variable)
    defaults = {n: float(d) for n, d in kind.parameter_defaults.items() if d is not None}

    def minimum_delay(self):
        from .simulator import state
        return state.min_delay
    attributes = {
        "__doc__": f"NESTML synapse model '{kind.nest_model}' ({kind.nestml_file}) on Ranvier's engine.",
        "default_parameters": {"weight": 0.0, "delay": None, **defaults},
        "translations": _identity_translations(["weight", "delay", *defaults]),
        "ranvier_nestml_kind": kind,
        "_get_minimum_delay": minimum_delay,
    }
    cls = type(synapse_name, (StandardSynapseType,), attributes)
    if postsynaptic_neuron_nestml_description is not None:
        cls.postsynaptic_cell_type = nestml_cell_type(synapse_name + "_postsynaptic_neuron",
                                                      postsynaptic_neuron_nestml_description)
    return cls


def _identity_translations(names) -> dict:
    """PyNN's translations of names kept as they are, by functions rather than PyNN's evaluated
    expressions (NESTML's `lambda` is a Python keyword)."""
    def same(name):
        return lambda **parameters: parameters[name]
    return {n: {"translated_name": n, "forward_transform": same(n), "reverse_transform": same(n), "type": "simple"}
            for n in names}
