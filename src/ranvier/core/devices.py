"""Stimulation devices: currents injected into neurons.

A current source is one population's neurons (all, or chosen ones) and a current in pA:
piecewise constant (NEST's step_current_generator and dc_generator, PyNN's StepCurrentSource
and DCSource, SONATA's current clamp), noisy (NoiseCurrent) or sinusoidal (ACCurrent). The engine adds it to the model's constant current I_e in
the exact integration of every step, so the trace is exact on the grid.

Timing: an amplitude set at time t enters the integration of the steps from t on: V(t + h) is
the first potential it moves. NEST's generators reach a neuron over a connection with a delay
d: NEST's step_current_generator with amplitude_times [t], connected with delay d, is
StepCurrent(times_ms=[t + d]), V equal at every step within 1e-9 mV (tests/test_currents.py,
NEST 3.10, d = 0.1 and 1 ms). ACCurrent: see its docstring.

current_values(simulation, index, first_step, n_steps): a source's current per step as the
engine computes it (what PyNN's source.record() reports).

Models that take a current: NeuronModel.takes_current (iaf_psc_alpha, psc_exp, iaf_cond_exp,
iaf_cond_alpha); others are refused by name.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import ConfigError
from .neurons import MAX_TIME_STEPS, steps_beyond


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
        where = f"current source on '{self.target}'"
        _check_target(where, pop, self.neurons)
        times = _numbers(where, "times_ms", self.times_ms)
        amps = _numbers(where, "amplitudes_pA", self.amplitudes_pA)
        if times.size != amps.size or times.size == 0:
            raise ConfigError(f"{where}: 'times_ms' ({times.size}) and 'amplitudes_pA' ({amps.size}) must be two "
                              f"non-empty lists of the same length")
        if np.any(times < 0) or np.any(np.diff(times) <= 0):
            raise ConfigError(f"{where}: 'times_ms' must be >= 0 and strictly increasing, got {times.tolist()[:8]}")
        self.times_ms, self.amplitudes_pA = times, amps

    def steps(self, resolution_ms: float) -> np.ndarray:
        """The first step each amplitude enters; refuses times off the grid."""
        return _on_grid(f"current source on '{self.target}'", "time", self.times_ms, resolution_ms)

    def global_ids(self, pop) -> np.ndarray:
        return _global_ids(pop, self.neurons)

    def engine_spec(self, pop, resolution_ms, spec) -> None:
        spec.targets = self.global_ids(pop).tolist()
        spec.steps = self.steps(resolution_ms).tolist()
        spec.amplitudes_pA = np.asarray(self.amplitudes_pA, dtype=np.float64).tolist()


@dataclass
class NoiseCurrent:
    """A noisy current (pA) on neurons of population `target` (NEST's noise_generator, PyNN's
    NoisyCurrentSource): from start_ms until stop_ms (None: the end of the run), every dt_ms
    each neuron draws its own current mean_pA + std_pA z, z standard normal. The draws are keyed
    by (seed, the neuron's global id, the source's place among the network's current sources,
    the interval): the same for any ranks, threads and placement. dt_ms: a whole number of steps."""
    target: str
    mean_pA: float
    std_pA: float
    dt_ms: float
    start_ms: float = 0.0
    stop_ms: float | None = None
    neurons: Sequence[int] | None = None

    def validate(self, pop) -> None:
        where = f"noise current on '{self.target}'"
        _check_target(where, pop, self.neurons)
        for key in ("mean_pA", "std_pA", "dt_ms", "start_ms"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise ConfigError(f"{where}: '{key}' must be a finite number, got {v!r}")
        if self.std_pA < 0 or self.dt_ms <= 0 or self.start_ms < 0:
            raise ConfigError(f"{where}: 'std_pA' must be >= 0, 'dt_ms' > 0 and 'start_ms' >= 0")
        if self.stop_ms is not None and not (isinstance(self.stop_ms, numbers.Real) and self.stop_ms > self.start_ms):
            raise ConfigError(f"{where}: 'stop_ms' ({self.stop_ms!r}) must be after start_ms ({self.start_ms!r})")

    def engine_spec(self, pop, resolution_ms, spec) -> None:
        where = f"noise current on '{self.target}'"
        spec.targets = _global_ids(pop, self.neurons).tolist()
        (interval,) = _on_grid(where, "dt_ms", [self.dt_ms], resolution_ms)
        (start,) = _on_grid(where, "start_ms", [self.start_ms], resolution_ms, bound=True)
        stop = _on_grid(where, "stop_ms", [self.stop_ms], resolution_ms, bound=True)[0] \
            if self.stop_ms is not None else MAX_TIME_STEPS
        if interval < 1:
            raise ConfigError(f"{where}: 'dt_ms' must be at least one step ({resolution_ms} ms)")
        spec.noise_interval_steps, spec.start_step, spec.stop_step = int(interval), int(start), int(stop)
        spec.noise_mean_pA, spec.noise_std_pA = float(self.mean_pA), float(self.std_pA)


@dataclass
class ACCurrent:
    """A sinusoidal current (pA) on neurons of population `target` (NEST's ac_generator, PyNN's
    ACSource): in the integration of every step from t to t + h with start_ms <= t < stop_ms
    (None: to the end of the run), offset_pA + amplitude_pA sin(2 pi frequency_hz t / 1000 +
    phase_deg pi / 180), 0 outside. The sine is NEST's recursion: (A cos phi, A sin phi) turned
    through 2 pi f h / 1000 once a step from t = 0, so the current is a function of the step
    alone (the same on any ranks, threads and placement; tests/test_currents.py).

    NEST's ac_generator with start S, stop E and phase phi, connected with delay d, is
    ACCurrent(start_ms=S + d, stop_ms=E + d, phase_deg=phi - 360 f d / 1000): its current reaches
    the neuron d later, its phase counted from the time it is sent."""
    target: str
    amplitude_pA: float
    frequency_hz: float
    phase_deg: float = 0.0
    offset_pA: float = 0.0
    start_ms: float = 0.0
    stop_ms: float | None = None
    neurons: Sequence[int] | None = None

    def validate(self, pop) -> None:
        where = f"AC current on '{self.target}'"
        _check_target(where, pop, self.neurons)
        for key in ("amplitude_pA", "frequency_hz", "phase_deg", "offset_pA", "start_ms"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise ConfigError(f"{where}: '{key}' must be a finite number, got {v!r}")
        if self.frequency_hz < 0 or self.start_ms < 0:
            raise ConfigError(f"{where}: 'frequency_hz' ({self.frequency_hz!r}) and 'start_ms' ({self.start_ms!r}) "
                              f"must be >= 0")
        if self.stop_ms is not None and not (isinstance(self.stop_ms, numbers.Real) and
                                             not isinstance(self.stop_ms, bool) and self.stop_ms > self.start_ms):
            raise ConfigError(f"{where}: 'stop_ms' ({self.stop_ms!r}) must be after start_ms ({self.start_ms!r})")

    def engine_spec(self, pop, resolution_ms, spec) -> None:
        where = f"AC current on '{self.target}'"
        spec.targets = _global_ids(pop, self.neurons).tolist()
        (start,) = _on_grid(where, "start_ms", [self.start_ms], resolution_ms, bound=True)
        stop = _on_grid(where, "stop_ms", [self.stop_ms], resolution_ms, bound=True)[0] \
            if self.stop_ms is not None else MAX_TIME_STEPS
        spec.sine, spec.start_step, spec.stop_step = True, int(start), int(stop)
        spec.sine_amplitude_pA, spec.sine_offset_pA = float(self.amplitude_pA), float(self.offset_pA)
        spec.sine_frequency_hz, spec.sine_phase_deg = float(self.frequency_hz), float(self.phase_deg)


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


CURRENT_SOURCES = (StepCurrent, NoiseCurrent, ACCurrent)


def _check_target(where: str, pop, neurons) -> None:
    from .neurons import NEURON_MODELS
    if not getattr(NEURON_MODELS[pop.model], "takes_current", False):
        takers = sorted(n for n, m in NEURON_MODELS.items() if getattr(m, "takes_current", False))
        raise ConfigError(f"{where}: model '{pop.model}' takes no injected current; models that do: {takers}")
    if neurons is not None:
        ids = np.asarray(neurons)
        if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
            raise ConfigError(f"{where}: 'neurons' must be a list of population-local indices (integers) or None, "
                              f"got {neurons!r:.60}")
        if ids.min() < 0 or ids.max() >= pop.size:
            raise ConfigError(f"{where}: 'neurons' must be in [0, {pop.size}), got {int(ids.min())}..{int(ids.max())}")
        if np.unique(ids).size != ids.size:
            raise ConfigError(f"{where}: 'neurons' names a neuron twice")


def _global_ids(pop, neurons) -> np.ndarray:
    local = np.arange(pop.size) if neurons is None else np.asarray(neurons, dtype=np.int64)
    return (pop.first_id + local).astype(np.uint64)


def _on_grid(where: str, what: str, times, resolution_ms: float, bound: bool = False) -> np.ndarray:
    """The steps of times (ms): refused off the grid, and beyond the engine's 64-bit step counts
    unless `bound` (a window's end: held at the last step counted, beyond any run either way)."""
    steps = np.asarray(times, dtype=np.float64) / resolution_ms
    off = np.abs(steps - np.rint(steps)) > 1e-9 * np.maximum(1.0, steps)
    if off.any():
        t = float(np.asarray(times)[off][0])
        raise ConfigError(f"{where}: {what} {t:g} ms is not a whole number of steps of {resolution_ms} ms; round it "
                          f"or change resolution_ms")
    beyond = steps > MAX_TIME_STEPS
    if beyond.any() and not bound:
        t = float(np.asarray(times)[beyond][0])
        raise ConfigError(f"{where}: {what} {t:g} ms is {t / resolution_ms:.3g} steps of {resolution_ms:g} ms; "
                          f"{steps_beyond(resolution_ms)}")
    return np.rint(np.minimum(steps, MAX_TIME_STEPS)).astype(np.int64)


def _numbers(where: str, key: str, values) -> np.ndarray:
    try:
        out = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: '{key}' must be a list of numbers, got {values!r:.60}") from None
    if not np.all(np.isfinite(out)):
        raise ConfigError(f"{where}: '{key}' must be finite numbers, got {out.tolist()[:8]}")
    return out


def current_values(source, index: int, pop, resolution_ms: float, seed: int, first_step: int,
                   n_steps: int) -> np.ndarray:
    """The current (pA) source `index` (its place among the network's current sources) puts into
    each of steps first_step .. first_step + n_steps - 1, as the engine computes it: one
    target's (the same for all) or, for a noise current, the average over its targets (NEST's
    noise_generator records that)."""
    from .. import _engine
    spec = _engine.CurrentSourceSpec()
    source.engine_spec(pop, resolution_ms, spec)
    targets = list(spec.targets) if isinstance(source, NoiseCurrent) else list(spec.targets)[:1]
    return np.asarray(_engine.current_source_values(spec, int(index), targets, int(seed), float(resolution_ms),
                                                    int(first_step), int(n_steps)), dtype=np.float64)
