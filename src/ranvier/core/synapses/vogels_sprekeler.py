"""rv.VogelsSprekeler: NEST's vogels_sprekeler_synapse, PyNN's Vogels2011Rule (the engine's rule
vogels_sprekeler: cpp/synapses/vogels_sprekeler.cpp)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError
from ._checks import real


@dataclass(kw_only=True)
class VogelsSprekeler:
    """Symmetric inhibitory STDP (Vogels et al. 2011) with NEST's vogels_sprekeler_synapse
    parameters and defaults: every pre-post pairing facilitates by eta times the other side's
    trace (the source's with tau_ms, the target's with its tau_minus_ms), every arriving spike
    depresses by alpha eta; |w| within [0, |w_max|], weights of w_max's sign (in the target's
    input unit)."""
    tau_ms: float = 20.0
    eta: float = 0.001
    alpha: float = 0.12
    w_max: float = 1.0

    rule = "vogels_sprekeler"
    nest_model = "vogels_sprekeler_synapse"
    nest_models = {rule: nest_model}
    # NEST's parameter name -> field (synapses.from_nest, to_nest)
    nest_parameters = {"tau": "tau_ms", "eta": "eta", "alpha": "alpha", "Wmax": "w_max"}

    def engine_parameters(self) -> dict:
        return {"tau_ms": self.tau_ms, "eta": self.eta, "alpha": self.alpha, "w_max": self.w_max}

    def validate(self, where: str) -> None:
        real(where, "tau_ms", self.tau_ms, positive=True)
        for name in ("eta", "alpha"):
            real(where, name, getattr(self, name), nonnegative=True)
        real(where, "w_max", self.w_max, nonzero=True)

    def check_weights(self, where: str, low: float, high: float) -> None:
        """The initial weights share w_max's sign (NEST's rule; zero counts as either)."""
        if (low < 0) if self.w_max > 0 else (high > 0):
            raise ConfigError(f"{where}: the initial weights (from {low:g} to {high:g}) must have the sign of "
                              f"w_max = {self.w_max:g}")
