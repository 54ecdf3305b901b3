"""The Python side of the communication layer: the only module that imports mpi4py.

A single-process run needs no MPI at all. Under `mpiexec` (detected from the launcher's
environment) or when a communicator is passed in, mpi4py provides it.

A failure on one rank ends the whole job. An uncaught exception or Ctrl-C on one rank would
otherwise leave the others waiting forever in their next collective call. So when a
communicator of more than one rank is made (`MPIComm`), a `sys.excepthook` is installed (once,
chained to the one before it): it prints the traceback as usual, then one line naming the rank,

    ranvier: error: rank 1 of 4: RuntimeError: ...; stopping every rank

and calls MPI_Abort on MPI.COMM_WORLD (exit status 130 after Ctrl-C, 1 otherwise), which ends
every rank within seconds. A script that catches its own exceptions keeps them: the hook only
sees what would end the interpreter. The `ranvier` command does the same in its main()
(`stop_every_rank`), without the traceback.

A rank that crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) runs no Python: the engine's
crash report (cpp/core/crash_report.cpp, installed here with the communicator and by the
`ranvier` command) writes `ranvier: error: rank 1 of 4: crashed (SIGSEGV, ...); stopping every
rank` from the signal handler, and the signal then ends the process; the launcher ends the
others. A rank killed outright (SIGKILL, the out-of-memory killer) says nothing itself: the
launcher's report names it (docs/faults.md).
"""
from __future__ import annotations

import os
import socket
import sys
import time

from ..errors import ConfigError, Terminated

_LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE")
_LAUNCHER_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143              # 128 + SIGTERM, as a shell reports it


def launched_with_mpi() -> bool:
    for var in _LAUNCHER_SIZE_VARS:
        try:
            if int(os.environ.get(var, "1")) > 1:
                return True
        except ValueError:
            pass
    return False


def launcher_rank() -> int:
    """This process's rank as the MPI launcher announced it (0 outside mpiexec), known before MPI starts."""
    for var in _LAUNCHER_RANK_VARS:
        try:
            return int(os.environ[var])
        except (KeyError, ValueError):
            pass
    return 0


def launcher_size() -> int:
    """The job's number of ranks as the MPI launcher announced it (1 outside mpiexec)."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"):
        try:
            return max(1, int(os.environ[var]))
        except (KeyError, ValueError):
            pass
    return 1


class SerialComm:
    """Stands in for a communicator of one rank."""
    rank = 0
    size = 1
    handle = None          # no MPI
    ranks_on_node = 1
    node_rank = 0          # rank within the node

    def gather(self, obj):
        return [obj]

    def bcast(self, obj):
        return obj

    def allreduce_max(self, x):
        return x

    def barrier(self):
        pass


class MPIComm:
    """Wraps an mpi4py communicator for the few collective calls Python makes."""

    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.handle = comm.py2f()          # Fortran handle: portable across MPI libraries
        from mpi4py import MPI
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.ranks_on_node = node.Get_size()
        self.node_rank = node.Get_rank()
        # where every rank runs: its host name and its node (the ranks MPI lets share memory)
        self.rank_hosts = comm.allgather((socket.gethostname(), self.node_rank, self.ranks_on_node))
        if self.size > 1:
            _install_abort_hook()
            install_crash_report(self.rank, self.size)
            _watch_deaths(comm, node, sum(1 for _, node_rank, _ in self.rank_hosts if node_rank == 0))
            _report_exit(self.rank, self.size)
        node.Free()

    def gather(self, obj):
        return self.comm.gather(obj, root=0)

    def bcast(self, obj):
        return self.comm.bcast(obj, root=0)

    def allreduce_max(self, x):
        from mpi4py import MPI
        return self.comm.allreduce(x, op=MPI.MAX)

    def barrier(self):
        self.comm.Barrier()


def transport(comm) -> dict:
    """How the ranks of comm (SerialComm or MPIComm) reach each other, for the environment
    record: the nodes (groups of ranks that MPI lets share memory, MPI_COMM_TYPE_SHARED) and
    their host names; within a node, shared memory; between nodes, the network module of the
    MPI library (MPICH: MPIR_CVAR_CH4_NETMOD, else the first of its build, with UCX_TLS or
    FI_PROVIDER where set; TCP unless the machine has an RDMA device)."""
    if comm.size == 1 or not hasattr(comm, "rank_hosts"):
        return {"ranks": 1, "nodes": 1, "hosts": [socket.gethostname()], "within_node": None, "between_nodes": None}
    hosts = [host for host, node_rank, _ in comm.rank_hosts if node_rank == 0]
    shared = max(on_node for _, _, on_node in comm.rank_hosts) > 1
    return {"ranks": comm.size, "nodes": len(hosts), "hosts": hosts,
            "within_node": "shared memory (MPI's intra-node path)" if shared else None,
            "between_nodes": network_module() if len(hosts) > 1 else None}


def network_module() -> str:
    """The MPI library's path between nodes, as far as this process can tell without MPI_T."""
    library = " ".join((mpi_library_version_full() or "").split())
    if "Open MPI" in library:
        return "Open MPI (its pml/btl selection)"
    netmods = []
    if "MPICH Device: ch4:" in library:
        netmods = library.split("MPICH Device: ch4:", 1)[1].split(" MPICH ", 1)[0].replace(",", " ").split()
    chosen = os.environ.get("MPIR_CVAR_CH4_NETMOD") or (netmods[0] if netmods else None)
    if chosen is None:
        return library.split(" MPICH Release")[0] or "unknown"
    detail = []
    if chosen == "ucx" and os.environ.get("UCX_TLS"):
        detail.append(f"UCX_TLS={os.environ['UCX_TLS']}")
    if chosen == "ofi" and os.environ.get("FI_PROVIDER"):
        detail.append(f"FI_PROVIDER={os.environ['FI_PROVIDER']}")
    try:
        rdma = sorted(os.listdir("/sys/class/infiniband"))
    except OSError:
        rdma = []
    detail.append(f"RDMA devices {', '.join(rdma)}" if rdma else "tcp (no RDMA device in /sys/class/infiniband)")
    return f"MPICH ch4 netmod {chosen}, {'; '.join(detail)}"


