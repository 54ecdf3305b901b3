"""gamma_source: gamma-process sources in a window, no membrane (cpp/neurons/gamma_source.cpp)."""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from .base import MAX_TIME_STEPS, NeuronModel, Parameter, first_bad, source_values


class GammaSource(NeuronModel):
    """Gamma-process sources (NEST's gamma_sup_generator with one process, feeding parrot neurons;
    PyNN's SpikeSourceGamma): each fires as a gamma process of order gamma_shape = k (a whole
    number) at mean rate rate_hz during [start_ms, stop_ms), silent otherwise; input is ignored.
    On the grid it is NEST's Markov chain of k phases, each left with probability
    k x rate x h per step (at most one phase a step), a spike on leaving the last: intervals
    of mean 1 / rate_hz and coefficient of variation sqrt((1 - k rate h) / k), 1 / sqrt(k) for
    k rate h << 1. A source starts in its last phase and moves only inside its window."""
    name = "gamma_source"
    input_unit = None
    parameters = {
        "rate_hz": Parameter("Hz", "mean firing rate inside the window (PyNN's beta / alpha)", per_neuron=True),
        "gamma_shape": Parameter("", "order k of the gamma process, a whole number >= 1 (PyNN's alpha)",
                                 per_neuron=True),
        "start_ms": Parameter("ms", "start of the firing window", 0.0, per_neuron=True),
        "stop_ms": Parameter("ms", "end of the firing window", per_neuron=True),
    }

    @classmethod
    def check(cls, pop, where):
        v = source_values(where, cls.name, pop.params, cls.parameters, pop.size)
        k = v["gamma_shape"]
        bad = (k < 1) | (k != np.floor(k)) | (k > 2**31 - 1)
        if bad.any():
            raise ConfigError(f"{where}: 'gamma_shape' must be a whole number >= 1 (the order of the gamma process); "
                              f"{first_bad(bad)} has {float(k[np.argmax(bad)])!r}")
        for key in ("rate_hz", "start_ms", "stop_ms"):
            bad = v[key] < 0
            if bad.any():
                raise ConfigError(f"{where}: '{key}' must be zero or positive; {first_bad(bad)} has "
                                  f"{float(v[key][np.argmax(bad)])!r}")
        bad = v["stop_ms"] < v["start_ms"]
        if bad.any():
            raise ConfigError(f"{where}: 'stop_ms' must not be below 'start_ms'; {first_bad(bad)} has "
                              f"{float(v['stop_ms'][np.argmax(bad)])!r} < {float(v['start_ms'][np.argmax(bad)])!r}")

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        v = source_values(f"population '{pop.name}'", cls.name, pop.params, cls.parameters, pop.size)
        q = v["rate_hz"] * v["gamma_shape"] * 1e-3 * resolution_ms
        bad = q > 1.0
        if bad.any():
            i = int(np.argmax(bad))
            raise ConfigError(f"population '{pop.name}': 'rate_hz' x 'gamma_shape' = "
                              f"{float(v['rate_hz'][i] * v['gamma_shape'][i]):g} Hz ({first_bad(bad)}) is more than one "
                              f"phase transition per step of {resolution_ms:g} ms (at most {1e3 / resolution_ms:g} Hz); "
                              f"lower the rate or the order, or choose a finer resolution_ms")

    @classmethod
    def known_rate_hz(cls, params):
        return float(np.max(params["rate_hz"]))   # inside the window: an upper bound over any run

    @classmethod
    def placement_rate_hz(cls, params, default_hz):
        return 0.0                              # the area placement's cost model counts no source events

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        # A window bound beyond the engine's step counts lies beyond any run: held at the last
        # step it counts, where it is never reached either.
        latest = MAX_TIME_STEPS * resolution_ms
        q = {k: np.minimum(v, latest) if k in ("start_ms", "stop_ms") else v for k, v in pop.params.items()}
        s = cls._spec(pop)
        cls._per_neuron_spec(pop, s, q)     # by name: cpp/neurons/gamma_source.cpp
        return s
