"""Faults: never lose a user's files, never hang.

A rank that fails or is interrupted alone takes the whole MPI job down within seconds, with one
line naming it; input files that would block or never end (a FIFO, /dev/zero, a huge or binary
file) are refused in one line before anything is built; an empty --out and an unreadable
--power-trace too; output cut short by a closed pipe is normal use."""
from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import mpiexec_path, needs_mpiexec, ranvier_cli, subprocess_env

from ranvier import cli
from ranvier.bench import restore_cpus
from ranvier.cli import info

# A network that builds in a fraction of a second and simulates long enough to be interrupted.
TINY = ["--neurons", "400", "--set", "synapses_per_neuron=100", "--threads", "1"]
LONG_MS = "3600000"         # an hour simulated: still mid-run when a loaded machine delivers the signal late
STOP_S = 10                 # a failed or interrupted rank must end the job within this


class Launched:
    """A child process group with its stderr collected line by line (so the test can wait for a
    line, then act); killed whole at the end whatever happened."""

    def __init__(self, argv, cwd=None):
        self.proc = subprocess.Popen(argv, cwd=cwd, env=subprocess_env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, preexec_fn=restore_cpus,
                                     start_new_session=True)
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._out: list[str] = []
        self._readers = [threading.Thread(target=self._read_err, daemon=True),
                         threading.Thread(target=lambda: self._out.extend(self.proc.stdout), daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read_err(self):
        for line in self.proc.stderr:
            with self._seen:
                self.lines.append(line)
                self._seen.notify_all()

    @property
    def stdout(self) -> str:
        return "".join(self._out)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float) -> None:
        with self._seen:
            ok = self._seen.wait_for(lambda: any(text in line for line in self.lines) or self.proc.poll() is not None,
                                     timeout)
        if not ok or not any(text in line for line in self.lines):
            pytest.fail(f"no {text!r} on stderr within {timeout} s (status {self.proc.poll()}):\n{self.stderr}")

    def wait(self, timeout: float) -> float:
        """Seconds until the process ended; fails the test when it has not within timeout."""
        t0 = time.monotonic()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {timeout} s later (a rank left waiting?):\n{self.stderr}")
        elapsed = time.monotonic() - t0
        for reader in self._readers:          # the pipes close when the last process holding them ends
            reader.join(timeout=5)
        return elapsed

    def ranks(self, n: int, timeout: float = 30) -> dict[int, "psutil.Process"]:
        """The rank processes under mpiexec (its grandchildren, under the launcher's proxy)."""
        import psutil

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = {}
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                try:
                    rank = child.environ().get("PMI_RANK")
                    if "--watch" in child.cmdline():       # rank 0's output watcher (ranvier.io.leftovers)
                        continue
                except psutil.Error:
                    continue
                if rank is not None:
                    found[int(rank)] = child
            if len(found) == n:
                return found
            time.sleep(0.1)
        pytest.fail(f"{n} rank processes not found under mpiexec")

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)


@pytest.fixture
def launch():
    started = []

    def start(argv, cwd=None):
        started.append(Launched([str(a) for a in argv], cwd=cwd))
        return started[-1]

    yield start
    for launched in started:
        launched.kill()


def python_m_ranvier(*args):
    return [sys.executable, "-m", "ranvier", *map(str, args)]


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("ranvier: error:")]


# -- 1. a rank that fails or is interrupted alone stops the whole job ------------------------------
@needs_mpiexec
def test_sigint_to_one_rank_stops_every_rank(launch, tmp_path):
    """Ctrl-C reaching one rank's process alone (not mpiexec): that rank used to return 130 and
    block in MPI_Finalize while the others spun in a collective forever."""
    pytest.importorskip("psutil")
    pytest.importorskip("mpi4py")
    job = launch([mpiexec_path(), "-n", "3", *python_m_ranvier("run", *TINY, "--duration-ms", LONG_MS)], cwd=tmp_path)
    job.wait_for("ranvier: built", timeout=120)      # every rank has built: they are simulating
    ranks = job.ranks(3)
    time.sleep(1.0)
    ranks[2].send_signal(signal.SIGINT)
    job.wait(timeout=STOP_S)
    assert job.proc.returncode != 0
    assert error_lines(job.stderr) == ["ranvier: error: rank 2 of 3: interrupted; stopping every rank"], job.stderr
    assert "Traceback" not in job.stderr


SCRIPT = """\
import sys
import ranvier

sim = ranvier.Simulation(ranvier.models.dpsnn(neurons=400, synapses_per_neuron=100), threads=1)
if sim.rank == 1:
    print("rank 1 fails", file=sys.stderr, flush=True)
    raise {exception}
sim.run({duration})
print("rank 0 finished", flush=True)
"""


