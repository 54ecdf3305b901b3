"""izhikevich (NEST's izhikevich; PyNN's Izhikevich): against NEST 3.10 (skipped without it), one
neuron driven by a step current and excitatory and inhibitory spike trains, with both of NEST's
integration schemes: V and U equal at every step (bound 1e-9), the same spike steps; NEST's
defaults; PyNN's Izhikevich through pyNN.ranvier against pyNN.nest (initial v and u per cell);
bad parameters refused naming the field; the same spikes on 1 and 2 threads."""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv
from ranvier.core.neurons import NEURON_MODELS
from ranvier.core.random import Uniform
from ranvier.errors import ConfigError

H, T_MS, DELAY_MS = 0.1, 300.0, 1.0
TIMES, AMPS = [30.0, 120.0, 200.0], [8.0, 2.0, 14.0]        # NEST's I, added to dV/dt
W_EX, W_IN = 4.0, -3.0                                      # mV


def simulate(params, threads=1):
    net = rv.Network(name="izhikevich")
    net.add_population(rv.Population("ex", 1, {"rate_hz": 400.0, "start_ms": 0.0, "stop_ms": T_MS},
                                     model="poisson_source"))
    net.add_population(rv.Population("in", 1, {"rate_hz": 200.0, "start_ms": 0.0, "stop_ms": T_MS},
                                     model="poisson_source"))
    net.add_population(rv.Population("n", 1, params, model="izhikevich"))
    net.connect(rv.Projection(source="ex", target="n", probability=1.0, weight=W_EX, delay_ms=DELAY_MS))
    net.connect(rv.Projection(source="in", target="n", probability=1.0, weight=W_IN, delay_ms=DELAY_MS))
    net.inject(rv.StepCurrent("n", [t + DELAY_MS for t in TIMES], AMPS))
    return rv.Simulation(net, threads=threads, seed=5, resolution_ms=H, record_state=[2]).run(T_MS)


@pytest.mark.parametrize("consistent", [1.0, 0.0])
def test_against_nest(consistent):
    nest = pytest.importorskip("nest")
    params = {"consistent_integration": consistent, "I_e_pA": 2.0}
    res = simulate(params)
    V, U = np.asarray(res.state["V"][0]), np.asarray(res.state["c"][0])
    ids, steps = np.asarray(res.spike_ids), np.asarray(res.spike_steps)
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.resolution = H
    neuron = nest.Create("izhikevich", params={"consistent_integration": bool(consistent), "I_e": 2.0})
    for i, w in ((0, W_EX), (1, W_IN)):
        gen = nest.Create("spike_generator", params={"spike_times": [round(t, 10) for t in steps[ids == i] * H]})
        nest.Connect(gen, neuron, syn_spec={"weight": w, "delay": DELAY_MS})
    current = nest.Create("step_current_generator", params={"amplitude_times": TIMES, "amplitude_values": AMPS})
    nest.Connect(current, neuron, syn_spec={"delay": DELAY_MS})
    meter = nest.Create("multimeter", params={"record_from": ["V_m", "U_m"], "interval": H})
    recorder = nest.Create("spike_recorder")
    nest.Connect(meter, neuron)
    nest.Connect(neuron, recorder)
    nest.Simulate(T_MS + H)
    ev = meter.get("events")
    k = np.rint(np.asarray(ev["times"]) / H).astype(int) - 1            # V after step k + 1
    keep = k < V.size
    dV = np.abs(np.asarray(ev["V_m"])[keep] - V[k[keep]])
    dU = np.abs(np.asarray(ev["U_m"])[keep] - U[k[keep]])
    print(f"izhikevich (consistent_integration {consistent:g}) vs NEST: |dV| {dV.max():.3g} mV, |dU| {dU.max():.3g}")
    assert keep.sum() >= V.size - 1 and dV.max() < 1e-9 and dU.max() < 1e-9
    theirs = np.rint(np.asarray(recorder.get("events")["times"]) / H).astype(int)
    ours = np.sort(steps[ids == 2])
    assert ours.size >= 5 and np.array_equal(ours, np.sort(theirs[theirs <= round(T_MS / H)]))


