"""The spike_train model (NEST's spike_generator -> parrot_neuron): exact spike times, input
ignored, bad trains refused, and the same spikes for any decomposition."""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv


def run(pops, projections=(), ms=50.0, **kw):
    net = rv.Network()
    for p in pops:
        net.add_population(p)
    for pr in projections:
        net.connect(pr)
    sim = rv.Simulation(net, **{"threads": 1, **kw})
    return sim, sim.run(ms)


def test_each_neuron_fires_at_its_times():
    trains = [[10.0, 20.5, 3.2], [], [0.1, 49.9]]
    _, res = run([rv.Population("S", 3, {"spike_times_ms": trains}, model="spike_train")])
    got = {i: sorted(res.spike_steps[res.spike_ids == i] * 0.1) for i in range(3)}
    assert np.allclose(got[0], [3.2, 10.0, 20.5]) and got[1] == [] and np.allclose(got[2], [0.1, 49.9])


def test_one_flat_list_is_every_neurons_train_and_input_is_ignored():
    drive = rv.Population("L", 20, initial="uniform")
    net_pops = [rv.Population("S", 4, {"spike_times_ms": [5.0, 7.0]}, model="spike_train"), drive]
    # strong input into S changes nothing: it has no membrane
    sim, res = run(net_pops, [rv.Projection(source="L", target="S", indegree=5, weight=100.0, delay_ms=1.0),
                              rv.Projection(source="S", target="L", indegree=2, weight=1.0, delay_ms=1.0)])
    s_ids = res.spike_ids[res.spike_ids < 4]
    assert np.bincount(s_ids, minlength=4).tolist() == [2, 2, 2, 2]


@pytest.mark.parametrize("times,word", [
    ([[1.0], [2.0]], "gives 2 trains for 3 neurons"),
    ([0.0, 1.0], "must be finite and > 0"),
    ([1.0, 1.0], "fires twice at 1 ms"),
    ([1.05], "not a whole number of steps"),
    ("often", "must be a list of times"),
])
def test_bad_trains_are_refused(times, word):
    with pytest.raises(rv.ConfigError, match=word):
        run([rv.Population("S", 3, {"spike_times_ms": times}, model="spike_train")])


def test_same_spikes_for_any_threads_and_placement():
    rng = np.random.default_rng(3)
    trains = [np.unique(np.round(rng.uniform(0.1, 99.9, 30), 1)).tolist() for _ in range(50)]
    ref = None
    for threads, placement in ((1, "round-robin"), (2, "round-robin"), (2, "block")):
        _, res = run([rv.Population("S", 50, {"spike_times_ms": trains}, model="spike_train"),
                      rv.Population("L", 30)],
                     [rv.Projection(source="S", target="L", indegree=10, weight=3.0, delay_ms=1.0)],
                     ms=100.0, threads=threads, placement=placement)
        pair = (res.spike_ids.copy(), res.spike_steps.copy())
        if ref is None:
            ref = pair
            assert np.count_nonzero(ref[0] < 50) == sum(len(t) for t in trains)
        assert np.array_equal(pair[0], ref[0]) and np.array_equal(pair[1], ref[1])
