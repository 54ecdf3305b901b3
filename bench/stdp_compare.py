#!/usr/bin/env python3
"""The plastic DPSNN on Ranvier and on NEST: what STDP costs each simulator.

    python bench/stdp_compare.py [--neurons 20480] [--duration-ms 10000] [--threads 2] [--seed 1]
        [--synapses-per-neuron 1125] [--transient-ms T] [--set KEY=VALUE ...]
        [--nest-neuron aeif_psc_delta|iaf_psc_delta] [--out DIR] [--skip-nest] [--skip-ranvier]

Four runs, each in a process of its own and one after the other (never at once), all with the
same threads: Ranvier static, Ranvier plastic, NEST static, NEST plastic. "Static" is
`ranvier.models.dpsnn(...)` (docs/workloads/dpsnn.md); "plastic" the same with
plasticity="stdp": STDP on the four excitatory-to-excitatory projections (F, B -> F, B) with the
stdp_* model parameters (--set stdp_lambda=0.02 and the like changes both simulators). The table
gives network construction, simulation wall time, real-time factor, peak resident memory, bytes
per synapse, the rates of F, B, I and the mean efficacy of the E->E synapses at the end, with
the ratio plastic / static for each simulator and NEST / Ranvier for the plastic runs.

Ranvier's runs use the Python API in a child process (ranvier.models.dpsnn, Simulation, run,
then Simulation.weights); the NEST runs the PyNEST network below, built from the very
parameters Ranvier resolved (a first child asks `ranvier.models.dpsnn` for them, so a bad
--set value is refused before any run). NEST (`nest-simulator` 3.10, never a dependency of
Ranvier) is skipped with one line when `import nest` fails; the Ranvier columns still come.
The helpers that start and measure the children, the NEST environment and the tables come
from bench/harness.py, which bench/nest_compare.py shares; that harness runs the static network
through this file's `_resolve`, `_nest` and `_ranvier` children (`nest_compare.py dpsnn`), with
"read_weights": false in the workload (no E->E statistics).

The NEST network is the same network, drawn by NEST's generator (so another instance):
- Populations F, B, I of the sizes Ranvier makes (20 %, 60 %, 20 %).
- Connectivity: NEST's pairwise_bernoulli with p = synapses_per_neuron / neurons for each of
  the nine ordered population pairs, autapses excluded: Ranvier's rule.
- Efficacies (mV, delta synapses): normal(J, weight_relative_sd |J|) redrawn outside (0, 2 J)
  (nest.math.redraw: Ranvier's law; NEST's bounds are closed, which has probability zero).
- Delays: Ranvier's law, delay_min_ms + floor(x) ms with x exponential of scale DMax / ln 20
  redrawn until x < DMax, exactly: NEST has no floor, so the delay is a tree of
  nest.logic.conditional on fresh uniforms whose leaves are the whole-ms delays and whose
  branch probabilities are the law's conditional ones (about 6 uniforms per synapse, which
  NEST's construction time includes; tests/test_stdp_compare.py checks the leaf probabilities).
- Plastic: NEST's stdp_synapse (or the stdp_nn_* model of stdp_pairing, ranvier.core.plasticity.
  NEST_MODELS) with tau_plus, lambda, alpha, mu_plus, mu_minus and Wmax = stdp_w_max_factor J,
  one CopyModel per projection; tau_minus on the F and B neurons. NEST treats the whole delay as
  dendritic; so does Ranvier (ranvier.core.plasticity). Static: static_synapse, one copy per projection.
- Neurons. NEST has no lifca (V' = -V / tau_m - g_c c, c' = -c / tau_c, c += alpha_c at a
  spike). The closest is aeif_psc_delta with Delta_T = 0 (no exponential term; the threshold is
  then V_th) and a = 0 (no sub-threshold adaptation): C_m V' = -g_L (V - E_L) - w,
  tau_w w' = -w, w += b at a spike, V clamped at V_reset for t_ref, input during the
  refractory period dropped (refractory_input = false, as lifca). With C_m = 250 pF (any value:
  only ratios enter), g_L = C_m / tau_m, w = C_m g_c c, so b = C_m g_c alpha_c (pA) and
  tau_w = tau_c; E_L = 0, V_th = theta, V_peak = theta, V_reset = H, t_ref = tau_arp, V_m = H
  at the start (initial = "uniform": U[H, theta)). That is the excitatory neurons (F, B). The
  inhibitory ones have g_c = 0, and lifca without adaptation is iaf_psc_delta step for step
  (tests/test_iaf_psc_delta.py), so I is iaf_psc_delta. What differs: aeif_psc_delta integrates
  with GSL's adaptive RKF45 (gsl_error_tol 1e-6) where lifca propagates exactly, and checks the
  threshold after each internal sub-step, so single spike times can differ by a step; and it
  costs NEST about 140 ns per neuron and step against 30 ns for iaf_psc_delta (measured on the
  development machine: 4000 unconnected neurons under the dpsnn drive), an estimated 90 s of NEST's
  simulation wall per 10 s simulated at 20480 neurons on 2 threads, which NEST's static and
  plastic runs both pay. --nest-neuron iaf_psc_delta drops the adaptation of F and B instead
  (NEST's fastest neuron, but another network: its excitatory rates are far higher).
  Under the dpsnn drive alone, 4000 F neurons fire at 18.72 Hz in NEST's aeif_psc_delta and
  18.76 Hz in Ranvier's lifca over 2 s (45.70 and 45.63 Hz without adaptation).
- External drive: Ranvier draws every external event's efficacy anew, normal with sd
  external_weight_relative_sd times the mean; a NEST poisson_generator gives every event of a
  connection the same weight. The harness matches the first two moments of that shot noise
  (mean rate x w and variance rate x w^2 (1 + sd^2)): one poisson_generator per population,
  rate external_synapses x rate / (1 + sd^2), weight w (1 + sd^2), delay delay_min_ms (so
  NEST's minimum delay, the communication interval, stays delay_min_ms as in Ranvier).

Figures: construction is Ranvier's Simulation build (build_seconds) and NEST's Create and
Connect calls; NEST builds part of its connection infrastructure in the first Simulate call,
which its simulation time includes (the table's note gives it). Peak resident memory is each
child's high-water mark (VmHWM) right after the simulation, Python and the import included;
bytes per synapse divide it by the recurrent synapses. Rates count spikes at t >= transient.
The E->E efficacy statistics are read after the peak is taken, each synapse's weight as of its
last pre-synaptic spike (NEST's GetStatus, Ranvier's Simulation.weights): Ranvier all E->E
synapses, NEST those of every k-th excitatory source, about 400 of them (GetConnections).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as h  # noqa: E402  (children, memory, NEST environment, tables: shared with nest_compare.py)

RESOLUTION_MS = 0.1
POPULATIONS = ("F", "B", "I")
EXCITATORY = ("F", "B")
PLASTIC = (("F", "F"), ("F", "B"), ("B", "F"), ("B", "B"))   # models.DPSNN_PLASTIC
NEST_NEURONS = ("aeif_psc_delta", "iaf_psc_delta")
C_M_PF = 250.0                  # the NEST neurons' capacitance: any value, only ratios enter
RUNS = (("ranvier", False), ("ranvier", True), ("nest", False), ("nest", True))
# Parameters the harness sets itself (flags), refused in --set.
RESERVED = {"neurons": "--neurons", "synapses_per_neuron": "--synapses-per-neuron", "plasticity": "(both are run)"}
NEST_WEIGHT_SAMPLE = 400         # excitatory sources (every k-th of F and B) whose E->E synapses NEST reports


# ---------------------------------------------------------------------------------------------
# Model arithmetic shared by the NEST child and the tests (no NEST, no engine)
# ---------------------------------------------------------------------------------------------
def delay_law(offset_ms: float, dmax_ms: float, step_ms: float = 1.0) -> tuple[list[float], list[float]]:
    """Ranvier's exponential delay law (network.Projection, models.dpsnn): delays
    offset + floor(x / step) step with x exponential of scale dmax / ln 20, redrawn until
    x < dmax. Returns (delays in ms, their probabilities)."""
    if not (dmax_ms > 0 and step_ms > 0):
        raise ValueError("delay_law: dmax_ms and step_ms must be positive")
    scale = dmax_ms / math.log(20.0)
    n = math.ceil(dmax_ms / step_ms - 1e-12)
    mass = [math.exp(-k * step_ms / scale) - math.exp(-min((k + 1) * step_ms, dmax_ms) / scale) for k in range(n)]
    total = sum(mass)
    return [offset_ms + k * step_ms for k in range(n)], [m / total for m in mass]


def delay_tree(delays: list[float], probs: list[float]):
    """A binary tree that draws a delay with the law's probabilities from independent uniforms:
    a leaf is a delay; a node (q, left, right) takes `left` when its own uniform is below q,
    the probability of the left half given the node. Halves of about equal mass, so a draw
    takes about log2 of the law's perplexity uniforms."""
    def build(lo: int, hi: int):
        if hi - lo == 1:
            return delays[lo]
        total = sum(probs[lo:hi])
        acc, mid, best = 0.0, lo + 1, math.inf
        for k in range(lo, hi - 1):
            acc += probs[k]
            if abs(acc - total / 2) < best:
                best, mid = abs(acc - total / 2), k + 1
        return (sum(probs[lo:mid]) / total, build(lo, mid), build(mid, hi))
    return build(0, len(delays))


