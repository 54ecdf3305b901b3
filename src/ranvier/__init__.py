"""Ranvier: fast, decomposition-invariant simulation of spiking cortical networks."""
from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("ranvier")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+local"

import os as _os

from .parallel import launched_with_mpi as _launched_with_mpi

# The CPUs this process may use, read before the OpenMP runtime (loaded below) pins this thread
# to the first of them: the processes that `ranvier bench` starts get them all back.
_cpus_at_import = _os.sched_getaffinity(0) if hasattr(_os, "sched_getaffinity") else None

# Pin OpenMP threads to cores (measured here: real-time factor 0.79 -> 0.62 on 2 threads).
# libgomp reads these when the engine loads, so they are set before the import below. Under
# mpiexec every rank would pin to the same first cores: there the launcher binds (-bind-to core).
if not _launched_with_mpi():
    _os.environ.setdefault("OMP_PROC_BIND", "close")
    _os.environ.setdefault("OMP_PLACES", "cores")

# Several ranks on this node whose threads outnumber its cores: OpenMP threads that spin while
# they wait take the cores from the working ones (measured: 4 ranks x 2 threads on 2 cores ran
# 14-67 times slower than with passive waiting). libgomp reads OMP_WAIT_POLICY only when it loads, so it is chosen here,
# before the engine is imported, unless the user set it.
from .resources import choose_wait_policy as _choose_wait_policy  # noqa: E402

_wait_policy_chosen = _choose_wait_policy()

from . import activity, models, random
from .errors import ConfigError
from .devices import DCCurrent, NoiseCurrent, StepCurrent
from .grid import ColumnGrid
from .network import Network, PoissonDrive, Population, Projection
from .plasticity import STDP, STDPPowerLaw
from .weights import WeightRecorder
from .simulation import PHASES, Result, Simulation

__all__ = ["ConfigError", "ColumnGrid", "DCCurrent", "NoiseCurrent", "StepCurrent", "Network", "Population", "Projection", "PoissonDrive", "STDP", "STDPPowerLaw", "WeightRecorder", "Simulation",
           "Result", "PHASES", "models", "activity", "random", "__version__"]
