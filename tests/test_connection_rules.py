"""Connection rules of a Projection: fixed in-degree, fixed out-degree, explicit lists, constant
delays, and the refusals of bad input.

Degrees and lists are checked exactly on the built network (Simulation.connections); the
uniformity of drawn sources and targets by a chi-square test with a false-alarm probability of
about 1e-6 (the seed is fixed, so each check is deterministic). Decomposition invariance of a
network with every rule: 1-3 ranks x 1-2 threads x placement x exchange x overlap, spikes and
every synapse (tests/mpi_runner.py: rules_network).
"""
import itertools
import math

import numpy as np
import pytest

import ranvier as rv
from conftest import counters, spikes_per_population

LIF = {"tau_m_ms": 20.0, "theta_mV": 20.0, "reset_mV": 10.0, "tau_arp_ms": 2.0, "alpha_c": 0.0,
       "tau_c_ms": 100.0, "g_c_mV_per_ms": 0.0, "dc_mV_per_ms": 0.0}
ALPHA = {"V0_mean_mV": -60.0, "V0_sd_mV": 5.0}


def chi2_threshold(dof, z=5.0):
    """Upper quantile of chi-square(dof) at the normal z (Wilson-Hilferty): P(exceeded) ~ 3e-7."""
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def two_populations(n_a=60, n_b=40, model_b="lifca"):
    net = rv.Network(name="rules")
    net.add_population(rv.Population("A", n_a, dict(LIF)))
    net.add_population(rv.Population("B", n_b, dict(ALPHA if model_b == "iaf_psc_alpha" else LIF), model=model_b))
    return net


def built(net, **kw):
    """The network's synapses on one rank: Connections(source, target, weight, delay_ms)."""
    sim = rv.Simulation(net, **{"threads": 1, "seed": 3, **kw})
    return sim, sim.connections()


def quantized(weights, sim):
    """Weights as the engine stores them: in the fixed point of synaptic input."""
    scale = 2.0 ** sim.fraction_bits
    return np.rint(np.asarray(weights, dtype=np.float64) * scale) / scale


# -- fixed in-degree and fixed out-degree ------------------------------------------------------
def test_every_target_has_exactly_the_indegree():
    net = two_populations()
    net.connect(rv.Projection(source="A", target="B", indegree=13, weight=0.1, weight_sd=0.02, delay_ms=1.0))
    net.connect(rv.Projection(source="A", target="A", indegree=5, weight=0.2, delay_ms=2.0))
    _, c = built(net, threads=2)
    a_to_b = (c.source < 60) & (c.target >= 60)
    a_to_a = (c.source < 60) & (c.target < 60)
    assert a_to_b.sum() + a_to_a.sum() == c.source.size == 40 * 13 + 60 * 5
    assert np.array_equal(np.bincount(c.target[a_to_b] - 60, minlength=40), np.full(40, 13))
    assert np.array_equal(np.bincount(c.target[a_to_a], minlength=60), np.full(60, 5))
    assert net.expected_synapses() == c.source.size


def test_every_source_has_exactly_the_outdegree():
    net = two_populations()
    net.connect(rv.Projection(source="B", target="A", outdegree=17, weight=-0.3, delay_ms=1.5))
    net.connect(rv.Projection(source="A", target="A", outdegree=4, weight=0.1, delay_ms=1.0))
    _, c = built(net, threads=2, placement="block")
    b_to_a = c.source >= 60
    assert np.array_equal(np.bincount(c.source[b_to_a] - 60, minlength=40), np.full(40, 17))
    assert np.all(c.target[b_to_a] < 60)
    assert np.array_equal(np.bincount(c.source[~b_to_a], minlength=60), np.full(60, 4))
    assert net.expected_synapses() == c.source.size == 40 * 17 + 60 * 4


