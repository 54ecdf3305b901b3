"""mam-benchmark-study: the MAM-benchmark with the parameters the structure-aware study published
with its code (docs/workloads/mam-benchmark.md, "The study's own parameters").

- Sizes and in-degrees as the published parameter space computes them: int(129068 scale) neurons
  per area, int(2921 scale) synapses onto every neuron from its own area and int(that / (A - 1))
  from each other area, sources drawn with replacement; the area-size spread drawn as the study
  draws it (NumPy's generator, seed 20, redrawn at or below the in-degree).
- Delays as the published model draws them: normal with sd half the mean, redrawn outside
  [d_min, max_delay] (intra-area) and [threshold_delay, max_delay] (inter-area), rounded to the
  0.1 ms grid: bounds exact, step histograms against the truncated normal; D = 10.
- The first version's recipe (80,000 x scale neurons, in-degree 5 % of the area, intra-area
  delays capped at the threshold delay).
- Normal delays bounded above (Projection.delay_redraw_above_ms), and refusals by name.
(Decomposition invariance: tests/test_areas.py.)
"""
import math

import numpy as np
import pytest

import ranvier as rv
from ranvier.errors import ConfigError
from ranvier.models import MAM_STUDY_DEFAULTS


def built(**params):
    """The network, its simulation (one rank, one thread) and every synapse: sources, targets,
    delays in steps, and the area of each source and target."""
    net = rv.models.build("mam-benchmark-study", **params)
    sim = rv.Simulation(net, threads=1, exchange="two-tier", placement="by-area")
    src, tgt, _, d = sim.connections()
    src, tgt = np.asarray(src, dtype=np.int64), np.asarray(tgt, dtype=np.int64)
    steps = np.rint(np.asarray(d) / sim.resolution_ms).astype(np.int64)
    bounds = np.array([p.first_id for p in net.populations] + [net.size])
    area = lambda g: np.searchsorted(bounds, g, side="right") - 1          # noqa: E731
    return net, sim, src, tgt, steps, area(src), area(tgt)


def truncated_normal_pmf(mean, sd, lo, hi, h=0.1):
    """P(step s) for x ~ N(mean, sd) redrawn outside [lo, hi] ms, rounded to the nearest step."""
    def cdf(x):
        return 0.5 * (1.0 + math.erf((x - mean) / (sd * math.sqrt(2.0))))
    first, last = round(lo / h), round(hi / h)
    pmf = np.zeros(last + 1)
    for s in range(first, last + 1):
        a, b = max(lo, (s - 0.5) * h), min(hi, (s + 0.5) * h)
        pmf[s] = cdf(b) - cdf(a)
    return pmf / pmf.sum()


def assert_law(steps, pmf, what):
    """The histogram of `steps` against pmf: a chi-square over the bins expecting at least 5,
    far beyond chance (dof + 10 sd of the statistic)."""
    counts = np.bincount(steps, minlength=pmf.size)
    assert counts.size == pmf.size, (what, counts.size, pmf.size)           # nothing beyond the bound
    expected = pmf * steps.size
    assert np.all(counts[expected == 0] == 0), what                         # nothing outside the window
    used = expected >= 5
    chi2 = float((((counts - expected) ** 2)[used] / expected[used]).sum())
    dof = int(used.sum()) - 1
    assert chi2 < dof + 10 * math.sqrt(2 * dof), (what, chi2, dof)


@pytest.mark.parametrize("scale", (0.01, 0.02))
def test_published_sizes_and_in_degrees(scale):
    A = 3
    net, sim, src, tgt, steps, a_src, a_tgt = built(n_areas=A, scale=scale)
    n, k = int(129068 * scale), int(2921 * scale)
    k_inter = int(k * 1 / (A - 1))
    assert [p.size for p in net.populations] == [n] * A
    assert [p.area for p in net.populations] == [f"A{a}" for a in range(A)]
    assert all(p.model == "ignore_and_fire" and p.params["rate_hz"] == 2.5 for p in net.populations)
    # every neuron receives exactly k from its own area and k_inter from each other one
    per = np.zeros((net.size, A), dtype=np.int64)
    np.add.at(per, (tgt, a_src), 1)
    own = per[np.arange(net.size), np.repeat(np.arange(A), n)]            # neuron g lies in area g // n
    assert np.all(own == k)
    others = per.sum(axis=1) - own
    assert np.all(per[per != own[:, None]] == k_inter) and np.all(others == (A - 1) * k_inter)
    assert per.sum() == net.size * (k + (A - 1) * k_inter)
    assert np.all(per.sum(axis=1) == k + (A - 1) * k_inter)
    # sources uniform with replacement (NEST's fixed_indegree): multapses and autapses occur
    intra = a_src == a_tgt
    pairs = src[intra] * net.size + tgt[intra]
    assert np.unique(pairs).size < pairs.size                                # some multapse
    assert np.any(src[intra] == tgt[intra])                                  # some autapse
    # out-degrees are not fixed: binomial around the in-degree
    out = np.bincount(src, minlength=net.size)
    assert out.min() < k + (A - 1) * k_inter < out.max()
    assert abs(out.mean() - (k + (A - 1) * k_inter)) < 1e-9


