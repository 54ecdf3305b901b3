"""The dpsnn network instance: degrees, efficacies and delays against their laws.

Statistical checks use tolerances of 5 standard errors (or a chi-square / Kolmogorov-Smirnov
threshold with a comparable false-alarm probability, about 1e-6); the seed is fixed, so
each check is deterministic. Connections are generated at build: nothing is simulated.
"""
import math

import numpy as np
import pytest

import ranvier as rv

N, K = 4096, 1125
Z = 5.0                 # standard errors allowed


def normal_cdf(x):
    """Standard normal CDF, vectorised (Abramowitz-Stegun 7.1.26 erf, error below 1.5e-7)."""
    z = np.abs(np.asarray(x, dtype=np.float64)) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = 1.0 - poly * np.exp(-z * z)
    return 0.5 * (1.0 + np.sign(x) * erf)


def truncated_normal(mu, sigma, lo, hi):
    """Mean, sd and CDF of N(mu, sigma) restricted to (lo, hi)."""
    a, b = (lo - mu) / sigma, (hi - mu) / sigma
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)      # noqa: E731
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))             # noqa: E731
    zz = cdf(b) - cdf(a)
    mean = mu + sigma * (pdf(a) - pdf(b)) / zz
    var = sigma**2 * (1 + (a * pdf(a) - b * pdf(b)) / zz - ((pdf(a) - pdf(b)) / zz) ** 2)
    return mean, math.sqrt(var), lambda x: (normal_cdf((x - mu) / sigma) - cdf(a)) / zz


def delay_law(dmax_ms):
    """P(delay = 1 + k ms), k = 0 .. dmax - 1, for x ~ Exp(scale dmax / ln 20) cut at x < dmax."""
    scale = dmax_ms / math.log(20.0)
    k = np.arange(int(dmax_ms))
    p = (np.exp(-k / scale) - np.exp(-(k + 1) / scale)) / (1.0 - math.exp(-dmax_ms / scale))
    return 1 + k, p


def chi2_threshold(dof, z=Z):
    """Upper quantile of chi-square(dof) at the normal z (Wilson-Hilferty)."""
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def build(neurons, synapses, threads=1, placement="round-robin", seed=1):
    net = rv.models.dpsnn(neurons=neurons, synapses_per_neuron=synapses)
    sim = rv.Simulation(net, threads=threads, placement=placement, seed=seed)
    src, tgt, w, d = sim.connections()
    return net, sim, np.asarray(src, dtype=np.int64), np.asarray(tgt, dtype=np.int64), \
        np.asarray(w, dtype=np.float64), np.asarray(d, dtype=np.float64)


@pytest.fixture(scope="module")
def dpsnn_instance():
    net, sim, src, tgt, w, d = build(N, K)
    assert sim.steps_per_cycle == 10          # minimum delay 1 ms = 10 steps of 0.1 ms
    del sim
    pops = {p.name: (p.first_id, p.size) for p in net.populations}
    return dict(net=net, src=src, tgt=tgt, w=w, d=d, pops=pops)


def pop_of(ids, pops):
    out = np.empty(ids.size, dtype="<U1")
    for name, (first, size) in pops.items():
        out[(ids >= first) & (ids < first + size)] = name
    return out


def test_population_sizes(dpsnn_instance):
    pops = dpsnn_instance["pops"]
    assert sum(s for _, s in pops.values()) == N
    assert pops["F"] == (0, round(0.2 * N))
    assert pops["B"][1] == round(0.8 * N) - round(0.2 * N)
    assert pops["I"][0] + pops["I"][1] == N


def test_no_autapses_no_duplicates(dpsnn_instance):
    src, tgt = dpsnn_instance["src"], dpsnn_instance["tgt"]
    assert src.size > 0
    assert np.all((src >= 0) & (src < N) & (tgt >= 0) & (tgt < N))
    assert not np.any(src == tgt)
    key = np.sort(src * N + tgt)
    assert not np.any(key[1:] == key[:-1]), "duplicate (source, target) pairs"


