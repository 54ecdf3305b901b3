"""Synapse kinds beyond static, one file each, and their registry.

A kind is a dataclass of its parameters that provides
- `rule`: the engine's rule (a name in cpp/synapses/registry.cpp), and `nest_model`: the NEST
  synapse model it reproduces; `nest_models`: every (rule -> NEST model) the class can give;
- `engine_parameters()`: {name: value} as the engine's rule reads them (rule_parameter);
- `validate(where)` and `check_weights(where, low, high)`: ConfigError naming the field.
A new kind is a file here and a line in KINDS.
"""
from __future__ import annotations

from dataclasses import fields

from .stdp import PAIRINGS, STDP
from .stdp_power_law import STDPPowerLaw
from .stdp_triplet import STDPTriplet

KINDS = (STDP, STDPPowerLaw, STDPTriplet)

# The NEST synapse model of each engine rule.
NEST_MODELS = {rule: nest for kind in KINDS for rule, nest in kind.nest_models.items()}


def plasticity_spec(synapse, engine_module):
    """The engine's PlasticitySpec of a synapse kind."""
    s = engine_module.PlasticitySpec()
    s.rule = synapse.rule
    s.parameters = {name: float(value) for name, value in synapse.engine_parameters().items()}
    return s


def describe(synapse) -> str:
    """One line: the rule and its parameters, as NEST names the model."""
    if synapse is None:
        return "static"
    params = ", ".join(f"{f.name}={getattr(synapse, f.name)}" for f in fields(synapse))
    return f"{type(synapse).__name__}({params}) = NEST {synapse.nest_model}"


__all__ = ["KINDS", "NEST_MODELS", "PAIRINGS", "STDP", "STDPPowerLaw", "STDPTriplet", "describe", "plasticity_spec"]
