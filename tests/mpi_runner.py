"""Run one workload under any decomposition and write what the tests compare to an .npz.

Run under MPI by the tests:

    mpiexec -n 3 python tests/mpi_runner.py --model dpsnn --neurons 2048 --ms 300 \
        --threads 2 --exchange alltoallv --placement block --seed 1 --out run

writes run-alltoallv-0.npz. Several exchanges and overlap settings run in one launch, one file
each (run-<exchange>-<0|1>.npz):

    mpiexec -n 3 python tests/mpi_runner.py ... --exchange allgather,p2p --overlap 0,1 --out run

or imported and called in-process (`run_config(...)`) for single-rank runs. Rank 0 writes:
spike ids and steps (canonical order), every counter per rank, the V and c traces of the
first and last neuron of each population, the number of synapses per rank and per delay,
which sources have synapses on each rank, and an order-independent 64-bit digest of the
whole connection set (source, target, weight bits, delay in steps), so that network
instances can be compared across decompositions without moving millions of synapses
between processes.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback

import numpy as np

MODELS = ("dpsnn-grid", "dpsnn", "burst", "burst-areas", "burst-chain", "artificial-cells", "mam-benchmark",
          "mam-benchmark-study", "microcircuit", "iaf_psc_alpha", "devices", "rules",
          "heterogeneous", "plastic", "dpsnn-stdp", "pynn-cells", "multi-area", "tsodyks", "bernoulli", "quantal")
# The microcircuit test network: `neurons` sets the scale (of 77,169), and the in-degrees are scaled
# alike; the thalamic sources fire early so that the Poisson-source cells are exercised too.
MICROCIRCUIT_TEST = {"thalamus": True, "th_start_ms": 50.0, "th_duration_ms": 20.0}
# The multi-area test network: small heterogeneous areas firing fast, so that a short run has
# traffic on both pathways of the two-tier exchange (`neurons` is the mean area size, `synapses` K).
MAM_TEST = {"n_areas": 4, "rate_hz": 40.0, "rate_sd": 12.0, "area_size_sd_fraction": 0.3}
# The multi-area model (its data set where ranvier.datasets finds it, tests/test_multi_area.py):
# `neurons` of its 4.13 million, in-degrees scaled by `synapses` / 1000; inter-area delays cut at
# 1 ms (the study's cutoff, so that the two-tier exchange has D = 10), and membranes started near
# threshold so that a short run has traffic.
MULTI_AREA_TEST = {"inter_area_delay_min_ms": 1.0, "V0_mean_mV": -58.0, "V0_sd_mV": 5.0}

# The burst network (tests/test_conservation.py): every neuron starts at V = H with the same
# constant drive, so all of them cross threshold in the same step, BURST_STEP. Recurrent
# synapses are inhibitory only, so that no neuron can fire a second time before step
# BURST_STEP + R + BURST_STEP > the end of a 10 ms run.
BURST_T_MS = 5.05            # time to threshold from reset: 50.5 steps of 0.1 ms -> spike at step 51
BURST_STEP = 51
BURST_PARAMS = {"tau_m_ms": 10.0, "theta_mV": 20.0, "reset_mV": 15.0, "tau_arp_ms": 2.0,
                "alpha_c": 1.0, "tau_c_ms": 100.0, "g_c_mV_per_ms": 0.0}


def burst_dc(params=BURST_PARAMS, t_ms=BURST_T_MS) -> float:
    """The constant drive (mV/ms) that takes V from H to theta in exactly t_ms."""
    tau, theta, h = params["tau_m_ms"], params["theta_mV"], params["reset_mV"]
    r = math.exp(t_ms / tau)
    v_inf = (r * theta - h) / (r - 1.0)
    return v_inf / tau


def burst_network(neurons: int, probability: float):
    import ranvier as rv
    net = rv.Network(name="burst")
    params = dict(BURST_PARAMS, dc_mV_per_ms=burst_dc())
    n_a = neurons // 2
    net.add_population(rv.Population("A", n_a, dict(params), excitatory=False))
    net.add_population(rv.Population("B", neurons - n_a, dict(params), excitatory=False))
    for src in ("A", "B"):
        for tgt in ("A", "B"):
            # delays 1, 2 or 3 ms: some events are still pending at the end of a 7 ms run
            net.connect(rv.Projection(source=src, target=tgt, probability=probability, weight=-0.2, weight_sd=0.05,
                                      delay_offset_ms=1.0, delay_scale_ms=1.0, delay_cut_ms=3.0, delay_step_ms=1.0))
    return net


# The burst in two areas (tests/test_areas.py): A and B each their own area, intra-area delays
# 0.2 ms, inter-area delays 1.1 ms. Non-overlapped two-tier runs cycles of 2 steps and D = 5,
# overlapped ones cycles of 1 step and D = 10: the burst (cycle 50 with overlap) then opens a
# window, and its inter-area spikes arrive at the first step the overlapped global exchange
# allows ((D + 1) cycles = 11 steps later).
BURST_AREAS_DELAYS_MS = (0.2, 1.1)


def burst_areas_network(neurons: int, probability: float):
    import ranvier as rv
    net = rv.Network(name="burst-areas")
    # refractory for one step only, so the membrane shows when each inhibitory kick arrives
    params = dict(BURST_PARAMS, tau_arp_ms=0.1, dc_mV_per_ms=burst_dc())
    n_a = neurons // 2
    net.add_population(rv.Population("A", n_a, dict(params), excitatory=False, area="a"))
    net.add_population(rv.Population("B", neurons - n_a, dict(params), excitatory=False, area="b"))
    intra, inter = BURST_AREAS_DELAYS_MS
    for src in ("A", "B"):
        for tgt in ("A", "B"):
            net.connect(rv.Projection(source=src, target=tgt, probability=probability, weight=-0.2, weight_sd=0.05,
                                      delay_ms=intra if src == tgt else inter))
    return net


def burst_chain_network(neurons: int, probability: float, links: int = 4):
    """The burst network as a chain of `links` equal populations: each connects to itself and to the
    next one only. With block placement on 2 or 4 ranks, rank r sends to rank r + 1 and hears from
    rank r - 1 alone, so some ranks never talk and partners differ in the two directions
    (tests/test_exchange.py: the persistent strategies' fixed partners)."""
    import ranvier as rv
    net = rv.Network(name="burst-chain")
    params = dict(BURST_PARAMS, dc_mV_per_ms=burst_dc())
    names = [f"L{k}" for k in range(links)]
    for k, name in enumerate(names):
        net.add_population(rv.Population(name, neurons // links + (k < neurons % links), dict(params),
                                         excitatory=False))
    for k, src in enumerate(names):
        for tgt in names[k:k + 2]:
            net.connect(rv.Projection(source=src, target=tgt, probability=probability, weight=-0.2, weight_sd=0.05,
                                      delay_offset_ms=1.0, delay_scale_ms=1.0, delay_cut_ms=3.0, delay_step_ms=1.0))
    return net


def connection_summary(sim) -> dict:
    """This rank's synapses, summarised: their number, an order-independent digest, the
    synapses per delay (in steps), and which sources have at least one synapse here.

    Each synapse is hashed (splitmix64 finaliser over source, target, weight bits, delay
    steps); the digest is the sum of the hashes modulo 2^64, so it does not depend on the
    order in which synapses are stored nor on which rank holds them.
    """
    src, tgt, w, d = sim.connections(local=True)
    src = np.asarray(src, dtype=np.int64)
    steps = np.rint(np.asarray(d, dtype=np.float64) / sim.resolution_ms).astype(np.int64)
    wbits = np.ascontiguousarray(np.asarray(w, dtype=np.float64)).view(np.uint64)

    def mix(x):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))

    with np.errstate(over="ignore"):
        x = mix(src.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15))
        x = mix(x ^ np.asarray(tgt, dtype=np.int64).astype(np.uint64))
        x = mix(x ^ wbits)
        x = mix(x ^ steps.astype(np.uint64))
        digest = int(x.sum(dtype=np.uint64))
    has_targets = np.zeros(sim.network.size, dtype=bool)
    has_targets[src] = True
    return {"count": int(src.size), "digest": digest, "per_delay": np.bincount(steps, minlength=1),
            "has_targets": has_targets}


