"""rv.TsodyksMarkram: NEST's tsodyks_synapse, short-term depression and facilitation (the
engine's rule tsodyks: cpp/synapses/tsodyks.cpp)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError
from ._checks import real


@dataclass(kw_only=True)
class TsodyksMarkram:
    """Short-term plasticity of Tsodyks, Uziel & Markram (2000) with NEST's tsodyks_synapse
    parameters and defaults. Each synapse keeps u (release probability), x (recovered resources)
    and y (active resources); at a pre-synaptic spike, after the decay since the previous one
    (u with tau_fac_ms, y with tau_psc_ms, the inactive 1 - x - y back to x with tau_rec_ms),
    u += U (1 - u), and the spike is delivered with weight * u x, which moves from x to y. The
    weight itself never changes (Simulation.weights reads it); Simulation.synapse_state reads
    u, x, y. tau_psc_ms is the synapse's own (NEST's tau_psc): give the target's synaptic time
    constant for the standard model (pyNN.ranvier does). tau_fac_ms 0: no facilitation (u falls
    back to 0 between spikes, so it is U at each). Weights are all of one sign."""
    U: float = 0.5              # NEST U: the increment of u at a spike
    tau_psc_ms: float = 3.0     # NEST tau_psc
    tau_rec_ms: float = 800.0   # NEST tau_rec: recovery of the resources
    tau_fac_ms: float = 0.0     # NEST tau_fac: decay of u (0: none kept)
    u0: float = 0.0             # NEST u, x, y: each synapse's initial state
    x0: float = 1.0
    y0: float = 0.0

    rule = "tsodyks"
    nest_model = "tsodyks_synapse"
    nest_models = {rule: nest_model}
    # NEST's parameter name -> field (synapses.from_nest, to_nest)
    nest_parameters = {"U": "U", "tau_psc": "tau_psc_ms", "tau_rec": "tau_rec_ms", "tau_fac": "tau_fac_ms",
                       "u": "u0", "x": "x0", "y": "y0"}
    state_names = ("u", "x", "y")        # Simulation.synapse_state's columns: the engine's order
    sign_from_weights = True             # the engine takes the weights' sign as weight_sign

    def engine_parameters(self) -> dict:
        return {"U": self.U, "tau_psc_ms": self.tau_psc_ms, "tau_rec_ms": self.tau_rec_ms,
                "tau_fac_ms": self.tau_fac_ms, "u0": self.u0, "x0": self.x0, "y0": self.y0}

    def validate(self, where: str) -> None:
        for name in ("U", "u0"):
            value = real(where, name, getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{where}: '{name}' must lie in [0, 1], got {value!r}")
        real(where, "tau_psc_ms", self.tau_psc_ms, positive=True)
        real(where, "tau_rec_ms", self.tau_rec_ms, positive=True)
        real(where, "tau_fac_ms", self.tau_fac_ms, nonnegative=True)
        if self.tau_psc_ms == self.tau_rec_ms:
            raise ConfigError(f"{where}: 'tau_psc_ms' and 'tau_rec_ms' must differ, both are {self.tau_rec_ms!r}: "
                              f"the propagator from y to x divides by tau_psc - tau_rec (NEST's too)")
        x0 = real(where, "x0", self.x0, nonnegative=True)
        y0 = real(where, "y0", self.y0, nonnegative=True)
        if x0 + y0 > 1.0:
            raise ConfigError(f"{where}: 'x0' + 'y0' must be at most 1 (the inactive resources 1 - x - y are "
                              f"at least 0), got {x0!r} + {y0!r}")

    def check_weights(self, where: str, low: float, high: float) -> None:
        if low < 0 < high:
            raise ConfigError(f"{where}: a TsodyksMarkram projection's weights must all have one sign, got "
                              f"{low:g} to {high:g}: split it into an excitatory and an inhibitory projection")
