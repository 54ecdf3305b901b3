"""Quantal release (rv.QuantalSTP: NEST's quantal_stp_synapse, cpp/synapses/quantal_stp.cpp).

- Statistics: one source's 200 regular spikes onto 500 integrating targets (their membrane adds
  every efficacy, so each step of V counts the sites released): at the first spike the sites
  released are Binomial(n, u0); afterwards, without facilitation, each site is an independent
  two-state chain whose stationary release per spike is u q / (1 - (1 - u)(1 - q)), q the
  recovery probability over the interval; the mean over the synapses lies within 4.5 standard
  errors of it. With facilitation u follows its deterministic recursion, read back from the
  synapse state.
- Against NEST 3.10's quantal_stp_synapse (skipped without it), onto parrots: the spikes with
  any release, in distribution (NEST's generator is another).
- The network of tests/mpi_runner.py (model "quantal"): identical spikes, membrane traces and
  synapse state (u, sites available) for 1 and 2 threads, every placement, 1 to 3 ranks, runs
  split inside cycles, and a checkpoint resumed on another decomposition.
- Bad parameters are refused naming the field.
"""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv
from conftest import needs_mpiexec, run_workload

H = 0.1
TIMES_MS = np.round(np.arange(2.5, 1000.0, 5.0), 1)        # 200 spikes, 5 ms apart
TARGETS = 500
W_MV = 1.0
RUN_MS = 1008.0
INTEGRATOR = {"theta_mV": 1e9, "tau_arp_ms": 0.0, "tau_m_ms": 1e12}   # V adds every input, never fires
PARROT = {"theta_mV": 0.5, "tau_arp_ms": 0.0, "tau_m_ms": 10.0}      # fires at any release


def network(synapse, cell):
    net = rv.Network()
    net.add_population(rv.Population("pre", 1, {"spike_times_ms": [TIMES_MS.tolist()]}, model="spike_train"))
    net.add_population(rv.Population("post", TARGETS, dict(cell)))
    net.connect(rv.Projection(source="pre", target="post", sources=[0] * TARGETS, targets=list(range(TARGETS)),
                              weight=W_MV, delay_ms=1.0, synapse=synapse))
    return net


def released(synapse, seed=1):
    """[target, spike]: the sites each synapse released at each source spike; and the simulation."""
    net = network(synapse, INTEGRATOR)
    post = net.population("post")
    sim = rv.Simulation(net, threads=1, seed=seed, resolution_ms=H, record_state=list(range(post.first_id,
                                                                                           post.first_id + TARGETS)))
    res = sim.run(RUN_MS)
    V = np.asarray(res.state["V"])                       # [target, sample]: V after each step
    # sample k is V after step k + 1: a spike at step s with a delay of D steps is first in sample s + D - 1
    arrive = np.rint((TIMES_MS + 1.0) / H).astype(np.int64) - 1
    jumps = V[:, arrive] - V[:, arrive - 1]
    counts = np.rint(jumps / W_MV)
    assert np.allclose(jumps, counts * W_MV, atol=1e-6)
    assert np.isclose(V[:, -1], counts.sum(axis=1) * W_MV, atol=1e-6).all()   # nothing between arrivals
    return counts.astype(int), sim


def test_first_spike_releases_binomially_and_later_ones_as_the_chain_says():
    n, U, u0, tau_rec = 3, 0.4, 0.5, 20.0
    counts, _ = released(rv.QuantalSTP(U=U, n=n, tau_rec_ms=tau_rec, u0=u0))
    assert counts.min() >= 0 and counts.max() <= n
    first = counts[:, 0]
    se = np.sqrt(n * u0 * (1 - u0) / TARGETS)
    assert abs(first.mean() - n * u0) < 4.5 * se, first.mean()
    q = 1 - np.exp(-5.0 / tau_rec)
    stationary = n * U * q / (1 - (1 - U) * (1 - q))
    later = counts[:, 20:].mean(axis=1)                   # past the transient (20 spikes, 100 ms)
    mean, se = later.mean(), later.std(ddof=1) / np.sqrt(TARGETS)
    print(f"released per spike {mean:.4f} (theory {stationary:.4f}, standard error {se:.4f})")
    assert abs(mean - stationary) < 4.5 * se, (mean, stationary, se)
    assert counts[:, 1:].mean() < n * u0                    # depression: less than a fresh synapse


def test_facilitation_follows_nests_recursion_and_one_site_is_bernoulli_like():
    U, tau_fac = 0.2, 50.0
    counts, sim = released(rv.QuantalSTP(U=U, n=1, tau_rec_ms=1e-3, tau_fac_ms=tau_fac, u0=U))
    u = U
    for _ in range(TIMES_MS.size - 1):                     # u after the last spike, as NEST computes it
        u = U + u * (1 - U) * np.exp(-5.0 / tau_fac)
    state = sim.synapse_state("pre", "post")
    assert np.allclose(state["u"], u, rtol=1e-12)
    # tau_rec 1 us: the site is back at every spike, so each spike releases with probability u
    later = counts[:, 50:]
    se = np.sqrt(u * (1 - u) / later.size)
    assert abs(later.mean() - u) < 4.5 * se, (later.mean(), u)


