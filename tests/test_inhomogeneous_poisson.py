"""inhomogeneous_poisson: Poisson sources with a piecewise-constant rate (NEST's
inhomogeneous_poisson_generator, PyNN's SpikeSourceInhomogeneousPoisson)."""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv


def sources(n, times, rates, model="inhomogeneous_poisson"):
    net = rv.Network()
    net.add_population(rv.Population("P", n, params={"rate_times_ms": times, "rates_hz": rates}, model=model))
    return net


def test_each_segment_fires_at_its_rate():
    n = 2000
    net = sources(n, [100.0, 300.0, 500.0], [20.0, 80.0, 0.0])
    _, times = rv.Simulation(net, threads=2).run(700.0).spikes
    for lo, hi, rate in ((0.0, 100.0, 0.0), (100.0, 300.0, 20.0), (300.0, 500.0, 80.0), (500.0, 700.0, 0.0)):
        count = np.count_nonzero((times > lo) & (times <= hi))
        expected = n * rate * (hi - lo) * 1e-3
        assert abs(count - expected) <= 5 * np.sqrt(expected) + (0 if rate else 0), (lo, hi, count, expected)
        if rate == 0.0:
            assert count == 0


def test_one_segment_is_poisson_source_spike_for_spike():
    """The same keyed draw per source and step as poisson_source: rate r in [start, stop) gives its spikes."""
    net = sources(300, [50.0, 250.0], [40.0, 0.0])
    ref = rv.Network()
    ref.add_population(rv.Population("P", 300, params={"rate_hz": 40.0, "start_ms": 50.0, "stop_ms": 250.0},
                                     model="poisson_source"))
    a, b = rv.Simulation(net).run(300.0).spikes, rv.Simulation(ref).run(300.0).spikes
    assert a[0].size > 1000 and np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_the_same_spikes_for_any_threads_and_placement():
    net = sources(500, [0.0, 40.0, 120.0], [10.0, 60.0, 25.0])
    net.add_population(rv.Population("T", 100, model="iaf_psc_alpha"))
    net.connect(rv.Projection(source="P", target="T", indegree=50, weight=150.0, delay_ms=1.0))
    runs = [rv.Simulation(net, threads=t, placement=p).run(200.0).spikes
            for t, p in ((1, "round-robin"), (2, "block"), (2, "random"))]
    assert np.count_nonzero(runs[0][0] >= 500) > 0          # the targets fire
    for ids, times in runs[1:]:
        assert np.array_equal(ids, runs[0][0]) and np.array_equal(times, runs[0][1])


@pytest.mark.parametrize("times, rates, words", [
    ([10.0, 5.0], [1.0, 2.0], "strictly increasing"),
    ([10.0], [1.0, 2.0], "same length"),
    ([10.0], [-1.0], "'rates_hz' must be >= 0"),
    ("soon", [1.0], "'rate_times_ms' must be a list of numbers"),
])
def test_bad_schedules_are_refused_by_name(times, rates, words):
    with pytest.raises(rv.ConfigError, match=words):
        sources(3, times, rates)


def test_a_time_off_the_grid_is_refused():
    with pytest.raises(rv.ConfigError, match="12.34 ms is not a whole number of steps"):
        rv.Simulation(sources(3, [12.34], [5.0])).run(20.0)


def test_poisson_source_rates_per_neuron_keep_each_neurons_draws():
    """poisson_source with rate, start and stop per neuron (PyNN's SpikeSourcePoisson per cell):
    each neuron fires as a population of its own rate and window would (the same keyed draws)."""
    n = 600
    rates = np.tile([10.0, 50.0, 100.0], n // 3)
    starts = np.tile([0.0, 0.0, 200.0], n // 3)
    net = rv.Network()
    net.add_population(rv.Population("P", n, params={"rate_hz": rates, "start_ms": starts,
                                                    "stop_ms": np.full(n, 1000.0)}, model="poisson_source"))
    ids, times = rv.Simulation(net, threads=2, placement="random").run(1000.0).spikes
    counts = np.bincount(ids, minlength=n)
    for k, expected in enumerate((10.0, 50.0, 80.0)):                 # the third fires from 200 ms
        assert abs(counts[k::3].mean() - expected) < 5 * np.sqrt(expected / (n // 3))
    ref = rv.Network()
    ref.add_population(rv.Population("P", n, params={"rate_hz": 50.0, "start_ms": 0.0, "stop_ms": 1000.0},
                                     model="poisson_source"))
    r_ids, r_times = rv.Simulation(ref).run(1000.0).spikes
    mine, theirs = ids % 3 == 1, r_ids % 3 == 1
    assert np.array_equal(ids[mine], r_ids[theirs]) and np.array_equal(times[mine], r_times[theirs])
