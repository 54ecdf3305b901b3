"""The reference workloads, each a function that returns a validated `Network`.

Every parameter of a model (docs/workloads/<name>.md describes each model, its parameters and
their defaults) is a keyword argument; unknown keywords are refused with the list of known ones.
"""
from __future__ import annotations

import dataclasses
import math

from . import multi_area
from ..errors import ConfigError
from .parameters import check_overrides as _check_overrides
from .parameters import check_scales
from ..core.network import Network, PoissonDrive, Population, Projection

# dpsnn: docs/workloads/dpsnn.md ("AW2.8Hz" configuration of the DPSNN engine's 2019 release).
DPSNN_DEFAULTS = {
    "neurons": 20480,              # columns of 1280 (256 F, 768 B, 256 I); other sizes keep the fractions
    "synapses_per_neuron": 1125,   # p = synapses_per_neuron / neurons for every ordered pair, no autapses
    "fraction_F": 0.2,
    "fraction_B": 0.6,             # the rest (0.2) is I
    "tau_m_exc_ms": 20.0, "tau_m_inh_ms": 10.0,
    "theta_mV": 20.0, "reset_mV": 15.0,
    "tau_arp_exc_ms": 2.0, "tau_arp_inh_ms": 1.0,
    "alpha_c": 1.0,
    "tau_c_exc_ms": 1000.0, "tau_c_inh_ms": 100.0,
    "g_c_exc_mV_per_ms": 0.02, "g_c_inh_mV_per_ms": 0.0,
    # mean efficacy J by source -> target subpopulation, mV
    "J_FF": 0.51511, "J_FB": 0.412534, "J_FI": 0.560233,
    "J_BF": 0.412534, "J_BB": 0.429258, "J_BI": 0.560233,
    "J_IF": -1.5, "J_IB": -1.5, "J_II": -1.5,
    "weight_relative_sd": 0.25,
    "delay_min_ms": 1.0,
    "delay_max_exc_ms": 80.0, "delay_max_inh_ms": 20.0,
    "external_synapses": 400,
    "external_rate_exc_hz": 3.16676, "external_rate_inh_hz": 3.0,
    "external_weight_exc_mV": 0.858516, "external_weight_inh_mV": 1.12047,
    "external_weight_relative_sd": 0.25,
    # F's own external efficacy where it differs from B's (the DPSNN release's slow-wave
    # configurations: 0.832761 mV); None: external_weight_exc_mV, as in the awake state
    "external_weight_F_mV": None,
    "initial": "reset",            # "reset" (V = H, c = 0, as the original) or "uniform" (V ~ U[H, theta))
    # Brain state (docs/dpsnn.md): "aw", the asynchronous awake state of the benchmark (the values
    # above), or "swa", slow-wave activity: DPSNN_SWA's values replace these defaults (any of them
    # can still be set on top).
    "regime": "aw",
    # A grid of columns (docs/dpsnn.md, "The grid of columns"): with columns_x x columns_y > 1, each
    # subpopulation lies column by column and every neuron draws its synapses_per_neuron sources
    # over the columns by distance (ranvier.core.grid.ColumnGrid: the lateral_* law); 1 x 1 is the
    # homogeneous network above.
    "columns_x": 1, "columns_y": 1,
    "lateral_law": "exponential",  # or "gaussian"
    "lateral_length": 1.0,         # decay length (exponential) or sd (gaussian), in column spacings
    "lateral_cutoff": 3.0,         # no synapse from columns farther than this, in column spacings
    "lateral_boundary": "periodic",  # or "open"
    "lateral_decimals": None,      # round the kernel to this many decimals (the DPSNN release: 3); None: exact
    "lateral_inhibitory": "law",   # "law": inhibitory sources by the lateral law too; "local": own column only (the release)
    # Plasticity (docs/workloads/dpsnn.md, "Plasticity"): "none" (or None) keeps every synapse static;
    # "stdp" makes the four excitatory-to-excitatory projections (F, B -> F, B) plastic with NEST's
    # stdp_synapse rule (rv.STDP); the stdp_* parameters are read only then.
    "plasticity": "none",
    "stdp_tau_plus_ms": 20.0,      # pre-synaptic trace K+ (NEST tau_plus)
    "stdp_tau_minus_ms": 20.0,     # post-synaptic trace K- of F and B neurons (NEST tau_minus, a neuron parameter)
    "stdp_lambda": 0.01,           # learning rate, in units of w_max (NEST lambda)
    "stdp_alpha": 1.0,             # depression / potentiation (NEST alpha)
    "stdp_mu_plus": 1.0,           # weight dependence of potentiation: 0 additive, 1 multiplicative
    "stdp_mu_minus": 1.0,          # weight dependence of depression: 0 additive, 1 multiplicative
    "stdp_w_max_factor": 2.0,      # w_max of each plastic projection = factor x its mean efficacy J (NEST Wmax)
    "stdp_pairing": "all-to-all",  # or "nearest-symmetric", "nearest-presynaptic-centered", "nearest-restricted"
}
PLASTICITY_CHOICES = (None, "none", "stdp")
REGIMES = ("aw", "swa")
# regime = "swa": the slow-wave state, found by bench/swa_search.py (docs/dpsnn.md, "Slow waves"):
# stronger recurrent coupling, weaker external drive, spike-frequency adaptation that ends the
# up states.
DPSNN_SWA = {
    # the four E->E efficacies x 2.0; inhibitory efficacies and E->I x 1.9
    "J_FF": 1.03022, "J_FB": 0.825068, "J_BF": 0.825068, "J_BB": 0.858516,
    "J_IF": -2.85, "J_IB": -2.85, "J_II": -2.85,
    "J_FI": 1.064443, "J_BI": 1.064443,
    "g_c_exc_mV_per_ms": 0.2,       # ten times AW's: adaptation ends each up state
    "external_rate_exc_hz": 1.58338, "external_rate_inh_hz": 1.5,   # half of AW's drive
}
# The excitatory-to-excitatory projections that "stdp" makes plastic.
DPSNN_PLASTIC = (("F", "F"), ("F", "B"), ("B", "F"), ("B", "B"))


