"""aeif_cond_exp and aeif_cond_alpha (NEST's aeif_cond_exp, aeif_cond_alpha; PyNN's
EIF_cond_exp_isfa_ista, EIF_cond_alpha_isfa_ista): adaptive exponential integrate-and-fire with
conductances, integrated with NEST's adaptive Runge-Kutta-Fehlberg scheme under GSL's yp control.

Column k of a trace is the state after step k + 1, at (k + 1) h. Checks:
- with NEST 3.10 (skipped when `nest` is not importable): one neuron driven by spike trains
  (excitatory and inhibitory weights) and a constant current, firing with adaptation, NEST's
  model fed the same spikes with the same delay: V within 1e-9 mV and w within 1e-9 pA at every
  step, the same spike steps; with a refractory period, with Delta_T = 0 (the exponential term
  off, spikes at V_th), with an initial w, with a step current; the defaults are NEST's; PyNN's
  EIF_cond_exp_isfa_ista through pyNN.ranvier against NEST's aeif_cond_exp run directly;
- without NEST: bad parameters refused naming the field; w recorded (Result.state["w"], neo's
  "w" signal) and its jump b at each spike; constant per-neuron values give the homogeneous run;
- the same spikes and traces for any ranks x threads x placement x exchange: tests/mpi_runner.py's
  pynn_cells_network has aeif_cond_exp and aeif_cond_alpha populations (tests/test_pynn_cells.py).
"""
import numpy as np
import pytest

import ranvier as rv
from ranvier.core.neurons import NEURON_MODELS
from test_pynn_cells import DELAY_MS, H, nest_one_cell, pynn_one_cell, trains

MODELS = ("aeif_cond_exp", "aeif_cond_alpha")
INPUTS = (5.0, 60.0, -2.5)          # nS: a small and a large excitatory train (steps repeat), inhibitory
NEST_NAMES = {"E_L_mV": "E_L", "V_th_mV": "V_th", "V_peak_mV": "V_peak", "V_reset_mV": "V_reset",
              "C_m_pF": "C_m", "g_L_nS": "g_L", "Delta_T_mV": "Delta_T", "tau_w_ms": "tau_w", "a_nS": "a",
              "b_pA": "b", "E_ex_mV": "E_ex", "E_in_mV": "E_in", "tau_syn_ex_ms": "tau_syn_ex",
              "tau_syn_in_ms": "tau_syn_in", "tau_arp_ms": "t_ref", "I_e_pA": "I_e",
              "gsl_error_tol": "gsl_error_tol", "V0_mean_mV": "V_m", "w0_pA": "w"}
# name -> (changes to NEST's defaults, current steps (times ms, pA) or None)
CASES = {
    "adapting": ({"I_e_pA": 700.0}, None),
    "refractory": ({"I_e_pA": 700.0, "tau_arp_ms": 2.0, "b_pA": 40.0, "a_nS": 8.0}, None),
    "no-exponential": ({"I_e_pA": 650.0, "Delta_T_mV": 0.0, "V_th_mV": -52.0, "tau_arp_ms": 1.0}, None),
    "initial-w": ({"I_e_pA": 800.0, "w0_pA": 150.0, "V0_mean_mV": -60.0, "tau_w_ms": 60.0}, None),
    "current-steps": ({"I_e_pA": 100.0}, ([20.0, 120.0, 200.0], [800.0, 300.0, 900.0])),
}


def params_of(model, changes):
    return {**NEURON_MODELS[model].defaults(), **changes}


def simulate(model, params, inputs, ms, steps=None):
    """inputs: [(spike times ms, weight nS)]; steps: (times, amplitudes) of a StepCurrent. Returns
    (V absolute, w, spike steps of the neuron)."""
    net = rv.Network(name="cell")
    for i, (times, _) in enumerate(inputs):
        net.add_population(rv.Population(f"s{i}", 1, {"spike_times_ms": times.tolist()}, model="spike_train"))
    net.add_population(rv.Population("n", 1, dict(params), model=model))
    for i, (_, w) in enumerate(inputs):
        net.connect(rv.Projection(source=f"s{i}", target="n", probability=1.0, weight=w, delay_ms=DELAY_MS))
    if steps is not None:   # NEST's step_current_generator at t over a delay d: StepCurrent at t + d
        net.inject(rv.StepCurrent("n", [t + H for t in steps[0]], steps[1]))
    gid = len(inputs)
    res = rv.Simulation(net, threads=1, seed=3, resolution_ms=H, record_state=[gid]).run(ms)
    V = np.asarray(res.state["V"][0], dtype=np.float64) + params["E_L_mV"]
    w = np.asarray(res.state["w"][0], dtype=np.float64)
    ids, spike_steps = np.asarray(res.spike_ids), np.asarray(res.spike_steps)
    return V, w, spike_steps[ids == gid]


