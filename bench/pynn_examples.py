"""PyNN 0.13.0's own examples (the `examples/` folder of its source distribution) on pyNN.nest and
pyNN.ranvier, each run unchanged as a user runs it (`python EXAMPLE.py nest`, `python EXAMPLE.py
ranvier`), with the spikes its recorded populations hold at `end()` on each backend.

    python bench/pynn_examples.py --out results/pynn-examples.md
    python bench/pynn_examples.py --only brunel.py,tsodyksmarkram.py

Each run has its own scratch folder (the examples write figures and data files), no display
(MPLBACKEND=Agg) and a time limit. A run that ends with an exception is listed with its last
line. The examples are downloaded once with PyNN's source distribution
(bench/pynn_scenarios.py's cache; or RANVIER_PYNN_SDIST names an unpacked one). Needs the nest extra for the NEST column.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pynn_scenarios  # noqa: E402  (the source distribution's download and cache)

# Arguments an example needs besides the simulator (its argparse asks for them).
ARGUMENTS = {"VAbenchmarks.py": ["CUBA"]}
# Counts the spikes every recorder holds when the script calls end(), then ends as it would.
WRAPPER = r"""
import importlib, json, runpy, sys
path, backend, out = sys.argv[1], sys.argv[2], sys.argv[3]
sim = importlib.import_module("pyNN." + backend)
original_end = sim.end
counted = {"spikes": 0, "ended": False}

def end(*args, **kwargs):
    for recorder in list(getattr(sim.simulator.state, "recorders", ())):
        if any(getattr(v, "name", v) == "spikes" and ids for v, ids in recorder.recorded.items()):
            block = recorder.get(["spikes"], gather=True)
            counted["spikes"] += sum(len(t) for seg in block.segments for t in seg.spiketrains)
    counted["ended"] = True
    return original_end(*args, **kwargs)

sim.end = end
sys.argv = [path, backend, *sys.argv[4:]]
try:
    runpy.run_path(path, run_name="__main__")
finally:
    with open(out, "w") as f:
        json.dump(counted, f)
"""


def run_example(path: Path, backend: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "counted.json"
        (Path(scratch) / "Results").mkdir()          # where most examples write, expecting it to exist
        env = dict(os.environ, MPLBACKEND="Agg")
        cmd = [sys.executable, "-c", WRAPPER, str(path), backend, str(out), *ARGUMENTS.get(path.name, [])]
        t0 = time.perf_counter()
        try:
            done = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": f"over {timeout:g} s", "seconds": timeout, "spikes": None}
        seconds = time.perf_counter() - t0
        counted = json.loads(out.read_text()) if out.exists() else {"spikes": None}
        if done.returncode != 0:
            lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
            return {"status": "error: " + (lines[-1][:100] if lines else f"status {done.returncode}"),
                    "seconds": seconds, "spikes": counted.get("spikes")}
        return {"status": "runs", "seconds": seconds, "spikes": counted["spikes"]}


def table(results: dict) -> str:
    lines = ["| example | pyNN.nest | pyNN.ranvier | spikes (nest / ranvier) | wall s (nest / ranvier) |",
             "|---|---|---|---|---|"]
    for name, r in results.items():
        n, v = r["nest"], r["ranvier"]
        spikes = f"{n['spikes'] if n['spikes'] is not None else '-'} / {v['spikes'] if v['spikes'] is not None else '-'}"
        lines.append(f"| {name} | {n['status']} | {v['status']} | {spikes} | {n['seconds']:.1f} / {v['seconds']:.1f} |")
    both = sum(r["nest"]["status"] == r["ranvier"]["status"] == "runs" for r in results.values())
    on_nest = sum(r["nest"]["status"] == "runs" for r in results.values())
    lines.append("")
    lines.append(f"{both} of the {on_nest} examples that run on pyNN.nest run on pyNN.ranvier "
                 f"({len(results)} examples).")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="write the table here (Markdown)")
    ap.add_argument("--only", default=None, help="comma-separated example files")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run (default 300)")
    args = ap.parse_args(argv)
    examples = sorted(pynn_scenarios.examples_dir().glob("*.py"))
    if args.only:
        wanted = set(args.only.split(","))
        examples = [p for p in examples if p.name in wanted]
    results = {}
    for path in examples:
        results[path.name] = {backend: run_example(path, backend, args.timeout) for backend in ("nest", "ranvier")}
        print(f"{path.name}: nest {results[path.name]['nest']['status'][:60]}, "
              f"ranvier {results[path.name]['ranvier']['status'][:60]}", flush=True)
    text = table(results)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
