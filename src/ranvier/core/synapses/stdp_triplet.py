"""rv.STDPTriplet: NEST's stdp_triplet_synapse (the engine's rule stdp_triplet:
cpp/synapses/stdp_triplet.cpp)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError
from ._checks import real


@dataclass(kw_only=True)
class STDPTriplet:
    """Triplet STDP (Pfister & Gerstner 2006, all-to-all) with NEST's stdp_triplet_synapse
    parameters and defaults, in absolute units (the target's input unit); weights share w_max's
    sign. The post-synaptic traces are the target population's: tau_minus_ms and
    tau_minus_triplet_ms (NEST's tau_minus and tau_minus_triplet of the neuron)."""
    tau_plus_ms: float = 16.8           # NEST tau_plus: the pair pre-synaptic trace K+
    tau_plus_triplet_ms: float = 101.0  # NEST tau_plus_triplet (tau_x): the triplet pre-synaptic trace
    Aplus: float = 5e-10
    Aminus: float = 7e-3
    Aplus_triplet: float = 6.2e-3
    Aminus_triplet: float = 2.3e-4
    w_max: float = 100.0                # NEST Wmax
    Kplus: float = 0.0                  # initial traces: the engine starts both at 0
    Kplus_triplet: float = 0.0

    rule = "stdp_triplet"
    nest_model = "stdp_triplet_synapse"
    nest_models = {rule: nest_model}
    # NEST's parameter name -> field (synapses.from_nest, to_nest)
    nest_parameters = {"tau_plus": "tau_plus_ms", "tau_plus_triplet": "tau_plus_triplet_ms", "Aplus": "Aplus",
                       "Aminus": "Aminus", "Aplus_triplet": "Aplus_triplet",
                       "Aminus_triplet": "Aminus_triplet", "Wmax": "w_max", "Kplus": "Kplus",
                       "Kplus_triplet": "Kplus_triplet"}

    def engine_parameters(self) -> dict:
        return {"tau_plus_ms": self.tau_plus_ms, "tau_plus_triplet_ms": self.tau_plus_triplet_ms,
                "Aplus": self.Aplus, "Aminus": self.Aminus, "Aplus_triplet": self.Aplus_triplet,
                "Aminus_triplet": self.Aminus_triplet, "w_max": self.w_max}

    def validate(self, where: str) -> None:
        real(where, "tau_plus_ms", self.tau_plus_ms, positive=True)
        real(where, "tau_plus_triplet_ms", self.tau_plus_triplet_ms, positive=True)
        for name in ("Aplus", "Aminus", "Aplus_triplet", "Aminus_triplet"):
            real(where, name, getattr(self, name), nonnegative=True)
        real(where, "w_max", self.w_max, nonzero=True)
        for name in ("Kplus", "Kplus_triplet"):
            if real(where, name, getattr(self, name)) != 0:
                raise ConfigError(f"{where}: '{name}' (the initial pre-synaptic trace) must be 0, got "
                                  f"{getattr(self, name)!r}: every synapse starts with empty traces")

    def check_weights(self, where: str, low: float, high: float) -> None:
        if self.w_max > 0 and low < 0:
            raise ConfigError(f"{where}: triplet STDP with w_max > 0 needs weights >= 0, got {low:g}")
        if self.w_max < 0 and high > 0:
            raise ConfigError(f"{where}: triplet STDP with w_max < 0 needs weights <= 0, got {high:g}")