def dpsnn(**overrides) -> Network:
    """The DPSNN real-time benchmark: LIF neurons with spike-frequency adaptation.

    80 % excitatory (F and B, with adaptation), 20 % inhibitory (I, without), every
    ordered pair connected with p = synapses_per_neuron / neurons, exponential delays
    in whole milliseconds, 400 external Poisson synapses per neuron. plasticity="stdp" makes
    the excitatory-to-excitatory synapses plastic (NEST's stdp_synapse, the stdp_* parameters).
    """
    if overrides.get("plasticity") not in PLASTICITY_CHOICES:
        raise ConfigError(f"dpsnn: 'plasticity' must be \"stdp\" (STDP on the excitatory-to-excitatory synapses) or "
                          f"\"none\" (static synapses, the default), got {overrides['plasticity']!r}")
    if "plasticity" in overrides and overrides["plasticity"] is None:     # Python's spelling of "none"
        overrides = {**overrides, "plasticity": "none"}
    regime = overrides.get("regime", "aw")
    if regime not in REGIMES:
        raise ConfigError(f"dpsnn: 'regime' must be \"aw\" (asynchronous awake, the default) or \"swa\" "
                          f"(slow-wave activity), got {regime!r}")
    base = {**DPSNN_DEFAULTS, **DPSNN_SWA} if regime == "swa" else DPSNN_DEFAULTS
    p = _check_overrides("dpsnn", base, overrides)
    stdp = _dpsnn_stdp(p, overrides)
    n = p["neurons"]
    if n < 3:
        raise ConfigError(f"dpsnn: 'neurons' must be an integer of at least 3, got {n!r}")
    if not (0 < p["fraction_F"] and 0 < p["fraction_B"] and p["fraction_F"] + p["fraction_B"] < 1):
        raise ConfigError("dpsnn: 'fraction_F' and 'fraction_B' must be positive with a sum below 1")
    n_f = round(p["fraction_F"] * n)
    n_b = round((p["fraction_F"] + p["fraction_B"]) * n) - n_f
    n_i = n - n_f - n_b
    if min(n_f, n_b, n_i) <= 0:
        raise ConfigError(f"dpsnn: 'neurons' = {n} is too small to hold the three subpopulations")
    k = p["synapses_per_neuron"]
    if not (0 <= k < n):
        raise ConfigError(f"dpsnn: 'synapses_per_neuron' = {k!r} must lie in [0, neurons = {n}): for a network "
                          f"this small set it too (--set synapses_per_neuron={max(1, n // 10)}, or "
                          f"dpsnn(synapses_per_neuron=...)); the rates then differ from the benchmark's")
    w_f = p["external_weight_F_mV"]
    if w_f is not None and (isinstance(w_f, bool) or not isinstance(w_f, (int, float)) or not math.isfinite(w_f)):
        raise ConfigError(f"dpsnn: 'external_weight_F_mV' must be a number (mV), or left out to use "
                          f"'external_weight_exc_mV'; got {w_f!r}")
    if p["lateral_inhibitory"] not in ("law", "local"):
        raise ConfigError(f"dpsnn: 'lateral_inhibitory' must be \"law\" (inhibitory sources drawn by the lateral law "
                          f"too) or \"local\" (from the target's own column only, as the DPSNN release), got "
                          f"{p['lateral_inhibitory']!r}")
    if p["initial"] not in ("reset", "uniform"):
        raise ConfigError(f"dpsnn: 'initial' must be 'reset' or 'uniform', got {p['initial']!r}")
    for key in ("delay_max_exc_ms", "delay_max_inh_ms"):
        # delays are delay_min_ms + whole ms below the maximum: a minimum above it has no delays to draw
        if p["delay_min_ms"] > p[key]:
            raise ConfigError(f"dpsnn: 'delay_min_ms' = {p['delay_min_ms']:g} ms is above '{key}' = {p[key]:g} ms; "
                              f"delays lie between the two: lower 'delay_min_ms' or raise '{key}'")

    def neuron(kind: str) -> dict:
        return {
            "tau_m_ms": p[f"tau_m_{kind}_ms"], "theta_mV": p["theta_mV"], "reset_mV": p["reset_mV"],
            "tau_arp_ms": p[f"tau_arp_{kind}_ms"], "alpha_c": p["alpha_c"],
            "tau_c_ms": p[f"tau_c_{kind}_ms"], "g_c_mV_per_ms": p[f"g_c_{kind}_mV_per_ms"],
            "dc_mV_per_ms": 0.0,
        }

    net = Network(name="dpsnn-swa" if regime == "swa" else "dpsnn", parameters=p)
    for name, size, kind in (("F", n_f, "exc"), ("B", n_b, "exc"), ("I", n_i, "inh")):
        extra = {"tau_minus_ms": p["stdp_tau_minus_ms"]} if stdp is not None and kind == "exc" else {}
        net.add_population(Population(name, size, neuron(kind), initial=p["initial"], excitatory=kind == "exc",
                                      origin={"tau_arp_ms": f"tau_arp_{kind}_ms"}, **extra))
    prob = k / n   # the spec's p = K / N
    grid = _dpsnn_grid(p, (n_f, n_b, n_i))
    # lateral_inhibitory "local" (the release): inhibitory sources inside the target's own module only
    local = grid is not None and p["lateral_inhibitory"] == "local"
    grid_of = {"F": grid, "B": grid, "I": dataclasses.replace(grid, cutoff=0.5) if local else grid}
    sizes = {"F": n_f, "B": n_b, "I": n_i}
    for src in ("F", "B", "I"):
        dmax_key = "delay_max_inh_ms" if src == "I" else "delay_max_exc_ms"
        dmax = p[dmax_key]
        for tgt in ("F", "B", "I"):
            j = p[f"J_{src}{tgt}"]
            synapse = stdp(j) if stdp is not None and (src, tgt) in DPSNN_PLASTIC else None
            rule = {"probability": prob} if grid is None else {"indegree": round(k * sizes[src] / n), "grid": grid_of[src]}
            net.connect(Projection(source=src, target=tgt, **rule, weight=j,
                                   weight_sd=p["weight_relative_sd"] * abs(j), delay_offset_ms=p["delay_min_ms"],
                                   delay_scale_ms=dmax / math.log(20.0), delay_cut_ms=dmax, delay_step_ms=1.0,
                                   synapse=synapse,
                                   origin={"delay_offset_ms": "delay_min_ms", "delay_cut_ms": dmax_key,
                                           "delay_scale_ms": f"{dmax_key} / ln 20"}))
    for tgt, kind in (("F", "exc"), ("B", "exc"), ("I", "inh")):
        weight_key = "external_weight_F_mV" if tgt == "F" and p["external_weight_F_mV"] is not None else \
            f"external_weight_{kind}_mV"
        w = p[weight_key]
        net.drive(PoissonDrive(tgt, p["external_synapses"], p[f"external_rate_{kind}_hz"], weight=w,
                               weight_sd=p["external_weight_relative_sd"] * abs(w),
                               origin={"n_synapses": "external_synapses", "rate_hz": f"external_rate_{kind}_hz",
                                       "weight": weight_key}))
    return net