def tree_probabilities(tree, weight: float = 1.0, out: dict | None = None) -> dict:
    """delay -> probability that the tree draws it (to check a tree against its law)."""
    out = {} if out is None else out
    if isinstance(tree, tuple):
        q, left, right = tree
        tree_probabilities(left, weight * q, out)
        tree_probabilities(right, weight * (1.0 - q), out)
    else:
        out[tree] = out.get(tree, 0.0) + weight
    return out


def nest_neuron(p: dict, kind: str, model: str = "aeif_psc_delta") -> tuple[str, dict]:
    """The NEST model and parameters of a dpsnn neuron of kind "exc" or "inh" (see the module's
    docstring): aeif_psc_delta with Delta_T = 0, a = 0 where g_c != 0, iaf_psc_delta otherwise
    (and for every neuron with model="iaf_psc_delta": adaptation dropped)."""
    tau_m, g_c = p[f"tau_m_{kind}_ms"], p[f"g_c_{kind}_mV_per_ms"]
    common = {"E_L": 0.0, "V_th": p["theta_mV"], "V_reset": p["reset_mV"], "t_ref": p[f"tau_arp_{kind}_ms"],
              "V_m": p["reset_mV"], "C_m": C_M_PF, "I_e": 0.0}
    if model == "aeif_psc_delta" and g_c != 0:
        return "aeif_psc_delta", {**common, "g_L": C_M_PF / tau_m, "a": 0.0, "b": C_M_PF * g_c * p["alpha_c"],
                                  "tau_w": p[f"tau_c_{kind}_ms"], "Delta_T": 0.0, "V_peak": p["theta_mV"]}
    return "iaf_psc_delta", {**common, "tau_m": tau_m}


