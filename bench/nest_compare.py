#!/usr/bin/env python3
"""The same workloads on NEST and on Ranvier, side by side, on this machine.

    python bench/nest_compare.py MODEL [MODEL ...] [--threads T] [--duration-ms D] [--transient-ms T0]
        [--seed N] [--repeats N] [--out DIR] [--skip-nest] [--skip-ranvier]
        microcircuit: [--scale S] [--k-scale K] [--input poisson|dc] [--nest-implementation ours|inm6]
        dpsnn:        [--neurons N] [--synapses-per-neuron K] [--dpsnn-nest-neuron aeif_psc_delta|iaf_psc_delta]

MODEL is microcircuit, dpsnn, or all (both). Each simulator runs in a process of its own (so
each peak resident memory is its own), one after the other, never at once, with the same
number of threads; the models run one after the other too.

microcircuit: Ranvier runs as `ranvier run --model microcircuit ...` and is read back from its
summary.json and spikes.h5. NEST (the `nest-simulator` package, never a dependency of Ranvier)
runs the PyNEST implementation of the Potjans-Diesmann microcircuit below, written from
docs/workloads/microcircuit.md ("ours"), or, with --nest-implementation inm6, the model of the
INM-6 `microcircuit` package from PyPI (the PyNEST reference implementation; never a
dependency either), scaled with its own N_scaling and K_scaling.

dpsnn: the static DPSNN (docs/workloads/dpsnn.md). Both sides are bench/stdp_compare.py's
children: Ranvier through the Python API (ranvier.models.dpsnn), NEST through that harness's
PyNEST network, built from the parameters Ranvier resolved.

Per model, the tables give network construction, simulation wall time, real-time factor, peak
resident memory, bytes per synapse, synapse count and the rates of the populations after the
transient, with the ratio NEST / Ranvier of each figure (and, for the microcircuit, the
deviation of each simulator's rates from the spec's reference rates); with more than one
model a combined table of all of them ends the output. See docs/nest-comparison.md.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stdp_compare  # noqa: E402  (the dpsnn's children: its NEST network and its Ranvier side)
from harness import (MAX_SEED, MIB, NEST_BROKEN, NEST_MISSING, HarnessError, NestUnavailable,  # noqa: E402
                     cpu_model, format_table, format_value, module_found, nest_env, peak_rss_self, ratio, rss_now,
                     run_child, tail, usable_cores)

# ---------------------------------------------------------------------------------------------
# The model: docs/workloads/microcircuit.md
# ---------------------------------------------------------------------------------------------
POPULATIONS = ("L23E", "L23I", "L4E", "L4I", "L5E", "L5I", "L6E", "L6I")
EXCITATORY = (True, False, True, False, True, False, True, False)
N_FULL = (20683, 5834, 21915, 5479, 4850, 1065, 14395, 2948)
K_EXT_FULL = (1600, 1500, 2100, 1900, 2000, 1900, 2900, 2100)
REFERENCE_RATES_HZ = dict(zip(POPULATIONS, (0.903, 2.965, 4.414, 5.876, 7.569, 8.633, 1.105, 7.829)))
# connection probabilities, row: target, column: source
P = (
    (0.1009, 0.1689, 0.0437, 0.0818, 0.0323, 0.0, 0.0076, 0.0),
    (0.1346, 0.1371, 0.0316, 0.0515, 0.0755, 0.0, 0.0042, 0.0),
    (0.0077, 0.0059, 0.0497, 0.135, 0.0067, 0.0003, 0.0453, 0.0),
    (0.0691, 0.0029, 0.0794, 0.1597, 0.0033, 0.0, 0.1057, 0.0),
    (0.1004, 0.0622, 0.0505, 0.0057, 0.0831, 0.3726, 0.0204, 0.0),
    (0.0548, 0.0269, 0.0257, 0.0022, 0.06, 0.3158, 0.0086, 0.0),
    (0.0156, 0.0066, 0.0211, 0.0166, 0.0572, 0.0197, 0.0396, 0.2252),
    (0.0364, 0.001, 0.0034, 0.0005, 0.0277, 0.008, 0.0658, 0.1443),
)
V0_MEAN_MV = (-68.28, -63.16, -63.33, -63.45, -63.11, -61.66, -66.72, -61.43)
V0_SD_MV = (5.36, 4.57, 4.74, 4.94, 4.94, 4.55, 5.46, 4.48)
NEURON = {"E_L": -65.0, "V_th": -50.0, "V_reset": -65.0, "C_m": 250.0, "tau_m": 10.0,
          "tau_syn_ex": 0.5, "tau_syn_in": 0.5, "t_ref": 2.0}
RESOLUTION_MS = 0.1
PSP_MV = 0.15                   # mean excitatory PSP
L4E_TO_L23E_FACTOR = 2.0        # the L4E -> L2/3E projection: twice the mean
G = -4.0                        # inhibitory weight / excitatory weight
WEIGHT_REL_SD = 0.1
DELAY_MEAN_MS = {True: 1.5, False: 0.75}   # by the source being excitatory
DELAY_REL_SD = 0.5
EXTERNAL_RATE_HZ = 8.0          # per external synapse
EXTERNAL_DELAY_MS = 1.5

# NEST 3.10, 2 threads, full scale, on the developers' 2-core machine (docs/workloads/microcircuit.md)
REFERENCE_NEST = {"label": "NEST 3.10, 2 threads, full scale (docs/workloads/microcircuit.md, this machine)",
                  "threads": 2, "construction_s": 120.0, "real_time_factor": 260.0,
                  "peak_rss_bytes": 14.5e9, "bytes_per_synapse": 49.0}

MODELS = ("microcircuit", "dpsnn")
MODEL_CHOICES = MODELS + ("all",)
INPUTS = ("poisson", "dc")
IMPLEMENTATIONS = ("ours", "inm6")   # the microcircuit's NEST side: this file's, or the INM-6 package's
DPSNN_POPULATIONS = ("F", "B", "I", "E", "all")   # E: F and B together; all: every neuron
DPSNN_NEST_NEURONS = ("aeif_psc_delta", "iaf_psc_delta")   # as bench/stdp_compare.py's NEST_NEURONS
INM6_INSTALL = ("--nest-implementation inm6 runs the model of the INM-6 `microcircuit` package (PyPI, the PyNEST "
                "Potjans-Diesmann implementation; never a dependency of Ranvier): install it with "
                "`pip install microcircuit`, or use --nest-implementation ours (the default)")
INM6_MISSING = "the INM-6 microcircuit package is not installed (no module `microcircuit`): " + INM6_INSTALL
INM6_BROKEN = "the INM-6 microcircuit package did not load ({why}): " + INM6_INSTALL


# ---------------------------------------------------------------------------------------------
# Model arithmetic (no NEST, no engine)
# ---------------------------------------------------------------------------------------------
def psc_per_psp(tau_m: float = NEURON["tau_m"], tau_syn: float = NEURON["tau_syn_ex"],
                c_m: float = NEURON["C_m"]) -> float:
    """pA of exponential-current amplitude per mV of peak membrane response (the spec's
    PSP-to-PSC factor): with s = 1/(tau_syn - tau_m), a = tau_m tau_syn s / C_m and
    r = (tau_m/tau_syn)^s, the peak PSP of a 1 pA jump is a (r^tau_m - r^tau_syn)."""
    if tau_m <= 0 or tau_syn <= 0 or c_m <= 0 or tau_m == tau_syn:
        raise HarnessError("psc_per_psp: tau_m, tau_syn and C_m must be positive, tau_m != tau_syn")
    s = 1.0 / (tau_syn - tau_m)
    a = tau_m * tau_syn * s / c_m
    r = (tau_m / tau_syn) ** s
    return 1.0 / (a * (r ** tau_m - r ** tau_syn))


def synapses_full(p: float, n_target: int, n_source: int) -> float:
    """S = ln(1 - p) / ln(1 - 1/(N_i N_j)): the fixed total number of synapses that connects
    each pair with probability p, synapses drawn with replacement (not rounded)."""
    if not 0.0 <= p < 1.0:
        raise HarnessError(f"connection probability must lie in [0, 1), got {p!r}")
    if n_target < 1 or n_source < 1:
        raise HarnessError("population sizes must be positive")
    if p == 0.0:
        return 0.0
    return math.log1p(-p) / math.log1p(-1.0 / (n_target * n_source))


def population_sizes(scale: float) -> list[int]:
    """N_i = round(scale N_i,full), at least 1 (as Ranvier's model)."""
    return [max(1, round(n * scale)) for n in N_FULL]


def external_indegrees(k_scale: float = 1.0) -> list[int]:
    """External Poisson synapses per neuron, round(K_ext,full k_scale) (as Ranvier's model:
    a whole number of synapses; the Poisson rate is this times 8 Hz)."""
    return [round(k * k_scale) for k in K_EXT_FULL]


def synapse_numbers(scale: float, k_scale: float = 1.0) -> list[list[int]]:
    """Synapses [target][source] of the scaled network: round(S_full * scale * k_scale), S_full
    with the full-scale sizes (the full in-degrees S_full / N_i, times k_scale, kept)."""
    return [[round(synapses_full(P[i][j], N_FULL[i], N_FULL[j]) * scale * k_scale) for j in range(8)]
            for i in range(8)]


def indegrees_full() -> list[list[float]]:
    """K_full[i][j] = S_full[i][j] / N_i: mean number of synapses a neuron of i gets from j."""
    return [[synapses_full(P[i][j], N_FULL[i], N_FULL[j]) / N_FULL[i] for j in range(8)] for i in range(8)]


def mean_weights_pA(psp_mV: float = PSP_MV) -> list[list[float]]:
    """Mean synaptic current amplitude [target][source] (pA), full in-degrees: excitatory
    sources w, L4E -> L2/3E 2 w, inhibitory sources g w."""
    w = psp_mV * psc_per_psp()
    out = [[w if EXCITATORY[j] else G * w for j in range(8)] for i in range(8)]
    out[0][2] *= L4E_TO_L23E_FACTOR
    return out


def dc_compensation_pA(k_scale: float, rates_hz=None, tau_syn: float = NEURON["tau_syn_ex"]) -> list[float]:
    """The DC current (pA) per population that restores the mean input lost when in-degrees
    are scaled by k_scale and weights by 1/sqrt(k_scale) (k_scale K w / sqrt(k_scale) =
    sqrt(k_scale) K w): DC_i = 0.001 tau_syn (1 - sqrt(k)) (sum_j w_ij K_full_ij r_j
    + w_ext K_ext_i 8 Hz), with the full-scale weights, in-degrees and reference rates r_j."""
    if not 0.0 < k_scale <= 1.0:
        raise HarnessError(f"k_scale must lie in (0, 1], got {k_scale!r}")
    rates = [REFERENCE_RATES_HZ[p] for p in POPULATIONS] if rates_hz is None else list(rates_hz)
    w, k = mean_weights_pA(), indegrees_full()
    w_ext = PSP_MV * psc_per_psp()
    factor = 0.001 * tau_syn * (1.0 - math.sqrt(k_scale))
    return [factor * (sum(w[i][j] * k[i][j] * rates[j] for j in range(8))
                      + w_ext * K_EXT_FULL[i] * EXTERNAL_RATE_HZ) for i in range(8)]


def dc_input_pA(k_scale: float = 1.0, tau_syn: float = NEURON["tau_syn_ex"]) -> list[float]:
    """Input "dc": the mean current of the Poisson input it replaces (scaled weight and
    in-degree), 0.001 tau_syn w_ext K_ext 8 Hz per population."""
    w_ext = PSP_MV * psc_per_psp() / math.sqrt(k_scale)
    return [0.001 * tau_syn * w_ext * K_EXT_FULL[i] * k_scale * EXTERNAL_RATE_HZ for i in range(8)]


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="nest_compare.py",
        description="Run workloads (the microcircuit, the dpsnn) on NEST and on Ranvier, one after the other "
                    "with the same threads, and print construction time, simulation time, real-time factor, "
                    "peak memory, bytes "
                    "per synapse, synapses and population rates side by side with the ratios NEST / Ranvier.")
    ap.add_argument("models", nargs="+", choices=MODEL_CHOICES, metavar="MODEL",
                    help="the workloads, one after the other: microcircuit, dpsnn, or all (both) "
                         "(docs/workloads/<model>.md)")
    mc = ap.add_argument_group("microcircuit")
    mc.add_argument("--scale", type=float, default=0.1, help="neuron number scaling (1 = full scale, 77,169 "
                    "neurons, about 299 M synapses and 14.5 GB in NEST; default 0.1)")
    mc.add_argument("--k-scale", type=float, default=None, help="in-degree scaling in (0, 1] (weights / "
                    "sqrt(k), DC compensation of the lost mean input; default 1, not passed to Ranvier)")
    mc.add_argument("--input", choices=INPUTS, default=None, help="external input: poisson (default) or dc")
    mc.add_argument("--nest-implementation", choices=IMPLEMENTATIONS, default="ours",
                    help="NEST side: ours (this harness's PyNEST model, the default) or inm6 (the model of the "
                         "INM-6 `microcircuit` package, pip install microcircuit; never a dependency)")
    dp = ap.add_argument_group("dpsnn")
    dp.add_argument("--neurons", type=int, default=2048, help="network size (default 2048; the benchmark's "
                    "is 20480)")
    dp.add_argument("--synapses-per-neuron", type=int, default=1125,
                    help="expected out-degree, below --neurons (default 1125, the benchmark's)")
    dp.add_argument("--dpsnn-nest-neuron", choices=DPSNN_NEST_NEURONS, default="aeif_psc_delta",
                    help="NEST model of the excitatory neurons: aeif_psc_delta (lifca's adaptation, the default) "
                         "or iaf_psc_delta (no adaptation: another network); see bench/stdp_compare.py")
    ap.add_argument("--threads", type=int, default=usable_cores(),
                    help="threads of each simulator (default: the usable cores, here %(default)s)")
    ap.add_argument("--duration-ms", type=float, default=1000.0, help="simulated time, transient included "
                    "(default 1000)")
    ap.add_argument("--transient-ms", type=float, default=500.0, help="rates count spikes at t >= this "
                    "(default 500)")
    ap.add_argument("--seed", type=int, default=1, help=f"seed of both simulators, 1..{MAX_SEED} (default 1)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each simulator (interleaved); times are "
                    "medians, memory the largest, rates the means (default 1)")
    ap.add_argument("--out", type=Path, default=None, help="write nest_compare.json, nest_compare.csv and "
                    "each run's files here")
    ap.add_argument("--skip-nest", action="store_true", help="run Ranvier only")
    ap.add_argument("--skip-ranvier", action="store_true", help="run NEST only")
    return ap


