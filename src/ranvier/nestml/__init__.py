"""NESTML models in Ranvier: `rv.nestml.neuron_model("my_model.nestml")` parses and checks the
model with NESTML's front end, has ODE-toolbox solve its equations, generates a C++ model file
for Ranvier's model interface (ranvier.nestml.generate), compiles it with the compiler and
options that built the engine into the user's cache folder (ranvier.nestml.build), loads it into
the engine and returns a model class for `rv.Population` (docs/nestml.md).
`rv.nestml.synapse_model("my_synapse.nestml")` does the same for a synapse model
(ranvier.nestml.synapse) and returns a synapse kind for `rv.Projection(synapse=...)`.

Needs the optional dependency `nestml` (pip install "ranvier[nestml]") and a C++ compiler.
"""
from __future__ import annotations

import fcntl
import math
import os
from pathlib import Path

from ..errors import ConfigError

__all__ = ["neuron_model", "synapse_model", "NESTML_VERSION"]

NESTML_VERSION = "9.0.0"


def _require_nestml() -> None:
    try:
        import pynestml  # noqa: F401
    except ImportError:
        raise ConfigError('NESTML models need the package nestml: pip install "ranvier[nestml]" '
                          f'(nestml=={NESTML_VERSION})') from None


def neuron_model(path: str | Path):
    """The model of a .nestml file as a neuron model class (a subclass of
    ranvier.core.neurons.NeuronModel, registered under the NESTML model's name): give it, or its
    name, as `rv.Population(..., model=...)`. Generated, compiled (once: the cache) and loaded
    into the engine on first use. Raises ranvier.errors.ConfigError in one line where NESTML
    rejects the model, a construct is outside what Ranvier's target supports (its line named),
    or no compiler is found."""
    from . import build
    generated = _generated(path)
    so, facts = build.compiled(generated.source, generated.nestml_name)
    engine_name = build.load(so)
    cls = _model_class(generated, engine_name)
    cls.compile_facts = facts
    from ..core.neurons import NEURON_MODELS
    old = NEURON_MODELS.get(cls.name)
    if old is not None and not getattr(old, "nestml_file", None):
        raise ConfigError(f"{generated.path}: the NESTML model '{cls.name}' has the name of a built-in model; "
                          f"rename it")
    NEURON_MODELS[cls.name] = cls
    return cls


def _generated(path):
    """The generated model of a .nestml file: from the cache (keyed by the file's text, the
    versions of nestml and Ranvier and this generator's code), or made by NESTML and
    ODE-toolbox and kept there (cache_root()/generated/<key>.json)."""
    from . import generate as gen_module

    def read(d):
        d["state"] = [gen_module.StateVariable(**s) for s in d["state"]]
        d["parameters"] = [tuple(p) for p in d["parameters"]]
        d["spike_ports"] = [tuple(p) for p in d["spike_ports"]]
        return gen_module.GeneratedModel(**d)
    return _cached(path, "", [gen_module.__file__], gen_module.generate, read)


