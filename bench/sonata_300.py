"""The SONATA 300-neuron example (AllenInstitute/sonata, 300 nest:iaf_psc_alpha neurons driven
by 100 virtual nodes) on Ranvier, against the output NEST produced for it (BMTK PointNet, dt
0.001 ms), and against NEST 3.10 on this machine given the network Ranvier read (the `nest`
extra; skipped without it), at several resolutions; and Ranvier on 1 and 2 ranks.

    python bench/sonata_300.py [--data data/sonata/300_pointneurons] [--out DIR]

The example is the sonata-300 data set (docs/data.md); --data names another copy of it.

Prints one row per (simulator, dt): spikes, per-type rates and their ratio to the reference,
per-neuron rate correlation, reference spikes matched within 1 ms, wall seconds.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ranvier as rv
from ranvier import datasets
from ranvier.core.neurons import NEURON_MODELS
from ranvier.core.synapses import to_nest
from ranvier.io import sonata


def ranvier_run(config, dt, threads=2):
    net, info = sonata.load(config, dt_ms=dt)
    t0 = time.perf_counter()
    res = rv.Simulation(net, resolution_ms=dt, threads=threads).run(info.tstop_ms)
    wall = time.perf_counter() - t0
    ids, times = res.spikes
    return net, info, by_sonata(net, info, ids, times), wall


def by_sonata(net, info, ids, times):
    out = {}
    for p in net.populations:
        if p.name in info.virtual:
            continue
        mine = (ids >= p.first_id) & (ids < p.first_id + p.size)
        name, node_ids = info.populations[p.name]
        a, b = out.get(name, (np.zeros(0, np.int64), np.zeros(0)))
        out[name] = (np.concatenate([a, node_ids[ids[mine] - p.first_id]]), np.concatenate([b, times[mine]]))
    return out


def nest_run(net, info, dt, weights=False):
    """NEST 3.10 given the network Ranvier read: the same neurons, parameters, edges (each
    plastic projection's synapse kind as NEST's model: core.synapses.to_nest) and the spike
    trains on the same grid (spike_generator; parrot-free, as BMTK's PointNet). Returns
    (spikes, wall seconds) and, with weights=True, {projection index: (source gid, target gid,
    weight)} of the plastic projections at the end, in Ranvier's global ids."""
    import nest
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.resolution = dt
    nest.local_num_threads = 1
    nodes = {}
    for p in net.populations:
        if p.model == "spike_train":
            gens = nest.Create("spike_generator", p.size)
            for g, train in zip(gens, p.params["spike_times_ms"]):
                g.spike_times = list(train)
            nodes[p.name] = gens
        else:
            # the model's NEST counterpart, its parameters by NEST's names (NeuronModel.nest_parameters)
            model = NEURON_MODELS[p.model]
            params = {nest_key: p.params[key] for nest_key, key in model.nest_parameters.items() if key in p.params}
            nodes[p.name] = nest.Create(model.nest_model, p.size)
            for k, v in params.items():                   # one value, or one per neuron
                nodes[p.name].set({k: np.broadcast_to(np.asarray(v, float), (p.size,)).tolist()})
            nodes[p.name].set(tau_minus=p.tau_minus_ms)    # the STDP traces of its spikes
            if "tau_minus_triplet" in nodes[p.name][0].get():
                nodes[p.name].set(tau_minus_triplet=p.tau_minus_triplet_ms)
    connections = []
    for j, pr in enumerate(net.projections):
        src = np.asarray(nodes[pr.source].tolist())[np.asarray(pr.sources)]
        trg = np.asarray(nodes[pr.target].tolist())[np.asarray(pr.targets)]
        model, params = to_nest(pr.synapse)                # the synapse kind as NEST names it
        nest.Connect(src.tolist(), trg.tolist(), "one_to_one",
                     {"synapse_model": model, "weight": np.asarray(pr.weight, float),
                      "delay": np.asarray(pr.delay_ms, float), **params})
        if pr.synapse is not None:
            connections.append((j, pr, model))
    for c in net.currents:      # NEST's generator over a delay of one step: its times one step earlier
        pop = net.population(c.target)
        local = np.arange(pop.size) if c.neurons is None else np.asarray(c.neurons)
        gen = nest.Create("step_current_generator", params={
            "amplitude_times": (np.asarray(c.times_ms, float) - dt).tolist(),
            "amplitude_values": np.asarray(c.amplitudes_pA, float).tolist()})
        nest.Connect(gen, np.asarray(nodes[c.target].tolist())[local].tolist(), syn_spec={"delay": dt})
    rec = nest.Create("spike_recorder")
    neurons = [p.name for p in net.populations if p.name not in info.virtual]
    for name in neurons:
        nest.Connect(nodes[name], rec)
    t0 = time.perf_counter()
    nest.Simulate(info.tstop_ms)
    wall = time.perf_counter() - t0
    senders, times = rec.events["senders"], rec.events["times"]
    first = {name: nodes[name].tolist()[0] for name in neurons}
    ids = np.zeros(senders.size, np.int64)
    for p in net.populations:
        if p.name in first:
            mine = (senders >= first[p.name]) & (senders < first[p.name] + p.size)
            ids[mine] = senders[mine] - first[p.name] + p.first_id
    if not weights:
        return by_sonata(net, info, ids, times), wall
    plastic = {}
    for j, pr, model in connections:
        s_pop, t_pop = net.population(pr.source), net.population(pr.target)
        conns = nest.GetConnections(source=nodes[pr.source], target=nodes[pr.target], synapse_model=model)
        got = conns.get(["source", "target", "weight"])
        plastic[j] = (np.asarray(got["source"]) - nodes[pr.source].tolist()[0] + s_pop.first_id,
                      np.asarray(got["target"]) - nodes[pr.target].tolist()[0] + t_pop.first_id,
                      np.asarray(got["weight"], float))
    return by_sonata(net, info, ids, times), wall, plastic


def row(label, dt, ours, reference, net, info, wall):
    c = sonata.compare_spikes(ours, reference, tstop_ms=info.tstop_ms)
    per_type = {}
    for p in net.populations:
        if p.name in info.virtual:
            continue
        node_ids = info.populations[p.name][1]
        per_type[p.name] = (float(c["rates_hz"][node_ids].mean()), float(c["reference_rates_hz"][node_ids].mean()))
    return {"simulator": label, "dt_ms": dt, "spikes": c["spikes"], "reference_spikes": c["reference_spikes"],
            "rate_correlation": c["rate_correlation"], "matched_within_1ms": c["matched_fraction"],
            "per_type_hz": per_type, "wall_s": wall}


def identical(a, b, dt):
    """The same spikes: (node id, step) pairs equal, whatever their order in the arrays."""
    def pairs(ids, times):
        steps = np.rint(np.asarray(times) / dt).astype(np.int64)
        order = np.lexsort((ids, steps))
        return ids[order], steps[order]
    if a.keys() != b.keys():
        return False
    return all(all(np.array_equal(x, y) for x, y in zip(pairs(*a[k]), pairs(*b[k]))) for k in a)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="the example's folder (default: 300_pointneurons/ of the "
                                                 "sonata-300 data set, docs/data.md)")
    ap.add_argument("--dt", default="0.001,0.01,0.1", help="resolutions (ms), comma-separated")
    ap.add_argument("--out", default=None, help="write results.json and results.md here")
    args = ap.parse_args(argv)
    if args.data is None:
        if not datasets.present("sonata-300"):
            raise SystemExit(f"ranvier: error: {datasets.missing('sonata-300')}")
        args.data = datasets.folder("sonata-300") / "300_pointneurons"
    config = Path(args.data) / "simulation_config.json"
    reference = sonata.read_spikes(Path(args.data) / "output" / "spikes.h5")
    try:
        import nest  # noqa: F401
        have_nest = True
    except ImportError:
        have_nest = False
    rows, checks = [], {}
    for dt in [float(x) for x in args.dt.split(",")]:
        net, info, ours, wall = ranvier_run(config, dt)
        rows.append(row("ranvier (1 rank x 2 threads)", dt, ours, reference, net, info, wall))
        if have_nest:
            theirs, nwall = nest_run(net, info, dt)
            rows.append(row("nest 3.10 (same network)", dt, theirs, reference, net, info, nwall))
            checks[f"ranvier == nest 3.10 at dt {dt}"] = identical(ours, theirs, dt)
            c = sonata.compare_spikes(ours, theirs, tstop_ms=info.tstop_ms)
            checks[f"ranvier vs nest 3.10 at dt {dt}: matched within 1 ms"] = c["matched_fraction"]
        if dt == 0.1:       # 2 ranks: the same spikes as 1 rank
            with tempfile.TemporaryDirectory() as tmp:
                cmd = ["mpiexec", "-n", "2", sys.executable, "-m", "ranvier", "run", str(config), "--resolution-ms",
                       str(dt), "--threads", "1", "--exchange", "p2p", "--quiet", "--out", f"{tmp}/r2"]
                subprocess.run(cmd, check=True)
                two = sonata.read_spikes(Path(tmp) / "r2" / "sonata" / info.spikes_file)
            checks[f"ranvier 2 ranks == 1 rank at dt {dt}"] = identical(ours, two, dt)
    lines = ["| simulator | dt (ms) | spikes (reference 18,886) | per-type rate / reference | rate correlation | "
             "reference spikes within 1 ms | wall s |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        ratios = " ".join(f"{k.split('.')[-1]} {a / b:.3f}" for k, (a, b) in r["per_type_hz"].items())
        lines.append(f"| {r['simulator']} | {r['dt_ms']:g} | {r['spikes']:,} | {ratios} | {r['rate_correlation']:.5f} | "
                     f"{100 * r['matched_within_1ms']:.1f} % | {r['wall_s']:.2f} |")
    lines.append("")
    lines += [f"- {k}: {v if not isinstance(v, float) else f'{100 * v:.1f} %'}" for k, v in checks.items()]
    text = "\n".join(lines)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps({"rows": rows, "checks": checks}, indent=1, default=float))
        (out / "results.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