def mpi_library_version_full() -> str | None:
    try:
        return import_mpi().Get_library_version()
    except ImportError:
        return None


# One line, naming the fix: a ranvier built without MPI (RANVIER_WITH_MPI=OFF, a platform with
# no MPICH wheel, or --no-build-isolation in an environment without mpich) under mpiexec would
# otherwise start N independent single-process runs or fail on every rank.
NO_MPI_BUILD = ("this ranvier was built without MPI ('ranvier info' shows 'MPI backend no'), so it cannot "
                "run on several ranks: reinstall it from its source folder with 'pip install --force-reinstall .' "
                "(it builds against the mpich wheel that pip brings), or run it in one process without "
                "mpiexec (--threads for more cores)")


def engine_built_with_mpi() -> bool:
    """Whether the compiled engine has its MPI backend (imported here, after ranvier set OpenMP up)."""
    from .. import _engine
    return bool(_engine.build_info().get("mpi"))


def refuse_mpiexec_without_mpi() -> None:
    """Under mpiexec with several ranks, an engine without MPI is refused on every rank, before
    anything is read or built: ConfigError (the command line prints it once, from rank 0)."""
    if launched_with_mpi() and not engine_built_with_mpi():
        raise ConfigError(NO_MPI_BUILD)


def _engine_loaded_mpi() -> bool:
    try:
        return engine_built_with_mpi()
    except ImportError:             # no engine (a failure report on the way out): mpi4py alone
        return False


def import_mpi():
    """mpi4py.MPI, bound to the libmpi the engine loaded. The engine found libmpi.so.12 through
    LD_LIBRARY_PATH first, then its RUNPATH (this environment's mpich wheel); mpi4py would look in
    the global namespace, then load this environment's libmpi by its full path, which ignores
    LD_LIBRARY_PATH: with the engine's copy made global first, there is one libmpi in the process,
    the one LD_LIBRARY_PATH chose (docs/mpi.md, "A cluster's own MPI")."""
    first = "mpi4py.MPI" not in sys.modules and os.name == "posix" and _engine_loaded_mpi()
    if first:
        import mpi4py
        mpi4py.rc.finalize = False       # MPI ends with the process instead (_end_mpi_with_the_process)
        import ctypes
        # MPICH's ABI (the wheel, Intel MPI, Cray MPICH, MVAPICH), then Open MPI's
        sonames = (("libmpi.12.dylib", "libmpi.40.dylib") if sys.platform == "darwin"
                   else ("libmpi.so.12", "libmpi.so.40"))
        for soname in sonames:
            try:
                ctypes.CDLL(soname, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)   # loads nothing new
                break
            except OSError:
                pass        # not the one the engine loaded
    from mpi4py import MPI
    if first:
        _end_mpi_with_the_process(MPI)
    return MPI