def nest_run(nest, model, params, inputs, ms, steps=None):
    """NEST's V_m and w on the grid (k: after step k + 1) and its spike steps."""
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.SetKernelStatus({"resolution": H})
    neuron = nest.Create(model, params={NEST_NAMES[k]: v for k, v in params.items() if k in NEST_NAMES})
    for times, w in inputs:
        generator = nest.Create("spike_generator", params={"spike_times": [round(t, 10) for t in times]})
        nest.Connect(generator, neuron, syn_spec={"weight": w, "delay": DELAY_MS})
    if steps is not None:
        current = nest.Create("step_current_generator", params={"amplitude_times": steps[0],
                                                                "amplitude_values": steps[1]})
        nest.Connect(current, neuron, syn_spec={"delay": H})
    meter = nest.Create("multimeter", params={"record_from": ["V_m", "w"], "interval": H})
    recorder = nest.Create("spike_recorder")
    nest.Connect(meter, neuron)
    nest.Connect(neuron, recorder)
    nest.Simulate(ms + H)
    ev = meter.get("events")
    k = np.rint(np.asarray(ev["times"]) / H).astype(int) - 1
    spikes = np.rint(np.asarray(recorder.get("events")["times"]) / H).astype(int)
    return k, np.asarray(ev["V_m"]), np.asarray(ev["w"]), spikes


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("model", MODELS)
def test_against_nest(model, case):
    nest = pytest.importorskip("nest")
    ms = 300.0
    changes, steps = CASES[case]
    params = params_of(model, changes)
    inputs = list(zip(trains(ms), INPUTS))
    V, w, ours = simulate(model, params, inputs, ms, steps)
    k, V_nest, w_nest, theirs = nest_run(nest, model, params, inputs, ms, steps)
    keep = k < V.size
    assert keep.sum() >= V.size - 1
    dV = np.abs(V_nest[keep] - V[k[keep]])
    dw = np.abs(w_nest[keep] - w[k[keep]])
    print(f"{model} vs NEST ({case}): largest |V difference| {dV.max():.3g} mV at t = "
          f"{(k[keep][dV.argmax()] + 1) * H:.1f} ms, |w difference| {dw.max():.3g} pA, {ours.size} spikes")
    assert ours.size >= 4                                  # spikes, resets and adaptation are covered
    assert np.array_equal(np.sort(ours), np.sort(theirs[theirs <= round(ms / H)]))
    assert dV.max() < 1e-9 and dw.max() < 1e-9
    isi = np.diff(ours)
    if case == "adapting":
        assert isi[-1] > isi[0]                            # the adaptation lengthens the intervals


@pytest.mark.parametrize("model", MODELS)
def test_defaults_are_nests(model):
    nest = pytest.importorskip("nest")
    nest.ResetKernel()
    theirs = nest.GetDefaults(model)
    ours = NEURON_MODELS[model].defaults()
    for key, name in NEST_NAMES.items():
        expected = theirs[name] if key != "V0_mean_mV" else theirs["E_L"]
        assert ours[key] == pytest.approx(expected, rel=1e-12, abs=1e-12), key
    assert ours["V0_sd_mV"] == 0.0


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("bad, message", [
    ({"C_m_pF": 0.0}, "'C_m_pF' must be positive"),
    ({"tau_w_ms": -1.0}, "'tau_w_ms' must be positive"),
    ({"tau_syn_in_ms": 0.0}, "'tau_syn_in_ms' must be positive"),
    ({"gsl_error_tol": 0.0}, "'gsl_error_tol' must be positive"),
    ({"Delta_T_mV": -0.5}, "'Delta_T_mV' must be zero or positive"),
    ({"V_th_mV": 5.0}, "'V_th_mV' .* must be at most 'V_peak_mV'"),
    ({"V_reset_mV": 0.0}, "'V_reset_mV' .* must be below 'V_peak_mV'"),
    ({"Delta_T_mV": 0.01}, "'Delta_T_mV' is 5040.*overflows.*raise 'Delta_T_mV' or lower 'V_peak_mV'"),
    ({"V_th_mV": np.array([-50.0, 1.0, -50.0])}, "'V_th_mV' must be at most 'V_peak_mV' for every neuron; "
                                                 "neuron 1"),
])
def test_bad_parameters_are_refused(model, bad, message):
    with pytest.raises(rv.ConfigError, match=message):
        rv.Population("A", 3, bad, model=model).validate()


def test_refractory_period_in_whole_steps():
    net = rv.Network()
    net.add_population(rv.Population("A", 2, {"tau_arp_ms": 0.25}, model="aeif_cond_exp"))
    with pytest.raises(rv.ConfigError, match="'tau_arp_ms' = 0.25 ms is not a multiple of the resolution"):
        rv.Simulation(net, resolution_ms=0.1)


