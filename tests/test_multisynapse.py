"""Neuron models with receptors (NEST's *_multisynapse models): one input column per receptor in
the engine, each projection naming the receptor it adds into (`rv.Projection(receptor=r)`).

Checks:
- without NEST: every receptor takes its own input and decays with its own time constant (one
  spike onto each of three receptors of iaf_psc_exp_multisynapse gives three currents, c and
  c_in the first two); the errors name the field: a receptor onto a model without receptors,
  none or one out of range onto a model with them, negative conductances, a drive;
- with NEST 3.10 (skipped when `nest` is not importable): iaf_psc_exp_multisynapse and
  aeif_cond_alpha_multisynapse, three receptors each driven by its own spike train and a
  constant current, against NEST's models fed the same spikes on the same receptor ports: V on
  the grid (within 1e-10 mV and 1e-9 mV), the same spike steps;
- the same spikes for any ranks x threads x placement x exchange and across checkpoints:
  tests/mpi_runner.py's pynn_cells_network has populations of both models.
"""
import numpy as np
import pytest

import ranvier as rv
from ranvier.errors import ConfigError

H = 0.1
DELAY_MS = 1.0
PSC = {"E_L_mV": -70.0, "V_th_mV": -55.0, "V_reset_mV": -70.0, "C_m_pF": 250.0, "tau_m_ms": 10.0,
       "tau_syn_ms": [0.5, 2.0, 8.0], "tau_arp_ms": 2.0, "I_e_pA": 300.0}
AEIF = {"tau_syn_ms": [0.2, 2.0, 20.0], "E_rev_mV": [0.0, 0.0, -80.0], "I_e_pA": 1000.0, "tau_arp_ms": 1.0, "b_pA": 10.0}
PSC_WEIGHTS = (600.0, -300.0, 150.0)        # pA, receptors 1, 2, 3
AEIF_WEIGHTS = (3.0, 1.0, 1.0)              # nS


def trains(ms, seed=1):
    rng = np.random.default_rng(seed)
    return [np.unique(np.round(rng.uniform(1.0, ms - 2.0, n), 1)) for n in (int(ms * 0.4), int(ms * 0.2),
                                                                             int(ms * 0.3))]


def simulate(model, params, inputs, ms, **sim):
    """inputs: [(times ms, weight, receptor)]. Returns (V absolute, c, c_in, spike steps)."""
    net = rv.Network(name="cell")
    for i, (times, _, _) in enumerate(inputs):
        net.add_population(rv.Population(f"s{i}", 1, {"spike_times_ms": times.tolist()}, model="spike_train"))
    net.add_population(rv.Population("n", 1, dict(params), model=model))
    for i, (_, w, r) in enumerate(inputs):
        net.connect(rv.Projection(source=f"s{i}", target="n", probability=1.0, weight=w, delay_ms=DELAY_MS,
                                  receptor=r))
    gid = len(inputs)
    res = rv.Simulation(net, resolution_ms=H, record_state=[gid], **sim).run(ms)
    E_L = params.get("E_L_mV", -70.0 if model.startswith("iaf") else -70.6)
    V = np.asarray(res.state["V"][0], dtype=np.float64) + E_L
    ids, steps = np.asarray(res.spike_ids), np.asarray(res.spike_steps)
    return V, np.asarray(res.state["c"][0]), np.asarray(res.state["c_in"][0]), steps[ids == gid]


