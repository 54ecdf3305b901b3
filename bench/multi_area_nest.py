"""The scaled multi-area model in Ranvier and in NEST: per-population rates side by side.

Two modes (--connectivity):

- `same` (the default): both simulators run the very same synapses. Ranvier builds the scaled
  network (seed --network-seed) and exports every synapse it realised (Simulation.connections():
  global ids, weights in pA as stored, delays in ms); NEST gets them one to one
  (nest.Connect(sources, targets, "one_to_one", ...) with arrays), and Ranvier runs them as an
  explicit list (sources=/targets= projections). Both check after the build that they hold the
  same synapse count, weight sum and delay sum as the export. Only the external Poisson drive
  and the initial potentials then differ between runs: each --seeds entry is the seed of those
  (NEST's rng_seed, Ranvier's seed). The noise floor is seed 1 against seed 2 of each simulator
  on the same synapses.
- `law`: both get the same scaled network description (ranvier.models.multi_area: population sizes,
  fixed-total synapse numbers, weight and delay laws, external Poisson drive, DC compensation)
  and each draws its own realisation with its own generator (each --seeds entry is a network
  realisation), so the comparison also carries the quenched noise of different networks.

Rates per population over [transient, T), averaged over --seeds; for populations above 1 Hz the
relative deviation (within 10 %?), and, as the noise floor, how far two seeds of the same
simulator fall apart. NEST is built here from the Ranvier `Network` object itself, so the two
cannot drift apart.

    python bench/multi_area_nest.py --scale 0.01 --k-scale 0.1 --duration-ms 10000 --threads 2 \\
        --out results/multi-area-nest.json

The model's data is the multi-area-model data set (docs/data.md), or the folder --data names.

Needs the `nest` extra (pip install "nest-simulator>=3.10").
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def build_network(a):
    import ranvier as rv
    return rv.models.build("multi-area", data=a.data, scale=a.scale, k_scale=a.k_scale, state=a.state,
                           **({"areas": a.areas} if a.areas else {}),
                           inter_area_delay_min_ms=a.inter_area_delay_min_ms)


def export_synapses(a, path) -> dict:
    """Ranvier's realisation of the scaled network (seed a.network_seed): every synapse it built,
    written to `path` (.npz: global source and target ids, weights in pA as stored, delays in
    steps of a.resolution_ms). Returns the digest (synapses_digest) and the build time."""
    import ranvier as rv

    net = build_network(a)
    t0 = time.perf_counter()
    with rv.Simulation(net, resolution_ms=a.resolution_ms, threads=a.threads, seed=a.network_seed,
                       record_spikes=False) as sim:
        c = sim.connections()
    steps = np.rint(c.delay_ms / a.resolution_ms).astype(np.int32)
    np.savez(path, source=c.source.astype(np.int32), target=c.target.astype(np.int32), weight=c.weight,
             delay_steps=steps)
    return {"digest": synapses_digest(c.source, c.target, c.weight, steps), "build_s": time.perf_counter() - t0}


def load_synapses(path) -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in ("source", "target", "weight", "delay_steps")}


def synapses_digest(source, target, weight, delay_steps) -> dict:
    """Count, exact weight sum (math.fsum: the same multiset of weights gives the same sum in any
    order) and delay sum in steps, and a hash of the sorted synapses, which two simulators share
    only where they hold the very same synapses."""
    order = np.lexsort((weight, delay_steps, target, source))
    h = hashlib.sha256()
    for x, t in ((source, np.int64), (target, np.int64), (weight, np.float64), (delay_steps, np.int64)):
        h.update(np.ascontiguousarray(np.asarray(x)[order], dtype=t).tobytes())
    return {"synapses": int(len(source)), "weight_sum_pA": math.fsum(np.asarray(weight, dtype=np.float64)),
            "delay_sum_steps": int(np.sum(np.asarray(delay_steps, dtype=np.int64))), "sha256": h.hexdigest()}


def list_network(net, syn: dict, resolution_ms: float):
    """`net` with its synapses given as explicit lists (the exported ones): one sources=/targets=
    projection per pair of populations, weights and delays per entry; populations, drive and DC
    currents as in `net`."""
    import ranvier as rv

    out = rv.Network(name=net.name, parameters=dict(net.parameters))
    for pop in net.populations:
        out.add_population(rv.Population(pop.name, pop.size, dict(pop.params), model=pop.model,
                                         excitatory=pop.excitatory, area=pop.area))
    first = np.array([p.first_id for p in out.populations], dtype=np.int64)
    src, tgt = syn["source"].astype(np.int64), syn["target"].astype(np.int64)
    sp, tp = np.searchsorted(first, src, side="right") - 1, np.searchsorted(first, tgt, side="right") - 1
    key = tp * len(first) + sp
    order = np.argsort(key, kind="stable")
    bounds = np.flatnonzero(np.diff(key[order])) + 1
    for group in np.split(order, bounds) if order.size else []:
        s_pop, t_pop = out.populations[sp[group[0]]], out.populations[tp[group[0]]]
        out.connect(rv.Projection(source=s_pop.name, target=t_pop.name, sources=src[group] - s_pop.first_id,
                                  targets=tgt[group] - t_pop.first_id, weight=syn["weight"][group],
                                  delay_ms=syn["delay_steps"][group] * resolution_ms))
    for d in net.drives:
        out.drive(dataclasses.replace(d))
    for c in net.currents:
        out.inject(c)
    return out


def nest_network(a, net, syn: dict | None = None):
    """The network in NEST (iaf_psc_exp): with `syn`, exactly those synapses (one to one, in chunks);
    without, NEST's own realisation (fixed_total_number, redrawn normal weights and delays).
    Returns {population name: NodeCollection} and the NEST node id of every Ranvier global id."""
    import nest

    pops = {}
    for pop in net.populations:
        q = pop.params
        node = nest.Create("iaf_psc_exp", pop.size, params={
            "E_L": q["E_L_mV"], "V_th": q["V_th_mV"], "V_reset": q["V_reset_mV"], "C_m": q["C_m_pF"],
            "tau_m": q["tau_m_ms"], "tau_syn_ex": q["tau_syn_ms"], "tau_syn_in": q["tau_syn_ms"],
            "t_ref": q["tau_arp_ms"], "I_e": q["I_e_pA"]})
        node.V_m = nest.random.normal(mean=q["V0_mean_mV"], std=q["V0_sd_mV"])
        pops[pop.name] = node
    node_id = np.concatenate([np.asarray(pops[p.name].tolist(), dtype=np.int64) for p in net.populations])
    if syn is not None:
        n = len(syn["source"])
        for lo in range(0, n, CHUNK):
            hi = min(n, lo + CHUNK)
            nest.Connect(node_id[syn["source"][lo:hi]], node_id[syn["target"][lo:hi]], "one_to_one",
                         {"synapse_model": "static_synapse", "weight": syn["weight"][lo:hi].astype(np.float64),
                          "delay": syn["delay_steps"][lo:hi] * a.resolution_ms})
        return pops, node_id
    for pr in net.projections:
        normal = nest.random.normal(mean=pr.weight, std=pr.weight_sd)
        # The model's rule (NEST 3 nest.math.redraw): excitatory weights in [0, inf), inhibitory in (-inf, 0].
        weight = nest.math.redraw(normal, min=0.0, max=math.inf) if pr.weight > 0 else \
            nest.math.redraw(normal, min=-math.inf, max=0.0)
        delay = nest.math.redraw(nest.random.normal(mean=pr.delay_mean_ms, std=pr.delay_sd_ms),
                                 min=pr.delay_offset_ms, max=math.inf)
        nest.Connect(pops[pr.source], pops[pr.target],
                     {"rule": "fixed_total_number", "N": int(pr.total_synapses),
                      "allow_autapses": True, "allow_multapses": True},
                     {"synapse_model": "static_synapse", "weight": weight, "delay": delay})
    return pops, node_id


CHUNK = 4_000_000     # synapses per nest.Connect call of the one-to-one import


def nest_synapses(a, net, pops: dict, node_id, targets=None) -> dict:
    """The synapses NEST holds between the network's neurons (all, or those onto `targets`: global
    ids), in Ranvier's terms: global source and target ids, weights (pA), delays in steps. NEST
    reads a synapse's status as a dictionary (tens of microseconds each), so all of them is for
    small networks; a sample of targets is what a large one affords."""
    import nest

    gid = np.full(int(node_id.max()) + 1, -1, dtype=np.int64)
    gid[node_id] = np.arange(node_id.size)
    if targets is None:
        conns = nest.GetConnections(synapse_model="static_synapse")
    else:
        conns = nest.GetConnections(target=nest.NodeCollection(sorted(int(x) for x in node_id[np.asarray(targets)])),
                                    synapse_model="static_synapse")
    parts = []
    for lo in range(0, len(conns), 100_000):
        d = conns[lo:lo + 100_000].get(["source", "target", "weight", "delay"])
        parts.append((gid[np.asarray(d["source"], dtype=np.int64)], gid[np.asarray(d["target"], dtype=np.int64)],
                      np.asarray(d["weight"], dtype=np.float64),
                      np.rint(np.asarray(d["delay"], dtype=np.float64) / a.resolution_ms).astype(np.int64)))
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64))
    return {k: np.concatenate([p[i] for p in parts] or [empty[i]])
            for i, k in enumerate(("source", "target", "weight", "delay_steps"))}


def sample_targets(net) -> np.ndarray:
    """The neurons whose synapses the bench reads back from NEST: the first of every population."""
    return np.array([p.first_id for p in net.populations], dtype=np.int64)


def quiet(nest) -> None:
    if hasattr(nest, "VerbosityLevel"):          # NEST 3.10; set_verbosity before
        nest.verbosity = nest.VerbosityLevel.ERROR
    else:
        nest.set_verbosity("M_ERROR")


def nest_rates(a) -> dict:
    """Build the network in NEST (nest_network; with --synapses, the exported ones), one
    poisson_generator per population, and return rates, times and counts."""
    import nest

    net = build_network(a)
    syn = load_synapses(a.synapses) if a.synapses else None
    quiet(nest)
    nest.ResetKernel()
    nest.set(resolution=a.resolution_ms, local_num_threads=a.threads, rng_seed=a.seed, print_time=False)
    t0 = time.perf_counter()
    pops, node_id = nest_network(a, net, syn)
    synapses = nest.GetKernelStatus("num_connections")
    connect_s = time.perf_counter() - t0
    check = None
    if syn is not None:          # NEST must hold exactly the exported synapses
        t0c = time.perf_counter()
        targets = None if a.check_synapses == "all" else sample_targets(net)
        held = nest_synapses(a, net, pops, node_id, targets)
        mine = slice(None) if targets is None else np.isin(syn["target"], targets)
        check = {"targets": "all" if targets is None else f"the first neuron of each of the {len(targets)} populations",
                 "num_connections": int(synapses),
                 "held": synapses_digest(held["source"], held["target"], held["weight"], held["delay_steps"]),
                 "exported": synapses_digest(*(syn[k][mine] for k in ("source", "target", "weight", "delay_steps"))),
                 "seconds": time.perf_counter() - t0c}
        del held
    t0b = time.perf_counter()
    recorders = {}
    for d in net.drives:
        gen = nest.Create("poisson_generator", params={"rate": d.n_synapses * d.rate_hz})
        nest.Connect(gen, pops[d.target], "all_to_all", {"weight": d.weight, "delay": 1.0})
    for name, node in pops.items():
        rec = nest.Create("spike_recorder")
        nest.Connect(node, rec)
        recorders[name] = rec
    build_s = connect_s + time.perf_counter() - t0b
    t0 = time.perf_counter()
    nest.Simulate(a.duration_ms)
    sim_s = time.perf_counter() - t0
    window_s = (a.duration_ms - a.transient_ms) * 1e-3
    rates, counts = {}, {}
    for pop in net.populations:
        times = np.asarray(recorders[pop.name].get("events")["times"])
        counts[pop.name] = int(np.count_nonzero(times >= a.transient_ms))
        rates[pop.name] = counts[pop.name] / pop.size / window_s
    return {"simulator": f"NEST {nest.__version__}", "rates_hz": rates, "spike_counts": counts,
            "synapses": int(synapses), "check": check,
            "build_s": build_s, "simulate_s": sim_s, "real_time_factor": sim_s / (a.duration_ms * 1e-3)}


def ranvier_rates(a) -> dict:
    """Ranvier's run: the law-based network (seed = the realisation), or with --synapses the
    exported synapses as explicit lists (seed = the drive and initial potentials only); then
    Ranvier must hold exactly the exported synapses."""
    import ranvier as rv

    net = build_network(a)
    if a.synapses:
        net = list_network(net, load_synapses(a.synapses), a.resolution_ms)
    t0 = time.perf_counter()
    sim = rv.Simulation(net, resolution_ms=a.resolution_ms, threads=a.threads, seed=a.seed)
    build_s = time.perf_counter() - t0
    digest = None
    if a.synapses:
        c = sim.connections()
        digest = synapses_digest(c.source, c.target, c.weight, np.rint(c.delay_ms / a.resolution_ms).astype(np.int64))
        del c
    result = sim.run(a.duration_ms)
    rates = result.rates(a.transient_ms)
    window_s = (a.duration_ms - a.transient_ms) * 1e-3
    counts = {p.name: int(round(rates[p.name] * p.size * window_s)) for p in net.populations}
    return {"simulator": f"Ranvier {rv.__version__}", "rates_hz": rates, "spike_counts": counts,
            "synapses": digest["synapses"] if digest else int(sum(p.total_synapses for p in net.projections)),
            "digest": digest, "build_s": build_s, "simulate_s": result.simulate_seconds,
            "real_time_factor": result.real_time_factor, "peak_rss_bytes": result.peak_rss_bytes}


def _children(kind: str, a, seeds: list[int], parallel: bool = False) -> list[dict]:
    """Each simulator in its own process (NEST and Ranvier both own OpenMP and large heaps); with
    `parallel`, one process per seed at once."""
    outs = [Path(a.out).with_suffix(f".{kind}-{seed}.json") for seed in seeds]
    argvs = [[sys.executable, __file__, "--child", kind, "--child-out", str(out)] + _forward(a) + ["--seed", str(seed)]
             for seed, out in zip(seeds, outs)]
    if parallel:
        procs = [subprocess.Popen(argv) for argv in argvs]
        codes = [proc.wait() for proc in procs]
        if any(codes):
            raise SystemExit(f"ranvier: error: a {kind} run failed (exit codes {codes})")
    else:
        for argv in argvs:
            subprocess.run(argv, check=True)
    return [json.loads(out.read_text()) for out in outs]     # removed once --out is written


def _mean_rates(runs: list[dict]) -> dict:
    names = list(runs[0]["rates_hz"])
    return {"rates_hz": {n: float(np.mean([r["rates_hz"][n] for r in runs])) for n in names},
            "spike_counts": {n: sum(r["spike_counts"][n] for r in runs) for n in names}}


def _forward(a) -> list[str]:
    args = [*(["--data", a.data] if a.data else []), "--scale", str(a.scale), "--k-scale", str(a.k_scale), "--state", a.state,
            "--duration-ms", str(a.duration_ms), "--transient-ms", str(a.transient_ms),
            "--threads", str(a.threads), "--resolution-ms", str(a.resolution_ms),
            "--inter-area-delay-min-ms", str(a.inter_area_delay_min_ms), "--out", a.out,
            "--network-seed", str(a.network_seed)]
    if a.areas:
        args += ["--areas", *a.areas]
    if a.synapses:
        args += ["--synapses", a.synapses, "--check-synapses", a.check_synapses]
    return args


def compare(ours: dict, nest_: dict, threshold_hz: float = 1.0, tolerance: float = 0.10) -> dict:
    """Populations above threshold_hz in `nest_`: how many within `tolerance` of it, and the relative
    deviation (ours - nest) / nest over them (mean, sd, median); the correlation over all."""
    names = list(nest_["rates_hz"])
    rows, devs, noise = [], [], []
    for name in names:
        r, n = ours["rates_hz"][name], nest_["rates_hz"][name]
        dev = (r - n) / n if n > 0 else None
        if n > threshold_hz:
            devs.append(dev)
            # the relative sd of (ours - nest) / nest from counting alone (Poisson spike counts)
            counts = ours["spike_counts"][name], nest_["spike_counts"][name]
            noise.append(math.sqrt(sum(1 / max(x, 1) for x in counts)))
        rows.append((name, r, n, dev))
    d, sd = np.array(devs), np.array(noise)
    x = np.array([ours["rates_hz"][k] for k in names])
    y = np.array([nest_["rates_hz"][k] for k in names])
    return {"populations": len(names), "above_threshold": int(d.size),
            "within_tolerance": int(np.count_nonzero(np.abs(d) <= tolerance)),
            "tolerance": tolerance, "threshold_hz": threshold_hz,
            "correlation": float(np.corrcoef(x, y)[0, 1]) if len(names) > 1 else None,
            "deviation_mean": float(d.mean()) if d.size else None,
            "deviation_sd": float(d.std(ddof=1)) if d.size > 1 else None,
            "deviation_median": float(np.median(d)) if d.size else None,
            # counting noise: how many have a Poisson sd above tolerance / 2, and the sd of deviation / that sd
            "counting_sd_above_half_tolerance": int(np.count_nonzero(sd > tolerance / 2)),
            "deviation_over_counting_sd_sd": float((d / sd).std(ddof=1)) if d.size > 1 else None,
            "mean_rate_ours_hz": float(x.mean()), "mean_rate_nest_hz": float(y.mean()), "rows": rows}


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:+.1f} %"


def _summary_line(label: str, f: dict) -> str:
    return (f"  {label}: of {f['above_threshold']} populations above {f['threshold_hz']:g} Hz, "
            f"{f['within_tolerance']} within {100 * f['tolerance']:.0f} %; deviation mean {_pct(f['deviation_mean'])}, "
            f"sd {100 * (f['deviation_sd'] or 0):.1f} %; correlation {f['correlation']:.4f}; counting noise: "
            f"{f['counting_sd_above_half_tolerance']} with a Poisson sd above {50 * f['tolerance']:.0f} %, "
            f"sd of deviation / Poisson sd {f['deviation_over_counting_sd_sd'] or 0:.2f}")


def _check_digest(label: str, digest: dict, exported: dict) -> None:
    print(f"  {label}: {digest['synapses']:,} synapses, weight sum {digest['weight_sum_pA']:.6f} pA, "
          f"delay sum {digest['delay_sum_steps']:,} steps, sorted synapses sha256 {digest['sha256'][:16]}")
    if digest != exported:
        raise SystemExit(f"ranvier: error: {label} does not hold the exported synapses "
                         f"({digest} against {exported})")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="the folder with structure.npz (default: the multi-area-model "
                                                 "data set, docs/data.md)")
    ap.add_argument("--scale", type=float, default=0.01)
    ap.add_argument("--k-scale", type=float, default=0.01)
    ap.add_argument("--state", default="ground")
    ap.add_argument("--areas", nargs="*")
    ap.add_argument("--inter-area-delay-min-ms", type=float, default=0.1)
    ap.add_argument("--duration-ms", type=float, default=10000.0)
    ap.add_argument("--transient-ms", type=float, default=500.0)
    ap.add_argument("--resolution-ms", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--connectivity", choices=("same", "law"), default="same",
                    help="same: NEST and Ranvier run the synapses Ranvier realised (seed --network-seed), the seeds "
                         "vary only the drive and initial potentials; law: each simulator draws its own network "
                         "from the description, one realisation per seed")
    ap.add_argument("--network-seed", type=int, default=1, help="(same) the seed of the realisation both run")
    ap.add_argument("--seed", type=int, default=1, help="(the children's seed)")
    ap.add_argument("--seeds", default="1,2", help="seeds per simulator (same: of the drive and initial potentials; "
                    "law: network realisations); with two or more, the seed-1-against-seed-2 deviation of each "
                    "simulator is printed as the noise floor")
    ap.add_argument("--report", metavar="JSON", help="print the comparison of a saved run (its --out) again")
    ap.add_argument("--parallel", action="store_true", help="run the seeds of each simulator at once")
    ap.add_argument("--out", default="results/multi-area-nest.json")
    ap.add_argument("--child", choices=("nest", "ranvier", "export"))
    ap.add_argument("--child-out")
    ap.add_argument("--check-synapses", choices=("sample", "all"), default="sample",
                    help="(same) which of NEST's synapses are read back and compared with the export besides "
                         "their count: those onto the first neuron of each population, or all (slow: NEST reads "
                         "a synapse's status in tens of microseconds)")
    ap.add_argument("--synapses", help="(children) the exported synapses (.npz) to run")
    return ap


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    if a.report:
        report(json.loads(Path(a.report).read_text()))
        return 0
    if a.child:
        if a.child == "export":
            result = export_synapses(a, a.synapses)
        else:
            result = nest_rates(a) if a.child == "nest" else ranvier_rates(a)
        Path(a.child_out).write_text(json.dumps(result))
        return 0
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    seeds = [int(x) for x in a.seeds.split(",")]
    wall = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=Path(a.out).parent, prefix=".synapses-") as tmp:
        exported = None
        if a.connectivity == "same":
            a.synapses = str(Path(tmp) / "synapses.npz")
            exported = _children("export", a, [a.network_seed])[0]
        ours_runs = _children("ranvier", a, seeds, a.parallel)
        theirs_runs = _children("nest", a, seeds, a.parallel)
    record = {"args": vars(a), "exported": exported, "ranvier": ours_runs, "nest": theirs_runs,
              "wall_s": time.perf_counter() - wall}
    report(record)
    Path(a.out).write_text(json.dumps(record, indent=1))
    for kind, runs in (("export", [a.network_seed] if exported else []), ("ranvier", seeds), ("nest", seeds)):
        for seed in runs:
            Path(a.out).with_suffix(f".{kind}-{seed}.json").unlink(missing_ok=True)
    return 0


def report(record: dict) -> dict:
    """Prints the comparison of a run (the record main() writes to --out; --report PATH prints a
    saved one again) and adds "comparison", "floors" and "rows" to the record."""
    a = argparse.Namespace(**record["args"])
    exported, ours_runs, theirs_runs = record["exported"], record["ranvier"], record["nest"]
    seeds = [int(x) for x in a.seeds.split(",")]
    ours, theirs = {**ours_runs[0], **_mean_rates(ours_runs)}, {**theirs_runs[0], **_mean_rates(theirs_runs)}
    c = compare(ours, theirs)
    floors = {}
    if len(seeds) > 1:     # the same simulator, two seeds: how far apart any two runs fall
        for label, runs in (("Ranvier", ours_runs), ("NEST", theirs_runs)):
            f = compare(runs[0], runs[1])
            floors[label] = {k: v for k, v in f.items() if k != "rows"}
        cross = compare(ours_runs[0], theirs_runs[0])
        floors["Ranvier vs NEST, one seed each"] = {k: v for k, v in cross.items() if k != "rows"}
    what = (f"the synapses of Ranvier's realisation (seed {a.network_seed}) in both, seeds {a.seeds} of the drive "
            f"and initial potentials" if exported else f"each simulator's own realisations, seeds {a.seeds}")
    print(f"multi-area, {a.state} state, scale {a.scale:g}, k_scale {a.k_scale:g}: "
          f"{c['populations']} populations, {ours['synapses']:,} synapses, {a.duration_ms:g} ms "
          f"(rates over [{a.transient_ms:g}, {a.duration_ms:g}) ms), {a.threads} threads; {what}")
    if exported:
        _check_digest("exported by Ranvier", exported["digest"], exported["digest"])
        for seed, r in zip(seeds, ours_runs):
            _check_digest(f"Ranvier seed {seed} holds", r["digest"], exported["digest"])
        for seed, r in zip(seeds, theirs_runs):
            c_ = r["check"]
            if c_["num_connections"] != exported["digest"]["synapses"]:
                raise SystemExit(f"ranvier: error: NEST seed {seed} holds {c_['num_connections']:,} synapses, "
                                 f"not the {exported['digest']['synapses']:,} exported")
            print(f"  NEST seed {seed} holds {c_['num_connections']:,} synapses; read back onto {c_['targets']} "
                  f"({c_['seconds']:.0f} s):")
            _check_digest("    exported onto them", c_["exported"], c_["exported"])
            _check_digest(f"    NEST holds onto them", c_["held"], c_["exported"])
    print(f"{'population':>12} {'Ranvier Hz':>11} {'NEST Hz':>9} {'deviation':>10} {'NEST spikes':>12}")
    for name, r, n, dev in c["rows"]:
        mark = "" if n <= c["threshold_hz"] or abs(dev) <= c["tolerance"] else "  *"
        spikes = sum(t["spike_counts"][name] for t in theirs_runs)
        print(f"{name:>12} {r:11.3f} {n:9.3f} {_pct(dev):>10} {spikes:12d}{mark}")
    print(f"populations above {c['threshold_hz']:g} Hz in NEST: {c['above_threshold']}; within "
          f"{100 * c['tolerance']:.0f} %: {c['within_tolerance']} (* outside)")
    print(_summary_line(f"Ranvier (mean of {len(seeds)}) vs NEST (mean of {len(seeds)})", c))
    for label, f in floors.items():
        print(_summary_line(label + (f" seed {seeds[0]} vs seed {seeds[1]}" if "vs" not in label else ""), f))
    print(f"mean rate: Ranvier {c['mean_rate_ours_hz']:.3f} Hz, NEST {c['mean_rate_nest_hz']:.3f} Hz; "
          f"correlation over populations {c['correlation']:.4f}")
    print(f"simulate: Ranvier {ours['simulate_s']:.1f} s (RTF {ours['real_time_factor']:.2f}), "
          f"NEST {theirs['simulate_s']:.1f} s (RTF {theirs['real_time_factor']:.2f}); build "
          f"{ours['build_s']:.1f} s vs {theirs['build_s']:.1f} s; wall {record.get('wall_s', math.nan):.0f} s")
    record.update(floors=floors, comparison={k: v for k, v in c.items() if k != "rows"}, rows=c["rows"])
    return record


if __name__ == "__main__":
    sys.exit(main())
