"""The result folder of a run: config.toml, summary.json, environment.json, spikes.h5 (SONATA),
timers.h5, and the marker .ranvier-result.

Rules that keep users' files safe:
- Ranvier deletes only what it wrote. A folder it wrote holds the marker file; --force replaces
  such a folder and nothing else. '.', '..', the home folder, '/' and any folder that holds the
  current one are refused outright.
- A destination is claimed before the build with a lock (flock on a sibling lock file), so a
  second run writing the same folder is refused at once, in one line.
- Everything is written into a hidden sibling folder (spikes and timers streamed there during
  the run) that becomes the result folder by one rename at the end. A crash, an interrupt or
  a full disk leaves the earlier folder as it was and no half-written one.
- --force puts the new folder in place of the earlier one without a moment where neither is
  there (leftovers.replace_folder: one atomic exchange where the file system offers it).
- A process killed outright runs none of this: a watcher process started with the claim
  removes the staging folder when the run's process is gone, and puts back an earlier result
  caught mid-replacement (leftovers.Watcher); the next claim clears whatever is still left.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import shutil
import signal
import socket
import tempfile
import threading
from pathlib import Path

import numpy as np

from . import leftovers
from ..errors import ConfigError
from .leftovers import STAGING_SUFFIX      # hidden sibling folders being written

MARKER = ".ranvier-result"           # in every folder Ranvier wrote: what --force may replace


class OutputError(Exception):
    """The results could not be written (a full disk, a quota, permissions): one line for the user."""


# -- the target folder ---------------------------------------------------------------------
def is_result_folder(path) -> bool:
    return (Path(path) / MARKER).is_file()


def check_target(path, force: bool = False) -> Path:
    """The output folder, refused (before anything is built) where writing it could lose a user's files."""
    if path is None or not str(path).strip():
        raise ConfigError("--out is empty; give the folder to write the results to, e.g. --out results/run1")
    path = Path(path)
    absolute = Path(os.path.abspath(path))
    cwd = Path(os.getcwd())
    home = Path.home()
    if absolute == Path(absolute.anchor) or absolute == home or absolute == cwd or absolute in cwd.parents:
        what = ("the root folder" if absolute == Path(absolute.anchor) else "your home folder" if absolute == home
                else "the current folder" if absolute == cwd else "a folder that holds the current one")
        raise ConfigError(f"--out '{path}' is {what}; results go into a folder of their own: choose a new name "
                          f"such as --out results/run1")
    parent = _existing_ancestor(absolute.parent)
    if not parent.is_dir():
        raise ConfigError(f"--out '{path}': '{parent}' is a file, not a folder; choose another path")
    _check_name_lengths(path, absolute, parent)
    if path.is_symlink():
        raise ConfigError(f"--out '{path}' is a symbolic link; give the real folder or a new name")
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out '{path}' exists and is not a folder; choose another path")
    if path.is_dir() and any(path.iterdir()):
        if not force:
            raise ConfigError(f"--out '{path}' exists and is not empty; choose a new folder, or add --force to "
                              f"replace it if it holds an earlier ranvier result")
        if not is_result_folder(path):
            raise ConfigError(f"--out '{path}' holds files that ranvier did not write (no {MARKER} marker); "
                              f"--force replaces only earlier ranvier results: choose another folder")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"--out '{path}': the folder '{parent}' is not writable; choose another path")
    return path


# The longest addition to the folder's name: its hidden sibling `.NAME.replaced.XXXXXXXX.ranvier-tmp`.
NAME_EXTRA = len(".") + len(".replaced.") + 8 + len(STAGING_SUFFIX)


