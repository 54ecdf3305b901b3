"""Synapse kinds beyond static, one file each, and their registry.

A kind is a dataclass of its parameters that provides
- `rule`: the engine's rule (a name in cpp/synapses/registry.cpp), and `nest_model`: the NEST
  synapse model it reproduces; `nest_models`: every (rule -> NEST model) the class can give;
- `engine_parameters()`: {name: value} as the engine's rule reads them (rule_parameter);
- `validate(where)` and `check_weights(where, low, high)`: ConfigError naming the field.
Optional: `state_names`, the names of the rule's per-synapse state doubles (Simulation.synapse_state),
`sign_from_weights = True` where the weights' sign is not a parameter: the engine then gets
it as the parameter weight_sign (-1 or 1; the kind's check_weights keeps them of one sign), and
`weight_fixed = True` where a delivered efficacy is the weight itself, which never changes (the
fixed-point scale then plans for the weights alone, as for static synapses: core/spec.py), or
`efficacy_factor` where the efficacy delivered reaches that multiple of the weight;
`nest_parameters`, {NEST's parameter name: field}, for from_nest and to_nest (SONATA edge types
and comparisons with NEST name a synapse so), and `nest_model_fields` where the NEST model's
name sets a field (rv.STDP's pairing).
A new kind is a file here and a line in KINDS.
"""
from __future__ import annotations

from dataclasses import fields

from ...errors import ConfigError

from .bernoulli import Bernoulli
from .quantal_stp import QuantalSTP
from .stdp import PAIRINGS, STDP
from .stdp_power_law import STDPPowerLaw
from .stdp_triplet import STDPTriplet
from .tsodyks import TsodyksMarkram
from .vogels_sprekeler import VogelsSprekeler

KINDS = (STDP, STDPPowerLaw, STDPTriplet, TsodyksMarkram, Bernoulli, QuantalSTP, VogelsSprekeler)

# The NEST synapse model of each engine rule.
NEST_MODELS = {rule: nest for kind in KINDS for rule, nest in kind.nest_models.items()}


def plasticity_spec(synapse, engine_module, weights_negative: bool = False):
    """The engine's PlasticitySpec of a synapse kind; weights_negative: the projection's weights
    are below 0 (for the kinds with sign_from_weights)."""
    s = engine_module.PlasticitySpec()
    s.rule = synapse.rule
    params = {name: float(value) for name, value in synapse.engine_parameters().items()}
    if getattr(synapse, "sign_from_weights", False):
        params["weight_sign"] = -1.0 if weights_negative else 1.0
    s.parameters = params
    return s


def from_nest(model: str, params: dict, where: str):
    """The synapse kind of a NEST synapse model with parameters by NEST's names (None for
    static_synapse, which takes none); ConfigError naming the model or parameter otherwise.
    Weights and delays are the connections' own, never parameters here."""
    supported = ["static_synapse", *sorted(NEST_MODELS.values())]
    if model == "static_synapse":
        if params:
            raise ConfigError(f"{where}: static_synapse takes no parameters here, got {sorted(params)} (weights and "
                              f"delays are the edges' own)")
        return None
    kind = next((k for k in KINDS if model in k.nest_models.values()), None)
    if kind is None:
        raise ConfigError(f"{where}: NEST synapse model '{model}' is not supported; supported: {supported}")
    unknown = sorted(set(params) - set(kind.nest_parameters))
    if unknown:
        raise ConfigError(f"{where}: {model} parameter(s) {unknown} are not supported; supported: "
                          f"{sorted(kind.nest_parameters)}" + (" (weights and delays are the edges' own)"
                                                               if {"weight", "delay"} & set(unknown) else ""))
    types = {f.name: f.type for f in fields(kind)}
    values = {}
    for nest_name, value in params.items():
        name = kind.nest_parameters[nest_name]
        if "int" in str(types[name]) and isinstance(value, float) and value.is_integer():
            value = int(value)                                  # JSON's 5.0 release sites: 5
        values[name] = value
    synapse = kind(**values, **getattr(kind, "nest_model_fields", {}).get(model, {}))
    synapse.validate(where)
    return synapse


def to_nest(synapse) -> tuple[str, dict]:
    """(NEST synapse model, its parameters by NEST's names) of a synapse kind (None: static)."""
    if synapse is None:
        return "static_synapse", {}
    params = {nest_name: getattr(synapse, name) for nest_name, name in synapse.nest_parameters.items()}
    return synapse.nest_model, {k: v for k, v in params.items() if v is not None}


def describe(synapse) -> str:
    """One line: the rule and its parameters, as NEST names the model."""
    if synapse is None:
        return "static"
    params = ", ".join(f"{f.name}={getattr(synapse, f.name)}" for f in fields(synapse))
    return f"{type(synapse).__name__}({params}) = NEST {synapse.nest_model}"


__all__ = ["Bernoulli", "KINDS", "NEST_MODELS", "PAIRINGS", "QuantalSTP", "STDP", "STDPPowerLaw", "STDPTriplet", "TsodyksMarkram", "VogelsSprekeler",
           "describe", "from_nest", "to_nest",
           "plasticity_spec"]