def _cached(path, options: str, generator_files, make, read):
    """make(path) from the cache, or made and kept there; the key: the file's text and path, the
    versions of nestml and Ranvier, the generator's code (generator_files) and `options`."""
    import dataclasses
    import hashlib
    import json
    from importlib.metadata import PackageNotFoundError, version

    from . import build
    from ..version import ranvier_version
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"NESTML model file '{path}' does not exist")
    try:
        nestml_version = version("nestml")
    except PackageNotFoundError:
        nestml_version = None
    if nestml_version is None:
        _require_nestml()
    h = hashlib.sha256()
    for part in (path.read_bytes(), str(path).encode(), nestml_version.encode(), ranvier_version().encode(),
                 *(Path(f).read_bytes() for f in generator_files), options.encode()):
        h.update(part)
        h.update(b"\0")
    entry = build.cache_root() / "generated" / f"{h.hexdigest()[:24]}.json"
    if entry.is_file():
        return read(json.loads(entry.read_text()))
    _require_nestml()
    entry.parent.mkdir(parents=True, exist_ok=True)
    # One process generates (the ranks of an MPI job sharing the cache then all load the same
    # model); the others wait and read what it wrote.
    with open(entry.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if entry.is_file():
                return read(json.loads(entry.read_text()))
            g = make(path)
            tmp = entry.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(dataclasses.asdict(g)))
            os.replace(tmp, entry)
            return g
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _model_class(g, engine_name: str):
    from ..core.neurons.base import NeuronModel, Parameter, check_number

    parameters = {}
    for name, unit, default, comment in g.parameters:
        what = comment or f"NESTML parameter {name}"
        if default is None:
            what += " (left out: the model's default expression)"
        parameters[name] = Parameter(unit, what, math.nan if default is None else float(default), per_neuron=True)
    recordables = {}
    for key, s in zip(("c", "c_in"), g.state[1:3]):
        recordables[key] = (s.name, s.unit or "dimensionless", f"NESTML state variable {s.name}")

    class NestmlModel(NeuronModel):
        __doc__ = (f"NESTML model '{g.nestml_name}' ({g.path}), compiled for Ranvier's engine as {engine_name}. "
                   f"State variables by the engine's columns: " +
                   ", ".join(f"{s.name} -> {s.column}" for s in g.state) + ". V is the model's own "
                   f"'{g.state[0].name}' as the model defines it (absolute where its parameters are).")
        name = g.nestml_name
        input_unit = g.input_unit
        has_potential = True
        initial_states = ("reset",)
        takes_current = g.takes_current
        nest_model = None
        pynn_weight_scale = 1000.0     # PyNN's nA (uS) to NEST's pA (nS), as pyNN.nest scales native models

        @classmethod
        def receptors(cls, params):
            return g.receptors              # the model's spike ports, where it has several

        @classmethod
        def check(cls, pop, where):
            for key, value in pop.params.items():
                if key in pop.defaulted and isinstance(value, float) and math.isnan(value):
                    continue
                check_number(where, key, value)

        @classmethod
        def to_engine(cls, pop, resolution_ms):
            # a parameter left out whose default is an expression stays out: the engine computes it
            given = {k: v for k, v in pop.params.items()
                     if not (k in pop.defaulted and isinstance(v, float) and math.isnan(v))}
            s = cls._spec(None, None)
            cls._per_neuron_spec(pop, s, given)     # the means of those that vary, and their values
            return s

        @classmethod
        def _spec(cls, pop=None, parameters=None):
            from .. import _engine
            s = _engine.PopulationSpec()
            s.model = cls.engine_name
            if parameters is not None:
                s.parameters = {k: float(v) for k, v in parameters.items()}
            return s

    NestmlModel.__name__ = NestmlModel.__qualname__ = "Nestml_" + g.nestml_name
    NestmlModel.parameters = parameters
    NestmlModel.recordables = recordables
    NestmlModel.engine_name = engine_name
    NestmlModel.nestml_file = g.path
    NestmlModel.state_columns = {s.name: s.column for s in g.state}
    NestmlModel.generated = g
    return NestmlModel


def synapse_model(path: str | Path, *, weight_variable: str = "w", post_ports=("post_spikes",)):
    """The synapse model of a .nestml file as a synapse kind: a class whose instances, made with
    the model's parameters by their NESTML names (`kind(**{"lambda": 0.01, "Wmax": 100.0})`), go
    to `rv.Projection(synapse=...)`. weight_variable: the model's weight (a state variable that
    the rule changes, or a parameter: the projection's weights, fixed); post_ports: the spike
    ports that receive the target's spikes (NESTML's post_ports of a neuron-synapse pair).
    Generated, compiled (once: the cache) and loaded into the engine on first use; ConfigError
    in one line as for neuron_model()."""
    from . import build, synapse as syn_module
    post_ports = tuple(post_ports)

    def read(d):
        d["parameters"] = [tuple(p) for p in d["parameters"]]
        d["state"] = [tuple(p) for p in d["state"]]
        return syn_module.GeneratedSynapse(**d)
    from . import generate as gen_module
    g = _cached(path, f"synapse {weight_variable} {post_ports}", [syn_module.__file__, gen_module.__file__],
                lambda p: syn_module.generate(p, weight_variable, post_ports), read)
    so, facts = build.compiled(g.source, g.nestml_name)
    engine_name = build.load_rule(so)
    from ..core.synapses.nestml import synapse_kind
    cls = synapse_kind(g, engine_name, post_ports, _rebuilt_synapse)
    cls.compile_facts = facts
    return cls


def _rebuilt_synapse(path, weight_variable, post_ports, parameters):
    """A NESTML synapse kind's instance made again from its file (unpickling: checkpoints)."""
    return synapse_model(path, weight_variable=weight_variable, post_ports=post_ports)(**parameters)