def check_args(a: argparse.Namespace) -> argparse.Namespace:
    """Raise HarnessError with a clear message for a bad combination; fill in defaults (a.models:
    the models to run, in order, "all" expanded)."""
    models = []
    for m in a.models:
        for x in (MODELS if m == "all" else (m,)):
            if x not in models:
                models.append(x)
    a.models = models
    if not (math.isfinite(a.scale) and 0.0 < a.scale <= 1.0):
        raise HarnessError(f"--scale must lie in (0, 1], got {a.scale}")
    if a.k_scale is not None and not (math.isfinite(a.k_scale) and 0.0 < a.k_scale <= 1.0):
        raise HarnessError(f"--k-scale must lie in (0, 1], got {a.k_scale}")
    if a.threads < 1:
        raise HarnessError(f"--threads must be at least 1, got {a.threads}")
    if not (math.isfinite(a.duration_ms) and a.duration_ms > 0):
        raise HarnessError(f"--duration-ms must be positive, got {a.duration_ms}")
    steps = a.duration_ms / RESOLUTION_MS
    if abs(steps - round(steps)) > 1e-6:
        raise HarnessError(f"--duration-ms must be a multiple of the resolution {RESOLUTION_MS} ms, "
                           f"got {a.duration_ms}")
    if not (math.isfinite(a.transient_ms) and 0.0 <= a.transient_ms < a.duration_ms):
        raise HarnessError(f"--transient-ms must lie in [0, --duration-ms = {a.duration_ms}), "
                           f"got {a.transient_ms}")
    if not 1 <= a.seed <= MAX_SEED:
        raise HarnessError(f"--seed must lie in [1, {MAX_SEED}] (NEST's rng_seed range), got {a.seed}")
    if a.repeats < 1:
        raise HarnessError(f"--repeats must be at least 1, got {a.repeats}")
    if "dpsnn" in a.models:
        if a.neurons < 3:
            raise HarnessError(f"--neurons must be at least 3, got {a.neurons}")
        if not 0 <= a.synapses_per_neuron < a.neurons:
            raise HarnessError(f"--synapses-per-neuron must lie in [0, --neurons = {a.neurons}), got "
                               f"{a.synapses_per_neuron}: for a network this small give, say, "
                               f"--synapses-per-neuron {max(1, a.neurons // 10)}")
    if a.nest_implementation == "inm6":
        if "microcircuit" not in a.models:
            raise HarnessError("--nest-implementation applies to the microcircuit only; add the model "
                               "microcircuit or leave the option out")
        empty = [p for p, n in zip(POPULATIONS, N_FULL) if round(n * a.scale) < 1]
        if empty:
            raise HarnessError(f"--scale {a.scale:g} with --nest-implementation inm6: the package rounds "
                               f"{', '.join(empty)} to no neuron at all (it keeps no minimum of one); "
                               f"give --scale {1.0 / min(N_FULL):.5f} or more")
    if a.skip_nest and a.skip_ranvier:
        raise HarnessError("--skip-nest and --skip-ranvier together leave nothing to run")
    if a.out is not None and a.out.exists() and not a.out.is_dir():
        raise HarnessError(f"--out {a.out} exists and is not a folder")
    return a