def _dpsnn_grid(p: dict, sizes):
    """None for the homogeneous network (1 x 1 columns), else its rv.ColumnGrid, checked by the
    names of the model's parameters."""
    from ..core.grid import ColumnGrid

    cx, cy = p["columns_x"], p["columns_y"]
    if cx < 1 or cy < 1:
        raise ConfigError(f"dpsnn: 'columns_x' and 'columns_y' must be at least 1, got {cx} x {cy}")
    if cx * cy == 1:
        return None
    if any(size % (cx * cy) for size in sizes):
        raise ConfigError(f"dpsnn: {cx} x {cy} columns need F, B and I sizes {list(sizes)} that are multiples of "
                          f"{cx * cy}: set 'neurons' to a multiple of {20 * cx * cy} (columns of 20 x m neurons: "
                          f"4 m F, 12 m B, 4 m I)")
    grid = ColumnGrid(cx, cy, law=p["lateral_law"], length=p["lateral_length"], cutoff=p["lateral_cutoff"],
                      boundary=p["lateral_boundary"], decimals=p["lateral_decimals"])
    grid.validate("dpsnn (the lateral_* parameters)")
    return grid


def _dpsnn_stdp(p: dict, overrides: dict):
    """None for static synapses; else a function J -> rv.STDP of a plastic projection of mean
    efficacy J (w_max = stdp_w_max_factor * J). Every stdp_* value is checked here, by the name
    of the model parameter, before anything is built."""
    from ..core.network import MAX_NORMAL_DEVIATE
    from ..core.plasticity import PAIRINGS, STDP

    if p["plasticity"] == "none":
        changed = sorted(k for k in overrides if k.startswith("stdp_") and overrides[k] != DPSNN_DEFAULTS[k])
        if changed:
            raise ConfigError(f"dpsnn: {changed} set, but 'plasticity' is none (static synapses): add "
                              f"--set plasticity=stdp (plasticity = \"stdp\" in [parameters]) or drop them")
        return None
    for key in ("stdp_tau_plus_ms", "stdp_tau_minus_ms", "stdp_w_max_factor"):
        if not p[key] > 0:
            raise ConfigError(f"dpsnn: '{key}' must be positive, got {p[key]!r}")
    for key in ("stdp_lambda", "stdp_alpha", "stdp_mu_plus", "stdp_mu_minus"):
        if p[key] < 0:
            raise ConfigError(f"dpsnn: '{key}' must be at least 0, got {p[key]!r}")
    if p["stdp_pairing"] not in PAIRINGS:
        raise ConfigError(f"dpsnn: 'stdp_pairing' must be one of {sorted(PAIRINGS)}, got {p['stdp_pairing']!r}")
    # The initial efficacies reach J (1 + 6.34 sd) at most (the engine's largest normal deviate),
    # and never 2 J (they are redrawn outside (0, 2 J)): w_max must not lie below them.
    sd = p["weight_relative_sd"]
    top = min(2.0, 1.0 + MAX_NORMAL_DEVIATE * sd) if sd > 0 else 1.0
    if p["stdp_w_max_factor"] < top:
        least = math.ceil(top * 1000.0) / 1000.0
        raise ConfigError(f"dpsnn: 'stdp_w_max_factor' = {p['stdp_w_max_factor']:g} puts w_max below the largest "
                          f"initial efficacy ({top:.4g} J with weight_relative_sd = {sd:g}): use at least {least:g}")
    for src, tgt in DPSNN_PLASTIC:
        if not p[f"J_{src}{tgt}"] > 0:
            raise ConfigError(f"dpsnn: plasticity \"stdp\" needs excitatory efficacies, but 'J_{src}{tgt}' = "
                              f"{p[f'J_{src}{tgt}']:g}: make it positive")

    def rule(j: float) -> STDP:
        return STDP(tau_plus_ms=p["stdp_tau_plus_ms"], lambda_=p["stdp_lambda"], alpha=p["stdp_alpha"],
                    mu_plus=p["stdp_mu_plus"], mu_minus=p["stdp_mu_minus"], w_max=p["stdp_w_max_factor"] * j,
                    pairing=p["stdp_pairing"])
    return rule


# artificial-cells: the Blue Gene/P spike-exchange study's communication benchmark
# (docs/workloads/artificial-cells.md).
ARTIFICIAL_CELLS_DEFAULTS = {
    "cells": 32768,
    "targets_per_cell": 1000,      # 1K or 10K in the study; p = targets_per_cell / cells per ordered pair
    "isi_min_ms": 10.0,            # each cell fires after a uniform random interval in [isi_min, isi_max]
    "isi_max_ms": 20.0,
    "delay_ms": 1.0,               # every synapse: the minimum delay, so the exchange interval
    "weight_mV": 0.1,              # delivered into the input buffers, which the cells ignore
}