def _end_mpi_with_the_process(MPI) -> None:
    """MPI_Finalize moves from mpi4py's exit hook to the engine's, which knows the exit status
    (cpp/comm/communicator.hpp, finalize_mpi_at_exit): a rank that ends alone with a status other
    than 0 (sys.exit(3)) then stops the job instead of waiting in MPI_Finalize for the others.
    The hook is registered after MPI_Init (the import of mpi4py.MPI): exit hooks run in the
    reverse order of their registration, so it runs before whatever MPI_Init registered.
    Registered before MPI_Init, 3 of 15 normal ends of a 3-rank job were killed by the launcher
    (SIGKILL, no line); registered after, none of 45.
    Where the engine has no such hook, MPI_Finalize at Python's exit, as mpi4py does."""
    from .. import _engine
    if not _engine.finalize_mpi_at_exit():
        import atexit
        atexit.register(lambda: MPI.Is_finalized() or MPI.Finalize())


def agree_on_exit() -> None:
    """The process's exit status is one every rank chose (the command line's status, decided on
    every rank alike): MPI ends normally whatever it is. Without MPI, nothing."""
    if sys.modules.get("mpi4py.MPI") is not None:
        try:
            from .. import _engine
            _engine.set_exit_agreed(True)
        except (ImportError, AttributeError):
            pass


def make_comm(comm=None):
    """The communicator to use: the one given, MPI.COMM_WORLD under mpiexec, else serial."""
    if isinstance(comm, (SerialComm, MPIComm)):     # already made (the command line makes it first)
        return comm
    if comm is None and not launched_with_mpi():
        return SerialComm()
    if not engine_built_with_mpi():
        raise ConfigError(NO_MPI_BUILD)
    try:
        MPI = import_mpi()
    except ImportError:
        raise ConfigError("this run was started under mpiexec (or given a communicator) but mpi4py is "
                          "not installed; install it with: pip install mpi4py") from None
    if comm is None:
        comm = MPI.COMM_WORLD
    return MPIComm(comm)


def mpi_library_version() -> str | None:
    """The first line of the MPI library's version string."""
    full = mpi_library_version_full()
    return full.splitlines()[0].strip() if full is not None else None


def abort_world(code: int = 1) -> None:
    """Ends every rank of the job after a failure on this one (under mpiexec); does nothing in a
    single process. Not collective: the other ranks may be waiting anywhere."""
    if launched_with_mpi():
        MPI = import_mpi()
        MPI.COMM_WORLD.Abort(code)


# -- one rank's failure ends every rank ------------------------------------------------------
def describe_failure(exc: BaseException) -> str:
    """One line for an exception: 'interrupted' for Ctrl-C, 'terminated (SIGTERM)', else its type
    and message."""
    if isinstance(exc, Terminated):
        return "terminated (SIGTERM)"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    from ..io.output import OutputError
    if isinstance(exc, OutputError):             # its message is the whole line (a full disk)
        return " ".join(str(exc).split())
    name = type(exc).__name__
    try:
        text = " ".join(str(exc).split())        # one line, whatever the message holds
    except Exception:                            # a broken __str__ must not hide the failure
        text = ""
    if not text and isinstance(exc, MemoryError):
        text = "out of memory"
    return f"{name}: {text}" if text else name


def exit_code(exc: BaseException) -> int:
    """The job's exit status after exc: 130 for an interrupt, 143 after SIGTERM (as a shell reports
    SIGINT and SIGTERM), else 1."""
    if isinstance(exc, Terminated):
        return EXIT_TERMINATED
    return EXIT_INTERRUPTED if isinstance(exc, KeyboardInterrupt) else 1


def world_rank_size() -> tuple[int, int]:
    """(rank, size) in MPI.COMM_WORLD once MPI runs, else as the launcher announced them."""
    MPI = sys.modules.get("mpi4py.MPI")
    try:
        if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
            return MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    except Exception:
        pass
    return launcher_rank(), launcher_size()