def nest_drive(p: dict, kind: str) -> tuple[float, float]:
    """(rate Hz, weight mV) of the one poisson_generator per population that has the mean and the
    variance of Ranvier's external drive (efficacies redrawn per event)."""
    m2 = 1.0 + p["external_weight_relative_sd"] ** 2
    rate = p["external_synapses"] * p[f"external_rate_{kind}_hz"]
    return rate / m2, p[f"external_weight_{kind}_mV"] * m2


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="stdp_compare.py",
        description="Run dpsnn static and with STDP on Ranvier and on NEST, one run after the other with the "
                    "same threads, and print construction and simulation time, real-time factor, peak memory, "
                    "bytes per synapse and rates, with the ratio plastic / static of each simulator.")
    ap.add_argument("--neurons", type=int, default=20480, help="network size (default 20480)")
    ap.add_argument("--synapses-per-neuron", type=int, default=1125,
                    help="expected out-degree, below --neurons (default 1125, the benchmark's)")
    ap.add_argument("--duration-ms", type=float, default=10000.0, help="simulated time (default 10000)")
    ap.add_argument("--transient-ms", type=float, default=None,
                    help="rates count spikes at t >= this (default: a tenth of the duration)")
    ap.add_argument("--threads", type=int, default=2, help="threads of every run (default 2)")
    ap.add_argument("--seed", type=int, default=1, help=f"seed of every run, 1..{h.MAX_SEED} (default 1)")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="a dpsnn model parameter for every run (repeatable), e.g. --set stdp_lambda=0.02")
    ap.add_argument("--nest-neuron", choices=NEST_NEURONS, default="aeif_psc_delta",
                    help="NEST model of the excitatory neurons: aeif_psc_delta (Delta_T = 0, a = 0: lifca's "
                         "adaptation, the default) or iaf_psc_delta (no adaptation)")
    ap.add_argument("--out", type=Path, default=None, help="write stdp_compare.json and each run's files here")
    ap.add_argument("--skip-nest", action="store_true", help="run Ranvier only")
    ap.add_argument("--skip-ranvier", action="store_true", help="run NEST only")
    return ap