def parse_args(argv=None) -> argparse.Namespace:
    ap = build_parser()
    a = ap.parse_args(argv)
    try:
        return check_args(a)
    except HarnessError as e:
        ap.error(str(e))   # exits 2 with usage and "nest_compare.py: error: ..."


def workload(a: argparse.Namespace) -> dict:
    """The microcircuit both simulators run, as plain data (also what the NEST child gets)."""
    return {"model": "microcircuit", "nest_implementation": a.nest_implementation, "scale": a.scale,
            "k_scale": 1.0 if a.k_scale is None else a.k_scale,
            "k_scale_given": a.k_scale is not None, "input": a.input or "poisson",
            "input_given": a.input is not None, "threads": a.threads, "duration_ms": a.duration_ms,
            "transient_ms": a.transient_ms, "seed": a.seed, "repeats": a.repeats, "resolution_ms": RESOLUTION_MS}


def dpsnn_workload(a: argparse.Namespace) -> dict:
    """The static dpsnn both simulators run: what bench/stdp_compare.py's children read (its
    workload, plastic False, the E->E weights not read back)."""
    return {"model": "dpsnn", "neurons": a.neurons, "synapses_per_neuron": a.synapses_per_neuron, "sets": [],
            "threads": a.threads, "duration_ms": a.duration_ms, "transient_ms": a.transient_ms, "seed": a.seed,
            "repeats": a.repeats, "resolution_ms": RESOLUTION_MS, "nest_neuron": a.dpsnn_nest_neuron,
            "plastic": False, "read_weights": False}


def workloads(a: argparse.Namespace) -> dict:
    """model -> its workload, in the order the models run."""
    return {m: workload(a) if m == "microcircuit" else dpsnn_workload(a) for m in a.models}