def test_the_seed_changes_the_draws_and_the_same_seed_repeats_them():
    kind = rv.QuantalSTP(U=0.5, n=2, tau_rec_ms=30.0)
    a, _ = released(kind, seed=1)
    b, _ = released(kind, seed=1)
    c, _ = released(kind, seed=2)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


# -- against NEST 3.10 -----------------------------------------------------------------------
def nest_any_release(params):
    """NEST's quantal_stp_synapse from a parrot onto TARGETS parrots: each target's spikes, one per
    source spike that released at least one site."""
    import nest
    nest.ResetKernel()
    nest.verbosity = nest.VerbosityLevel.ERROR
    nest.resolution = H
    nest.rng_seed = 12345
    gen = nest.Create("spike_generator", params={"spike_times": TIMES_MS.tolist()})
    pre = nest.Create("parrot_neuron")
    nest.Connect(gen, pre, syn_spec={"delay": H})
    post = nest.Create("parrot_neuron", TARGETS)
    nest.Connect(pre, post, "all_to_all", syn_spec={"synapse_model": "quantal_stp_synapse", "weight": 1.0,
                                                    "delay": 1.0, **params})
    rec = nest.Create("spike_recorder")
    nest.Connect(post, rec)
    nest.Simulate(RUN_MS)
    senders = rec.get("events")["senders"]
    return np.bincount(senders - post[0].global_id, minlength=TARGETS)


def ours_any_release(kind):
    net = network(kind, PARROT)
    post = net.population("post")
    res = rv.Simulation(net, threads=1, seed=1, resolution_ms=H).run(RUN_MS)
    fired = res.spike_ids >= post.first_id
    return np.bincount(res.spike_ids[fired] - post.first_id, minlength=TARGETS)


@pytest.mark.parametrize("n, U, tau_rec, tau_fac", [(1, 0.5, 800.0, 0.0), (3, 0.3, 20.0, 10.0)])
def test_releases_agree_with_nests_quantal_stp_synapse(n, U, tau_rec, tau_fac):
    pytest.importorskip("nest")
    theirs = nest_any_release({"U": U, "n": n, "a": n, "tau_rec": tau_rec, "tau_fac": tau_fac})
    ours = ours_any_release(rv.QuantalSTP(U=U, n=n, tau_rec_ms=tau_rec, tau_fac_ms=tau_fac))
    assert theirs.sum() > 100
    # two means of 500 counts: the standard error of their difference from the two spreads
    se = np.sqrt(ours.var(ddof=1) / TARGETS + theirs.var(ddof=1) / TARGETS)
    print(f"n={n} U={U}: spikes with a release per synapse {ours.mean():.3f} (NEST {theirs.mean():.3f}, "
          f"standard error {se:.3f})")
    assert abs(ours.mean() - theirs.mean()) < 4.5 * se, (ours.mean(), theirs.mean(), se)


# -- the invariance network (tests/mpi_runner.py, model "quantal") ------------------------------
RUN = dict(model="quantal", neurons=500, synapses=40, ms=200.0, record="0,7,450")
PROJECTIONS = ("E_to_E", "E_to_I", "I_to_E", "S_to_E")


def same_run(run, ref, what, traces=True):
    assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"]), what
    if traces:
        assert np.array_equal(run["state_V"], ref["state_V"]), what
    for name in PROJECTIONS:
        for k in ("source", "target", "weight", "u", "available", "last_step"):
            key = f"synapse_state_{name}_{k}"
            assert np.array_equal(run[key], ref[key]), (what, key)


@pytest.fixture(scope="module")
def reference(workloads):
    return workloads(1, **RUN)


def test_reference_is_not_trivial(reference):
    assert reference["ids"].size > 1000
    available = reference["synapse_state_E_to_E_available"]
    assert np.unique(available).size >= 3                       # sites depleted and recovered
    u = reference["synapse_state_E_to_E_u"]
    assert u.max() > 0.4 + 1e-3                                  # facilitated above U


@pytest.mark.parametrize("ranks, kw", [(1, dict(threads=2, placement="block")), (1, dict(placement="random")),
                                       (2, dict(exchange="alltoallv")), (3, dict(placement="block", overlap=True)),
                                       (2, dict(threads=2, splits="0.3,50.1,0.1"))],
                         ids=["1x2-block", "random", "2-ranks", "3-ranks-overlap", "2x2-split"])
def test_identical_on_any_decomposition(workloads, reference, ranks, kw):
    same_run(workloads(ranks, **RUN, **kw), reference, f"{ranks} {kw}")


@needs_mpiexec
def test_a_checkpoint_resumes_on_another_decomposition(reference, tmp_path):
    ck = tmp_path / "ck"
    run_workload(1, tmp_path, **RUN, save_at_ms=100.0, checkpoint=str(ck))
    resumed = run_workload(2, tmp_path, **RUN, threads=2, resume=str(ck))
    same_run(resumed, reference, "resumed", traces=False)


