"""What the NEST comparison harnesses share: bench/nest_compare.py and bench/stdp_compare.py.

Both run each simulator in a child process of its own and measure it the same way, refuse bad
arguments with HarnessError, say the same thing when NEST is missing or broken, and print
plain-text tables. This module holds exactly that, imports neither NEST nor Ranvier, and imports
neither harness (nest_compare.py imports stdp_compare.py, whose children run its dpsnn; both
import this module).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from pathlib import Path

MAX_SEED = 2**31 - 1            # NEST's rng_seed range is [1, 2^31 - 1]
NEST_INSTALL = ("install it with `pip install nest-simulator` (or the optional extra `pip install .[nest]`); "
                "the NEST figures and the ratios NEST / Ranvier are unavailable.")
NEST_MISSING = "NEST is not installed (no module `nest`): " + NEST_INSTALL
NEST_BROKEN = "NEST is installed but `import nest` failed ({why}): " + NEST_INSTALL
MIB = 2.0**20


class HarnessError(ValueError):
    """A bad argument or an impossible configuration, stated for the user."""


class NestUnavailable(RuntimeError):
    """NEST is missing, or `import nest` failed in a child: its figures are left out."""


# ---------------------------------------------------------------------------------------------
# The host
# ---------------------------------------------------------------------------------------------
def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def module_found(name: str) -> bool:
    """Whether `import name` would find a module (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def nest_env(threads: int, base: dict | None = None) -> dict:
    """The NEST child's environment: OMP_NUM_THREADS = threads and, unless set already, the
    thread pinning that `ranvier` gives its own OpenMP threads (OMP_PROC_BIND=close,
    OMP_PLACES=cores; see src/ranvier/__init__.py), so that both run under the same policy."""
    env = dict(os.environ if base is None else base, OMP_NUM_THREADS=str(threads))
    env.setdefault("OMP_PROC_BIND", "close")
    env.setdefault("OMP_PLACES", "cores")
    return env


# ---------------------------------------------------------------------------------------------
# Children and their memory
# ---------------------------------------------------------------------------------------------
def peak_rss_self() -> int:
    """This process's peak resident set (bytes): VmHWM, else ru_maxrss (KiB on Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_now() -> int | None:
    """This process's resident set now (bytes), VmRSS; None where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def run_child(command: list[str], log: Path, env: dict | None = None) -> tuple[int, int, float]:
    """Run a child process to the end with its output in `log`; (exit code, its peak RSS in
    bytes as the kernel reports it to the parent, wall seconds)."""
    start = time.perf_counter()
    with open(log, "wb") as f:
        proc = subprocess.Popen(command, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss * 1024, time.perf_counter() - start


def tail(path: Path, lines: int = 20) -> str:
    """The last lines of a child's log ("" where it cannot be read)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------
def ratio(a, b) -> float | None:
    """a / b, or None when either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def format_value(form: str, value) -> str:
    """value in format `form`, or "n/a" for a missing one."""
    return "n/a" if value is None else form.format(value)


def format_table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Plain text, the first `left` columns left-aligned, the others right-aligned."""
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    lines = []
    for k, row in enumerate([headers] + rows):
        cells = [str(c).ljust(widths[i]) if i < left else str(c).rjust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * wd for wd in widths))
    return "\n".join(lines)
