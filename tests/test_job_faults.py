"""A rank that dies (issue 20, item 2; docs/faults.md): `mpiexec -n 3 ranvier run ... --out DIR
--checkpoint-every T`, killed mid-run in every way a job dies.

For each fault: every process of the job (the launcher's proxy, the three ranks, rank 0's output
watcher, the node's death watch) is gone within STOP_S of the signal, mpiexec's exit status is non-zero, the user sees
what the fault was (and, where Ranvier can say it, one line naming the rank), no DIR and no
hidden staging folder or lock file is left, and the checkpoints written so far are complete (a
resume from them gives the spikes of an uninterrupted run).

The runs are waited for by their checkpoint lines (they are simulating), not by sleeps."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import mpiexec_path, needs_mpiexec, subprocess_env
from ranvier.io import checkpoint
from ranvier.bench import restore_cpus
from ranvier.io.output import MARKER, STAGING_SUFFIX
from test_checkpoint import same_spike_files
from test_faults import TINY, error_lines, launch, python_m_ranvier  # noqa: F401 (launch: a fixture)

psutil = pytest.importorskip("psutil")
pytest.importorskip("mpi4py")

STOP_S = 10                      # every process of the job gone within this after the fault
LONG = ["--duration-ms", "120000", "--energy", "none"]
EVERY = ["--checkpoint-every", "500ms"]
RESUME_TO_MS = 4000              # the resumed run's end: later than any checkpoint taken here


def start_run(launch, tmp_path, ranks=3, checkpoints=True, until="1 s"):
    """The run, waited for until its checkpoint at t = `until` (it is simulating); with the job's processes."""
    prefix = [mpiexec_path(), "-n", str(ranks)] if ranks > 1 else []
    job = launch([*prefix, *python_m_ranvier("run", *TINY, *LONG, *(EVERY if checkpoints else []), "--out", "out")],
                 cwd=tmp_path)
    job.wait_for(f"checkpoint at t = {until}" if checkpoints else "ranvier: built", timeout=120)
    procs = [psutil.Process(job.proc.pid), *psutil.Process(job.proc.pid).children(recursive=True)]
    def watching(p, script):
        return "--watch" in p.cmdline() and any(a.endswith(script) for a in p.cmdline())
    assert len([p for p in procs if watching(p, "leftovers.py")]) == 1, [p.cmdline() for p in procs]
    assert len([p for p in procs if watching(p, "deathwatch.py")]) == (1 if ranks > 1 else 0), \
        [p.cmdline() for p in procs]
    return job, procs


def all_gone(job, procs, t0) -> float:
    """Waits for mpiexec and every process of the job; seconds from t0 until the last was gone."""
    job.wait(timeout=STOP_S)
    gone, alive = psutil.wait_procs(procs, timeout=max(0.1, t0 + STOP_S - time.monotonic()))
    assert not alive, f"still running {STOP_S} s after the fault: {[(p.pid, p.cmdline()) for p in alive]}"
    return time.monotonic() - t0


def nothing_half_written(tmp_path: Path) -> None:
    assert not (tmp_path / "out").exists()
    left = [p.name for p in tmp_path.iterdir() if p.name.endswith((STAGING_SUFFIX, ".ranvier-lock"))]
    assert not left, left
    hidden = [p.name for p in (tmp_path / "out.checkpoints").iterdir() if p.name.startswith(".")]
    assert not hidden, hidden


def newest_checkpoint(tmp_path: Path, at_least_ms: float = 500.0) -> Path:
    """The newest checkpoint, complete (every file with its size and hash) and before RESUME_TO_MS."""
    newest = checkpoint.newest(tmp_path / "out.checkpoints")
    meta = checkpoint.read_meta(newest)
    assert at_least_ms <= meta["time_ms"] < RESUME_TO_MS, meta["time_ms"]
    return newest