def artificial_cells(**overrides) -> Network:
    """A pure communication load: cells that fire every 10-20 ms at random, each with about
    targets_per_cell random targets, one fixed delay. Input is delivered but ignored, so the
    spike traffic does not depend on the network's dynamics.
    """
    p = _check_overrides("artificial-cells", ARTIFICIAL_CELLS_DEFAULTS, overrides)
    n, k = p["cells"], p["targets_per_cell"]
    if n < 2:
        raise ConfigError(f"artificial-cells: 'cells' must be an integer of at least 2, got {n!r}")
    if not (0 <= k < n):
        raise ConfigError(f"artificial-cells: 'targets_per_cell' must lie in [0, cells), got {k!r}")
    net = Network(name="artificial-cells", parameters=p)
    net.add_population(Population("cells", n, {"isi_min_ms": p["isi_min_ms"], "isi_max_ms": p["isi_max_ms"]},
                                  model="artificial"))
    d = p["delay_ms"]
    net.connect(Projection(source="cells", target="cells", probability=k / n, weight=p["weight_mV"], delay_ms=d))
    return net


# mam-benchmark: the structure-aware multi-area study's benchmark (docs/workloads/mam-benchmark.md).
MAM_BENCHMARK_DEFAULTS = {
    "n_areas": 8,
    "area_size": 10000,            # neurons per area (the mean, with area_size_sd)
    "K": 1000,                     # expected outgoing synapses per neuron
    "frac_intra": 0.5,             # of K, to random targets in the own area; the rest uniform over the other areas
    "rate_hz": 2.5,                # ignore-and-fire rate (the mean, with rate_sd)
    "intra_delay_mean_ms": 1.5, "intra_delay_sd_ms": 0.75,   # redrawn below d_min_ms
    "inter_delay_mean_ms": 6.0, "inter_delay_sd_ms": 3.0,    # redrawn below delay_ratio * d_min_ms
    "d_min_ms": 0.1,               # the global minimum delay (the resolution h of the study)
    "delay_ratio": 10,             # D = d_min_inter / d_min
    "area_size_sd": 0.0,           # heterogeneity knobs: sd of a normal around the mean, one draw per area,
    "rate_sd": 0.0,                # clipped at 10 % of the mean, then rescaled so the mean is kept
    "structure_seed": 1,           # seeds the per-area draws of the knobs
    "weight_mV": 0.1,              # delivered into the input buffers, which the neurons ignore
}


MAX_AREAS = 1024      # n_areas^2 area-to-area projections: 1024 areas take minutes to build


def _check_areas(model: str, n_areas: int) -> None:
    if n_areas < 1:
        raise ConfigError(f"{model}: 'n_areas' must be at least 1, got {n_areas!r}")
    if n_areas > MAX_AREAS:
        raise ConfigError(f"{model}: 'n_areas' = {n_areas} would make {n_areas**2:.3g} area-to-area projections; "
                          f"at most {MAX_AREAS} areas ({MAX_AREAS**2:,} projections) are built: use fewer areas")


def _spread(mean: float, sd: float, n: int, rng) -> list[float]:
    """n values ~ N(mean, sd), clipped at 10 % of the mean and rescaled to the exact mean."""
    if sd <= 0 or n == 1:
        return [mean] * n
    x = [max(0.1 * mean, v) for v in rng.normal(mean, sd, n)]
    scale = mean * n / sum(x)
    return [v * scale for v in x]


def _round_to_total(values: list[float], total: int) -> list[int]:
    """Integers summing to total, each floor or ceil of its value (largest remainders first)."""
    base = [math.floor(v) for v in values]
    order = sorted(range(len(values)), key=lambda i: values[i] - base[i], reverse=True)
    for i in order[:total - sum(base)]:
        base[i] += 1
    return base


