"""Up and down states of every module of a dpsnn grid run (docs/dpsnn.md, "Slow waves on the grid").

The run summary's up/down analysis (ranvier.analysis.updown) reads the whole network's rate; on a large
grid the modules' up states need not coincide, and their average can look asynchronous. This
reads a run's spikes.h5 and config.toml, applies the same analysis to each module's own spikes
(its F, B and I neurons), and prints the whole network's result, the number of modules with up
and down states, the mean over those modules of their frequency, durations and rates, and how
far apart in time the modules' up states start (the spread of the onsets that follow the
network's first up-state onset in each module after the transient).

    python bench/grid_updown.py results/grid-swa [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import h5py
import numpy as np

from ranvier.io import config
from ranvier import models
from ranvier.analysis import updown


def module_spikes(run: Path):
    cfg = config.load(run / "config.toml")
    net = models.build(cfg.model, **cfg.parameters)
    grid = net.column_grid
    if grid is None:
        raise SystemExit(f"grid_updown: {run} is not a run on a grid of columns (columns_x x columns_y = 1)")
    times = [[] for _ in range(grid.columns)]
    with h5py.File(run / "spikes.h5", "r") as f:
        for pop in net.populations:
            ids = np.asarray(f[f"spikes/{pop.name}/node_ids"][()], np.int64)
            ts = np.asarray(f[f"spikes/{pop.name}/timestamps"][()], np.float64)
            col = ids // (pop.size // grid.columns)
            order = np.argsort(col, kind="stable")
            bounds = np.searchsorted(col[order], np.arange(grid.columns + 1))
            for c in range(grid.columns):
                times[c].append(ts[order[bounds[c]:bounds[c + 1]]])
    per_module = net.size // grid.columns
    return cfg, net, [np.concatenate(t) for t in times], per_module


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a results folder of `ranvier run` (spikes.h5, config.toml)")
    ap.add_argument("--json", type=Path, default=None, help="also write the result here")
    a = ap.parse_args(argv)
    cfg, net, times, per_module = module_spikes(a.run)
    duration = float(cfg.simulation["duration_ms"])
    whole = updown.detect(np.concatenate(times), net.size, duration)
    results = [updown.detect(t, per_module, duration) for t in times]
    good = [r for r in results if r["has_up_down"]]

    def mean(key, sub=None):
        vals = [(r[key][sub] if sub else r[key]) for r in good]
        return float(np.mean(vals)) if vals else None

    # onset spread: for each up onset of module 0, the nearest onset of every other module
    lags = []
    if good and results[0]["has_up_down"]:
        onsets = [np.array([u[0] for u in r["up_intervals_ms"]]) if r["has_up_down"] else None for r in results]
        for t0 in onsets[0]:
            near = [o[np.argmin(np.abs(o - t0))] - t0 for o in onsets[1:] if o is not None and o.size]
            lags.append(float(np.std(near)) if near else np.nan)
    out = {
        "run": str(a.run), "neurons": net.size, "modules": len(times), "neurons_per_module": per_module,
        "whole_network": {k: whole.get(k) for k in ("has_up_down", "reason", "frequency_hz", "up_duration",
                                                      "down_duration", "rate_up_hz", "rate_down_hz", "mean_rate_hz")},
        "modules_with_up_down": len(good),
        "module_mean": {"frequency_hz": mean("frequency_hz"), "up_ms": mean("up_duration", "mean_ms"),
                        "up_cv": mean("up_duration", "cv"), "down_ms": mean("down_duration", "mean_ms"),
                        "down_cv": mean("down_duration", "cv"), "rate_up_hz": mean("rate_up_hz"),
                        "rate_down_hz": mean("rate_down_hz"), "fraction_up": mean("fraction_up")},
        "module_frequency_range_hz": ([min(r["frequency_hz"] for r in good), max(r["frequency_hz"] for r in good)]
                                      if good else None),
        "onset_spread_ms": float(np.nanmean(lags)) if lags else None,
    }
    print(json.dumps(out, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