def stop_every_rank(exc: BaseException) -> None:
    """After exc on this rank alone: one line naming the rank on stderr, then MPI_Abort on
    COMM_WORLD (status 130 for an interrupt, 1 otherwise), which ends every rank of the job.
    Not collective: the other ranks may be computing or waiting anywhere. Starts MPI first when
    the failure came before it (the others wait in MPI_Init for this rank). Returns only where
    there is no MPI job to stop (one process, or no mpi4py)."""
    _stop_every_rank(describe_failure(exc), exit_code(exc))


def _stop_every_rank(what: str, status: int) -> None:
    rank, size = world_rank_size()
    if _death_watch is not None:        # this rank's end is reported here: the watch says nothing
        _death_watch.failing()
    try:       # one write, newlines included: the launcher interleaves the ranks' writes, and
        # another rank's line (or rank 0's progress bar) may have stopped mid-line
        sys.stderr.write(f"\nranvier: error: rank {rank} of {size}: {what}; stopping every rank\n")
        sys.stderr.flush()
    except Exception:                            # stderr gone: stopping the job matters more
        pass
    if size <= 1:
        return
    try:
        MPI = import_mpi()
    except ImportError:
        return
    # The launcher forwards a rank's stderr through its proxies, and an abort kills them: give the
    # line (and a traceback printed just before) a moment to get out.
    time.sleep(ABORT_GRACE_S)
    MPI.COMM_WORLD.Abort(status)


def install_crash_report(rank: int, size: int) -> bool:
    """The engine's one-line crash report (see the module's doc), naming the rank when there are
    several. False where there is no engine to install it."""
    try:
        from .. import _engine
    except ImportError:
        return False
    if size > 1:
        _engine.install_crash_report(f"ranvier: error: rank {rank} of {size}: ", "; stopping every rank")
    else:
        _engine.install_crash_report("ranvier: error: ", "")
    return True


ABORT_GRACE_S = 0.3
_abort_hook_installed = False
_death_watch = None              # this process's connection to its node's death watch, once


def _watch_deaths(comm, node, nodes: int) -> None:
    """Once per process, on the world's communicator (collective over it): every rank joins its
    node's death watch (ranvier.runtime.deathwatch), so that a rank killed without a word is named."""
    global _death_watch
    from mpi4py import MPI
    if _death_watch is not None or MPI.Comm.Compare(comm, MPI.COMM_WORLD) not in (MPI.IDENT, MPI.CONGRUENT):
        return
    from . import deathwatch
    address = deathwatch.start(comm.Get_size(), node.Get_size(), nodes) if node.Get_rank() == 0 else None
    address = node.bcast(address, root=0)
    _death_watch = deathwatch.connect(address, comm.Get_rank())
    if _death_watch is None:
        return
    try:
        from .. import _engine
        _engine.set_crash_notify_fd(_death_watch.fileno())
    except (ImportError, AttributeError):
        pass


def _report_exit(rank: int, size: int) -> None:
    """The words of the engine's line for a rank that exits alone (finalize_mpi_at_exit)."""
    try:
        from .. import _engine
    except ImportError:
        return
    fd = _death_watch.fileno() if _death_watch is not None else -1
    _engine.set_exit_report(f"ranvier: error: rank {rank} of {size}: ", "; stopping every rank", fd)


def _install_abort_hook() -> None:
    """sys.excepthook, once, chained: an exception no one caught on this rank ends the job."""
    global _abort_hook_installed
    if _abort_hook_installed:
        return
    _abort_hook_installed = True
    previous = sys.excepthook

    def abort_on_uncaught(exc_type, exc, tb):
        try:
            previous(exc_type, exc, tb)          # the traceback, as without MPI
        except BaseException:
            pass
        try:
            sys.stderr.flush()
        except Exception:
            pass
        stop_every_rank(exc if exc is not None else exc_type())

    sys.excepthook = abort_on_uncaught

    # os._exit ends the process at once: no exception, no exit hook, no MPI_Finalize. On this
    # rank (not in a child it forked) a status other than 0 stops the job with its line, as an
    # exception does; 0 is a deliberate end, told to the death watch as one.
    real_exit, rank_pid = os._exit, os.getpid()

    def exit_on_rank(status):
        if os.getpid() == rank_pid:
            if status:
                _stop_every_rank(f"os._exit({status})", status)
            elif _death_watch is not None:
                _death_watch.done()
        real_exit(status)

    os._exit = exit_on_rank
