"""The LIF neuron with spike-frequency adaptation (LIFCA), integrated exactly on the grid.

Single populations without projections, every neuron's V and c recorded after every step
(column k of the trace is the state after step k + 1, at time (k + 1) h). The integration
is exact, so closed forms are compared with relative tolerances of 1e-9 (1e-12 for c).
"""
import math

import numpy as np
import pytest

import ranvier as rv

BASE = {"tau_m_ms": 20.0, "theta_mV": 20.0, "reset_mV": 15.0, "tau_arp_ms": 2.0,
        "alpha_c": 1.0, "tau_c_ms": 100.0, "g_c_mV_per_ms": 0.0, "dc_mV_per_ms": 0.0}
RTOL = 1e-9
Z_SE = 5.0             # standard errors allowed in statistical checks


def simulate(pops, ms, h=0.1, drives=(), threads=1, placement="round-robin", seed=1):
    """pops: (name, size, parameter overrides, initial). Returns (network, result)."""
    net = rv.Network(name="lifca")
    for name, size, params, *initial in pops:
        net.add_population(rv.Population(name, size, {**BASE, **params}, initial=(initial or ["reset"])[0]))
    for d in drives:
        net.drive(d)
    sim = rv.Simulation(net, threads=threads, placement=placement, seed=seed, resolution_ms=h,
                        record_state=list(range(net.size)))
    assert sim.steps_per_cycle == 1          # no projections: the interval is one step
    res = sim.run(ms)
    assert res.state["V"].shape == (net.size, round(ms / h))
    assert np.array_equal(res.state["ids"], np.arange(net.size))
    return net, res


def trace(res, gid):
    i = int(np.searchsorted(res.state["ids"], gid))
    assert res.state["ids"][i] == gid
    return np.asarray(res.state["V"][i], dtype=np.float64), np.asarray(res.state["c"][i], dtype=np.float64)


def spike_steps(res, gid):
    return res.spike_steps[res.spike_ids == gid]


def reference(params, h, steps, v0=None, inputs=None):
    """The engine's update rule in plain Python: V and c after each step, and spike steps."""
    tau_m, tau_c = params["tau_m_ms"], params["tau_c_ms"]
    theta, H = params["theta_mV"], params["reset_mV"]
    g, dc, alpha = params["g_c_mV_per_ms"], params["dc_mV_per_ms"], params["alpha_c"]
    R = round(params["tau_arp_ms"] / h)
    em, ec = math.exp(-h / tau_m), math.exp(-h / tau_c)
    kc = h * em if tau_m == tau_c else (ec - em) / (1 / tau_m - 1 / tau_c)
    V, c, r = (H if v0 is None else v0), 0.0, 0
    vs, cs, spikes, margins = np.empty(steps), np.empty(steps), [], []
    for k in range(1, steps + 1):
        if r > 0:
            r -= 1
            V = H
            c *= ec
        else:
            V = V * em + dc * tau_m * (1 - em) - g * c * kc
            c *= ec
            if inputs is not None:
                V += inputs[k - 1]
            margins.append(abs(V - theta))
            if V >= theta:
                spikes.append(k)
                V, c, r = H, c + alpha, R
        vs[k - 1], cs[k - 1] = V, c
    return vs, cs, np.array(spikes, dtype=np.int64), min(margins, default=np.inf)


def time_to_threshold(p):
    v_inf = p["dc_mV_per_ms"] * p["tau_m_ms"]
    return p["tau_m_ms"] * math.log((v_inf - p["reset_mV"]) / (v_inf - p["theta_mV"]))


# -- subthreshold dynamics ------------------------------------------------------------------

