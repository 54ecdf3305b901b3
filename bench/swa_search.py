"""The search that found dpsnn's slow-wave state (docs/dpsnn.md, "Slow waves").

Sweeps the excitatory spike-frequency adaptation (g_c_exc_mV_per_ms) against the external
drive (a factor on both external rates) for one or more recurrent couplings (--coupling: the
E->E efficacies x JX, the inhibitory efficacies and the E->I efficacies x JI; several pairs
separated by ";"), on the homogeneous network or on a grid of columns (--columns 4x4 with
--lateral-*, --synapses; docs/dpsnn.md, "The grid of columns"), runs dpsnn at every point,
and classifies each run:

    silent      mean rate below 0.1 Hz and no up states
    saturated   mean rate above 100 Hz (neurons near their refractory limit)
    SWA         up and down states (ranvier.analysis.updown) at a slow-oscillation frequency up to 2.5 Hz
    fast        up and down states faster than that: a population oscillation, not slow waves
    AW          the rest: asynchronous activity

It writes swa_search.csv and swa_search.png (the state diagram, each SWA point labelled with its
slow-oscillation frequency) into --out.

    python bench/swa_search.py --out results/swa-search
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

import ranvier as rv
from ranvier.analysis import updown

STATES = ("silent", "AW", "SWA", "fast", "saturated")
COLOURS = {"silent": "0.75", "AW": "C0", "SWA": "C1", "fast": "C4", "saturated": "C3"}
SLOW_HZ = 2.5


def network(g_c: float, drive: float, jx: float, ji: float, neurons: int, base: dict, **extra) -> rv.Network:
    kw = dict(neurons=neurons, g_c_exc_mV_per_ms=g_c,
              external_rate_exc_hz=base["external_rate_exc_hz"] * drive,
              external_rate_inh_hz=base["external_rate_inh_hz"] * drive, **extra)
    for k in ("J_FF", "J_FB", "J_BF", "J_BB"):
        kw[k] = base[k] * jx
    for k in ("J_IF", "J_IB", "J_II", "J_FI", "J_BI"):
        kw[k] = base[k] * ji
    return rv.models.dpsnn(**kw)


def classify(mean_hz: float, ud: dict) -> str:
    if mean_hz > 100.0:
        return "saturated"
    if ud["has_up_down"]:
        return "SWA" if ud["frequency_hz"] <= SLOW_HZ else "fast"
    if mean_hz < 0.1:
        return "silent"
    return "AW"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--neurons", type=int, default=20480)
    ap.add_argument("--duration-ms", type=float, default=5000.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--g-c", default="0.05,0.1,0.15,0.2,0.3", help="g_c_exc_mV_per_ms values")
    ap.add_argument("--drive", default="0.44,0.47,0.5,0.55,0.65", help="factors on the external rates")
    ap.add_argument("--coupling", default="2.0,1.9",
                    help="JX,JI: factors on the E->E and on the inhibitory and E->I efficacies; several pairs: 'JX,JI;JX,JI'")
    ap.add_argument("--columns", default="1x1", help="CXxCY: a grid of columns (neurons a multiple of 20 x CX x CY)")
    ap.add_argument("--synapses", type=int, default=None, help="synapses_per_neuron (default: dpsnn's)")
    ap.add_argument("--lateral-law", default=None, choices=("exponential", "gaussian"))
    ap.add_argument("--lateral-length", type=float, default=None, help="in column spacings")
    ap.add_argument("--lateral-cutoff", type=float, default=None, help="in column spacings")
    ap.add_argument("--tau-c", type=float, default=None, help="tau_c_exc_ms (default: dpsnn's 1000 ms)")
    ap.add_argument("--lateral-decimals", type=int, default=None, help="round the kernel (the DPSNN release: 3)")
    ap.add_argument("--lateral-inhibitory", default=None, choices=("law", "local"),
                    help="local: inhibitory sources in the own column only (the DPSNN release)")
    ap.add_argument("--external-weight-f", type=float, default=None, help="external_weight_F_mV (the release's SW: 0.832761)")
    ap.add_argument("--out", default="swa-search")
    a = ap.parse_args(argv)
    g_values = [float(x) for x in a.g_c.split(",")]
    drives = [float(x) for x in a.drive.split(",")]
    couplings = [tuple(float(x) for x in pair.split(",")) for pair in a.coupling.split(";") if pair.strip()]
    cx, cy = (int(x) for x in a.columns.lower().split("x"))
    extra = {"columns_x": cx, "columns_y": cy}
    for key, value in (("synapses_per_neuron", a.synapses), ("lateral_law", a.lateral_law),
                       ("lateral_length", a.lateral_length), ("lateral_cutoff", a.lateral_cutoff),
                       ("tau_c_exc_ms", a.tau_c), ("lateral_decimals", a.lateral_decimals),
                       ("lateral_inhibitory", a.lateral_inhibitory), ("external_weight_F_mV", a.external_weight_f)):
        if value is not None:
            extra[key] = value
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    base = rv.models.defaults("dpsnn")
    rows = []
    for (jx, ji), g_c, drive in ((c, g, d) for c in couplings for g in g_values for d in drives):
        t0 = time.perf_counter()
        with rv.Simulation(network(g_c, drive, jx, ji, a.neurons, base, **extra), threads=a.threads) as sim:
            res = sim.run(a.duration_ms)
            times = res.spike_steps * sim.resolution_ms
        ud = updown.detect(times, a.neurons, a.duration_ms)
        mean_hz = ud["mean_rate_hz"]
        state = classify(mean_hz, ud)
        row = {"g_c_exc_mV_per_ms": g_c, "drive": drive, "J_exc_factor": jx, "J_inh_factor": ji,
               "columns": f"{cx}x{cy}",
               "state": state, "mean_rate_hz": round(mean_hz, 4),
               "frequency_hz": ud.get("frequency_hz"), "up_ms": (ud.get("up_duration") or {}).get("mean_ms"),
               "down_ms": (ud.get("down_duration") or {}).get("mean_ms"),
               "rate_up_hz": ud.get("rate_up_hz"), "rate_down_hz": ud.get("rate_down_hz"),
               "wall_s": round(time.perf_counter() - t0, 2)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(out / "swa_search.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no swa_search.png", file=sys.stderr)
        return 0
    fig, axes = plt.subplots(len(couplings), 1, figsize=(7, 5 * len(couplings)), layout="constrained", squeeze=False)
    for ax, (jx, ji) in zip(axes[:, 0], couplings):
        mine = [r for r in rows if (r["J_exc_factor"], r["J_inh_factor"]) == (jx, ji)]
        for state in STATES:
            pts = [r for r in mine if r["state"] == state]
            if pts:
                ax.scatter([r["drive"] for r in pts], [r["g_c_exc_mV_per_ms"] for r in pts], s=260, marker="s",
                           color=COLOURS[state], label=state)
        for r in mine:
            text = f"{r['frequency_hz']:.2f} Hz" if r["state"] in ("SWA", "fast") else f"{r['mean_rate_hz']:.2g}"
            ax.annotate(text, (r["drive"], r["g_c_exc_mV_per_ms"]), textcoords="offset points", xytext=(0, 12),
                        ha="center", fontsize=7)
        ax.set_xlabel("external drive (factor on the AW rates)")
        ax.set_ylabel("g_c of excitatory neurons (mV/ms)")
        grid = "" if (cx, cy) == (1, 1) else f" on {cx} x {cy} columns"
        ax.set_title(f"dpsnn {a.neurons:,} neurons{grid}, E->E x{jx:g}, inhibition and E->I x{ji:g}: states "
                     f"(SWA, fast: up-state frequency; others: mean rate, Hz)", fontsize=8)
        ax.legend(loc="upper right", fontsize=8)
    fig.savefig(out / "swa_search.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
