"""The death watch (ranvier.runtime.deathwatch): which ends of a rank it reports, on its own, without MPI.

Under mpiexec the launcher tears the job down within milliseconds of a death, so whether the
watch's line gets out there is a race the job tests (test_job_faults.py) see only from the
outside; here the protocol is checked directly: ranks are processes that connect, say what
they say, and end."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from ranvier.runtime import deathwatch

psutil = pytest.importorskip("psutil")

RANK = """\
import os, signal, sys, time
from ranvier.runtime import deathwatch
conn = deathwatch.connect(sys.argv[1].replace("@", "\\0", 1), int(sys.argv[2]))   # argv holds no NUL
how = sys.argv[3]
print("connected", flush=True)
if how == "exit":                      # a normal end: 'done' at exit
    sys.exit(0)
if how == "failing":                   # a failure this rank reports itself
    conn.failing()
    os._exit(1)
if how in ("crash", "crash-unannounced"):
    from ranvier import _engine
    _engine.install_crash_report("ranvier: error: rank 1 of 2: ", "; stopping every rank")
    if how == "crash":
        _engine.set_crash_notify_fd(conn.fileno())
    os.kill(os.getpid(), signal.SIGSEGV)
time.sleep(60)                         # 'sigkill': killed from outside
"""


def watch_processes(expected: int = 1, timeout_s: float = 10.0):
    """This process's watch children, waiting up to timeout_s for `expected` of them: Popen
    returns once exec has closed the child's close-on-exec descriptors, a moment before the
    kernel sets up its new command line, which reads empty meanwhile (seen on a loaded machine)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = []
        for p in psutil.Process().children():
            try:
                if "deathwatch.py" in " ".join(p.cmdline()):
                    found.append(p)
            except psutil.Error:                 # ended meanwhile
                pass
        if len(found) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def run_job(how_rank1: str, capfd, rank0_gone_first: bool = False) -> tuple[str, int]:
    """A node of 2 ranks: rank 0 ends normally, rank 1 as `how_rank1`. The watch's stderr line
    (or ''), and rank 1's pid. `rank0_gone_first`: rank 1 connects only after rank 0 has ended."""
    address = deathwatch.start(world_size=2, ranks_on_node=2, nodes=1)
    assert address is not None
    watch = watch_processes()
    assert len(watch) == 1

    def rank(r: int, how: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", RANK, address.replace("\0", "@", 1), str(r), how],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    ranks = [rank(0, "exit")]
    if rank0_gone_first:
        ranks[0].wait(timeout=30)
        time.sleep(0.5)                  # the watch has seen rank 0's end
    ranks.append(rank(1, how_rank1))
    for r in ranks:
        assert r.stdout.readline().strip() == "connected"
    if how_rank1 == "sigkill":
        ranks[1].send_signal(signal.SIGKILL)
    for r in ranks:
        r.wait(timeout=30)
    gone, alive = psutil.wait_procs(watch, timeout=10)
    assert not alive, "the watch outlived the ranks"
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("ranvier: error:")]
    assert len(lines) <= 1, lines
    return (lines[0] if lines else ""), ranks[1].pid


def test_a_rank_killed_without_a_word_is_named(capfd):
    line, pid = run_job("sigkill", capfd)
    assert line == deathwatch.death_line("1", 2, str(pid), socket.gethostname(), nodes=1), line
    assert line.startswith(f"ranvier: error: rank 1 of 2 (pid {pid} on ")


def test_a_rank_that_connects_after_another_ended_is_still_watched(capfd):
    """A loaded node may start a rank late: rank 0 has connected and ended normally before rank 1
    connects. The watch waits for every rank of its node, and still names rank 1's death."""
    line, pid = run_job("sigkill", capfd, rank0_gone_first=True)
    assert line == deathwatch.death_line("1", 2, str(pid), socket.gethostname(), nodes=1), line


@pytest.mark.parametrize("how", ["exit", "failing", "crash"])
def test_ends_the_rank_reports_itself_get_no_line(capfd, how):
    line, _ = run_job(how, capfd)
    assert line == ""


def test_a_crash_the_handler_does_not_announce_is_reported(capfd):
    """The engine's crash handler tells the watch ('crash' above); without that, the watch
    would name the rank as dead without a word, a second line after the crash line."""
    line, pid = run_job("crash-unannounced", capfd)
    assert line.startswith(f"ranvier: error: rank 1 of 2 (pid {pid} on "), line


def test_several_nodes_say_the_launcher_may_have_stopped_it():
    line = deathwatch.death_line("3", 8, "123", "node7", nodes=2)
    assert "or stopped by the launcher after a failure on another node" in line

