"""The installed package's version: a module of its own, so that modules needing it do not
import the package (`ranvier/__init__`), which imports them."""
from __future__ import annotations

import functools


@functools.cache
def ranvier_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("ranvier")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0+local"
