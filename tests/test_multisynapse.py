"""Neuron models with receptors (NEST's *_multisynapse models): one input column per receptor in
the engine, each projection naming the receptor it adds into (`rv.Projection(receptor=r)`).

Checks:
- without NEST: every receptor takes its own input and decays with its own time constant (one
  spike onto each of three receptors of iaf_psc_exp_multisynapse gives three currents, c and
  c_in the first two); the errors name the field: a receptor onto a model without receptors,
  none or one out of range onto a model with them, negative conductances, a drive;
- with NEST 3.10 (skipped when `nest` is not importable): iaf_psc_exp_multisynapse,
  aeif_cond_alpha_multisynapse and aeif_cond_beta_multisynapse (one receptor's rise and decay
  equal: NEST's alpha limit), three receptors each driven by its own spike train and a
  constant current, against NEST's models fed the same spikes on the same receptor ports: V on
  the grid (within 1e-10 mV and 1e-9 mV), the same spike steps; a PyNN script with PointNeuron
  (AdExp with AlphaPSR and BetaPSR receptors, LIF with current receptors) on both backends;
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
BETA = {k: v for k, v in AEIF.items() if k != "tau_syn_ms"} | {"tau_rise_ms": [0.2, 1.0, 5.0],
                                                               "tau_decay_ms": [2.0, 1.0, 20.0]}


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
    with pytest.raises(ConfigError, match="'tau_rise_ms' must be at most its 'tau_decay_ms'"):
        rv.Network().add_population(rv.Population("n", 1, {**BETA, "tau_rise_ms": [0.2, 2.0, 5.0]},
                                                  model="aeif_cond_beta_multisynapse"))
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
    ("aeif_cond_beta_multisynapse", BETA,
     {"tau_rise": [0.2, 1.0, 5.0], "tau_decay": [2.0, 1.0, 20.0], "E_rev": [0.0, 0.0, -80.0], "I_e": 1000.0,
      "t_ref": 1.0, "b": 10.0, "V_m": -70.6}, AEIF_WEIGHTS, 1e-9),
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


PYNN_SCRIPT = """
import sys, numpy as np
import pyNN.{backend} as sim
sim.setup(timestep=0.1, min_delay=1.0)
adexp = sim.PointNeuron(sim.AdExp(tau_m=10.0, v_rest=-60.0, i_offset=0.9, b=0.01, v_spike=-20.0, delta_T=1.5),
                        AMPA=sim.AlphaPSR(tau_syn=1.0, e_syn=0.0), NMDA=sim.AlphaPSR(tau_syn=20.0, e_syn=0.0),
                        GABAA=sim.AlphaPSR(tau_syn=1.5, e_syn=-70.0))
lif = sim.PointNeuron(sim.LIF(tau_m=10.0, v_rest=-60.0, i_offset=1.1),
                      AMPA=sim.CurrExpPostSynapticResponse(tau_syn=1.0),
                      NMDA=sim.CurrExpPostSynapticResponse(tau_syn=20.0),
                      GABAA=sim.CurrExpPostSynapticResponse(tau_syn=1.5))
beta = sim.PointNeuron(sim.AdExp(tau_m=10.0, v_rest=-60.0, i_offset=0.9, b=0.01, v_spike=-20.0, delta_T=1.5),
                       AMPA=sim.BetaPSR(tau_rise=0.2, tau_decay=2.0, e_syn=0.0),
                       NMDA=sim.BetaPSR(tau_rise=2.0, tau_decay=30.0, e_syn=0.0),
                       GABAA=sim.BetaPSR(tau_rise=0.5, tau_decay=5.0, e_syn=-70.0))
a = sim.Population(2, adexp, initial_values={{"v": -60.0}})
b = sim.Population(2, lif, initial_values={{"v": -60.0}})
c = sim.Population(2, beta, initial_values={{"v": -60.0}})
rng = np.random.default_rng(5)
inputs = sim.Population(3, sim.SpikeSourceArray(spike_times=[
    sim.Sequence(np.unique(np.round(rng.uniform(5, 290, n), 1))) for n in (60, 20, 40)]))
for i, (name, w_a, w_b) in enumerate((("AMPA", 0.004, 0.3), ("NMDA", 0.001, 0.05), ("GABAA", 0.004, -0.3))):
    sim.Projection(inputs[i:i + 1], a, sim.AllToAllConnector(), sim.StaticSynapse(weight=w_a, delay=1.5),
                   receptor_type=name)
    sim.Projection(inputs[i:i + 1], b, sim.AllToAllConnector(), sim.StaticSynapse(weight=w_b, delay=1.5),
                   receptor_type=name)
    sim.Projection(inputs[i:i + 1], c, sim.AllToAllConnector(), sim.StaticSynapse(weight=w_a, delay=1.5),
                   receptor_type=name)
a.record(["v", "spikes", "AMPA.gsyn", "NMDA.gsyn", "GABAA.gsyn"])
b.record(["v", "spikes", "AMPA.isyn", "NMDA.isyn", "GABAA.isyn"])
c.record(["v", "spikes", "AMPA.gsyn", "NMDA.gsyn", "GABAA.gsyn"])
assert a.get("GABAA.e_syn") == -70.0 and b.get("NMDA.tau_syn") == 20.0
sim.run(300.0)
out = {{}}
for label, pop, kind in (("a", a, "gsyn"), ("b", b, "isyn"), ("c", c, "gsyn")):
    seg = pop.get_data().segments[0]
    for name in ("v", "AMPA." + kind, "NMDA." + kind, "GABAA." + kind):
        out[label + ":" + name] = seg.filter(name=name)[0].magnitude
    out[label + ":spikes"] = np.concatenate([t.magnitude for t in seg.spiketrains])
np.savez(sys.argv[1], **out)
sim.end()
"""


def test_pynn_point_neuron_gives_pynn_nests_traces(tmp_path):
    """PyNN's PointNeuron (AdExp with three AlphaPSR receptors, AdExp with three BetaPSR receptors,
    LIF with three current-based ones,
    PyNN's composed-cell scenario with input) on pyNN.ranvier and pyNN.nest: the same spikes, V
    and every receptor's conductance or current equal within 1e-9."""
    import subprocess
    import sys

    pytest.importorskip("pyNN")
    pytest.importorskip("nest")
    from conftest import subprocess_env
    out = {}
    for backend in ("ranvier", "nest"):
        script = tmp_path / f"point_{backend}.py"
        script.write_text(PYNN_SCRIPT.format(backend=backend))
        data = tmp_path / f"{backend}.npz"
        done = subprocess.run([sys.executable, str(script), str(data)], cwd=tmp_path, env=subprocess_env(),
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        out[backend] = dict(np.load(data))
    ours, theirs = out["ranvier"], out["nest"]
    assert ours.keys() == theirs.keys()
    for key in sorted(ours):
        print(key, ours[key].shape, float(np.max(np.abs(ours[key] - theirs[key]))) if ours[key].shape ==
              theirs[key].shape else "shapes differ")
    assert ours["a:spikes"].size > 5 and ours["b:spikes"].size > 5 and ours["c:spikes"].size > 5
    for key in ours:
        assert ours[key].shape == theirs[key].shape, key
        assert np.max(np.abs(ours[key] - theirs[key])) < 1e-9, key
    assert ours["a:NMDA.gsyn"].max() > 0.0005 and ours["b:GABAA.isyn"].min() < -0.1
