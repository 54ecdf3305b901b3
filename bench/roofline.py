#!/usr/bin/env python3
"""A roofline per workload: for every phase, the work per simulated second, the floor that this
machine's measured figures put under it, and the measured time beside it.

    python bench/roofline.py                                  # dpsnn (1 thread) and microcircuit (2 threads)
    python bench/roofline.py --workloads dpsnn --threads 2 --json roofline.json
    python bench/roofline.py --calibrate-only
    python bench/roofline.py --quick                          # small sizes: a minute

The machine figures come from small kernels in the engine (`_engine.calibrate`, one thread,
best of repeats): stream bandwidth, the latency of a random access alone and with many in
flight, delivery's scatter-add into an int32 row of a given size, the core clock and scalar
IPC. The work comes from one `ranvier run` of each workload (its summary.json counters); the
instructions per unit from bench/instructions.py's reference (callgrind, AVX2 kernels: with
AVX-512 the vector loops execute fewer). Floors, in core-seconds per simulated second:

    deliver   E x scatter(row) + G x random_load + Sch x i_sched / (IPC x f)
              (E recurrent events, G delay segments: each starts at an unpredictable address,
              Sch scheduled events; row = the thread's input row; the phase timer includes
              schedule). The bandwidth bound E x bytes/synapse / stream_read is shown beside.
    update    S x (i_update + i_drive) / (IPC x f)   (S neuron-steps; the drive's events included;
              i from the AVX2 kernels' counts and IPC from scalar adds: with the AVX-512 kernels the
              measured time can fall below this "floor", so read it with RANVIER_SIMD=avx2)
    exchange  0 on one rank (collocate, communicate, synchronize: measured only)
    build     synapses x i_build / (IPC x f) + store bytes / stream_copy (kernel page zeroing is
              not in it: it counts in the measurement)

Measured: the phase's seconds x threads / simulated seconds (core-seconds per simulated second).
The real-time-factor floor on T threads is the sum of the floors / T.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "measurements" / "instructions.json"

WORKLOADS = {  # name -> (arguments of `ranvier run`, default threads)
    "dpsnn": (["--model", "dpsnn"], 1),
    "microcircuit": (["--model", "microcircuit"], 2),
}


def calibrate(memory_mib: int, repeats: int) -> dict:
    from ranvier import _engine
    return dict(_engine.calibrate(memory_mib << 20, repeats))


def run_workload(name: str, threads: int, duration_ms: float, extra: list[str], workdir: Path,
                 python: str = sys.executable) -> dict:
    args, _ = WORKLOADS[name]
    out = workdir / f"{name}-{threads}"
    cmd = [python, "-m", "ranvier", "run", *args, *extra, "--threads", str(threads),
           "--duration-ms", str(duration_ms), "--energy", "none", "--quiet", "--out", str(out)]
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=dict(os.environ))
    wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{name}: ranvier run failed:\n{done.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    # The phase timers are wall clocks: where other processes shared the cores, the run's CPU
    # seconds fall short of its wall seconds x threads and the measured column is inflated.
    summary["roofline_process"] = {"wall_s": wall, "cpu_s": (after.ru_utime + after.ru_stime)
                                   - (before.ru_utime + before.ru_stime)}
    return summary


def scatter_rows(machine: dict) -> list[tuple[int, float]]:
    """(row entries, ns per event) of every calibrated scatter-add, shortest row first."""
    return sorted((int(k.rsplit("_", 1)[1][:-2]) * 1024, v) for k, v in machine.items() if k.startswith("scatter_add_ns_row_"))


def scatter_ns(machine: dict, row_entries: float) -> float:
    """The calibrated scatter-add cost of the smallest calibrated row at least this long."""
    rows = scatter_rows(machine)
    for size, ns in rows:
        if size >= row_entries:
            return ns
    return rows[-1][1]


def per_unit(reference: dict, workload: str) -> dict:
    for r in reference.get("results", []):
        if r["workload"] == workload:
            return r["per_unit"]
    raise SystemExit(f"{REFERENCE}: no instruction counts for {workload} (run bench/instructions.py --out)")


def roofline(name: str, summary: dict, machine: dict, reference: dict) -> dict:
    seconds = summary["duration_ms"] / 1000.0
    threads = summary["threads"] * summary["ranks"]
    c = summary["counters"]
    phases = summary["phase_seconds"]
    units = per_unit(reference, name)
    hz = machine["clock_GHz"] * 1e9 * machine["scalar_ipc"]          # instructions per second, at best
    E = c["synaptic_events_recurrent"] / seconds
    X = c["synaptic_events_external"] / seconds
    G = c["delivery_segments"] / seconds
    Sch = c["events_scheduled"] / seconds
    S = summary["neurons"] * 1000.0 / summary["resolution_ms"]
    bytes_per_synapse = summary["synapse_store_bytes"] / max(summary["synapses"], 1)
    row = summary["neurons"] / threads                               # input entries per thread (one column per neuron)
    deliver_terms = {
        "scatter": E * scatter_ns(machine, row) * 1e-9,
        "segments": G * machine["random_load_ns"] * 1e-9,
        "schedule": Sch * units["schedule per scheduled event"] / hz,
    }
    bandwidth = E * bytes_per_synapse / (machine["stream_read_GBps"] * 1e9)
    update_instr = units["update per neuron-step"] + (units.get("drive per neuron-step") or 0.0)
    rows = [
        {"phase": "deliver", "work": f"{E:.3g} events, {G:.3g} segments, {Sch:.3g} scheduled",
         "work_units": {"events": E, "segments": G, "scheduled": Sch},
         "bytes": E * bytes_per_synapse, "random": G,
         "floor": max(sum(deliver_terms.values()), bandwidth), "floor_terms": {**deliver_terms, "bandwidth": bandwidth},
         "measured": phases["deliver"] * threads / seconds},
        {"phase": "update", "work": f"{S:.3g} neuron-steps, {X:.3g} external events",
         "work_units": {"neuron_steps": S, "external_events": X},
         "bytes": None, "random": 0.0, "floor": S * update_instr / hz,
         "floor_terms": {"instructions per neuron-step": update_instr},
         "measured": phases["update"] * threads / seconds},
        {"phase": "exchange", "work": f"{summary['spikes_total'] / seconds:.3g} spikes",
         "work_units": {"spikes": summary["spikes_total"] / seconds}, "bytes": None, "random": 0.0,
         "floor": 0.0, "floor_terms": {},
         "measured": sum(phases.get(p, 0.0) for p in ("collocate", "communicate", "synchronize")) * threads / seconds},
    ]
    floor = sum(r["floor"] for r in rows)
    measured = sum(r["measured"] for r in rows)
    build_floor = (summary["synapses"] * units["build per synapse"] / hz
                   + summary["synapse_store_bytes"] / (machine["stream_copy_GBps"] * 1e9)) / threads
    return {"workload": name, "threads": threads, "neurons": summary["neurons"], "synapses": summary["synapses"],
            "simulated_s": seconds, "rows": rows, "floor_core_s": floor, "measured_core_s": measured,
            "rtf_floor": floor / threads, "rtf_measured": summary["real_time_factor"],
            "build_floor_s": build_floor, "build_s": summary["build_seconds"],
            "process": summary.get("roofline_process"),
            "peak_bytes_per_synapse": sum(summary["peak_rss_bytes"]) / max(summary["synapses"], 1),
            "store_bytes_per_synapse": bytes_per_synapse}


def print_machine(m: dict) -> None:
    print("machine (one thread, best of repeats):")
    print(f"  clock {m['clock_GHz']:.2f} GHz, scalar IPC {m['scalar_ipc']:.2f}; stream read {m['stream_read_GBps']:.1f} GB/s, "
          f"copy {m['stream_copy_GBps']:.1f} GB/s, triad {m['stream_triad_GBps']:.1f} GB/s")
    print(f"  random access: {m['chase_ns']:.0f} ns alone (4 KiB pages), {m['chase_huge_ns']:.0f} ns (huge pages), "
          f"{m['random_load_ns']:.1f} ns each with many in flight")
    rows = ", ".join(f"{size >> 10} Ki {ns:.2f} ns" for size, ns in scatter_rows(m))
    print(f"  scatter-add per event, by int32 row length: {rows}")


FLOOR_MODELS = [  # printed above every table: which floor each phase's column is
    "deliver  = E x scatter(row) + G x random_load + Sch x i_schedule / (IPC x f), at least E x B/syn / stream_read",
    "update   = S x (i_update + i_drive) / (IPC x f)   (i: AVX2 instruction counts; AVX-512 may run below it)",
    "exchange = 0 on one rank (measured only)",
    "build    = synapses x i_build / (IPC x f) + store bytes / stream_copy, over threads",
    "E recurrent events, G delay segments, Sch scheduled events, S neuron-steps; measured = phase s x threads",
]


def print_table(t: dict) -> None:
    print(f"\n{t['workload']}: {t['neurons']:,} neurons, {t['synapses']:,} synapses, {t['threads']} thread(s), "
          f"{t['simulated_s']:g} s simulated; per simulated second, core-seconds")
    print("  floors: " + "\n          ".join(FLOOR_MODELS))
    print(f"  {'phase':<9} {'work':<58} {'GB streamed':>11} {'random':>9} {'floor':>8} {'measured':>9} {'x floor':>8}")
    for r in t["rows"]:
        gb = f"{r['bytes'] / 1e9:.2f}" if r["bytes"] else "-"
        rnd = f"{r['random']:.3g}" if r["random"] else "-"
        ratio = f"{r['measured'] / r['floor']:.2f}" if r["floor"] > 0 else "-"
        print(f"  {r['phase']:<9} {r['work']:<58} {gb:>11} {rnd:>9} {r['floor']:>8.3f} {r['measured']:>9.3f} {ratio:>8}")
        if r["floor_terms"]:
            terms = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) and k != "instructions per neuron-step" else f"{k} {v:.1f}"
                              for k, v in r["floor_terms"].items())
            print(f"  {'':<9} floor terms: {terms}")
    print(f"  {'total':<9} {'':<58} {'':>11} {'':>9} {t['floor_core_s']:>8.3f} {t['measured_core_s']:>9.3f} "
          f"{t['measured_core_s'] / t['floor_core_s']:>8.2f}")
    print(f"  real-time factor: floor {t['rtf_floor']:.3f} on {t['threads']} thread(s), measured {t['rtf_measured']:.3f}")
    print(f"  build: floor {t['build_floor_s']:.2f} s, measured {t['build_s']:.2f} s; peak {t['peak_bytes_per_synapse']:.2f} "
          f"bytes per synapse (store {t['store_bytes_per_synapse']:.2f})")
    if t.get("process"):
        busy = t["process"]["cpu_s"] / t["process"]["wall_s"]
        note = " (well below the threads: the cores were shared, measured times inflated)" if busy < 0.8 * t["threads"] else ""
        print(f"  the run's process: {busy:.2f} CPU seconds per wall second over {t['threads']} thread(s){note}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="dpsnn,microcircuit", help="comma-separated: dpsnn, microcircuit")
    ap.add_argument("--threads", type=int, default=None, help="threads (default: dpsnn 1, microcircuit 2)")
    ap.add_argument("--duration-ms", type=float, default=2000.0, help="simulated time per workload (default 2000)")
    ap.add_argument("--dpsnn-neurons", "--neurons", type=int, default=20480, help="dpsnn's neurons (default 20480)")
    ap.add_argument("--microcircuit-scale", "--scale", type=float, default=1.0, help="microcircuit's scale (default 1)")
    ap.add_argument("--memory-mib", type=int, default=1024, help="calibration arrays (past every cache; default 1024)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--instructions", type=Path, default=REFERENCE, help="bench/instructions.py output to use")
    ap.add_argument("--json", type=Path, default=None, help="write the machine figures and the tables here")
    ap.add_argument("--ranvier-python", default=sys.executable,
                    help="the Python whose ranvier runs the workloads (e.g. an older build's, for a before/after)")
    ap.add_argument("--calibrate-only", action="store_true")
    ap.add_argument("--quick", action="store_true", help="small sizes and short runs (a check, not a measurement)")
    a = ap.parse_args(argv)
    if a.quick:
        a.memory_mib, a.repeats, a.duration_ms = 64, 2, 200.0
        a.dpsnn_neurons, a.microcircuit_scale = 2048, 0.05
    # The workloads first, the calibration after: the calibration's gigabyte of arrays fragments
    # physical memory, and a run after it found fewer transparent huge pages (measured: the
    # microcircuit's build 8 -> 19 s, its delivery 2.5x slower).
    summaries = []
    if not a.calibrate_only:
        with tempfile.TemporaryDirectory(prefix="ranvier-roofline-") as tmp:
            for name in [w.strip() for w in a.workloads.split(",") if w.strip()]:
                if name not in WORKLOADS:
                    raise SystemExit(f"--workloads: unknown workload {name!r} (choose from {', '.join(WORKLOADS)})")
                threads = a.threads or WORKLOADS[name][1]
                extra = (["--set", f"neurons={a.dpsnn_neurons}"] if name == "dpsnn"
                         else ["--set", f"scale={a.microcircuit_scale}"])
                summaries.append((name, run_workload(name, threads, a.duration_ms, extra, Path(tmp), a.ranvier_python)))
    machine = calibrate(a.memory_mib, a.repeats)
    print_machine(machine)
    report = {"machine": machine, "workloads": []}
    if summaries:
        reference = json.loads(a.instructions.read_text())
        for name, summary in summaries:
            table = roofline(name, summary, machine, reference)
            print_table(table)
            report["workloads"].append(table)
    if a.json:
        a.json.write_text(json.dumps(report, indent=2))
        print(f"\nwritten to {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
