"""The result folder of a run: config.toml, summary.json, environment.json, spikes.h5 (SONATA),
timers.h5.

Files are written into a temporary sibling folder that is renamed at the end, so a
crash or an interruption never leaves a half-written result folder behind.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .errors import ConfigError

SONATA_SORTING = {"none": 0, "by_id": 1, "by_time": 2}


# -- the target folder ---------------------------------------------------------------------
def check_target(path, force: bool = False) -> Path:
    """The output folder, refused (before anything is built) if it holds files and force is off."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out '{path}' exists and is not a folder; choose another path")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise ConfigError(f"--out '{path}' exists and is not empty; choose a new folder or add --force to replace it")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise ConfigError(f"--out '{path}': the parent folder '{parent}' does not exist; create it first")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"--out '{path}': the parent folder '{parent}' is not writable; choose another path")
    return path


def write_result(path, config: dict, result, summary: dict, environment: dict | None = None) -> Path:
    """Writes every file of the result folder at path (rank 0 only), atomically."""
    path = Path(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.absolute().parent))
    try:
        (tmp / "config.toml").write_text(dumps_toml(config))
        write_summary(tmp / "summary.json", summary)
        if environment is not None:
            write_summary(tmp / "environment.json", environment)
        write_spikes(tmp / "spikes.h5", result)
        write_timers(tmp / "timers.h5", result)
        os.chmod(tmp, 0o755)          # mkdtemp makes it private
        if path.exists():             # empty, or --force
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


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


def write_spikes(path, result) -> None:
    """SONATA spike file: /spikes/<population>/{node_ids, timestamps}, sorted by time."""
    import h5py

    ids, times = result.spikes
    sorting = h5py.enum_dtype(SONATA_SORTING, basetype="i1")
    with h5py.File(path, "w") as f:
        spikes = f.create_group("spikes")
        spikes.attrs["sorting"] = "by_time"
        for name, first, size in zip(result.population_names, result.population_first_ids,
                                     result.population_sizes):
            mine = (ids >= first) & (ids < first + size)
            group = spikes.create_group(name)
            # SONATA (and libsonata) read the population's sorting as an HDF5 enum
            group.attrs.create("sorting", SONATA_SORTING["by_time"], dtype=sorting)
            group.create_dataset("node_ids", data=(ids[mine] - first).astype(np.uint64))
            stamps = group.create_dataset("timestamps", data=times[mine].astype(np.float64))
            stamps.attrs["units"] = "ms"


def write_timers(path, result) -> None:
    """cycle_seconds[rank, cycle, phase]: wall seconds per phase of every cycle on every rank."""
    import h5py

    from .simulation import PHASES

    with h5py.File(path, "w") as f:
        ds = f.create_dataset("cycle_seconds", data=np.asarray(result.cycle_timers, dtype=np.float64))
        ds.attrs["phases"] = np.array(list(PHASES), dtype=h5py.string_dtype())
        ds.attrs["cycle_ms"] = result.steps_per_cycle * result.resolution_ms


# -- TOML (flat: top-level scalars, then tables of scalars) --------------------------------
def toml_value(value) -> str:
    """A scalar as TOML writes it, so that TOML reads it back as the same type and value."""
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
    raise TypeError(f"cannot write {value!r} to TOML")


def dumps_toml(data: dict) -> str:
    lines = [f"{key} = {toml_value(v)}" for key, v in data.items() if not isinstance(v, dict)]
    for table, entries in data.items():
        if isinstance(entries, dict):
            lines += ["", f"[{table}]"]
            lines += [f"{key} = {toml_value(v)}" for key, v in entries.items() if v is not None]
    return "\n".join(lines) + "\n"