@pytest.mark.parametrize("rule", ["indegree", "outdegree"])
def test_drawn_ends_are_uniform(rule):
    """Fixed in-degree: the sources of 2000 targets x 10 over 50 sources; fixed out-degree: the
    targets of 2000 sources x 10 over 50 targets. Chi-square of the counts against uniform, and
    autapses and multapses occur (drawn with replacement)."""
    n_small, n_large, k = 50, 2000, 10
    net = rv.Network()
    net.add_population(rv.Population("S", n_small if rule == "indegree" else n_large, dict(LIF)))
    net.add_population(rv.Population("T", n_large if rule == "indegree" else n_small, dict(LIF)))
    net.connect(rv.Projection(source="S", target="T", weight=0.1, delay_ms=1.0, **{rule: k}))
    _, c = built(net)
    first_t = net.population("T").first_id
    drawn = c.source if rule == "indegree" else c.target - first_t
    counts = np.bincount(drawn, minlength=n_small)
    assert counts.size == n_small and counts.sum() == n_large * k
    expected = n_large * k / n_small
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < chi2_threshold(n_small - 1), chi2
    # multapses: some (source, target) pair appears twice (expected about 2000 * C(10, 2) / 50 = 1800)
    pairs = c.source * (1 << 20) + c.target
    assert np.unique(pairs).size < pairs.size


def test_indegree_allows_autapses():
    """Sources drawn from the target's own population with replacement: self-connections occur
    (about n * K / n = K of them)."""
    net = rv.Network()
    net.add_population(rv.Population("A", 200, dict(LIF)))
    net.connect(rv.Projection(source="A", target="A", indegree=20, weight=0.1, delay_ms=1.0))
    _, c = built(net)
    assert np.count_nonzero(c.source == c.target) > 0


def test_rules_draw_from_their_own_streams():
    """Another seed gives other sources; the same seed the same ones, for any thread count and placement."""
    net = two_populations()
    net.connect(rv.Projection(source="A", target="B", indegree=8, weight=0.1, delay_ms=1.0))
    net.connect(rv.Projection(source="B", target="A", outdegree=8, weight=0.1, delay_ms=1.0))
    _, ref = built(net, seed=3)
    _, same = built(net, seed=3, threads=2, placement="block")
    _, other = built(net, seed=4)
    for a, b in zip(ref, same):
        assert np.array_equal(a, b)
    assert not np.array_equal(ref.source, other.source)


# -- explicit lists ----------------------------------------------------------------------------
def test_list_is_reproduced_exactly():
    """sources, targets, weights (of both signs, into a model with split input, in pA) and delays
    per entry come back as given, the weights in the engine's fixed point; duplicates are kept."""
    rng = np.random.default_rng(11)
    n = 500
    src = rng.integers(0, 60, n)
    tgt = rng.integers(0, 40, n)
    src[1], tgt[1] = src[0], tgt[0]                    # a multapse
    w = rng.choice([-1.0, 1.0], n) * rng.uniform(1.0, 90.0, n)
    d = rng.integers(1, 60, n) * 0.1
    net = two_populations(model_b="iaf_psc_alpha")
    net.connect(rv.Projection(source="A", target="B", sources=src, targets=tgt, weight=w, delay_ms=d))
    sim, c = built(net, threads=2)
    assert sim.steps_per_cycle == round(d.min() / 0.1)    # the shortest listed delay sets the interval
    order = np.lexsort((quantized(w, sim), d, tgt, src))
    assert np.array_equal(c.source, src[order])
    assert np.array_equal(c.target, tgt[order] + 60)
    assert np.array_equal(c.weight, quantized(w, sim)[order])
    assert np.array_equal(np.rint(c.delay_ms / 0.1).astype(np.int64), np.rint(d[order] / 0.1).astype(np.int64))
    assert np.allclose(c.weight, w[order], rtol=0, atol=2.0 ** -sim.fraction_bits)


def test_list_with_scalar_weight_and_delay():
    net = two_populations()
    net.connect(rv.Projection(source="B", target="A", sources=[0, 0, 39, 5], targets=[59, 59, 0, 7],
                              weight=-0.25, delay_ms=2.5))
    sim, c = built(net)
    assert c.source.tolist() == [60, 60, 65, 99] and c.target.tolist() == [59, 59, 7, 0]
    assert np.all(c.weight == -0.25) and np.all(c.delay_ms == 2.5)


def test_list_weights_drawn_per_entry_are_invariant():
    """A list with one weight law: each synapse draws from its own stream (keyed by its target and
    its place in the target's list), so thread count and placement change nothing."""
    rng = np.random.default_rng(5)
    src, tgt = rng.integers(0, 60, 300), rng.integers(0, 40, 300)
    net = two_populations()
    net.connect(rv.Projection(source="A", target="B", sources=src, targets=tgt, weight=0.5, weight_sd=0.1,
                              delay_distribution="normal", delay_offset_ms=1.0, delay_mean_ms=2.0, delay_sd_ms=0.5))
    _, ref = built(net)
    _, other = built(net, threads=2, placement="block")
    for a, b in zip(ref, other):
        assert np.array_equal(a, b)
    assert np.unique(ref.weight).size > 100 and np.unique(ref.delay_ms).size > 5
    assert np.all((ref.weight > 0) & (ref.weight < 1.0)) and np.all(ref.delay_ms >= 1.0)