# ---------------------------------------------------------------------------------------------
# Children
# ---------------------------------------------------------------------------------------------
def nest_simulate(w: dict) -> dict:
    """Build and simulate the microcircuit in PyNEST in this process (the NEST child)."""
    import nest
    import numpy as np

    h = w["resolution_ms"]
    k = w["k_scale"]
    sizes = population_sizes(w["scale"])
    numbers = synapse_numbers(w["scale"], k)
    weights = [[x / math.sqrt(k) for x in row] for row in mean_weights_pA()]
    w_ext = PSP_MV * psc_per_psp() / math.sqrt(k)
    k_ext = external_indegrees(k)
    dc = dc_compensation_pA(k) if k < 1.0 else [0.0] * 8
    if w["input"] == "dc":
        dc = [a + b for a, b in zip(dc, dc_input_pA(k))]

    nest.set_verbosity("M_ERROR")
    rss_after_import = rss_now()
    start = time.perf_counter()
    nest.ResetKernel()
    nest.set(resolution=h, local_num_threads=w["threads"], rng_seed=w["seed"], print_time=False)
    pops = []
    for i in range(8):
        pop = nest.Create("iaf_psc_exp", sizes[i], params=dict(NEURON, I_e=dc[i]))
        pop.V_m = nest.random.normal(mean=V0_MEAN_MV[i], std=V0_SD_MV[i])
        pops.append(pop)
    create_s = time.perf_counter() - start
    # NEST holds at most 2^27 - 2 connections per thread and synapse model: one copy of
    # static_synapse per source population keeps the full-scale model under it on 2 threads.
    for name in POPULATIONS:
        nest.CopyModel("static_synapse", f"static_from_{name}")
    for i in range(8):            # target
        for j in range(8):        # source
            if numbers[i][j] == 0:
                continue
            mean = weights[i][j]
            normal = nest.random.normal(mean=mean, std=WEIGHT_REL_SD * abs(mean))
            weight = nest.math.max(normal, 0.0) if mean > 0 else nest.math.min(normal, 0.0)   # clipped at 0
            d = DELAY_MEAN_MS[EXCITATORY[j]]
            delay = nest.math.redraw(nest.random.normal(mean=d, std=DELAY_REL_SD * d), min=0.5 * h, max=math.inf)
            nest.Connect(pops[j], pops[i],
                         conn_spec={"rule": "fixed_total_number", "N": numbers[i][j],
                                    "allow_autapses": True, "allow_multapses": True},
                         syn_spec={"synapse_model": f"static_from_{POPULATIONS[j]}", "weight": weight,
                                   "delay": delay})
    synapses = nest.GetKernelStatus("num_connections")
    recorders = []
    for i in range(8):
        if w["input"] == "poisson" and k_ext[i] > 0:
            gen = nest.Create("poisson_generator", params={"rate": k_ext[i] * EXTERNAL_RATE_HZ})
            nest.Connect(gen, pops[i], "all_to_all", {"weight": w_ext, "delay": EXTERNAL_DELAY_MS})
        rec = nest.Create("spike_recorder", params={"record_to": "memory"})
        nest.Connect(pops[i], rec)
        recorders.append(rec)
    connections = nest.GetKernelStatus("num_connections")
    construction = time.perf_counter() - start

    start = time.perf_counter()
    nest.Simulate(w["duration_ms"])
    simulate = time.perf_counter() - start

    window_s = (w["duration_ms"] - w["transient_ms"]) * 1e-3
    rates, spikes = {}, 0
    for name, size, rec in zip(POPULATIONS, sizes, recorders):
        times = np.asarray(rec.get("events")["times"])
        spikes += int(times.size)
        rates[name] = int(np.count_nonzero(times >= w["transient_ms"])) / size / window_s
    status = nest.GetKernelStatus()
    timers = _nest_timers(status)
    return {"simulator": f"NEST {nest.__version__}", "implementation": "ours", "neurons": sum(sizes),
            "synapses": int(synapses),
            "device_connections": int(connections - synapses), "construction_s": construction,
            "create_s": create_s, "simulate_s": simulate,
            "real_time_factor": simulate / (w["duration_ms"] * 1e-3), "peak_rss_bytes": peak_rss_self(),
            "rss_after_import_bytes": rss_after_import,
            "rates_hz": rates, "spikes_total": spikes, "nest_kernel_timers_s": timers,
            "threads": int(status["local_num_threads"]),
            "omp_environment": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES",
                                                          "OMP_WAIT_POLICY") if k in os.environ}}


def _nest_timers(status: dict) -> dict:
    return {key: (float(v[0]) if hasattr(v, "__len__") else float(v)) for key, v in status.items()
            if key.startswith("time_") and not key.endswith("_cpu")}


def inm6_simulate(w: dict, folder: Path) -> dict:
    """Build and simulate the model of the INM-6 `microcircuit` package (PyPI; the PyNEST
    Potjans-Diesmann implementation) in this process, scaled with its own N_scaling = scale and
    K_scaling = k_scale, its bg_input_type = input, this run's seed, threads and resolution.
    Nothing of the package is changed but the spike recorders' backend (memory instead of its
    ASCII files, as the other runs record). Its construction (Network() through connect()) ends
    with nest.Prepare(), so NEST's connection infrastructure is built there, not in Simulate."""
    import copy

    import nest
    import numpy as np
    import microcircuit
    from microcircuit import network_params, sim_params, stimulus_params

    if hasattr(nest, "VerbosityLevel"):          # NEST 3.10
        nest.verbosity = nest.VerbosityLevel.ERROR
    else:  # pragma: no cover - older NEST
        nest.set_verbosity("M_ERROR")
    rss_after_import = rss_now()
    sim = copy.deepcopy(sim_params.default_sim_dict)
    net = copy.deepcopy(network_params.default_net_dict)
    stim = copy.deepcopy(stimulus_params.default_stim_dict)
    net.update(N_scaling=w["scale"], K_scaling=w["k_scale"], bg_input_type=w["input"])
    data = folder / "inm6-data"
    sim.update(sim_resolution=w["resolution_ms"], local_num_threads=w["threads"], rng_seed=w["seed"],
               print_time=False, overwrite_files=True, data_path=str(data) + os.sep, rec_dev=["spike_recorder"],
               store_metadata=False)
    stim.update(thalamic_input=False, dc_transient=False)

    start = time.perf_counter()
    network = microcircuit.Network(sim, net, stim)
    network.create()
    network.spike_recorders.set(record_to="memory")
    create_s = time.perf_counter() - start
    network.connect()
    construction = time.perf_counter() - start
    connections = int(nest.GetKernelStatus("num_connections"))
    devices = len(nest.GetConnections(target=network.spike_recorders))
    if w["input"] == "poisson":
        devices += len(nest.GetConnections(source=network.poisson_bg_input))
    prepare_s = _nest_timers(nest.GetKernelStatus()).get("time_communicate_prepare", 0.0)

    start = time.perf_counter()
    network.simulate(w["duration_ms"])
    simulate = time.perf_counter() - start
    peak = peak_rss_self()

    sizes = [int(n) for n in network.num_neurons]
    window_s = (w["duration_ms"] - w["transient_ms"]) * 1e-3
    rates, spikes = {}, 0
    for i, name in enumerate(net["populations"]):
        times = np.asarray(network.spike_recorders[i].get("events")["times"])
        spikes += int(times.size)
        rates[name] = int(np.count_nonzero(times >= w["transient_ms"])) / sizes[i] / window_s
    status = nest.GetKernelStatus()
    return {"simulator": f"NEST {nest.__version__} (INM-6 microcircuit {microcircuit.__version__})",
            "implementation": "inm6", "package_version": microcircuit.__version__,
            "package_file": str(Path(microcircuit.__file__).parent),
            "package_parameters": {"N_scaling": w["scale"], "K_scaling": w["k_scale"], "bg_input_type": w["input"],
                                   "V0_type": net["V0_type"], "rng_seed": w["seed"],
                                   "local_num_threads": w["threads"]},
            "neurons": sum(sizes), "population_sizes": dict(zip(net["populations"], sizes)),
            "synapses": connections - devices, "synapses_planned": int(np.sum(network.num_synapses)),
            "device_connections": devices, "construction_s": construction, "create_s": create_s,
            "prepare_in_construction_s": prepare_s, "simulate_s": simulate,
            "real_time_factor": simulate / (w["duration_ms"] * 1e-3), "peak_rss_bytes": peak,
            "rss_after_import_bytes": rss_after_import, "rates_hz": rates, "spikes_total": spikes,
            "nest_kernel_timers_s": _nest_timers(status), "threads": int(status["local_num_threads"])}


