"""ppd_source: Poisson sources with a dead time in a window, no membrane (cpp/neurons/ppd_source.cpp)."""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from .base import MAX_REFRACTORY_STEPS, MAX_TIME_STEPS, NeuronModel, Parameter, first_bad, source_values


class PpdSource(NeuronModel):
    """Poisson sources with a dead time (NEST's ppd_sup_generator with one process, feeding parrot
    neurons; PyNN's SpikeSourcePoissonRefractory): each fires at mean rate rate_hz during
    [start_ms, stop_ms), silent otherwise, and cannot fire for dead_time_ms after a spike; input
    is ignored. On the grid, as NEST: after a spike a source is dead for floor(dead_time_ms / h)
    steps, then fires with probability h / (1000 / rate_hz - dead_time_ms) per step. The mean
    interval is 1000 / rate_hz ms where the dead time is a whole number of steps; no interval is
    shorter than the dead time plus one step. A source moves only inside its window."""
    name = "ppd_source"
    input_unit = None
    parameters = {
        "rate_hz": Parameter("Hz", "mean firing rate inside the window", per_neuron=True),
        "dead_time_ms": Parameter("ms", "dead time after each spike (PyNN's tau_refrac)", 0.0, per_neuron=True),
        "start_ms": Parameter("ms", "start of the firing window", 0.0, per_neuron=True),
        "stop_ms": Parameter("ms", "end of the firing window", per_neuron=True),
    }

    @classmethod
    def check(cls, pop, where):
        v = source_values(where, cls.name, pop.params, cls.parameters, pop.size)
        for key in cls.parameters:
            bad = v[key] < 0
            if bad.any():
                raise ConfigError(f"{where}: '{key}' must be zero or positive; {first_bad(bad)} has "
                                  f"{float(v[key][np.argmax(bad)])!r}")
        rate, dead = v["rate_hz"], v["dead_time_ms"]
        bad = (rate > 0) & (rate * dead >= 1000.0)
        if bad.any():
            i = int(np.argmax(bad))
            raise ConfigError(f"{where}: the mean interval 1000 / 'rate_hz' = {1000.0 / float(rate[i]):g} ms must be "
                              f"longer than 'dead_time_ms' = {float(dead[i]):g} ms ({first_bad(bad)}); lower the rate "
                              f"or the dead time")
        bad = v["stop_ms"] < v["start_ms"]
        if bad.any():
            raise ConfigError(f"{where}: 'stop_ms' must not be below 'start_ms'; {first_bad(bad)} has "
                              f"{float(v['stop_ms'][np.argmax(bad)])!r} < {float(v['start_ms'][np.argmax(bad)])!r}")

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        h = resolution_ms
        v = source_values(f"population '{pop.name}'", cls.name, pop.params, cls.parameters, pop.size)
        rate, dead = v["rate_hz"], v["dead_time_ms"]
        with np.errstate(divide="ignore"):
            free = np.where(rate > 0, 1000.0 / np.where(rate > 0, rate, 1.0) - dead, np.inf)
        bad = free < h
        if bad.any():
            i = int(np.argmax(bad))
            raise ConfigError(f"population '{pop.name}': 1000 / 'rate_hz' - 'dead_time_ms' = {float(free[i]):g} ms "
                              f"({first_bad(bad)}) is shorter than a step of {h:g} ms, so the rate cannot be reached; "
                              f"lower the rate or the dead time, or choose a finer resolution_ms")
        bad = np.floor(dead / h + 1e-9) > MAX_REFRACTORY_STEPS
        if bad.any():
            raise ConfigError(f"population '{pop.name}': 'dead_time_ms' ({first_bad(bad)}) is more than "
                              f"{MAX_REFRACTORY_STEPS} steps of {h:g} ms, the engine's 32-bit counter")

    @classmethod
    def known_rate_hz(cls, params):
        return float(np.max(params["rate_hz"]))   # inside the window: an upper bound over any run

    @classmethod
    def placement_rate_hz(cls, params, default_hz):
        return 0.0                              # the area placement's cost model counts no source events

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        latest = MAX_TIME_STEPS * resolution_ms     # a bound beyond any run: held at the last step counted
        q = {k: np.minimum(v, latest) if k in ("start_ms", "stop_ms") else v for k, v in pop.params.items()}
        s = cls._spec(pop)
        cls._per_neuron_spec(pop, s, q)     # by name: cpp/neurons/ppd_source.cpp
        return s
