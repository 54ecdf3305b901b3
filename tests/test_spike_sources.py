"""gamma_source and ppd_source: the gamma-process and dead-time Poisson sources (NEST's
gamma_sup_generator and ppd_sup_generator with one process; PyNN's SpikeSourceGamma and
SpikeSourcePoissonRefractory): rates, interval statistics, windows, keyed draws, checks."""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv

H = 0.1


def run(model, n, params, ms, **kw):
    net = rv.Network()
    net.add_population(rv.Population("S", n, params=params, model=model))
    ids, times = rv.Simulation(net, **kw).run(ms).spikes
    return ids, times


def intervals(ids, times, neurons):
    """Every neuron's intervals, one after the other."""
    order = np.lexsort((times, ids))
    ids, times = ids[order], times[order]
    same = (ids[1:] == ids[:-1]) & np.isin(ids[1:], np.asarray(list(neurons)))
    return np.diff(times)[same]


def slack(isi, mean, ms):
    """What a sample mean of intervals may miss by: 5 standard errors, and the intervals that a run
    of `ms` cuts off at its end (the long ones: a bias of about mean^2 / ms)."""
    return 5 * isi.std() / np.sqrt(isi.size) + 2 * mean**2 / ms


@pytest.mark.parametrize("k, rate", [(1, 20.0), (2, 50.0), (4, 20.0), (9, 10.0)])
def test_gamma_rate_and_cv(k, rate):
    """Mean interval 1 / rate; CV sqrt((1 - q) / k) with q = k rate h, NEST's chain (1/sqrt(k) as q -> 0)."""
    n, ms = 200, 5000.0
    ids, times = run("gamma_source", n, {"rate_hz": rate, "gamma_shape": k, "stop_ms": 1e9}, ms)
    expected = n * rate * ms * 1e-3
    assert abs(ids.size - expected) < 5 * np.sqrt(expected) / np.sqrt(k) + 0.01 * expected
    isi = intervals(ids, times, range(n))
    q = k * rate * 1e-3 * H
    cv = isi.std() / isi.mean()
    assert abs(cv - np.sqrt((1 - q) / k)) < 0.02, (cv, np.sqrt((1 - q) / k))
    assert abs(cv - 1 / np.sqrt(k)) < 0.02 + 0.6 * q / np.sqrt(k)
    assert abs(isi.mean() - 1e3 / rate) < slack(isi, 1e3 / rate, ms)
    assert isi.min() >= k * H - 1e-9                 # k transitions, at most one a step


def test_gamma_intervals_follow_the_gamma_distribution():
    scipy_stats = pytest.importorskip("scipy.stats")
    k, rate = 3, 30.0
    ids, times = run("gamma_source", 200, {"rate_hz": rate, "gamma_shape": k, "stop_ms": 1e9}, 5000.0)
    isi = intervals(ids, times, range(200))
    D, _ = scipy_stats.kstest(isi, "gamma", args=(k, 0, 1e3 / (k * rate)))
    assert D < 0.03
    D_poisson, _ = scipy_stats.kstest(isi, "expon", args=(0, 1e3 / rate))
    assert D_poisson > 0.1                           # and not an exponential


@pytest.mark.parametrize("rate, dead", [(50.0, 5.0), (100.0, 2.0), (20.0, 0.0), (80.0, 12.3)])
def test_ppd_rate_and_no_interval_below_the_dead_time(rate, dead):
    n, ms = 200, 5000.0
    ids, times = run("ppd_source", n, {"rate_hz": rate, "dead_time_ms": dead, "stop_ms": 1e9}, ms)
    isi = intervals(ids, times, range(n))
    steps = np.floor(dead / H + 1e-9)                # NEST's dead steps
    assert isi.min() >= (steps + 1) * H - 1e-9 and isi.min() < (steps + 1) * H + 0.5
    # Mean interval: floor(d / h) h + (1000 / rate - d): 1000 / rate for a whole number of steps.
    mean = steps * H + 1e3 / rate - dead
    assert abs(isi.mean() - mean) < slack(isi, mean, ms)
    expected = n * ms / mean
    assert abs(ids.size - expected) < 5 * np.sqrt(expected)
    # Beyond the dead time, geometric intervals of p = h / (1000 / rate - d) per step (exponential
    # as p -> 0): sd h sqrt(1 - p) / p.
    p = H / (1e3 / rate - dead)
    assert abs(isi.std() / (H * np.sqrt(1 - p) / p) - 1.0) < 0.03


