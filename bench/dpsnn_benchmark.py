#!/usr/bin/env python3
"""Benchmark the dpsnn main job in three configurations and print a Markdown table.

    python bench/dpsnn_benchmark.py                        # 20480 neurons, 10 s simulated
    python bench/dpsnn_benchmark.py --repeats 3 --write bench/dpsnn.md

Each run is a separate `ranvier run --out` process (so peak memory is that run's alone),
one at a time; the numbers are read back from its summary.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from ranvier import ConfigError
from ranvier.runtime.environment import cpu_model
from ranvier.bench.runner import launch

CONFIGURATIONS = [          # (label, ranks, threads per rank)
    ("1 rank x 1 thread", 1, 1),
    ("1 rank x 2 threads", 1, 2),
    ("2 ranks x 1 thread", 2, 1),
]


def run_once(neurons: int, duration_ms: float, ranks: int, threads: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ranvier-bench-") as tmp:
        out = Path(tmp) / "run"
        command = [sys.executable, "-m", "ranvier", "run", "--model", "dpsnn", "--neurons", str(neurons),
                   "--duration-ms", str(duration_ms), "--threads", str(threads), "--seed", str(seed),
                   "--quiet", "--out", str(out)]
        try:
            # under mpiexec for several ranks, each bound to its own cores
            done = launch(ranks, threads, command)
        except ConfigError as e:
            sys.exit(f"dpsnn_benchmark: {e}")
        if done.returncode != 0:
            sys.exit(f"dpsnn_benchmark: {' '.join(done.args)} failed ({done.returncode}):\n{done.stderr}")
        return json.loads((out / "summary.json").read_text())


def row(label: str, runs: list[dict]) -> list[str]:
    rtf = [r["real_time_factor"] for r in runs]
    events = [(r["synaptic_events"]["recurrent"] + r["synaptic_events"]["external"]) / r["simulate_seconds"]
              for r in runs]
    peak_rank = max(max(r["peak_rss_bytes"]) for r in runs)
    per_synapse = max(sum(r["peak_rss_bytes"]) / r["synapses"] for r in runs)
    rates = runs[0]["rates_steady_hz"]
    by_type = runs[0]["rates_steady_by_type_hz"]
    return [label,
            f"{statistics.median(r['build_seconds'] for r in runs):.2f}",
            f"{min(rtf):.3f}", f"{statistics.median(rtf):.3f}",
            f"{statistics.median(events) / 1e6:.1f} M",
            f"{peak_rank / 1e6:.0f}",
            f"{per_synapse:.1f}",
            " / ".join(f"{rates[p]:.2f}" for p in ("F", "B", "I") if p in rates),
            f"{by_type['excitatory']:.2f} / {by_type['inhibitory']:.2f}"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--neurons", type=int, default=20480)
    parser.add_argument("--duration-ms", type=float, default=10000.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write", metavar="FILE", help="also save the table here")
    args = parser.parse_args(argv)

    header = ["configuration", "build s", "real-time factor (min)", "real-time factor (median)",
              "synaptic events / s", "peak memory per rank (MB)", "bytes per synapse",
              "steady rates F / B / I (Hz)", "steady rates E / I (Hz)"]
    rows = []
    first = None
    for label, ranks, threads in CONFIGURATIONS:
        runs = []
        for i in range(args.repeats):
            print(f"dpsnn_benchmark: {label}, run {i + 1}/{args.repeats}", file=sys.stderr, flush=True)
            runs.append(run_once(args.neurons, args.duration_ms, ranks, threads, args.seed))
        first = first or runs[0]
        rows.append(row(label, runs))

    lines = [f"dpsnn, {args.neurons:,} neurons, {first['synapses']:,} synapses, "
             f"{args.duration_ms / 1000:g} s simulated, {args.repeats} repeat(s); ranvier {first['version']}; "
             f"{cpu_model() or 'unknown CPU'}, {os.cpu_count()} cores. Real-time factor = wall seconds per simulated second.",
             "",
             "| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    table = "\n".join(lines) + "\n"
    print(table, end="")
    if args.write:
        Path(args.write).write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
