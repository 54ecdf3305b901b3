"""How long PyNN's reads take on pyNN.ranvier and pyNN.nest, on the Vogels-Abbott CUBA network
(4,000 IF_curr_exp cells, 2 % connection probability, 1 s): Projection.size() of its four
projections, Projection.get(format="array" and "list") of the largest, Population.get_data()
of the excitatory cells' spikes. Each simulator in its own process, one after the other.

    python bench/pynn_reads.py [--skip-nest]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r'''
import importlib, json, sys, time
import numpy as np
sim = importlib.import_module("pyNN." + sys.argv[1])
from pyNN.random import NumpyRNG, RandomDistribution
sim.setup(timestep=0.1, min_delay=0.1, max_delay=10.0)
rng = NumpyRNG(seed=1)
cell = sim.IF_curr_exp(tau_m=20, v_thresh=-50, v_reset=-60, v_rest=-49, cm=0.2, tau_syn_E=5, tau_syn_I=10,
                       tau_refrac=5, i_offset=0)
exc, inh = sim.Population(3200, cell), sim.Population(800, cell)
for p in (exc, inh):
    p.initialize(v=RandomDistribution("uniform", (-60, -50), rng=rng))
conn = sim.FixedProbabilityConnector(0.02, rng=rng)
prs = [sim.Projection(a, b, conn, sim.StaticSynapse(weight=w, delay=0.2), receptor_type=r)
       for a, w, r in ((exc, 0.27 * 0.001 * 60, "excitatory"), (inh, -4.5 * 0.001 * 20, "inhibitory"))
       for b in (exc, inh)]
exc.record("spikes")
inh.record("spikes")
out = {}
def timed(name, f):
    t = time.perf_counter(); value = f(); out[name] = time.perf_counter() - t; return value
timed("run_s", lambda: sim.run(1000.0))
out["synapses"] = timed("size_s", lambda: sum(p.size() for p in prs))
timed("get_array_s", lambda: prs[0].get("weight", format="array"))
timed("get_list_s", lambda: prs[0].get(["weight", "delay"], format="list"))
data = timed("get_data_s", lambda: exc.get_data("spikes"))
out["spikes"] = sum(len(s) for s in data.segments[0].spiketrains)
sim.end()
print("RESULT " + json.dumps(out))
'''


def measure(simulator: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, simulator], capture_output=True, text=True, timeout=900)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"pyNN.{simulator} failed:\n{done.stderr[-2000:]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-nest", action="store_true", help="pyNN.ranvier only")
    args = ap.parse_args(argv)
    sims = ["ranvier"] + ([] if args.skip_nest else ["nest"])
    results = {s: measure(s) for s in sims}
    rows = [("run(1000 ms)", "run_s"), ("size() of 4 projections", "size_s"), ("get(array) of E->E", "get_array_s"),
            ("get(list) of E->E", "get_list_s"), ("get_data() of E spikes", "get_data_s")]
    print(f"{'read':28s}" + "".join(f"{'pyNN.' + s + ' (s)':>20s}" for s in sims) +
          (f"{'nest / ranvier':>16s}" if len(sims) == 2 else ""))
    for label, key in rows:
        line = f"{label:28s}" + "".join(f"{results[s][key]:20.3f}" for s in sims)
        if len(sims) == 2:
            line += f"{results['nest'][key] / max(results['ranvier'][key], 1e-9):16.1f}"
        print(line)
    print("synapses: " + ", ".join(f"{s} {results[s]['synapses']}" for s in sims) +
          "; E spikes: " + ", ".join(f"{s} {results[s]['spikes']}" for s in sims))
    return 0


if __name__ == "__main__":
    sys.exit(main())