def test_ppd_intervals_beyond_the_dead_time_are_exponential():
    scipy_stats = pytest.importorskip("scipy.stats")
    rate, dead = 40.0, 10.0
    ids, times = run("ppd_source", 200, {"rate_hz": rate, "dead_time_ms": dead, "stop_ms": 1e9}, 5000.0)
    isi = intervals(ids, times, range(200)) - dead
    D, _ = scipy_stats.kstest(isi, "expon", args=(0, 1e3 / rate - dead))
    assert D < 0.03


@pytest.mark.parametrize("model, params", [
    ("gamma_source", {"rate_hz": 100.0, "gamma_shape": 2}),
    ("ppd_source", {"rate_hz": 100.0, "dead_time_ms": 3.0}),
])
def test_window_bounds_the_spikes(model, params):
    ids, times = run(model, 200, {**params, "start_ms": 50.0, "stop_ms": 150.0}, 300.0)
    assert ids.size > 1000
    # Steps 500 .. 1499 fire, spikes at (step + 1) h.
    assert times.min() >= 50.0 + H - 1e-9 and times.max() <= 150.0 + 1e-9


def test_per_neuron_values_fire_as_their_own_populations():
    """One population with a value per neuron gives each neuron the spikes of a population of its
    own value (the draws are keyed by neuron and step, not by the population's parameters)."""
    for model, key, values, extra in (("gamma_source", "gamma_shape", np.array([1.0, 2.0, 5.0]), {"rate_hz": 40.0}),
                                      ("ppd_source", "dead_time_ms", np.array([0.0, 4.0, 9.0]), {"rate_hz": 50.0})):
        mixed = run(model, 3, {**extra, key: values, "stop_ms": 1e9}, 2000.0)
        for i, v in enumerate(values):
            net = rv.Network()
            if i:
                net.add_population(rv.Population("pad", i, params={**extra, key: v, "stop_ms": 0.0}, model=model))
            net.add_population(rv.Population("S", 3 - i, params={**extra, key: v, "stop_ms": 1e9}, model=model))
            ids, times = rv.Simulation(net).run(2000.0).spikes
            assert np.array_equal(times[ids == i], mixed[1][mixed[0] == i]) and np.count_nonzero(ids == i) > 20


def test_the_same_spikes_for_any_threads_and_placement():
    net = rv.Network()
    net.add_population(rv.Population("G", 400, params={"rate_hz": 30.0, "gamma_shape": 3, "stop_ms": 1e9},
                                     model="gamma_source"))
    net.add_population(rv.Population("R", 400, params={"rate_hz": 30.0, "dead_time_ms": 6.0, "stop_ms": 1e9},
                                     model="ppd_source"))
    net.add_population(rv.Population("T", 100, model="iaf_psc_alpha"))
    net.connect(rv.Projection(source="G", target="T", indegree=40, weight=150.0, delay_ms=1.0))
    net.connect(rv.Projection(source="R", target="T", indegree=40, weight=150.0, delay_ms=1.0))
    runs = [rv.Simulation(net, threads=t, placement=p).run(300.0).spikes
            for t, p in ((1, "round-robin"), (2, "block"), (2, "random"))]
    assert np.count_nonzero(runs[0][0] >= 800) > 0          # the targets fire
    for ids, times in runs[1:]:
        assert np.array_equal(ids, runs[0][0]) and np.array_equal(times, runs[0][1])