def test_defaults_are_nests():
    nest = pytest.importorskip("nest")
    d = nest.GetDefaults("izhikevich")
    ours = NEURON_MODELS["izhikevich"].defaults()
    for key, theirs in (("a", "a"), ("b", "b"), ("c_mV", "c"), ("d_mV_per_ms", "d"), ("I_e_pA", "I_e"), ("V_th_mV", "V_th"),
                        ("V_min_mV", "V_min"), ("V0_mV", "V_m"), ("U0_mV_per_ms", "U_m")):
        assert ours[key] == d[theirs], key
    assert ours["consistent_integration"] == float(d["consistent_integration"])


@pytest.mark.parametrize("bad, message", [({"a": float("nan")}, "'a'"), ({"V_min_mV": 40.0}, "V_min_mV"),
                                          ({"consistent_integration": 2}, "consistent_integration")])
def test_bad_parameters_are_refused(bad, message):
    with pytest.raises(ConfigError, match=message):
        rv.Network(name="x").add_population(rv.Population("n", 1, bad, model="izhikevich"))


def test_the_same_spikes_on_one_and_two_threads():
    runs = []
    for threads in (1, 2):
        net = rv.Network(name="izh-net")
        net.add_population(rv.Population("drive", 40, {"rate_hz": 40.0, "start_ms": 0.0, "stop_ms": 200.0},
                                         model="poisson_source"))
        net.add_population(rv.Population("n", 200, {"I_e_pA": 4.0, "U0_mV_per_ms": Uniform(-15.0, -11.0)},
                                         model="izhikevich", initial=Uniform(-70.0, -60.0)))
        net.connect(rv.Projection(source="drive", target="n", probability=0.3, weight=3.0, delay_ms=1.0))
        net.connect(rv.Projection(source="n", target="n", probability=0.05, weight=-2.0, delay_ms=1.5))
        res = rv.Simulation(net, threads=threads, seed=11, resolution_ms=H).run(200.0)
        n = np.asarray(res.spike_ids) >= 40
        ids, steps = np.asarray(res.spike_ids)[n], np.asarray(res.spike_steps)[n]
        order = np.lexsort((ids, steps))
        runs.append((ids[order], steps[order]))
    assert runs[0][0].size > 100
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])


def _pynn_run(name):
    import importlib
    sim = importlib.import_module(f"pyNN.{name}")
    sim.setup(timestep=H, min_delay=1.0)
    cells = sim.Population(3, sim.Izhikevich(a=0.02, b=0.2, c=-65.0, d=6.0, i_offset=[0.005, 0.008, 0.011]))
    cells.initialize(v=[-70.0, -65.0, -60.0], u=[-14.0, -13.0, -12.0])
    src = sim.Population(1, sim.SpikeSourceArray(spike_times=[10.0, 40.0, 41.0, 90.0]))
    sim.Projection(src, cells, sim.AllToAllConnector(), sim.StaticSynapse(weight=5.0, delay=1.0),
                   receptor_type="excitatory")
    cells.record(["v", "spikes"])
    sim.run(150.0)
    seg = cells.get_data().segments[0]
    out = (seg.filter(name="v")[0].magnitude, [np.rint(t.magnitude / H).astype(int).tolist() for t in seg.spiketrains])
    sim.end()
    return out


def test_pynn_izhikevich_is_pynn_nests():
    pytest.importorskip("pyNN")
    pytest.importorskip("nest")
    v, spikes = _pynn_run("ranvier")
    v_nest, spikes_nest = _pynn_run("nest")
    assert v.shape == v_nest.shape
    # t = 0 is PyNN's initial value on both; pyNN.nest's recorder redraws nothing here (arrays)
    assert float(np.max(np.abs(v - v_nest))) < 1e-9
    assert sum(map(len, spikes)) >= 3 and spikes == spikes_nest