@needs_mpiexec
@pytest.mark.parametrize("exception, line, status", [
    ("RuntimeError('boom on rank 1')", "RuntimeError: boom on rank 1", 1),
    ("KeyboardInterrupt", "interrupted", 130),
], ids=["exception", "ctrl-c"])
def test_python_api_failure_on_one_rank_stops_every_rank(launch, tmp_path, exception, line, status):
    """A user script whose exception happens on rank 1 alone, while rank 0 simulates: the
    excepthook installed with the communicator prints the traceback, one line naming the rank,
    and aborts the job."""
    pytest.importorskip("mpi4py")
    script = tmp_path / "script.py"
    script.write_text(SCRIPT.format(exception=exception, duration=LONG_MS))
    job = launch([mpiexec_path(), "-n", "2", sys.executable, script], cwd=tmp_path)
    job.wait_for("rank 1 fails", timeout=120)
    job.wait(timeout=STOP_S)
    assert job.proc.returncode == status, job.stderr
    assert "Traceback" in job.stderr                    # a script's failure keeps its traceback
    assert error_lines(job.stderr) == [f"ranvier: error: rank 1 of 2: {line}; stopping every rank"], job.stderr
    assert "rank 0 finished" not in job.stdout


EXIT_SCRIPT = """\
import os, sys
import ranvier

sim = ranvier.Simulation(ranvier.models.dpsnn(neurons=400, synapses_per_neuron=100), threads=1)
if sim.rank == 1:
    print("rank 1 exits", file=sys.stderr, flush=True)
    {exit}
sim.run({duration})
print("rank 0 finished", flush=True)
"""


@needs_mpiexec
@pytest.mark.parametrize("how, line, status", [
    ("sys.exit(3)", "exited with status 3 (sys.exit, or an exit status chosen on this rank alone)", 3),
    ("raise SystemExit(5)", "exited with status 5 (sys.exit, or an exit status chosen on this rank alone)", 5),
    ("os._exit(4)", "os._exit(4)", 4),
], ids=["sys.exit", "SystemExit", "os._exit"])
def test_a_rank_that_exits_alone_stops_every_rank(launch, tmp_path, how, line, status):
    """A script whose rank 1 ends before sim.run() while the others simulate: SystemExit used to
    leave rank 1 in MPI_Finalize and the others in their first collective forever; os._exit was
    reported by the death watch as a SIGKILL. Both end the job as an exception does, with their
    own status and one line saying what they were."""
    pytest.importorskip("mpi4py")
    script = tmp_path / "script.py"
    script.write_text(EXIT_SCRIPT.format(exit=how, duration=LONG_MS))
    job = launch([mpiexec_path(), "-n", "3", sys.executable, script], cwd=tmp_path)
    job.wait_for("rank 1 exits", timeout=120)
    job.wait(timeout=STOP_S)
    assert job.proc.returncode == status, job.stderr
    assert error_lines(job.stderr) == [f"ranvier: error: rank 1 of 3: {line}; stopping every rank"], job.stderr
    assert "SIGKILL" not in job.stderr and "rank 0 finished" not in job.stdout