def test_published_delay_laws_and_the_delay_ratio():
    net, sim, src, tgt, steps, a_src, a_tgt = built(n_areas=3, scale=0.02)
    intra = a_src == a_tgt
    # intra-area N(0.5, 0.25) ms redrawn outside [0.1, 2.0]; inter-area N(1.5, 0.75) outside [1.0, 2.0]
    assert steps[intra].min() >= 1 and steps[intra].max() <= 20
    assert steps[~intra].min() >= 10 and steps[~intra].max() <= 20
    assert_law(steps[intra], truncated_normal_pmf(0.5, 0.25, 0.1, 2.0), "intra-area")
    assert_law(steps[~intra], truncated_normal_pmf(1.5, 0.75, 1.0, 2.0), "inter-area")
    # both ends of the inter-area window are reached: its half-steps at 1.0 and 2.0 ms
    assert np.count_nonzero(steps[~intra] == 10) > 0 and np.count_nonzero(steps[~intra] == 20) > 0
    assert abs(steps[~intra].mean() * 0.1 - 1.5) < 0.01                    # symmetric window around the mean
    assert net.min_inter_area_delay_ms() == 1.0 and net.min_delay_ms() == 0.1
    assert sim.global_interval == 10                                        # threshold_delay / min_delay


def test_area_size_spread_as_the_study_draws_it():
    """area_size_sigma (the study's unbalanced_network_sigma): int(normal(N, sigma N)) per area in
    order from NumPy's generator seeded with numpy_seed = 20, redrawn while not above the in-degree."""
    A, scale, sigma = 6, 0.01, 0.15
    net = rv.models.build("mam-benchmark-study", n_areas=A, scale=scale, area_size_sigma=sigma)
    n0, k = int(129068 * scale), int(2921 * scale)
    rng = np.random.default_rng(20)
    expected = []
    for _ in range(A):
        size = int(rng.normal(n0, sigma * n0))
        while size <= k:
            size = int(rng.normal(n0, sigma * n0))
        expected.append(size)
    assert [p.size for p in net.populations] == expected
    assert len(set(expected)) == A
    other = rv.models.build("mam-benchmark-study", n_areas=A, scale=scale, area_size_sigma=sigma, area_size_seed=21)
    assert [p.size for p in other.populations] != expected
    # a spread so wide that draws fall at or below the in-degree: redrawn, never kept
    wide = rv.models.build("mam-benchmark-study", n_areas=20, scale=scale, area_size_sigma=1.0)
    assert min(p.size for p in wide.populations) > k


def test_the_first_version_recipe():
    """The study's first parameter space (ignore_and_fire/, 0ebca60): areas of int(80000 scale),
    in-degree int(0.05 N), intra-area delays capped at the threshold delay."""
    for scale in (0.005, 0.0123, 0.02, 0.05):
        net = rv.models.build("mam-benchmark-study", n_areas=2, scale=scale, area_size=80000, indegree=4000,
                              intra_delay_cap="threshold_delay")
        n = int(80000 * scale)
        assert [p.size for p in net.populations] == [n, n]
        assert net.projections[0].indegree == int(0.05 * n), scale
        assert net.projections[1].indegree == int(0.05 * n)                  # one other area: all of it
    net, sim, src, tgt, steps, a_src, a_tgt = built(n_areas=2, scale=0.02, area_size=80000, indegree=4000,
                                                    intra_delay_cap="threshold_delay")
    intra = a_src == a_tgt
    assert steps[intra].max() <= 10 and steps[~intra].min() >= 10
    assert_law(steps[intra], truncated_normal_pmf(0.5, 0.25, 0.1, 1.0), "intra-area, first version")