def _check_name_lengths(path, absolute: Path, parent: Path) -> None:
    """The folder's name, with the hidden siblings' additions, and every folder still to be made
    must fit the file system's limits: refused now, not as an OSError at the end of the run."""
    try:
        name_max, path_max = os.pathconf(parent, "PC_NAME_MAX"), os.pathconf(parent, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    made = absolute.relative_to(parent).parts           # the names ranvier will create
    for name in made:
        extra = NAME_EXTRA if name == made[-1] else 0
        if len(os.fsencode(name)) + extra > name_max:
            raise ConfigError(f"--out '{path}': the name '{name[:40]}...' has {len(os.fsencode(name))} bytes; "
                              f"this file system allows {name_max - extra} for it (ranvier adds up to "
                              f"{NAME_EXTRA} for its hidden work folders); choose a shorter name")
    if len(os.fsencode(str(absolute))) + NAME_EXTRA >= path_max:
        raise ConfigError(f"--out '{path}': the path is longer than this file system allows "
                          f"({path_max} bytes); choose a shorter one")


def _existing_ancestor(path: Path) -> Path:
    while not os.path.exists(path):         # False, not an error, for a name too long or under a file
        path = path.parent
    return path


class OutputFolder:
    """A claimed destination: locked against other runs, with a hidden staging folder beside it.

        out = OutputFolder(path, force)     # checks and claims (rank 0, before the build)
        ... stream spikes and timers into out.staging during the run ...
        out.publish(config, summary, environment)   # or out.abandon()
    """

    def __init__(self, path, force: bool = False):
        self.shown = check_target(path, force)      # as the user wrote it, for messages
        self.force = force
        self.path = absolute = Path(os.path.abspath(self.shown))
        self.parent = absolute.parent
        self._made_parents = []
        missing = []
        p = self.parent
        while not p.exists():
            missing.append(p)
            p = p.parent
        try:
            for p in reversed(missing):             # missing parents are created, as users expect
                p.mkdir()
                self._made_parents.append(p)
        except OSError as e:
            self._remove_parents()
            raise ConfigError(f"--out '{path}': cannot create the folder '{p}': {e.strerror}") from None
        self._lock_file = None
        self._watcher = None
        self.staging = None
        try:
            self._lock()
            self._remove_stale_staging()
            check_target(self.shown, force)         # again, under the lock: a folder put back counts
            self.staging = Path(tempfile.mkdtemp(prefix=f".{absolute.name}.", suffix=STAGING_SUFFIX, dir=self.parent))
            self._watcher = leftovers.Watcher(self.staging, self.lock_path, self.checkpoints, self._made_parents)
        except BaseException as e:
            if self.staging is not None:
                shutil.rmtree(self.staging, ignore_errors=True)
                self.staging = None
            self._release()
            self._remove_parents()
            if isinstance(e, OSError):      # /proc, /sys, a read-only mount: os.access said writable
                raise ConfigError(f"--out '{path}': cannot write in '{self.parent}' ({e.strerror or e}); choose a "
                                  f"folder on a writable disk") from None
            raise

    # -- claiming ---------------------------------------------------------------------
    @property
    def lock_path(self) -> Path:
        return self.parent / f".{self.path.name}.ranvier-lock"

    @property
    def checkpoints(self) -> Path:
        """Where `ranvier run --checkpoint-every` writes checkpoints while the run goes: DIR.checkpoints."""
        return Path(str(self.path) + ".checkpoints")

    @property
    def watcher_pid(self) -> int | None:
        return self._watcher.pid if self._watcher is not None else None

    def _lock(self) -> None:
        """An exclusive flock on a sibling lock file: released by the kernel if the process dies."""
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                try:
                    holder = os.read(fd, 200).decode(errors="replace").strip() or "unknown"
                finally:
                    os.close(fd)
                raise ConfigError(f"--out '{self.shown}' is being written by another ranvier run ({holder}); "
                                  f"choose another folder or wait for that run to finish") from None
            # the file may have been unlinked by its previous holder between open and flock
            try:
                same = os.stat(self.lock_path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        self._lock_file = fd

    def _remove_stale_staging(self) -> None:
        """What a killed run left for this destination (we hold the lock: nobody writes it): an
        earlier result caught mid-replacement goes back, staging folders and half-written
        checkpoints go."""
        leftovers.recover(self.parent, self.path.name)
        leftovers.recover_checkpoints(self.checkpoints)

    def _release(self) -> None:
        if self._watcher is not None:             # ended as it should: the watcher has nothing to do
            self._watcher.dismiss()
            self._watcher = None
        if self._lock_file is not None:
            try:
                os.unlink(self.lock_path)
            except OSError:
                pass
            os.close(self._lock_file)
            self._lock_file = None

    def _remove_parents(self) -> None:
        for p in reversed(self._made_parents):
            try:
                p.rmdir()
            except OSError:
                break
        self._made_parents = []

    # -- checks ---------------------------------------------------------------------
    def check_space(self, needed_bytes: int, what: str) -> None:
        """Refuses up front a run whose output cannot fit on the disk."""
        free = shutil.disk_usage(self.parent).free
        if needed_bytes > free:
            raise ConfigError(f"--out '{self.shown}': {what} need {_bytes(needed_bytes)}, but {describe_disk(self.parent)} "
                              f"has {_bytes(free)} free; free some space, choose another disk, or shorten the run")

    # -- finishing --------------------------------------------------------------------
    def publish(self, config: dict, summary: dict, environment: dict | None = None) -> Path:
        """Writes the small files and the marker into the staging folder, then renames it into place."""
        from ..version import ranvier_version
        tmp = self.staging
        try:
            (tmp / "config.toml").write_text(dumps_toml(config))
            write_summary(tmp / "summary.json", summary)
            if environment is not None:
                write_summary(tmp / "environment.json", environment)
            (tmp / MARKER).write_text(json.dumps({"written_by": "ranvier", "version": ranvier_version()}) + "\n")
            _sync(tmp)
            os.chmod(tmp, 0o755)                  # mkdtemp makes it private
        except OSError as e:
            needed = sum(f.stat().st_size for f in tmp.iterdir() if f.is_file())
            self.abandon()
            raise OutputError(write_failure(self.shown, e, needed)) from None
        with interrupts_held():           # the new folder takes the old one's place whole
            self._replace_destination()
            self._release()
        return self.shown

    def _replace_destination(self) -> None:
        if self.path.exists():
            # Checked again: the destination may have changed since the claim.
            if any(self.path.iterdir()) and not (self.force and is_result_folder(self.path)):
                kept, self.staging = self.staging, None      # kept: abandon() must not remove it
                self._release()
                raise OutputError(f"'{self.shown}' was filled by something else during the run and was left as it "
                                  f"is; the results are in '{kept}'")
        # No moment without a result folder: one exchange of names, or the earlier folder held
        # aside where recover() puts it back (leftovers.replace_folder).
        leftovers.replace_folder(self.staging, self.path)
        self.staging = None
        sync_folder(self.parent)

    def abandon(self) -> None:
        """Removes the staging folder and whatever it holds; the destination stays as it was."""
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
        self._release()
        self._remove_parents()


@contextlib.contextmanager
def interrupts_held():
    """SIGINT and SIGTERM wait until the block is done, then act as they would have (the run
    then ends as interrupted, status 130 or 143, with the block complete). Only in the main
    thread, where Python runs signal handlers; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = []
    previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        for sig in held[:1]:
            signal.raise_signal(sig)      # to the handler that was there before


def _sync(folder: Path) -> None:
    """Flushes the files and the folder to the disk, so a crash after the rename finds them whole."""
    for f in folder.iterdir():
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def sync_folder(folder: Path) -> None:
    """Flushes a folder's entries (a rename in it) to the disk."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


def describe_disk(path) -> str:
    """'the disk mounted at /data (ext4, /dev/sdb1)' for the file system holding path."""
    path = Path(os.path.abspath(path))
    mount = path
    while not os.path.ismount(mount):
        mount = mount.parent
    kind = device = None
    try:
        with open("/proc/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and fields[1] == str(mount):
                    device, kind = fields[0], fields[2]
    except OSError:
        pass
    detail = f" ({kind}, {device})" if kind else ""
    return f"the disk mounted at {mount}{detail}"


def write_failure(path, error: OSError, needed_bytes: int) -> str:
    """One line: why the results could not be written, and what they need."""
    full = error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) or "No space left" in str(error)
    parent = _existing_ancestor(Path(os.path.abspath(path)).parent)
    free = shutil.disk_usage(parent).free
    if full:
        why = (f"{describe_disk(parent)} is full ({_bytes(free)} free; the results need about "
               f"{_bytes(needed_bytes)})")
    else:
        why = f"{error.strerror or error}"
    return (f"could not write the results to '{path}': {why}; nothing was written there and any earlier "
            f"folder is unchanged")


def write_checkpoint_failure(path, time_ms: float, error: OSError) -> str:
    """One line: a checkpoint that could not be written (the earlier ones are intact: each is
    written whole into a hidden folder, then renamed)."""
    full = error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) or "No space left" in str(error)
    folder = _existing_ancestor(Path(os.path.abspath(path)).parent)
    why = (f"{describe_disk(folder)} is full ({_bytes(shutil.disk_usage(folder).free)} free)" if full
           else f"{error.strerror or error}")
    return (f"could not write the checkpoint at t = {time_ms / 1000:g} s to '{Path(path).parent}': {why}; the run "
            f"stopped, its earlier checkpoints are intact (resume with --resume once there is room)")


# -- the files -----------------------------------------------------------------------------
def _json_default(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"{type(x).__name__} is not JSON serialisable")


def write_summary(path, summary: dict) -> None:
    with open(path, "w") as f:
        json.dump(summary, f, indent=2, default=_json_default)
        f.write("\n")


# -- TOML (flat: top-level scalars, then tables of scalars) --------------------------------
def toml_value(value) -> str:
    """A scalar, or a list of scalars, as TOML writes it, so that TOML reads it back as the same
    type and value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)            # always has '.' or 'e', so it reads back as a float
    if isinstance(value, str):
        return json.dumps(value)      # JSON string escapes are valid TOML basic-string escapes
    if isinstance(value, (list, tuple)) and not any(isinstance(v, (list, tuple, dict)) for v in value):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"    # a list of scalars (neuron ids)
    raise TypeError(f"cannot write {value!r} to TOML")


def dumps_toml(data: dict) -> str:
    lines = [f"{key} = {toml_value(v)}" for key, v in data.items() if not isinstance(v, dict)]
    for table, entries in data.items():
        if isinstance(entries, dict):
            lines += ["", f"[{table}]"]
            # TOML has no null: an unset optional parameter is named in a comment, so that the
            # file still lists every parameter; reading it back leaves it unset again
            lines += [f"{key} = {toml_value(v)}" if v is not None else f"# {key} = (not set)"
                      for key, v in entries.items()]
    return "\n".join(lines) + "\n"
