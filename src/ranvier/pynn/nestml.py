"""NESTML neuron models in pyNN.ranvier, as PyNN 0.13's pyNN.nest.nestml offers them:

    celltype = sim.nestml.nestml_cell_type("my_neuron", "my_neuron.nestml")   # or the source text
    cells = sim.Population(100, celltype(tau_m=20.0))

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

__all__ = ["nestml_cell_type"]


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