def test_each_receptor_takes_its_own_input():
    """One spike onto each receptor at 5, 20 and 40 ms: I_1 (c) jumps by 600 pA in the step its
    spike arrives and decays with 0.5 ms, I_2 (c_in) by -300 pA with 2 ms; neither moves at the
    others' spikes."""
    params = {**PSC, "I_e_pA": 0.0}
    inputs = [(np.array([5.0]), PSC_WEIGHTS[0], 1), (np.array([20.0]), PSC_WEIGHTS[1], 2),
              (np.array([40.0]), PSC_WEIGHTS[2], 3)]
    V, c, c_in, spikes = simulate("iaf_psc_exp_multisynapse", params, inputs, 60.0)
    assert spikes.size == 0
    k = np.arange(c.size)
    for current, t0, w, tau in ((c, 5.0, 600.0, 0.5), (c_in, 20.0, -300.0, 2.0)):
        s0 = round(t0 / H) - 1 + round(DELAY_MS / H)          # column k: after step k + 1
        expected = np.where(k >= s0, w * np.exp(-(k - s0) * H / tau), 0.0)
        assert np.max(np.abs(current - expected)) < 1e-9 * abs(w)
    # Receptor 3's spike (40 ms) moves V up, receptor 2's (20 ms) down.
    assert V[round(24.0 / H)] < -70.0 < V[round(44.0 / H)]


def _network(model, params, receptor, weight=1.0, target_params=None):
    net = rv.Network(name="cell")
    net.add_population(rv.Population("s", 1, {"spike_times_ms": [5.0]}, model="spike_train"))
    net.add_population(rv.Population("n", 1, dict(params), model=model))
    net.connect(rv.Projection(source="s", target="n", probability=1.0, weight=weight, delay_ms=1.0,
                              receptor=receptor))
    return net


def test_the_errors_name_the_receptor():
    with pytest.raises(ConfigError, match="has no receptors.*leave 'receptor' out"):
        _network("psc_exp", {}, 1)
    with pytest.raises(ConfigError, match=r"has 3 receptor\(s\); give receptor=1..3.*got none"):
        _network("iaf_psc_exp_multisynapse", PSC, None)
    with pytest.raises(ConfigError, match=r"receptor=1..3.*got 4"):
        _network("iaf_psc_exp_multisynapse", PSC, 4)
    with pytest.raises(ConfigError, match="'receptor' must be a whole number"):
        _network("iaf_psc_exp_multisynapse", PSC, "AMPA")
    with pytest.raises(ConfigError, match="must be at least 0"):
        _network("aeif_cond_alpha_multisynapse", AEIF, 1, weight=-1.0)
    with pytest.raises(ConfigError, match="'tau_syn_ms' .3 values. and 'E_rev_mV' .2.*same length"):
        rv.Network().add_population(rv.Population("n", 1, {**AEIF, "E_rev_mV": [0.0, -80.0]},
                                                  model="aeif_cond_alpha_multisynapse"))
    with pytest.raises(ConfigError, match="1 to 8 entries"):
        rv.Network().add_population(rv.Population("n", 1, {"tau_syn_ms": [1.0] * 9},
                                                  model="iaf_psc_exp_multisynapse"))
    net = rv.Network(name="driven")
    net.add_population(rv.Population("n", 10, dict(PSC), model="iaf_psc_exp_multisynapse"))
    with pytest.raises(ConfigError, match="has receptors and a drive names none"):
        net.drive(rv.PoissonDrive(target="n", n_synapses=10, rate_hz=5.0, weight=10.0))


def _nest(nest, model, params, inputs, ms):
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.SetKernelStatus({"resolution": H})
    neuron = nest.Create(model, params=params)
    for times, w, r in inputs:
        generator = nest.Create("spike_generator", params={"spike_times": [round(t, 10) for t in times]})
        nest.Connect(generator, neuron, syn_spec={"weight": w, "delay": DELAY_MS, "receptor_type": r})
    meter = nest.Create("multimeter", params={"record_from": ["V_m"], "interval": H})
    recorder = nest.Create("spike_recorder")
    nest.Connect(meter, neuron)
    nest.Connect(neuron, recorder)
    nest.Simulate(ms + H)
    k = np.rint(np.asarray(meter.events["times"]) / H).astype(int) - 1
    return k, np.asarray(meter.events["V_m"]), np.rint(np.asarray(recorder.events["times"]) / H).astype(int)


