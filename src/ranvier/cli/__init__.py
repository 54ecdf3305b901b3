"""The `ranvier` command line: the entry point main(), its failure handling, and the table of
commands. Each command is a module of this package (report: ranvier.analysis.report) that registers
its parser (add_parser) and runs (command(args) -> exit status); the argument types and
`Parser` they share are in ranvier.cli.arguments.

    ranvier run [CONFIG.toml] [--neurons N] [--threads K] [--out DIR] ...
    mpiexec -n 4 ranvier run examples/dpsnn.toml --exchange alltoallv
    ranvier info
    ranvier bench exchange dpsnn --ranks 1,2 [--strategies allgather,alltoallv] [--overlap both]
    ranvier bench mpi --ranks 2 [--primitives allgather,alltoallv] [--sizes 1,64,4096]

Bad input exits with status 2 and one line `ranvier: error: ...` on stderr, before
anything is built or written. Under mpiexec only rank 0 prints and writes. A failure, an
interrupt or SIGTERM is one line too (status 1, 130 or 143), and under mpiexec it stops every
rank: see main() and docs/faults.md.
"""
from __future__ import annotations

import os
import sys
import threading

# Light imports only: main() sets up the handling of signals before the commands, and NumPy,
# h5py and the engine with them, are imported (seconds on a loaded machine).
from ..io import config as cfgmod
from . import signals
from .arguments import Parser, UsageError, assignment, name_list, non_negative_float, positive_float, positive_int, positive_int_list, seed
from ..errors import ConfigError, Terminated
from ..runtime.parallel import agree_on_exit

EXIT_BAD_INPUT = 2


def commands() -> dict:
    """The commands, in the order of `ranvier --help`: name -> module with add_parser and command(args)."""
    from ..analysis import report
    from . import bench, energy, info, run
    return {"run": run, "info": info, "report": report, "energy": energy, "bench": bench}


def _launcher_rank() -> int:
    """This process's rank as the MPI launcher announced it (0 outside mpiexec), known before MPI starts."""
    from ..runtime.parallel import launcher_rank
    return launcher_rank()