def check_args(a: argparse.Namespace) -> argparse.Namespace:
    """Raise h.HarnessError with a clear message for a bad combination; fill in defaults."""
    if a.neurons < 3:
        raise h.HarnessError(f"--neurons must be at least 3, got {a.neurons}")
    if not 0 <= a.synapses_per_neuron < a.neurons:
        raise h.HarnessError(f"--synapses-per-neuron must lie in [0, --neurons = {a.neurons}), got "
                              f"{a.synapses_per_neuron}: for a network this small give, say, "
                              f"--synapses-per-neuron {max(1, a.neurons // 10)}")
    if a.threads < 1:
        raise h.HarnessError(f"--threads must be at least 1, got {a.threads}")
    if not (math.isfinite(a.duration_ms) and a.duration_ms > 0):
        raise h.HarnessError(f"--duration-ms must be positive, got {a.duration_ms}")
    steps = a.duration_ms / RESOLUTION_MS
    if abs(steps - round(steps)) > 1e-6:
        raise h.HarnessError(f"--duration-ms must be a multiple of the resolution {RESOLUTION_MS} ms, "
                              f"got {a.duration_ms}")
    if a.transient_ms is None:
        a.transient_ms = a.duration_ms / 10.0
    if not (math.isfinite(a.transient_ms) and 0.0 <= a.transient_ms < a.duration_ms):
        raise h.HarnessError(f"--transient-ms must lie in [0, --duration-ms = {a.duration_ms:g}), "
                              f"got {a.transient_ms}")
    if not 1 <= a.seed <= h.MAX_SEED:
        raise h.HarnessError(f"--seed must lie in [1, {h.MAX_SEED}] (NEST's rng_seed range), got {a.seed}")
    for text in a.sets:
        key = text.partition("=")[0].strip()
        if "=" not in text or not key:
            raise h.HarnessError(f"--set expects KEY=VALUE (for example --set stdp_lambda=0.02), got {text!r}")
        if key in RESERVED:
            raise h.HarnessError(f"--set {key}=...: the harness sets '{key}' itself; use {RESERVED[key]}")
    if a.skip_nest and a.skip_ranvier:
        raise h.HarnessError("--skip-nest and --skip-ranvier together leave nothing to run")
    if a.out is not None and a.out.exists() and not a.out.is_dir():
        raise h.HarnessError(f"--out {a.out} exists and is not a folder")
    return a


def parse_args(argv=None) -> argparse.Namespace:
    ap = build_parser()
    a = ap.parse_args(argv)
    try:
        return check_args(a)
    except h.HarnessError as e:
        ap.error(str(e))   # exits 2 with usage and "stdp_compare.py: error: ..."


def workload(a: argparse.Namespace) -> dict:
    """What every run gets (the children read it from a file)."""
    return {"neurons": a.neurons, "synapses_per_neuron": a.synapses_per_neuron, "sets": list(a.sets),
            "threads": a.threads, "duration_ms": a.duration_ms, "transient_ms": a.transient_ms,
            "seed": a.seed, "resolution_ms": RESOLUTION_MS, "nest_neuron": a.nest_neuron}


# ---------------------------------------------------------------------------------------------
# Children: `stdp_compare.py _resolve|_ranvier|_nest WORKLOAD.json RESULT.json`
# ---------------------------------------------------------------------------------------------
def _rates(counts: dict, sizes: dict, window_s: float) -> dict:
    """Rates (Hz) of F, B, I, of the excitatory neurons (E) and of all, from spike counts."""
    out = {name: counts[name] / sizes[name] / window_s for name in POPULATIONS}
    n_e = sum(sizes[x] for x in EXCITATORY)
    out["E"] = sum(counts[x] for x in EXCITATORY) / n_e / window_s
    out["all"] = sum(counts.values()) / sum(sizes.values()) / window_s
    return out


def _weight_stats(chunks: list) -> dict | None:
    """Mean, sd, min, max and count of the E->E efficacies (mV) in the arrays `chunks`."""
    import numpy as np
    w = np.concatenate([np.asarray(c, dtype=np.float64) for c in chunks]) if chunks else np.zeros(0)
    if w.size == 0:
        return None
    return {"mean": float(w.mean()), "sd": float(w.std()), "min": float(w.min()), "max": float(w.max()),
            "count": int(w.size)}


def _model_parameters(w: dict, plastic: bool) -> dict:
    from ranvier.io.config import parse_assignment
    params = {"neurons": w["neurons"], "synapses_per_neuron": w["synapses_per_neuron"]}
    params.update(parse_assignment(text) for text in w["sets"])
    params["plasticity"] = "stdp" if plastic else None
    if not plastic:                       # the static network reads no stdp_* value (and refuses them)
        params = {k: v for k, v in params.items() if not k.startswith("stdp_")}
    return params