def cli(cwd, *args, timeout=120):
    return subprocess.run(python_m_ranvier(*args), cwd=cwd, env=subprocess_env(), capture_output=True, text=True,
                          timeout=timeout, preexec_fn=restore_cpus)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The uninterrupted run to RESUME_TO_MS, in one process: the spikes a resume must give."""
    folder = tmp_path_factory.mktemp("whole")
    done = cli(folder, "run", *TINY, "--duration-ms", str(RESUME_TO_MS), "--energy", "none", "--quiet",
               "--out", "whole")
    assert done.returncode == 0, done.stderr
    return folder / "whole" / "spikes.h5"


def resumes_to_the_uninterrupted_spikes(tmp_path: Path, whole: Path) -> None:
    done = cli(tmp_path, "run", "--resume", "out", "--duration-ms", str(RESUME_TO_MS), "--threads", "2", "--quiet")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / MARKER).is_file()
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["resumed_from"]["time_ms"] >= 1000.0
    assert same_spike_files(tmp_path / "out" / "spikes.h5", whole) > 1000


# -- 1. a rank killed outright (SIGKILL, the out-of-memory killer) ---------------------------------
@needs_mpiexec
@pytest.mark.parametrize("rank", [1, 0], ids=["rank-1", "rank-0"])
def test_sigkill_of_one_rank_ends_the_job_and_keeps_the_checkpoints(launch, tmp_path, whole, rank):
    """Nothing runs in a SIGKILLed process: the launcher ends the others and reports the job's end
    (MPICH's block of '=' lines on stdout, 'Killed (signal 9)', with a process id that is not
    always the killed one's); the node's death watch names the rank in one line; rank 0's
    output watcher removes the staging folder and the lock even when rank 0 itself was killed."""
    job, procs = start_run(launch, tmp_path)
    target = job.ranks(3)[rank]
    t0 = time.monotonic()
    target.send_signal(signal.SIGKILL)
    elapsed = all_gone(job, procs, t0)
    assert job.proc.returncode != 0
    assert "BAD TERMINATION" in job.stdout and "Killed (signal 9)" in job.stdout, job.stdout
    assert "Traceback" not in job.stderr
    assert error_lines(job.stderr) == [
        f"ranvier: error: rank {rank} of 3 (pid {target.pid} on {socket.gethostname()}) ended without a word: "
        "killed by a signal no process can catch (SIGKILL: the out-of-memory killer, kill -9, a batch system); "
        "the launcher stops every rank"], job.stderr
    nothing_half_written(tmp_path)
    newest_checkpoint(tmp_path, 1000.0)
    if rank == 0:                # the watcher cleared up after rank 0: the checkpoints resume
        resumes_to_the_uninterrupted_spikes(tmp_path, whole)
    print(f"all gone {elapsed:.2f} s after SIGKILL of rank {rank}")


# -- 2. a rank that crashes ---------------------------------------------------------------------------
@needs_mpiexec
@pytest.mark.parametrize("sig, rank", [("SIGSEGV", 1), ("SIGABRT", 2), ("SIGBUS", 0)])
def test_a_crash_of_one_rank_is_one_line_naming_it(launch, tmp_path, sig, rank):
    """The engine's signal handler writes one line naming the rank and the signal, then the signal
    ends the process (so the launcher still sees a crash: exit status 128 + signal)."""
    job, procs = start_run(launch, tmp_path, until="0.5 s")
    target = job.ranks(3)[rank]
    t0 = time.monotonic()
    target.send_signal(getattr(signal, sig))
    all_gone(job, procs, t0)
    assert job.proc.returncode != 0
    lines = error_lines(job.stderr)
    assert len(lines) == 1, job.stderr
    assert lines[0].startswith(f"ranvier: error: rank {rank} of 3: crashed ({sig}, "), lines[0]
    assert lines[0].endswith("; stopping every rank"), lines[0]
    assert "Traceback" not in job.stderr
    nothing_half_written(tmp_path)
    newest_checkpoint(tmp_path)


CRASHING_RUN = """\
import ctypes, sys
from ranvier import cli; from ranvier.core import simulation

run = simulation.Simulation.run


def crashing_run(self, *args, **kwargs):
    if self.rank == {rank} and self.steps_done > 0:
        ctypes.string_at(0)            # a real invalid memory access (address 0)
    return run(self, *args, **kwargs)


simulation.Simulation.run = crashing_run
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("ranks", [2, 1], ids=["2-ranks", "1-process"])
def test_a_real_invalid_memory_access_is_one_line(launch, tmp_path, ranks):
    """Not a signal sent from outside: a real fault in the rank's own code."""
    if ranks > 1 and mpiexec_path() is None:
        pytest.skip("no mpiexec")
    script = tmp_path / "crashing_run.py"
    script.write_text(CRASHING_RUN.format(rank=ranks - 1))
    prefix = [mpiexec_path(), "-n", str(ranks)] if ranks > 1 else []
    job = launch([*prefix, sys.executable, script, "run", *TINY, *LONG, *EVERY, "--out", "out"], cwd=tmp_path)
    job.wait(timeout=120)
    lines = error_lines(job.stderr)
    assert len(lines) == 1, job.stderr
    who = f"rank {ranks - 1} of {ranks}: " if ranks > 1 else ""
    assert lines[0].startswith(f"ranvier: error: {who}crashed (SIGSEGV, an invalid memory access)"), lines[0]
    assert job.proc.returncode == (-signal.SIGSEGV if ranks == 1 else 128 + signal.SIGSEGV) or \
        (ranks > 1 and job.proc.returncode != 0), job.proc.returncode
    time.sleep(0.5)                     # the watcher, started in a session of its own, clears up
    assert not (tmp_path / "out").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith((STAGING_SUFFIX, ".ranvier-lock"))]


