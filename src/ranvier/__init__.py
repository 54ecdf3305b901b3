"""Ranvier: fast, decomposition-invariant simulation of spiking cortical networks."""
import os as _os

from .runtime.parallel import launched_with_mpi as _launched_with_mpi

# The CPUs this process may use, read before the OpenMP runtime (loaded with the engine) pins
# this thread to the first of them: the processes that `ranvier bench` starts get them all back.
_cpus_at_import = _os.sched_getaffinity(0) if hasattr(_os, "sched_getaffinity") else None

# Pin OpenMP threads to cores (measured here: real-time factor 0.79 -> 0.62 on 2 threads).
# libgomp reads these when the engine loads, so they are set here, before any import of it. Under
# mpiexec every rank would pin to the same first cores: there the launcher binds (-bind-to core).
if not _launched_with_mpi():
    _os.environ.setdefault("OMP_PROC_BIND", "close")
    _os.environ.setdefault("OMP_PLACES", "cores")

# Several ranks on this node whose threads outnumber its cores: OpenMP threads that spin while
# they wait take the cores from the working ones (measured: 4 ranks x 2 threads on 2 cores ran
# 14-67 times slower than with passive waiting). libgomp reads OMP_WAIT_POLICY only when it loads, so it is chosen here,
# before the engine is imported, unless the user set it.
from .runtime.resources import choose_wait_policy as _choose_wait_policy  # noqa: E402

_wait_policy_chosen = _choose_wait_policy()

# The public names are imported when first used (PEP 562): `import ranvier` stays cheap, so the
# `ranvier` command sets up its signal handling before NumPy, h5py and the engine load (an
# interrupt in those seconds is an interrupt of the run, status 130, not a traceback).
_PUBLIC = {
    "ConfigError": "errors", "ColumnGrid": "core.grid", "DCCurrent": "core.devices", "NoiseCurrent": "core.devices",
    "ACCurrent": "core.devices",
    "StepCurrent": "core.devices", "Network": "core.network", "Population": "core.network", "Projection": "core.network",
    "PoissonDrive": "core.network", "STDP": "core.plasticity", "STDPPowerLaw": "core.plasticity", "STDPTriplet": "core.plasticity", "TsodyksMarkram": "core.plasticity",
    "Bernoulli": "core.plasticity", "QuantalSTP": "core.plasticity", "VogelsSprekeler": "core.plasticity",
    "WeightRecorder": "io.weights",
    "Simulation": "core.simulation", "Result": "core.simulation", "PHASES": "core.simulation",
}
# Public submodules by their short names: rv.models, rv.activity, rv.random.
_SUBMODULES = {"models": "models", "activity": "analysis.activity", "random": "core.random", "nestml": "nestml"}

__all__ = [*_PUBLIC, *_SUBMODULES, "__version__"]


def __getattr__(name: str):
    import importlib
    import importlib.util

    if name == "__version__":
        from .version import ranvier_version
        value = ranvier_version()
    elif name in _PUBLIC:
        value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{_SUBMODULES[name]}", __name__)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}"):
        value = importlib.import_module(f".{name}", __name__)    # any module, as after an eager import
    else:
        raise AttributeError(f"module 'ranvier' has no attribute {name!r}")
    globals()[name] = value        # looked up once
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
