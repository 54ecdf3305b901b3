"""What a run leaves behind when its process dies, and how it is cleared (docs/faults.md).

A run writes its results into a hidden staging folder beside --out DIR and publishes them by
one rename; checkpoints go to DIR.checkpoints the same way. A process killed outright (SIGKILL,
the out-of-memory killer, a crash, MPI_Abort of another rank) runs none of its own clean-up, so:

- `Watcher`: rank 0 starts a small process of its own (`python leftovers.py --watch ...`, the
  standard library only, in a session of its own with no terminal, its output to /dev/null)
  that holds the read end of a pipe. When the run ends normally it writes "done" into the
  pipe. When the pipe closes without "done", the run's process is gone: the watcher removes the
  staging folder, the half-written checkpoint folders, the lock file and the parent folders the
  run made (when empty), and puts back an earlier result that was being replaced.
- `recover`: the next run that claims DIR (under its lock) does the same with whatever is still
  there (a watcher killed too, a machine that went down).

`replace_folder(new, dest)` puts a finished folder in place of an existing one without a
moment where neither is there: one atomic exchange of the two names where the file system
offers it (renameat2 RENAME_EXCHANGE on Linux, renamex_np RENAME_SWAP on macOS); elsewhere the
old one is first renamed into a hidden holder folder beside it, which `recover` restores if the
process died before the new one took its place.

This module imports nothing from ranvier (the watcher runs it as a script).
"""
from __future__ import annotations

import errno
import fcntl
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

STAGING_SUFFIX = ".ranvier-tmp"      # hidden sibling folders being written
HOLDER = "replaced"                  # .NAME.replaced.XXXX.ranvier-tmp/result: an earlier folder being replaced
HELD = "result"
DONE = b"done\n"


# -- putting a folder in place of another ------------------------------------------------------
def _exchange(a: Path, b: Path) -> bool:
    """Swaps the names a and b in one step; False where the system or file system cannot."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if sys.platform.startswith("linux") and hasattr(libc, "renameat2"):
            at_fdcwd, rename_exchange = -100, 2
            done = libc.renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
        elif sys.platform == "darwin" and hasattr(libc, "renamex_np"):
            done = libc.renamex_np(os.fsencode(a), os.fsencode(b), 2)        # RENAME_SWAP
        else:
            return False
    except (OSError, AttributeError):
        return False
    if done == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False                       # not offered here: the two renames below
    raise OSError(err, os.strerror(err), str(a))


def replace_folder(new: Path, dest: Path, holder_prefix: str | None = None) -> None:
    """Puts the folder `new` at `dest`, replacing the folder there, never leaving `dest` missing
    for good: after a crash at any moment either the old or the new folder is at `dest`, or the
    old one is in a holder folder that `recover` puts back. The old folder is then removed."""
    new, dest = Path(new), Path(dest)
    if not dest.exists():
        os.replace(new, dest)
        return
    if _exchange(new, dest):               # now `new` names the old folder
        shutil.rmtree(new, ignore_errors=True)
        return
    prefix = holder_prefix or f".{dest.name}.{HOLDER}."
    holder = Path(tempfile.mkdtemp(prefix=prefix, suffix=STAGING_SUFFIX, dir=dest.parent))
    os.replace(dest, holder / HELD)
    os.replace(new, dest)
    shutil.rmtree(holder, ignore_errors=True)


# -- what a dead run left ---------------------------------------------------------------------
def recover(parent: Path, name: str, keep: tuple = ()) -> None:
    """Clears what dead runs left for the destination parent/name; the caller holds its lock.
    An earlier result caught between two renames goes back to parent/name (or, if a new one took
    its place, is removed); hidden staging folders are removed, except those in `keep`."""
    parent = Path(parent)
    dest = parent / name
    pattern = f".{glob.escape(name)}."
    for holder in sorted(parent.glob(f"{pattern}{HOLDER}.*{STAGING_SUFFIX}")):
        held = holder / HELD
        if held.is_dir() and not held.is_symlink() and not dest.exists() and not dest.is_symlink():
            os.replace(held, dest)         # the earlier result, back where it was
        shutil.rmtree(holder, ignore_errors=True)
    keep = {str(k) for k in keep}
    for stale in parent.glob(f"{pattern}*{STAGING_SUFFIX}"):
        if str(stale) not in keep and stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)


def recover_checkpoints(folder: Path) -> None:
    """Half-written checkpoints and spike segments of a dead run (complete ones stay)."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    for stale in [*folder.glob(f".step-*{STAGING_SUFFIX}"), *folder.glob(f".spikes-*{STAGING_SUFFIX}")]:
        if stale.is_dir() and not stale.is_symlink():
            held = stale / "checkpoint"     # a checkpoint caught while being replaced: put back
            final = folder / stale.name[1:].split(".")[0]
            if ".old." in stale.name and held.is_dir() and not final.exists():
                os.replace(held, final)
            shutil.rmtree(stale, ignore_errors=True)
        else:
            try:
                stale.unlink()
            except OSError:
                pass


def _take_lock(lock_path: Path, wait_s: float = 2.0):
    """The destination's lock (an flock on its lock file) once the dead run's is gone, or None if
    another run holds it. A dead process's files close one after another: its end of the pipe
    may close (waking the watcher) a moment before its lock does, hence the short wait."""
    import time
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(lock_path).st_ino == os.fstat(fd).st_ino:
                return fd
        except OSError:
            pass
        os.close(fd)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def clean_after(staging: Path, lock_path: Path, checkpoints: Path | None, made_parents: list) -> None:
    """What the watcher does once the run's process is gone without saying it was done."""
    staging, lock_path = Path(staging), Path(lock_path)
    if staging.is_dir() and not staging.is_symlink():
        shutil.rmtree(staging, ignore_errors=True)       # its own: nobody else writes it
    fd = _take_lock(lock_path)
    if fd is None:                    # another run holds the destination now: it clears the rest
        return
    try:
        name = lock_path.name[1:-len(".ranvier-lock")]
        recover(lock_path.parent, name)
        if checkpoints is not None:
            recover_checkpoints(checkpoints)
        os.unlink(lock_path)
    except OSError:
        pass
    finally:
        os.close(fd)
    for p in sorted((Path(p) for p in made_parents), key=lambda p: len(p.parts), reverse=True):
        try:
            p.rmdir()                 # only when empty
        except OSError:
            break


class Watcher:
    """The watcher process of a claimed destination (see the module's doc)."""

    def __init__(self, staging: Path, lock_path: Path, checkpoints: Path | None, made_parents: list):
        argv = [sys.executable, "-I", "-S", os.path.abspath(__file__), "--watch", str(staging), str(lock_path),
                str(checkpoints or ""), *map(str, made_parents)]
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, cwd="/", start_new_session=True)
        except OSError:                # no watcher: the next run clears what is left
            self.proc = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def dismiss(self) -> None:
        """The run ended as it should: the watcher leaves everything as it is."""
        if self.proc is None:
            return
        try:
            self.proc.stdin.write(DONE)
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.proc = None


def _watch(argv: list[str]) -> int:
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)       # a terminal's or a batch system's signal is for the run
    staging, lock_path, checkpoints, *made = argv
    said = b""
    while True:
        try:
            chunk = os.read(0, 64)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        said += chunk
    if said.endswith(DONE):
        return 0
    clean_after(Path(staging), Path(lock_path), Path(checkpoints) if checkpoints else None, made)
    return 0


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--watch":
    sys.exit(_watch(sys.argv[2:]))