# -- 3. SIGTERM: a batch system's wall-time limit -------------------------------------------------------
@needs_mpiexec
@pytest.mark.parametrize("to", ["rank-1", "every-process"])
def test_sigterm_stops_the_job_like_ctrl_c(launch, tmp_path, whole, to):
    """SLURM sends SIGTERM to every process of the job step at its time limit (then SIGKILL after
    KillWait); `kill PID` sends it to one. Status 143, the staging folder removed, the complete
    checkpoints kept."""
    job, procs = start_run(launch, tmp_path, until="1 s" if to == "every-process" else "0.5 s")
    ranks = job.ranks(3)
    t0 = time.monotonic()
    if to == "rank-1":
        ranks[1].send_signal(signal.SIGTERM)
    else:
        os.killpg(job.proc.pid, signal.SIGTERM)
    elapsed = all_gone(job, procs, t0)
    assert job.proc.returncode == 143, (job.proc.returncode, job.stderr)
    lines = error_lines(job.stderr)
    if to == "rank-1":
        assert lines == ["ranvier: error: rank 1 of 3: terminated (SIGTERM); stopping every rank"], job.stderr
    else:                      # each rank got it: each says so, whole lines
        assert lines and all(line.endswith(" of 3: terminated (SIGTERM); stopping every rank") for line in lines), \
            job.stderr
    assert "Traceback" not in job.stderr
    nothing_half_written(tmp_path)
    newest_checkpoint(tmp_path)
    if to == "every-process":
        newest_checkpoint(tmp_path, 1000.0)
        resumes_to_the_uninterrupted_spikes(tmp_path, whole)
    print(f"all gone {elapsed:.2f} s after SIGTERM to {to}")


def test_sigterm_in_one_process_is_exit_143(launch, tmp_path):
    job, procs = start_run(launch, tmp_path, ranks=1, until="0.5 s")
    t0 = time.monotonic()
    job.proc.send_signal(signal.SIGTERM)
    all_gone(job, procs, t0)
    assert job.proc.returncode == 143, job.stderr
    assert "ranvier: terminated (SIGTERM)" in job.stderr
    assert "Traceback" not in job.stderr and not error_lines(job.stderr)
    nothing_half_written(tmp_path)
    newest_checkpoint(tmp_path)


# -- 4. Ctrl-C ------------------------------------------------------------------------------------------
@needs_mpiexec
@pytest.mark.parametrize("to", ["mpiexec", "process-group"])
def test_ctrl_c_stops_every_rank(launch, tmp_path, to):
    """SIGINT to mpiexec (hydra forwards it to every rank) or to the whole process group (what a
    terminal's Ctrl-C does): status 130, whole lines saying 'interrupted', nothing half-written."""
    job, procs = start_run(launch, tmp_path, until="0.5 s")
    t0 = time.monotonic()
    if to == "mpiexec":
        job.proc.send_signal(signal.SIGINT)
    else:
        os.killpg(job.proc.pid, signal.SIGINT)
    elapsed = all_gone(job, procs, t0)
    assert job.proc.returncode == 130, (job.proc.returncode, job.stderr)
    lines = error_lines(job.stderr)
    assert lines and all(line.endswith(" of 3: interrupted; stopping every rank") for line in lines), job.stderr
    assert "Traceback" not in job.stderr
    nothing_half_written(tmp_path)
    newest_checkpoint(tmp_path)       # complete: every file with the size and hash written with it
    print(f"all gone {elapsed:.2f} s after SIGINT to {to}")


# -- 5. the death watch of a job that ends well ----------------------------------------------------
@needs_mpiexec
def test_a_job_that_ends_well_leaves_no_death_watch_and_no_line(launch, tmp_path):
    """Every rank says 'done' at its exit: the watch says nothing and is gone with the ranks."""
    job = launch([mpiexec_path(), "-n", "3", *python_m_ranvier("run", *TINY, "--duration-ms", "50", "--energy", "none",
                                                               "--out", "out")], cwd=tmp_path)
    job.wait_for("ranvier: built", timeout=120)
    procs = [psutil.Process(job.proc.pid), *psutil.Process(job.proc.pid).children(recursive=True)]
    assert any("deathwatch.py" in " ".join(p.cmdline()) for p in procs), [p.cmdline() for p in procs]
    job.wait(timeout=120)
    assert job.proc.returncode == 0, job.stderr
    gone, alive = psutil.wait_procs(procs, timeout=STOP_S)
    assert not alive, [p.cmdline() for p in alive]
    assert not error_lines(job.stderr), job.stderr
    assert (tmp_path / "out" / "spikes.h5").is_file()