def _nest_child_main(kind: str, workload_json: str, result_path: str) -> int:
    """`nest_compare.py _nest-child|_inm6-child WORKLOAD.json RESULT.json`: exit 3 when `import nest`
    fails, 4 when the INM-6 package (_inm6-child) does not load."""
    w = json.loads(Path(workload_json).read_text())
    os.environ.setdefault("OMP_NUM_THREADS", str(w["threads"]))
    os.environ.setdefault("MPLBACKEND", "Agg")     # the INM-6 package imports matplotlib.pyplot
    result = Path(result_path)
    try:
        import nest  # noqa: F401
    except Exception as e:  # noqa: BLE001  (ImportError, or any failure of a broken installation)
        result.write_text(json.dumps({"import_error": f"{type(e).__name__}: {e}"}))
        return 3
    if kind == "_inm6-child":
        try:
            import microcircuit
            from microcircuit import network_params, sim_params, stimulus_params  # noqa: F401
            if not hasattr(microcircuit, "Network"):
                raise ImportError(f"{microcircuit.__file__} has no Network: not the INM-6 package")
        except Exception as e:  # noqa: BLE001
            result.write_text(json.dumps({"inm6_error": f"{type(e).__name__}: {e}"}))
            return 4
        result.write_text(json.dumps(inm6_simulate(w, result.parent)))
        return 0
    result.write_text(json.dumps(nest_simulate(w)))
    return 0


class Inm6Unavailable(RuntimeError):
    """--nest-implementation inm6 and the INM-6 package is missing or does not load: the run stops."""


def run_nest(w: dict, folder: Path) -> dict:
    """The microcircuit on NEST in a child process: this file's model, or the INM-6 package's."""
    folder.mkdir(parents=True, exist_ok=True)
    if not module_found("nest"):
        raise NestUnavailable(NEST_MISSING)
    inm6 = w.get("nest_implementation") == "inm6"
    if inm6 and not module_found("microcircuit"):
        raise Inm6Unavailable(INM6_MISSING)
    spec, result, log = folder / "workload.json", folder / "result.json", folder / "nest.log"
    spec.write_text(json.dumps(w))
    result.unlink(missing_ok=True)
    env = nest_env(w["threads"])
    code, rss_parent, wall = run_child([sys.executable, str(Path(__file__).resolve()),
                                         "_inm6-child" if inm6 else "_nest-child", str(spec), str(result)], log, env)
    if code == 3:
        why = json.loads(result.read_text()).get("import_error", "")
        raise NestUnavailable(NEST_BROKEN.format(why=why))
    if code == 4 and result.exists():
        raise Inm6Unavailable(INM6_BROKEN.format(why=json.loads(result.read_text()).get("inm6_error", "")))
    if code != 0 or not result.exists():
        what = "the INM-6 microcircuit package's model on NEST" if inm6 else "the NEST run"
        raise RuntimeError(f"{what} failed (exit {code}); the end of {log}:\n{tail(log)}")
    r = json.loads(result.read_text())
    r["peak_rss_bytes_wait4"] = rss_parent
    r["process_wall_s"] = wall
    return r


def ranvier_command(w: dict, out: Path) -> list[str]:
    cmd = [sys.executable, "-m", "ranvier", "run", "--model", w["model"], "--set", f"scale={w['scale']!r}",
           "--threads", str(w["threads"]), "--duration-ms", repr(w["duration_ms"]), "--seed", str(w["seed"]),
           "--out", str(out), "--force", "--quiet"]
    if w.get("k_scale_given"):
        cmd += ["--set", f"k_scale={w['k_scale']!r}"]
    if w.get("input_given"):
        cmd += ["--set", f'input="{w["input"]}"']
    return cmd


def _ranvier_population_sizes(summary: dict, counts: dict) -> dict:
    """Population sizes of a Ranvier run, from the whole-run rates of its summary.json (rate =
    count / size / duration) and the spike counts of spikes.h5. (Importing ranvier here instead
    would pin this process to one core, and with it the processes started after.)"""
    sizes, span = {}, summary["duration_ms"] * 1e-3
    for name, rate in (summary.get("rates_hz") or {}).items():
        if rate and counts.get(name):
            sizes[name] = round(counts[name] / (rate * span))
    return sizes


def ranvier_rates(out: Path, summary: dict, transient_ms: float) -> dict:
    """Rates (Hz) per population over [transient_ms, duration) from spikes.h5."""
    import h5py
    times = {}
    with h5py.File(out / "spikes.h5", "r") as f:
        for name, group in f["spikes"].items():
            times[name] = group["timestamps"][()]
    sizes = _ranvier_population_sizes(summary, {n: len(t) for n, t in times.items()})
    window_s = (summary["duration_ms"] - transient_ms) * 1e-3
    rates = {}
    for name in summary.get("rates_hz") or times:
        t = times.get(name)
        late = 0 if t is None else int((t >= transient_ms).sum())
        rates[name] = late / sizes[name] / window_s if late else 0.0
    return rates


