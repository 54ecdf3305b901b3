"""iaf_cond_alpha (NEST's iaf_cond_alpha; PyNN's IF_cond_alpha): LIF with alpha-shaped
conductances, integrated with NEST's adaptive Runge-Kutta-Fehlberg scheme as iaf_cond_exp is.

Column k of a trace is V after step k + 1, at (k + 1) h. Checks:
- without NEST: one excitatory spike gives g_ex(t) = w e / tau t exp(-t / tau), peak w at t = tau
  (an exponential kernel would peak in the step the spike arrives), and g_in likewise for an
  inhibitory one; spike trains and a current against a reference integration of the same
  equations (classical Runge-Kutta, 200 substeps a step), the same spike steps;
- with NEST 3.10 (skipped when `nest` is not importable): one neuron driven by spike trains
  (excitatory and inhibitory weights) and a constant current, NEST's model fed the same spikes
  with the same delay; V within 1e-6 mV on the grid (as iaf_cond_exp), the same spike steps;
  PyNN's IF_cond_alpha through pyNN.ranvier against NEST's iaf_cond_alpha run directly;
- the same spikes and traces for any ranks x threads x placement x exchange: tests/mpi_runner.py's
  pynn_cells_network has iaf_cond_alpha populations (tests/test_pynn_cells.py).
"""
import math

import numpy as np
import pytest

import ranvier as rv
from test_pynn_cells import (COND_EXP, COND_INPUTS, DELAY_MS, H, compare, nest_one_cell, nest_run, pynn_one_cell,
                             runge_kutta_reference, simulate, trains)

COND_ALPHA = dict(COND_EXP)          # NEST's defaults but I_e (280 pA: the neuron fires)


def alpha(t, w, tau):
    """The conductance (nS) of a spike of weight w (nS) at t = 0: w e / tau t exp(-t / tau)."""
    return np.where(t > 0, w * math.e / tau * t * np.exp(-t / tau), 0.0)


def arrival_step(t_ms):
    """The step whose input a spike at t_ms takes (its jump acts from the next step on)."""
    return round(t_ms / H) - 1 + round(DELAY_MS / H)


def test_one_spike_gives_the_alpha_conductance():
    """g_ex after one excitatory spike is the alpha function, its peak w at t = tau_syn_ex: the
    alpha kernel, not an exponential one (whose peak is the jump itself, in the arrival step).
    The inhibitory conductance likewise (Result.state["c_in"])."""
    params = {**COND_ALPHA, "I_e_pA": 0.0, "tau_syn_ex_ms": 2.0, "tau_syn_in_ms": 5.0}
    w_ex, w_in = 4.0, -3.0
    net = rv.Network(name="cell")
    net.add_population(rv.Population("s", 1, {"spike_times_ms": [5.0]}, model="spike_train"))
    net.add_population(rv.Population("i", 1, {"spike_times_ms": [30.0]}, model="spike_train"))
    net.add_population(rv.Population("n", 1, dict(params), model="iaf_cond_alpha"))
    net.connect(rv.Projection(source="s", target="n", probability=1.0, weight=w_ex, delay_ms=DELAY_MS))
    net.connect(rv.Projection(source="i", target="n", probability=1.0, weight=w_in, delay_ms=DELAY_MS))
    res = rv.Simulation(net, threads=1, resolution_ms=H, record_state=[2]).run(80.0)
    g_ex = np.asarray(res.state["c"][0], dtype=np.float64)
    g_in = np.asarray(res.state["c_in"][0], dtype=np.float64)
    V = np.asarray(res.state["V"][0], dtype=np.float64)
    assert np.asarray(res.spike_ids).size == 2                   # the two inputs; the neuron stays quiet
    k = np.arange(g_ex.size)
    for g, t0, w, tau in ((g_ex, 5.0, w_ex, 2.0), (g_in, 30.0, -w_in, 5.0)):
        s0 = arrival_step(t0)
        elapsed = (k - s0) * H                                   # column k: after step k + 1
        expected = alpha(elapsed, w, tau)
        assert np.max(np.abs(g - expected)) < 1e-5, np.max(np.abs(g - expected))
        peak = int(np.argmax(g))
        assert peak == s0 + round(tau / H)                       # the peak at tau after the arrival
        assert abs(g[peak] - w) < 1e-6                           # of the weight: NEST's normalisation
        assert g[s0] == 0.0 and 0 < g[s0 + 1] < 0.2 * w          # rises from zero (e h / tau w), no jump
    # The PSP follows: V rises after the excitatory spike, past the conductance's peak, and falls
    # below rest after the inhibitory one.
    s_ex, s_in = arrival_step(5.0), arrival_step(30.0)
    assert np.argmax(V[:s_in]) > s_ex + round(2.0 / H) and V[:s_in].max() > 0.1
    assert V[s_in:].min() < -0.05