def test_decay_from_reset_is_pure_exponential():
    pops = [("plain", 2, {}), ("adapting", 2, {"g_c_mV_per_ms": 0.05}),
            ("fast", 1, {"tau_m_ms": 7.3, "tau_c_ms": 7.3, "g_c_mV_per_ms": 0.2})]
    net, res = simulate(pops, 100.0)
    assert res.spike_ids.size == 0
    t = 0.1 * np.arange(1, 1001)
    for pop in net.populations:
        expected = pop.params["reset_mV"] * np.exp(-t / pop.params["tau_m_ms"])
        for gid in range(pop.first_id, pop.first_id + pop.size):
            v, c = trace(res, gid)
            np.testing.assert_allclose(v, expected, rtol=RTOL, atol=0, err_msg=pop.name)
            assert np.all(c == 0.0), pop.name       # c = 0 stays 0: g_c has nothing to act on


@pytest.mark.parametrize("dc", [0.5, 0.95, -0.3])
def test_subthreshold_constant_drive(dc):
    """V relaxes to V_inf = dc tau_m (below, between H and theta, negative) exactly."""
    h = 0.1
    net, res = simulate([("p", 1, {"dc_mV_per_ms": dc, "tau_m_ms": 13.0})], 80.0, h=h)
    assert res.spike_ids.size == 0
    v, c = trace(res, 0)
    v_inf = dc * 13.0
    t = h * np.arange(1, v.size + 1)
    np.testing.assert_allclose(v, v_inf + (15.0 - v_inf) * np.exp(-t / 13.0), rtol=RTOL, atol=1e-12)
    assert np.all(c == 0.0)


# -- threshold, reset, refractoriness -----------------------------------------------------

REGULAR = [  # tau_m, tau_arp, dc, resolution: T/h well away from an integer
    (20.0, 2.0, 1.2, 0.1),     # T = 16.218 ms: first spike at step 163, period 20 + 163
    (10.0, 1.0, 2.5, 0.1),     # T = 6.931 ms: step 70, period 80
    (10.0, 0.0, 3.0, 0.1),     # no refractory period: T = 4.055 ms, step 41, period 41
    (20.0, 2.0, 1.2, 0.25),    # coarser grid: T/h = 64.87, step 65, R = 8
    (20.0, 3.0, 1.2, 0.05),    # finer grid: T/h = 324.36, step 325, R = 60
]


@pytest.mark.parametrize("tau_m,tau_arp,dc,h", REGULAR)
def test_regular_firing_under_constant_drive(tau_m, tau_arp, dc, h):
    p = {**BASE, "tau_m_ms": tau_m, "tau_arp_ms": tau_arp, "dc_mV_per_ms": dc, "g_c_mV_per_ms": 0.0}
    T = time_to_threshold(p)
    assert 0.05 < T / h - math.floor(T / h) < 0.95          # the test itself is well posed
    first = math.ceil(T / h)
    R = round(tau_arp / h)
    period = R + first
    steps = round(200.0 / h)
    net, res = simulate([("p", 3, p)], 200.0, h=h)
    expected = np.arange(first, steps + 1, period)
    assert expected.size >= 10
    for gid in range(3):
        assert np.array_equal(spike_steps(res, gid), expected), gid
    # spikes carry their step times, sorted by (time, id)
    ids, times = res.spikes
    np.testing.assert_allclose(times, np.repeat(expected, 3) * h, rtol=1e-12)
    assert np.array_equal(ids, np.tile(np.arange(3), expected.size))

    # the whole membrane trace: V = H at the spike step and the R held steps after it,
    # the exact exponential relaxation towards V_inf everywhere else
    v, c = trace(res, 0)
    k = np.arange(1, steps + 1)
    last = np.searchsorted(expected, k, side="right") - 1             # index of the last spike <= k
    free_since = np.where(last >= 0, expected[np.maximum(last, 0)] + R, 0)
    held = (last >= 0) & (k <= free_since)
    assert np.all(v[held] == 15.0)
    v_inf = dc * tau_m
    relax = v_inf + (15.0 - v_inf) * np.exp(-(k - free_since) * h / tau_m)
    np.testing.assert_allclose(v[~held], relax[~held], rtol=RTOL)
    assert v.max() < 20.0
    # the closed form is below threshold one step before each spike and above it at the spike step
    at = lambda k: v_inf + (15.0 - v_inf) * math.exp(-k * h / tau_m)      # noqa: E731
    assert at(first - 1) < 20.0 <= at(first)