def make_parser(exchanges, placements) -> Parser:
    parser = Parser(prog="ranvier", allow_abbrev=False,
                    description="Ranvier: fast, decomposition-invariant spiking network simulation.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    table = commands()
    table["run"].add_parser(subparsers, exchanges, placements)
    table["info"].add_parser(subparsers)
    table["report"].add_parser(subparsers)
    table["energy"].add_parser(subparsers)
    table["bench"].add_parser(subparsers, exchanges)
    return parser


# -- entry point ---------------------------------------------------------------------------
def _check_path_flags(args) -> None:
    """Paths checked on every rank before anything is built or written: an empty --out, and the
    files that are read later (--power-trace only after the run, --mpi-fit) but must be readable
    regular files now; a FIFO or a device would block or never end."""
    out = getattr(args, "out", None)
    if out is not None and not out.strip():
        raise UsageError(f"--out must name a folder, got {out!r} (leave the flag out to write no files)")
    if getattr(args, "power_trace", None) is not None:
        cfgmod.check_input_file(args.power_trace, "--power-trace",
                                "; record it with the meter's logger first, or fix the path")
    if getattr(args, "mpi_fit", None) is not None:
        cfgmod.check_input_file(args.mpi_fit, "--mpi-fit", "; write one with 'ranvier bench mpi'")


def _dispatch(argv, rank: int) -> int:
    from ..core.simulation import EXCHANGES, PLACEMENTS
    args = make_parser(EXCHANGES, PLACEMENTS).parse_args(argv)
    if args.command is None:
        raise UsageError("a command is required: 'run', 'bench', 'energy', 'report' or 'info' (see 'ranvier --help')")
    if args.command != "info":          # info is how one sees what the build has
        from ..runtime.parallel import refuse_mpiexec_without_mpi
        refuse_mpiexec_without_mpi()
    _check_path_flags(args)
    return commands()[args.command].command(args)


class _ClosedPipeTolerant:
    """sys.stdout during main(): when the reader of a pipe goes away (`ranvier info | head -n 2`),
    later output goes to /dev/null instead of raising BrokenPipeError, so that the command
    finishes its work (a run still writes its --out folder) and ends quietly. Python ignores
    SIGPIPE, so a closed pipe shows as this error (see the signal module's note on SIGPIPE)."""

    def __init__(self, stream):
        self._stream = stream

    def _to_devnull(self) -> None:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()
            try:
                self._stream.flush()          # what was buffered now goes to /dev/null
            except OSError:
                pass

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _say(line: str) -> None:
    """One line on stderr, even with no memory left for the usual route."""
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:
        try:
            os.write(2, (line + "\n").encode("utf-8", "replace"))
        except OSError:
            pass


def _failed(exc: BaseException) -> int:
    """Ctrl-C or an unexpected exception: one line and the status (see main)."""
    from ..runtime.parallel import describe_failure, exit_code, stop_every_rank, world_rank_size

    _, size = world_rank_size()
    if size > 1:                   # the other ranks must not wait for this one forever
        if _traceback_wanted():
            import traceback
            traceback.print_exception(exc)
        stop_every_rank(exc)       # ends the job (MPI_Abort); returns only without mpi4py
        return exit_code(exc)
    # What the failed call still holds (a MemoryError's partial allocations, in its frames) is
    # released with the traceback before anything is printed.
    exc.__traceback__ = exc.__context__ = exc.__cause__ = None
    if isinstance(exc, KeyboardInterrupt):
        _forget_escaped_interrupt()
    if isinstance(exc, Terminated):
        _say("\nranvier: terminated (SIGTERM)")
    elif isinstance(exc, KeyboardInterrupt):
        _say("\nranvier: interrupted")
    else:
        _say(f"ranvier: error: {describe_failure(exc)}")
    return exit_code(exc)


def _forget_escaped_interrupt() -> None:
    """CPython (3.11) ends the process by SIGINT at exit, whatever status sys.exit gave, once a
    KeyboardInterrupt has escaped code that exec() or eval() ran from a string, even where it was
    caught later: dataclasses and namedtuples define their methods that way when a module is
    imported, so an interrupt during such an import (the command imports as it goes) made the
    status of `python -m ranvier` -2 instead of 130, one run in a few. Running a string resets
    the flag (CPython clears it before each one, for this reason)."""
    exec("")


def _install_crash_report():
    """The engine's one-line crash report (loads the engine); returns what takes it back."""
    undo = []
    if threading.current_thread() is threading.main_thread():
        try:
            from .. import _engine
            from ..runtime.parallel import install_crash_report, launcher_rank, launcher_size
        except ImportError:
            _engine = None
        if _engine is not None and not _engine.crash_report_installed():
            install_crash_report(launcher_rank(), launcher_size())
            undo.append(_engine.uninstall_crash_report)
    return lambda: [u() for u in reversed(undo)]


def _traceback_wanted() -> bool:
    return os.environ.get("RANVIER_TRACEBACK", "").strip() not in ("", "0")


def main(argv=None) -> int:
    """The `ranvier` command; returns its exit status.

    - Bad input (UsageError, ConfigError, raised on every rank before anything is built):
      one line `ranvier: error: ...` (from rank 0 under mpiexec), status 2.
    - Ctrl-C: `ranvier: interrupted`, status 130; SIGTERM: `ranvier: terminated (SIGTERM)`,
      status 143. Either way the output folder being written is removed (an earlier one stays)
      and complete checkpoints are kept.
    - A crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): `ranvier: error: crashed (SIGSEGV, ...)`
      from the engine's signal handler, then the signal ends the process.
    - Any other failure (RuntimeError, MemoryError, OSError, ...): one line
      `ranvier: error: TYPE: message`, status 1, no traceback.
    - Under mpiexec with several ranks, an interrupt or a failure on one rank prints one line
      naming that rank, `ranvier: error: rank 2 of 4: interrupted; stopping every rank`, and
      ends every rank with MPI_Abort (status 130 after an interrupt, 143 after SIGTERM, 1
      otherwise): no rank is left waiting for it.
    - Output cut short by a closed pipe (`ranvier info | head -n 2`) is normal use: the rest
      of the output is dropped, the command still finishes, nothing is printed on stderr.

    Environment: RANVIER_TRACEBACK=1 shows the Python traceback of an unexpected failure, for
    debugging: in one process the exception is re-raised; with several ranks the traceback is
    printed before the one line and the abort.
    """
    restore_handlers = signals.install()         # first: an interrupt from here on is the run's
    rank = _launcher_rank()
    stdout = sys.stdout
    if stdout is not None and not isinstance(stdout, _ClosedPipeTolerant):
        sys.stdout = _ClosedPipeTolerant(stdout)
    undo_crash_report = None
    try:
        undo_crash_report = _install_crash_report()
        status = _dispatch(argv, rank)
        agree_on_exit()           # each rank's status is the command's own: MPI ends normally
        return status
    except (UsageError, ConfigError) as e:
        if rank == 0:
            message = " ".join(str(e).split())       # one line, whatever the message holds
            _say(f"ranvier: error: {message}")
        agree_on_exit()           # refused on every rank alike, before anything was built
        return EXIT_BAD_INPUT
    except (Exception, KeyboardInterrupt) as e:
        if _traceback_wanted() and _single_process():
            raise
        if signals.sigterm_received() and not isinstance(e, Terminated):
            e = Terminated()                   # what a library made of the one _on_sigterm raised
        return _failed(e)
    finally:
        if undo_crash_report is not None:
            undo_crash_report()
        restore_handlers()
        if isinstance(sys.stdout, _ClosedPipeTolerant):
            sys.stdout.flush()                       # a pipe closed early shows here, not at exit
            if sys.stdout._stream is stdout:
                sys.stdout = stdout


def _single_process() -> bool:
    from ..runtime.parallel import world_rank_size
    return world_rank_size()[1] <= 1


if __name__ == "__main__":
    sys.exit(main())