def mam_benchmark(**overrides) -> Network:
    """Multi-area benchmark of ignore-and-fire neurons: n_areas areas (populations "A0", "A1", ...,
    each its own area), every neuron with about K outgoing synapses, frac_intra of them inside its
    area and the rest spread uniformly over the other areas; Gaussian delays, intra-area ones at
    least d_min_ms and inter-area ones at least delay_ratio * d_min_ms. Connections are drawn per
    pair with the probability that gives K on average (the engine draws synapses where their
    target lives), so out-degrees are binomial around K.
    """
    import numpy as np

    p = _check_overrides("mam-benchmark", MAM_BENCHMARK_DEFAULTS, overrides)
    A, n, K = p["n_areas"], p["area_size"], p["K"]
    _check_areas("mam-benchmark", A)
    if n < 2:
        raise ConfigError(f"mam-benchmark: 'area_size' must be at least 2, got {n!r}")
    if K < 0:
        raise ConfigError(f"mam-benchmark: 'K' must not be negative, got {K!r}")
    if not 0.0 <= p["frac_intra"] <= 1.0:
        raise ConfigError(f"mam-benchmark: 'frac_intra' must lie in [0, 1], got {p['frac_intra']!r}")
    for key in ("rate_hz", "d_min_ms", "intra_delay_mean_ms", "inter_delay_mean_ms"):
        if p[key] <= 0:
            raise ConfigError(f"mam-benchmark: '{key}' must be positive, got {p[key]!r}")
    for key in ("area_size_sd", "rate_sd", "intra_delay_sd_ms", "inter_delay_sd_ms"):
        if p[key] < 0:
            raise ConfigError(f"mam-benchmark: '{key}' must not be negative, got {p[key]!r}")
    if p["delay_ratio"] < 1:
        raise ConfigError(f"mam-benchmark: 'delay_ratio' (D) must be an integer of at least 1, got {p['delay_ratio']!r}")
    rng = np.random.default_rng(p["structure_seed"])
    sizes = _round_to_total(_spread(float(n), p["area_size_sd"], A, rng), A * n)
    rates = _spread(p["rate_hz"], p["rate_sd"], A, rng)
    if min(sizes) < 2:
        raise ConfigError(f"mam-benchmark: 'area_size_sd' = {p['area_size_sd']} leaves an area with fewer than 2 "
                          f"neurons; lower it or raise 'area_size'")
    total = sum(sizes)
    k_intra, k_inter = K * p["frac_intra"], K * (1.0 - p["frac_intra"])
    net = Network(name="mam-benchmark", parameters=p)
    names = [f"A{a}" for a in range(A)]
    for name, size, rate in zip(names, sizes, rates):
        net.add_population(Population(name, size, {"rate_hz": rate}, model="ignore_and_fire", area=name))
    d_inter = p["delay_ratio"] * p["d_min_ms"]
    for a, src in enumerate(names):
        for b, tgt in enumerate(names):
            if a == b:
                prob, mean, sd, lo = k_intra / (sizes[a] - 1), p["intra_delay_mean_ms"], p["intra_delay_sd_ms"], p["d_min_ms"]
                origin = {"delay_offset_ms": "d_min_ms", "delay_mean_ms": "intra_delay_mean_ms",
                          "delay_sd_ms": "intra_delay_sd_ms"}
            else:
                prob, mean, sd, lo = k_inter / (total - sizes[a]), p["inter_delay_mean_ms"], p["inter_delay_sd_ms"], d_inter
                origin = {"delay_offset_ms": "delay_ratio * d_min_ms", "delay_mean_ms": "inter_delay_mean_ms",
                          "delay_sd_ms": "inter_delay_sd_ms"}
            if prob > 1.0:
                where = "K * frac_intra" if a == b else "K * (1 - frac_intra)"
                raise ConfigError(f"mam-benchmark: {where} = {k_intra if a == b else k_inter:g} exceeds the "
                                  f"{'other neurons of area ' + src if a == b else 'neurons of the other areas'}; "
                                  f"lower 'K' or raise 'area_size'")
            if prob > 0:
                net.connect(Projection(source=src, target=tgt, probability=prob, weight=p["weight_mV"],
                                       delay_offset_ms=lo,
                                       delay_distribution="normal", delay_mean_ms=mean, delay_sd_ms=sd,
                                       origin=origin))
    return net


# mam-benchmark-study: the MAM-benchmark with the parameters the structure-aware study published
# with its code (docs/workloads/mam-benchmark.md, "The study's own parameters"): repository
# mlober/beNNch-models-morph at b797019 (2024-10-21), multi-area-model/parameter_space.py (P:line)
# and model.py (M:line). In-degrees, not out-degrees: NEST's fixed_indegree (multapses and
# autapses allowed) is Projection(indegree=K).
MAM_STUDY_SOURCE = "mlober/beNNch-models-morph b797019, multi-area-model/"
MAM_STUDY_DEFAULTS = {
    "n_areas": 32,                 # P:15 num_areas (the macaque model's 32 areas)
    "scale": 1.0,                  # P:19 scale: area sizes and in-degrees scale with it
    "area_size": 129068,           # P:37 (the macaque model's mean area); N = int(area_size * scale), P:61
    "indegree": 2921,              # P:64 intra-area in-degree int(indegree * scale) (half the macaque model's mean);
                                   # P:68 from each other area int(that / (n_areas - 1))
    "rate_hz": 2.5,                # P:47 rate; P:48 / M:23-24 phase uniform in (0, 1) of the period
    "d_min_ms": 0.1,               # P:32 min_delay = P:23 dt; intra-area delays are redrawn below it (M:121)
    "threshold_delay_ms": 1.0,     # P:12 threshold_delay: inter-area delays are redrawn below it (M:135); D = 10
    "max_delay_ms": 2.0,           # P:33 max_delay: delays are redrawn above it (M:121, M:135)
    "intra_delay_mean_ms": 0.5,    # P:34 delay_mean_intra (M:116)
    "inter_delay_mean_ms": 1.5,    # P:35 delay_mean_inter (M:124)
    "delay_relative_sd": 0.5,      # M:121, M:135: sd = 0.5 x mean
    "intra_delay_cap": "max_delay",   # M:121 redraws intra-area delays above max_delay; "threshold_delay": the
                                      # study's first version (ignore_and_fire/model.py of 0ebca60)
    "area_size_sigma": 0.0,        # P:39 unbalanced_network_sigma, relative; P:76-78 drawn per area (numpy)
    "area_size_seed": 20,          # P:28 numpy_seed
    "weight_mV": 0.1,              # the study's weight is 0 (M:120, M:134); Ranvier's must be non-zero; ignored
}
MAM_STUDY_INTRA_CAPS = ("max_delay", "threshold_delay")


def mam_study_sizes(p: dict) -> tuple[list[int], int, int]:
    """The study's area sizes and in-degrees (P:52-78): N = int(area_size * scale) neurons per area,
    or with area_size_sigma > 0 int(normal(N, sigma N)) per area from NumPy's generator seeded with
    area_size_seed, redrawn while not above the intra-area in-degree; K = int(indegree * scale) from
    inside the area, int(K / (n_areas - 1)) from each other area. Returns (sizes, K, K_inter)."""
    import numpy as np

    A, scale = p["n_areas"], p["scale"]
    n0 = int(p["area_size"] * scale)
    k_intra = int(p["indegree"] * scale)
    k_inter = int(k_intra * 1 / (A - 1)) if A > 1 else 0
    if k_intra < 1:
        raise ConfigError(f"mam-benchmark-study: the in-degree int(indegree * scale) = int({p['indegree']} x "
                          f"{scale:g}) is 0, a network without synapses: raise 'scale' (at least "
                          f"{1 / p['indegree']:.3g}) or 'indegree'")
    if n0 <= k_intra:
        raise ConfigError(f"mam-benchmark-study: an area of int(area_size * scale) = {n0} neurons is not larger than "
                          f"its in-degree int(indegree * scale) = {k_intra} (the study redraws areas until they are): "
                          f"raise 'scale' or 'area_size', or lower 'indegree'")
    rng = np.random.default_rng(p["area_size_seed"])
    sizes = []
    for a in range(A):
        for _ in range(1000):
            n = int(rng.normal(n0, p["area_size_sigma"] * n0))
            if n > k_intra:
                break
        else:
            raise ConfigError(f"mam-benchmark-study: 'area_size_sigma' = {p['area_size_sigma']:g} drew 1000 sizes of "
                              f"area {a} at or below the in-degree {k_intra}; lower it")
        sizes.append(n)
    return sizes, k_intra, k_inter


