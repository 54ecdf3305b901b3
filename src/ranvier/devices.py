"""Stimulation devices: currents injected into neurons.

A current source is one population's neurons (all, or chosen ones) and a piecewise-constant
current in pA: NEST's step_current_generator and dc_generator, PyNN's StepCurrentSource and
DCSource, SONATA's current clamp. The engine adds it to the model's constant current I_e in
the exact integration of every step, so the trace is exact on the grid.

Timing: an amplitude set at time t enters the integration of the steps from t on: V(t + h) is
the first potential it moves. NEST's generators reach a neuron over a connection with a delay
d: NEST's step_current_generator with amplitude_times [t], connected with delay d, is
StepCurrent(times_ms=[t + d]), V equal at every step within 1e-9 mV (tests/test_currents.py,
NEST 3.10, d = 0.1 and 1 ms).

Models that take a current: NeuronModel.takes_current (iaf_psc_alpha); others are refused by
name.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import ConfigError


@dataclass
class StepCurrent:
    """A current (pA) injected into neurons of population `target`: amplitudes_pA[i] from
    times_ms[i] until times_ms[i + 1] (the last one until the end of the run), 0 before
    times_ms[0]. neurons: population-local indices, None for every neuron of the population.
    Several sources on one neuron add up."""
    target: str
    times_ms: Sequence[float]
    amplitudes_pA: Sequence[float]
    neurons: Sequence[int] | None = None

    def validate(self, pop) -> None:
        from .neurons import NEURON_MODELS
        where = f"current source on '{self.target}'"
        model = NEURON_MODELS[pop.model]
        if not getattr(model, "takes_current", False):
            takers = sorted(n for n, m in NEURON_MODELS.items() if getattr(m, "takes_current", False))
            raise ConfigError(f"{where}: model '{pop.model}' takes no injected current; models that do: {takers}")
        times = _numbers(where, "times_ms", self.times_ms)
        amps = _numbers(where, "amplitudes_pA", self.amplitudes_pA)
        if times.size != amps.size or times.size == 0:
            raise ConfigError(f"{where}: 'times_ms' ({times.size}) and 'amplitudes_pA' ({amps.size}) must be two "
                              f"non-empty lists of the same length")
        if np.any(times < 0) or np.any(np.diff(times) <= 0):
            raise ConfigError(f"{where}: 'times_ms' must be >= 0 and strictly increasing, got {times.tolist()[:8]}")
        if self.neurons is not None:
            ids = np.asarray(self.neurons)
            if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
                raise ConfigError(f"{where}: 'neurons' must be a list of population-local indices (integers) or None, "
                                  f"got {self.neurons!r:.60}")
            if ids.min() < 0 or ids.max() >= pop.size:
                raise ConfigError(f"{where}: 'neurons' must be in [0, {pop.size}), got {int(ids.min())}..{int(ids.max())}")
            if np.unique(ids).size != ids.size:
                raise ConfigError(f"{where}: 'neurons' names a neuron twice")
        self.times_ms, self.amplitudes_pA = times, amps

    def steps(self, resolution_ms: float) -> np.ndarray:
        """The first step each amplitude enters; refuses times off the grid."""
        steps = np.asarray(self.times_ms) / resolution_ms
        off = np.abs(steps - np.rint(steps)) > 1e-9 * np.maximum(1.0, steps)
        if off.any():
            t = float(np.asarray(self.times_ms)[off][0])
            raise ConfigError(f"current source on '{self.target}': time {t:g} ms is not a whole number of steps of "
                              f"{resolution_ms} ms; round it or change resolution_ms")
        return np.rint(steps).astype(np.int64)

    def global_ids(self, pop) -> np.ndarray:
        local = np.arange(pop.size) if self.neurons is None else np.asarray(self.neurons, dtype=np.int64)
        return (pop.first_id + local).astype(np.uint64)


def DCCurrent(target: str, amplitude_pA: float, start_ms: float = 0.0, stop_ms: float | None = None,
              neurons: Sequence[int] | None = None) -> StepCurrent:
    """A constant current from start_ms until stop_ms (None: the end of the run)."""
    times, amps = [start_ms], [amplitude_pA]
    if stop_ms is not None:
        if not (isinstance(stop_ms, numbers.Real) and stop_ms > start_ms):
            raise ConfigError(f"DCCurrent on '{target}': stop_ms ({stop_ms!r}) must be after start_ms ({start_ms!r})")
        times.append(stop_ms)
        amps.append(0.0)
    return StepCurrent(target, times, amps, neurons)


def _numbers(where: str, key: str, values) -> np.ndarray:
    try:
        out = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: '{key}' must be a list of numbers, got {values!r:.60}") from None
    if not np.all(np.isfinite(out)):
        raise ConfigError(f"{where}: '{key}' must be finite numbers, got {out.tolist()[:8]}")
    return out
