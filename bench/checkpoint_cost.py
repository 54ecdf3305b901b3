"""What a checkpoint costs: seconds to save and to take up, bytes per neuron and per plastic
synapse, for full-size workloads; and that the resumed run goes on with the same spikes.

    python bench/checkpoint_cost.py dpsnn dpsnn-stdp microcircuit [--run-ms 200] [--after-ms 100]
        [--threads 2] [--folder /tmp/ranvier-checkpoint-cost] [--json FILE]

For each workload: build, run --run-ms, save (timed), run on --after-ms (the reference spikes);
then Simulation.resume (the build and the restore timed apart), run the same --after-ms, and
compare the spikes. The checkpoint folder is removed afterwards.
"""
from __future__ import annotations

import argparse
import gc
import json
import shutil
import time
from pathlib import Path

import numpy as np

import ranvier as rv
from ranvier.io import checkpoint

WORKLOADS = {
    "dpsnn": lambda: rv.models.dpsnn(neurons=20480),
    "dpsnn-stdp": lambda: rv.models.dpsnn(neurons=20480, plasticity="stdp"),
    "microcircuit": lambda: rv.models.build("microcircuit"),
}


def plastic_synapses(sim) -> int:
    return sum(int(np.asarray(sim._engine.plastic_weights(j)[0]).size)
               for j, pr in enumerate(sim.network.projections) if pr.synapse is not None)


def measure(name: str, run_ms: float, after_ms: float, threads: int, folder: Path) -> dict:
    path = folder / name
    shutil.rmtree(path, ignore_errors=True)
    sim = rv.Simulation(WORKLOADS[name](), threads=threads)
    neurons, synapses = sim.network.size, sim._engine.synapse_count()
    plastic = plastic_synapses(sim)
    build_s = sim.build_seconds
    sim.run(run_ms)
    t0 = time.perf_counter()
    sim.save(path)
    save_s = time.perf_counter() - t0
    files = {f.name: f.stat().st_size for f in path.iterdir()}
    ids, steps = sim.run(after_ms).spikes
    reference = (ids.copy(), steps.copy())
    del sim
    gc.collect()
    t0 = time.perf_counter()
    ck = checkpoint.Checkpoint(checkpoint.newest(path))
    resumed = rv.Simulation(ck.network(), threads=threads, seed=ck.meta["seed"],
                            resolution_ms=ck.meta["resolution_ms"])
    rebuild_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    checkpoint.restore(resumed, ck)
    restore_s = time.perf_counter() - t0
    ids, steps = resumed.run(after_ms).spikes
    same = bool(np.array_equal(ids, reference[0]) and np.array_equal(steps, reference[1]))
    del resumed
    shutil.rmtree(path, ignore_errors=True)
    total = sum(files.values())
    state = files["state.npz"]
    return {"workload": name, "neurons": neurons, "synapses": int(synapses), "plastic_synapses": plastic,
            "threads": threads, "run_ms": run_ms, "build_s": build_s, "save_s": save_s,
            "rebuild_s": rebuild_s, "restore_s": restore_s, "bytes": total, "files": files,
            "bytes_per_neuron": total / neurons,
            "bytes_per_plastic_synapse": (state / plastic) if plastic else None,
            "same_spikes_after": same, "spikes_after": int(reference[0].size)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="+", choices=sorted(WORKLOADS))
    ap.add_argument("--run-ms", type=float, default=200.0)
    ap.add_argument("--after-ms", type=float, default=100.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--folder", default="/tmp/ranvier-checkpoint-cost")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    folder = Path(a.folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'workload':<14}{'neurons':>9}{'synapses':>13}{'plastic':>12}{'save s':>8}{'rebuild s':>10}"
          f"{'restore s':>10}{'MB':>8}{'B/neuron':>10}{'B/plastic syn':>14}  same spikes after")
    for name in a.workloads:
        r = measure(name, a.run_ms, a.after_ms, a.threads, folder)
        rows.append(r)
        per_syn = f"{r['bytes_per_plastic_synapse']:.1f}" if r["bytes_per_plastic_synapse"] else "-"
        print(f"{name:<14}{r['neurons']:>9,}{r['synapses']:>13,}{r['plastic_synapses']:>12,}{r['save_s']:>8.2f}"
              f"{r['rebuild_s']:>10.2f}{r['restore_s']:>10.2f}{r['bytes'] / 1e6:>8.1f}{r['bytes_per_neuron']:>10.1f}"
              f"{per_syn:>14}  {r['same_spikes_after']} ({r['spikes_after']:,} spikes)", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["same_spikes_after"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
