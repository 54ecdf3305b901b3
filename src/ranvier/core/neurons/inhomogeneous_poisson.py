"""inhomogeneous_poisson: Poisson sources with a piecewise-constant rate, no membrane
(cpp/neurons/inhomogeneous_poisson.cpp)."""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from .base import NeuronModel, Parameter, check_times_fit


class InhomogeneousPoisson(NeuronModel):
    """Poisson sources with a piecewise-constant rate (NEST's inhomogeneous_poisson_generator
    feeding parrot neurons, PyNN's SpikeSourceInhomogeneousPoisson): every neuron fires as an
    independent Poisson process at rates_hz[i] from rate_times_ms[i] until rate_times_ms[i + 1]
    (the last rate until the end of the run), silent before rate_times_ms[0]; at most one spike
    per step (probability rate x h per step, as poisson_source); input is ignored. Times are
    whole numbers of steps, increasing."""
    name = "inhomogeneous_poisson"
    input_unit = None
    parameters = {
        "rate_times_ms": Parameter("ms", "the times the rate changes, increasing"),
        "rates_hz": Parameter("Hz", "the rate from each time on"),
    }

    @classmethod
    def read_values(cls, pop, where):
        params = dict(pop.params)
        lists = {}
        for key in ("rate_times_ms", "rates_hz"):
            value = params[key]
            try:
                lists[key] = np.asarray(value, dtype=np.float64).ravel()
            except (TypeError, ValueError):
                raise ConfigError(f"{where}: '{key}' must be a list of numbers, got {value!r:.60}") from None
            if lists[key].size == 0 or not np.all(np.isfinite(lists[key])):
                raise ConfigError(f"{where}: '{key}' must be a non-empty list of finite numbers")
        times, rates = lists["rate_times_ms"], lists["rates_hz"]
        if times.size != rates.size:
            raise ConfigError(f"{where}: 'rate_times_ms' ({times.size}) and 'rates_hz' ({rates.size}) must have the "
                              f"same length")
        if np.any(times < 0) or np.any(np.diff(times) <= 0):
            raise ConfigError(f"{where}: 'rate_times_ms' must be >= 0 and strictly increasing")
        if np.any(rates < 0):
            raise ConfigError(f"{where}: 'rates_hz' must be >= 0, got {rates.min():g}")
        if not (isinstance(pop.initial, str) and pop.initial == "reset"):
            raise ConfigError(f"{where}: model 'inhomogeneous_poisson' has no membrane potential; leave 'initial' "
                              f"at 'reset'")
        params["rate_times_ms"], params["rates_hz"] = tuple(times.tolist()), tuple(rates.tolist())
        return params, pop.initial

    @classmethod
    def known_rate_hz(cls, params):
        return float(max(params["rates_hz"]))      # an upper bound over any run

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        steps = np.asarray(pop.params["rate_times_ms"]) / resolution_ms
        off = np.flatnonzero(np.abs(steps - np.rint(steps)) > 1e-9 * np.maximum(1.0, steps))
        if off.size:
            raise ConfigError(f"population '{pop.name}': rate time {pop.params['rate_times_ms'][off[0]]:g} ms is not "
                              f"a whole number of steps of {resolution_ms} ms; round it or change resolution_ms")
        check_times_fit(pop, "rate time", pop.params["rate_times_ms"], resolution_ms)

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec(pop)
        s.integer_sequences = {"rate_steps": np.rint(np.asarray(pop.params["rate_times_ms"]) / resolution_ms)
                               .astype(np.int64).tolist()}
        s.sequences = {"rates_hz": list(pop.params["rates_hz"])}
        return s
