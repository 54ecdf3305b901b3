"""rv.STDP: NEST's stdp_synapse and its nearest-neighbour variants (the engine's rules stdp,
stdp_nn_symmetric, stdp_nn_pre_centered, stdp_nn_restricted: cpp/synapses/)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError
from ._checks import real

# pairing -> the engine's rule; the engine's rule -> the NEST synapse model it reproduces
PAIRINGS = {"all-to-all": "stdp", "nearest-symmetric": "stdp_nn_symmetric",
            "nearest-presynaptic-centered": "stdp_nn_pre_centered", "nearest-restricted": "stdp_nn_restricted"}
NEST_MODELS = {"stdp": "stdp_synapse", "stdp_nn_symmetric": "stdp_nn_symm_synapse",
               "stdp_nn_pre_centered": "stdp_nn_pre_centered_synapse", "stdp_nn_restricted": "stdp_nn_restr_synapse"}


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

    nest_models = NEST_MODELS
    # NEST's parameter name -> field (synapses.from_nest, to_nest)
    nest_parameters = {"tau_plus": "tau_plus_ms", "lambda": "lambda_", "alpha": "alpha", "mu_plus": "mu_plus",
                       "mu_minus": "mu_minus", "Wmax": "w_max"}
    # the field each NEST model name sets (synapses.from_nest)
    nest_model_fields = {NEST_MODELS[rule]: {"pairing": pairing} for pairing, rule in PAIRINGS.items()}

    @property
    def rule(self) -> str:
        return PAIRINGS[self.pairing]

    @property
    def nest_model(self) -> str:
        return NEST_MODELS[self.rule]

    def engine_parameters(self) -> dict:
        return {"tau_plus_ms": self.tau_plus_ms, "lambda": self.lambda_, "alpha": self.alpha,
                "mu_plus": self.mu_plus, "mu_minus": self.mu_minus, "w_max": self.w_max}

    def validate(self, where: str) -> None:
        if self.pairing not in PAIRINGS:
            raise ConfigError(f"{where}: synapse pairing must be one of {sorted(PAIRINGS)}, got {self.pairing!r}")
        real(where, "tau_plus_ms", self.tau_plus_ms, positive=True)
        for name in ("lambda_", "alpha", "mu_plus", "mu_minus"):
            real(where, name, getattr(self, name), nonnegative=True)
        real(where, "w_max", self.w_max, nonzero=True)

    def check_weights(self, where: str, low: float, high: float) -> None:
        """The initial weights must share w_max's sign (NEST's rule; zero counts as positive)."""
        if (low < 0) if self.w_max > 0 else (high >= 0):
            raise ConfigError(f"{where}: the initial weights (from {low:g} to {high:g}) must have the sign of "
                              f"w_max = {self.w_max:g}")
