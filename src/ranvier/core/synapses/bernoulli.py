"""rv.Bernoulli: NEST's bernoulli_synapse, each spike transmitted with a fixed probability (the
engine's rule bernoulli: cpp/synapses/bernoulli.cpp)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError
from ._checks import real


@dataclass(kw_only=True)
class Bernoulli:
    """A stochastic synapse with NEST's bernoulli_synapse parameter (PyNN's
    SimpleStochasticSynapse): each pre-synaptic spike is transmitted with probability p_transmit,
    independently for every synapse and every spike, with the synapse's weight; a spike not
    transmitted does not reach the target at all (it still counts among the synaptic events,
    which count the synapses each spike reached). The weight never changes (Simulation.weights reads it). The draws are keyed by the seed, the
    synapse (its target and its index onto it) and the spike's step: the same transmissions for
    any ranks, threads, placement and exchange, and after a resume. They are not NEST's draws:
    the two agree in distribution. p_transmit 1: a static synapse; 0: nothing transmitted.
    Weights are all of one sign."""
    p_transmit: float = 1.0     # NEST p_transmit (PyNN's p)

    rule = "bernoulli"
    nest_model = "bernoulli_synapse"
    nest_models = {rule: nest_model}
    # NEST's parameter name -> field (synapses.from_nest, to_nest)
    nest_parameters = {"p_transmit": "p_transmit"}
    sign_from_weights = True             # the engine takes the weights' sign as weight_sign
    weight_fixed = True                  # delivers the weight itself: no bound beyond it (core/spec.py)

    def engine_parameters(self) -> dict:
        return {"p_transmit": self.p_transmit}

    def validate(self, where: str) -> None:
        value = real(where, "p_transmit", self.p_transmit)
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"{where}: 'p_transmit' must lie in [0, 1] (a probability), got {value!r}")

    def check_weights(self, where: str, low: float, high: float) -> None:
        if low < 0 < high:
            raise ConfigError(f"{where}: a Bernoulli projection's weights must all have one sign, got "
                              f"{low:g} to {high:g}: split it into an excitatory and an inhibitory projection")
