"""Stochastic synapses (rv.Bernoulli: NEST's bernoulli_synapse, cpp/synapses/bernoulli.cpp).

- Statistics: one source's 200 spikes onto 500 targets that fire once at every spike they
  receive (so a target's spikes are its synapse's transmissions): with p = 0.3 the fraction
  transmitted lies within 4.5 binomial standard errors of p, and each synapse's count varies as
  a binomial's (its spikes drawn independently); p = 1 gives a static synapse's spikes and
  membrane exactly, p = 0 transmits nothing; two synapses between one pair draw independently;
  the seed changes the draws, the same seed repeats them.
- Against NEST 3.10's bernoulli_synapse (skipped without it): NEST's generator is another, so
  the comparison is in distribution: the mean and the variance of the synapses' counts agree
  within a few standard errors.
- The network of tests/mpi_runner.py (model "bernoulli"): identical spikes and membrane traces
  for 1 and 2 threads, every placement, 1, 2 and 3 ranks, three exchanges; a checkpoint resumed
  gives the uninterrupted run; with p = 1 everywhere it is the static network, spike for spike
  and trace for trace, and with p < 1 it is not.
- Bad parameters are refused naming the field.
"""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv
from conftest import spikes_per_population
from ranvier.errors import ConfigError

H = 0.1
TIMES_MS = np.round(np.arange(2.5, 1000.0, 5.0), 1)        # 200 spikes, 5 ms apart
TARGETS = 500
W_MV = 20.0
RUN_MS = 1008.0                 # whole cycles of the minimum delay (1 ms), past the last arrival
# A target that fires in the step an input arrives (a jump of W_MV above theta_mV) and is back
# at rest long before the next one: its spikes count its synapse's transmissions.
PARROT = {"theta_mV": 10.0, "tau_arp_ms": 0.0, "tau_m_ms": 10.0}


def parrot_network(synapse, pairs=None):
    """One spike_train source onto TARGETS lifca cells, one synapse each (pairs: (sources,
    targets) of an explicit list instead)."""
    sources, targets = pairs or ([0] * TARGETS, list(range(TARGETS)))
    net = rv.Network()
    net.add_population(rv.Population("pre", 1, {"spike_times_ms": [TIMES_MS.tolist()]}, model="spike_train"))
    net.add_population(rv.Population("post", max(targets) + 1, dict(PARROT)))
    net.connect(rv.Projection(source="pre", target="post", sources=sources, targets=targets, weight=W_MV,
                              delay_ms=1.0, synapse=synapse))
    return net


def transmissions(synapse, seed=1, threads=1, pairs=None, record=None):
    """[target, spike] True where the target fired at that source spike; and the run."""
    net = parrot_network(synapse, pairs)
    post = net.population("post")
    sim = rv.Simulation(net, threads=threads, seed=seed, resolution_ms=H,
                        record_state=None if record is None else [post.first_id + k for k in record])
    res = sim.run(RUN_MS)
    fired = res.spike_ids >= post.first_id
    arrive = np.rint((TIMES_MS + 1.0) / H).astype(np.int64)        # spike step + delay
    at = np.searchsorted(arrive, res.spike_steps[fired] - 1)        # a spike in step s reaches V in s + 1
    out = np.zeros((post.size, TIMES_MS.size), bool)
    ok = (at < arrive.size)
    out[res.spike_ids[fired][ok] - post.first_id, at[ok]] = True
    assert np.count_nonzero(out) == np.count_nonzero(fired), "a target fired outside an arrival"
    return out, res


def test_p_one_fires_every_target_at_every_spike():
    """The parrot targets are what the other tests take them for."""
    out, _ = transmissions(rv.Bernoulli(p_transmit=1.0))
    assert out.all()