def mam_benchmark_study(**overrides) -> Network:
    """The MAM-benchmark as the structure-aware study published it (mlober/beNNch-models-morph,
    multi-area-model/): n_areas areas of int(129068 scale) ignore-and-fire neurons at 2.5 Hz; every
    neuron receives int(2921 scale) synapses from its own area and int(that / (n_areas - 1)) from each
    other area (fixed in-degree, sources drawn with replacement); normal delays with sd half the
    mean, intra-area N(0.5, 0.25) ms within [d_min, max_delay], inter-area N(1.5, 0.75) ms within
    [threshold_delay, max_delay] = [1, 2] ms, so D = 10."""
    p = _check_overrides("mam-benchmark-study", MAM_STUDY_DEFAULTS, overrides)
    A = p["n_areas"]
    _check_areas("mam-benchmark-study", A)
    for key in ("scale", "rate_hz", "d_min_ms", "intra_delay_mean_ms", "inter_delay_mean_ms", "weight_mV"):
        if not p[key] > 0:
            raise ConfigError(f"mam-benchmark-study: '{key}' must be positive, got {p[key]!r}")
    for key in ("area_size", "indegree"):
        if p[key] < 1:
            raise ConfigError(f"mam-benchmark-study: '{key}' must be at least 1, got {p[key]!r}")
    for key in ("delay_relative_sd", "area_size_sigma"):
        if p[key] < 0:
            raise ConfigError(f"mam-benchmark-study: '{key}' must not be negative, got {p[key]!r}")
    if p["intra_delay_cap"] not in MAM_STUDY_INTRA_CAPS:
        raise ConfigError(f"mam-benchmark-study: 'intra_delay_cap' must be \"max_delay\" (the published code) or "
                          f"\"threshold_delay\" (its first version), got {p['intra_delay_cap']!r}")
    if not p["d_min_ms"] <= p["threshold_delay_ms"] <= p["max_delay_ms"]:
        raise ConfigError(f"mam-benchmark-study: delays need d_min_ms <= threshold_delay_ms <= max_delay_ms, got "
                          f"{p['d_min_ms']:g}, {p['threshold_delay_ms']:g}, {p['max_delay_ms']:g} ms")
    sizes, k_intra, k_inter = mam_study_sizes(p)
    sd = p["delay_relative_sd"]
    cap = p["max_delay_ms"] if p["intra_delay_cap"] == "max_delay" else p["threshold_delay_ms"]
    cap_name = "max_delay_ms" if p["intra_delay_cap"] == "max_delay" else "threshold_delay_ms"
    net = Network(name="mam-benchmark-study", parameters=p)
    names = [f"A{a}" for a in range(A)]
    for name, size in zip(names, sizes):
        net.add_population(Population(name, size, {"rate_hz": p["rate_hz"]}, model="ignore_and_fire", area=name))
    for src in names:
        for tgt in names:
            if src == tgt:
                k, mean, lo, hi = k_intra, p["intra_delay_mean_ms"], p["d_min_ms"], cap
                origin = {"delay_offset_ms": "d_min_ms", "delay_mean_ms": "intra_delay_mean_ms",
                          "delay_sd_ms": "delay_relative_sd * intra_delay_mean_ms", "delay_redraw_above_ms": cap_name}
            else:
                k, mean, lo, hi = k_inter, p["inter_delay_mean_ms"], p["threshold_delay_ms"], p["max_delay_ms"]
                origin = {"delay_offset_ms": "threshold_delay_ms", "delay_mean_ms": "inter_delay_mean_ms",
                          "delay_sd_ms": "delay_relative_sd * inter_delay_mean_ms",
                          "delay_redraw_above_ms": "max_delay_ms"}
            if k > 0:
                net.connect(Projection(source=src, target=tgt, indegree=k, weight=p["weight_mV"],
                                       delay_distribution="normal", delay_offset_ms=lo, delay_mean_ms=mean,
                                       delay_sd_ms=sd * mean, delay_redraw_above_ms=hi, origin=origin))
    return net


# microcircuit: the Potjans-Diesmann cortical microcircuit (docs/workloads/microcircuit.md).
MICROCIRCUIT_POPULATIONS = ("L23E", "L23I", "L4E", "L4I", "L5E", "L5I", "L6E", "L6I")
MICROCIRCUIT_SIZES = (20683, 5834, 21915, 5479, 4850, 1065, 14395, 2948)
MICROCIRCUIT_K_EXT = (1600, 1500, 2100, 1900, 2000, 1900, 2900, 2100)
MICROCIRCUIT_REFERENCE_RATES = dict(zip(MICROCIRCUIT_POPULATIONS,
                                        (0.903, 2.965, 4.414, 5.876, 7.569, 8.633, 1.105, 7.829)))