def test_degrees_are_binomial(dpsnn_instance):
    src, tgt = dpsnn_instance["src"], dpsnn_instance["tgt"]
    p = K / N
    mean, var = (N - 1) * p, (N - 1) * p * (1 - p)
    # sample variance of N near-normal values: standard error var * sqrt(2 / (N - 1))
    se_var = var * math.sqrt(2 / (N - 1))
    for name, ids in (("out", src), ("in", tgt)):
        deg = np.bincount(ids, minlength=N)
        assert abs(deg.mean() - mean) < Z * math.sqrt(var / N), (name, deg.mean(), mean)
        assert abs(deg.var(ddof=1) - var) < Z * se_var, (name, deg.var(ddof=1), var)
    total_pairs = N * (N - 1)
    assert abs(src.size - total_pairs * p) < Z * math.sqrt(total_pairs * p * (1 - p))


def test_synapse_counts_per_projection(dpsnn_instance):
    pops, src, tgt = dpsnn_instance["pops"], dpsnn_instance["src"], dpsnn_instance["tgt"]
    ps, pt = pop_of(src, pops), pop_of(tgt, pops)
    p = K / N
    for s, (_, ns) in pops.items():
        for t, (_, nt) in pops.items():
            pairs = ns * nt - (ns if s == t else 0)
            count = np.count_nonzero((ps == s) & (pt == t))
            assert abs(count - pairs * p) < Z * math.sqrt(pairs * p * (1 - p)), (s, t, count, pairs * p)


def test_efficacies_follow_the_truncated_gaussian(dpsnn_instance):
    pops, src, tgt, w = (dpsnn_instance[k] for k in ("pops", "src", "tgt", "w"))
    params = dpsnn_instance["net"].parameters
    ps, pt = pop_of(src, pops), pop_of(tgt, pops)
    for s in "FBI":
        for t in "FBI":
            j = params[f"J_{s}{t}"]
            sigma = 0.25 * abs(j)
            lo, hi = min(0.0, 2 * j), max(0.0, 2 * j)
            x = w[(ps == s) & (pt == t)]
            n = x.size
            assert n > 1000
            assert np.all(x > lo) and np.all(x < hi), (s, t, x.min(), x.max())
            assert np.all(np.sign(x) == np.sign(j))
            mean, sd, cdf = truncated_normal(j, sigma, lo, hi)
            assert abs(x.mean() - mean) < Z * sd / math.sqrt(n), (s, t, x.mean(), mean)
            # standard error of a sample sd, near-normal data: sd / sqrt(2 n)
            assert abs(x.std() - sd) < Z * sd / math.sqrt(2 * n), (s, t, x.std(), sd)
            # Kolmogorov-Smirnov: sqrt(n) D > 2.7 has probability below 1e-6
            xs = np.sort(x)
            f = cdf(xs)
            d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
            assert math.sqrt(n) * d < 2.7, (s, t, d)


@pytest.mark.parametrize("kind", ["excitatory", "inhibitory"])
def test_delays_follow_the_cut_exponential(dpsnn_instance, kind):
    pops, src, d = dpsnn_instance["pops"], dpsnn_instance["src"], dpsnn_instance["d"]
    params = dpsnn_instance["net"].parameters
    first_i = pops["I"][0]
    sel = src < first_i if kind == "excitatory" else src >= first_i
    dmax = params["delay_max_exc_ms"] if kind == "excitatory" else params["delay_max_inh_ms"]
    x = d[sel]
    whole = np.rint(x)
    assert np.all(np.abs(x - whole) < 1e-9), "delays are whole milliseconds"
    x = whole.astype(np.int64)
    assert x.min() == 1 and x.max() == int(dmax)               # support 1 .. DMax ms, both ends reached
    values, prob = delay_law(dmax)
    n = x.size
    mean = float((values * prob).sum())
    sd = math.sqrt(float((values**2 * prob).sum()) - mean**2)
    assert abs(x.mean() - mean) < Z * sd / math.sqrt(n), (x.mean(), mean)
    observed = np.bincount(x - 1, minlength=int(dmax))
    expected = n * prob
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert chi2 < chi2_threshold(int(dmax) - 1), (chi2, chi2_threshold(int(dmax) - 1))
    # the published means: about 23 ms (excitatory), 6 ms (inhibitory)
    assert abs(mean - (23.0 if kind == "excitatory" else 6.1)) < 1.0