def test_the_exponential_model_would_fail_the_alpha_check():
    """The same spike into iaf_cond_exp: its g_ex jumps to w in the arrival step and peaks there,
    so the checks above tell the two kernels apart."""
    params = {**COND_ALPHA, "I_e_pA": 0.0, "tau_syn_ex_ms": 2.0}
    inputs = [(np.array([5.0]), 4.0)]
    _, c_exp, _ = simulate("iaf_cond_exp", params, inputs, 40.0)
    _, c_alpha, _ = simulate("iaf_cond_alpha", params, inputs, 40.0)
    s0 = arrival_step(5.0)
    assert int(np.argmax(c_exp)) == s0 and int(np.argmax(c_alpha)) == s0 + 20
    assert np.max(np.abs(c_exp - alpha((np.arange(c_exp.size) - s0) * H, 4.0, 2.0))) > 1.0


def cond_alpha_reference(params, inputs, ms, substeps=200):
    """The same model integrated with the classical Runge-Kutta method, `substeps` per step, in
    NumPy: V (absolute) after each step and the spike steps (as Result.spike_steps)."""
    p = params
    steps = round(ms / H)
    jump_ex, jump_in = np.zeros(steps), np.zeros(steps)
    for times, w in inputs:
        for t in times:
            s = arrival_step(t)
            if s < steps:
                if w > 0:
                    jump_ex[s] += w * math.e / p["tau_syn_ex_ms"]
                else:
                    jump_in[s] -= w * math.e / p["tau_syn_in_ms"]
    tau_ex, tau_in = p["tau_syn_ex_ms"], p["tau_syn_in_ms"]

    def rhs(y, refractory):           # y: V, dg_ex, g_ex, dg_in, g_in
        v = p["V_reset_mV"] if refractory else min(y[0], p["V_th_mV"])
        dv = 0.0 if refractory else (-p["g_L_nS"] * (v - p["E_L_mV"]) + p["I_e_pA"] - y[2] * (v - p["E_ex_mV"])
                                     - y[4] * (v - p["E_in_mV"])) / p["C_m_pF"]
        return np.array([dv, -y[1] / tau_ex, y[1] - y[2] / tau_ex, -y[3] / tau_in, y[3] - y[4] / tau_in])

    return runge_kutta_reference(rhs, [p["V0_mean_mV"], 0.0, 0.0, 0.0, 0.0], p, {1: jump_ex, 3: jump_in}, substeps)


def test_iaf_cond_alpha_against_reference_integration():
    """NEST's scheme (RKF45, absolute tolerance 1e-3) against the converged solution: the same
    spike steps, V within 1e-4 mV (measured: docs/neuron-models.md)."""
    ms = 100.0
    inputs = list(zip(trains(ms, seed=2), COND_INPUTS))
    V, c, ours = simulate("iaf_cond_alpha", COND_ALPHA, inputs, ms)
    V_ref, theirs = cond_alpha_reference(COND_ALPHA, inputs, ms)
    assert ours.size > 3 and np.array_equal(ours, theirs)
    largest = np.abs(V - V_ref).max()
    print(f"iaf_cond_alpha vs RK4 with 200 substeps: largest |V difference| {largest:.3g} mV, {ours.size} spikes")
    assert largest < 1e-4
    assert c.max() > 20.0                               # c is g_ex (nS)


