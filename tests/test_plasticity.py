"""STDP (ranvier.core.plasticity): exact, and identical under any decomposition.

- Every plastic synapse's final weight equals what NEST's algorithm gives for its own pre- and
  post-synaptic spike trains: an independent, event-by-event Python transcription of NEST 3.10's
  stdp_synapse, stdp_nn_*_synapse and stdp_pl_synapse_hom (send(), and the archiving node's
  get_history / get_K_value) run on the spike trains the engine produced. NEST itself is the
  reference of tests/test_stdp_nest.py.
- The plastic network of tests/mpi_runner.py (every rule, two areas) gives identical spikes and
  identical weights (float64, bit for bit) for ranks {1, 2, 3} x threads {1, 2} x every exchange
  (overlapped or not, and two-tier) x every placement.
- A learning rate of zero gives the spikes of static synapses; bad input is refused clearly.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ranvier as rv
from conftest import counters, spikes_per_population
from mpi_runner import plastic_network

PLASTIC_RUN = dict(model="plastic", neurons=600, synapses=30, ms=200.0)
STRATEGIES = tuple(rv.core.simulation.STRATEGIES)
PLACEMENTS = tuple(p for p in rv.core.simulation.PLACEMENTS if p != "grid")   # grid: for networks on a grid of columns (test_grid_columns)


# -- NEST's algorithm, transcribed event by event ---------------------------------------------
def nest_weight(synapse, w, delay, pre, post, tau_minus, h, steps_done):
    """The weight NEST gives a synapse with these spike trains (steps), after every pre-synaptic
    spike received by `steps_done` (updated when received, as NEST does: every spike of the run)."""
    if isinstance(synapse, rv.STDPTriplet):
        return nest_triplet_weight(synapse, w, delay, pre, post, tau_minus, h, steps_done)
    pl = isinstance(synapse, rv.STDPPowerLaw)
    rule = synapse.rule
    tau_plus = synapse.tau_plus_ms
    lam, alpha = synapse.lambda_, synapse.alpha

    def up(w, k):
        if pl:
            return w + lam * w ** synapse.mu * k
        n = w / synapse.w_max + lam * (1.0 - w / synapse.w_max) ** synapse.mu_plus * k
        return n * synapse.w_max if n < 1.0 else synapse.w_max

    def down(w, k):
        if pl:
            n = w - lam * alpha * w * k
            return n if n > 0.0 else 0.0
        n = w / synapse.w_max - alpha * lam * (w / synapse.w_max) ** synapse.mu_minus * k
        return n * synapse.w_max if n > 0.0 else 0.0

    # NEST compares times with a tolerance (stdp_eps), which on the grid is an exact comparison
    # of steps: the windows are chosen in steps here, the exponentials take milliseconds.
    history, k_minus, last = [], 0.0, None          # the archiving node: (step, K-) per spike
    for t in post:
        k_minus = (k_minus * math.exp((last - t * h) / tau_minus) if last is not None else 0.0) + 1.0
        last = t * h
        history.append((t, k_minus))
    k_plus, t_last, last_step = 0.0, 0.0, 0
    for t in pre:
        if t > steps_done:       # updated when received: every spike of the run
            break
        t_spike, dd = t * h, delay * h
        window = [(tp, k) for tp, k in history if last_step - delay < tp <= t - delay]
        before = [(tp, k) for tp, k in history if tp < t - delay]
        K, nearest = ((before[-1][1] * math.exp((before[-1][0] * h - (t_spike - dd)) / tau_minus),
                       math.exp((before[-1][0] * h - (t_spike - dd)) / tau_minus)) if before else (0.0, 0.0))
        decay = [math.exp((t_last - (tp * h + dd)) / tau_plus) for tp, _ in window]
        if rule in ("stdp", "stdp_power_law"):
            for e in decay:
                w = up(w, k_plus * e)
            w = down(w, K)
            k_plus = k_plus * math.exp((t_last - t_spike) / tau_plus) + 1.0
        elif rule == "stdp_nn_symmetric":
            for e in decay:
                w = up(w, e)
            w = down(w, nearest)
        elif rule == "stdp_nn_pre_centered":
            if decay:
                w = up(w, k_plus * decay[0])
                k_plus = 0.0
            w = down(w, nearest)
            k_plus = k_plus * math.exp((t_last - t_spike) / tau_plus) + 1.0
        elif rule == "stdp_nn_restricted":
            if decay:
                w = up(w, decay[0])
                w = down(w, nearest)
        t_last, last_step = t_spike, t
    return w


def nest_triplet_weight(s, w, delay, pre, post, tau_minus, h, steps_done, tau_minus_triplet=80.0):
    """NEST's stdp_triplet_synapse, event by event (tau_minus_triplet: the plastic network's E)."""
    history, k_minus, k_y, last = [], 0.0, 0.0, None     # (step, K-, triplet K-) per spike
    for t in post:
        k_minus = (k_minus * math.exp((last - t * h) * (1.0 / tau_minus)) if last is not None else 0.0) + 1.0
        k_y = (k_y * math.exp((last - t * h) * (1.0 / tau_minus_triplet)) if last is not None else 0.0) + 1.0
        last = t * h
        history.append((t, k_minus, k_y))
    k_plus, k_x, t_last, last_step = 0.0, 0.0, 0.0, 0
    for t in pre:
        if t > steps_done:       # updated when received: every spike of the run
            break
        t_spike, dd = t * h, delay * h
        for tp, _, y in (e for e in history if last_step - delay < e[0] <= t - delay):
            new = abs(w) + k_plus * math.exp((t_last - (tp * h + dd)) / s.tau_plus_ms) * (s.Aplus + s.Aplus_triplet * (y - 1.0))
            w = math.copysign(new if new < abs(s.w_max) else s.w_max, s.w_max)
        k_x *= math.exp((t_last - t_spike) / s.tau_plus_triplet_ms)
        before = [e for e in history if e[0] < t - delay]
        K = before[-1][1] * math.exp((before[-1][0] * h - (t_spike - dd)) * (1.0 / tau_minus)) if before else 0.0
        new = abs(w) - K * (s.Aminus + s.Aminus_triplet * k_x)
        w = math.copysign(new if new > 0.0 else 0.0, s.w_max)
        k_x += 1.0
        k_plus = k_plus * math.exp((t_last - t_spike) / s.tau_plus_ms) + 1.0
        t_last, last_step = t_spike, t
    return w


def trains(result):
    """Spike steps per neuron id."""
    ids, steps = result.spike_ids, result.spike_steps
    order = np.argsort(ids, kind="stable")
    ids, steps = ids[order], steps[order]
    bounds = np.searchsorted(ids, np.arange(ids.max() + 2))
    return lambda g: steps[bounds[g]:bounds[g + 1]] if g <= ids.max() else steps[:0]


@pytest.fixture(scope="module")
def plastic_run():
    net = plastic_network(PLASTIC_RUN["neurons"], PLASTIC_RUN["synapses"])
    initial = rv.Simulation(net, threads=1, seed=1)
    sim = rv.Simulation(net, threads=2, seed=1)
    res = sim.run(PLASTIC_RUN["ms"])
    return net, initial, sim, res


def test_every_rule_gives_nest_weights_for_its_spike_trains(plastic_run):
    net, initial, sim, res = plastic_run
    train = trains(res)
    h, steps_done = sim.resolution_ms, round(res.duration_ms / sim.resolution_ms)
    rng = np.random.default_rng(0)
    for pr in net.projections:
        if pr.synapse is None:
            continue
        before, after = initial.weights(pr.source, pr.target), sim.weights(pr.source, pr.target)
        assert np.array_equal(before.source, after.source) and np.array_equal(before.delay_ms, after.delay_ms)
        changed = np.count_nonzero(before.weight != after.weight)
        assert changed > after.weight.size // 2, (pr.source, pr.target, changed)     # the rule did work
        tau_minus = net.population(pr.target).tau_minus_ms
        # the engine orders multapses by weight; sort both sides per (source, target, delay)
        worst = 0.0
        for i in rng.choice(after.weight.size, 300, replace=False):
            s, t, d = int(after.source[i]), int(after.target[i]), round(after.delay_ms[i] / h)
            same = np.flatnonzero((before.source == s) & (before.target == t) & (np.rint(before.delay_ms / h) == d))
            expected = sorted(nest_weight(pr.synapse, before.weight[j], d, train(s), train(t), tau_minus, h, steps_done)
                              for j in same)
            got = sorted(after.weight[same])
            for e, g in zip(expected, got):
                worst = max(worst, abs(g - e) / max(abs(e), 1e-300))
        assert worst < 1e-12, (pr.source, pr.target, type(pr.synapse).__name__, worst)


def test_up_to_date_weights_are_the_next_spikes_facilitation(plastic_run):
    """Brought up to date, an all-to-all weight has had the facilitation of every target spike
    that reached the synapse; the stored weight has not; reading changes nothing."""
    net, _, sim, res = plastic_run
    stored = sim.weights("E", "E")
    now = sim.weights("E", "E", up_to_date=True)
    moved = now.weight != stored.weight
    assert 0 < np.count_nonzero(moved) < stored.weight.size
    assert np.all(now.weight[moved] > stored.weight[moved])       # only facilitation is pending
    assert np.array_equal(sim.weights("E", "E").weight, stored.weight)


def test_zero_learning_rate_gives_the_spikes_of_static_synapses():
    def net(synapse):
        n = rv.Network()
        n.add_population(rv.Population("E", 400, initial="uniform"))
        n.add_population(rv.Population("I", 100, initial="uniform", excitatory=False))
        n.connect(rv.Projection(source="E", target="E", indegree=40, weight=0.5, delay_ms=1.5, synapse=synapse))
        n.connect(rv.Projection(source="E", target="I", indegree=40, weight=0.5, delay_ms=1.5))
        n.connect(rv.Projection(source="I", target="E", indegree=10, weight=-2.0, delay_ms=1.0))
        n.drive(rv.PoissonDrive("E", 100, 20.0, weight=0.5))
        n.drive(rv.PoissonDrive("I", 100, 20.0, weight=0.5))
        return n
    static = rv.Simulation(net(None), threads=1, seed=4).run(500.0)
    assert static.spikes_total > 300
    for synapse in (rv.STDP(lambda_=0.0, w_max=1.0), rv.STDP(lambda_=0.0, w_max=1.0, pairing="nearest-symmetric"),
                    rv.STDPPowerLaw(lambda_=0.0)):
        sim = rv.Simulation(net(synapse), threads=2, seed=4)
        plastic = sim.run(500.0)
        assert np.array_equal(plastic.spike_ids, static.spike_ids), synapse
        assert np.array_equal(plastic.spike_steps, static.spike_steps), synapse
        assert np.allclose(sim.weights("E", "E").weight, 0.5, rtol=1e-15, atol=0)


def test_weights_of_a_static_projection_and_the_errors():
    net = plastic_network(300, 10)
    sim = rv.Simulation(net, threads=1)
    w = sim.weights("E", "I")
    stored = np.rint(0.3 * 2.0**sim.fraction_bits) / 2.0**sim.fraction_bits     # static: in fixed point
    assert w.weight.size == net.population("I").size * 10 and np.all(w.weight == stored)
    with pytest.raises(rv.ConfigError, match="no projection from 'I' onto 'B'"):
        sim.weights("I", "B")
    with pytest.raises(rv.ConfigError, match="does not join them"):
        sim.weights("E", "E", index=3)


@pytest.mark.parametrize("kw,word", [
    (dict(synapse="stdp"), "'synapse' must be None"),
    (dict(synapse=rv.STDP(pairing="nearest")), "pairing must be one of"),
    (dict(synapse=rv.STDP(w_max=0.0)), "'w_max' must not be zero"),
    (dict(synapse=rv.STDP(tau_plus_ms=-1.0)), "'tau_plus_ms' must be positive"),
    (dict(synapse=rv.STDP(lambda_=-0.1)), "'lambda_' must be at least 0"),
    (dict(synapse=rv.STDP(w_max=-1.0)), "must have the sign of w_max"),
    (dict(weight=-0.5, synapse=rv.STDPPowerLaw()), "power-law STDP needs weights >= 0"),
])
def test_bad_plasticity_is_refused_before_anything_is_built(kw, word):
    net = rv.Network()
    net.add_population(rv.Population("E", 10))
    with pytest.raises(rv.ConfigError, match=word) as e:
        net.connect(rv.Projection(**{"source": "E", "target": "E", "indegree": 2, "weight": 0.5, "delay_ms": 1.0,
                                     **kw}))
    assert "projection E->E" in str(e.value)


def test_bad_tau_minus_is_refused():
    with pytest.raises(rv.ConfigError, match="'tau_minus_ms'"):
        rv.Network().add_population(rv.Population("E", 10, tau_minus_ms=0.0))


# -- decomposition invariance -----------------------------------------------------------------
# Every placement on 1, 2 and 3 ranks, each with every strategy, and both thread counts among
# them (a covering set: the full product of ranks x threads x placements took 8 of CI's minutes
# on 2 cores, and threads and placement act on different things: who owns a neuron, who
# computes it).
DECOMPOSITIONS = [(r, t, p) for p in PLACEMENTS for r, t in ((1, 2), (2, 1), (3, 2))] + \
    [(2, 2, "round-robin"), (3, 1, "block"), (2, 2, "random"), (3, 1, "balanced")]


@pytest.fixture(scope="module")
def plastic_reference(workloads):
    return workloads(1, threads=1, placement="round-robin", **PLASTIC_RUN)


def test_plastic_reference_is_not_trivial(plastic_reference):
    ref = plastic_reference
    w = ref["trace_E_to_E_weights"]
    assert w.shape == (6, 5) and np.all(ref["trace_E_to_E_times_ms"] == [0, 50, 100, 150, 200])
    assert np.count_nonzero(np.diff(w, axis=1)) > 6                # the recorded weights move
    assert ref["trace_B_to_P_weights"].shape == (3, 3)
    # multapses (equal source, target, delay) with different weights: their order in weights.h5
    # is the engine's draw order, which the decomposition must not change
    s, t, d, w = (ref[f"file_E_to_E_{k}"] for k in ("source", "target", "delay", "weight"))
    same = (s[1:] == s[:-1]) & (t[1:] == t[:-1]) & (d[1:] == d[:-1])
    assert np.count_nonzero(same & (w[1:] != w[:-1])) > 0
    by_population = spikes_per_population(ref)
    assert np.all(by_population[:4] > 500), by_population          # E, I, B and P all fire
    assert by_population[4] > 100                                  # and the given trains of S
    assert counters(ref)["synaptic_events_recurrent"] > 100_000
    assert ref["connections_source"].size == ref["synapses_per_rank"].sum()


@pytest.mark.parametrize("ranks,threads,placement", DECOMPOSITIONS,
                         ids=[f"ranks={r}-threads={t}-{p}" for r, t, p in DECOMPOSITIONS])
def test_plastic_network_is_decomposition_invariant(workloads, plastic_reference, ranks, threads, placement):
    ref = plastic_reference
    runs = workloads.sweep(ranks, STRATEGIES, threads=threads, placement=placement, **PLASTIC_RUN)
    runs.update(workloads.sweep(ranks, ("two-tier/alltoallv",), overlaps=(False,), threads=threads,
                                placement=placement, **PLASTIC_RUN))
    for (exchange, overlap), run in runs.items():
        what = f"{exchange}, overlap={overlap}"
        assert run["ranks"] == ranks
        assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"]), what
        for key in ("source", "target", "weight", "delay_ms"):
            assert np.array_equal(run[f"connections_{key}"], ref[f"connections_{key}"]), (what, key)
            assert np.array_equal(run[f"up_to_date_{key}"], ref[f"up_to_date_{key}"]), (what, key)
        assert counters(run)["events_scheduled"] == counters(ref)["events_scheduled"], what
        traces = [k for k in ref if k.startswith("trace_")]
        assert len(traces) == 10                                   # two recorders, five arrays each
        for key in traces:
            assert np.array_equal(run[key], ref[key]), (what, key)
        in_file = [k for k in ref if k.startswith("file_")]     # weights.h5's arrays, multapses in draw order
        assert len(in_file) == 4 * 9                                # 9 plastic projections
        for key in in_file:
            assert np.array_equal(run[key], ref[key]), (what, key)


# The plastic dpsnn (issue 15): reduced, E->E STDP with a learning rate that moves weights in
# 300 ms; the placements without areas (dpsnn has none).
DPSNN_STDP_RUN = dict(model="dpsnn-stdp", neurons=1024, synapses=200, ms=300.0)
DPSNN_DECOMPOSITIONS = [(1, 2, "round-robin"), (1, 2, "block"), (2, 1, "round-robin"), (2, 2, "block"),
                        (3, 1, "block"), (3, 2, "round-robin"), (2, 2, "random"), (3, 1, "random")]


@pytest.fixture(scope="module")
def dpsnn_stdp_reference(workloads):
    return workloads(1, threads=1, placement="round-robin", **DPSNN_STDP_RUN)


def test_plastic_dpsnn_reference_is_not_trivial(dpsnn_stdp_reference):
    ref = dpsnn_stdp_reference
    assert ref["ids"].size > 1000
    net = rv.models.dpsnn(neurons=1024, synapses_per_neuron=200, plasticity="stdp", stdp_lambda=0.1)
    initial = rv.Simulation(net, threads=1, seed=1).connections()
    assert np.array_equal(initial.source, ref["connections_source"])      # the same synapses,
    assert np.array_equal(initial.target, ref["connections_target"])      # sorted by source and target
    changed = np.count_nonzero(np.sort(initial.weight) != np.sort(ref["connections_weight"]))
    assert changed > initial.weight.size // 4                      # the E->E weights moved


@pytest.mark.parametrize("ranks,threads,placement", DPSNN_DECOMPOSITIONS,
                         ids=[f"ranks={r}-threads={t}-{p}" for r, t, p in DPSNN_DECOMPOSITIONS])
def test_plastic_dpsnn_is_decomposition_invariant(workloads, dpsnn_stdp_reference, ranks, threads, placement):
    ref = dpsnn_stdp_reference
    runs = workloads.sweep(ranks, STRATEGIES, threads=threads, placement=placement, **DPSNN_STDP_RUN)
    for (exchange, overlap), run in runs.items():
        what = f"{exchange}, overlap={overlap}"
        assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"]), what
        for key in ("source", "target", "weight", "delay_ms"):
            assert np.array_equal(run[f"connections_{key}"], ref[f"connections_{key}"]), (what, key)
            assert np.array_equal(run[f"up_to_date_{key}"], ref[f"up_to_date_{key}"]), (what, key)
