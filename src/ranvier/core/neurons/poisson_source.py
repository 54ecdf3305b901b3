"""poisson_source: Poisson sources in a window, no membrane (cpp/neurons/poisson_source.cpp)."""
from __future__ import annotations

import numpy as np

from ..checks import positive
from ...errors import ConfigError
from ..random import Distribution
from .base import MAX_TIME_STEPS, NeuronModel, Parameter, is_per_neuron


class PoissonSource(NeuronModel):
    """Poisson sources (thalamic input): fire as independent Poisson processes at rate_hz during
    [start_ms, stop_ms), silent otherwise; input is ignored."""
    name = "poisson_source"
    input_unit = None
    parameters = {
        "rate_hz": Parameter("Hz", "firing rate inside the window", per_neuron=True),
        "start_ms": Parameter("ms", "start of the firing window", 0.0, per_neuron=True),
        "stop_ms": Parameter("ms", "end of the firing window", per_neuron=True),
    }

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        if any(is_per_neuron(q[k]) for k in cls.parameters):        # one value per neuron (PyNN's per-cell rates)
            for k in cls.parameters:
                if isinstance(q[k], Distribution):
                    raise ConfigError(f"{where}: '{k}' can vary per neuron in model 'poisson_source' as an array of "
                                      f"one value per neuron, not as a distribution")
                v = np.asarray(q[k] if isinstance(q[k], np.ndarray) else [q[k]], dtype=float)
                if not np.all(np.isfinite(v) & (v >= 0)):
                    raise ConfigError(f"{where}: per neuron, '{k}' must be finite numbers >= 0")
            if np.any(np.asarray(q["stop_ms"]) < np.asarray(q["start_ms"])):
                raise ConfigError(f"{where}: 'stop_ms' must not be below 'start_ms'")
            return
        positive(where, "rate_hz", q["rate_hz"], allow_zero=True)
        start = positive(where, "start_ms", q["start_ms"], allow_zero=True)
        stop = positive(where, "stop_ms", q["stop_ms"], allow_zero=True)
        if stop < start:
            raise ConfigError(f"{where}: 'stop_ms' ({stop}) must not be below 'start_ms' ({start})")

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
        cls._per_neuron_spec(pop, s, q)     # by name; the window in steps of h: cpp/neurons/poisson_source.hpp
        return s