# Connection probabilities, row: target, column: source, in population order.
MICROCIRCUIT_CONN_PROBS = (
    (0.1009, 0.1689, 0.0437, 0.0818, 0.0323, 0.0, 0.0076, 0.0),
    (0.1346, 0.1371, 0.0316, 0.0515, 0.0755, 0.0, 0.0042, 0.0),
    (0.0077, 0.0059, 0.0497, 0.135, 0.0067, 0.0003, 0.0453, 0.0),
    (0.0691, 0.0029, 0.0794, 0.1597, 0.0033, 0.0, 0.1057, 0.0),
    (0.1004, 0.0622, 0.0505, 0.0057, 0.0831, 0.3726, 0.0204, 0.0),
    (0.0548, 0.0269, 0.0257, 0.0022, 0.06, 0.3158, 0.0086, 0.0),
    (0.0156, 0.0066, 0.0211, 0.0166, 0.0572, 0.0197, 0.0396, 0.2252),
    (0.0364, 0.001, 0.0034, 0.0005, 0.0277, 0.008, 0.0658, 0.1443),
)
MICROCIRCUIT_V0_MEAN = (-68.28, -63.16, -63.33, -63.45, -63.11, -61.66, -66.72, -61.43)
MICROCIRCUIT_V0_SD = (5.36, 4.57, 4.74, 4.94, 4.94, 4.55, 5.46, 4.48)
# Thalamic input (Potjans & Diesmann 2014): 902 Poisson sources into L4 and L6.
MICROCIRCUIT_TH_CONN_PROBS = (0.0, 0.0, 0.0983, 0.0619, 0.0, 0.0, 0.0512, 0.0196)

MICROCIRCUIT_DEFAULTS = {
    "scale": 1.0,                  # neurons per population (and synapse totals) scaled by this
    "k_scale": 1.0,                # in-degrees scaled by this; below 1, weights / sqrt(k_scale) and a DC current
                                   # replaces the mean input lost (the usual compensation)
    "input": "poisson",            # external input: "poisson" (K_ext * bg_rate_hz per neuron) or "dc" (its mean current)
    "bg_rate_hz": 8.0,
    "psp_mV": 0.15,                # mean excitatory PSP, converted to a current amplitude (87.8 pA)
    "psp_L4E_to_L23E_factor": 2.0,
    "g": -4.0,                     # inhibitory weight relative to excitatory
    "weight_relative_sd": 0.1,     # Gaussian, clipped at zero
    "delay_exc_ms": 1.5, "delay_inh_ms": 0.75,
    "delay_relative_sd": 0.5,
    "delay_redraw_below_ms": 0.05, # redrawn below 0.5 h, then rounded to the grid
    "d_min_ms": 0.1,               # so every delay is at least one step of h = 0.1 ms
    "E_L_mV": -65.0, "V_th_mV": -50.0, "V_reset_mV": -65.0,
    "C_m_pF": 250.0, "tau_m_ms": 10.0, "tau_syn_ms": 0.5, "tau_arp_ms": 2.0,
    "thalamus": False,             # 902 thalamic Poisson sources into L4 and L6
    "th_neurons": 902, "th_rate_hz": 120.0, "th_start_ms": 700.0, "th_duration_ms": 10.0,
    "psp_th_mV": 0.15,
}


def psp_to_psc(psp_mV: float, tau_m_ms: float, tau_syn_ms: float, C_m_pF: float) -> float:
    """The current amplitude (pA) whose exponential PSC gives a membrane response peaking at psp_mV."""
    s = 1.0 / (tau_syn_ms - tau_m_ms)
    a = tau_m_ms * tau_syn_ms * s / C_m_pF
    r = (tau_m_ms / tau_syn_ms) ** s
    return psp_mV / (a * (r ** tau_m_ms - r ** tau_syn_ms))


def microcircuit_synapse_total(p: float, n_target: int, n_source: int) -> float:
    """S = ln(1 - p) / ln(1 - 1 / (N_t N_s)): the fixed total that connects a pair with probability p."""
    if p <= 0:
        return 0.0
    return math.log1p(-p) / math.log1p(-1.0 / (float(n_target) * float(n_source)))