def test_empty_list_makes_no_synapse():
    net = two_populations()
    net.connect(rv.Projection(source="A", target="B", sources=[], targets=[], weight=0.1, delay_ms=1.0))
    _, c = built(net)
    assert c.source.size == 0 and net.expected_synapses() == 0


# -- constant delays ---------------------------------------------------------------------------
@pytest.mark.parametrize("rule", [dict(probability=0.3), dict(total_synapses=500), dict(indegree=6),
                                  dict(outdegree=6), dict(sources=[1, 2, 3], targets=[0, 0, 5])])
def test_constant_delay_is_exact_for_every_rule(rule):
    net = two_populations()
    net.connect(rv.Projection(source="A", target="B", weight=0.1, weight_sd=0.02, delay_ms=1.7, **rule))
    net.connect(rv.Projection(source="B", target="A", weight=-0.1, delay_ms=0.4, **rule))
    sim, c = built(net)
    assert sim.steps_per_cycle == 4
    assert c.source.size > 0
    a_to_b = c.source < 60
    assert np.all(np.rint(c.delay_ms[a_to_b] / 0.1) == 17) and np.all(np.rint(c.delay_ms[~a_to_b] / 0.1) == 4)
    assert net.min_delay_ms() == 0.4


def test_constant_delay_default_distribution():
    pr = rv.Projection(source="A", target="B", probability=0.1, weight=0.1, delay_ms=1.5)
    two_populations().connect(pr)
    assert pr.delay_distribution == "constant" and pr.min_delay_ms() == 1.5 and pr.max_delay_steps(0.1) == 15


def test_existing_laws_still_draw():
    """Without delay_ms, the exponential law (the default) and the normal law still draw."""
    net = two_populations()
    net.connect(rv.Projection(source="A", target="B", indegree=30, weight=0.1, delay_offset_ms=1.0,
                              delay_scale_ms=3.0, delay_cut_ms=6.0))
    _, c = built(net)
    steps = np.rint(c.delay_ms / 0.1).astype(np.int64)
    assert set(np.unique(steps)) == {10, 20, 30, 40, 50, 60}


# -- the memory estimate and the spec understand every rule -------------------------------------
def test_memory_estimate_counts_every_rule():
    net = two_populations(n_a=600, n_b=400)
    net.connect(rv.Projection(source="A", target="B", indegree=50, weight=0.1, delay_ms=1.0))
    net.connect(rv.Projection(source="B", target="A", outdegree=30, weight=-0.1, delay_ms=1.0))
    src = np.arange(1000) % 600
    net.connect(rv.Projection(source="A", target="A", sources=src, targets=src[::-1].copy(),
                              weight=np.full(1000, 0.2), delay_ms=np.full(1000, 2.0)))
    assert net.expected_synapses() == 400 * 50 + 400 * 30 + 1000
    sim = rv.Simulation(net, threads=2, seed=1)
    parts = sim.memory_parts()
    assert parts["rules"] > 1000 * 32                  # the list, held by the projection and the engine
    assert sim.estimate_memory() == int(sum(parts.values()))
    assert sim.connections().source.size == net.expected_synapses()


def test_connections_local_and_gathered_agree():
    net = two_populations()
    net.connect(rv.Projection(source="A", target="B", indegree=5, weight=0.1, delay_ms=1.0))
    sim = rv.Simulation(net, threads=2, seed=1)
    local, gathered = sim.connections(local=True), sim.connections()
    assert sorted(zip(*local)) == list(zip(*gathered))
    assert np.all(np.diff(gathered.source) >= 0)


# -- bad input: one line, naming the field ------------------------------------------------------
def refused(match, projection=None, net=None, **kw):
    net = net or two_populations(model_b="iaf_psc_alpha")
    with pytest.raises(rv.ConfigError, match=match) as e:
        net.connect(projection if projection is not None else rv.Projection(**kw))
    assert "\n" not in str(e.value)
    return str(e.value)


BASE = dict(source="A", target="B", weight=0.1, delay_ms=1.0)