def test_refractory_neuron_ignores_input_and_c_jumps_at_spikes():
    """Under a strong Poisson drive: V == H exactly at each spike step and the R held steps
    after it, no spike inside that window, c jumps by alpha_c exactly at spike steps and
    decays exactly otherwise."""
    h, ms, n = 0.1, 100.0, 20
    p = {**BASE, "tau_arp_ms": 2.0, "g_c_mV_per_ms": 0.01, "alpha_c": 0.5, "tau_c_ms": 80.0}
    n_syn, rate, w, sd = 400, 10.0, 0.5, 0.1
    net, res = simulate([("noisy", n, p)], ms, h=h, drives=[rv.PoissonDrive("noisy", n_syn, rate, weight=w, weight_sd=sd)])
    R, steps = 20, round(ms / h)
    em, ec = math.exp(-h / p["tau_m_ms"]), math.exp(-h / p["tau_c_ms"])
    kc = (ec - em) / (1 / p["tau_m_ms"] - 1 / p["tau_c_ms"])
    inputs = []
    total_spikes = 0
    for gid in range(n):
        v, c = trace(res, gid)
        s = spike_steps(res, gid)
        total_spikes += s.size
        assert s.size >= 5, "the drive should make every neuron fire repeatedly"
        assert np.all(np.diff(s) >= R + 1), "a spike inside the refractory period"
        held = np.zeros(steps + 1, dtype=bool)            # index = step number
        spiking = np.zeros(steps + 1, dtype=bool)
        spiking[s] = True
        for n0 in s:
            held[n0 + 1:n0 + R + 1] = True
            window = v[n0 - 1:min(n0 + R, steps)]          # columns of steps n0 .. n0 + R
            assert np.all(window == 15.0), (gid, n0)
        assert v.max() < 20.0
        c_prev = np.concatenate([[0.0], c[:-1]])
        jump = c - c_prev * ec
        np.testing.assert_allclose(jump[spiking[1:]], 0.5, rtol=1e-12)
        np.testing.assert_allclose(jump[~spiking[1:]], 0.0, atol=1e-12)
        # input of each free step = V after it minus the deterministic propagation of V before it
        v_prev = np.concatenate([[15.0], v[:-1]])
        free = ~held[1:] & ~spiking[1:]
        inputs.append((v - (v_prev * em - p["g_c_mV_per_ms"] * c_prev * kc))[free])
    x = np.concatenate(inputs)
    assert total_spikes == res.spike_ids.size
    # the drive is felt on free steps: about 1 - exp(-0.4) = 0.33 of them receive events (spike
    # steps, which select large inputs, are left out, so this is no test of the input law: see
    # test_poisson_drive_counts_per_step for that)
    received = np.mean(np.abs(x) > 1e-6)
    assert 0.25 < received < 0.40, received


# -- adaptation ----------------------------------------------------------------------------

def test_adaptation_variable_jumps_and_decays_exactly():
    """c(step k) = sum over spikes s <= k of alpha_c exp(-(k - s) h / tau_c)."""
    h = 0.1
    pops = [("free", 1, {"dc_mV_per_ms": 1.2, "alpha_c": 0.7, "tau_c_ms": 50.0}),
            ("adapting", 1, {"dc_mV_per_ms": 1.2, "alpha_c": 0.7, "tau_c_ms": 333.0, "g_c_mV_per_ms": 0.03}),
            ("inh", 1, {"dc_mV_per_ms": 2.5, "tau_m_ms": 10.0, "tau_arp_ms": 1.0, "alpha_c": 1.0,
                        "tau_c_ms": 100.0})]
    net, res = simulate(pops, 300.0, h=h)
    k = np.arange(1, 3001)
    for pop in net.populations:
        v, c = trace(res, pop.first_id)
        s = spike_steps(res, pop.first_id)
        assert s.size >= 5, pop.name
        lag = k[:, None] - s[None, :]
        expected = np.where(lag >= 0, pop.params["alpha_c"] * np.exp(-np.maximum(lag, 0) * h / pop.params["tau_c_ms"]),
                            0.0).sum(axis=1)
        assert np.all(c[: s[0] - 1] == 0.0), pop.name
        np.testing.assert_allclose(c[s[0] - 1:], expected[s[0] - 1:], rtol=1e-12, err_msg=pop.name)