def test_transmitted_fraction_and_spread_are_binomial():
    p = 0.3
    out, res = transmissions(rv.Bernoulli(p_transmit=p))
    n = out.size
    fraction = out.mean()
    se = np.sqrt(p * (1 - p) / n)
    print(f"p = {p}: transmitted {fraction:.5f} of {n} (standard error {se:.5f})")
    assert abs(fraction - p) < 4.5 * se, (fraction, p, se)
    # each synapse's count over 200 spikes: Binomial(200, p), its variance 200 p (1 - p); the
    # sample variance of 500 counts has a relative standard error of sqrt(2 / 499) = 6.3 %
    counts = out.sum(axis=1)
    var = counts.var(ddof=1)
    expected = TIMES_MS.size * p * (1 - p)
    assert abs(var / expected - 1) < 4.5 * np.sqrt(2 / (TARGETS - 1)), (var, expected)
    # no synapse repeats another's draws, nor a spike another spike's
    assert np.unique(out, axis=0).shape[0] == TARGETS
    assert np.unique(out, axis=1).shape[1] == TIMES_MS.size
    # every synapse a spike reached counts as a synaptic event, transmitted or not
    assert res.counters["synaptic_events_recurrent"] == n


def test_p_one_is_a_static_synapse_exactly():
    record = [0, 1, 2, 499]
    ours, a = transmissions(rv.Bernoulli(p_transmit=1.0), record=record)
    static, b = transmissions(None, record=record)
    assert np.array_equal(a.spike_ids, b.spike_ids) and np.array_equal(a.spike_steps, b.spike_steps)
    assert np.array_equal(np.asarray(a.state["V"]), np.asarray(b.state["V"]))
    assert static.all()


def test_p_zero_transmits_nothing():
    out, res = transmissions(rv.Bernoulli(p_transmit=0.0), record=[0, 7])
    assert not out.any()
    assert np.all(np.asarray(res.state["V"]) == 0.0)               # no input ever reached V (rest: 0)


def test_the_seed_keys_the_draws():
    a, _ = transmissions(rv.Bernoulli(p_transmit=0.5), seed=1)
    again, _ = transmissions(rv.Bernoulli(p_transmit=0.5), seed=1, threads=2)
    other, _ = transmissions(rv.Bernoulli(p_transmit=0.5), seed=2)
    assert np.array_equal(a, again)
    assert np.count_nonzero(a != other) > a.size // 3               # about half differ


def test_two_synapses_between_one_pair_draw_independently():
    """Source 0 onto target 0 twice: V jumps by one weight where one of them transmits, by two
    where both do. If they shared their draws, V would never jump by one weight alone."""
    p = 0.5
    net = rv.Network()
    net.add_population(rv.Population("pre", 1, {"spike_times_ms": [TIMES_MS.tolist()]}, model="spike_train"))
    net.add_population(rv.Population("post", 1, {"theta_mV": 1e6, "tau_m_ms": 1e9}))
    net.connect(rv.Projection(source="pre", target="post", sources=[0, 0], targets=[0, 0], weight=1.0,
                              delay_ms=1.0, synapse=rv.Bernoulli(p_transmit=p)))
    first = net.population("post").first_id
    res = rv.Simulation(net, threads=1, seed=3, record_state=[first]).run(RUN_MS)
    V = np.asarray(res.state["V"][0])
    jumps = np.rint(np.diff(np.concatenate([[0.0], V]))).astype(np.int64)
    assert set(np.unique(jumps)) <= {0, 1, 2}
    ones, twos = np.count_nonzero(jumps == 1), np.count_nonzero(jumps == 2)
    n = TIMES_MS.size
    print(f"two synapses, p = {p}: one transmits {ones}, both {twos} of {n} spikes")
    # one of two: Binomial(200, 2 p (1 - p) = 0.5), both: Binomial(200, p^2 = 0.25)
    assert abs(ones - n * 0.5) < 4.5 * np.sqrt(n * 0.25), ones
    assert abs(twos - n * 0.25) < 4.5 * np.sqrt(n * 0.25 * 0.75), twos