def nest_params(p):
    return {"E_L": p["E_L_mV"], "V_th": p["V_th_mV"], "V_reset": p["V_reset_mV"], "C_m": p["C_m_pF"],
            "g_L": p["g_L_nS"], "E_ex": p["E_ex_mV"], "E_in": p["E_in_mV"], "tau_syn_ex": p["tau_syn_ex_ms"],
            "tau_syn_in": p["tau_syn_in_ms"], "t_ref": p["tau_arp_ms"], "I_e": p["I_e_pA"], "V_m": p["V0_mean_mV"]}


@pytest.mark.parametrize("taus", [(0.2, 2.0), (1.5, 4.0)], ids=["nest-defaults", "slower"])
def test_iaf_cond_alpha_against_nest(taus):
    nest = pytest.importorskip("nest")
    ms = 300.0
    params = {**COND_ALPHA, "tau_syn_ex_ms": taus[0], "tau_syn_in_ms": taus[1]}
    weights = COND_INPUTS if taus[0] < 1 else (1.0, 8.0, -1.25)
    if taus[0] > 1:
        params["I_e_pA"] = 240.0
    inputs = list(zip(trains(ms), weights))
    V, _, ours = simulate("iaf_cond_alpha", params, inputs, ms)
    k, V_nest, theirs = nest_run(nest, "iaf_cond_alpha", nest_params(params), inputs, ms)
    largest, at = compare("iaf_cond_alpha vs NEST iaf_cond_alpha", V, ours, k, V_nest, theirs, ms)
    assert largest < 1e-6, f"largest difference {largest:.3g} mV at t = {at} ms"


def test_iaf_cond_alpha_defaults_are_nests():
    pop = rv.Population("C", 10, {}, model="iaf_cond_alpha")
    pop.validate()
    assert {k: pop.params[k] for k in ("V_reset_mV", "g_L_nS", "tau_syn_ex_ms", "tau_syn_in_ms", "E_in_mV")} == {
        "V_reset_mV": -60.0, "g_L_nS": 16.6667, "tau_syn_ex_ms": 0.2, "tau_syn_in_ms": 2.0, "E_in_mV": -85.0}
    with pytest.raises(rv.ConfigError, match="'tau_syn_in_ms' must be positive"):
        rv.Population("C", 10, {"tau_syn_in_ms": 0.0}, model="iaf_cond_alpha").validate()
    with pytest.raises(rv.ConfigError, match="'V_reset_mV' .* must be below 'V_th_mV'"):
        rv.Population("C", 10, {"V_reset_mV": -50.0}, model="iaf_cond_alpha").validate()


def test_constant_per_neuron_values_give_the_homogeneous_run():
    """Every parameter per neuron but constant: the per-neuron update gives the homogeneous
    population's spikes and traces, bit for bit."""
    from ranvier.core.random import Normal
    n = 200
    params = {**COND_ALPHA, "I_e_pA": 0.0, "V0_mean_mV": -60.0, "V0_sd_mV": 5.0}

    def run(p):
        net = rv.Network()
        net.add_population(rv.Population("A", n, p, model="iaf_cond_alpha"))
        net.connect(rv.Projection(source="A", target="A", probability=0.1, weight=-2.0, delay_ms=1.0))
        net.drive(rv.PoissonDrive("A", 100, 100.0, weight=3.0))
        return rv.Simulation(net, threads=2, seed=4, record_state=list(range(0, n, 7))).run(200.0)

    ref = run(dict(params))
    assert ref.spike_ids.size > 200
    per = {k: v if k.startswith("V0_") else (Normal(v, 0.0) if i % 2 else np.full(n, v))
           for i, (k, v) in enumerate(params.items())}
    got = run(per)
    assert np.array_equal(got.spike_ids, ref.spike_ids) and np.array_equal(got.spike_steps, ref.spike_steps)
    assert np.array_equal(got.state["V"], ref.state["V"]) and np.array_equal(got.state["c"], ref.state["c"])