def test_two_rules_are_refused():
    refused("exactly one connection rule, got probability and indegree", probability=0.1, indegree=3, **BASE)
    refused("got total_synapses and sources/targets", total_synapses=3, sources=[0], targets=[0], **BASE)


def test_no_rule_is_refused():
    message = refused("no connection rule", **BASE)
    for name in ("probability=", "total_synapses=", "indegree=", "outdegree=", "sources="):
        assert name in message


@pytest.mark.parametrize("kw, match", [
    (dict(sources=[0, 1], targets=[0]), "'sources' and 'targets' must have the same length, got 2 and 1"),
    (dict(sources=[0, 1]), "needs both sources= and targets=; 'targets' is missing"),
    (dict(sources=[0, 60], targets=[0, 1]), r"sources\[1\] = 60 is outside population 'A' .*0 to 59"),
    (dict(sources=[0, 1], targets=[-1, 1]), r"targets\[0\] = -1 is outside population 'B'"),
    (dict(sources=[0.5, 1], targets=[0, 1]), "'sources' must hold integer ids"),
    (dict(sources=[[0, 1]], targets=[[0, 1]]), "one-dimensional"),
    (dict(indegree=-1), "'indegree' must be a non-negative integer"),
    (dict(outdegree=2.5), "'outdegree' must be a non-negative integer"),
    (dict(probability=1.5), r"'probability' must lie in \[0, 1\]"),
])
def test_bad_rule_values_are_refused(kw, match):
    refused(match, **{**BASE, **kw})


@pytest.mark.parametrize("kw, match", [
    (dict(indegree=3, weight=0.0, weight_sd=0.1), r"'weight' 0 with 'weight_sd' 0.1: drawn weights keep the mean's "
                                                  r"sign, and 0 has none; give a non-zero mean \(pA, the input unit"),
    (dict(indegree=3, weight=[0.1, 0.2]), "an array of 'weight' needs an explicit list"),
    (dict(sources=[0, 1], targets=[0, 1], weight=[0.1, 0.2, 0.3]), "one per list entry \\(2\\)"),
    (dict(sources=[0, 1], targets=[0, 1], weight=[0.1, 0.2], weight_sd=0.1), "'weight_sd' must be 0"),
    (dict(sources=[0, 1], targets=[0, 1], weight=[0.1, math.nan]), r"weight\[1\] = nan is not a finite"),
    (dict(indegree=3, weight_sd=-1.0), "'weight_sd' must be zero or positive"),
])
def test_bad_weights_are_refused(kw, match):
    refused(match, **{**BASE, **kw})


def test_a_projection_of_weight_zero_is_built_and_silent():
    """NEST and PyNN accept weight 0 (a connection that carries nothing): the synapses are built
    and the spikes are those of the network without the projection."""
    def run(extra):
        net = two_populations(model_b="iaf_psc_alpha")
        net.connect(rv.Projection(source="A", target="B", probability=0.3, weight=80.0, delay_ms=1.0))
        if extra:
            net.connect(rv.Projection(source="A", target="B", indegree=20, weight=0.0, delay_ms=1.5))
        net.drive(rv.PoissonDrive(target="A", n_synapses=100, rate_hz=80.0, weight=2.0))
        sim = rv.Simulation(net, threads=2, seed=3)
        res = sim.run(200.0)
        return res, sim
    (plain, _), (silent, sim) = run(False), run(True)
    assert silent.synapses == plain.synapses + 20 * sim.network.population("B").size
    assert plain.spikes[0].size > 50
    assert np.array_equal(plain.spikes[0], silent.spikes[0]) and np.array_equal(plain.spikes[1], silent.spikes[1])


@pytest.mark.parametrize("kw, match", [
    (dict(delay_ms=None), "no delay; give delay_ms="),
    (dict(delay_ms=1.0, delay_offset_ms=1.0, delay_scale_ms=1.0), "'delay_ms' is a constant delay and does not "
                                                                  "combine with 'delay_offset_ms', 'delay_scale_ms'"),
    (dict(delay_ms=1.0, delay_distribution="normal"), "does not combine with delay_distribution 'normal'"),
    (dict(delay_ms=None, delay_distribution="constant"), "'constant' needs delay_ms="),
    (dict(delay_ms=0.0), "'delay_ms' must be positive"),
    (dict(delay_ms=[1.0, 2.0]), "an array of 'delay_ms' needs an explicit list"),
    (dict(delay_ms=None, delay_distribution="gamma", delay_offset_ms=1.0), "'delay_distribution' must be one of"),
])
def test_bad_delays_are_refused(kw, match):
    refused(match, **{**BASE, "indegree": 3, **kw})


