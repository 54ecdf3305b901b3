"""How the `ranvier` command takes SIGINT and SIGTERM: KeyboardInterrupt and Terminated, raised
in whatever Python code runs when the signal comes, and remembered.

Remembered because Python drops an exception raised where it cannot propagate: a weakref
callback or a __del__ (importlib's module locks have one, so any import can be hit) prints
"Exception ignored in ..." and carries on. An interrupt that landed there was lost and a
600 s run went on to its end with status 0. The command asks `raise_if_lost()` where it can
stop cleanly (after the build, after each chunk, before publishing its results), which raises
the interrupt again.

Process state by nature, as a signal handler is; `install()` at the start of each main()
clears it.
"""
from __future__ import annotations

import signal
import threading

from ..errors import Terminated

_received = {"interrupt": False, "sigterm": False}


def _on_sigint(signum, frame):
    _received["interrupt"] = True
    raise KeyboardInterrupt()


def _on_sigterm(signum, frame):
    """SIGTERM (a batch system's wall-time limit, `kill`): stop as after Ctrl-C. A second SIGTERM
    ends the process at once (the watcher of the output folder clears what is left)."""
    _received["sigterm"] = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated()


def sigterm_received() -> bool:
    """Whether SIGTERM came during this main(): the Terminated that _on_sigterm raises can come out
    of a library as another error (numpy's sort of a structured array, in np.unique(axis=0), turns
    it into "TypeError: Cannot compare structured arrays ..."), and the job must still end as
    terminated."""
    return _received["sigterm"]


def raise_if_lost() -> None:
    """Raise again an interrupt or SIGTERM that came during this main() (once raised, it either
    ended the command or was dropped by Python, see above)."""
    if _received["sigterm"]:
        raise Terminated()
    if _received["interrupt"]:
        raise KeyboardInterrupt()


def checked(progress):
    """progress(done_ms, total_ms, wall_s) for Simulation.run that first raises a lost interrupt;
    `progress` may be None (a quiet run still stops)."""
    def call(done_ms, total_ms, wall_s):
        raise_if_lost()
        if progress is not None:
            progress(done_ms, total_ms, wall_s)
    return call


def install():
    """SIGINT raises KeyboardInterrupt and SIGTERM Terminated, from now to the returned undo (main()
    may run inside another program: tests).

    SIGINT is taken even where the process inherited it ignored: a shell starts a background
    job (`ranvier run ... &` in a script, a test runner started with &) with SIGINT ignored, and
    Python keeps that, so `kill -INT` and a launcher's forwarded Ctrl-C were lost and the run
    went on to its end. A handler of the program that runs main() (not Python's default) is
    left as it is."""
    _received.update(interrupt=False, sigterm=False)
    undo = []
    if threading.current_thread() is threading.main_thread():
        for sig, handler, default in ((signal.SIGINT, _on_sigint, signal.default_int_handler),
                                      (signal.SIGTERM, _on_sigterm, None)):
            found = signal.getsignal(sig)
            if found in (signal.SIG_IGN, signal.SIG_DFL, None, default, handler):
                signal.signal(sig, handler)
                undo.append(lambda sig=sig, found=found: signal.signal(sig, signal.SIG_DFL if found is None else found))
    return lambda: [u() for u in reversed(undo)]