def test_another_seed_gives_other_spikes():
    a = run("gamma_source", 50, {"rate_hz": 30.0, "gamma_shape": 2, "stop_ms": 1e9}, 500.0, seed=1)
    b = run("gamma_source", 50, {"rate_hz": 30.0, "gamma_shape": 2, "stop_ms": 1e9}, 500.0, seed=2)
    assert a[0].size > 100 and not (a[0].size == b[0].size and np.array_equal(a[1], b[1]))


@pytest.mark.parametrize("model, params, words", [
    ("gamma_source", {"rate_hz": 10.0, "gamma_shape": 2.5}, "'gamma_shape' must be a whole number >= 1"),
    ("gamma_source", {"rate_hz": 10.0, "gamma_shape": 0}, "'gamma_shape' must be a whole number >= 1"),
    ("gamma_source", {"rate_hz": -1.0, "gamma_shape": 2}, "'rate_hz' must be zero or positive"),
    ("gamma_source", {"rate_hz": 10.0, "gamma_shape": np.array([1.0, 2.0, 3.5])},
     "'gamma_shape' must be a whole number >= 1.*neuron 2 has 3.5"),
    ("gamma_source", {"rate_hz": 10.0, "gamma_shape": 2, "start_ms": 5.0, "stop_ms": 1.0},
     "'stop_ms' must not be below 'start_ms'"),
    ("ppd_source", {"rate_hz": 100.0, "dead_time_ms": 10.0}, "1000 / 'rate_hz' = 10 ms must be longer than "
                                                              "'dead_time_ms' = 10 ms"),
    ("ppd_source", {"rate_hz": 10.0, "dead_time_ms": -1.0}, "'dead_time_ms' must be zero or positive"),
])
def test_bad_parameters_are_refused_by_name(model, params, words):
    with pytest.raises(rv.ConfigError, match=words):
        rv.Population("S", 3, params={"stop_ms": 100.0, **params}, model=model).validate()


@pytest.mark.parametrize("model, params, words", [
    ("gamma_source", {"rate_hz": 3000.0, "gamma_shape": 4}, "'rate_hz' x 'gamma_shape' = 12000 Hz .* more than one "
                                                            "phase transition per step of 0.1 ms"),
    ("ppd_source", {"rate_hz": 100.0, "dead_time_ms": 9.95}, "1000 / 'rate_hz' - 'dead_time_ms' = 0.05 ms .* "
                                                             "shorter than a step of 0.1 ms"),
])
def test_rates_the_grid_cannot_reach_are_refused(model, params, words):
    net = rv.Network()
    net.add_population(rv.Population("S", 3, params={"stop_ms": 100.0, **params}, model=model))
    with pytest.raises(rv.ConfigError, match=words):
        rv.Simulation(net)


def test_pynn_translation_is_pynn_nests():
    """alpha -> gamma_shape, beta -> rate_hz = beta / alpha (gamma_sup_generator's rate);
    tau_refrac -> dead_time_ms; start, duration -> the window, as pyNN.nest."""
    pytest.importorskip("pyNN")
    import pyNN.ranvier as sim
    g = sim.SpikeSourceGamma(alpha=4, beta=200.0, start=5.0, duration=100.0)
    native = g.native_parameters
    native.shape = (1,)
    values = {k: float(np.asarray(native[k].evaluate(simplify=True)).ravel()[0]) for k in native.keys()}
    assert values == {"gamma_shape": 4.0, "rate_hz": 50.0, "start_ms": 5.0, "stop_ms": 105.0}
    r = sim.SpikeSourcePoissonRefractory(rate=30.0, tau_refrac=4.0)
    native = r.native_parameters
    native.shape = (1,)
    values = {k: float(np.asarray(native[k].evaluate(simplify=True)).ravel()[0]) for k in native.keys()}
    assert values["rate_hz"] == 30.0 and values["dead_time_ms"] == 4.0 and values["start_ms"] == 0.0
