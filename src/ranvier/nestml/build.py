"""Compiling a generated model with the compiler and options that built the engine
(ranvier/build_config.json), into the user's cache folder, and loading it into the engine.

The cache: ~/.cache/ranvier/nestml/<key>/ ($XDG_CACHE_HOME, or $RANVIER_CACHE_DIR in place of
~/.cache/ranvier), key = SHA-256 of the generated source, Ranvier's version, the model
interface's digest (headers and compiler, cpp/neurons/model_abi.hpp), the compiler's path and
its --version, the options, and the CPU's features where the options hold -march=native. Each folder holds model.cpp, model.so and build.log. A folder
that holds model.so is reused; one process compiles at a time (a file lock, shared by the ranks
of an MPI job on one file system: the first takes it and compiles, the others wait and load).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from ..errors import ConfigError


def _package_dir() -> Path:
    from .. import _engine
    return Path(_engine.__file__).resolve().parent


def build_config() -> dict:
    """The compiler, options and model-interface digest recorded when the engine was built."""
    path = _package_dir() / "build_config.json"
    if not path.is_file():
        raise ConfigError(f"{path} is missing: this Ranvier was built without the files that compile NESTML "
                          f"models; reinstall it (pip install ranvier[nestml])")
    return json.loads(path.read_text())


def include_dir() -> Path:
    return _package_dir() / "include"


def cache_root() -> Path:
    if os.environ.get("RANVIER_CACHE_DIR"):
        return Path(os.environ["RANVIER_CACHE_DIR"]) / "nestml"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ranvier" / "nestml"


def compiler() -> str:
    """The compiler to use: $RANVIER_CXX, else the one that built the engine."""
    cfg = build_config()
    cxx = os.environ.get("RANVIER_CXX") or cfg["compiler"]
    found = shutil.which(cxx)
    if not found:
        raise ConfigError(f"the C++ compiler '{cxx}' that built Ranvier ({cfg['compiler_id']}) is not found: "
                          f"install it, or name a compatible one with RANVIER_CXX=/path/to/g++")
    return found


def _compiler_version(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise ConfigError(f"the C++ compiler '{cxx}' cannot run ({e}); install one, or set RANVIER_CXX") from None
    return out.stdout.splitlines()[0] if out.stdout else ""


def _cpu() -> str:
    """The CPU's features, where the engine was built for its build machine's CPU (-march=native):
    nodes with other CPUs compile their own copy."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return line
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def cache_key(source: str, cxx: str) -> str:
    from .. import _engine
    from ..version import ranvier_version
    cfg = build_config()
    h = hashlib.sha256()
    for part in (source, ranvier_version(), _engine.neuron_model_abi(), cxx, _compiler_version(cxx),
                 " ".join(cfg["flags"] + cfg["link_flags"]), _cpu() if cfg.get("native") else ""):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def compiled(source: str, name: str) -> tuple[Path, dict]:
    """The shared object of a generated model's source: from the cache, or compiled into it.
    Returns (path, facts: {"cached": bool, "seconds": compile time, "folder": ...})."""
    from .. import _engine
    cfg = build_config()
    if cfg.get("model_abi") != _engine.neuron_model_abi():
        raise ConfigError(f"{_package_dir()}: build_config.json ({cfg.get('model_abi')}) and the engine "
                          f"({_engine.neuron_model_abi()}) disagree on the model interface; reinstall Ranvier")
    cxx = compiler()
    folder = cache_root() / cache_key(source, cxx)
    so = folder / "model.so"
    if so.is_file():
        return so, {"cached": True, "seconds": 0.0, "folder": str(folder)}
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)      # one compiler per folder; the others wait here
        try:
            if so.is_file():                   # compiled by another process meanwhile
                return so, {"cached": True, "seconds": 0.0, "folder": str(folder)}
            (folder / "model.cpp").write_text(source)
            tmp = folder / f"model.so.{os.getpid()}.tmp"
            cmd = [cxx, *cfg["flags"], f"-I{include_dir()}", str(folder / "model.cpp"), "-o", str(tmp),
                   *cfg["link_flags"]]
            run = subprocess.run(cmd, capture_output=True, text=True)
            (folder / "build.log").write_text(" ".join(cmd) + "\n" + run.stdout + run.stderr)
            if run.returncode != 0:
                first = next((line for line in run.stderr.splitlines() if "error" in line), run.stderr.strip()[:300])
                raise ConfigError(f"compiling the NESTML model '{name}' failed ({first.strip()}); the command and "
                                  f"its output: {folder / 'build.log'}")
            os.replace(tmp, so)                # atomic: a reader sees the whole file or none
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return so, {"cached": False, "seconds": time.perf_counter() - start, "folder": str(folder)}


def load(path: Path) -> str:
    """Loads a compiled model into the engine's registry; returns its engine name."""
    from .. import _engine
    try:
        return _engine.load_neuron_model(str(path))
    except RuntimeError as e:
        raise ConfigError(str(e)) from None


def load_rule(path: Path) -> str:
    """Loads a compiled synapse rule into the engine's registry; returns its engine name."""
    from .. import _engine
    try:
        return _engine.load_synapse_rule(str(path))
    except RuntimeError as e:
        raise ConfigError(str(e)) from None
