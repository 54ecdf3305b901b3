"""The reference workloads, each a function that returns a validated `Network`.

Every parameter of a model's spec (shared/models/*.md) is a keyword argument; unknown
keywords are refused with the list of known ones.
"""
from __future__ import annotations

import math

from .errors import ConfigError
from .network import Network, PoissonDrive, Population, Projection

# dpsnn: shared/models/dpsnn.md ("AW2.8Hz" configuration of the DPSNN engine's 2019 release).
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
    "initial": "reset",            # "reset" (V = H, c = 0, as the original) or "uniform" (V ~ U[H, theta))
}


def _check_overrides(model: str, defaults: dict, overrides: dict) -> dict:
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ConfigError(f"{model}: unknown parameter(s) {unknown}; known parameters: {sorted(defaults)}")
    params = dict(defaults)
    for key, value in overrides.items():
        default = defaults[key]
        if isinstance(default, str):
            if not isinstance(value, str):
                raise ConfigError(f"{model}: '{key}' must be a string, got {value!r}")
        elif isinstance(default, int) and not isinstance(default, bool):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"{model}: '{key}' must be an integer, got {value!r}")
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"{model}: '{key}' must be a number, got {value!r}")
            value = float(value)
        params[key] = value
    return params


def dpsnn(**overrides) -> Network:
    """The DPSNN real-time benchmark: LIF neurons with spike-frequency adaptation.

    80 % excitatory (F and B, with adaptation), 20 % inhibitory (I, without), every
    ordered pair connected with p = synapses_per_neuron / neurons, exponential delays
    in whole milliseconds, 400 external Poisson synapses per neuron.
    """
    p = _check_overrides("dpsnn", DPSNN_DEFAULTS, overrides)
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
        raise ConfigError(f"dpsnn: 'synapses_per_neuron' must lie in [0, neurons), got {k!r}")
    if p["initial"] not in ("reset", "uniform"):
        raise ConfigError(f"dpsnn: 'initial' must be 'reset' or 'uniform', got {p['initial']!r}")

    def neuron(kind: str) -> dict:
        return {
            "tau_m_ms": p[f"tau_m_{kind}_ms"], "theta_mV": p["theta_mV"], "reset_mV": p["reset_mV"],
            "tau_arp_ms": p[f"tau_arp_{kind}_ms"], "alpha_c": p["alpha_c"],
            "tau_c_ms": p[f"tau_c_{kind}_ms"], "g_c_mV_per_ms": p[f"g_c_{kind}_mV_per_ms"],
            "dc_mV_per_ms": 0.0,
        }

    net = Network(name="dpsnn", parameters=p)
    for name, size, kind in (("F", n_f, "exc"), ("B", n_b, "exc"), ("I", n_i, "inh")):
        net.add_population(Population(name, size, neuron(kind), initial=p["initial"], excitatory=kind == "exc",
                                      origin={"tau_arp_ms": f"tau_arp_{kind}_ms"}))
    prob = k / n   # the spec's p = K / N
    for src in ("F", "B", "I"):
        dmax = p["delay_max_inh_ms"] if src == "I" else p["delay_max_exc_ms"]
        for tgt in ("F", "B", "I"):
            j = p[f"J_{src}{tgt}"]
            net.connect(Projection(src, tgt, prob, j, p["weight_relative_sd"] * abs(j),
                                   delay_offset_ms=p["delay_min_ms"], delay_scale_ms=dmax / math.log(20.0),
                                   delay_cut_ms=dmax, delay_step_ms=1.0,
                                   origin={"delay_offset_ms": "delay_min_ms"}))
    for tgt, kind in (("F", "exc"), ("B", "exc"), ("I", "inh")):
        w = p[f"external_weight_{kind}_mV"]
        net.drive(PoissonDrive(tgt, p["external_synapses"], p[f"external_rate_{kind}_hz"], w,
                               p["external_weight_relative_sd"] * abs(w)))
    return net


# artificial-cells: the Blue Gene/P spike-exchange study's communication benchmark (DESIGN.md).
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
    net.connect(Projection("cells", "cells", k / n, p["weight_mV"], 0.0, delay_offset_ms=d, delay_scale_ms=d,
                           delay_cut_ms=d, delay_step_ms=d, origin={"delay_offset_ms": "delay_ms",
                                                                   "delay_step_ms": "delay_ms"}))
    return net


# mam-benchmark: the structure-aware multi-area study's benchmark (shared/models/mam-benchmark.md).
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
    if A < 1:
        raise ConfigError(f"mam-benchmark: 'n_areas' must be at least 1, got {A!r}")
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
                origin = {"delay_offset_ms": "d_min_ms"}
            else:
                prob, mean, sd, lo = k_inter / (total - sizes[a]), p["inter_delay_mean_ms"], p["inter_delay_sd_ms"], d_inter
                origin = {"delay_offset_ms": "delay_ratio * d_min_ms"}
            if prob > 1.0:
                where = "K * frac_intra" if a == b else "K * (1 - frac_intra)"
                raise ConfigError(f"mam-benchmark: {where} = {k_intra if a == b else k_inter:g} exceeds the "
                                  f"{'other neurons of area ' + src if a == b else 'neurons of the other areas'}; "
                                  f"lower 'K' or raise 'area_size'")
            if prob > 0:
                net.connect(Projection(src, tgt, prob, p["weight_mV"], 0.0, delay_offset_ms=lo,
                                       delay_distribution="normal", delay_mean_ms=mean, delay_sd_ms=sd,
                                       origin=origin))
    return net


REGISTRY = {"dpsnn": (dpsnn, DPSNN_DEFAULTS), "artificial-cells": (artificial_cells, ARTIFICIAL_CELLS_DEFAULTS),
            "mam-benchmark": (mam_benchmark, MAM_BENCHMARK_DEFAULTS)}


def build(name: str, **params) -> Network:
    """A model by name, as `ranvier run --model NAME` and config files ask for it."""
    if name not in REGISTRY:
        raise ConfigError(f"unknown model '{name}'; available: {sorted(REGISTRY)}")
    return REGISTRY[name][0](**params)


def defaults(name: str) -> dict:
    if name not in REGISTRY:
        raise ConfigError(f"unknown model '{name}'; available: {sorted(REGISTRY)}")
    return dict(REGISTRY[name][1])
