"""Synapse kinds of a projection beyond static: spike-timing-dependent plasticity (STDP).

A projection is plastic when it is given `synapse=` one of these; its weights then change at
every delivered pre-synaptic spike, computed the way NEST 3.10 computes them, so the same
network gives the same weights in both simulators (tests/test_stdp_nest.py):

    rv.Projection(source="E", target="E", indegree=100, weight=0.5, delay_ms=1.5,
                  synapse=rv.STDP(lambda_=0.01, w_max=1.0, mu_plus=0, mu_minus=0))

- STDP: NEST's stdp_synapse (pairing="all-to-all") and its nearest-neighbour variants
  stdp_nn_symm_synapse ("nearest-symmetric"), stdp_nn_pre_centered_synapse
  ("nearest-presynaptic-centered") and stdp_nn_restr_synapse ("nearest-restricted"). Weights in
  units of w_max: facilitation w/w_max += lambda_ (1 - w/w_max)^mu_plus K+, depression w/w_max -=
  alpha lambda_ (w/w_max)^mu_minus K-, clipped to [0, w_max]. mu 0 is additive, 1 multiplicative.
- STDPPowerLaw: NEST's stdp_pl_synapse_hom (van Rossum, Gütig, Morrison): w += lambda_ w^mu K+,
  w -= lambda_ alpha w K-, w >= 0.

K+ decays with tau_plus_ms (the synapse's); K- with the target population's tau_minus_ms
(rv.Population(..., tau_minus_ms=20.0): NEST's tau_minus of the post-synaptic neuron). As in NEST,
the whole delay is dendritic: a post-synaptic spike at t reaches the synapse at t + delay, and a
weight changes only when a pre-synaptic spike is delivered. Simulation.weights() reads the weights
as NEST's GetStatus does (as of each synapse's last pre-synaptic spike), or brought up to date.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields

from .errors import ConfigError

PAIRINGS = {"all-to-all": "stdp", "nearest-symmetric": "stdp_nn_symmetric",
            "nearest-presynaptic-centered": "stdp_nn_pre_centered", "nearest-restricted": "stdp_nn_restricted"}
# The NEST synapse model each rule reproduces.
NEST_MODELS = {"stdp": "stdp_synapse", "stdp_nn_symmetric": "stdp_nn_symm_synapse",
               "stdp_nn_pre_centered": "stdp_nn_pre_centered_synapse",
               "stdp_nn_restricted": "stdp_nn_restr_synapse", "stdp_power_law": "stdp_pl_synapse_hom"}


def _real(where: str, name: str, value, *, positive=False, nonnegative=False, nonzero=False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ConfigError(f"{where}: '{name}' must be a finite number, got {value!r}")
    if positive and not value > 0:
        raise ConfigError(f"{where}: '{name}' must be positive, got {value!r}")
    if nonnegative and value < 0:
        raise ConfigError(f"{where}: '{name}' must be at least 0, got {value!r}")
    if nonzero and value == 0:
        raise ConfigError(f"{where}: '{name}' must not be zero (its sign is the sign of the weights)")
    return float(value)


@dataclass(kw_only=True)
class STDP:
    """Pair-based STDP with NEST's stdp_synapse parameters and defaults (lambda_ is NEST's
    lambda, w_max its Wmax; weights and w_max in the target's input unit)."""
    tau_plus_ms: float = 20.0
    lambda_: float = 0.01
    alpha: float = 1.0
    mu_plus: float = 1.0
    mu_minus: float = 1.0
    w_max: float = 100.0
    pairing: str = "all-to-all"

    @property
    def rule(self) -> str:
        return PAIRINGS[self.pairing]

    def validate(self, where: str) -> None:
        if self.pairing not in PAIRINGS:
            raise ConfigError(f"{where}: synapse pairing must be one of {sorted(PAIRINGS)}, got {self.pairing!r}")
        _real(where, "tau_plus_ms", self.tau_plus_ms, positive=True)
        for name in ("lambda_", "alpha", "mu_plus", "mu_minus"):
            _real(where, name, getattr(self, name), nonnegative=True)
        _real(where, "w_max", self.w_max, nonzero=True)

    def check_weights(self, where: str, low: float, high: float) -> None:
        """The initial weights must share w_max's sign (NEST's rule; zero counts as positive)."""
        if (low < 0) if self.w_max > 0 else (high >= 0):
            raise ConfigError(f"{where}: the initial weights (from {low:g} to {high:g}) must have the sign of "
                              f"w_max = {self.w_max:g}")


@dataclass(kw_only=True)
class STDPPowerLaw:
    """Power-law STDP with NEST's stdp_pl_synapse_hom parameters and defaults; weights >= 0."""
    tau_plus_ms: float = 20.0
    lambda_: float = 0.1
    alpha: float = 1.0
    mu: float = 0.4

    rule = "stdp_power_law"

    def validate(self, where: str) -> None:
        _real(where, "tau_plus_ms", self.tau_plus_ms, positive=True)
        for name in ("lambda_", "alpha", "mu"):
            _real(where, name, getattr(self, name), nonnegative=True)

    def check_weights(self, where: str, low: float, high: float) -> None:
        if low < 0:
            raise ConfigError(f"{where}: power-law STDP needs weights >= 0, got {low:g}")


SYNAPSE_KINDS = (STDP, STDPPowerLaw)


def plasticity_spec(synapse, engine_module):
    """The engine's PlasticitySpec of a synapse kind."""
    s = engine_module.PlasticitySpec()
    s.rule = synapse.rule
    for f in fields(synapse):
        if f.name != "pairing":
            setattr(s, f.name, float(getattr(synapse, f.name)))
    return s


def describe(synapse) -> str:
    """One line: the rule and its parameters, as NEST names the model."""
    if synapse is None:
        return "static"
    params = ", ".join(f"{f.name}={getattr(synapse, f.name)}" for f in fields(synapse))
    return f"{type(synapse).__name__}({params}) = NEST {NEST_MODELS[synapse.rule]}"