def test_delays_do_not_depend_on_the_target(dpsnn_instance):
    pops, src, tgt, d = (dpsnn_instance[k] for k in ("pops", "src", "tgt", "d"))
    ps, pt = pop_of(src, pops), pop_of(tgt, pops)
    for s in "FBI":
        dmax = 20.0 if s == "I" else 80.0
        values, prob = delay_law(dmax)
        mean = float((values * prob).sum())
        sd = math.sqrt(float((values**2 * prob).sum()) - mean**2)
        for t in "FBI":
            x = np.rint(d[(ps == s) & (pt == t)])
            assert abs(x.mean() - mean) < Z * sd / math.sqrt(x.size), (s, t, x.mean(), mean)


def _sorted(src, tgt, w, d):
    order = np.lexsort((tgt, src))
    return src[order], tgt[order], w[order], d[order]


def test_instance_independent_of_threads_and_placement():
    """The same seed gives the same synapses (source, target, weight bits, delay) whatever the
    threads and placement; another seed gives another instance."""
    n, k = 2048, 600
    ref = _sorted(*build(n, k)[2:])
    assert ref[0].size > 0.9 * n * k
    for threads, placement in [(2, "round-robin"), (1, "block"), (2, "block"), (2, "random")]:
        other = _sorted(*build(n, k, threads=threads, placement=placement)[2:])
        for name, a, b in zip(("source", "target", "weight", "delay"), ref, other):
            assert a.size == b.size, (threads, placement, name)
            assert np.array_equal(a, b), (threads, placement, name)
    reseeded = _sorted(*build(n, k, seed=2)[2:])
    assert not (reseeded[0].size == ref[0].size and np.array_equal(reseeded[1], ref[1]))


def test_delays_are_whole_steps_and_set_the_interval():
    """delay = offset + floor(x / step) * step on the grid (offset 0.3 ms, step 0.2 ms, h 0.1 ms):
    3, 5, 7, 9 or 11 steps with the cut-exponential law; the interval is the minimum delay."""
    params = {"tau_m_ms": 20.0, "theta_mV": 20.0, "reset_mV": 15.0, "tau_arp_ms": 2.0, "alpha_c": 1.0,
              "tau_c_ms": 100.0, "g_c_mV_per_ms": 0.0, "dc_mV_per_ms": 0.0}
    net = rv.Network(name="grid")
    net.add_population(rv.Population("A", 400, params))
    net.connect(rv.Projection(source="A", target="A", probability=0.2, weight=0.1, delay_offset_ms=0.3,
                              delay_scale_ms=1.0, delay_cut_ms=1.0, delay_step_ms=0.2))
    sim = rv.Simulation(net, threads=1, seed=1, resolution_ms=0.1)
    assert sim.steps_per_cycle == 3
    _, _, w, d = sim.connections()
    steps = np.asarray(d) / 0.1
    k = np.rint(steps).astype(np.int64)
    assert np.all(np.abs(steps - k) < 1e-9)
    np.testing.assert_allclose(w, 0.1, rtol=0, atol=1e-6)      # fixed point: within 2^-bits
    observed = np.bincount(k, minlength=12)
    assert set(np.flatnonzero(observed)) == {3, 5, 7, 9, 11}
    j = np.arange(5)
    prob = (np.exp(-0.2 * j) - np.exp(-0.2 * (j + 1))) / (1 - math.exp(-1.0))
    expected = k.size * prob
    chi2 = float(((observed[3::2] - expected) ** 2 / expected).sum())
    assert chi2 < chi2_threshold(4), chi2