def resolve_child(w: dict) -> dict:
    """The parameters (all of them, as dpsnn resolves them), the population sizes and the NEST
    STDP model; a ConfigError propagates (exit 2 with its line)."""
    import ranvier as rv
    from ranvier.core.plasticity import NEST_MODELS, PAIRINGS

    plastic = rv.models.dpsnn(**_model_parameters(w, True))
    static = rv.models.dpsnn(**_model_parameters(w, False))
    p = dict(plastic.parameters)
    return {"parameters": p, "static_parameters": dict(static.parameters),
            "sizes": {pop.name: pop.size for pop in plastic.populations},
            "nest_stdp_model": NEST_MODELS[PAIRINGS[p["stdp_pairing"]]],
            "plastic_projections": [f"{pr.source}->{pr.target}" for pr in plastic.projections if pr.synapse is not None]}


def ranvier_child(w: dict) -> dict:
    import numpy as np
    import ranvier as rv

    rss_after_import = h.rss_now()
    net = rv.models.dpsnn(**_model_parameters(w, w["plastic"]))
    sim = rv.Simulation(net, threads=w["threads"], seed=w["seed"], resolution_ms=w["resolution_ms"])
    res = sim.run(w["duration_ms"])
    peak = h.peak_rss_self()            # before anything below adds to it
    ids, times = res.spikes
    late = times >= w["transient_ms"]
    counts, sizes = {}, {}
    for pop in net.populations:
        sizes[pop.name] = pop.size
        counts[pop.name] = int(np.count_nonzero(late & (ids >= pop.first_id) & (ids < pop.first_id + pop.size)))
    window_s = (w["duration_ms"] - w["transient_ms"]) * 1e-3
    t0 = time.perf_counter()
    if not w.get("read_weights", True):   # bench/nest_compare.py: no E->E statistics
        chunks = []
    elif w["plastic"]:
        chunks = [sim.weights(s, t).weight for s, t in PLASTIC]     # as NEST reads them
    else:                                 # static weights: one pass over every synapse
        c = sim.connections()
        first = {pop.name: (pop.first_id, pop.first_id + pop.size) for pop in net.populations}
        lo, hi = first["F"][0], first["B"][1]          # F and B are contiguous: the excitatory ids
        keep = (c.source >= lo) & (c.source < hi) & (c.target >= lo) & (c.target < hi)
        chunks = [c.weight[keep]]
    weights_s = time.perf_counter() - t0
    return {"simulator": f"Ranvier {rv.__version__}", "neurons": net.size, "synapses": int(res.synapses),
            "synapse_store_bytes": res.synapse_store_bytes, "construction_s": sim.build_seconds,
            "simulate_s": res.simulate_seconds, "real_time_factor": res.real_time_factor, "peak_rss_bytes": peak,
            "rss_after_import_bytes": rss_after_import, "rates_hz": _rates(counts, sizes, window_s),
            "spikes_total": int(ids.size), "ee_weights_mV": _weight_stats(chunks), "weights_read_s": weights_s,
            "threads": sim.threads}


def delay_parameter(nest, tree):
    """A NEST Parameter that draws from a delay_tree."""
    if not isinstance(tree, tuple):
        return float(tree)
    q, left, right = tree
    return nest.logic.conditional(nest.random.uniform(0.0, 1.0) < q, delay_parameter(nest, left),
                                  delay_parameter(nest, right))