@pytest.mark.parametrize("tau_c", [100.0, 20.0, 1000.0], ids=["tau_c=100", "tau_c=tau_m", "tau_c=1000"])
def test_exact_integration_with_adaptation(tau_c):
    """Between spikes, V(m + k) from the end of a refractory period m (V = H, c = c_m) is
    V_inf + (H - V_inf) e^{-t/tau_m} - g_c c_m (e^{-t/tau_c} - e^{-t/tau_m}) / (1/tau_m - 1/tau_c)
    (or - g_c c_m t e^{-t/tau_m} when tau_c = tau_m), with t = k h: the exact solution of the
    linear equations over many steps, not just one."""
    h, ms = 0.1, 300.0
    tau_m, g, dc, H = 20.0, 0.05, 1.2, 15.0
    p = {**BASE, "tau_c_ms": tau_c, "g_c_mV_per_ms": g, "dc_mV_per_ms": dc, "alpha_c": 1.0}
    net, res = simulate([("p", 1, p)], ms, h=h)
    v, c = trace(res, 0)
    s = spike_steps(res, 0)
    assert s.size >= 5
    R, steps, v_inf = 20, round(ms / h), dc * tau_m
    starts = np.concatenate([[0], s + R])
    ends = np.concatenate([s, [steps + 1]])             # next spike (exclusive)
    checked = 0
    for m, e in zip(starts, ends):
        if m >= steps:
            break
        c_m = 0.0 if m == 0 else c[m - 1]
        if m > 0:
            assert v[m - 1] == H
        kk = np.arange(1, e - m)
        t = kk * h
        if tau_c == tau_m:
            adapt = g * c_m * t * np.exp(-t / tau_m)
        else:
            adapt = g * c_m * (np.exp(-t / tau_c) - np.exp(-t / tau_m)) / (1 / tau_m - 1 / tau_c)
        expected = v_inf + (H - v_inf) * np.exp(-t / tau_m) - adapt
        np.testing.assert_allclose(v[m + kk - 1], expected, rtol=RTOL, err_msg=f"interval from step {m}")
        np.testing.assert_allclose(c[m + kk - 1], c_m * np.exp(-t / tau_c), rtol=1e-12)
        checked += kk.size
    assert checked > steps // 2
    # the same, step by step, against the reference update rule, spike steps included
    rv_, rc, rs, margin = reference(p, h, steps)
    assert margin > 1e-6                                  # no crossing is a rounding coin toss
    assert np.array_equal(s, rs)
    np.testing.assert_allclose(v, rv_, rtol=RTOL)
    np.testing.assert_allclose(c, rc, rtol=1e-12, atol=0)


