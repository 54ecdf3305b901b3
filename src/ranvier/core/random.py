"""Distributions of per-neuron parameters: `Population(..., params={"theta_mV": Normal(20, 1)})`.

The engine draws each neuron's value from Philox keyed by (seed, global id, the parameter), one
uniform u in (0, 1) per value (cpp/neurons/neuron_model.hpp, neuron_value), so a neuron gets the
same value whatever the ranks, threads and placement, and each rank draws only its own neurons:

- Normal(mean, sd): mean + sd * z, z the engine's inverse normal CDF of u;
- Uniform(low, high): low + (high - low) * u;
- Lognormal(mu, sigma): exp(mu + sigma * z), the exponential of Normal(mu, sigma).

One uniform per value bounds the draws: |z| never exceeds about 6.34 (`MAX_NORMAL_DEVIATE`), so
`bounds()` gives the exact range of values a distribution can produce, and the parameter checks
(positive time constants, reset below threshold, ...) hold for every draw when they hold for the
bounds. `Population.neuron_values(name, seed)` returns the values the engine draws.
"""
from __future__ import annotations

import math

from ..errors import ConfigError

# The uniforms the engine can draw: (word + 1/2) 2^-32 for 32-bit words (philox.hpp, to_uniform).
SMALLEST_UNIFORM = 0.5 * 2.0 ** -32
LARGEST_UNIFORM = (2.0 ** 32 - 0.5) * 2.0 ** -32


def _finite(what: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{what}: '{name}' must be a finite number, got {value!r}")
    return float(value)


def _exp(x: float) -> float:
    """exp, inf where it overflows (so a bound too large for a double reads as infinite)."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _normal_deviate_bounds() -> tuple[float, float]:
    """The smallest and largest standard normal deviates the engine can draw (its own inverse
    normal CDF at its extreme uniforms)."""
    from .. import _engine
    return _engine.inverse_normal(SMALLEST_UNIFORM), _engine.inverse_normal(LARGEST_UNIFORM)


class Distribution:
    """A distribution of a parameter over the neurons of a population (see the module's docstring)."""
    kind: str                          # the engine's name of it (NeuronValues.distribution)

    def engine_arguments(self) -> tuple[float, float]:
        """(a, b) of the engine's NeuronValues."""
        raise NotImplementedError

    def bounds(self) -> tuple[float, float]:
        """The smallest and largest value the engine can draw."""
        raise NotImplementedError

    # Each distribution also has `mean` and `sd`: those of the values it gives.

    def __eq__(self, other):
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self):
        return hash((type(self).__name__, *vars(self).values()))


class Normal(Distribution):
    """Normal(mean, sd): values mean + sd z, z standard normal (the engine's draws stay within
    about 6.34 sd of the mean)."""
    kind = "normal"

    def __init__(self, mean: float, sd: float):
        self.mean = _finite("Normal", "mean", mean)
        self.sd = _finite("Normal", "sd", sd)
        if self.sd < 0:
            raise ConfigError(f"Normal: 'sd' must be zero or positive, got {sd!r}")

    def engine_arguments(self):
        return self.mean, self.sd

    def bounds(self):
        lo, hi = _normal_deviate_bounds()
        return self.mean + self.sd * lo, self.mean + self.sd * hi

    def __repr__(self):
        return f"Normal(mean={self.mean:g}, sd={self.sd:g})"


class Uniform(Distribution):
    """Uniform(low, high): values uniform in the open interval (low, high)."""
    kind = "uniform"

    def __init__(self, low: float, high: float):
        self.low = _finite("Uniform", "low", low)
        self.high = _finite("Uniform", "high", high)
        if not self.low < self.high:
            raise ConfigError(f"Uniform: 'low' ({low!r}) must be below 'high' ({high!r})")

    def engine_arguments(self):
        return self.low, self.high

    def bounds(self):
        return self.low, self.high

    @property
    def mean(self):
        return 0.5 * (self.low + self.high)

    @property
    def sd(self):
        return (self.high - self.low) / math.sqrt(12.0)

    def __repr__(self):
        return f"Uniform(low={self.low:g}, high={self.high:g})"


class Lognormal(Distribution):
    """Lognormal(mu, sigma): values exp(mu + sigma z), z standard normal; always positive. mu and
    sigma are the mean and sd of the value's logarithm (NEST's convention); the value's mean is
    exp(mu + sigma^2 / 2)."""
    kind = "lognormal"

    def __init__(self, mu: float, sigma: float):
        self.mu = _finite("Lognormal", "mu", mu)
        self.sigma = _finite("Lognormal", "sigma", sigma)
        if self.sigma < 0:
            raise ConfigError(f"Lognormal: 'sigma' must be zero or positive, got {sigma!r}")

    def engine_arguments(self):
        return self.mu, self.sigma

    def bounds(self):
        lo, hi = _normal_deviate_bounds()
        return _exp(self.mu + self.sigma * lo), _exp(self.mu + self.sigma * hi)

    @property
    def mean(self):
        return _exp(self.mu + 0.5 * self.sigma ** 2)

    @property
    def sd(self):
        return self.mean * math.sqrt(_exp(self.sigma ** 2) - 1.0)

    def __repr__(self):
        return f"Lognormal(mu={self.mu:g}, sigma={self.sigma:g})"