def nest_child(w: dict) -> dict:
    """Build and simulate the dpsnn network in PyNEST in this process (see the module's docstring)."""
    import nest
    import numpy as np

    p, sizes, plastic = w["parameters"], w["sizes"], w["plastic"]
    if hasattr(nest, "VerbosityLevel"):
        nest.verbosity = nest.VerbosityLevel.ERROR
    else:  # pragma: no cover - older NEST
        nest.set_verbosity("M_ERROR")
    rss_after_import = h.rss_now()
    start = time.perf_counter()
    nest.ResetKernel()
    nest.set(resolution=w["resolution_ms"], local_num_threads=w["threads"], rng_seed=w["seed"], print_time=False)
    pops = {}
    for name in POPULATIONS:
        kind = "exc" if name in EXCITATORY else "inh"
        model, params = nest_neuron(p, kind, w["nest_neuron"])
        if plastic and name in EXCITATORY:
            params["tau_minus"] = p["stdp_tau_minus_ms"]
        pop = nest.Create(model, sizes[name], params=params)
        if p["initial"] == "uniform":
            pop.V_m = nest.random.uniform(min=p["reset_mV"], max=p["theta_mV"])
        pops[name] = pop
    prob = p["synapses_per_neuron"] / p["neurons"]
    trees = {kind: delay_tree(*delay_law(p["delay_min_ms"], p[f"delay_max_{kind}_ms"])) for kind in ("exc", "inh")}
    for src in POPULATIONS:
        delay = delay_parameter(nest, trees["inh" if src == "I" else "exc"])
        for tgt in POPULATIONS:
            j = p[f"J_{src}{tgt}"]
            sd = p["weight_relative_sd"] * abs(j)
            weight = nest.math.redraw(nest.random.normal(mean=j, std=sd), min=min(0.0, 2 * j),
                                      max=max(0.0, 2 * j)) if sd > 0 else j
            name = f"syn_{src}{tgt}"
            if plastic and (src, tgt) in PLASTIC:
                nest.CopyModel(w["nest_stdp_model"], name,
                               {"tau_plus": p["stdp_tau_plus_ms"], "lambda": p["stdp_lambda"],
                                "alpha": p["stdp_alpha"], "mu_plus": p["stdp_mu_plus"],
                                "mu_minus": p["stdp_mu_minus"], "Wmax": p["stdp_w_max_factor"] * j})
            else:
                nest.CopyModel("static_synapse", name)
            if prob > 0:
                nest.Connect(pops[src], pops[tgt],
                             conn_spec={"rule": "pairwise_bernoulli", "p": prob, "allow_autapses": False},
                             syn_spec={"synapse_model": name, "weight": weight, "delay": delay})
    synapses = int(nest.GetKernelStatus("num_connections"))
    recorders = {}
    for name in POPULATIONS:
        rate, weight = nest_drive(p, "inh" if name == "I" else "exc")
        if rate > 0:
            gen = nest.Create("poisson_generator", params={"rate": rate})
            nest.Connect(gen, pops[name], "all_to_all", {"weight": weight, "delay": p["delay_min_ms"]})
        rec = nest.Create("spike_recorder", params={"record_to": "memory"})
        nest.Connect(pops[name], rec)
        recorders[name] = rec
    construction = time.perf_counter() - start

    start = time.perf_counter()
    nest.Simulate(w["duration_ms"])
    simulate = time.perf_counter() - start
    peak = h.peak_rss_self()            # before anything below adds to it

    counts, spikes = {}, 0
    for name, rec in recorders.items():
        times = np.asarray(rec.get("events")["times"])
        spikes += int(times.size)
        counts[name] = int(np.count_nonzero(times >= w["transient_ms"]))
    window_s = (w["duration_ms"] - w["transient_ms"]) * 1e-3
    t0 = time.perf_counter()
    chunks = []
    excitatory = pops["F"] + pops["B"]
    step = max(1, len(excitatory) // NEST_WEIGHT_SAMPLE)
    # the E->E synapses of every step-th excitatory source (bench/nest_compare.py reads none)
    for name in EXCITATORY if w.get("read_weights", True) else ():
        conns = nest.GetConnections(source=pops[name][::step], target=excitatory)
        if len(conns):
            chunks.append(np.asarray(conns.get("weight"), dtype=np.float64).ravel())
    weights_s = time.perf_counter() - t0
    status = nest.GetKernelStatus()
    timers = {key: (float(v[0]) if hasattr(v, "__len__") else float(v)) for key, v in status.items()
              if key.startswith("time_") and not key.endswith("_cpu")}
    return {"simulator": f"NEST {nest.__version__}", "neurons": sum(sizes.values()), "synapses": synapses,
            "construction_s": construction, "simulate_s": simulate,
            "real_time_factor": simulate / (w["duration_ms"] * 1e-3), "peak_rss_bytes": peak,
            "rss_after_import_bytes": rss_after_import, "rates_hz": _rates(counts, sizes, window_s),
            "spikes_total": spikes, "ee_weights_mV": _weight_stats(chunks), "weights_read_s": weights_s,
            "nest_kernel_timers_s": timers, "threads": int(status["local_num_threads"]),
            "neuron_models": {name: nest_neuron(p, "inh" if name == "I" else "exc", w["nest_neuron"])[0]
                              for name in POPULATIONS}}


def _child_main(kind: str, workload_json: str, result_path: str) -> int:
    """Exit 0 with the result written; 2 with {"config_error": ...} for a ConfigError of the
    model; 3 with {"import_error": ...} when `import nest` fails."""
    w = json.loads(Path(workload_json).read_text())
    os.environ.setdefault("OMP_NUM_THREADS", str(w["threads"]))
    out = Path(result_path)
    if kind == "_nest":
        try:
            import nest  # noqa: F401
        except Exception as e:  # noqa: BLE001  (ImportError, or any failure of a broken installation)
            out.write_text(json.dumps({"import_error": f"{type(e).__name__}: {e}"}))
            return 3
        out.write_text(json.dumps(nest_child(w)))
        return 0
    from ranvier.errors import ConfigError
    try:
        result = resolve_child(w) if kind == "_resolve" else ranvier_child(w)
    except ConfigError as e:
        out.write_text(json.dumps({"config_error": str(e)}))
        return 2
    out.write_text(json.dumps(result))
    return 0


class ConfigRefused(RuntimeError):
    pass


def _child(kind: str, w: dict, folder: Path, env: dict) -> dict:
    """Run `stdp_compare.py KIND` on w in a process of its own; its result, with the parent's
    view of its peak RSS (wait4) and wall time."""
    folder.mkdir(parents=True, exist_ok=True)
    spec, result, log = folder / "workload.json", folder / "result.json", folder / "log.txt"
    spec.write_text(json.dumps(w))
    result.unlink(missing_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), kind, str(spec), str(result)]
    code, rss_parent, wall = h.run_child(command, log, env)
    if code == 2 and result.exists():
        raise ConfigRefused(json.loads(result.read_text())["config_error"])
    if code == 3 and result.exists():
        raise h.NestUnavailable(h.NEST_BROKEN.format(why=json.loads(result.read_text()).get("import_error", "")))
    if code != 0 or not result.exists():
        raise RuntimeError(f"the {kind[1:]} run failed (exit {code}); the end of {log}:\n{h.tail(log)}")
    r = json.loads(result.read_text())
    r["peak_rss_bytes_wait4"], r["process_wall_s"] = rss_parent, wall
    return r


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------
FIGURES = (
    ("construction_s", "network construction (s)", "{:.2f}"),
    ("simulate_s", "simulation wall (s)", "{:.2f}"),
    ("real_time_factor", "real-time factor (wall s / simulated s)", "{:.3f}"),
    ("peak_rss_mib", "peak resident memory (MiB)", "{:.0f}"),
    ("bytes_per_synapse", "bytes per synapse (peak RSS / synapses)", "{:.1f}"),
    ("synapses", "synapses", "{:,}"),
    ("rate_F", "rate F (Hz)", "{:.3f}"),
    ("rate_B", "rate B (Hz)", "{:.3f}"),
    ("rate_I", "rate I (Hz)", "{:.3f}"),
    ("rate_E", "rate excitatory (Hz)", "{:.3f}"),
    ("rate_all", "rate all (Hz)", "{:.3f}"),
    ("ee_mean", "E->E efficacy at the end, mean (mV)", "{:.4f}"),
    ("ee_sd", "E->E efficacy at the end, sd (mV)", "{:.4f}"),
)