def test_spike_frequency_adaptation_lengthens_the_period():
    """With g_c > 0 every spike adds to c and the next interval is longer; with g_c = 0 the
    period is constant. The spike steps are those of the reference update rule."""
    h, ms = 0.1, 600.0
    exc = {"dc_mV_per_ms": 1.2, "g_c_mV_per_ms": 0.02, "tau_c_ms": 1000.0, "alpha_c": 1.0}
    pops = [("adapting", 1, exc), ("control", 1, {**exc, "g_c_mV_per_ms": 0.0})]
    net, res = simulate(pops, ms, h=h)
    isi = np.diff(spike_steps(res, 0))
    isi_control = np.diff(spike_steps(res, 1))
    assert isi.size >= 10
    assert np.all(isi_control == isi_control[0]) and isi_control[0] == 20 + 163
    assert np.all(np.diff(isi) >= 0), isi                 # never shorter than the one before
    assert isi[0] > isi_control[0]                          # c = 1 after the first spike already slows it
    assert isi[-1] >= isi[0] + 10, isi                      # and it keeps slowing down
    assert np.all(np.diff(isi[:4]) > 0), isi                # strictly, while c grows fast
    _, _, rs, margin = reference({**BASE, **exc}, h, round(ms / h))
    assert margin > 1e-6
    assert np.array_equal(spike_steps(res, 0), rs)


# -- initial state -------------------------------------------------------------------------

def test_uniform_initial_state_is_uniform_and_decomposition_invariant():
    """initial = 'uniform': V(0) ~ U[H, theta), drawn from the neuron's id (same for any threads
    or placement). With no drive V(0) = V(h) / exp(-h / tau_m)."""
    h, n = 0.1, 4000
    pops = [("u", n, {}, "uniform")]
    v0 = {}
    for threads, placement in [(1, "round-robin"), (2, "round-robin"), (2, "block"), (2, "random")]:
        net, res = simulate(pops, 0.1, h=h, threads=threads, placement=placement, seed=3)
        v0[(threads, placement)] = np.asarray(res.state["V"][:, 0], dtype=np.float64) / math.exp(-h / 20.0)
    ref = v0[(1, "round-robin")]
    for key, v in v0.items():
        assert np.array_equal(v, ref), key
    assert np.all(ref >= 15.0 - 1e-12) and np.all(ref < 20.0)
    # Kolmogorov-Smirnov against U[15, 20): sqrt(n) D > 2.7 has probability below 1e-6
    u = np.sort((ref - 15.0) / 5.0)
    d = max(np.max(np.arange(1, n + 1) / n - u), np.max(u - np.arange(n) / n))
    assert math.sqrt(n) * d < 2.7, d
    # and another seed draws other values
    _, res = simulate(pops, 0.1, h=h, seed=4)
    assert not np.array_equal(res.state["V"][:, 0], v0[(1, "round-robin")] * math.exp(-h / 20.0))


# -- external Poisson drive ----------------------------------------------------------------

