"""What this node lets a run use: cores, the memory left under every limit that applies, and the
OpenMP wait policy. Read before the build, so that a run that cannot fit is refused in one line.

Imports nothing of the engine: `ranvier/__init__.py` uses it before the OpenMP runtime loads.
"""
from __future__ import annotations

import os
import resource
from dataclasses import dataclass

# Threads per rank above this many per core are refused (tests and benchmarks use up to 3 on 2 cores).
MAX_THREADS_PER_CORE = 4
# Launchers' count of the ranks on this node: MPICH's hydra, Open MPI.
LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")
# Threads a rank is assumed to run when OMP_NUM_THREADS does not say: any rank with more than
# one thread oversubscribes a node whose ranks already fill its cores.
THREADS_HINT = 2

_CGROUP_UNLIMITED = 2**60      # cgroup v1 writes "no limit" as 2^63 rounded down to a page


def cores() -> int:
    """Logical cores of this node (os.cpu_count)."""
    return os.cpu_count() or 1


# -- cores taken by other work (the default thread count) -------------------------------------
# A thread that shares its core with another busy process gets part of it, and every cycle of a
# run waits for its slowest thread: on 2 cores with one busy process beside it, 2 threads ran at
# a real-time factor of 0.55 where 1 thread ran at 0.38. So the default counts the cores that
# other work keeps busy, measured from /proc/stat while this process waits, and leaves them out.
LOAD_WINDOW_S = 0.1            # the window: 10 jiffies of /proc/stat per CPU
LOAD_REUSED_S = 2.0            # a measurement this recent stands (Simulations made one after another)
BUSY_CORE = 0.75               # other work above this much of a core takes it


def _cpu_jiffies() -> dict | None:
    """cpu number -> (busy, total) jiffies from /proc/stat; None where it cannot be read."""
    try:
        with open("/proc/stat") as f:
            lines = [line.split() for line in f if line.startswith("cpu") and line[3:4].isdigit()]
    except OSError:
        return None
    jiffies = {}
    for fields in lines:
        # user nice system idle iowait irq softirq steal (guest time is counted in user already);
        # steal is a virtual machine's core taken by its host: busy, as far as this run goes
        values = [int(v) for v in fields[1:9]]
        jiffies[int(fields[0][3:])] = (sum(values) - values[3] - values[4], sum(values))
    return jiffies


_last_load: tuple[float, float] | None = None     # (time.monotonic(), cores busy elsewhere)


def cores_busy_elsewhere(cpus=None) -> float | None:
    """How many of `cpus` (default: those this process may run on) other processes keep busy, in
    cores: measured over LOAD_WINDOW_S while this process waits (it would otherwise take part of
    what it measures), less what this process used meanwhile. None where /proc/stat cannot be read."""
    import time
    global _last_load
    if _last_load is not None and time.monotonic() - _last_load[0] < LOAD_REUSED_S:
        return _last_load[1]
    if cpus is None:
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(cores())
    t0, own0, first = time.monotonic(), time.process_time(), _cpu_jiffies()
    if first is None:
        return None
    time.sleep(LOAD_WINDOW_S)
    t1, own1, last = time.monotonic(), time.process_time(), _cpu_jiffies()
    if last is None:
        return None
    busy = sum((last[c][0] - first[c][0]) / (last[c][1] - first[c][1]) for c in cpus
               if c in first and c in last and last[c][1] > first[c][1])
    value = max(0.0, busy - (own1 - own0) / max(1e-9, t1 - t0))
    _last_load = (time.monotonic(), value)
    return value