@pytest.mark.parametrize("field, value, message", [
    ("n", 0, "'n' must be a whole number of release sites"),
    ("n", 2.5, "'n' must be a whole number of release sites"),
    ("U", 1.5, "'U' must lie in \\[0, 1\\]"),
    ("tau_rec_ms", 0.0, "tau_rec_ms"),
    ("a0", 2, "'a0' must be a whole number of sites from 0 to n = 1"),
])
def test_bad_parameters_are_refused_naming_the_field(field, value, message):
    with pytest.raises(rv.ConfigError, match=message):
        rv.Simulation(network(rv.QuantalSTP(**{field: value}), PARROT), threads=1)


# -- PyNN's MultiQuantalSynapse ---------------------------------------------------------------
def test_pynn_multi_quantal_synapse_agrees_with_pyNN_nest():
    """The same script on both backends: 300 integrating cells (membrane time constant 10^9 ms,
    threshold out of reach) add up every release of their one synapse; the mean final V agrees
    within 4.5 standard errors (the draws are each simulator's own)."""
    pytest.importorskip("nest")

    def run(name):
        import importlib
        sim = importlib.import_module(f"pyNN.{name}")
        sim.setup(timestep=0.1, min_delay=1.0)
        pre = sim.Population(1, sim.SpikeSourceArray(spike_times=np.arange(2.5, 500.0, 5.0)))
        post = sim.Population(300, sim.IF_curr_exp(tau_m=1e9, v_thresh=1e9, v_rest=0.0, v_reset=0.0,
                                                   tau_refrac=0.1, cm=1.0, tau_syn_E=0.5))
        post.initialize(v=0.0)
        prj = sim.Projection(pre, post, sim.AllToAllConnector(),
                             sim.MultiQuantalSynapse(weight=0.5, delay=1.0, U=0.3, n=3, tau_rec=20.0, tau_facil=10.0))
        post.record("v")
        sim.run(510.0)
        v = np.asarray(post.get_data().segments[0].filter(name="v")[0])[-1]
        params = prj.get(["U", "n"], format="list")
        sim.end()
        return v, params

    ours, params = run("ranvier")
    theirs, _ = run("nest")
    assert {(U, n) for _, _, U, n in params} == {(0.3, 3.0)}
    se = np.sqrt(ours.var(ddof=1) / ours.size + theirs.var(ddof=1) / theirs.size)
    print(f"final V {ours.mean():.4f} mV (pyNN.nest {theirs.mean():.4f}, standard error {se:.4f})")
    assert ours.mean() > 1.0
    assert abs(ours.mean() - theirs.mean()) < 4.5 * se, (ours.mean(), theirs.mean(), se)


def test_pynn_initialize_sets_the_sites_and_u_at_the_first_spike():
    """Projection.initialize(a=..., u=...) (PyNN's examples/multiquantal_synapses.py): a = 0 sites
    and no recovery before the second spike release nothing at the first; a = n, u = 1 release
    every site."""
    import pyNN.ranvier as sim

    def first_release(**initial):
        sim.setup(timestep=0.1, min_delay=1.0)
        pre = sim.Population(1, sim.SpikeSourceArray(spike_times=[2.5]))
        post = sim.Population(50, sim.IF_curr_exp(tau_m=1e9, v_thresh=1e9, v_rest=0.0, v_reset=0.0, cm=1.0,
                                                  tau_syn_E=0.5))
        post.initialize(v=0.0)
        prj = sim.Projection(pre, post, sim.AllToAllConnector(),
                             sim.MultiQuantalSynapse(weight=0.5, delay=1.0, U=0.3, n=4, tau_rec=800.0))
        if initial:
            prj.initialize(**initial)
        post.record("v")
        sim.run(20.0)
        v = np.asarray(post.get_data().segments[0].filter(name="v")[0])[-1]
        sim.end()
        return v / 0.25                                    # sites: 0.5 nA x 0.5 ms / 1 nF = 0.25 mV each

    assert np.allclose(first_release(a=0), 0.0, atol=1e-9)
    assert np.allclose(first_release(a=4, u=1.0), 4.0, atol=1e-6)
    default = first_release()                               # NEST's a = 1, u = 0.5
    assert set(np.round(default, 6)) <= {0.0, 1.0} and 5 < default.sum() < 45
    with pytest.raises(NotImplementedError, match="no initial value 'x'"):
        sim.setup(timestep=0.1, min_delay=1.0)
        pre = sim.Population(1, sim.SpikeSourceArray(spike_times=[2.5]))
        prj = sim.Projection(pre, sim.Population(2, sim.IF_curr_exp()), sim.AllToAllConnector(),
                             sim.MultiQuantalSynapse(weight=0.5, delay=1.0))
        prj.initialize(x=1.0)
    sim.end()
