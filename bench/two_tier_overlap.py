"""Two-tier exchange with and without overlap, and the conventional exchange with overlap, on
the mam-benchmark (docs/structure-aware.md, "Two-tier with overlap").

Every configuration runs `ranvier run` under `mpiexec -n RANKS -bind-to core`, one thread per
rank, the same network for all (overlap needs a minimum delay of an even number of steps: the
default d_min_ms = 0.2 at resolution 0.1 ms). Repeats are interleaved (configuration by
configuration, then the next repeat), so slow drifts of a shared machine spread over all of
them. Prints, per configuration: the real-time factor (min and median over repeats), and the
phases in microseconds per simulated millisecond (median over repeats, mean over ranks), which
compares cycles of different lengths; writes every run to a CSV.

    python bench/two_tier_overlap.py --repeats 8 --duration-ms 2000 --out results/two-tier-overlap-2areas.csv

Configurations (CONFIGS): two-tier, two-tier+overlap, conventional+overlap and conventional
(allgather every cycle), all with by-area placement (the default list), and round-robin+overlap
(the conventional scheme's own placement). The load average of the machine as each run starts
is in the CSV.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# name -> (exchange, placement, overlap)
CONFIGS = {
    "two-tier": ("two-tier", "by-area", False),
    "two-tier+overlap": ("two-tier", "by-area", True),
    "conventional+overlap": ("allgather", "by-area", True),
    "conventional": ("allgather", "by-area", False),
    "round-robin+overlap": ("allgather", "round-robin", True),
}
PHASES = ("deliver", "update", "collocate", "communicate", "synchronize")


def mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else "mpiexec"


def run_one(args, exchange: str, placement: str, overlap: bool, barrier: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="two-tier-overlap-") as tmp:
        out = Path(tmp) / "run"
        cmd = [mpiexec(), "-n", str(args.ranks), "-bind-to", "core", sys.executable, "-m", "ranvier", "run",
               "--model", "mam-benchmark", "--set", f"n_areas={args.areas}", "--set", f"area_size={args.area_size}",
               "--set", f"K={args.K}", "--set", f"d_min_ms={args.d_min_ms}", "--set", f"delay_ratio={args.delay_ratio}",
               "--resolution-ms", str(args.resolution_ms), "--threads", "1", "--duration-ms", str(args.duration_ms),
               "--exchange", exchange, "--placement", placement, "--energy", "none", "--quiet", "--out", str(out)]
        if overlap:
            cmd.append("--overlap")
        if not barrier:
            cmd.append("--no-barrier")
        load = os.getloadavg()[0]          # the machine's load as the run starts (shared machines)
        subprocess.run(cmd, check=True)
        s = json.loads((out / "summary.json").read_text())
    per_ms = 1e6 / s["duration_ms"]          # seconds over the run -> microseconds per simulated ms
    row = {"exchange": exchange, "placement": placement, "overlap": overlap, "barrier": barrier, "load1": load,
           "rtf": s["real_time_factor"], "cycle_ms": s["communication_interval_ms"],
           "global_interval": s["global_interval"],
           "exchanges_global": s["counters"]["exchanges_global"] // args.ranks,
           "exchanges_local": s["counters"]["exchanges_local"] // args.ranks}
    for phase in PHASES:
        row[f"{phase}_us_per_ms"] = s["phase_seconds"][phase] * per_ms
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--areas", type=int, default=2)
    ap.add_argument("--area-size", type=int, default=10000)
    ap.add_argument("--K", type=int, default=1000)
    ap.add_argument("--d-min-ms", type=float, default=0.2)
    ap.add_argument("--delay-ratio", type=int, default=10)
    ap.add_argument("--resolution-ms", type=float, default=0.1)
    ap.add_argument("--duration-ms", type=float, default=5000.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--barrier", choices=("on", "off", "both"), default="both",
                    help="time a barrier before each exchange (on, the default of ranvier run), or not")
    ap.add_argument("--configs", default="two-tier,two-tier+overlap,conventional+overlap,conventional",
                    help=f"comma-separated names of configurations, of {', '.join(CONFIGS)}")
    ap.add_argument("--out", type=Path, required=True, help="CSV of every run")
    args = ap.parse_args(argv)
    names = args.configs.split(",")
    barriers = {"on": [True], "off": [False], "both": [True, False]}[args.barrier]
    rows = []
    for repeat in range(args.repeats):
        for barrier in barriers:
            for name in names:
                row = {"config": name, "repeat": repeat, **run_one(args, *CONFIGS[name], barrier)}
                rows.append(row)
                print(f"repeat {repeat} barrier={'on' if barrier else 'off'} {name}: RTF {row['rtf']:.3f}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"\n{args.ranks} ranks, {args.areas} areas x {args.area_size} neurons, K = {args.K}, d_min = {args.d_min_ms} ms, "
          f"D = {args.delay_ratio}, h = {args.resolution_ms} ms, {args.duration_ms:g} ms simulated, "
          f"{args.repeats} repeats; phases in us per simulated ms (median over repeats, mean over ranks)")
    head = ["barrier", "configuration", "cycle ms", "D", "RTF min", "RTF median", *PHASES, "comm + sync"]
    print(" | ".join(head))
    for barrier in barriers:
        for name in names:
            sel = [r for r in rows if r["config"] == name and r["barrier"] == barrier]
            med = {p: statistics.median(r[f"{p}_us_per_ms"] for r in sel) for p in PHASES}
            rtf = [r["rtf"] for r in sel]
            print(" | ".join([("on" if barrier else "off"), name, f"{sel[0]['cycle_ms']:g}", str(sel[0]["global_interval"]),
                              f"{min(rtf):.3f}", f"{statistics.median(rtf):.3f}",
                              *(f"{med[p]:.1f}" for p in PHASES),
                              f"{statistics.median(r['communicate_us_per_ms'] + r['synchronize_us_per_ms'] for r in sel):.1f}"]))


if __name__ == "__main__":
    main()
