"""Launching benchmark processes: `mpiexec -n R python -m ranvier.bench worker SPEC.json` (no
mpiexec for one rank), each rank of the worker building and running the same job, rank 0
writing its measurements as JSON; and `ranvier run` jobs started the same way (scaling.py).
The CPU mask and OpenMP settings of each launched job are set here.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import ConfigError


class WorkerFailed(RuntimeError):
    """A benchmark process exited with an error; the message ends with its stderr."""



# -- launching one configuration ------------------------------------------------------------
def mpiexec_path() -> str | None:
    """The mpiexec next to this Python (the venv's MPICH wheel), else one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def launch_prefix(ranks: int, threads: int = 1) -> list[str]:
    """What goes before `python ...` to start `ranks` ranks of `threads` threads each."""
    if ranks == 1:
        return []
    mpiexec = mpiexec_path()
    if mpiexec is None:
        raise ConfigError(f"{ranks} ranks need mpiexec, which was not found; install it with: "
                          f"pip install mpich mpi4py")
    prefix = [mpiexec, "-n", str(ranks)]
    if _ranks_bound(ranks, threads):
        prefix += ["-bind-to", f"core:{threads}" if threads > 1 else "core"]
    return prefix


def _ranks_bound(ranks: int, threads: int) -> bool:
    """Whether mpiexec binds each rank to its own cores, as many as it has threads: only when
    there are cores enough; otherwise binding would stack ranks, so the OS places them."""
    return ranks > 1 and ranks * threads <= (os.cpu_count() or 1)


def launch_env(ranks: int, threads: int) -> dict:
    """The environment of a launched job: OMP_NUM_THREADS = threads, and no thread pinning
    inherited from this process (importing ranvier sets OMP_PROC_BIND and OMP_PLACES) where
    mpiexec does not bind: every rank would pin its threads to the same first cores."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if ranks > 1 and not _ranks_bound(ranks, threads):
        env.pop("OMP_PROC_BIND", None)
        env.pop("OMP_PLACES", None)
    return env


def restore_cpus() -> None:
    """For subprocess preexec_fn: a child inherits this thread's CPU mask, which the OpenMP
    runtime narrowed to one core when ranvier loaded; give the child the mask from before."""
    from .. import _cpus_at_import

    if _cpus_at_import is not None:
        os.sched_setaffinity(0, _cpus_at_import)


def launch(ranks: int, threads: int, argv: list[str]) -> subprocess.CompletedProcess:
    """Runs the command argv (a Python program) on `ranks` ranks of `threads` threads each; output captured."""
    return subprocess.run([*launch_prefix(ranks, threads), *argv], env=launch_env(ranks, threads),
                          capture_output=True, text=True, check=False, preexec_fn=restore_cpus)


def run_worker(ranks: int, threads: int, spec: dict, workdir: Path, label: str) -> dict:
    """Runs one worker job on `ranks` ranks and returns what its rank 0 wrote."""
    spec_path = workdir / "spec.json"
    result_path = workdir / "result.json"
    result_path.unlink(missing_ok=True)
    spec_path.write_text(json.dumps({**spec, "result": str(result_path)}))
    done = launch(ranks, threads, [sys.executable, "-m", "ranvier.bench", "worker", str(spec_path)])
    if done.returncode != 0 or not result_path.exists():
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-20:])
        raise WorkerFailed(f"{label} failed with status {done.returncode}: {' '.join(done.args)}\n{tail}")
    return json.loads(result_path.read_text())