def default_threads(ranks_on_node: int, cpus=None) -> tuple[int, str | None]:
    """Threads per rank when none are asked for: the node's cores shared by its ranks; in one
    process, less the cores that other work keeps busy now, among `cpus` (the CPUs the process
    may use; the engine's OpenMP runtime pins this thread to one of them when it loads, so the
    caller gives those read before: ranvier._cpus_at_import). Returns (threads, a note saying
    why fewer, or None)."""
    n = cores()
    threads = max(1, n // ranks_on_node)
    if ranks_on_node > 1:            # the launcher places ranks and their threads
        return threads, None
    if cpus is None:
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(n)
    busy = cores_busy_elsewhere(cpus)
    if busy is None:
        return threads, None
    free = len(cpus)
    taken = int(busy + 1 - BUSY_CORE)          # a core counts as taken above BUSY_CORE of it
    if taken <= 0 or threads <= 1:
        return threads, None
    chosen = max(1, min(threads, free - taken))
    if chosen == threads:
        return threads, None
    return chosen, (f"other processes keep {busy:.1f} of this node's {n} cores busy: running {chosen} thread(s) "
                    f"instead of {threads}, which would wait for each other on the shared cores (--threads or "
                    f"threads= chooses)")


def peak_rss_bytes() -> int:
    """This process's peak resident memory so far (getrusage's ru_maxrss)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # Linux reports KiB


def gib(x: float) -> str:
    """Bytes in GiB to three significant digits: an estimate just above a limit must not read as
    the same number ("1.02 GiB ... allows 0.998 GiB more", not "1.0 GiB ... 1.0 GiB")."""
    return f"{x / 2**30:.3g} GiB"


@dataclass
class MemoryLimit:
    room_bytes: int          # what is left under this limit now
    what: str                # for the user: "ulimit -v allows 2.9 GiB more"
    per_process: bool        # True: each rank has its own (ulimit); False: the ranks of the node share it


def _available_memory_bytes() -> int | None:
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except Exception:   # pragma: no cover - psutil is a dependency; /proc is the fallback
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
    return None


def _vm_size_bytes() -> int:
    """This process's virtual size (VmSize of /proc/self/status): what RLIMIT_AS counts."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _address_space_limit() -> MemoryLimit | None:
    """`ulimit -v` (RLIMIT_AS): the limit minus the virtual memory this process already maps."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError, AttributeError):   # pragma: no cover - not Linux
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    room = max(0, soft - _vm_size_bytes())
    return MemoryLimit(room, f"ulimit -v allows {gib(room)} more (limit {gib(soft)}, virtual memory counts)", True)


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _cgroup_mounts(mountinfo: str = "/proc/self/mountinfo") -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(root inside the hierarchy, mount point) of the cgroup v2 mounts and of the v1 memory mounts."""
    v2, v1 = [], []
    try:
        with open(mountinfo) as f:
            for line in f:
                left, sep, right = line.partition(" - ")
                if not sep:
                    continue
                fields, tail = left.split(), right.split()
                if len(fields) < 5 or len(tail) < 3:
                    continue
                root, mount = fields[3], fields[4].replace("\\040", " ")
                if tail[0] == "cgroup2":
                    v2.append((root, mount))
                elif tail[0] == "cgroup" and "memory" in tail[2].split(","):
                    v1.append((root, mount))
    except OSError:
        pass
    return v2, v1


def _cgroup_dirs(root: str, mount: str, path: str) -> list[str]:
    """The folders of this process's cgroup and of its ancestors, under one mount, deepest first."""
    root = root.rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    elif root not in ("", "/") and not os.path.isdir(os.path.join(mount, path.lstrip("/"))):
        path = "/"        # a namespaced container: its own cgroup is the mount's root
    parts = [p for p in path.split("/") if p]
    return [os.path.join(mount, *parts[:k]) for k in range(len(parts), -1, -1)]


def _cgroup_limits(cgroup: str = "/proc/self/cgroup", mountinfo: str = "/proc/self/mountinfo") -> list[MemoryLimit]:
    """cgroup v2 memory.max minus memory.current, and cgroup v1 memory.limit_in_bytes minus
    memory.usage_in_bytes, of this process's cgroup and its ancestors (each limits it)."""
    try:
        with open(cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    v2_path = v1_path = None
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2_path = path
        elif "memory" in controllers.split(","):
            v1_path = path
    v2_mounts, v1_mounts = _cgroup_mounts(mountinfo)
    limits = []
    for path, mounts, limit_file, usage_file, name in (
            (v2_path, v2_mounts, "memory.max", "memory.current", "cgroup v2"),
            (v1_path, v1_mounts, "memory.limit_in_bytes", "memory.usage_in_bytes", "cgroup v1")):
        if path is None:
            continue
        for root, mount in mounts:
            for folder in _cgroup_dirs(root, mount, path):
                limit = _read_int(os.path.join(folder, limit_file))
                if limit is None or limit >= _CGROUP_UNLIMITED:
                    continue
                used = _read_int(os.path.join(folder, usage_file)) or 0
                room = max(0, limit - used)
                limits.append(MemoryLimit(room, f"the {name} memory limit ({limit_file} of {folder}) allows "
                                                f"{gib(room)} more (limit {gib(limit)})", False))
    return limits


def memory_limits() -> list[MemoryLimit]:
    """Every limit on the memory a run may take now: available memory, ulimit -v, cgroups."""
    limits = []
    available = _available_memory_bytes()
    if available is not None:
        limits.append(MemoryLimit(available, f"{gib(available)} available", False))
    address_space = _address_space_limit()
    if address_space is not None:
        limits.append(address_space)
    limits.extend(_cgroup_limits())
    return limits


def tightest_memory_limit(per_rank_bytes: float, ranks_on_node: int,
                          limits: list[MemoryLimit] | None = None) -> tuple[float, MemoryLimit | None]:
    """(need / room, the limit) for the limit this run comes closest to exceeding: a per-process
    limit holds one rank's estimate, a shared one all the ranks of the node."""
    worst, which = 0.0, None
    for limit in memory_limits() if limits is None else limits:
        need = per_rank_bytes * (1 if limit.per_process else ranks_on_node)
        ratio = need / max(limit.room_bytes, 1)
        if which is None or ratio > worst:
            worst, which = ratio, limit
    return worst, which


# -- OpenMP threads sharing cores with other ranks -------------------------------------------
def wait_policy() -> str | None:
    """OMP_WAIT_POLICY as this process's OpenMP runtime read it (set before the engine loads)."""
    value = os.environ.get("OMP_WAIT_POLICY")
    return value.strip().lower() if value else None


def local_ranks_from_launcher(environ=None) -> int:
    """Ranks on this node as the MPI launcher announced them (1 outside mpiexec)."""
    environ = os.environ if environ is None else environ
    for var in LOCAL_SIZE_VARS:
        try:
            n = int(environ[var])
        except (KeyError, ValueError):
            continue
        if n >= 1:
            return n
    return 1


def threads_hint(environ=None) -> int:
    environ = os.environ if environ is None else environ
    try:
        n = int(environ.get("OMP_NUM_THREADS", "").split(",")[0])
    except ValueError:
        return THREADS_HINT
    return n if n >= 1 else THREADS_HINT


def choose_wait_policy(environ=None, cpu_count: int | None = None) -> bool:
    """Sets OMP_WAIT_POLICY=passive in `environ` when it is unset and the launcher puts several
    ranks on this node whose threads would outnumber its cores (spinning threads then steal the
    cores the others need: runs 30-650 times slower). True if it set it. Call before the engine
    (and libgomp, which reads the variable once, when it loads) is imported."""
    environ = os.environ if environ is None else environ
    if environ.get("OMP_WAIT_POLICY"):
        return False
    local = local_ranks_from_launcher(environ)
    if local > 1 and local * threads_hint(environ) > (cpu_count or cores()):
        environ["OMP_WAIT_POLICY"] = "passive"
        return True
    return False


def oversubscription_warning(ranks_on_node: int, threads: int, cpu_count: int | None = None) -> str | None:
    """One warning line when the node's ranks run more threads than it has cores, else None."""
    n = cpu_count or cores()
    total = ranks_on_node * threads
    if total <= n:
        return None
    what = (f"{ranks_on_node} rank(s) x {threads} thread(s) = {total} threads on {n} cores of this node"
            if ranks_on_node > 1 else f"{threads} threads on {n} cores")
    if wait_policy() == "passive":
        return f"ranvier: warning: {what}; OpenMP threads wait passively (OMP_WAIT_POLICY=passive)"
    return (f"ranvier: warning: {what}; waiting OpenMP threads spin and take the cores from the working ones: "
            f"set OMP_WAIT_POLICY=passive (or use fewer threads or ranks)")
