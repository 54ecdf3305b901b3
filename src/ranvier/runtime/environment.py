"""What a run ran on: host, CPU, cores, memory, MPI, compiler, Ranvier's version, build and
commit. Written as environment.json into every run archive, so results from different
machines and days can be compared (and `ranvier report` shows it)."""
from __future__ import annotations

import datetime
import os
import platform
import socket
import sys


def cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _physical_cores() -> int | None:
    try:
        import psutil
        return psutil.cpu_count(logical=False)
    except Exception:       # pragma: no cover - psutil is a dependency
        return None


def _memory_bytes() -> int | None:
    try:
        import psutil
        return int(psutil.virtual_memory().total)
    except Exception:       # pragma: no cover
        return None


def _cores_available() -> int | None:
    """Cores this process may run on, as it started (importing ranvier pins the main thread)."""
    from .. import _cpus_at_import
    return len(_cpus_at_import) if _cpus_at_import else None


def _mpi() -> dict | None:
    """The MPI library of this process's mpi4py, when MPI was initialised (under mpiexec)."""
    if "mpi4py.MPI" not in sys.modules:
        return None
    from mpi4py import MPI
    return {"library": " ".join(MPI.Get_library_version().split()), "standard": "%d.%d" % MPI.Get_version(),
            "mpi4py": sys.modules["mpi4py"].__version__}


def _omp() -> dict:
    """The OpenMP settings the runtime read, and whether Ranvier chose the wait policy (passive,
    when several ranks on this node would run more threads than it has cores)."""
    from .. import _wait_policy_chosen
    omp = {k: os.environ[k] for k in ("OMP_PROC_BIND", "OMP_PLACES", "OMP_WAIT_POLICY") if k in os.environ}
    if _wait_policy_chosen:
        omp["wait_policy_chosen_by_ranvier"] = True
    return omp


def collect(ranks: int = 1, ranks_per_node: int = 1, threads: int = 1, argv: list[str] | None = None,
            transport: dict | None = None) -> dict:
    """The environment of this run, as plain JSON data. transport: parallel.transport(comm), how
    the ranks reached each other (nodes, host names, shared memory or the network module)."""
    from .. import _engine
    from ..version import ranvier_version

    info = _engine.build_info()
    import numpy
    return {
        "date_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cores_logical": os.cpu_count(),
        "cores_physical": _physical_cores(),
        "cores_available": _cores_available(),
        "memory_bytes": _memory_bytes(),
        "ranks": ranks, "ranks_per_node": ranks_per_node,
        "nodes": transport["nodes"] if transport else max(1, ranks // max(1, ranks_per_node)),
        "threads_per_rank": threads,
        "mpi": _mpi(),
        "transport": transport,
        "ranvier": {"version": ranvier_version(), "engine_version": info.get("version"),
                    "git_commit": info.get("git_commit"), "compiler": info.get("compiler"),
                    "build_type": info.get("build_type"), "native": info.get("native"), "simd": info.get("simd"),
                    "mpi_backend": " ".join(str(info.get("mpi_library") or "").split()) or None},
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "omp": _omp(),
        "command": list(argv if argv is not None else sys.argv),
    }
