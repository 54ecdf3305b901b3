"""Keyword parameters of the workloads (ranvier.models, ranvier.models.multi_area): one check for all."""
from __future__ import annotations

import math

from ..errors import ConfigError


def check_overrides(model: str, defaults: dict, overrides: dict) -> dict:
    """The defaults with the overrides applied, each checked against its default's type; unknown
    keywords are refused with the list of known ones."""
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ConfigError(f"{model}: unknown parameter(s) {unknown}; known parameters: {sorted(defaults)}")
    params = dict(defaults)
    for key, value in overrides.items():
        default = defaults[key]
        if default is None:          # optional fields (paths, lists): the model checks them itself
            params[key] = value
            continue
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{model}: '{key}' must be true or false, got {value!r}")
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise ConfigError(f"{model}: '{key}' must be a string, got {value!r}")
        elif isinstance(default, int) and not isinstance(default, bool):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"{model}: '{key}' must be an integer, got {value!r}")
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"{model}: '{key}' must be a number, got {value!r}")
            value = float(value)
        params[key] = value
    return params


def check_scales(model: str, params: dict) -> tuple[float, float]:
    """`scale` (neuron numbers) and `k_scale` (in-degrees) of a down-scalable model, each in (0, 1]."""
    for key in ("scale", "k_scale"):
        if not 0.0 < params[key] <= 1.0:
            raise ConfigError(f"{model}: '{key}' must lie in (0, 1], got {params[key]!r}")
    return params["scale"], params["k_scale"]