# -- against NEST 3.10 -----------------------------------------------------------------------
def nest_counts(p):
    """NEST's bernoulli_synapse from a parrot (the source's spikes) onto TARGETS parrots: each
    target's spikes, one per transmitted spike."""
    import nest
    nest.ResetKernel()
    nest.verbosity = nest.VerbosityLevel.ERROR
    nest.resolution = H
    nest.rng_seed = 12345
    gen = nest.Create("spike_generator", params={"spike_times": TIMES_MS.tolist()})
    pre = nest.Create("parrot_neuron")
    nest.Connect(gen, pre, syn_spec={"delay": H})
    post = nest.Create("parrot_neuron", TARGETS)
    nest.Connect(pre, post, "all_to_all", syn_spec={"synapse_model": "bernoulli_synapse", "p_transmit": p,
                                                    "weight": 1.0, "delay": 1.0})
    rec = nest.Create("spike_recorder")
    nest.Connect(post, rec)
    nest.Simulate(RUN_MS)
    senders = rec.get("events")["senders"]
    return np.bincount(senders - post[0].global_id, minlength=TARGETS)


@pytest.mark.parametrize("p", [0.3, 0.8])
def test_counts_agree_with_nests_bernoulli_synapse(p):
    pytest.importorskip("nest")
    theirs = nest_counts(p)
    ours = transmissions(rv.Bernoulli(p_transmit=p))[0].sum(axis=1)
    n = TIMES_MS.size
    assert theirs.sum() > 0
    # the means of 500 counts, each Binomial(200, p): their difference has a standard error of
    # sqrt(2 n p (1 - p) / 500)
    se = np.sqrt(2 * n * p * (1 - p) / TARGETS)
    print(f"p = {p}: mean count {ours.mean():.3f} (NEST {theirs.mean():.3f}, expected {n * p}), "
          f"variance {ours.var(ddof=1):.2f} (NEST {theirs.var(ddof=1):.2f}, expected {n * p * (1 - p):.2f})")
    assert abs(ours.mean() - theirs.mean()) < 4.5 * se, (ours.mean(), theirs.mean(), se)
    assert abs(theirs.mean() - n * p) < 4.5 * se / np.sqrt(2)            # NEST's is what we take it for
    # the variances: each relative standard error sqrt(2 / 499), their ratio's about sqrt(2) of it
    ratio = ours.var(ddof=1) / theirs.var(ddof=1)
    assert abs(ratio - 1) < 4.5 * np.sqrt(4 / (TARGETS - 1)), ratio


# -- the invariance network (tests/mpi_runner.py, model "bernoulli") ----------------------------
RUN = dict(model="bernoulli", neurons=500, synapses=40, ms=200.0)


def same_run(run, ref, what, traces_from_step=0):
    """The same spikes, and the same V traces (a resumed run's from its resume on)."""
    assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"]), what
    assert np.array_equal(run["state_ids"], ref["state_ids"]), what
    V = ref["state_V"][:, traces_from_step:]
    assert V.shape[1] > 0 and np.array_equal(run["state_V"], V), what


@pytest.fixture(scope="module")
def reference(workloads):
    return workloads(1, threads=1, placement="round-robin", **RUN)


def test_reference_is_not_trivial(reference):
    from conftest import counters
    ref = reference
    by_population = spikes_per_population(ref)
    assert np.all(by_population[:2] > 200), by_population        # E and I fire
    assert counters(ref)["synaptic_events_recurrent"] > 50_000
    assert ref["state_V"].shape[0] >= 6


@pytest.mark.parametrize("ranks,threads,placement", [(1, 2, "round-robin"), (1, 2, "block"), (1, 1, "random"),
                                                     (2, 1, "round-robin"), (2, 2, "by-area"), (3, 1, "block")])
def test_spikes_identical_for_any_decomposition(workloads, reference, ranks, threads, placement):
    run = workloads(ranks, threads=threads, placement=placement, **RUN)
    assert run["ranks"] == ranks
    same_run(run, reference, f"ranks={ranks} threads={threads} {placement}")


@pytest.mark.parametrize("ranks,threads,placement,exchange", [(3, 1, "round-robin", "alltoallv"),
                                                              (2, 2, "block", "p2p")])
