"""rv.QuantalSTP: NEST's quantal_stp_synapse, stochastic release from n sites with short-term
depression and facilitation (the engine's rule quantal_stp: cpp/synapses/quantal_stp.cpp)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError
from ._checks import real


@dataclass(kw_only=True)
class QuantalSTP:
    """The quantal release model of Fuhrmann et al. (2002) and Loebel et al. (2009) with NEST's
    quantal_stp_synapse parameters and defaults (PyNN's MultiQuantalSynapse). Each synapse has n
    release sites. At a pre-synaptic spike after its first, u becomes U + u (1 - U) exp(-dt /
    tau_fac_ms) (U for tau_fac_ms 0) and each depleted site recovers with probability
    1 - exp(-dt / tau_rec_ms), dt being the time since the previous spike; each available site
    then releases with probability u, and the spike is delivered with weight x the sites
    released, which are depleted. At the first spike u is u0 (NEST's u, 0.5 whatever U is) and
    a0 sites are available (all n by default; NEST's a is 1 unless given, which pyNN.ranvier's
    MultiQuantalSynapse keeps, as pyNN.nest does). The weight never changes (Simulation.weights reads it);
    Simulation.synapse_state reads u and the sites available. The draws are keyed by the seed,
    the synapse and the spike: the same releases for any ranks, threads, placement and exchange,
    and after a resume; they agree with NEST's in distribution. Weights are all of one sign."""
    U: float = 0.5              # NEST U
    n: int = 1                  # NEST n: release sites
    tau_rec_ms: float = 800.0   # NEST tau_rec: recovery of a depleted site
    tau_fac_ms: float = 0.0     # NEST tau_fac: decay of u (0: none kept)
    u0: float = 0.5             # NEST u: the release probability at the first spike
    a0: int | None = None       # NEST a: the sites available at the first spike (None: n)

    rule = "quantal_stp"
    nest_model = "quantal_stp_synapse"
    nest_models = {rule: nest_model}
    # NEST's parameter name -> field (synapses.from_nest, to_nest)
    nest_parameters = {"U": "U", "n": "n", "tau_rec": "tau_rec_ms", "tau_fac": "tau_fac_ms", "u": "u0",
                       "a": "a0"}
    state_names = ("target_id", "index", "u", "available", "last_step")   # the engine's state doubles
    sign_from_weights = True             # the engine takes the weights' sign as weight_sign

    @property
    def efficacy_factor(self) -> int:
        """The largest efficacy in weights: every site released (core/spec.py's fixed-point bound)."""
        return int(self.n)

    def engine_parameters(self) -> dict:
        return {"U": self.U, "n": self.n, "tau_rec_ms": self.tau_rec_ms, "tau_fac_ms": self.tau_fac_ms, "u0": self.u0,
                "a0": self.n if self.a0 is None else self.a0}

    def validate(self, where: str) -> None:
        for name in ("U", "u0"):
            value = real(where, name, getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{where}: '{name}' must lie in [0, 1], got {value!r}")
        if isinstance(self.n, bool) or not isinstance(self.n, (int, float)) or self.n != int(self.n) \
                or not 1 <= self.n <= 1024:
            raise ConfigError(f"{where}: 'n' must be a whole number of release sites from 1 to 1024, got {self.n!r}")
        if self.a0 is not None and (isinstance(self.a0, bool) or not isinstance(self.a0, (int, float))
                                    or self.a0 != int(self.a0) or not 0 <= self.a0 <= self.n):
            raise ConfigError(f"{where}: 'a0' must be a whole number of sites from 0 to n = {self.n}, got {self.a0!r}")
        real(where, "tau_rec_ms", self.tau_rec_ms, positive=True)
        real(where, "tau_fac_ms", self.tau_fac_ms, nonnegative=True)

    def check_weights(self, where: str, low: float, high: float) -> None:
        if low < 0 < high:
            raise ConfigError(f"{where}: a QuantalSTP projection's weights must all have one sign, got "
                              f"{low:g} to {high:g}: split it into an excitatory and an inhibitory projection")
