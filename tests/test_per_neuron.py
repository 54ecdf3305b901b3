"""Per-neuron parameters: arrays of one value per neuron, and distributions (ranvier.core.random) that
the engine draws per neuron from Philox keyed by (seed, global id, the parameter).

- a neuron of a heterogeneous population behaves as the single neuron of its parameters: the
  firing times of LIF neurons under constant drive, each with its own threshold, drive, time
  constant, reset, refractory period, resting and initial potential, against the closed form,
  for every membrane model; the values come from `Simulation.neuron_values`, so this also checks
  that what it reports is what the engine uses;
- a population whose per-neuron values are all the same (arrays, and distributions of zero
  spread) gives exactly the spikes and traces of the homogeneous one (the per-neuron update runs
  the scalar step; homogeneous populations run the vector kernels);
- the same spikes on any ranks x threads x placement x exchange (tests/mpi_runner.py,
  heterogeneous_network);
- the distributions' values have their mean and sd, and each parameter its own draws;
- bad arrays, distributions that can draw bad values, and parameters that take one number are
  refused in one line that names the parameter (and the first bad neuron).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ranvier as rv
from ranvier.core.random import Lognormal, Normal, Uniform

H = 0.1
Z_SE = 5.0                      # standard errors allowed in statistical checks


# -- single neurons against the closed form -------------------------------------------------------
def drift_network(model: str, n: int):
    """n unconnected neurons of `model` whose parameters all vary, each under a constant drive."""
    index = np.arange(n)
    if model == "lifca":
        params = {"tau_m_ms": Normal(10.0, 1.0), "theta_mV": Uniform(12.0, 16.0), "reset_mV": Uniform(-2.0, 2.0),
                  "tau_arp_ms": 1.0 + index % 3, "dc_mV_per_ms": np.linspace(1.0, 3.0, n)}
        initial = Uniform(0.0, 5.0)
    else:
        params = {"E_L_mV": Normal(-70.0, 2.0), "V_th_mV": Normal(-55.0, 1.0), "V_reset_mV": np.linspace(-75, -65, n),
                  "C_m_pF": Uniform(200.0, 300.0), "tau_m_ms": Lognormal(math.log(10.0), 0.1),
                  "tau_arp_ms": 1.0 + index % 3, "I_e_pA": np.linspace(200.0, 600.0, n)}
        params["tau_syn_ms" if model == "psc_exp" else "tau_syn_ex_ms"] = Uniform(0.5, 2.0)
        initial = Normal(-75.0, 1.0)              # absolute: below every threshold
    net = rv.Network()
    net.add_population(rv.Population("N", n, params, model=model, initial=initial))
    return net


def reference_steps(V0, reset, theta, V_inf, tau, ref_steps, last_step):
    """Spike steps of dV/dt = (V_inf - V) / tau from V0, threshold theta, V held at reset for
    ref_steps steps after each spike: the step of a crossing at t is ceil(t / h)."""
    def steps_to_threshold(v):
        if V_inf <= theta:
            return None
        x = tau * math.log((V_inf - v) / (V_inf - theta)) / H
        assert abs(x - round(x)) > 1e-7, "a crossing too close to the grid to predict"
        return math.ceil(x)
    out, first = [], steps_to_threshold(V0)
    if first is None:
        return out
    step, period = first, ref_steps + steps_to_threshold(reset)
    while step <= last_step:
        out.append(step)
        step += period
    return out


@pytest.mark.parametrize("model", ["lifca", "psc_exp", "iaf_psc_alpha"])
def test_each_neuron_fires_as_the_closed_form_of_its_own_parameters(model):
    n, ms = 60, 200.0
    sim = rv.Simulation(drift_network(model, n), threads=2, seed=11, resolution_ms=H)
    res = sim.run(ms)
    value = lambda name: sim.neuron_values("N", name)            # noqa: E731
    tau, ref = value("tau_m_ms"), np.rint(value("tau_arp_ms") / H).astype(int)
    if model == "lifca":
        V0, reset, theta, V_inf = value("initial"), value("reset_mV"), value("theta_mV"), value("dc_mV_per_ms") * tau
    else:
        E_L = value("E_L_mV")
        V0, reset, theta = value("initial") - E_L, value("V_reset_mV") - E_L, value("V_th_mV") - E_L
        V_inf = value("I_e_pA") * tau / value("C_m_pF")
    assert np.unique(theta).size == n and np.unique(tau).size == n      # really one value per neuron
    firing = 0
    for k in range(n):
        expected = reference_steps(V0[k], reset[k], theta[k], V_inf[k], tau[k], ref[k], round(ms / H))
        assert np.array_equal(res.spike_steps[res.spike_ids == k], expected), f"neuron {k}"
        firing += bool(expected)
    assert 10 < firing < n                      # some neurons fire, some stay below threshold


# -- constant per-neuron values are the homogeneous population ------------------------------------
HOMOGENEOUS = {
    "lifca": ({"tau_m_ms": 20.0, "theta_mV": 20.0, "reset_mV": 10.0, "tau_arp_ms": 2.0, "alpha_c": 1.0,
               "tau_c_ms": 100.0, "g_c_mV_per_ms": 0.02, "dc_mV_per_ms": 0.1}, 0.5, 0.4, "uniform"),
    "psc_exp": ({"E_L_mV": -65.0, "V_th_mV": -50.0, "V_reset_mV": -65.0, "C_m_pF": 250.0, "tau_m_ms": 10.0,
                 "tau_syn_ms": 0.5, "tau_arp_ms": 2.0, "I_e_pA": 100.0, "V0_mean_mV": -58.0, "V0_sd_mV": 5.0},
                60.0, 87.5, "reset"),
    "iaf_psc_alpha": ({"E_L_mV": -65.0, "V_th_mV": -50.0, "V_reset_mV": -65.0, "C_m_pF": 250.0, "tau_m_ms": 10.0,
                       "tau_syn_ex_ms": 0.5, "tau_syn_in_ms": 2.0, "tau_arp_ms": 2.0, "I_e_pA": 100.0,
                       "V0_mean_mV": -58.0, "V0_sd_mV": 5.0}, 60.0, 87.5, "reset"),
}


def recurrent_run(model, params, initial="reset", n=400, ms=200.0):
    _, w, drive_w, _ = HOMOGENEOUS[model]
    net = rv.Network()
    net.add_population(rv.Population("A", n, params, model=model, initial=initial))
    net.connect(rv.Projection(source="A", target="A", probability=0.1, weight=w, delay_offset_ms=1.0, delay_scale_ms=1.0, delay_cut_ms=3.0,
                              delay_step_ms=0.1))
    net.drive(rv.PoissonDrive("A", 100, 100.0, weight=drive_w))
    res = rv.Simulation(net, threads=2, seed=4, record_state=list(range(0, n, 7))).run(ms)
    return res


@pytest.mark.parametrize("model", sorted(HOMOGENEOUS))
def test_constant_per_neuron_values_give_the_homogeneous_spikes(model):
    params, _, _, initial = HOMOGENEOUS[model]
    n = 400
    ref = recurrent_run(model, dict(params), initial)
    assert ref.spike_ids.size > 500
    per = {}
    for i, (key, value) in enumerate(params.items()):
        if key.startswith("V0_"):
            per[key] = value                                     # the initial state's: one number
        elif i % 2:
            per[key] = Normal(value, 0.0)                        # drawn, always the same value
        else:
            per[key] = np.full(n, value)
    run = recurrent_run(model, per, initial)
    assert np.array_equal(run.spike_ids, ref.spike_ids) and np.array_equal(run.spike_steps, ref.spike_steps)
    assert np.array_equal(run.state["V"], ref.state["V"]) and np.array_equal(run.state["c"], ref.state["c"])
    # An initial potential per neuron that is the homogeneous one: the same run again.
    if model == "lifca":
        same = recurrent_run(model, dict(params, reset_mV=np.full(n, params["reset_mV"])), np.full(n, 10.0))
        reset = recurrent_run(model, dict(params), "reset")
        assert np.array_equal(same.spike_ids, reset.spike_ids) and np.array_equal(same.state["V"], reset.state["V"])


# -- decomposition invariance ---------------------------------------------------------------------
@pytest.mark.parametrize("ranks,threads,placement,exchange", [(1, 2, "round-robin", "allgather"),
                                                             (2, 1, "block", "alltoallv"),
                                                             (2, 2, "round-robin", "allgather"),
                                                             (3, 2, "block", "p2p"),
                                                             (3, 1, "random", "allgather")])
def test_spikes_identical_for_any_decomposition(workloads, ranks, threads, placement, exchange):
    """Per-neuron arrays and distributions of every membrane model, per-neuron initial potentials
    (tests/mpi_runner.py: heterogeneous_network): the same spikes and traces on any decomposition."""
    kw = dict(model="heterogeneous", neurons=1000, probability=0.05, ms=200.0)
    ref = workloads(1, threads=1, exchange="allgather", placement="round-robin", **kw)
    run = workloads(ranks, threads=threads, exchange=exchange, placement=placement, **kw)
    assert ref["ids"].size > 2000
    for first, size in zip(ref["population_first_ids"], ref["population_sizes"]):
        assert np.count_nonzero((ref["ids"] >= first) & (ref["ids"] < first + size)) > size // 2
    assert run["digest"] == ref["digest"]
    assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"])
    assert np.array_equal(run["state_ids"], ref["state_ids"]) and np.array_equal(run["state_V"], ref["state_V"])


# -- the values ------------------------------------------------------------------------------------
def big_population(**params):
    pop = rv.Population("B", 20000, params)
    net = rv.Network()
    net.add_population(rv.Population("before", 77))                 # so that B's ids start at 77
    net.add_population(pop)
    return net, pop


@pytest.mark.parametrize("dist, mean, sd", [(Normal(5.0, 2.0), 5.0, 2.0),
                                            (Uniform(1.0, 3.0), 2.0, 2.0 / math.sqrt(12.0)),
                                            (Lognormal(0.5, 0.4), math.exp(0.58), math.exp(0.58) * math.sqrt(math.expm1(0.16)))])
def test_distributions_have_their_mean_and_sd(dist, mean, sd):
    net, pop = big_population(dc_mV_per_ms=dist, reset_mV=dist, theta_mV=100.0)
    x = pop.neuron_values("dc_mV_per_ms", seed=3)
    n = x.size
    assert (dist.mean, dist.sd) == pytest.approx((mean, sd), rel=1e-12)
    assert abs(x.mean() - mean) < Z_SE * sd / math.sqrt(n)
    assert abs(x.std() - sd) < Z_SE * sd * math.sqrt(2.0 / n) * 2      # kurtosis of the lognormal: some room
    lo, hi = dist.bounds()
    assert lo <= x.min() and x.max() <= hi
    if isinstance(dist, Lognormal):
        assert abs(np.log(x).mean() - 0.5) < Z_SE * 0.4 / math.sqrt(n)
    # Drawn per parameter, per seed and per neuron: other draws, yet the same for the same ids.
    other = pop.neuron_values("reset_mV", seed=3)
    assert abs(np.corrcoef(x, other)[0, 1]) < Z_SE / math.sqrt(n)
    assert not np.array_equal(x, pop.neuron_values("dc_mV_per_ms", seed=4))
    assert np.array_equal(x, rv.Simulation(net, threads=1, seed=3).neuron_values("B", "dc_mV_per_ms"))


def test_values_read_back():
    pop = rv.Network().add_population(rv.Population("E", 5, {"theta_mV": [15, 16, 17, 18, 19]},
                                                    initial=np.arange(5.0)))
    assert np.array_equal(pop.neuron_values("theta_mV"), [15, 16, 17, 18, 19])
    assert np.array_equal(pop.neuron_values("tau_m_ms"), np.full(5, 10.0))      # the default, repeated
    assert np.array_equal(pop.neuron_values("initial"), np.arange(5.0))
    assert pop.params["theta_mV"].dtype == np.float64
    with pytest.raises(rv.ConfigError, match="no parameter 'V_th_mV'"):
        pop.neuron_values("V_th_mV")
    with pytest.raises(rv.ConfigError, match="'initial' is 'reset', not set per neuron"):
        rv.Population("F", 5).neuron_values("initial")
    assert repr(Normal(1, 2)) == "Normal(mean=1, sd=2)" and repr(Uniform(0, 1.5)) == "Uniform(low=0, high=1.5)"
    assert repr(Lognormal(0, 0.5)) == "Lognormal(mu=0, sigma=0.5)"


# -- errors ---------------------------------------------------------------------------------------
LIF = {"theta_mV": 15.0, "reset_mV": 0.0}
BAD = [
    ("lifca", {"theta_mV": np.full(9, 15.0)}, "reset",
     r"population 'A': 'theta_mV' has shape \(9,\) for 10 neurons; give one number, one value per neuron or a distribution"),
    ("lifca", {"theta_mV": np.full((10, 1), 15.0)}, "reset", r"'theta_mV' has shape \(10, 1\) for 10 neurons"),
    ("lifca", {"theta_mV": [15.0] * 3 + [math.nan] + [15.0] * 6}, "reset",
     r"'theta_mV' must be a finite number for every neuron; neuron 3 has nan"),
    ("lifca", {"theta_mV": ["x"] * 10}, "reset", r"'theta_mV' must be numbers, one per neuron"),
    ("lifca", {"tau_m_ms": [10.0] * 4 + [-1.0] + [10.0] * 5}, "reset",
     r"'tau_m_ms' must be positive for every neuron; neuron 4 has -1.0"),
    ("lifca", {"alpha_c": [0.0] * 9 + [-0.5]}, "reset", r"'alpha_c' must be zero or positive for every neuron; neuron 9"),
    ("lifca", {"reset_mV": [0.0, 0.0, 16.0] + [0.0] * 7}, "reset",
     r"'reset_mV' must be below 'theta_mV' for every neuron; neuron 2: 'reset_mV' = 16.0, 'theta_mV' = 15.0"),
    ("lifca", {"tau_m_ms": Normal(10.0, 3.0)}, "reset",
     r"'tau_m_ms' must be positive for every neuron, but Normal\(mean=10, sd=3\) draws values down to -9.0"),
    ("lifca", {"theta_mV": Normal(15.0, 3.0)}, "reset",
     r"'reset_mV' must be below 'theta_mV' for every neuron; neuron 0: 'reset_mV' = 0.0, "
     r"'theta_mV' = Normal\(mean=15, sd=3\) down to -4.0"),
    ("lifca", {}, [0.0] * 11, r"'initial' has shape \(11,\) for 10 neurons"),
    ("lifca", {}, "nonsense", r"'initial' must be one of \('reset', 'uniform'\), an array of one potential"),
    ("psc_exp", {"V0_mean_mV": np.full(10, -60.0)}, "reset",
     r"'V0_mean_mV' cannot vary per neuron in model 'psc_exp'; give one number \(per neuron: E_L_mV, "),
    ("psc_exp", {"V0_sd_mV": 2.0}, Normal(-60.0, 2.0),
     r"'initial' sets the initial potential per neuron, and so do \['V0_sd_mV'\]; give one of the two"),
    ("psc_exp", {}, "uniform", r"'initial' must be one of \('reset',\)"),
    ("psc_exp", {"V_reset_mV": Uniform(-70.0, -50.0)}, "reset", r"'V_reset_mV' must be below 'V_th_mV'"),
    ("iaf_psc_alpha", {"tau_syn_in_ms": Uniform(-1.0, 1.0)}, "reset",
     r"'tau_syn_in_ms' must be positive for every neuron, but Uniform\(low=-1, high=1\) draws values down to -1"),
    ("poisson_source", {"rate_hz": Normal(5.0, 1.0), "stop_ms": 10.0}, "reset",
     r"'rate_hz' can vary per neuron in model 'poisson_source' as an array of one value per neuron, not as a "
     r"distribution$"),
    ("poisson_source", {"rate_hz": np.full(10, -1.0), "stop_ms": 10.0}, "reset",
     r"per neuron, 'rate_hz' must be finite numbers >= 0$"),
    ("artificial", {"isi_min_ms": 10.0, "isi_max_ms": 20.0}, np.zeros(10),
     r"population 'A': model 'artificial' has no membrane potential; leave 'initial' at 'reset'"),
]


@pytest.mark.parametrize("model, params, initial, message", BAD, ids=[m[-1][:40] for m in BAD])
def test_bad_per_neuron_values_are_refused_in_one_line(model, params, initial, message):
    base = LIF if model == "lifca" else {}
    with pytest.raises(rv.ConfigError, match=message) as e:
        rv.Network().add_population(rv.Population("A", 10, {**base, **params}, model=model, initial=initial))
    assert "\n" not in str(e.value)


def test_refractory_periods_per_neuron_must_be_whole_steps():
    net = rv.Network()
    net.add_population(rv.Population("A", 3, {"tau_arp_ms": [1.0, 0.25, 2.0]}))
    with pytest.raises(rv.ConfigError, match=r"population 'A': 'tau_arp_ms' of neuron 1 = 0.25 ms is not a multiple "
                                             r"of the resolution 0.1 ms"):
        net.validate(0.1)
    net = rv.Network()                                          # drawn ones are rounded to whole steps
    net.add_population(rv.Population("A", 3, {"tau_arp_ms": Uniform(1.0, 3.0)}))
    net.validate(0.1)


@pytest.mark.parametrize("make, message", [(lambda: Uniform(3.0, 1.0), r"Uniform: 'low' \(3.0\) must be below 'high'"),
                                           (lambda: Normal(0.0, -1.0), r"Normal: 'sd' must be zero or positive"),
                                           (lambda: Lognormal(math.nan, 1.0), r"Lognormal: 'mu' must be a finite"),
                                           (lambda: Normal("1", 1.0), r"Normal: 'mean' must be a finite number")])
def test_bad_distributions_are_refused(make, message):
    with pytest.raises(rv.ConfigError, match=message):
        make()
