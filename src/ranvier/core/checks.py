"""Checks shared by the network description and the neuron models: one wording for every error."""
from __future__ import annotations

import math

from ..errors import ConfigError


def positive(where: str, name: str, value, allow_zero: bool = False) -> float:
    """value as a float, refused unless finite and positive (or zero, with allow_zero)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: '{name}' must be a number, got {value!r}") from None
    if not math.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        need = "zero or positive" if allow_zero else "positive"
        raise ConfigError(f"{where}: '{name}' must be {need}, got {value!r}")
    return x


def finite_number(where: str, name: str, value) -> None:
    """Refuses anything but a finite int or float (bool included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{where}: '{name}' must be a number, got {value!r}")


def whole_steps(where: str, name: str, value, origin: dict, resolution_ms: float, minimum: int = 0) -> int:
    """value (ms) in steps of resolution_ms: refused unless a whole number of them, at least minimum.
    The error names the model parameter the user set where `origin` says which one it was."""
    label = f"'{origin[name]}'" if name in origin else f"{where}: '{name}'"
    n = value / resolution_ms
    if not math.isfinite(n):                  # a resolution so fine that the steps overflow a float
        raise ConfigError(f"{label} = {value} ms is more than 1e308 steps of resolution {resolution_ms} ms; "
                          f"choose a coarser resolution_ms")
    if abs(n - round(n)) > 1e-9 * max(1.0, abs(n)):
        raise ConfigError(f"{label} = {value} ms is not a multiple of the resolution "
                          f"{resolution_ms} ms; choose a multiple or a finer resolution_ms")
    if round(n) < minimum:
        raise ConfigError(f"{label} = {value} ms is below the resolution {resolution_ms} ms; "
                          f"delays must be at least one step")
    return round(n)