@pytest.mark.parametrize("model", MODELS)
def test_w_is_recorded_and_jumps_by_b(model):
    """w from w0_pA, decaying towards a (V - E_L) between spikes and jumping by b at each spike
    (the step's w is b above the previous step's but for the decay over one step); neo's "w"."""
    params = params_of(model, {"I_e_pA": 800.0, "w0_pA": 30.0, "tau_arp_ms": 1.0})
    net = rv.Network()
    net.add_population(rv.Population("A", 1, params, model=model))
    res = rv.Simulation(net, threads=1, record_state=[0]).run(200.0)
    w = np.asarray(res.state["w"][0])
    steps = np.asarray(res.spike_steps)
    assert steps.size >= 3 and np.all(np.diff(steps) > 10)
    assert abs(w[0] - 30.0) < 1.0                           # after one step of 0.1 ms from w0 = 30 pA
    for s in steps:                                         # column s - 1: the state after step s
        assert w[s - 1] - w[s - 2] == pytest.approx(params["b_pA"], abs=1.0)
    others = np.setdiff1d(np.arange(1, w.size), steps - 1)
    assert np.abs(np.diff(w)[others - 1]).max() < 5.0       # no other jump
    pytest.importorskip("neo")
    signals = {s.name: s for s in res.to_neo().segments[0].analogsignals}
    assert str(signals["w"].units.dimensionality) == "pA"
    assert np.array_equal(np.asarray(signals["w"]).ravel(), w)


@pytest.mark.parametrize("model", MODELS)
def test_constant_per_neuron_values_give_the_homogeneous_run(model):
    """Every parameter per neuron but constant: the per-neuron update gives the homogeneous
    population's spikes and traces (V, w), bit for bit."""
    from ranvier.core.random import Normal
    n = 60
    params = params_of(model, {"I_e_pA": 600.0, "V0_mean_mV": -65.0, "V0_sd_mV": 4.0, "tau_arp_ms": 0.5})

    def run(p):
        net = rv.Network()
        net.add_population(rv.Population("A", n, p, model=model))
        net.connect(rv.Projection(source="A", target="A", probability=0.1, weight=-2.0, delay_ms=1.0))
        net.drive(rv.PoissonDrive("A", 100, 100.0, weight=3.0))
        return rv.Simulation(net, threads=2, seed=4, record_state=list(range(0, n, 7))).run(200.0)

    ref = run(dict(params))
    assert ref.spike_ids.size > 100
    per = {k: v if k.startswith("V0_") else (Normal(v, 0.0) if i % 2 else np.full(n, v))
           for i, (k, v) in enumerate(params.items())}
    got = run(per)
    assert np.array_equal(got.spike_ids, ref.spike_ids) and np.array_equal(got.spike_steps, ref.spike_steps)
    for key in ("V", "c", "c_in", "w"):
        assert np.array_equal(got.state[key], ref.state[key]), key


def test_pynn_eif_cond_exp_is_nests_aeif_cond_exp():
    """PyNN's EIF_cond_exp_isfa_ista through pyNN.ranvier (PyNN's units: nF, nA, uS) against
    NEST's aeif_cond_exp run directly: the same spikes, V within 1e-9 mV at every step, w (nA)
    NEST's w / 1000, the initial w taken."""
    nest = pytest.importorskip("nest")
    pytest.importorskip("pyNN")
    import pyNN.ranvier as sim
    times_ex, times_in = [10.0, 12.0, 20.0, 30.5, 31.0, 52.0, 70.0], [40.0, 41.0, 75.0]
    cell_params = dict(cm=0.2, tau_m=10.0, v_rest=-65.0, v_thresh=-52.0, v_reset=-60.0, v_spike=-20.0,
                       tau_refrac=1.0, i_offset=0.5, tau_syn_E=0.5, tau_syn_I=3.0, e_rev_E=0.0, e_rev_I=-80.0,
                       a=2.0, b=0.05, delta_T=1.5, tau_w=80.0)
    ours, signals = pynn_one_cell(sim.EIF_cond_exp_isfa_ista(**cell_params), {"v": -63.0, "w": 0.02},
                                  [(times_ex, 0.02, "excitatory"), (times_in, 0.01, "inhibitory")], ["v", "w"])
    theirs, events, k = nest_one_cell(nest, "aeif_cond_exp", {
        "C_m": 200.0, "g_L": 20.0, "E_L": -65.0, "V_th": -52.0, "V_reset": -60.0, "V_peak": -20.0, "t_ref": 1.0,
        "I_e": 500.0, "tau_syn_ex": 0.5, "tau_syn_in": 3.0, "E_ex": 0.0, "E_in": -80.0, "a": 2.0, "b": 50.0,
        "Delta_T": 1.5, "tau_w": 80.0, "V_m": -63.0, "w": 20.0}, [(times_ex, 20.0), (times_in, -10.0)], ["V_m", "w"])
    assert ours.size > 2 and np.allclose(ours, theirs, atol=1e-9)
    largest = np.max(np.abs(signals["v"][k] - events["V_m"]))
    print(f"EIF_cond_exp_isfa_ista (pyNN.ranvier) vs NEST aeif_cond_exp: largest |V difference| {largest:.3g} mV")
    assert largest < 1e-9
    assert np.max(np.abs(signals["w"][k] - events["w"] / 1000.0)) < 1e-12
    assert signals["w"][0] == 0.02
