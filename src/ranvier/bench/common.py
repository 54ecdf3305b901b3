"""What the benchmarks share besides launching (runner.py): the workload (a model name or a
config file) with its parameter overrides, output folders, name checks, text tables and the
matplotlib handle for plots.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from ..io import config as cfgmod
from ..errors import ConfigError

DEFAULT_DURATION_MS = 1000.0          # per run, when the workload is a model name


def output_folder(out, kind: str, own_file: str) -> Path:
    """--out, or bench-results/<kind>-<timestamp>; refused if it already holds this benchmark's results."""
    path = Path(out) if out else Path("bench-results") / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out '{path}' exists and is not a folder; choose another path")
    if (path / own_file).exists():
        raise ConfigError(f"--out '{path}' already holds {own_file} from an earlier benchmark; choose a new folder")
    return path


def check_names(flag: str, kind: str, names, valid) -> list[str]:
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise ConfigError(f"{flag}: unknown {kind} '{unknown[0]}'; available: {', '.join(valid)}")
    return list(dict.fromkeys(names))        # in the order given, once each


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """Columns of words aligned left, columns of numbers aligned right."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    numeric = [all(r[i][:1].isdigit() or r[i][:1] in "-." or r[i] == "inf" for r in rows)
               for i in range(len(header))]

    def line(cells):
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)).rstrip()
    return "\n".join([line(header), *(line(r) for r in rows)])


def pyplot():
    """matplotlib with the file-only backend, or None when it is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def resolve_workload(workload: str, parameters: dict | None = None) -> cfgmod.RunConfig:
    """A model name or a config file, as `ranvier run` reads it, with parameter overrides on top."""
    from .. import models

    base = cfgmod.from_model_or_file(workload, "WORKLOAD")       # the convention of `ranvier run`
    if workload in models.REGISTRY and not cfgmod.looks_like_path(workload):
        base.simulation["duration_ms"] = DEFAULT_DURATION_MS
    return cfgmod.override(base, parameters=parameters)


def check_parameters(cfg: cfgmod.RunConfig, parameters: dict, reserved: dict | None = None) -> None:
    """--set: known parameter names of the workload's model only, none that the benchmark sets
    itself (reserved: name -> why)."""
    from .. import models

    known = models.defaults(cfg.model)
    for key in parameters:
        if key not in known:
            raise ConfigError(f"--set {key}: '{cfg.model}' has no such parameter; known parameters: "
                              f"{', '.join(sorted(known))}")
        if key in (reserved or {}):
            raise ConfigError(f"--set {key}: {reserved[key]}")


