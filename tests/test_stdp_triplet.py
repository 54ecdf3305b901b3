"""rv.STDPTriplet (NEST's stdp_triplet_synapse): final weights against NEST 3.10 for the pairing
protocol and for random spike trains rich in triplets, and its parameter checks."""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv

H, DELAY_MS, W0 = 0.1, 1.5, 50.0
TAU_MINUS_MS, TAU_MINUS_TRIPLET_MS = 33.7, 125.0
# Large amplitudes, so that pairs and triplets both move the weights visibly.
PARAMS = dict(tau_plus_ms=16.8, tau_plus_triplet_ms=101.0, Aplus=0.4, Aminus=0.5, Aplus_triplet=0.3,
              Aminus_triplet=0.2, w_max=100.0)
NEST_NAMES = {"tau_plus_ms": "tau_plus", "tau_plus_triplet_ms": "tau_plus_triplet", "w_max": "Wmax"}


def nest_weights(pre_times, post_times, duration):
    nest = pytest.importorskip("nest")
    nest.ResetKernel()
    nest.verbosity = nest.VerbosityLevel.ERROR
    nest.SetKernelStatus({"resolution": H, "print_time": False})
    n = len(pre_times)
    pre_gen = nest.Create("spike_generator", n, params=[{"spike_times": t.tolist()} for t in pre_times])
    post_gen = nest.Create("spike_generator", n, params=[{"spike_times": t.tolist()} for t in post_times])
    pre = nest.Create("parrot_neuron", n)
    post = nest.Create("parrot_neuron", n, params={"tau_minus": TAU_MINUS_MS,
                                                   "tau_minus_triplet": TAU_MINUS_TRIPLET_MS})
    nest.Connect(pre_gen, pre, "one_to_one", {"delay": H})
    nest.Connect(post_gen, post, "one_to_one", {"delay": H})
    nest.CopyModel("stdp_triplet_synapse", "plastic", {NEST_NAMES.get(k, k): v for k, v in PARAMS.items()})
    nest.Connect(pre, post, "one_to_one", {"synapse_model": "plastic", "weight": W0, "delay": DELAY_MS,
                                           "receptor_type": 1})
    nest.Simulate(duration)
    conns = nest.GetConnections(pre, post)
    return np.asarray(conns.get("weight"), dtype=np.float64)[np.argsort(np.asarray(conns.get("source")))]


def ranvier_weights(pre_times, post_times, duration, **sim_args):
    # The parrots repeat a generator's spike H later.
    n = len(pre_times)
    net = rv.Network()
    net.add_population(rv.Population("pre", n, {"spike_times_ms": [np.round(t + H, 1).tolist() for t in pre_times]},
                                     model="spike_train"))
    net.add_population(rv.Population("post", n, {"spike_times_ms": [np.round(t + H, 1).tolist() for t in post_times]},
                                     model="spike_train", tau_minus_ms=TAU_MINUS_MS,
                                     tau_minus_triplet_ms=TAU_MINUS_TRIPLET_MS))
    net.connect(rv.Projection(source="pre", target="post", sources=np.arange(n), targets=np.arange(n), weight=W0,
                              delay_ms=DELAY_MS, synapse=rv.STDPTriplet(**PARAMS)))
    sim = rv.Simulation(net, **({"threads": 1, "seed": 1} | sim_args))
    sim.run(duration)
    w = sim.weights("pre", "post")
    return w.weight[np.argsort(w.target)]


def duration_of(trains):
    last = max(float(t.max()) for t in trains if t.size)
    return float(np.ceil((last + 100.0) / DELAY_MS) * DELAY_MS)


def pairing_protocol():
    """60 pairs at 1 Hz, post Delta after pre (densely around 0 and -+ the delay)."""
    deltas = np.union1d(np.arange(-50, 51, 1.0), [-1.6, -1.5, -1.4, -0.1, 0.1, 1.4, 1.5, 1.6])
    base = 100.0 + 1000.0 * np.arange(60)
    return [base.copy() for _ in deltas], [np.round(base + d, 1) for d in deltas]


