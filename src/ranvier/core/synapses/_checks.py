"""What every synapse kind's checks share."""
from __future__ import annotations

import math
import numbers

from ...errors import ConfigError


def real(where: str, name: str, value, *, positive=False, nonnegative=False, nonzero=False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ConfigError(f"{where}: '{name}' must be a finite number, got {value!r}")
    if positive and not value > 0:
        raise ConfigError(f"{where}: '{name}' must be positive, got {value!r}")
    if nonnegative and value < 0:
        raise ConfigError(f"{where}: '{name}' must be at least 0, got {value!r}")
    if nonzero and value == 0:
        raise ConfigError(f"{where}: '{name}' must not be zero (its sign is the sign of the weights)")
    return float(value)
