"""spike_train: spike trains given in advance, no membrane (cpp/neurons/spike_train.cpp)."""
from __future__ import annotations

import numbers

import numpy as np

from ...errors import ConfigError
from .base import NeuronModel, Parameter, check_times_fit


class SpikeTrain(NeuronModel):
    """Spike trains given in advance (NEST's spike_generator feeding a parrot_neuron): each neuron
    fires at the times of its train (ms, each a whole number of steps and > 0), ignores all input
    and has no membrane. spike_times_ms: one list of times per neuron, or one flat list that every
    neuron of the population fires at. Times are sorted on the way in; a time twice in a train
    is refused (a neuron fires at most once per step)."""
    name = "spike_train"
    input_unit = None
    parameters = {
        "spike_times_ms": Parameter("ms", "the times each neuron fires at: one list per neuron, or one list for all"),
    }

    @classmethod
    def read_values(cls, pop, where):
        value = pop.params["spike_times_ms"]
        if isinstance(value, tuple) and all(isinstance(t, np.ndarray) for t in value):
            return dict(pop.params), pop.initial              # read already (validate runs again)
        if isinstance(value, (str, bytes, numbers.Number)) or not hasattr(value, "__len__"):
            raise ConfigError(f"{where}: 'spike_times_ms' must be a list of times (ms) or one list per neuron, "
                              f"got {value!r:.60}")
        flat = all(np.ndim(t) == 0 for t in value)
        if not flat and len(value) != pop.size:
            raise ConfigError(f"{where}: 'spike_times_ms' gives {len(value)} trains for {pop.size} neurons; give "
                              f"one list per neuron, or one flat list of times for all of them")
        trains = []
        for x, train in enumerate([value] if flat else value):
            try:
                t = np.sort(np.asarray(train, dtype=np.float64).ravel())
            except (TypeError, ValueError):
                raise ConfigError(f"{where}: 'spike_times_ms' of neuron {x} must be numbers (ms), "
                                  f"got {train!r:.60}") from None
            bad = t[~(np.isfinite(t) & (t > 0))]
            if bad.size:
                raise ConfigError(f"{where}: neuron {x} fires at {bad[0]!r} ms: spike times must be finite and > 0 ms")
            same = np.flatnonzero(np.diff(t) == 0)
            if same.size:
                raise ConfigError(f"{where}: neuron {x} fires twice at {t[same[0]]:g} ms; a neuron fires at most "
                                  f"once per time step")
            trains.append(t)
        if not pop.initial == "reset":
            raise ConfigError(f"{where}: model 'spike_train' has no membrane potential; leave 'initial' at 'reset'")
        params = dict(pop.params)
        params["spike_times_ms"] = tuple(trains if not flat else trains * pop.size)
        return params, pop.initial

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        for x, t in enumerate(pop.params["spike_times_ms"]):
            steps = t / resolution_ms
            off = np.flatnonzero(np.abs(steps - np.rint(steps)) > 1e-9 * np.maximum(1.0, steps))
            if off.size:
                raise ConfigError(f"population '{pop.name}': neuron {x} fires at {t[off[0]]:g} ms, not a whole "
                                  f"number of steps of {resolution_ms} ms; round the time or change resolution_ms")
            check_times_fit(pop, f"neuron {x} fires at", t, resolution_ms)

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec(pop)
        trains = pop.params["spike_times_ms"]
        begin = np.concatenate([[0], np.cumsum([t.size for t in trains])]).astype(np.int64).tolist()
        # a spike found while integrating step s has time (s + 1) h
        steps = [np.rint(t / resolution_ms).astype(np.int64) - 1 for t in trains]
        s.integer_sequences = {"train_begin": begin,
                               "train_steps": (np.concatenate(steps) if steps else np.zeros(0, np.int64)).tolist()}
        return s