@pytest.mark.parametrize("model, ours, theirs, weights, tolerance", [
    ("iaf_psc_exp_multisynapse", PSC,
     {"E_L": -70.0, "V_th": -55.0, "V_reset": -70.0, "C_m": 250.0, "tau_m": 10.0, "tau_syn": [0.5, 2.0, 8.0],
      "t_ref": 2.0, "I_e": 300.0, "V_m": -70.0}, PSC_WEIGHTS, 1e-10),
    ("aeif_cond_alpha_multisynapse", AEIF,
     {"tau_syn": [0.2, 2.0, 20.0], "E_rev": [0.0, 0.0, -80.0], "I_e": 1000.0, "t_ref": 1.0, "b": 10.0, "V_m": -70.6},
     AEIF_WEIGHTS, 1e-9),
])
def test_against_nest(model, ours, theirs, weights, tolerance):
    nest = pytest.importorskip("nest")
    ms = 300.0
    inputs = [(t, w, r + 1) for r, (t, w) in enumerate(zip(trains(ms), weights))]
    V, _, _, spikes = simulate(model, ours, inputs, ms)
    k, V_nest, nest_spikes = _nest(nest, model, theirs, inputs, ms)
    keep = k < V.size
    largest = float(np.max(np.abs(V[k[keep]] - V_nest[keep])))
    print(f"{model}: {spikes.size} spikes (NEST {nest_spikes.size}), largest |V difference| {largest:.3g} mV")
    assert spikes.size > 5
    assert np.array_equal(spikes, nest_spikes)
    assert largest < tolerance


def test_every_receptor_is_recorded():
    """Four receptors of aeif_cond_alpha_multisynapse, one spike onto each: Result.state holds
    g_1 (c), g_2 (c_in), g_3 (c3) and g_4 (c4), each the alpha function of its own spike alone
    (peak w at tau after the arrival); a neuron of another model records NaN there."""
    params = {**AEIF, "I_e_pA": 0.0, "tau_syn_ms": [1.0, 2.0, 3.0, 4.0], "E_rev_mV": [0.0, 0.0, -80.0, -80.0]}
    times = (5.0, 20.0, 35.0, 50.0)
    net = rv.Network(name="cell")
    for i, t in enumerate(times):
        net.add_population(rv.Population(f"s{i}", 1, {"spike_times_ms": [t]}, model="spike_train"))
    net.add_population(rv.Population("n", 1, params, model="aeif_cond_alpha_multisynapse"))
    net.add_population(rv.Population("p", 1, {}, model="psc_exp"))
    for i in range(4):
        net.connect(rv.Projection(source=f"s{i}", target="n", probability=1.0, weight=2.0, delay_ms=DELAY_MS,
                                  receptor=i + 1))
    res = rv.Simulation(net, resolution_ms=H, record_state=[4, 5]).run(80.0)
    k = np.arange(round(80.0 / H))
    for key, t0, tau in zip(("c", "c_in", "c3", "c4"), times, (1.0, 2.0, 3.0, 4.0)):
        g = np.asarray(res.state[key][0])
        s0 = round(t0 / H) - 1 + round(DELAY_MS / H)
        elapsed = (k - s0) * H
        expected = np.where(elapsed > 0, 2.0 * np.e / tau * elapsed * np.exp(-elapsed / tau), 0.0)
        assert np.max(np.abs(g - expected)) < 1e-6, key
        assert int(np.argmax(g)) == s0 + round(tau / H)
    assert np.all(np.isnan(res.state["c3"][1])) and np.all(np.isnan(res.state["c4"][1]))
    # Neo names them as the model's recordables do.
    pytest.importorskip("neo")
    from ranvier.io.neo import to_neo
    block = to_neo(res, populations=["n"])
    names = {s.name for s in block.segments[0].analogsignals}
    assert {"g_1", "g_2", "g_3", "g_4", "w"} <= names
