"""ignore_and_fire: fires at a fixed rate, ignores its input (cpp/neurons/ignore_and_fire.cpp)."""
from __future__ import annotations

from ..checks import positive
from ...errors import ConfigError
from .base import MAX_TIME_STEPS, NeuronModel, Parameter


class IgnoreAndFire(NeuronModel):
    """Ignore-and-fire (the multi-area benchmark): fires at a fixed rate with a phase drawn per
    neuron at build time; receives and buffers input like any neuron but ignores it, so its
    traffic is fixed by design. The period is rounded to whole steps."""
    name = "ignore_and_fire"
    input_unit = None
    parameters = {
        "rate_hz": Parameter("Hz", "firing rate (the period 1000 / rate_hz ms is rounded to whole steps)"),
    }

    @classmethod
    def check(cls, pop, where):
        positive(where, "rate_hz", pop.params["rate_hz"])

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        period = 1000.0 / float(pop.params["rate_hz"]) / resolution_ms
        if round(period) < 1:
            raise ConfigError(f"population '{pop.name}': 'rate_hz' = {pop.params['rate_hz']} gives a period "
                              f"below one step of {resolution_ms} ms")
        if not period <= MAX_TIME_STEPS:          # infinite too: the rate 1e-310 Hz
            raise ConfigError(f"population '{pop.name}': 'rate_hz' = {pop.params['rate_hz']:g} Hz gives a period of "
                              f"{period:.3g} steps of {resolution_ms:g} ms; the engine counts steps in 64 bits: the "
                              f"smallest rate is {1000.0 / (MAX_TIME_STEPS * resolution_ms):.3g} Hz")

    @classmethod
    def known_rate_hz(cls, params):
        return float(params["rate_hz"])

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        # the engine takes the period 1000 / rate_hz ms to the nearest step, at least one
        return cls._spec(pop, {"rate_hz": pop.params["rate_hz"]})
