#!/usr/bin/env python3
"""The main job on a quiet machine and beside a competing busy process: real-time factors of the
default thread count, of every core (the default before it counted busy cores) and of one thread.

    python bench/threads_under_load.py                       # dpsnn 20480, 5 s simulated, 3 repeats
    python bench/threads_under_load.py --duration-ms 10000 --repeats 5 --busy 1

Each run is its own `ranvier run` process, one at a time; "loaded" runs have --busy processes
spinning (a Python loop each, not pinned, started a second before the run and stopped after it),
as another user's job or a build beside the simulation. Configurations alternate run by run, so
a drift of the machine's speed spreads over all of them. The spikes are compared across every
run (their count and the summary's rates): threads change the time, never the result.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ranvier.bench import restore_cpus
from ranvier.runtime.environment import cpu_model

BUSY = "while True: pass"


def run_once(args, threads: int | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="ranvier-load-") as tmp:
        out = Path(tmp) / "run"
        command = [sys.executable, "-m", "ranvier", "run", "--model", "dpsnn", "--neurons", str(args.neurons),
                   "--duration-ms", str(args.duration_ms), "--out", str(out), "--quiet", "--energy", "none"]
        if threads is not None:
            command += ["--threads", str(threads)]
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_PROC_BIND", "OMP_PLACES")}
        done = subprocess.run(command, capture_output=True, text=True, env=env, preexec_fn=restore_cpus)
        if done.returncode != 0:
            sys.exit(f"threads_under_load: {' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
        summary = json.loads((out / "summary.json").read_text())
        summary["note"] = next((line for line in done.stderr.splitlines() if "ranvier: note: other processes" in line),
                               None)
        return summary


def with_load(busy: int, action):
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
    try:
        time.sleep(1.0)                  # running, and seen as running, before the run starts
        return action()
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--neurons", type=int, default=20480)
    parser.add_argument("--duration-ms", type=float, default=5000.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", type=int, default=1, help="competing busy processes in the loaded runs")
    parser.add_argument("--pause-s", type=float, default=2.0, help="idle seconds before each run")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    configurations = [("default", None), (f"{cores} threads (every core)", cores), ("1 thread", 1)]
    results: dict = {}
    for repeat in range(args.repeats):
        for load in ("quiet", "loaded"):
            for label, threads in configurations:
                time.sleep(args.pause_s)
                run = (lambda t=threads: run_once(args, t))
                summary = run() if load == "quiet" else with_load(args.busy, run)
                results.setdefault((load, label), []).append(summary)
                print(f"  {load:6} {label:24} RTF {summary['real_time_factor']:.3f}  threads "
                      f"{summary['threads']}  spikes {summary['spikes_total']:,}", file=sys.stderr, flush=True)
    spikes = {s["spikes_total"] for runs in results.values() for s in runs}
    print(f"dpsnn, {args.neurons:,} neurons, {args.duration_ms / 1000:g} s simulated, {args.repeats} repeat(s), "
          f"{cores} cores ({cpu_model() or 'unknown CPU'}); loaded: {args.busy} busy process(es) beside the run. "
          f"Real-time factor = wall seconds per simulated second.\n")
    print("| machine | threads | threads run | RTF min | RTF median |")
    print("|---|---|---|---|---|")
    for load in ("quiet", "loaded"):
        for label, _ in configurations:
            runs = results[(load, label)]
            rtf = [r["real_time_factor"] for r in runs]
            used = sorted({r["threads"] for r in runs})
            print(f"| {load} | {label} | {', '.join(map(str, used))} | {min(rtf):.3f} | {statistics.median(rtf):.3f} |")
    print(f"\nspikes: {', '.join(f'{s:,}' for s in sorted(spikes))} "
          f"({'the same in every run' if len(spikes) == 1 else 'DIFFERENT: a bug'})")
    return 0 if len(spikes) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
