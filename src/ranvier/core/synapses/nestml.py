"""Synapse kinds generated from NESTML synapse models (rv.nestml.synapse_model, docs/nestml.md):
one class per model, made from what ranvier.nestml.synapse generated, with the engine rule it
compiled and loaded."""
from __future__ import annotations

import math
import numbers

from ...errors import ConfigError


class NestmlSynapse:
    """A NESTML synapse model's parameters for one projection (a subclass per model)."""
    nestml_synapse = True
    sign_from_weights = True             # the engine takes the weights' sign as weight_sign
    rule = ""
    nest_model = ""
    nest_models: dict = {}
    nestml_file = ""
    parameter_defaults: dict = {}        # name -> literal default, or None (the model's expression)
    parameter_units: dict = {}
    state_names: tuple = ()
    weight_variable = "w"
    weight_is_state = True
    post_ports: tuple = ()

    def __init__(self, **parameters):
        unknown = sorted(set(parameters) - set(self.parameter_defaults))
        if unknown:
            raise ConfigError(f"{type(self).__name__}: unknown parameter(s) {unknown} of the NESTML synapse "
                              f"'{self.nest_model}'; its parameters: {sorted(self.parameter_defaults)}")
        self.parameters = dict(parameters)

    def value(self, name: str):
        """A parameter's value: the one given, else the model's literal default (None where the
        default is an expression the engine computes)."""
        return self.parameters.get(name, self.parameter_defaults.get(name))

    @property
    def w_max(self):
        """The bound of |weight| where the model names one (Wmax): the fixed-point scale plans
        for it (core/spec.py)."""
        value = self.value("Wmax")
        if value is None or not self.weight_is_state:
            raise AttributeError("w_max")
        return value

    def __reduce__(self):
        # by the model file: unpickled (a checkpoint's network) it is generated again, from the
        # cache (rebuild: ranvier.nestml's, which made the class)
        return (self.rebuild, (self.nestml_file, self.weight_variable, self.post_ports, self.parameters))

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.parameters.items())
        return f"{type(self).__name__}({given})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.parameters == self.parameters

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self.parameters.items()))))

    def engine_parameters(self) -> dict:
        return {k: float(v) for k, v in self.parameters.items()}

    def validate(self, where: str) -> None:
        for name, value in self.parameters.items():
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ConfigError(f"{where}: the NESTML synapse parameter '{name}' must be a finite number, "
                                  f"got {value!r}")

    def check_weights(self, where: str, low: float, high: float) -> None:
        if low < 0 < high:
            raise ConfigError(f"{where}: a NESTML synapse projection's weights must all have one sign, got "
                              f"{low:g} to {high:g}: split it into an excitatory and an inhibitory projection")


# One class per engine rule: a model file loaded twice gives the same kind.
_KINDS: dict = {}


def synapse_kind(generated, engine_name: str, post_ports, rebuild) -> type:
    """The synapse kind of a generated NESTML synapse model (ranvier.nestml.synapse.GeneratedSynapse);
    rebuild(path, weight_variable, post_ports, parameters): an instance made again from the file."""
    if engine_name in _KINDS:
        return _KINDS[engine_name]
    names = tuple(n for n, *_ in generated.state) + (("target_id", "index") if generated.random else ())
    attrs = {
        "__doc__": (f"NESTML synapse model '{generated.nestml_name}' ({generated.path}), compiled for Ranvier's "
                    f"engine as {engine_name}. Parameters (NESTML's names, NEST's units): " +
                    ", ".join(f"{n} [{u or '1'}]" for n, u, *_ in generated.parameters) +
                    f". Weight: '{generated.weight_variable}' (" +
                    ("a state variable the rule changes" if generated.weight_is_state else
                     "a parameter: the projection's weights, fixed") +
                    "). Per-synapse state (Simulation.synapse_state): " + (", ".join(names) or "none") + "."),
        "rule": engine_name,
        "nest_model": generated.nestml_name,
        "nest_models": {engine_name: generated.nestml_name},
        "nestml_file": generated.path,
        "parameter_defaults": {n: d for n, _, d, _ in generated.parameters},
        "parameter_units": {n: u for n, u, _, _ in generated.parameters},
        "state_names": names,
        "weight_variable": generated.weight_variable,
        "weight_is_state": generated.weight_is_state,
        "post_ports": tuple(post_ports),
        "rebuild": staticmethod(rebuild),
        "generated": generated,
    }
    if not generated.weight_is_state:
        attrs["efficacy_factor"] = 10           # the efficacy scales the fixed weight (a bound for the fixed point)
    cls = type("Nestml_" + generated.nestml_name, (NestmlSynapse,), attrs)
    _KINDS[engine_name] = cls
    return cls