@needs_mpiexec
def test_a_script_that_ends_normally_on_every_rank_finalizes_mpi(tmp_path):
    """MPI ends with the process (the engine's exit hook): after a normal end, every rank
    finalizes and the job's status is 0, with nothing on stderr but the run's own lines."""
    pytest.importorskip("mpi4py")
    script = tmp_path / "script.py"
    script.write_text(EXIT_SCRIPT.format(exit="pass", duration=50))
    done = subprocess.run([mpiexec_path(), "-n", "2", sys.executable, script], cwd=tmp_path, env=subprocess_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("rank 0 finished") == 2
    assert not error_lines(done.stderr) and "Abort" not in done.stderr


CLI_SCRIPT = """\
import sys
from ranvier import cli; from ranvier.core import simulation

run = simulation.Simulation.run


def failing_run(self, *args, **kwargs):
    if self.rank == 1:
        raise {exception}
    return run(self, *args, **kwargs)


simulation.Simulation.run = failing_run
sys.exit(cli.main(sys.argv[1:]))
"""


@needs_mpiexec
@pytest.mark.parametrize("exception, line", [
    ("RuntimeError('engine failed\\non rank 1')", "RuntimeError: engine failed on rank 1"),
    ("MemoryError()", "MemoryError: out of memory"),
], ids=["RuntimeError", "MemoryError"])
def test_cli_failure_on_one_rank_is_one_line_and_stops_every_rank(launch, tmp_path, exception, line):
    pytest.importorskip("mpi4py")
    script = tmp_path / "ranvier_run.py"
    script.write_text(CLI_SCRIPT.format(exception=exception))
    job = launch([mpiexec_path(), "-n", "2", sys.executable, script, "run", *TINY, "--duration-ms", LONG_MS],
                 cwd=tmp_path)
    job.wait_for("ranvier: built", timeout=120)
    job.wait(timeout=STOP_S)                           # rank 1 fails as its simulation starts
    assert job.proc.returncode == 1, job.stderr
    assert error_lines(job.stderr) == [f"ranvier: error: rank 1 of 2: {line}; stopping every rank"], job.stderr
    assert "Traceback" not in job.stderr


def test_sigint_in_one_process_is_exit_130(launch, tmp_path):
    job = launch(python_m_ranvier("run", *TINY, "--duration-ms", LONG_MS), cwd=tmp_path)
    job.wait_for("ranvier: built", timeout=120)
    time.sleep(0.5)
    job.proc.send_signal(signal.SIGINT)
    job.wait(timeout=STOP_S)
    assert job.proc.returncode == 130, job.stderr
    assert "ranvier: interrupted" in job.stderr
    assert "Traceback" not in job.stderr and not error_lines(job.stderr)


INTERRUPTED_IN_EXEC = """\
import sys
from ranvier import cli; from ranvier.core import simulation


def interrupted(self, *args, **kwargs):
    exec("raise KeyboardInterrupt")      # as in a dataclass or namedtuple defined at an import


simulation.Simulation.run = interrupted
sys.exit(cli.main(sys.argv[1:]))
"""


def test_an_interrupt_that_escaped_an_exec_still_ends_with_130(tmp_path):
    """CPython ends a process by SIGINT at exit once a KeyboardInterrupt escaped code exec()
    ran from a string, even caught: an interrupt during an import (dataclasses exec their
    methods) gave `python -m ranvier` status -2, not 130, one run in a few. (Run as a module:
    a script's SystemExit ends the process before that flag is looked at.)"""
    (tmp_path / "ranvier_run.py").write_text(INTERRUPTED_IN_EXEC)
    done = subprocess.run([sys.executable, "-m", "ranvier_run", "run", *TINY, "--duration-ms", "10"], cwd=tmp_path,
                          env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr
    assert "ranvier: interrupted" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("exception, line", [
    (RuntimeError("engine failed:\n  details"), "ranvier: error: RuntimeError: engine failed: details"),
    (OSError(28, "No space left on device"), "ranvier: error: OSError: [Errno 28] No space left on device"),
    (MemoryError(), "ranvier: error: MemoryError: out of memory"),
], ids=["RuntimeError", "OSError", "MemoryError"])
def test_unexpected_failure_in_one_process_is_one_line_exit_1(monkeypatch, capsys, exception, line):
    def fail(args=None):
        raise exception

    monkeypatch.setattr(info, "command", fail)
    monkeypatch.delenv("RANVIER_TRACEBACK", raising=False)
    assert cli.main(["info"]) == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [line]


def test_ranvier_traceback_reraises(monkeypatch):
    def fail(args=None):
        raise RuntimeError("for debugging")

    monkeypatch.setattr(info, "command", fail)
    monkeypatch.setenv("RANVIER_TRACEBACK", "1")
    with pytest.raises(RuntimeError, match="for debugging"):
        cli.main(["info"])


def test_failed_allocation_is_one_line(tmp_path):
    """A real failed allocation (1 TiB under an 8 GiB address-space limit) in a command."""
    code = textwrap.dedent("""\
        import sys
        import numpy as np
        from ranvier import cli
        from ranvier.cli import info

        info.command = lambda args=None: np.ones(1 << 40, dtype=np.uint8)
        sys.exit(cli.main(["info"]))
        """)

    def limit_memory():
        restore_cpus()
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))

    done = subprocess.run([sys.executable, "-c", code], env=subprocess_env(), capture_output=True, text=True,
                          timeout=120, preexec_fn=limit_memory, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ranvier: error: "), done.stderr
    assert "Memory" in lines[0]


# -- 2. config files that would block or never end ------------------------------------------------
def special_config(kind: str, tmp_path: Path) -> tuple[Path, str]:
    """(path, a word the refusal must contain)"""
    if kind == "fifo":
        path = tmp_path / "config.toml"
        os.mkfifo(path)
        return path, "FIFO"
    if kind == "dev-zero":
        return Path("/dev/zero"), "device"
    if kind == "2 MiB":
        path = tmp_path / "config.toml"
        with open(path, "w") as f:
            f.write("# padding\n" * (2 * 2**20 // 10))
        return path, "MiB"
    if kind == "binary":
        path = tmp_path / "config.toml"
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe" * 64)
        return path, "UTF-8"
    raise AssertionError(kind)


CONFIG_KINDS = ["fifo", "dev-zero", "2 MiB", "binary"]


@pytest.mark.parametrize("kind", CONFIG_KINDS)
def test_config_that_is_not_a_small_text_file_is_refused(kind, tmp_path):
    if kind == "dev-zero" and not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    config, word = special_config(kind, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    done = ranvier_cli("run", config, *TINY, "--out", tmp_path / "out", timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ranvier: error: "), done.stderr
    assert str(config) in lines[0] and word in lines[0], lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before       # no --out folder


def test_fifo_config_is_refused_without_blocking(tmp_path, capsys):
    """In-process, timed: nothing ever writes to the FIFO, so reading it would block forever."""
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    status = []
    worker = threading.Thread(target=lambda: status.append(cli.main(["run", str(fifo), "--out", str(tmp_path / "o")])),
                              daemon=True)
    t0 = time.monotonic()
    worker.start()
    worker.join(timeout=5)
    elapsed = time.monotonic() - t0
    if worker.is_alive():                   # unblock the reader: a writer that closes gives it EOF
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=5)
        pytest.fail("reading the FIFO blocked")
    assert status == [2] and elapsed < 1.0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "FIFO" in err[0]
    assert not (tmp_path / "o").exists()


# -- 3. --out "" and --power-trace, refused before anything is built --------------------------------
# 100,000 neurons take tens of seconds to build: a refusal must come long before.
BIG = ["--neurons", "100000", "--duration-ms", "10", "--threads", "1"]
FAST_S = 15


def assert_refused_fast(args, word, cwd):
    t0 = time.monotonic()
    done = ranvier_cli("run", *BIG, *args, timeout=120)
    elapsed = time.monotonic() - t0
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ranvier: error: ") and word in lines[0], done.stderr
    assert "built" not in done.stderr and done.stdout == ""
    assert elapsed < FAST_S, f"refused only after {elapsed:.1f} s: something was built first"


def test_empty_out_is_refused(tmp_path):
    before = sorted(p.name for p in tmp_path.iterdir())
    assert_refused_fast(["--out", ""], "--out", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo", "unreadable"])
def test_bad_power_trace_is_refused_before_the_build(kind, tmp_path):
    trace = tmp_path / "trace.csv"
    if kind == "directory":
        trace.mkdir()
    elif kind == "fifo":
        os.mkfifo(trace)
    elif kind == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads any file")
        trace.write_text("time_s,watts\n")
        trace.chmod(0)
    try:
        assert_refused_fast(["--power-trace", trace, "--out", tmp_path / "out"], "--power-trace", tmp_path)
    finally:
        if kind == "unreadable":
            trace.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert not (tmp_path / "out").exists()


# -- 4. a closed stdout is normal use -------------------------------------------------------------
@pytest.mark.parametrize("reader", ["head -n 1", "true"])
def test_output_cut_by_a_pipe_is_quiet(reader):
    """`ranvier info | head -n 1`: unbuffered output (each line a write) keeps writing after head
    has gone; `| true` closes the pipe before the first line."""
    done = subprocess.run(["bash", "-c", f"set -o pipefail; '{sys.executable}' -m ranvier info | {reader}"],
                          env=subprocess_env(), capture_output=True, text=True, timeout=120,
                          preexec_fn=restore_cpus)
    assert done.stderr == ""
    assert done.returncode == 0
    if reader.startswith("head"):
        assert done.stdout.startswith("ranvier ") and done.stdout.count("\n") == 1


def test_run_with_a_closed_stdout_still_writes_its_folder(tmp_path):
    """`ranvier run --out DIR | true`: the summary has nowhere to go, the results still do."""
    out = tmp_path / "out"
    done = subprocess.run(["bash", "-c", f"set -o pipefail; '{sys.executable}' -m ranvier run "
                                         f"{' '.join(TINY)} --duration-ms 200 --out '{out}' | true"],
                          env=subprocess_env(), capture_output=True, text=True, timeout=120, preexec_fn=restore_cpus)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and not error_lines(done.stderr)
    assert (out / "summary.json").exists() and (out / "spikes.h5").exists()