def figure(result: dict | None, key: str):
    if result is None:
        return None
    if key == "peak_rss_mib":
        return result["peak_rss_bytes"] / h.MIB
    if key == "bytes_per_synapse":
        return result["peak_rss_bytes"] / result["synapses"] if result.get("synapses") else None
    if key.startswith("rate_"):
        return result["rates_hz"].get(key[5:])
    if key in ("ee_mean", "ee_sd"):
        stats = result.get("ee_weights_mV")
        return None if stats is None else stats[key[3:]]
    return result.get(key)


def table_rows(results: dict) -> list[dict]:
    """One row per figure: the four runs' values, plastic / static per simulator, NEST / Ranvier
    of the plastic runs."""
    rows = []
    for key, label, fmt in FIGURES:
        v = {run: figure(results.get(run), key) for run in ("ranvier_static", "ranvier_plastic", "nest_static",
                                                               "nest_plastic")}
        rows.append({"key": key, "label": label, "format": fmt, **v,
                     "ranvier_ratio": h.ratio(v["ranvier_plastic"], v["ranvier_static"]),
                     "nest_ratio": h.ratio(v["nest_plastic"], v["nest_static"]),
                     "nest_over_ranvier_plastic": h.ratio(v["nest_plastic"], v["ranvier_plastic"])})
    return rows


def format_results(results: dict) -> str:
    headers = ["figure", "Ranvier static", "Ranvier STDP", "STDP / static", "NEST static", "NEST STDP",
               "STDP / static", "NEST / Ranvier (STDP)"]
    body = []
    for r in table_rows(results):
        f = r["format"]
        body.append([r["label"], h.format_value(f, r["ranvier_static"]), h.format_value(f, r["ranvier_plastic"]),
                     h.format_value("{:.2f}", r["ranvier_ratio"]), h.format_value(f, r["nest_static"]),
                     h.format_value(f, r["nest_plastic"]), h.format_value("{:.2f}", r["nest_ratio"]),
                     h.format_value("{:.2f}", r["nest_over_ranvier_plastic"])])
    return h.format_table(headers, body)