def test_pynn_if_cond_alpha_is_nests_iaf_cond_alpha():
    """PyNN's IF_cond_alpha through pyNN.ranvier (PyNN's units: nF, nA, uS) against NEST's
    iaf_cond_alpha run directly: the same spikes, V within 1e-6 mV at every step, gsyn_exc
    NEST's g_ex (uS)."""
    nest = pytest.importorskip("nest")
    pytest.importorskip("pyNN")
    import pyNN.ranvier as sim
    times_ex, times_in = [10.0, 12.0, 20.0, 30.5, 31.0, 52.0, 70.0], [40.0, 41.0, 75.0]
    cell_params = dict(cm=0.25, tau_m=15.0, v_rest=-65.0, v_thresh=-52.0, v_reset=-63.0, tau_refrac=2.0,
                       i_offset=0.2, tau_syn_E=0.5, tau_syn_I=3.0, e_rev_E=0.0, e_rev_I=-80.0)
    ours, signals = pynn_one_cell(sim.IF_cond_alpha(**cell_params), {"v": -65.0},
                                  [(times_ex, 0.02, "excitatory"), (times_in, 0.01, "inhibitory")], ["v", "gsyn_exc"])
    theirs, events, k = nest_one_cell(nest, "iaf_cond_alpha", {
        "C_m": 250.0, "g_L": 250.0 / 15.0, "E_L": -65.0, "V_th": -52.0, "V_reset": -63.0, "t_ref": 2.0,
        "I_e": 200.0, "tau_syn_ex": 0.5, "tau_syn_in": 3.0, "E_ex": 0.0, "E_in": -80.0, "V_m": -65.0},
        [(times_ex, 20.0), (times_in, -10.0)], ["V_m", "g_ex"])
    assert ours.size > 2 and np.allclose(ours, theirs, atol=1e-9)
    largest = np.max(np.abs(signals["v"][k] - events["V_m"]))
    print(f"IF_cond_alpha (pyNN.ranvier) vs NEST iaf_cond_alpha: largest |V difference| {largest:.3g} mV")
    assert largest < 1e-6
    assert np.max(np.abs(signals["gsyn_exc"][k] - events["g_ex"] / 1000.0)) < 1e-9


def test_neo_signals_are_pynns_conductances():
    """Result.to_neo: "v" absolute (mV), "gsyn_exc" and "gsyn_inh" (nS) as PyNN names them,
    equal to the recorded state."""
    pytest.importorskip("neo")
    net = rv.Network(name="cell")
    net.add_population(rv.Population("s", 1, {"spike_times_ms": [5.0]}, model="spike_train"))
    net.add_population(rv.Population("n", 2, dict(COND_ALPHA), model="iaf_cond_alpha"))
    net.connect(rv.Projection(source="s", target="n", sources=[0, 0], targets=[0, 1], weight=[3.0, -2.0],
                              delay_ms=1.0))
    res = rv.Simulation(net, threads=1, resolution_ms=H, record_state=[1, 2]).run(40.0)
    seg = res.to_neo().segments[0]
    signals = {s.name: s for s in seg.analogsignals}
    assert set(signals) == {"v", "gsyn_exc", "gsyn_inh"}
    assert str(signals["gsyn_exc"].units.dimensionality) == "nS"
    assert np.array_equal(np.asarray(signals["gsyn_exc"]).T, np.asarray(res.state["c"]))
    assert np.array_equal(np.asarray(signals["gsyn_inh"]).T, np.asarray(res.state["c_in"]))
    assert np.allclose(np.asarray(signals["v"]).T, np.asarray(res.state["V"]) + COND_ALPHA["E_L_mV"], atol=1e-12)
    assert np.asarray(res.state["c"])[0].max() > 2.9 and np.asarray(res.state["c_in"])[1].max() > 1.9