def microcircuit(**overrides) -> Network:
    """The Potjans-Diesmann microcircuit: 8 populations of LIF neurons with exponential currents,
    fixed total synapse numbers per projection, Gaussian weights clipped at zero and Gaussian
    delays; Poisson or DC background input; optional thalamic input. `scale` scales the neuron
    numbers, `k_scale` the in-degrees (with DC compensation of the mean input lost)."""
    p = _check_overrides("microcircuit", MICROCIRCUIT_DEFAULTS, overrides)
    scale, k_scale = check_scales("microcircuit", p)
    if p["input"] not in ("poisson", "dc"):
        raise ConfigError(f"microcircuit: 'input' must be \"poisson\" or \"dc\", got {p['input']!r}")
    for key in ("bg_rate_hz", "psp_mV", "C_m_pF", "tau_m_ms", "tau_syn_ms", "delay_exc_ms", "delay_inh_ms", "d_min_ms"):
        if p[key] <= 0:
            raise ConfigError(f"microcircuit: '{key}' must be positive, got {p[key]!r}")
    if p["tau_m_ms"] == p["tau_syn_ms"]:
        raise ConfigError("microcircuit: 'tau_m_ms' and 'tau_syn_ms' must differ (the PSP-to-PSC factor divides by their difference)")
    if p["g"] >= 0:
        raise ConfigError(f"microcircuit: 'g' must be negative (inhibitory relative weight), got {p['g']!r}")
    names, full = MICROCIRCUIT_POPULATIONS, MICROCIRCUIT_SIZES
    sizes = [max(1, round(n * scale)) for n in full]
    w = psp_to_psc(p["psp_mV"], p["tau_m_ms"], p["tau_syn_ms"], p["C_m_pF"])
    # Mean weights of the full-scale model [target][source], pA.
    w_full = [[(w if names[j].endswith("E") else p["g"] * w) for j in range(8)] for _ in range(8)]
    w_full[0][2] = w * p["psp_L4E_to_L23E_factor"]
    s_full = [[microcircuit_synapse_total(MICROCIRCUIT_CONN_PROBS[i][j], full[i], full[j]) for j in range(8)]
              for i in range(8)]
    sqrt_k = math.sqrt(k_scale)
    # DC current (pA): the mean of the Poisson input in "dc" mode, plus, with k_scale < 1, the mean
    # input the scaled-down in-degrees no longer carry (weights grow by 1/sqrt(k) to keep the variance).
    tau_s = p["tau_syn_ms"]
    dc = []
    for i in range(8):
        mean_external = 1e-3 * tau_s * w * MICROCIRCUIT_K_EXT[i] * p["bg_rate_hz"]
        current = mean_external if p["input"] == "dc" else 0.0
        if k_scale < 1:
            recurrent = sum(w_full[i][j] * s_full[i][j] / full[i] * MICROCIRCUIT_REFERENCE_RATES[names[j]]
                            for j in range(8))
            current += 1e-3 * tau_s * (1.0 - sqrt_k) * recurrent
            if p["input"] == "poisson":
                current += (1.0 - sqrt_k) * mean_external
        dc.append(current)

    net = Network(name="microcircuit", parameters=p)
    for i, name in enumerate(names):
        params = {"E_L_mV": p["E_L_mV"], "V_th_mV": p["V_th_mV"], "V_reset_mV": p["V_reset_mV"],
                  "C_m_pF": p["C_m_pF"], "tau_m_ms": p["tau_m_ms"], "tau_syn_ms": tau_s,
                  "tau_arp_ms": p["tau_arp_ms"], "I_e_pA": dc[i],
                  "V0_mean_mV": MICROCIRCUIT_V0_MEAN[i], "V0_sd_mV": MICROCIRCUIT_V0_SD[i]}
        net.add_population(Population(name, sizes[i], params, model="psc_exp", excitatory=name.endswith("E")))
    if p["thalamus"]:
        th = max(1, round(p["th_neurons"] * scale))
        net.add_population(Population("TH", th, {"rate_hz": p["th_rate_hz"], "start_ms": p["th_start_ms"],
                                                 "stop_ms": p["th_start_ms"] + p["th_duration_ms"]},
                                      model="poisson_source"))
    sd = p["weight_relative_sd"]

    def delays(source_excitatory: bool) -> dict:
        key = "delay_exc_ms" if source_excitatory else "delay_inh_ms"
        mean = p[key]
        return dict(delay_offset_ms=p["d_min_ms"], delay_distribution="normal", delay_mean_ms=mean,
                    delay_sd_ms=mean * p["delay_relative_sd"], delay_redraw_below_ms=p["delay_redraw_below_ms"],
                    origin={"delay_offset_ms": "d_min_ms", "delay_mean_ms": key,
                            "delay_sd_ms": f"delay_relative_sd * {key}"})

    for i, target in enumerate(names):
        for j, source in enumerate(names):
            total = round(s_full[i][j] * scale * k_scale)
            if total == 0:
                continue
            mean = w_full[i][j] / sqrt_k
            net.connect(Projection(source=source, target=target, total_synapses=total, weight=mean,
                                   weight_sd=abs(mean) * sd, weight_clip=True, **delays(source.endswith("E"))))
        k_ext = round(MICROCIRCUIT_K_EXT[i] * k_scale)
        if p["input"] == "poisson" and k_ext > 0:
            net.drive(PoissonDrive(target, k_ext, p["bg_rate_hz"], weight=w / sqrt_k,
                                   origin={"n_synapses": f"K_ext of {target} x k_scale", "rate_hz": "bg_rate_hz",
                                           "weight": "psp_mV (as a current)"}))
        if p["thalamus"] and MICROCIRCUIT_TH_CONN_PROBS[i] > 0:
            w_th = psp_to_psc(p["psp_th_mV"], p["tau_m_ms"], tau_s, p["C_m_pF"]) / sqrt_k
            total = round(microcircuit_synapse_total(MICROCIRCUIT_TH_CONN_PROBS[i], full[i], p["th_neurons"])
                          * scale * k_scale)
            if total:
                net.connect(Projection(source="TH", target=target, total_synapses=total, weight=w_th,
                                       weight_sd=w_th * sd, weight_clip=True, **delays(True)))
    return net


def dpsnn_swa(**overrides) -> Network:
    """dpsnn in its slow-wave state: dpsnn(regime="swa", ...)."""
    if overrides.get("regime", "swa") != "swa":
        raise ConfigError(f"dpsnn-swa: 'regime' is \"swa\" here (use the dpsnn model for {overrides['regime']!r})")
    return dpsnn(**{**overrides, "regime": "swa"})


REGISTRY = {"dpsnn": (dpsnn, DPSNN_DEFAULTS), "dpsnn-swa": (dpsnn_swa, None), "artificial-cells": (artificial_cells, ARTIFICIAL_CELLS_DEFAULTS),
            "mam-benchmark": (mam_benchmark, MAM_BENCHMARK_DEFAULTS), "mam-benchmark-study": (mam_benchmark_study, MAM_STUDY_DEFAULTS),
            "microcircuit": (microcircuit, MICROCIRCUIT_DEFAULTS),
            "multi-area": (multi_area.multi_area, multi_area.MULTI_AREA_DEFAULTS)}


SONATA = "sonata"      # not a workload: a network read from a SONATA config (ranvier.io.sonata)


def build(name: str, **params) -> Network:
    """A model by name, as `ranvier run --model NAME` and config files ask for it."""
    if name == SONATA:
        from ..io import sonata
        return sonata.network(**params)
    if name not in REGISTRY:
        raise ConfigError(f"unknown model '{name}'; available: {sorted(REGISTRY)}")
    return REGISTRY[name][0](**params)


def defaults(name: str) -> dict:
    if name == SONATA:
        return {"config": None, "dt_ms": None}
    if name not in REGISTRY:
        raise ConfigError(f"unknown model '{name}'; available: {sorted(REGISTRY)}")
    if name == "dpsnn-swa":
        return {**DPSNN_DEFAULTS, **DPSNN_SWA, "regime": "swa"}
    return dict(REGISTRY[name][1])