def triplet_protocol():
    """Triplets pre-post-pre and post-pre-post at several intervals (Pfister & Gerstner's
    protocols), then random 20 Hz trains that hold triplets of every order."""
    pre, post = [], []
    base = 100.0 + 1000.0 * np.arange(30)
    for t1, t2 in [(5, 5), (10, 10), (15, 5), (5, 15), (3, 20)]:
        pre.append(np.sort(np.round(np.concatenate([base, base + t1 + t2]), 1)))
        post.append(np.round(base + t1, 1))                                       # pre-post-pre
        pre.append(np.round(base + t1, 1))
        post.append(np.sort(np.round(np.concatenate([base, base + t1 + t2]), 1)))  # post-pre-post
    rng = np.random.default_rng(7)
    for _ in range(20):
        for out in (pre, post):
            t = np.cumsum(rng.exponential(50.0, 400))
            out.append(np.unique(np.round(t[t < 20000.0], 1)) + 100.0)
    return pre, post


@pytest.mark.parametrize("protocol", [pairing_protocol, triplet_protocol])
def test_weights_equal_nest(protocol):
    pre, post = protocol()
    duration = duration_of(pre + post)
    expected = nest_weights(pre, post, duration)
    got = ranvier_weights(pre, post, duration)
    assert got.shape == expected.shape
    assert np.any(np.abs(expected - W0) > 1.0)          # the weights did move
    rel = np.max(np.abs(got - expected) / np.abs(expected).clip(1e-300))
    assert rel <= 1e-10, rel          # reached: pairing <= 1e-12, triplets 2.1e-12 (NEST 3.10)


def test_decompositions_agree():
    pre, post = triplet_protocol()
    duration = duration_of(pre + post)
    one = ranvier_weights(pre, post, duration)
    for args in ({"threads": 2}, {"threads": 3}):
        assert np.array_equal(ranvier_weights(pre, post, duration, **args), one), args


@pytest.mark.parametrize("field, value", [("tau_plus_triplet_ms", 0.0), ("Aplus_triplet", -1.0),
                                          ("w_max", 0.0), ("Kplus_triplet", 1.0)])
def test_bad_parameters_name_the_field(field, value):
    net = rv.Network()
    net.add_population(rv.Population("A", 10))
    with pytest.raises(rv.ConfigError, match=field):
        net.connect(rv.Projection(source="A", target="A", indegree=2, weight=1.0, delay_ms=1.5,
                                  synapse=rv.STDPTriplet(**{field: value})))
        rv.Simulation(net, threads=1)


def test_bad_tau_minus_triplet_names_the_field():
    net = rv.Network()
    with pytest.raises(rv.ConfigError, match="tau_minus_triplet_ms"):
        net.add_population(rv.Population("A", 10, tau_minus_triplet_ms=-1.0))
        net.connect(rv.Projection(source="A", target="A", indegree=2, weight=1.0, delay_ms=1.5,
                                  synapse=rv.STDPTriplet()))
        rv.Simulation(net, threads=1)


def triplet_network(pre_times, post_times):
    n = len(pre_times)
    net = rv.Network()
    net.add_population(rv.Population("pre", n, {"spike_times_ms": [t.tolist() for t in pre_times]}, model="spike_train"))
    net.add_population(rv.Population("post", n, {"spike_times_ms": [t.tolist() for t in post_times]},
                                     model="spike_train", tau_minus_ms=TAU_MINUS_MS,
                                     tau_minus_triplet_ms=TAU_MINUS_TRIPLET_MS))
    net.connect(rv.Projection(source="pre", target="post", sources=np.arange(n), targets=np.arange(n), weight=W0,
                              delay_ms=DELAY_MS, synapse=rv.STDPTriplet(**PARAMS)))
    return net


def test_checkpoint_resumes_the_triplet_traces(tmp_path):
    """Saved mid-run (traces and histories non-trivial), resumed on other threads: the weights of
    one uninterrupted run, brought up to date too."""
    pre, post = triplet_protocol()
    duration = duration_of(pre + post)
    half = float(np.ceil(duration / 2 / DELAY_MS) * DELAY_MS)
    whole = rv.Simulation(triplet_network(pre, post), threads=1, seed=1)
    whole.run(duration)
    first = rv.Simulation(triplet_network(pre, post), threads=1, seed=1)
    first.run(half)
    first.save(tmp_path / "ck")
    with np.load(tmp_path / "ck" / "state.npz") as state:
        assert state["post.triplet.gid"].size == len(post)
        assert np.count_nonzero(state["post.triplet.spike.k_minus"] > 1.0) > 10
    resumed = rv.Simulation.resume(tmp_path / "ck", threads=2)
    resumed.run(duration - half)
    for up in (False, True):
        a, b = whole.weights("pre", "post", up_to_date=up), resumed.weights("pre", "post", up_to_date=up)
        assert np.array_equal(a.target, b.target) and np.array_equal(a.weight, b.weight), up