def describe(w: dict, resolved: dict) -> str:
    p = resolved["parameters"]
    stdp = (f"STDP ({resolved['nest_stdp_model']} semantics) on {', '.join(resolved['plastic_projections'])}: "
            f"tau_plus {p['stdp_tau_plus_ms']:g} ms, tau_minus {p['stdp_tau_minus_ms']:g} ms, lambda "
            f"{p['stdp_lambda']:g}, alpha {p['stdp_alpha']:g}, mu_plus {p['stdp_mu_plus']:g}, mu_minus "
            f"{p['stdp_mu_minus']:g}, w_max {p['stdp_w_max_factor']:g} J, pairing {p['stdp_pairing']}")
    sets = f", --set {' '.join(w['sets'])}" if w["sets"] else ""
    return (f"dpsnn: {w['neurons']:,} neurons, {w['synapses_per_neuron']} synapses per neuron{sets}, "
            f"{w['threads']} thread(s), {w['duration_ms']:g} ms simulated, rates over "
            f"[{w['transient_ms']:g}, {w['duration_ms']:g}) ms, seed {w['seed']}\n{stdp}\n"
            f"NEST neurons: {w['nest_neuron']} for F and B, iaf_psc_delta for I\n"
            f"host: {h.cpu_model()}, {h.usable_cores()} usable core(s)")


def report(w: dict, resolved: dict, results: dict, notes: list[str]) -> str:
    parts = [describe(w, resolved), "", format_results(results)]
    for run in ("nest_static", "nest_plastic"):
        r = results.get(run)
        prepare = (r or {}).get("nest_kernel_timers_s", {}).get("time_communicate_prepare")
        if prepare:
            parts.append(f"{run.replace('_', ' ')}: {prepare:.2f} s of its simulation wall is the first Simulate "
                         f"call building NEST's connection infrastructure (kernel time_communicate_prepare)")
    parts.append("E->E efficacies: Ranvier all of them, NEST those of about "
                 f"{NEST_WEIGHT_SAMPLE} excitatory sources (every k-th); static runs show the initial ones")
    return "\n".join(parts + notes)


# ---------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("_resolve", "_ranvier", "_nest"):
        return _child_main(argv[0], *argv[1:3])
    a = parse_args(argv)
    w = workload(a)
    notes: list[str] = []
    if a.threads > h.usable_cores():
        notes.append(f"warning: {a.threads} threads on {h.usable_cores()} usable core(s): oversubscribed timings")
    ranvier_env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    with tempfile.TemporaryDirectory(prefix="stdp-compare-") as tmp:
        base = a.out if a.out is not None else Path(tmp)
        try:
            resolved = _child("_resolve", w, base / "resolve", ranvier_env)
        except ConfigRefused as e:
            print(f"stdp_compare.py: error: {e}", file=sys.stderr)
            return 2
        except RuntimeError as e:
            print(f"stdp_compare: {e}", file=sys.stderr)
            return 1
        results: dict = {}
        nest_ok = not a.skip_nest
        if nest_ok and not h.module_found("nest"):
            notes.append(h.NEST_MISSING)
            nest_ok = False
        for simulator, plastic in RUNS:
            if (simulator == "ranvier" and a.skip_ranvier) or (simulator == "nest" and not nest_ok):
                continue
            run = f"{simulator}_{'plastic' if plastic else 'static'}"
            print(f"{run.replace('_', ' ')} ...", file=sys.stderr, flush=True)
            child_w = {**w, "plastic": plastic, **resolved}
            env = ranvier_env if simulator == "ranvier" else h.nest_env(a.threads)
            try:
                results[run] = _child(f"_{simulator}", child_w, base / run, env)
            except h.NestUnavailable as e:
                notes.append(str(e))
                nest_ok = False
            except (RuntimeError, ConfigRefused) as e:
                print(f"stdp_compare: {e}", file=sys.stderr)
                return 1
        if not results:
            print("\n".join(notes + ["stdp_compare: nothing ran"]), file=sys.stderr)
            return 1
        print(report(w, resolved, results, notes))
        if a.out is not None:
            record = {"workload": w, "resolved": resolved, "results": results, "table": table_rows(results),
                      "notes": notes, "host": {"cpu": h.cpu_model(), "usable_cores": h.usable_cores()}}
            (a.out / "stdp_compare.json").write_text(json.dumps(record, indent=2) + "\n")
            print(f"\nwrote {a.out / 'stdp_compare.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
