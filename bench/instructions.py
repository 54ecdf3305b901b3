"""Exact instruction counts of the engine's phases, per unit of work, under callgrind.

This machine has no hardware performance counters; callgrind counts every instruction the
engine executes, exactly and repeatably. Each phase function of the engine is kept out of
line (RANVIER_PHASE in engine.hpp), so its inclusive count is the phase's cost:

    deliver   per recurrent synaptic event
    schedule  per synaptic event scheduled (received spikes filed under their arrival cycle)
    update    per neuron-step (drive excluded)
    drive     per external (Poisson) event
    run       all of run_steps per synaptic event (recurrent + external)
    build     per synapse

Usage:
    python bench/instructions.py                                  # the table
    python bench/instructions.py --out counts.json                # keep it
    python bench/instructions.py --compare docs/measurements/instructions.json   # regressions?

With --compare, a count more than --tolerance (default 2 %) above the reference is a
regression and the script exits with status 1. Counts are per unit of work, so they do not
depend on the network's activity, only on the code and the compiler. Needs valgrind.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Small fixed workloads: callgrind runs about 50 times slower than native.
WORKLOADS = {
    "dpsnn": ["--model", "dpsnn", "--set", "neurons=2048", "--duration-ms", "200"],
    "mam-benchmark": ["--model", "mam-benchmark", "--set", "n_areas=1", "--set", "area_size=4000",
                      "--set", "K=400", "--set", "rate_hz=10.0", "--duration-ms", "200"],
    # A tenth of the neurons and of the in-degrees: populations long enough for per-neuron costs
    # to be those of full scale, few enough synapses for callgrind.
    "microcircuit": ["--model", "microcircuit", "--set", "scale=0.1", "--set", "k_scale=0.1", "--duration-ms", "100"],
}
PHASES = ("deliver", "schedule", "update", "drive", "collocate", "run_steps", "build")
LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+\S*?ranvier::Engine::(\w+)\(")


def measure(name: str, args: list[str], workdir: Path) -> dict:
    """Runs one workload under callgrind and returns its counts per unit of work."""
    out_file, run_dir = workdir / f"{name}.callgrind", workdir / name
    # valgrind has no AVX-512: the counts are those of the AVX2 kernels (the engine picks them
    # itself under valgrind, whose CPU lacks AVX-512; RANVIER_SIMD says so explicitly).
    env = dict(os.environ, OMP_NUM_THREADS="1", RANVIER_SIMD="avx2")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", sys.executable, "-m", "ranvier",
           "run", *args, "--threads", "1", "--energy", "none", "--quiet", "--out", str(run_dir)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name}: the run under callgrind failed:\n{done.stderr[-3000:]}")
    annotate = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out_file)],
                              capture_output=True, text=True, check=True).stdout
    inclusive = {}
    for line in annotate.splitlines():
        m = LINE.match(line)
        if m and m.group(2) in PHASES and re.search(r"\.(cpp|hpp|h):ranvier::Engine::", line):
            # With debug information callgrind_annotate splits a function by source file and
            # lists OpenMP clones beside it: the sums below would count phases twice or in part.
            raise SystemExit(f"{name}: the engine under callgrind has debug information ({line.strip()[:120]}); "
                             "bench/instructions.py counts a build without it (the default: pip install, no NOSTRIP)")
        if m and m.group(2) in PHASES:
            inclusive[m.group(2)] = inclusive.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
    s = json.loads((run_dir / "summary.json").read_text())
    c = s["counters"]
    steps = round(s["duration_ms"] / s["resolution_ms"])
    recurrent, external = c["synaptic_events_recurrent"], c["synaptic_events_external"]

    def per(phase, unit):
        return inclusive[phase] / unit if phase in inclusive and unit else None

    return {
        "workload": name, "command": " ".join(["ranvier", "run", *args, "--threads", "1"]),
        "neurons": s["neurons"], "synapses": s["synapses"], "steps": steps,
        "events": {"recurrent": recurrent, "external": external, "scheduled": c["events_scheduled"]},
        "instructions": inclusive,
        "per_unit": {
            "deliver per recurrent event": per("deliver", recurrent),
            "schedule per scheduled event": per("schedule", c["events_scheduled"]),
            "update per neuron-step": per("update", s["neurons"] * steps),
            "drive per external event": per("drive", external),
            "drive per neuron-step": per("drive", s["neurons"] * steps),
            "run per synaptic event": per("run_steps", recurrent + external),
            "build per synapse": per("build", s["synapses"]),
        },
    }


def table(results: list[dict], reference: dict | None) -> str:
    lines = []
    for r in results:
        lines.append(f"{r['workload']}: {r['neurons']:,} neurons, {r['synapses']:,} synapses, {r['steps']} steps "
                     f"({r['command']})")
        ref = (reference or {}).get(r["workload"], {}).get("per_unit", {})
        for key, value in r["per_unit"].items():
            if value is None:
                continue
            text = f"  {key:<32}{value:10.2f} instructions"
            if ref.get(key):
                text += f"   reference {ref[key]:10.2f}   {100 * (value / ref[key] - 1):+6.1f} %"
            lines.append(text)
    return "\n".join(lines)


def regressions(results: list[dict], reference: dict, tolerance: float) -> list[str]:
    found = []
    for r in results:
        ref = reference.get(r["workload"], {}).get("per_unit", {})
        for key, value in r["per_unit"].items():
            if value is not None and ref.get(key) and value > ref[key] * (1 + tolerance):
                found.append(f"{r['workload']}: {key} {value:.2f} > {ref[key]:.2f} (+{100 * (value / ref[key] - 1):.1f} %)")
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of {list(WORKLOADS)}")
    ap.add_argument("--out", help="write the counts as JSON here")
    ap.add_argument("--compare", help="a JSON written by --out: report the change, exit 1 on a regression")
    ap.add_argument("--tolerance", type=float, default=0.02, help="allowed growth before a regression (0.02 = 2 %%)")
    a = ap.parse_args(argv)
    names = [w for w in a.workloads.split(",") if w]
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        ap.error(f"--workloads: unknown {unknown}; known: {list(WORKLOADS)}")
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        ap.error("valgrind is not installed (Debian: apt-get install valgrind)")
    reference = None
    if a.compare:
        reference = {r["workload"]: r for r in json.loads(Path(a.compare).read_text())["results"]}
    with tempfile.TemporaryDirectory() as tmp:
        results = [measure(name, WORKLOADS[name], Path(tmp)) for name in names]
    print(table(results, reference))
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps({"results": results}, indent=1) + "\n")
        print(f"written to {a.out}")
    if reference:
        found = regressions(results, reference, a.tolerance)
        for line in found:
            print(f"regression: {line}")
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
