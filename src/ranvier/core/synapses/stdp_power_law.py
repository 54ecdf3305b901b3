"""rv.STDPPowerLaw: NEST's stdp_pl_synapse_hom (the engine's rule stdp_power_law:
cpp/synapses/stdp_power_law.cpp)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError
from ._checks import real


@dataclass(kw_only=True)
class STDPPowerLaw:
    """Power-law STDP with NEST's stdp_pl_synapse_hom parameters and defaults; weights >= 0."""
    tau_plus_ms: float = 20.0
    lambda_: float = 0.1
    alpha: float = 1.0
    mu: float = 0.4

    rule = "stdp_power_law"
    nest_model = "stdp_pl_synapse_hom"
    nest_models = {rule: nest_model}
    # NEST's parameter name -> field (synapses.from_nest, to_nest)
    nest_parameters = {"tau_plus": "tau_plus_ms", "lambda": "lambda_", "alpha": "alpha", "mu": "mu"}

    def engine_parameters(self) -> dict:
        return {"tau_plus_ms": self.tau_plus_ms, "lambda": self.lambda_, "alpha": self.alpha, "mu": self.mu}

    def validate(self, where: str) -> None:
        real(where, "tau_plus_ms", self.tau_plus_ms, positive=True)
        for name in ("lambda_", "alpha", "mu"):
            real(where, name, getattr(self, name), nonnegative=True)

    def check_weights(self, where: str, low: float, high: float) -> None:
        if low < 0:
            raise ConfigError(f"{where}: power-law STDP needs weights >= 0, got {low:g}")