def recorded_ids(net, record: str | None = None) -> list[int]:
    """The neurons whose V and c are recorded: `record` ("3,17"), or by default the first and
    last neuron of every population, neurons 0, 1, 2 and every sixth of the network, so that
    every rank of a round-robin or block placement on up to 3 ranks holds some of them."""
    if record is not None:
        return sorted({int(x) for x in str(record).split(",") if x != ""})
    n = net.size
    ids = {0, 1, 2} | {k * n // 6 for k in range(6)}
    for p in net.populations:
        ids.update((p.first_id, p.first_id + p.size - 1))
    return sorted(g for g in ids if g < n)


def alpha_network(neurons: int, probability: float):
    """A Brunel-style network of iaf_psc_alpha neurons: 80 % excitatory, inhibitory weights
    negative (its split input), Poisson drive; `probability` is the connection probability."""
    import ranvier as rv
    net = rv.Network(name="alpha")
    params = {"tau_syn_ex_ms": 0.5, "tau_syn_in_ms": 2.0, "V0_mean_mV": -60.0, "V0_sd_mV": 5.0}
    n_e = neurons * 4 // 5
    net.add_population(rv.Population("E", n_e, dict(params), model="iaf_psc_alpha"))
    net.add_population(rv.Population("I", neurons - n_e, dict(params), model="iaf_psc_alpha", excitatory=False))
    for src, w in (("E", 40.0), ("I", -160.0)):
        for tgt in ("E", "I"):
            net.connect(rv.Projection(source=src, target=tgt, probability=probability, weight=w,
                                      delay_offset_ms=1.0, delay_scale_ms=1.0, delay_cut_ms=3.0, delay_step_ms=0.1))
    for tgt in ("E", "I"):
        net.drive(rv.PoissonDrive(tgt, 100, 80.0, weight=40.0))
    return net


def devices_network(neurons: int, probability: float):
    """alpha_network driven by the stimulation devices: a step current, a DC current and an AC
    current on overlapping subsets, a noise current, inhomogeneous Poisson, gamma and dead-time
    Poisson sources."""
    import ranvier as rv
    net = alpha_network(neurons, probability)
    n_e = net.population("E").size
    net.add_population(rv.Population("P", 200, params={"rate_times_ms": [20.0, 80.0, 150.0],
                                                       "rates_hz": [30.0, 120.0, 10.0]}, model="inhomogeneous_poisson"))
    net.connect(rv.Projection(source="P", target="E", indegree=20, weight=60.0, delay_ms=1.0))
    # Gamma and dead-time Poisson sources, orders and dead times per neuron, in windows.
    net.add_population(rv.Population("G", 150, params={"rate_hz": 40.0, "gamma_shape": np.arange(150) % 4 + 1.0,
                                                       "start_ms": 10.0, "stop_ms": 180.0}, model="gamma_source"))
    net.add_population(rv.Population("R", 150, params={"rate_hz": 60.0, "dead_time_ms": np.linspace(0.0, 8.0, 150),
                                                       "start_ms": 25.0, "stop_ms": 1e9}, model="ppd_source"))
    net.connect(rv.Projection(source="G", target="E", indegree=15, weight=60.0, delay_ms=1.0))
    net.connect(rv.Projection(source="R", target="I", indegree=15, weight=60.0, delay_ms=1.5))
    net.inject(rv.StepCurrent("E", [10.0, 60.0, 120.0], [150.0, -50.0, 250.0], neurons=list(range(0, n_e, 3))))
    net.inject(rv.DCCurrent("E", 120.0, start_ms=30.0, stop_ms=170.0, neurons=list(range(n_e // 2, n_e))))
    net.inject(rv.NoiseCurrent("I", mean_pA=50.0, std_pA=200.0, dt_ms=0.5, start_ms=5.0))
    net.inject(rv.ACCurrent("E", 150.0, 25.0, phase_deg=40.0, offset_pA=20.0, start_ms=15.0, stop_ms=180.0,
                            neurons=list(range(1, n_e, 2))))
    return net


def pynn_cells_network(neurons: int, probability: float):
    """The models of PyNN's standard cells in one driven network: psc_exp with separate excitatory
    and inhibitory time constants (E, homogeneous; I, tau_syn_ex_ms drawn per neuron),
    iaf_cond_exp (C, homogeneous; D, g_L_nS and V_th_mV per neuron), iaf_cond_alpha (A,
    homogeneous; B, tau_syn_ex_ms and E_in_mV per neuron), aeif_cond_exp (F, homogeneous, spiking
    with adaptation), aeif_cond_alpha (G, b_pA and the initial w per neuron), hh_cond_exp_traub
    (H), izhikevich (Z, I_e_pA, the initial U and V per neuron), iaf_cond_exp_sfa_rr (S, q_sfa_nS
    per neuron), gif_cond_exp (T, I_e_pA per neuron, stochastic spiking) and the models with
    receptors, iaf_psc_exp_multisynapse (M) and aeif_cond_alpha_multisynapse (Q), three receptors
    each, and aeif_cond_beta_multisynapse (U), two: excitatory sources onto receptor 1, inhibitory
    ones onto receptor 2 (M, negative pA; U, E_rev -80 mV) or 3 (Q, E_rev -80 mV), Poisson
    sources X onto M's and Q's third and U's first; 70 % excitatory, inhibitory weights
    negative (split input), pA into psc_exp, nS into the conductance models; Poisson drive."""
    import ranvier as rv
    from ranvier.core.random import Uniform
    n_e = n_c = n_a = n_f = neurons * 7 // 40
    n_i = n_d = n_b = n_g = (neurons - n_e - n_c - n_a - n_f) // 4
    net = rv.Network(name="pynn-cells")
    psc = {"tau_syn_ex_ms": 0.5, "tau_syn_in_ms": 3.0, "V0_mean_mV": -60.0, "V0_sd_mV": 5.0}
    net.add_population(rv.Population("E", n_e, dict(psc), model="psc_exp"))
    net.add_population(rv.Population("I", n_i, {**psc, "tau_syn_ex_ms": Uniform(0.3, 1.0)}, model="psc_exp",
                                     excitatory=False))
    cond = {"V0_mean_mV": -60.0, "V0_sd_mV": 5.0}
    net.add_population(rv.Population("C", n_c, dict(cond), model="iaf_cond_exp"))
    net.add_population(rv.Population("D", n_d, {**cond, "g_L_nS": np.linspace(12.0, 20.0, n_d),
                                                "V_th_mV": Uniform(-56.0, -54.0)}, model="iaf_cond_exp",
                                     excitatory=False))
    net.add_population(rv.Population("A", n_a, dict(cond), model="iaf_cond_alpha"))
    net.add_population(rv.Population("B", n_b, {**cond, "tau_syn_ex_ms": Uniform(0.2, 0.6),
                                                "E_in_mV": np.linspace(-90.0, -75.0, n_b)}, model="iaf_cond_alpha",
                                     excitatory=False))
    aeif = {"V0_mean_mV": -65.0, "V0_sd_mV": 5.0, "I_e_pA": 550.0, "tau_arp_ms": 0.5}
    net.add_population(rv.Population("F", n_f, dict(aeif), model="aeif_cond_exp"))
    net.add_population(rv.Population("G", n_g, {**aeif, "b_pA": Uniform(40.0, 120.0),
                                                "w0_pA": np.linspace(0.0, 50.0, n_g)}, model="aeif_cond_alpha",
                                     excitatory=False))
    n_h = n_z = max(neurons // 40, 2)
    net.add_population(rv.Population("H", n_h, {"V0_mean_mV": -65.0, "V0_sd_mV": 2.0, "I_e_pA": 300.0},
                                     model="hh_cond_exp_traub"))
    net.add_population(rv.Population("Z", n_z, {"I_e_pA": Uniform(3.0, 8.0), "U0_mV_per_ms": Uniform(-14.0, -12.0)},
                                     model="izhikevich", initial=Uniform(-70.0, -60.0)))
    net.add_population(rv.Population("S", n_h, {"V0_mean_mV": -65.0, "V0_sd_mV": 5.0, "I_e_pA": 450.0,
                                                "q_sfa_nS": Uniform(10.0, 20.0)}, model="iaf_cond_exp_sfa_rr"))
    net.add_population(rv.Population("T", n_h, {"V0_mean_mV": -60.0, "V0_sd_mV": 5.0, "I_e_pA": Uniform(140.0, 170.0),
                                                "lambda_0_hz": 20.0, "tau_stc_ms": [10.0], "q_stc_pA": [10.0],
                                                "tau_sfa_ms": [50.0, 200.0], "q_sfa_mV": [2.0, 0.5]},
                                     model="gif_cond_exp"))
    net.add_population(rv.Population("M", n_h, {"V0_mean_mV": -60.0, "V0_sd_mV": 5.0, "I_e_pA": 350.0,
                                                "tau_syn_ms": [0.5, 3.0, 8.0]}, model="iaf_psc_exp_multisynapse"))
    net.add_population(rv.Population("Q", n_h, {"V0_mean_mV": -65.0, "V0_sd_mV": 5.0, "I_e_pA": 700.0,
                                                "tau_arp_ms": 0.5, "tau_syn_ms": [0.2, 2.0, 5.0],
                                                "E_rev_mV": [0.0, 0.0, -80.0]}, model="aeif_cond_alpha_multisynapse"))
    net.add_population(rv.Population("U", n_h, {"V0_mean_mV": -65.0, "V0_sd_mV": 5.0, "I_e_pA": 700.0,
                                                "tau_rise_ms": [0.2, 1.0], "tau_decay_ms": [2.0, 6.0],
                                                "E_rev_mV": [0.0, -80.0]}, model="aeif_cond_beta_multisynapse"))
    net.add_population(rv.Population("X", n_h, {"rate_hz": 400.0, "stop_ms": 1e9}, model="poisson_source"))
    receptors = {("iaf_psc_exp_multisynapse", True): 1, ("iaf_psc_exp_multisynapse", False): 2,
                 ("aeif_cond_alpha_multisynapse", True): 1, ("aeif_cond_alpha_multisynapse", False): 3,
                 ("aeif_cond_beta_multisynapse", True): 1, ("aeif_cond_beta_multisynapse", False): 2}
    delays = dict(delay_offset_ms=1.0, delay_scale_ms=1.0, delay_cut_ms=3.0, delay_step_ms=0.1)
    weights = {("psc_exp", True): 40.0, ("psc_exp", False): -80.0, ("iaf_cond_exp", True): 2.0,
               ("iaf_cond_exp", False): -8.0, ("iaf_cond_alpha", True): 1.0, ("iaf_cond_alpha", False): -4.0,
               ("aeif_cond_exp", True): 2.0, ("aeif_cond_exp", False): -8.0, ("aeif_cond_alpha", True): 1.0,
               ("aeif_cond_alpha", False): -4.0, ("hh_cond_exp_traub", True): 2.0,
               ("hh_cond_exp_traub", False): -8.0, ("izhikevich", True): 1.0, ("izhikevich", False): -1.0,
               ("iaf_cond_exp_sfa_rr", True): 2.0, ("iaf_cond_exp_sfa_rr", False): -8.0,
               ("gif_cond_exp", True): 2.0, ("gif_cond_exp", False): -8.0,
               ("iaf_psc_exp_multisynapse", True): 40.0, ("iaf_psc_exp_multisynapse", False): -80.0,
               ("aeif_cond_alpha_multisynapse", True): 1.0, ("aeif_cond_alpha_multisynapse", False): 4.0,
               ("aeif_cond_beta_multisynapse", True): 1.0, ("aeif_cond_beta_multisynapse", False): 4.0}
    cells = [p for p in net.populations if p.name != "X"]
    for src in cells:
        for tgt in cells:
            net.connect(rv.Projection(source=src.name, target=tgt.name, probability=probability,
                                      weight=weights[(tgt.model, src.excitatory)],
                                      receptor=receptors.get((tgt.model, src.excitatory)), **delays))
    net.connect(rv.Projection(source="X", target="M", probability=probability * 4, weight=30.0, receptor=3, **delays))
    net.connect(rv.Projection(source="X", target="Q", probability=probability * 4, weight=1.0, receptor=2, **delays))
    net.connect(rv.Projection(source="X", target="U", probability=probability * 4, weight=1.0, receptor=1, **delays))
    for tgt, w, rate in (("E", 40.0, 200.0), ("I", 40.0, 150.0), ("C", 2.0, 120.0), ("D", 2.0, 120.0),
                         ("A", 1.0, 120.0), ("B", 1.0, 120.0), ("F", 2.0, 120.0), ("G", 1.0, 120.0),
                         ("H", 2.0, 120.0), ("Z", 1.0, 120.0), ("S", 2.0, 120.0), ("T", 2.0, 120.0)):
        net.drive(rv.PoissonDrive(tgt, 100, rate, weight=w))
    return net


RULES_LIF = {"tau_m_ms": 20.0, "theta_mV": 20.0, "reset_mV": 10.0, "tau_arp_ms": 2.0, "alpha_c": 0.0,
             "tau_c_ms": 100.0, "g_c_mV_per_ms": 0.0, "dc_mV_per_ms": 0.0}


def rules_network(neurons: int, synapses: int):
    """Every connection rule but the pairwise one, and constant delays, in one driven network:
    E and I (lifca, mV) connected by fixed in-degree and fixed out-degree projections (constant,
    exponential and normal delays), and P (iaf_psc_alpha, pA, split input) reached by an explicit
    list with weights of both signs and delays per entry; P projects back by a list with one
    drawn weight law and one constant delay. `synapses` is K."""
    import ranvier as rv
    n_e, n_i = neurons * 3 // 5, neurons // 5
    n_p = neurons - n_e - n_i
    k = synapses
    net = rv.Network(name="rules")
    net.add_population(rv.Population("E", n_e, dict(RULES_LIF)))
    net.add_population(rv.Population("I", n_i, dict(RULES_LIF), excitatory=False))
    net.add_population(rv.Population("P", n_p, {"V0_mean_mV": -60.0, "V0_sd_mV": 5.0}, model="iaf_psc_alpha"))
    net.connect(rv.Projection(source="E", target="E", indegree=k, weight=0.2, weight_sd=0.05, delay_ms=1.5))
    net.connect(rv.Projection(source="E", target="I", outdegree=k // 2, weight=0.3, delay_offset_ms=1.0,
                              delay_scale_ms=2.0, delay_cut_ms=5.0, delay_step_ms=0.5))
    net.connect(rv.Projection(source="I", target="E", indegree=k // 2, weight=-0.8, weight_sd=0.1,
                              delay_distribution="normal", delay_offset_ms=1.0, delay_mean_ms=2.0, delay_sd_ms=0.5))
    net.connect(rv.Projection(source="I", target="I", outdegree=k // 2, weight=-0.5, delay_ms=1.0))
    rng = np.random.default_rng(7)               # the same list on every rank
    entries = n_p * k
    net.connect(rv.Projection(source="E", target="P", sources=rng.integers(0, n_e, entries),
                              targets=rng.integers(0, n_p, entries),
                              weight=rng.choice([-1.0, 1.0], entries) * rng.uniform(20.0, 60.0, entries),
                              delay_ms=rng.integers(10, 41, entries) * 0.1))
    net.connect(rv.Projection(source="P", target="I", sources=rng.integers(0, n_p, 2 * n_i),
                              targets=np.repeat(np.arange(n_i), 2), weight=0.3, weight_sd=0.05, delay_ms=2.0))
    for tgt in ("E", "I"):
        net.drive(rv.PoissonDrive(tgt, 400, 5.0, weight=0.9, weight_sd=0.1))
    net.drive(rv.PoissonDrive("P", 100, 50.0, weight=40.0))
    return net


def heterogeneous_network(neurons: int, probability: float):
    """Populations of every membrane model whose parameters vary per neuron: arrays, and
    distributions of every kind drawn by the engine, with per-neuron initial potentials, beside
    a homogeneous population; recurrent input in mV (lifca) and pA (the others), Poisson drive."""
    import ranvier as rv
    from ranvier.core.random import Lognormal, Normal, Uniform
    n_l, n_p = neurons * 2 // 5, neurons // 5
    n_a = n_h = (neurons - n_l - n_p) // 2
    index = np.arange(n_l)
    net = rv.Network(name="heterogeneous")
    net.add_population(rv.Population("L", n_l, {
        "tau_m_ms": Uniform(15.0, 25.0), "theta_mV": Normal(20.0, 0.5), "reset_mV": 10.0 + index % 5,
        "tau_arp_ms": 1.0 + index % 3, "alpha_c": 1.0, "tau_c_ms": Lognormal(math.log(100.0), 0.3),
        "g_c_mV_per_ms": 0.01, "dc_mV_per_ms": 0.0}, initial=Uniform(0.0, 15.0)))
    net.add_population(rv.Population("P", n_p, {
        "E_L_mV": Normal(-65.0, 1.0), "V_th_mV": -50.0 - np.arange(n_p) % 2, "I_e_pA": Uniform(200.0, 380.0),
        "tau_syn_ms": 0.5}, model="psc_exp", initial=Normal(-60.0, 3.0)))
    net.add_population(rv.Population("A", n_a, {
        "tau_syn_ex_ms": Lognormal(math.log(0.5), 0.2), "tau_syn_in_ms": 2.0, "V_th_mV": Normal(-50.0, 1.0),
        "C_m_pF": np.linspace(200.0, 300.0, n_a), "V0_mean_mV": -60.0, "V0_sd_mV": 5.0}, model="iaf_psc_alpha",
        excitatory=False))
    net.add_population(rv.Population("H", n_h, {"tau_m_ms": 20.0, "theta_mV": 20.0, "reset_mV": 10.0,
                                                 "tau_arp_ms": 2.0}, initial="uniform"))
    delays = dict(delay_offset_ms=1.0, delay_scale_ms=1.0, delay_cut_ms=3.0, delay_step_ms=0.1)
    for src, tgt, w in (("L", "L", 0.3), ("L", "P", 40.0), ("L", "A", 40.0), ("P", "H", 0.3), ("P", "A", 40.0),
                        ("A", "L", -0.6), ("A", "P", -80.0), ("A", "A", -80.0), ("H", "L", 0.3), ("H", "H", 0.3)):
        net.connect(rv.Projection(source=src, target=tgt, probability=probability, weight=w, **delays))
    for tgt, w in (("L", 0.5), ("P", 20.0), ("A", 40.0), ("H", 0.5)):
        net.drive(rv.PoissonDrive(tgt, 100, {"L": 18.0, "P": 40.0, "A": 80.0, "H": 18.0}[tgt], weight=w))
    return net


def plastic_network(neurons: int, synapses: int):
    """Every plasticity rule in one driven network of three areas (so every placement, on up to
    three ranks, and the two-tier exchange apply): all-to-all STDP, multiplicative (E->E in area a) and additive on
    inhibitory synapses (I->E, negative w_max); the three nearest-neighbour pairings, inside area
    b and between the areas (3 ms and more); the triplet rule onto T, sharing T's history with all-to-all STDP; the power law onto a psc_exp population (pA, split
    input); static projections beside them. Learning rates are large so weights move in 200 ms.
    `synapses` is K."""
    import ranvier as rv
    n_e, n_i, n_b = neurons * 2 // 5, neurons // 10, neurons * 3 // 10
    n_p = neurons - n_e - n_i - n_b
    k = synapses
    net = rv.Network(name="plastic")
    net.add_population(rv.Population("E", n_e, dict(RULES_LIF), area="a", tau_minus_ms=30.0))
    net.add_population(rv.Population("I", n_i, dict(RULES_LIF), excitatory=False, area="a"))
    net.add_population(rv.Population("B", n_b, dict(RULES_LIF), area="b", tau_minus_ms=15.0))
    net.add_population(rv.Population("P", n_p, {"E_L_mV": -65.0, "V_th_mV": -50.0, "tau_syn_ms": 0.5,
                                                "V0_mean_mV": -60.0, "V0_sd_mV": 5.0}, model="psc_exp", area="c"))
    exp_delays = dict(delay_offset_ms=1.0, delay_scale_ms=2.0, delay_cut_ms=5.0, delay_step_ms=0.5)
    net.connect(rv.Projection(source="E", target="E", indegree=k, weight=0.25, weight_sd=0.05, **exp_delays,
                              synapse=rv.STDP(lambda_=0.05, alpha=1.1, w_max=0.6)))
    net.connect(rv.Projection(source="E", target="I", indegree=k, weight=0.3, delay_ms=1.0))
    net.connect(rv.Projection(source="I", target="E", indegree=k // 2, weight=-0.8, delay_ms=1.0,
                              synapse=rv.STDP(lambda_=0.02, mu_plus=0.0, mu_minus=0.0, w_max=-1.6)))
    net.connect(rv.Projection(source="I", target="I", indegree=k // 2, weight=-0.5, delay_ms=1.0))
    net.connect(rv.Projection(source="B", target="B", outdegree=k, weight=0.25, delay_ms=2.0,
                              synapse=rv.STDP(lambda_=0.05, w_max=0.5, pairing="nearest-symmetric")))
    net.connect(rv.Projection(source="E", target="B", indegree=k // 2, weight=0.2, delay_ms=3.0,
                              synapse=rv.STDP(lambda_=0.05, w_max=0.5, mu_plus=0.5,
                                              pairing="nearest-presynaptic-centered")))
    net.connect(rv.Projection(source="B", target="E", indegree=k // 2, weight=0.2, delay_distribution="normal",
                              delay_offset_ms=3.0, delay_mean_ms=4.0, delay_sd_ms=1.0,
                              synapse=rv.STDP(lambda_=0.05, w_max=0.5, pairing="nearest-restricted")))
    net.connect(rv.Projection(source="B", target="P", indegree=k, weight=30.0, delay_ms=1.5,
                              synapse=rv.STDPPowerLaw(lambda_=0.05, mu=0.4)))
    net.connect(rv.Projection(source="P", target="B", indegree=k // 2, weight=0.2, delay_ms=2.0))
    # given spike trains (spike_train), plastic onto E
    rng = np.random.default_rng(5)
    trains = [np.unique(np.round(rng.uniform(0.1, 199.9, 8), 1)).tolist() for _ in range(20)]
    net.add_population(rv.Population("S", 20, {"spike_times_ms": trains}, model="spike_train", area="c"))
    net.connect(rv.Projection(source="S", target="E", indegree=2, weight=0.3, delay_ms=1.0,
                              synapse=rv.STDP(lambda_=0.05, w_max=0.6)))
    # the triplet rule onto T, whose spike history an all-to-all projection shares
    net.add_population(rv.Population("T", 40, dict(RULES_LIF), area="c", tau_minus_ms=25.0,
                                     tau_minus_triplet_ms=80.0))
    net.connect(rv.Projection(source="E", target="T", indegree=k, weight=0.2, delay_ms=2.5,
                              synapse=rv.STDPTriplet(Aplus=0.02, Aminus=0.02, Aplus_triplet=0.02,
                                                     Aminus_triplet=0.01, w_max=0.5)))
    net.connect(rv.Projection(source="B", target="T", indegree=k // 2, weight=0.2, delay_ms=1.5,
                              synapse=rv.STDP(lambda_=0.05, w_max=0.5)))
    net.drive(rv.PoissonDrive("T", 400, 5.0, weight=0.9, weight_sd=0.1))
    for tgt in ("E", "I", "B"):
        net.drive(rv.PoissonDrive(tgt, 400, 5.0, weight=0.9, weight_sd=0.1))
    net.drive(rv.PoissonDrive("P", 100, 50.0, weight=160.0))
    return net


TSODYKS_PROJECTIONS = (("E", "E"), ("E", "I"), ("I", "E"))


def tsodyks_network(neurons: int, synapses: int):
    """Short-term plasticity (rv.TsodyksMarkram) on psc_exp populations with two synaptic time
    constants: depressing E->E, facilitating E->I, inhibitory (negative weights: split input)
    I->E with initial state other than NEST's default; I only receives target-free plastic
    synapses (it keeps no spike history), E also an STDP projection from given spike trains."""
    import ranvier as rv
    n_e = neurons * 4 // 5
    k = synapses
    cell = {"E_L_mV": -65.0, "V_th_mV": -50.0, "tau_syn_ex_ms": 2.0, "tau_syn_in_ms": 4.0,
            "V0_mean_mV": -60.0, "V0_sd_mV": 5.0}
    net = rv.Network(name="tsodyks")
    net.add_population(rv.Population("E", n_e, dict(cell), model="psc_exp", area="a"))
    net.add_population(rv.Population("I", neurons - n_e, dict(cell), model="psc_exp", excitatory=False, area="b"))
    delays = dict(delay_offset_ms=1.0, delay_scale_ms=1.0, delay_cut_ms=3.0, delay_step_ms=0.1)
    net.connect(rv.Projection(source="E", target="E", indegree=k, weight=60.0, weight_sd=10.0, **delays,
                              synapse=rv.TsodyksMarkram(U=0.5, tau_psc_ms=2.0, tau_rec_ms=200.0)))
    net.connect(rv.Projection(source="E", target="I", indegree=k, weight=50.0, delay_ms=1.0,
                              synapse=rv.TsodyksMarkram(U=0.1, tau_psc_ms=2.0, tau_rec_ms=50.0, tau_fac_ms=300.0)))
    net.connect(rv.Projection(source="I", target="E", indegree=k // 2, weight=-120.0, delay_ms=1.5,
                              synapse=rv.TsodyksMarkram(U=0.3, tau_psc_ms=4.0, tau_rec_ms=100.0, tau_fac_ms=50.0,
                                                        u0=0.2, x0=0.8, y0=0.1)))
    net.connect(rv.Projection(source="I", target="I", indegree=k // 2, weight=-40.0, delay_ms=1.0))
    rng = np.random.default_rng(7)
    trains = [np.unique(np.round(rng.uniform(0.1, 199.9, 10), 1)).tolist() for _ in range(20)]
    net.add_population(rv.Population("S", 20, {"spike_times_ms": trains}, model="spike_train", area="b"))
    net.connect(rv.Projection(source="S", target="E", indegree=2, weight=30.0, delay_ms=1.0,
                              synapse=rv.STDP(lambda_=0.05, w_max=60.0)))
    for tgt in ("E", "I"):
        net.drive(rv.PoissonDrive(tgt, 100, 40.0, weight=160.0))
    return net


def bernoulli_network(neurons: int, synapses: int, p_transmit=(0.5, 0.3, 0.7, 0.4)):
    """Stochastic synapses (rv.Bernoulli) on psc_exp populations: E->E with drawn delays (several
    segments per source), E->I, inhibitory I->E (negative weights: split input), a fixed
    out-degree projection from given spike trains onto E (its synapses planned by source), and
    static I->I. p_transmit: the four Bernoulli projections' p, None for static synapses."""
    import ranvier as rv
    return stochastic_network(neurons, synapses, "bernoulli", lambda i: None if p_transmit is None
                              else rv.Bernoulli(p_transmit=p_transmit[i]))


def quantal_network(neurons: int, synapses: int):
    """bernoulli_network's network with quantal release (rv.QuantalSTP): 1 to 4 sites,
    depression, and facilitation on two of the projections."""
    import ranvier as rv
    kinds = [rv.QuantalSTP(U=0.4, n=3, tau_rec_ms=50.0, tau_fac_ms=20.0), rv.QuantalSTP(U=0.6, n=1),
             rv.QuantalSTP(U=0.3, n=4, tau_rec_ms=100.0), rv.QuantalSTP(U=0.5, n=2, tau_rec_ms=30.0, tau_fac_ms=5.0)]
    return stochastic_network(neurons, synapses, "quantal", lambda i: kinds[i])


def stochastic_network(neurons: int, synapses: int, name: str, synapse):
    """The network of bernoulli_network, synapse(i) the kind of its i-th stochastic projection."""
    import ranvier as rv
    n_e = neurons * 4 // 5
    k = synapses
    cell = {"E_L_mV": -65.0, "V_th_mV": -50.0, "tau_syn_ex_ms": 2.0, "tau_syn_in_ms": 4.0,
            "V0_mean_mV": -60.0, "V0_sd_mV": 5.0}
    net = rv.Network(name=name)
    net.add_population(rv.Population("E", n_e, dict(cell), model="psc_exp", area="a"))
    net.add_population(rv.Population("I", neurons - n_e, dict(cell), model="psc_exp", excitatory=False, area="b"))
    delays = dict(delay_offset_ms=1.0, delay_scale_ms=1.0, delay_cut_ms=3.0, delay_step_ms=0.1)
    net.connect(rv.Projection(source="E", target="E", indegree=k, weight=60.0, weight_sd=10.0, **delays,
                              synapse=synapse(0)))
    net.connect(rv.Projection(source="E", target="I", indegree=k, weight=50.0, delay_ms=1.0, synapse=synapse(1)))
    net.connect(rv.Projection(source="I", target="E", indegree=k // 2, weight=-120.0, delay_ms=1.5,
                              synapse=synapse(2)))
    net.connect(rv.Projection(source="I", target="I", indegree=k // 2, weight=-40.0, delay_ms=1.0))
    rng = np.random.default_rng(7)
    trains = [np.unique(np.round(rng.uniform(0.1, 199.9, 10), 1)).tolist() for _ in range(20)]
    net.add_population(rv.Population("S", 20, {"spike_times_ms": trains}, model="spike_train", area="b"))
    net.connect(rv.Projection(source="S", target="E", outdegree=30, weight=200.0, delay_ms=1.0, synapse=synapse(3)))
    for tgt in ("E", "I"):
        net.drive(rv.PoissonDrive(tgt, 100, 40.0, weight=160.0))
    return net


def run_config(model="dpsnn", neurons=2048, synapses=1125, ms=300.0, threads=1, exchange="allgather",
               placement="round-robin", seed=1, probability=0.02, record=None, comm=None, overlap=False,
               ranks_per_node=0, delay_ratio=10, global_interval=None, areas=MAM_TEST["n_areas"], d_min_ms=0.1,
               save_at_ms=None, checkpoint=None, resume=None, splits=None):
    """Build and run one configuration; return a dict of plain arrays on rank 0, None elsewhere.
    artificial-cells: `neurons` cells with `synapses` targets each. ranks_per_node > 0 groups
    consecutive ranks into nodes for the hierarchical exchange (RANVIER_RANKS_PER_NODE).
    exchange "two-tier/S": the two-tier exchange with strategy S in both tiers. d_min_ms: the
    mam-benchmark's minimum delay (0.2 ms makes it even in steps of 0.1 ms, as overlap needs).
    Checkpoints (tests/test_checkpoint.py): save_at_ms and checkpoint: run save_at_ms, save to the
    folder `checkpoint`, run on to `ms`; resume: a checkpoint folder to resume from, then run on to
    `ms` (the whole run's duration)."""
    import os

    import ranvier as rv
    from ranvier import _engine

    t0 = time.perf_counter()
    if model == "dpsnn":
        net = rv.models.dpsnn(neurons=neurons, synapses_per_neuron=synapses)
    elif model == "dpsnn-grid":     # 16 x 16 columns, short lateral range (tests/test_grid_columns.py)
        net = rv.models.dpsnn(neurons=neurons, synapses_per_neuron=synapses, columns_x=16, columns_y=16,
                              lateral_length=0.7, lateral_cutoff=2.0)
    elif model == "burst":
        net = burst_network(neurons, probability)
    elif model == "burst-areas":
        net = burst_areas_network(neurons, probability)
    elif model == "burst-chain":
        net = burst_chain_network(neurons, probability)
    elif model == "artificial-cells":
        net = rv.models.build("artificial-cells", cells=neurons, targets_per_cell=synapses)
    elif model == "mam-benchmark":
        net = rv.models.build("mam-benchmark", n_areas=areas, area_size=neurons, K=synapses,
                              rate_hz=MAM_TEST["rate_hz"], rate_sd=MAM_TEST["rate_sd"],
                              area_size_sd=MAM_TEST["area_size_sd_fraction"] * neurons,
                              delay_ratio=delay_ratio, d_min_ms=d_min_ms)
    elif model == "multi-area":
        net = rv.models.build("multi-area", scale=neurons / 4130057,        # the data set's own folder
                              k_scale=synapses / 1000, **MULTI_AREA_TEST)
    elif model == "mam-benchmark-study":   # the study's rules: `neurons` per area (spread), in-degree `synapses`
        net = rv.models.build("mam-benchmark-study", n_areas=areas, area_size=neurons, indegree=synapses,
                              rate_hz=MAM_TEST["rate_hz"], area_size_sigma=MAM_TEST["area_size_sd_fraction"])
    elif model == "iaf_psc_alpha":
        net = alpha_network(neurons, probability)
    elif model == "devices":
        net = devices_network(neurons, probability)
    elif model == "rules":
        net = rules_network(neurons, synapses)
    elif model == "pynn-cells":
        net = pynn_cells_network(neurons, probability)
    elif model == "heterogeneous":
        net = heterogeneous_network(neurons, probability)
    elif model == "plastic":
        net = plastic_network(neurons, synapses)
    elif model == "tsodyks":
        net = tsodyks_network(neurons, synapses)
    elif model == "bernoulli":
        net = bernoulli_network(neurons, synapses)
    elif model == "quantal":
        net = quantal_network(neurons, synapses)
    elif model == "dpsnn-stdp":      # the plastic dpsnn, with a learning rate that moves weights in a short run
        net = rv.models.dpsnn(neurons=neurons, synapses_per_neuron=synapses, plasticity="stdp", stdp_lambda=0.1)
    elif model == "microcircuit":
        scale = neurons / 77169
        net = rv.models.build("microcircuit", scale=scale, k_scale=scale, **MICROCIRCUIT_TEST)
    else:
        raise ValueError(f"unknown model {model!r}")
    saved = os.environ.pop("RANVIER_RANKS_PER_NODE", None)
    if ranks_per_node:
        os.environ["RANVIER_RANKS_PER_NODE"] = str(ranks_per_node)
    try:
        strategy, _, tier = exchange.partition("/")
        tiers = {"tier_exchange": tier, "global_interval": global_interval} if tier else {}
        if model == "plastic":          # the weight recorder joins the invariance tests
            tiers["record_weights"] = [rv.WeightRecorder(source="E", target="E", synapses=6, interval_ms=50.0),
                                       rv.WeightRecorder(source="B", target="P", synapses=3, interval_ms=100.0)]
        kwargs = dict(threads=threads, exchange=strategy, placement=placement, seed=seed, comm=comm,
                      record_state=recorded_ids(net, record), overlap=bool(overlap), **tiers)
        if resume is not None:
            kwargs.pop("seed")
            sim = rv.Simulation.resume(resume, net, **kwargs)
        else:
            sim = rv.Simulation(net, **kwargs)
    finally:
        os.environ.pop("RANVIER_RANKS_PER_NODE", None)
        if saved is not None:
            os.environ["RANVIER_RANKS_PER_NODE"] = saved
    t_build = time.perf_counter() - t0
    summary = connection_summary(sim)
    # the small rules network: every synapse, gathered on rank 0 (Simulation.connections)
    gathered = sim.connections() if model == "rules" else None
    t1 = time.perf_counter()
    if save_at_ms is not None:
        sim.run(save_at_ms)
        sim.save(checkpoint)
        res = sim.run(ms - save_at_ms)
    elif resume is not None:
        res = sim.run(ms - sim.steps_done * sim.resolution_ms)
    elif splits:                        # run() calls of these durations first (ms, commas), then the rest
        for part_ms in (float(x) for x in str(splits).split(",")):
            sim.run(part_ms)
        res = sim.run(round(ms / sim.resolution_ms - sim.steps_done) * sim.resolution_ms)
    else:
        res = sim.run(ms)
    t_run = time.perf_counter() - t1
    # the plastic network: every synapse with its weight after the run, and one projection's
    # weights brought up to date
    if model == "plastic":
        gathered = sim.connections()
        up_to_date = sim.weights("E", "E", up_to_date=True)
        # weights.h5's arrays: canonical order, multapses in draw order (not sorted by weight)
        from ranvier.io import weights as weights_io
        edge_names = weights_io.edge_population_names(net)
        in_file = {edge_names[j]: arrays for j, arrays in (weights_io.gather_plastic(sim) or {}).items()}
    if model == "tsodyks":              # every synapse's u, x, y (Simulation.synapse_state)
        gathered = sim.connections()
        states = {f"{s}_to_{t}": sim.synapse_state(s, t) for s, t in TSODYKS_PROJECTIONS}
    if model == "quantal":              # every synapse's u and sites available
        states = {f"{s}_to_{t}": sim.synapse_state(s, t) for s, t in (("E", "E"), ("E", "I"), ("I", "E"), ("S", "E"))}
    if model == "dpsnn-stdp":
        gathered = sim.connections()
        up_to_date = sim.weights("F", "F", up_to_date=True)
    parts = sim.comm.gather(summary)
    if sim.rank != 0:
        return None
    delays = np.zeros(max(p["per_delay"].size for p in parts), dtype=np.int64)
    for p in parts:
        delays[:p["per_delay"].size] += p["per_delay"]
    names = list(_engine.COUNTERS)
    out = {
        "ids": res.spike_ids.copy(),
        "steps": res.spike_steps.copy(),
        "counter_names": np.array(names),
        "counters_per_rank": np.stack([np.asarray(res.counters_per_rank[k], dtype=np.int64) for k in names],
                                      axis=1),                     # [rank, counter]
        "synapses_per_rank": np.array([p["count"] for p in parts], dtype=np.int64),
        "digest": np.uint64(sum(p["digest"] for p in parts) % 2**64),
        "synapses_per_delay": delays,                               # index: delay in steps
        "has_targets": np.stack([p["has_targets"] for p in parts]),  # [rank, source]
        "state_ids": np.asarray(res.state["ids"], dtype=np.int64),
        "state_V": np.asarray(res.state["V"], dtype=np.float64),
        "state_c": np.asarray(res.state["c"], dtype=np.float64),
        "state_w": np.asarray(res.state["w"], dtype=np.float64),       # NaN but for the aeif models
        "ranks": res.ranks, "threads": threads, "exchange": exchange, "placement": placement,
        "overlap": bool(overlap), "global_interval": sim.global_interval,
        "seed": seed, "duration_ms": res.duration_ms, "steps_per_cycle": res.steps_per_cycle,
        "population_first_ids": np.array(res.population_first_ids, dtype=np.int64),
        "population_sizes": np.array(res.population_sizes, dtype=np.int64),
        "build_seconds": t_build, "run_seconds": t_run,
    }
    if gathered is not None:
        out.update({f"connections_{k}": np.asarray(v) for k, v in gathered._asdict().items()})
    if model == "plastic":
        for name, trace in res.weight_traces.items():
            out.update({f"trace_{name}_{k}": np.asarray(v) for k, v in trace.items()})
        for name, arrays in in_file.items():
            out.update({f"file_{name}_{k}": a for k, a in zip(("source", "target", "delay", "weight"), arrays)})
    if model in ("tsodyks", "quantal"):
        for name, state in states.items():
            out.update({f"synapse_state_{name}_{k}": np.asarray(v) for k, v in state.items()})
    if model in ("plastic", "dpsnn-stdp"):
        out.update({f"up_to_date_{k}": np.asarray(v) for k, v in up_to_date._asdict().items()})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=MODELS, default="dpsnn")
    ap.add_argument("--neurons", type=int, default=2048)
    ap.add_argument("--synapses", type=int, default=1125, help="dpsnn synapses_per_neuron")
    ap.add_argument("--probability", type=float, default=0.02, help="burst connection probability")
    ap.add_argument("--ms", type=float, default=300.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--exchange", default="allgather", help="one strategy, or several separated by commas")
    ap.add_argument("--overlap", default="0", help="0, 1, or both as 0,1")
    ap.add_argument("--ranks-per-node", type=int, default=0)
    ap.add_argument("--placement", default="round-robin", help="one placement, or several separated by commas "
                    "(files are then named <out>-<placement>-<exchange>-<overlap>.npz)")
    ap.add_argument("--delay-ratio", type=int, default=10, help="mam-benchmark: D")
    ap.add_argument("--areas", type=int, default=MAM_TEST["n_areas"], help="mam-benchmark: areas")
    ap.add_argument("--d-min-ms", type=float, default=0.1, help="mam-benchmark: the minimum delay d_min_ms")
    ap.add_argument("--global-interval", type=int, default=None, help="two-tier: cycles between global exchanges")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--record", default=None, help="comma-separated neuron ids to record V and c of")
    ap.add_argument("--save-at-ms", type=float, default=None, help="run this long, save to --checkpoint, run on")
    ap.add_argument("--checkpoint", default=None, help="the checkpoint folder --save-at-ms writes")
    ap.add_argument("--resume", default=None, help="a checkpoint folder to resume from (then run on to --ms)")
    ap.add_argument("--splits", default=None, help="durations (ms, commas) of run() calls before the one to --ms")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    exchanges = a.exchange.split(",")
    overlaps = [bool(int(x)) for x in a.overlap.split(",")]
    placements = a.placement.split(",")
    try:
        for placement in placements:
            for exchange in exchanges:
                for overlap in overlaps:
                    out = run_config(model=a.model, neurons=a.neurons, synapses=a.synapses, ms=a.ms,
                                     threads=a.threads, exchange=exchange, placement=placement, seed=a.seed,
                                     probability=a.probability, record=a.record, overlap=overlap,
                                     ranks_per_node=a.ranks_per_node, delay_ratio=a.delay_ratio,
                                     global_interval=a.global_interval, areas=a.areas, d_min_ms=a.d_min_ms,
                                     save_at_ms=a.save_at_ms, checkpoint=a.checkpoint, resume=a.resume,
                                     splits=a.splits)
                    if out is None:
                        continue
                    name = exchange.replace("/", "+")
                    prefix = f"{a.out}-{placement}" if len(placements) > 1 else a.out
                    np.savez(f"{prefix}-{name}-{int(overlap)}.npz", **out)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        try:                                  # never leave the other ranks hanging in a collective
            from mpi4py import MPI
            MPI.COMM_WORLD.Abort(1)
        except ImportError:
            pass
        raise


if __name__ == "__main__":
    main()