@pytest.mark.parametrize("cycle_steps", [1, 10], ids=["interval=1step", "interval=10steps"])
def test_poisson_drive_counts_per_step(cycle_steps):
    """n_syn Poisson trains at rate nu into a neuron: the number of events in a step is
    Poisson(n_syn nu h). With a fixed efficacy w (sd 0) and an unreachable threshold, the input
    of step k is exactly (V_k - V_{k-1} e^{-h/tau_m}) = count * w, so the counts are observed.
    With a communication interval of 10 steps (a projection with no synapses sets it) the
    events of a cycle must still fall uniformly on its steps."""
    h, ms, n = 0.1, 50.0, 200
    n_syn, rate, w = 400, 10.0, 0.25
    p = {**BASE, "theta_mV": 1e9, "tau_arp_ms": 0.0}
    net = rv.Network(name="drive")
    net.add_population(rv.Population("p", n, p))
    net.drive(rv.PoissonDrive("p", n_syn, rate, weight=w))
    if cycle_steps > 1:
        net.connect(rv.Projection(source="p", target="p", probability=0.0, weight=0.1,
                                  delay_ms=cycle_steps * h))
    sim = rv.Simulation(net, threads=1, seed=5, resolution_ms=h, record_state=list(range(n)))
    assert sim.steps_per_cycle == cycle_steps
    res = sim.run(ms)
    v = np.asarray(res.state["V"], dtype=np.float64)
    prev = np.concatenate([np.full((n, 1), 15.0), v[:, :-1]], axis=1)
    x = v - prev * math.exp(-h / p["tau_m_ms"])
    k = np.rint(x / w).astype(np.int64)
    assert np.all(np.abs(x - k * w) < 1e-9), "inputs are whole multiples of the fixed efficacy"
    assert np.all(k >= 0)
    assert res.counters["synaptic_events_external"] == k.sum()
    lam = n_syn * rate * h * 1e-3                         # 0.4 events per step
    samples = k.size
    assert abs(k.mean() - lam) < Z_SE * math.sqrt(lam / samples), (k.mean(), lam)
    assert abs(k.var() - lam) < Z_SE * math.sqrt((lam + 2 * lam**2) / samples), (k.var(), lam)
    # chi-square of the count histogram against Poisson(lam): bins 0, 1, 2, 3, >= 4
    pmf = np.array([math.exp(-lam) * lam**j / math.factorial(j) for j in range(4)])
    expected = samples * np.append(pmf, 1 - pmf.sum())
    observed = np.bincount(np.minimum(k.ravel(), 4), minlength=5)
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert chi2 < 35.0, (observed, expected.round())      # 4 degrees of freedom: P(chi2 > 35) < 1e-6
    # events are spread evenly over the steps of a cycle
    by_offset = k.reshape(n, -1, cycle_steps).sum(axis=(0, 1))
    per_offset = samples / cycle_steps * lam
    assert np.all(np.abs(by_offset - per_offset) < Z_SE * math.sqrt(per_offset)), by_offset
    # every neuron has its own stream
    assert not np.array_equal(k[0], k[1])


def test_poisson_drive_efficacies_are_gaussian():
    """Each external event adds an efficacy drawn from N(w, sd): steps with exactly one event
    (input near w, far from 0 and 2w when sd << w) show that law."""
    h, ms, n = 0.1, 50.0, 200
    w, sd = 1.0, 0.05
    p = {**BASE, "theta_mV": 1e9, "tau_arp_ms": 0.0}
    net = rv.Network(name="drive")
    net.add_population(rv.Population("p", n, p))
    net.drive(rv.PoissonDrive("p", 400, 10.0, weight=w, weight_sd=sd))
    res = rv.Simulation(net, threads=1, seed=6, resolution_ms=h, record_state=list(range(n))).run(ms)
    v = np.asarray(res.state["V"], dtype=np.float64)
    prev = np.concatenate([np.full((n, 1), 15.0), v[:, :-1]], axis=1)
    x = (v - prev * math.exp(-h / p["tau_m_ms"])).ravel()
    one = x[np.abs(x - w) < 10 * sd]
    assert one.size > 20000                                   # about 0.27 of 100000 steps
    assert abs(one.mean() - w) < Z_SE * sd / math.sqrt(one.size), one.mean()
    assert abs(one.std() - sd) < Z_SE * sd / math.sqrt(2 * one.size), one.std()
    # The whole law, tails included: the central 95 % of events are drawn in single precision from
    # 2^23 cells of the uniform, the rest by the tails' formula in double (cpp/core/drive.cpp), so
    # the seam at p = 0.02425 (z = -1.97) and each tail's sign are checked too.
    z = np.sort((one - w) / sd)
    normal_cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in z])
    n = z.size
    ks = max(np.max(np.arange(1, n + 1) / n - normal_cdf), np.max(normal_cdf - np.arange(n) / n))
    assert math.sqrt(n) * ks < 1.95, ks                     # Kolmogorov-Smirnov, P(> 1.95) = 0.001
    for beyond in (1.5, 1.97, 2.5, 3.0):                    # each tail alone, at and past the seam
        p_tail = 0.5 * math.erfc(beyond / math.sqrt(2.0))
        for count in (np.count_nonzero(z < -beyond), np.count_nonzero(z > beyond)):
            assert abs(count - n * p_tail) < Z_SE * math.sqrt(n * p_tail), (beyond, count, n * p_tail)
