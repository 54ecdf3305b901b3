"""Every neuron and synapse model of NESTML's own library (the models/neurons and
models/synapses folders that nestml 9.0.0 installs) through Ranvier's NESTML target: "runs", or
the construct or error that stops it. A neuron model runs for 100 ms as one population of 10
neurons with a DC current of 500 pA where the model takes one; a synapse model joins 20 spike
trains at 20 Hz onto 20 lifca neurons driven to fire, one synapse each, for 500 ms (and how many
of its weights changed).

Usage:
    python bench/nestml_library.py                 # the tables
    python bench/nestml_library.py --only iaf_psc_exp_neuron stdp_synapse
Each model runs in its own process (NESTML's front end keeps state between models). Needs
nestml (pip install "ranvier[nestml]") and a C++ compiler.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ONE = r"""
import sys
import ranvier as rv
from ranvier.errors import ConfigError
try:
    m = rv.nestml.neuron_model(sys.argv[1])
    net = rv.Network(name="library")
    net.add_population(rv.Population("n", 10, {}, model=m))
    if m.takes_current:
        net.inject(rv.DCCurrent("n", 500.0))
    res = rv.Simulation(net, threads=1, seed=1, resolution_ms=0.1).run(100.0)
    print("RESULT runs (%d spikes)" % len(res.spike_ids))
except ConfigError as e:
    text = str(e)
    if text.startswith(sys.argv[1] + ":"):
        text = "line " + text[len(sys.argv[1]) + 1:]
    print("RESULT " + text.replace(sys.argv[1], "the file"))
except Exception as e:
    print("RESULT error: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:160] if str(e) else ""))
"""

SYNAPSE = r"""
import sys
import numpy as np
import ranvier as rv
from ranvier.errors import ConfigError
try:
    kind = rv.nestml.synapse_model(sys.argv[1])
    n = 20
    net = rv.Network(name="library")
    trains = [list(np.arange(5.0 + k, 500.0, 50.0)) for k in range(n)]
    net.add_population(rv.Population("pre", n, {"spike_times_ms": trains}, model="spike_train"))
    net.add_population(rv.Population("post", n, {"dc_mV_per_ms": 2.0}))
    net.connect(rv.Projection(source="pre", target="post", sources=np.arange(n), targets=np.arange(n),
                              weight=1.0, delay_ms=1.0, synapse=kind()))
    sim = rv.Simulation(net, threads=1, seed=1, resolution_ms=0.1)
    sim.run(500.0)
    w = sim.weights("pre", "post").weight
    print("RESULT runs (%d of %d weights changed)" % (int(np.count_nonzero(w != 1.0)), n))
except ConfigError as e:
    text = str(e)
    if text.startswith(sys.argv[1] + ":"):
        text = "line " + text[len(sys.argv[1]) + 1:]
    print("RESULT " + text.replace(sys.argv[1], "the file"))
except Exception as e:
    print("RESULT error: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:160] if str(e) else ""))
"""


def models_dir(kind: str = "neurons") -> Path:
    for base in (Path(sys.prefix), Path(sys.base_prefix)):
        if (base / "models" / kind).is_dir():
            return base / "models" / kind
    raise SystemExit(f"nestml's models/{kind} folder is not found: pip install 'ranvier[nestml]'")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="model names (file names without .nestml)")
    args = ap.parse_args()
    for kind, script in (("neurons", ONE), ("synapses", SYNAPSE)):
        files = sorted(models_dir(kind).glob("*.nestml"))
        if args.only:
            files = [f for f in files if f.stem in args.only]
        if not files:
            continue
        runs = 0
        width = max(len(f.stem) for f in files)
        for f in files:
            out = subprocess.run([sys.executable, "-c", script, str(f)], capture_output=True, text=True, timeout=900)
            line = next((l[7:] for l in out.stdout.splitlines() if l.startswith("RESULT ")), None)
            if line is None:
                line = "error: " + (out.stderr.strip().splitlines() or ["no output"])[-1][:160]
            runs += line.startswith("runs")
            print(f"{f.stem:<{width}}  {line}", flush=True)
        print(f"{runs} of {len(files)} {kind[:-1]} models run\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