@pytest.mark.parametrize("delay, match", [
    (0.05, "'delay_ms' = 0.05 ms is below the resolution 0.1 ms; delays must be at least one step"),
    (0.25, "'delay_ms' = 0.25 ms is not a multiple of the resolution 0.1 ms"),
    ([1.0, 0.05], r"delay_ms\[1\] = 0.05 ms is below the resolution 0.1 ms"),
    ([1.0, 0.25], r"delay_ms\[1\] = 0.25 ms is not a multiple of the resolution 0.1 ms"),
])
def test_delays_off_the_grid_are_refused_before_build(delay, match):
    net = two_populations()
    rule = dict(sources=[0, 1], targets=[0, 1]) if isinstance(delay, list) else dict(indegree=2)
    net.connect(rv.Projection(source="A", target="B", weight=0.1, delay_ms=delay, **rule))
    with pytest.raises(rv.ConfigError, match=match):
        rv.Simulation(net, threads=1)
    rv.Simulation(net, threads=1, resolution_ms=0.05)     # on a finer grid, the same delays are fine


def test_a_list_is_copied():
    """Changing the caller's arrays after connect changes nothing."""
    src, tgt = np.array([0, 1]), np.array([2, 3])
    net = two_populations()
    pr = net.connect(rv.Projection(source="A", target="B", sources=src, targets=tgt, weight=0.1, delay_ms=1.0))
    src[0] = 59
    assert pr.sources.tolist() == [0, 1]


def test_projection_fields_are_keywords():
    with pytest.raises(TypeError):
        rv.Projection("A", "B", 0.1, 0.1, 0.0)


def test_drive_weight_is_named_in_the_target_unit():
    net = two_populations(model_b="iaf_psc_alpha")
    net.drive(rv.PoissonDrive("B", 10**9, 1000.0, weight=40.0))
    with pytest.raises(rv.ConfigError, match=r"'weight' = 40 pA"):
        rv.Simulation(net, threads=1)


# -- decomposition invariance of a network with every rule --------------------------------------
RULES_RUN = dict(model="rules", neurons=500, synapses=40, ms=200.0)
EXCHANGES = ("allgather", "alltoallv")
DECOMPOSITIONS = [c for c in itertools.product((1, 2, 3), (1, 2), ("round-robin", "block")) if c != (1, 1, "round-robin")] \
    + [(2, 2, "random"), (3, 1, "random")]


@pytest.fixture(scope="module")
def rules_reference(workloads):
    return workloads(1, threads=1, placement="round-robin", **RULES_RUN)


def test_rules_reference_is_not_trivial(rules_reference):
    ref = rules_reference
    by_population = spikes_per_population(ref)
    assert np.all(by_population > 500), by_population            # E, I and P all fire
    assert counters(ref)["synaptic_events_recurrent"] > 100_000
    assert ref["connections_source"].size == ref["synapses_per_rank"].sum()
    # the constant delays of E->E (1.5 ms) and I->I (1 ms), the listed ones of E->P (1 to 4 ms)
    per_delay = ref["synapses_per_delay"]
    assert per_delay[15] >= 300 * 40 and per_delay[10] >= 100 * 20


@pytest.mark.parametrize("ranks,threads,placement", DECOMPOSITIONS,
                         ids=[f"ranks={r}-threads={t}-{p}" for r, t, p in DECOMPOSITIONS])
def test_rules_network_is_decomposition_invariant(workloads, rules_reference, ranks, threads, placement):
    ref = rules_reference
    runs = workloads.sweep(ranks, EXCHANGES, threads=threads, placement=placement, **RULES_RUN)
    for (exchange, overlap), run in runs.items():
        what = f"{exchange}, overlap={overlap}"
        assert run["ranks"] == ranks
        assert run["digest"] == ref["digest"], what
        for key in ("source", "target", "weight", "delay_ms"):
            assert np.array_equal(run[f"connections_{key}"], ref[f"connections_{key}"]), (what, key)
        assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"]), what
        assert counters(run)["events_scheduled"] == counters(ref)["events_scheduled"], what