def run_ranvier(w: dict, folder: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    out, log = folder / "run", folder / "ranvier.log"
    code, rss_parent, wall = run_child(ranvier_command(w, out), log,
                                        dict(os.environ, OMP_NUM_THREADS=str(w["threads"])))
    if code != 0 or not (out / "summary.json").exists():
        raise RuntimeError(f"the Ranvier run failed (exit {code}): {' '.join(ranvier_command(w, out))}\n"
                           f"{tail(log)}")
    s = json.loads((out / "summary.json").read_text())
    rss = sum(s["peak_rss_bytes"]) if isinstance(s["peak_rss_bytes"], list) else s["peak_rss_bytes"]
    return {"simulator": f"Ranvier {s.get('version', '?')}", "neurons": s["neurons"], "synapses": s["synapses"],
            "construction_s": s["build_seconds"], "simulate_s": s["simulate_seconds"],
            "real_time_factor": s["real_time_factor"], "peak_rss_bytes": rss,
            "peak_rss_bytes_wait4": rss_parent, "process_wall_s": wall,
            "rates_hz": ranvier_rates(out, s, w["transient_ms"]), "spikes_total": s.get("spikes_total"),
            "threads": s.get("threads")}


def resolve_dpsnn(w: dict, folder: Path) -> dict:
    """The dpsnn's parameters as Ranvier resolves them (and the population sizes), from
    stdp_compare.py's `_resolve` child; a ConfigError of the model raises HarnessError."""
    try:
        return stdp_compare._child("_resolve", w, folder, dict(os.environ, OMP_NUM_THREADS=str(w["threads"])))
    except stdp_compare.ConfigRefused as e:
        raise HarnessError(str(e)) from None


def run_dpsnn_nest(w: dict, folder: Path) -> dict:
    """The static dpsnn on NEST: stdp_compare.py's `_nest` child (its PyNEST network)."""
    if not module_found("nest"):
        raise NestUnavailable(NEST_MISSING)
    return stdp_compare._child("_nest", w, folder, nest_env(w["threads"]))


def run_dpsnn_ranvier(w: dict, folder: Path) -> dict:
    """The static dpsnn on Ranvier: stdp_compare.py's `_ranvier` child (the Python API)."""
    return stdp_compare._child("_ranvier", w, folder, dict(os.environ, OMP_NUM_THREADS=str(w["threads"])))


def aggregate(runs: list[dict]) -> dict | None:
    """One figure per simulator from its repeats: medians of times, the largest memory, mean rates."""
    if not runs:
        return None
    first = runs[0]
    out = {"simulator": first["simulator"], "neurons": first["neurons"], "synapses": first["synapses"],
           "repeats": len(runs)}
    for key in ("construction_s", "simulate_s", "real_time_factor"):
        out[key] = statistics.median(r[key] for r in runs)
    out["real_time_factor_min"] = min(r["real_time_factor"] for r in runs)
    out["peak_rss_bytes"] = max(r["peak_rss_bytes"] for r in runs)
    out["bytes_per_synapse"] = out["peak_rss_bytes"] / out["synapses"] if out["synapses"] else None
    out["rates_hz"] = {p: statistics.fmean(r["rates_hz"].get(p, 0.0) for r in runs) for p in first["rates_hz"]}
    out["runs"] = runs
    return out


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------

# (key, label, format of one value)
FIGURES = (
    ("construction_s", "network construction (s)", "{:.2f}"),
    ("simulate_s", "simulation wall (s)", "{:.2f}"),
    ("real_time_factor", "real-time factor (wall s / simulated s)", "{:.3f}"),
    ("peak_rss_mib", "peak resident memory (MiB)", "{:.0f}"),
    ("bytes_per_synapse", "bytes per synapse", "{:.1f}"),
    ("synapses", "synapses", "{:,}"),
    ("neurons", "neurons", "{:,}"),
)


def deviation_pct(value, reference) -> float | None:
    if value is None or reference is None or reference == 0:
        return None
    return 100.0 * (value - reference) / reference


def _figure(result: dict | None, key: str):
    if result is None:
        return None
    if key == "peak_rss_mib":
        return result["peak_rss_bytes"] / MIB if result.get("peak_rss_bytes") is not None else None
    if key == "bytes_per_synapse" and result.get("bytes_per_synapse") is None and result.get("synapses"):
        return result["peak_rss_bytes"] / result["synapses"]
    return result.get(key)


def reference_nest_figures() -> dict:
    return {"construction_s": REFERENCE_NEST["construction_s"], "simulate_s": None,
            "real_time_factor": REFERENCE_NEST["real_time_factor"],
            "peak_rss_mib": REFERENCE_NEST["peak_rss_bytes"] / MIB,
            "bytes_per_synapse": REFERENCE_NEST["bytes_per_synapse"],
            "synapses": round(sum(map(sum, synapse_numbers(1.0)))), "neurons": sum(N_FULL)}


def comparison_rows(nest: dict | None, ranvier: dict | None, reference: dict | None = None) -> list[dict]:
    """One row per figure: label, the two values, NEST / Ranvier, and the reference (or None)."""
    rows = []
    for key, label, fmt in FIGURES:
        a, b = _figure(nest, key), _figure(ranvier, key)
        rows.append({"key": key, "label": label, "format": fmt, "nest": a, "ranvier": b, "ratio": ratio(a, b),
                     "reference": None if reference is None else reference.get(key)})
    return rows


def rate_rows(nest: dict | None, ranvier: dict | None, populations=POPULATIONS,
              reference: dict | None = REFERENCE_RATES_HZ) -> list[dict]:
    """One row per population: the reference (None without one), each rate, its deviation from
    the reference (%) and NEST / Ranvier."""
    rows = []
    for p in populations:
        ref = None if reference is None else reference.get(p)
        a = None if nest is None else nest["rates_hz"].get(p)
        b = None if ranvier is None else ranvier["rates_hz"].get(p)
        rows.append({"population": p, "reference": ref, "nest": a, "nest_dev_pct": deviation_pct(a, ref),
                     "ranvier": b, "ranvier_dev_pct": deviation_pct(b, ref), "ratio": ratio(a, b)})
    return rows


def format_comparison(nest: dict | None, ranvier: dict | None, reference: dict | None = None) -> str:
    rows = comparison_rows(nest, ranvier, reference)
    headers = ["figure", _name(nest, "NEST"), _name(ranvier, "Ranvier"), "NEST / Ranvier"]
    if reference is not None:
        headers += ["NEST reference", "reference / Ranvier"]
    body = []
    for r in rows:
        line = [r["label"], format_value(r["format"], r["nest"]), format_value(r["format"], r["ranvier"]), format_value("{:.2f}", r["ratio"])]
        if reference is not None:
            line += [format_value(r["format"], r["reference"]), format_value("{:.2f}", ratio(r["reference"], r["ranvier"]))]
        body.append(line)
    return format_table(headers, body)


def format_rates(nest: dict | None, ranvier: dict | None, populations=POPULATIONS,
                 reference: dict | None = REFERENCE_RATES_HZ) -> str:
    rows = rate_rows(nest, ranvier, populations, reference)
    if reference is None:
        headers = ["population", "NEST (Hz)", "Ranvier (Hz)", "NEST / Ranvier"]
        body = [[r["population"], format_value("{:.3f}", r["nest"]), format_value("{:.3f}", r["ranvier"]), format_value("{:.2f}", r["ratio"])]
                for r in rows]
        return format_table(headers, body)
    headers = ["population", "reference (Hz)", "NEST (Hz)", "NEST dev. (%)", "Ranvier (Hz)",
               "Ranvier dev. (%)", "NEST / Ranvier"]
    body = [[r["population"], f"{r['reference']:.3f}", format_value("{:.3f}", r["nest"]), format_value("{:+.1f}", r["nest_dev_pct"]),
             format_value("{:.3f}", r["ranvier"]), format_value("{:+.1f}", r["ranvier_dev_pct"]), format_value("{:.2f}", r["ratio"])]
            for r in rows]
    return format_table(headers, body)


def _name(result: dict | None, default: str) -> str:
    return default if result is None else result.get("simulator", default)


def _common(w: dict) -> str:
    repeats = w.get("repeats", 1)
    return (f"{w['threads']} thread(s), {w['duration_ms']:g} ms simulated, rates over "
            f"[{w['transient_ms']:g}, {w['duration_ms']:g}) ms, seed {w['seed']}"
            + (f", {repeats} repeats (median times, largest memory)" if repeats > 1 else ""))


def describe(w: dict) -> str:
    nest_side = ("\nNEST side: the model of the INM-6 `microcircuit` package (PyPI), N_scaling = scale, "
                 "K_scaling = k_scale" if w.get("nest_implementation") == "inm6" else "")
    return (f"{w['model']}: scale {w['scale']:g}, k_scale {w['k_scale']:g}, {w['input']} input, {_common(w)}"
            + nest_side + f"\nhost: {cpu_model()}, {usable_cores()} usable core(s)")


def describe_dpsnn(w: dict, resolved: dict | None) -> str:
    sizes = "" if not resolved else " (" + ", ".join(f"{k} {v:,}" for k, v in resolved["sizes"].items()) + ")"
    return (f"dpsnn (static): {w['neurons']:,} neurons{sizes}, {w['synapses_per_neuron']} synapses per neuron, "
            f"{_common(w)}\nNEST side: bench/stdp_compare.py's network, {w['nest_neuron']} for F and B, "
            f"iaf_psc_delta for I\nhost: {cpu_model()}, {usable_cores()} usable core(s)")


def report(w: dict, nest: dict | None, ranvier: dict | None, notes: list[str]) -> str:
    full = w["scale"] == 1.0 and w["k_scale"] == 1.0
    reference = reference_nest_figures() if w["scale"] == 1.0 else None
    parts = [describe(w), ""]
    parts.append(format_comparison(nest, ranvier, reference))
    if reference is not None:
        parts.append(f"\nNEST reference: {REFERENCE_NEST['label']}: construction 120 s, 260 s per simulated "
                     f"second, 14.5 GB resident, 49 B/synapse"
                     + ("" if full else f" (full in-degrees; this run has k_scale {w['k_scale']:g})")
                     + (f"; this run has {w['threads']} thread(s)" if w["threads"] != REFERENCE_NEST["threads"]
                        else ""))
    parts.append("")
    parts.append("Population rates after the transient; reference: docs/workloads/microcircuit.md (full scale, NEST, Poisson input)")
    parts.append(format_rates(nest, ranvier))
    if nest is not None and nest.get("runs") and nest["runs"][0].get("implementation") == "inm6":
        first = nest["runs"][0]
        parts.append(f"\nThe INM-6 package calls nest.Prepare() at the end of its connect(): NEST's connection "
                     f"infrastructure ({first.get('prepare_in_construction_s', 0.0):.2f} s, kernel "
                     f"time_communicate_prepare) is in its construction, not in its simulation wall.")
    elif nest is not None and nest.get("runs"):
        timers = nest["runs"][0].get("nest_kernel_timers_s", {})
        if timers.get("time_communicate_prepare"):
            parts.append(f"\nNEST builds its connection infrastructure in the first Simulate call: "
                         f"{timers['time_communicate_prepare']:.2f} s of its simulation wall "
                         f"(kernel time_communicate_prepare).")
    if not full or w["input"] != "poisson":
        parts.append("The reference rates are those of the full-scale network with Poisson input: downscaled "
                     "runs (scale or k_scale < 1) and DC input drift from them (docs/workloads/microcircuit.md), so "
                     "compare NEST with Ranvier here rather than either with the reference.")
    parts += notes
    return "\n".join(parts)


def report_dpsnn(w: dict, resolved: dict | None, nest: dict | None, ranvier: dict | None, notes: list[str]) -> str:
    parts = [describe_dpsnn(w, resolved), "", format_comparison(nest, ranvier), "",
             "Population rates after the transient (E: F and B together; all: every neuron)",
             format_rates(nest, ranvier, DPSNN_POPULATIONS, None)]
    if nest is not None and nest.get("runs"):
        prepare = nest["runs"][0].get("nest_kernel_timers_s", {}).get("time_communicate_prepare")
        if prepare:
            parts.append(f"\nNEST builds its connection infrastructure in the first Simulate call: {prepare:.2f} s "
                         f"of its simulation wall (kernel time_communicate_prepare).")
    return "\n".join(parts + notes)


# ---------------------------------------------------------------------------------------------
# Records, the combined table, files
# ---------------------------------------------------------------------------------------------
def model_populations(model: str):
    return POPULATIONS if model == "microcircuit" else DPSNN_POPULATIONS


def model_reference(w: dict) -> tuple[dict | None, dict | None]:
    """(reference NEST figures, reference rates) of a model's workload (None where it has none)."""
    if w["model"] == "microcircuit":
        return (reference_nest_figures() if w["scale"] == 1.0 else None), REFERENCE_RATES_HZ
    return None, None


def model_record(w: dict, nest: dict | None, ranvier: dict | None, notes: list[str],
                 resolved: dict | None = None) -> dict:
    """Everything about one model's comparison, as plain data (one entry of nest_compare.json)."""
    reference, rates_reference = model_reference(w)
    record = {"model": w["model"], "workload": w, "nest": nest, "ranvier": ranvier,
              "comparison": comparison_rows(nest, ranvier, reference),
              "rates": rate_rows(nest, ranvier, model_populations(w["model"]), rates_reference), "notes": notes}
    if w["model"] == "microcircuit":
        record["reference_nest"] = REFERENCE_NEST if reference is not None else None
        record["reference_rates_hz"] = REFERENCE_RATES_HZ
    else:
        record["resolved"] = resolved
    return record


def combined_rows(records: list[dict]) -> list[dict]:
    """One row per model and figure (the comparison's, then each population's rate): the two
    values and NEST / Ranvier, with the reference and the deviations where the model has them."""
    rows = []
    for rec in records:
        for r in rec["comparison"]:
            rows.append({"model": rec["model"], "figure": r["key"], "label": r["label"], "format": r["format"],
                         "nest": r["nest"], "ranvier": r["ranvier"], "nest_over_ranvier": r["ratio"],
                         "reference": r["reference"], "nest_deviation_pct": None, "ranvier_deviation_pct": None})
        for r in rec["rates"]:
            rows.append({"model": rec["model"], "figure": f"rate_{r['population']}_hz",
                         "label": f"rate {r['population']} (Hz)", "format": "{:.3f}", "nest": r["nest"],
                         "ranvier": r["ranvier"], "nest_over_ranvier": r["ratio"], "reference": r["reference"],
                         "nest_deviation_pct": r["nest_dev_pct"], "ranvier_deviation_pct": r["ranvier_dev_pct"]})
    return rows


def format_combined(records: list[dict]) -> str:
    """All models in one table: model, figure, NEST, Ranvier, NEST / Ranvier."""
    body, previous = [], None
    for r in combined_rows(records):
        body.append([r["model"] if r["model"] != previous else "", r["label"], format_value(r["format"], r["nest"]),
                     format_value(r["format"], r["ranvier"]), format_value("{:.2f}", r["nest_over_ranvier"])])
        previous = r["model"]
    return format_table(["model", "figure", "NEST", "Ranvier", "NEST / Ranvier"], body, left=2)


def simulators_line(records: list[dict]) -> str:
    return "; ".join(f"{rec['model']}: {_name(rec['nest'], 'NEST (not run)')} against "
                     f"{_name(rec['ranvier'], 'Ranvier (not run)')}" for rec in records)


CSV_FIELDS = ("model", "figure", "nest", "ranvier", "nest_over_ranvier", "reference", "nest_deviation_pct",
              "ranvier_deviation_pct")


def write_outputs(out: Path, records: list[dict], notes: list[str]) -> None:
    """nest_compare.json (every model's record, the combined rows, the notes, the host) and
    nest_compare.csv (the combined rows)."""
    out.mkdir(parents=True, exist_ok=True)
    rows = combined_rows(records)
    record = {"models": {rec["model"]: rec for rec in records},
              "combined": [{k: v for k, v in r.items() if k != "format"} for r in rows], "notes": notes,
              "host": {"cpu": cpu_model(), "usable_cores": usable_cores()}}
    (out / "nest_compare.json").write_text(json.dumps(record, indent=2) + "\n")
    with open(out / "nest_compare.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(CSV_FIELDS))
        writer.writeheader()
        for r in rows:
            writer.writerow({k: "" if r[k] is None else r[k] for k in CSV_FIELDS})


# ---------------------------------------------------------------------------------------------
class NothingToRun(RuntimeError):
    pass


def _run_model(a: argparse.Namespace, w: dict, folder: Path, resolved: dict | None, state: dict,
               notes: list[str]) -> tuple[dict | None, dict | None]:
    """The repeats of one model (NEST, Ranvier, NEST, ...): the aggregated figures of each side.
    state["nest_ok"] turns False, with a note, when NEST turns out to be unavailable. Raises
    RuntimeError (a run failed), Inm6Unavailable, or NothingToRun (--skip-ranvier and no NEST)."""
    model = w["model"]
    child_w = w if resolved is None else {**w, **resolved}
    nest_runs, ranvier_runs = [], []
    for k in range(a.repeats):
        tag = f"-{k + 1}" if a.repeats > 1 else ""
        if state["nest_ok"]:
            print(f"{model}: NEST run{tag} ...", file=sys.stderr, flush=True)
            try:
                nest_runs.append(run_nest(child_w, folder / f"nest{tag}") if model == "microcircuit"
                                 else run_dpsnn_nest(child_w, folder / f"nest{tag}"))
            except NestUnavailable as e:
                notes.append(str(e))      # printed once, under the tables
                state["nest_ok"] = False
                if a.skip_ranvier:
                    raise NothingToRun(f"{e}\nnest_compare: --skip-ranvier and no NEST: nothing ran") from None
        if not a.skip_ranvier:
            print(f"{model}: Ranvier run{tag} ...", file=sys.stderr, flush=True)
            ranvier_runs.append(run_ranvier(w, folder / f"ranvier{tag}") if model == "microcircuit"
                                else run_dpsnn_ranvier(child_w, folder / f"ranvier{tag}"))
    return aggregate(nest_runs), aggregate(ranvier_runs)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("_nest-child", "_inm6-child"):
        return _nest_child_main(argv[0], *argv[1:3])
    a = parse_args(argv)
    ws = workloads(a)
    notes: list[str] = []          # about the whole invocation, printed once at the end
    if a.threads > usable_cores():
        notes.append(f"warning: {a.threads} threads on {usable_cores()} usable core(s): oversubscribed timings")
    state = {"nest_ok": not a.skip_nest}
    if state["nest_ok"] and not module_found("nest"):
        if a.skip_ranvier:
            print(f"{NEST_MISSING}\nnest_compare: --skip-ranvier and no NEST: nothing ran", file=sys.stderr)
            return 1
        notes.append(NEST_MISSING)
        state["nest_ok"] = False
    if state["nest_ok"] and "microcircuit" in ws and a.nest_implementation == "inm6" \
            and not module_found("microcircuit"):
        print(f"nest_compare: {INM6_MISSING}", file=sys.stderr)
        return 1
    records = []
    with tempfile.TemporaryDirectory(prefix="nest-compare-") as tmp:
        base = a.out if a.out is not None else Path(tmp)
        resolved = None
        try:
            if "dpsnn" in ws:          # before any run: a bad dpsnn value is refused at once
                resolved = resolve_dpsnn(ws["dpsnn"], base / "dpsnn" / "resolve")
            for model, w in ws.items():
                model_notes: list[str] = []
                nest, ranvier = _run_model(a, w, base / model, resolved if model == "dpsnn" else None, state,
                                           notes)
                if nest is not None and ranvier is not None and nest["synapses"] != ranvier["synapses"]:
                    why = (": each simulator draws its own pairwise-Bernoulli connectivity" if model == "dpsnn"
                           else "")
                    model_notes.append(f"note: synapse counts differ (NEST {nest['synapses']:,}, "
                                       f"Ranvier {ranvier['synapses']:,}){why}")
                record = model_record(w, nest, ranvier, model_notes, resolved if model == "dpsnn" else None)
                records.append(record)
                text = (report(w, nest, ranvier, model_notes) if model == "microcircuit"
                        else report_dpsnn(w, resolved, nest, ranvier, model_notes))
                print(("\n" if len(records) > 1 else "") + text, flush=True)
        except HarnessError as e:
            print(f"nest_compare.py: error: {e}", file=sys.stderr)
            return 2
        except NothingToRun as e:
            print(e, file=sys.stderr)
            return 1
        except Inm6Unavailable as e:
            print(f"nest_compare: {e}", file=sys.stderr)
            return 1
        except RuntimeError as e:
            print(f"nest_compare: {e}", file=sys.stderr)
            return 1
        if len(records) > 1:
            print("\nAll models: NEST / Ranvier of each figure\n" + simulators_line(records) + "\n")
            print(format_combined(records))
        if notes:
            print("\n".join(notes))
        if a.out is not None:
            write_outputs(a.out, records, notes)
            print(f"\nwrote {a.out / 'nest_compare.json'} and {a.out / 'nest_compare.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