def test_spikes_identical_for_any_exchange(workloads, reference, ranks, threads, placement, exchange):
    run = workloads(ranks, threads=threads, placement=placement, exchange=exchange, **RUN)
    assert run["ranks"] == ranks and run["exchange"] == exchange
    same_run(run, reference, f"ranks={ranks} threads={threads} {placement} {exchange}")


def test_resumed_checkpoint_gives_the_uninterrupted_run(workloads, reference, tmp_path):
    from conftest import run_workload
    ck = tmp_path / "ck"
    continued = run_workload(1, tmp_path, **RUN, save_at_ms=120.0, checkpoint=str(ck))
    resumed = run_workload(1, tmp_path, **RUN, threads=2, placement="block", resume=str(ck))
    same_run(continued, reference, "saved")
    same_run(resumed, reference, "resumed", traces_from_step=int(round(120.0 / H)))


def test_p_one_network_is_the_static_network_and_p_matters():
    import mpi_runner

    def run(p):
        net = mpi_runner.bernoulli_network(300, 30, p_transmit=p)
        res = rv.Simulation(net, threads=1, seed=5, record_state=[0, 100, 250]).run(150.0)
        return res.spike_ids, res.spike_steps, np.asarray(res.state["V"])
    ones = run((1.0, 1.0, 1.0, 1.0))
    static = run(None)
    assert all(np.array_equal(a, b) for a, b in zip(ones, static))
    assert ones[0].size > 100
    lower = run((0.5, 0.3, 0.7, 0.4))
    assert not np.array_equal(lower[0], static[0])


# -- bad parameters --------------------------------------------------------------------------
@pytest.mark.parametrize("value, words", [(1.5, "'p_transmit' must lie in [0, 1]"),
                                          (-0.1, "'p_transmit' must lie in [0, 1]"),
                                          ("half", "'p_transmit' must be a finite number"),
                                          (float("nan"), "'p_transmit' must be a finite number")])
def test_bad_p_is_refused_naming_the_field(value, words):
    net = rv.Network()
    net.add_population(rv.Population("E", 10, {}, model="psc_exp"))
    with pytest.raises(ConfigError) as e:
        net.connect(rv.Projection(source="E", target="E", indegree=2, weight=10.0, delay_ms=1.0,
                                  synapse=rv.Bernoulli(p_transmit=value)))
    assert words in str(e.value) and "E->E" in str(e.value), str(e.value)


def test_weights_of_both_signs_are_refused():
    net = rv.Network()
    net.add_population(rv.Population("E", 3, {}, model="psc_exp"))
    with pytest.raises(ConfigError, match="must all have one sign"):
        net.connect(rv.Projection(source="E", target="E", sources=[0, 1], targets=[1, 2], weight=[5.0, -5.0],
                                  delay_ms=1.0, synapse=rv.Bernoulli(p_transmit=0.5)))


def test_inhibitory_weights_transmit_as_often():
    """Negative weights (the inhibitory input of split-input models) draw the same way."""
    net = rv.Network()
    net.add_population(rv.Population("pre", 1, {"spike_times_ms": [TIMES_MS.tolist()]}, model="spike_train"))
    net.add_population(rv.Population("post", 1, {"theta_mV": 1e6, "tau_m_ms": 1e9}))
    for w in (1.0, -1.0):
        net.connect(rv.Projection(source="pre", target="post", sources=[0], targets=[0], weight=w, delay_ms=1.0,
                                  synapse=rv.Bernoulli(p_transmit=0.5)))
    first = net.population("post").first_id
    res = rv.Simulation(net, threads=1, seed=3, record_state=[first]).run(RUN_MS)
    jumps = np.rint(np.diff(np.concatenate([[0.0], np.asarray(res.state["V"][0])]))).astype(np.int64)
    up, down = np.count_nonzero(jumps == 1), np.count_nonzero(jumps == -1)
    n = TIMES_MS.size                       # each: Binomial(200, p (1 - p) = 0.25)
    for k in (up, down):
        assert abs(k - n * 0.25) < 4.5 * np.sqrt(n * 0.25 * 0.75), (up, down)
