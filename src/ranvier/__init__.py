"""Ranvier: fast, decomposition-invariant simulation of spiking cortical networks."""
from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("ranvier")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+local"

from . import models
from .errors import ConfigError
from .network import Network, PoissonDrive, Population, Projection
from .simulation import PHASES, Result, Simulation

__all__ = ["ConfigError", "Network", "Population", "Projection", "PoissonDrive", "Simulation",
           "Result", "PHASES", "models", "__version__"]