def test_defaults_are_the_published_ones():
    d = rv.models.defaults("mam-benchmark-study")
    assert d == MAM_STUDY_DEFAULTS
    assert (d["n_areas"], d["area_size"], d["indegree"], d["rate_hz"]) == (32, 129068, 2921, 2.5)
    assert (d["d_min_ms"], d["threshold_delay_ms"], d["max_delay_ms"]) == (0.1, 1.0, 2.0)
    assert (d["intra_delay_mean_ms"], d["inter_delay_mean_ms"], d["delay_relative_sd"]) == (0.5, 1.5, 0.5)
    # the full model: 32 areas of 129,068 neurons, 2921 + 31 x 94 synapses onto each
    net = rv.models.build("mam-benchmark-study")
    assert net.size == 32 * 129068
    assert net.expected_synapses() == 32 * 129068 * (2921 + 31 * 94)


@pytest.mark.parametrize("params,words", [
    ({"K": 100}, "unknown parameter(s) ['K']"),
    ({"scale": 0.0001}, "is 0, a network without synapses: raise 'scale'"),
    ({"area_size": 2000}, "is not larger than its in-degree int(indegree * scale) = 2921"),
    ({"scale": 0.0}, "'scale' must be positive"),
    ({"intra_delay_cap": "min_delay"}, "'intra_delay_cap' must be"),
    ({"threshold_delay_ms": 3.0}, "d_min_ms <= threshold_delay_ms <= max_delay_ms"),
    ({"n_areas": 0}, "'n_areas' must be at least 1"),
    ({"area_size_sigma": -0.1}, "'area_size_sigma' must not be negative"),
])
def test_bad_values_are_refused_by_name(params, words):
    with pytest.raises(ConfigError, match="mam-benchmark-study") as e:
        rv.models.build("mam-benchmark-study", **params)
    assert words in str(e.value)


# -- normal delays bounded above ---------------------------------------------------------------
def one_projection(**delays):
    net = rv.Network()
    net.add_population(rv.Population("A", 400, {"rate_hz": 10.0}, model="ignore_and_fire"))
    net.connect(rv.Projection(source="A", target="A", indegree=50, weight=0.1, delay_distribution="normal",
                              **delays))
    return net


def test_normal_delays_redrawn_above_the_bound():
    net = one_projection(delay_offset_ms=0.5, delay_mean_ms=1.0, delay_sd_ms=1.0, delay_redraw_above_ms=1.3)
    pr = net.projections[0]
    assert pr.max_delay_steps(0.1) == 13
    sim = rv.Simulation(net, threads=1)
    steps = np.rint(np.asarray(sim.connections()[3]) / 0.1).astype(np.int64)
    assert steps.min() == 5 and steps.max() == 13
    assert_law(steps, truncated_normal_pmf(1.0, 1.0, 0.5, 1.3), "bounded above")
    # unbounded, the same law reaches far above
    free = rv.Simulation(one_projection(delay_offset_ms=0.5, delay_mean_ms=1.0, delay_sd_ms=1.0), threads=1)
    assert np.asarray(free.connections()[3]).max() > 3.0


@pytest.mark.parametrize("delays,words", [
    (dict(delay_offset_ms=0.5, delay_mean_ms=1.0, delay_sd_ms=0.5, delay_redraw_above_ms=0.3),
     "'delay_redraw_above_ms' = 0.3 ms lies below the shortest delay 0.5 ms"),
    (dict(delay_offset_ms=0.5, delay_mean_ms=10.0, delay_sd_ms=0.5, delay_redraw_above_ms=1.0),
     "would almost never fall below it; lower the mean"),
    (dict(delay_offset_ms=0.5, delay_mean_ms=1.0, delay_sd_ms=0.5, delay_redraw_above_ms=-1.0),
     "delay_redraw_above_ms"),
])
def test_bad_upper_bounds_are_refused(delays, words):
    with pytest.raises(ConfigError, match="delay_redraw_above_ms") as e:
        one_projection(**delays)
    assert words in str(e.value)


def test_upper_bound_is_for_normal_delays_only():
    net = rv.Network()
    net.add_population(rv.Population("A", 10, {"rate_hz": 10.0}, model="ignore_and_fire"))
    with pytest.raises(ConfigError, match="'delay_redraw_above_ms' bounds normal delays only"):
        net.connect(rv.Projection(source="A", target="A", indegree=2, weight=0.1, delay_offset_ms=1.0,
                                  delay_scale_ms=1.0, delay_cut_ms=3.0, delay_redraw_above_ms=2.0))
