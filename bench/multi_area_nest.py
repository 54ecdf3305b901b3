"""The scaled multi-area model in Ranvier and in NEST: per-population rates side by side.

Both simulators get the same scaled network description (ranvier.multi_area: population sizes,
fixed-total synapse numbers, weight and delay laws, external Poisson drive, DC compensation);
each draws its own realisation with its own generator, so the comparison is statistical:
per-population rates over [transient, T), averaged over --seeds realisations, for populations
above 1 Hz the relative deviation; and, as the noise floor, how far two realisations of the same
simulator fall apart.
NEST is built here from the Ranvier `Network` object itself, so the two cannot drift apart.

    python bench/multi_area_nest.py --data ../shared/data/multi-area-model --scale 0.01 --k-scale 0.01 \\
        --duration-ms 10000 --out results/multi-area-nest.json

Needs the `nest` extra (pip install "nest-simulator>=3.10").
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def build_network(a):
    import ranvier as rv
    return rv.models.build("multi-area", data=a.data, scale=a.scale, k_scale=a.k_scale, state=a.state,
                           **({"areas": a.areas} if a.areas else {}),
                           inter_area_delay_min_ms=a.inter_area_delay_min_ms)


def nest_rates(a) -> dict:
    """Build the same network in NEST (iaf_psc_exp, fixed_total_number, redrawn normal weights and
    delays, one poisson_generator per population) and return rates, times and counts."""
    import nest

    net = build_network(a)
    h = a.resolution_ms
    nest.set_verbosity("M_ERROR")
    nest.ResetKernel()
    nest.set(resolution=h, local_num_threads=a.threads, rng_seed=a.seed, print_time=False)
    t0 = time.perf_counter()
    pops = {}
    for pop in net.populations:
        q = pop.params
        node = nest.Create("iaf_psc_exp", pop.size, params={
            "E_L": q["E_L_mV"], "V_th": q["V_th_mV"], "V_reset": q["V_reset_mV"], "C_m": q["C_m_pF"],
            "tau_m": q["tau_m_ms"], "tau_syn_ex": q["tau_syn_ms"], "tau_syn_in": q["tau_syn_ms"],
            "t_ref": q["tau_arp_ms"], "I_e": q["I_e_pA"]})
        node.V_m = nest.random.normal(mean=q["V0_mean_mV"], std=q["V0_sd_mV"])
        pops[pop.name] = node
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
    synapses = nest.GetKernelStatus("num_connections")
    recorders = {}
    for d in net.drives:
        gen = nest.Create("poisson_generator", params={"rate": d.n_synapses * d.rate_hz})
        nest.Connect(gen, pops[d.target], "all_to_all", {"weight": d.weight, "delay": 1.0})
    for name, node in pops.items():
        rec = nest.Create("spike_recorder")
        nest.Connect(node, rec)
        recorders[name] = rec
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    nest.Simulate(a.duration_ms)
    sim_s = time.perf_counter() - t0
    window_s = (a.duration_ms - a.transient_ms) * 1e-3
    rates = {}
    for pop in net.populations:
        times = np.asarray(recorders[pop.name].get("events")["times"])
        rates[pop.name] = int(np.count_nonzero(times >= a.transient_ms)) / pop.size / window_s
    return {"simulator": f"NEST {nest.__version__}", "rates_hz": rates, "synapses": int(synapses),
            "build_s": build_s, "simulate_s": sim_s, "real_time_factor": sim_s / (a.duration_ms * 1e-3)}


def ranvier_rates(a) -> dict:
    import ranvier as rv

    net = build_network(a)
    t0 = time.perf_counter()
    sim = rv.Simulation(net, resolution_ms=a.resolution_ms, threads=a.threads, seed=a.seed)
    build_s = time.perf_counter() - t0
    result = sim.run(a.duration_ms)
    return {"simulator": f"Ranvier {rv.__version__}", "rates_hz": result.rates(a.transient_ms),
            "synapses": int(sum(p.total_synapses for p in net.projections)),
            "build_s": build_s, "simulate_s": result.simulate_seconds,
            "real_time_factor": result.real_time_factor, "peak_rss_bytes": result.peak_rss_bytes}


def _child(kind: str, a, seed: int) -> dict:
    """Each simulator in its own process (NEST and Ranvier both own OpenMP and large heaps)."""
    out = Path(a.out).with_suffix(f".{kind}-{seed}.json")
    argv = [sys.executable, __file__, "--child", kind, "--child-out", str(out)] + _forward(a) + ["--seed", str(seed)]
    subprocess.run(argv, check=True)
    return json.loads(out.read_text())


def _mean_rates(runs: list[dict]) -> dict:
    names = list(runs[0]["rates_hz"])
    return {"rates_hz": {n: float(np.mean([r["rates_hz"][n] for r in runs])) for n in names}}


def _forward(a) -> list[str]:
    args = ["--data", a.data, "--scale", str(a.scale), "--k-scale", str(a.k_scale), "--state", a.state,
            "--duration-ms", str(a.duration_ms), "--transient-ms", str(a.transient_ms),
            "--threads", str(a.threads), "--resolution-ms", str(a.resolution_ms),
            "--inter-area-delay-min-ms", str(a.inter_area_delay_min_ms), "--out", a.out]
    if a.areas:
        args += ["--areas", *a.areas]
    return args


def compare(ours: dict, nest_: dict, threshold_hz: float = 1.0, tolerance: float = 0.10) -> dict:
    names = list(nest_["rates_hz"])
    rows, above, within = [], 0, 0
    for name in names:
        r, n = ours["rates_hz"][name], nest_["rates_hz"][name]
        dev = (r - n) / n if n > 0 else None
        if n > threshold_hz:
            above += 1
            within += abs(dev) <= tolerance
        rows.append((name, r, n, dev))
    x = np.array([ours["rates_hz"][k] for k in names])
    y = np.array([nest_["rates_hz"][k] for k in names])
    return {"populations": len(names), "above_threshold": above, "within_tolerance": within,
            "tolerance": tolerance, "threshold_hz": threshold_hz,
            "correlation": float(np.corrcoef(x, y)[0, 1]) if len(names) > 1 else None,
            "mean_rate_ours_hz": float(x.mean()), "mean_rate_nest_hz": float(y.mean()), "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("RANVIER_MULTI_AREA_DATA", "../shared/data/multi-area-model"))
    ap.add_argument("--scale", type=float, default=0.01)
    ap.add_argument("--k-scale", type=float, default=0.01)
    ap.add_argument("--state", default="ground")
    ap.add_argument("--areas", nargs="*")
    ap.add_argument("--inter-area-delay-min-ms", type=float, default=0.1)
    ap.add_argument("--duration-ms", type=float, default=10000.0)
    ap.add_argument("--transient-ms", type=float, default=500.0)
    ap.add_argument("--resolution-ms", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1, help="(the children's seed)")
    ap.add_argument("--seeds", default="1,2", help="network realisations per simulator; with two or more, "
                    "the seed-to-seed deviation of each simulator is printed as the noise floor")
    ap.add_argument("--out", default="results/multi-area-nest.json")
    ap.add_argument("--child", choices=("nest", "ranvier"))
    ap.add_argument("--child-out")
    a = ap.parse_args(argv)
    if a.child:
        result = nest_rates(a) if a.child == "nest" else ranvier_rates(a)
        Path(a.child_out).write_text(json.dumps(result))
        return 0
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    seeds = [int(x) for x in a.seeds.split(",")]
    ours_runs = [_child("ranvier", a, seed) for seed in seeds]
    theirs_runs = [_child("nest", a, seed) for seed in seeds]
    ours, theirs = {**ours_runs[0], **_mean_rates(ours_runs)}, {**theirs_runs[0], **_mean_rates(theirs_runs)}
    c = compare(ours, theirs)
    floors = {}
    if len(seeds) > 1:     # the same simulator, two realisations: how far apart any two runs fall
        for label, runs in (("Ranvier", ours_runs), ("NEST", theirs_runs)):
            f = compare(runs[0], runs[1])
            floors[label] = {k: v for k, v in f.items() if k != "rows"}
        cross = compare(ours_runs[0], theirs_runs[0])
        floors["Ranvier vs NEST, one seed each"] = {k: v for k, v in cross.items() if k != "rows"}
    print(f"multi-area, {a.state} state, scale {a.scale:g}, k_scale {a.k_scale:g}: "
          f"{c['populations']} populations, {ours['synapses']:,} synapses, {a.duration_ms:g} ms "
          f"(rates over [{a.transient_ms:g}, {a.duration_ms:g}) ms)")
    print(f"{'population':>12} {'Ranvier Hz':>11} {'NEST Hz':>9} {'deviation':>10}")
    for name, r, n, dev in c["rows"]:
        mark = "" if n <= c["threshold_hz"] or abs(dev) <= c["tolerance"] else "  *"
        print(f"{name:>12} {r:11.3f} {n:9.3f} {('%+.1f %%' % (100 * dev)) if dev is not None else '-':>10}{mark}")
    print(f"populations above {c['threshold_hz']:g} Hz in NEST: {c['above_threshold']}; within "
          f"{100 * c['tolerance']:.0f} %: {c['within_tolerance']} (* outside)")
    for label, f in floors.items():
        print(f"  {label + (' seed 1 vs seed 2' if 'vs' not in label else '')}: of {f['above_threshold']} populations "
              f"above {f['threshold_hz']:g} Hz, {f['within_tolerance']} within {100 * f['tolerance']:.0f} %; "
              f"correlation {f['correlation']:.4f}")
    print(f"mean rate: Ranvier {c['mean_rate_ours_hz']:.3f} Hz, NEST {c['mean_rate_nest_hz']:.3f} Hz; "
          f"correlation over populations {c['correlation']:.4f}")
    print(f"simulate: Ranvier {ours['simulate_s']:.1f} s (RTF {ours['real_time_factor']:.2f}), "
          f"NEST {theirs['simulate_s']:.1f} s (RTF {theirs['real_time_factor']:.2f}); build "
          f"{ours['build_s']:.1f} s vs {theirs['build_s']:.1f} s")
    Path(a.out).write_text(json.dumps({"args": vars(a), "ranvier": ours_runs, "nest": theirs_runs, "floors": floors,
                                       "comparison": {k: v for k, v in c.items() if k != "rows"},
                                       "rows": c["rows"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
