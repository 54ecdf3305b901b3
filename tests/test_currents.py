"""Injected currents (ranvier.core.devices: StepCurrent, DCCurrent, NoiseCurrent, ACCurrent):
exact on the grid, NEST's step_current_generator and ac_generator to the step, the same spikes
for any threads and placement, and clear errors before anything is built. Ranks: tests/test_sonata.py runs a network with a current
clamp on 1 and 2 ranks."""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv

H = 0.1
NEST_PARAMS = dict(E_L=-65.0, V_th=-50.0, V_reset=-65.0, C_m=200.0, tau_m=15.0, t_ref=2.0, tau_syn_ex=1.5,
                   tau_syn_in=3.0, I_e=10.0, V_m=-70.0)
RV_PARAMS = dict(E_L_mV=-65.0, V_th_mV=-50.0, V_reset_mV=-65.0, C_m_pF=200.0, tau_m_ms=15.0, tau_arp_ms=2.0,
                 tau_syn_ex_ms=1.5, tau_syn_in_ms=3.0, I_e_pA=10.0, V0_mean_mV=-70.0)
TIMES = [10.0, 25.0, 40.0, 70.0]
AMPS = [320.0, -150.0, 500.0, 0.0]
INPUT_TIMES = [5.0, 30.0, 31.0, 60.0]


# model -> (Ranvier parameters, NEST's model and parameters, the two input weights)
MODELS = {
    "iaf_psc_alpha": (RV_PARAMS, "iaf_psc_alpha", NEST_PARAMS, (400.0, -200.0)),
    "psc_exp": (RV_PARAMS, "iaf_psc_exp", NEST_PARAMS, (400.0, -200.0)),
    "iaf_cond_exp": ({**{k: v for k, v in RV_PARAMS.items() if k != "tau_m_ms"}, "g_L_nS": 200.0 / 15.0,
                      "E_ex_mV": 0.0, "E_in_mV": -85.0},
                     "iaf_cond_exp", {**{k: v for k, v in NEST_PARAMS.items() if k != "tau_m"}, "g_L": 200.0 / 15.0,
                                      "E_ex": 0.0, "E_in": -85.0}, (6.0, -12.0)),
}
MODELS["iaf_cond_alpha"] = (MODELS["iaf_cond_exp"][0], "iaf_cond_alpha", *MODELS["iaf_cond_exp"][2:])
# The adaptation and relative refractory conductances at their defaults, NEST's and Ranvier's.
MODELS["iaf_cond_exp_sfa_rr"] = (MODELS["iaf_cond_exp"][0], "iaf_cond_exp_sfa_rr", *MODELS["iaf_cond_exp"][2:])


def one_neuron(times=TIMES, amps=AMPS, extra_sources=(), model="iaf_psc_alpha"):
    params, _, _, (w_ex, w_in) = MODELS[model]
    net = rv.Network()
    net.add_population(rv.Population("pre", 1, params={"spike_times_ms": INPUT_TIMES}, model="spike_train"))
    net.add_population(rv.Population("n", 1, model=model, params=params))
    net.connect(rv.Projection(source="pre", target="n", sources=[0, 0], targets=[0, 0], weight=[w_ex, w_in],
                              delay_ms=[1.0, 2.0]))
    net.inject(rv.StepCurrent("n", times, amps))
    for src in extra_sources:
        net.inject(src)
    res = rv.Simulation(net, resolution_ms=H, record_state=[1]).run(100.0)
    return np.asarray(res.state["V"]).ravel() + params["E_L_mV"], res


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("delay_ms", [0.1, 1.0])
def test_nests_step_current_generator_to_the_step(model, delay_ms):
    """NEST's generator with amplitude_times t reaches the neuron over its connection's delay d:
    StepCurrent(times t + d) gives its V at every step within 1e-9 mV (1e-6 for iaf_cond_*),
    and its spikes."""
    nest = pytest.importorskip("nest")
    _, nest_model, nest_params, (w_ex, w_in) = MODELS[model]
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.resolution = H
    n = nest.Create(nest_model, params=nest_params)
    pre = nest.Create("spike_generator", params={"spike_times": INPUT_TIMES})
    nest.Connect(pre, n, syn_spec={"weight": w_ex, "delay": 1.0})
    nest.Connect(pre, n, syn_spec={"weight": w_in, "delay": 2.0})
    gen = nest.Create("step_current_generator", params={"amplitude_times": TIMES, "amplitude_values": AMPS})
    nest.Connect(gen, n, syn_spec={"delay": delay_ms})
    meter = nest.Create("multimeter", params={"record_from": ["V_m"], "interval": H})
    nest.Connect(meter, n)
    rec = nest.Create("spike_recorder")
    nest.Connect(n, rec)
    nest.Simulate(100.0)
    t_nest, v_nest = meter.events["times"], meter.events["V_m"]
    v, res = one_neuron([t + delay_ms for t in TIMES], model=model)
    k = np.rint(t_nest / H).astype(int) - 1               # our row k holds V at (k + 1) h
    assert k.size > 900 and np.max(np.abs(v[k] - v_nest)) < (1e-6 if model.startswith("iaf_cond") else 1e-9)
    ids, times = res.spikes
    ours = times[ids == 1]
    assert ours.size > 0 and np.allclose(ours, rec.events["times"], atol=1e-9)


def test_a_current_moves_v_from_the_step_after_its_time():
    quiet, _ = one_neuron(times=[50.0], amps=[0.0])
    v, _ = one_neuron(times=[50.0], amps=[100.0])
    first = np.flatnonzero(np.abs(v - quiet) > 0)[0]
    assert first == round(50.0 / H)                        # row 500: V at 50.1 ms, the first it moves


def test_sources_on_one_neuron_add_up():
    both, _ = one_neuron(times=[20.0, 60.0], amps=[100.0, 0.0],
                         extra_sources=[rv.DCCurrent("n", 150.0, start_ms=20.0, stop_ms=60.0)])
    one, _ = one_neuron(times=[20.0, 60.0], amps=[250.0, 0.0])
    assert np.max(np.abs(both - one)) < 1e-12


def network_with_currents():
    net = rv.Network()
    net.add_population(rv.Population("E", 200, model="iaf_psc_alpha", params={**RV_PARAMS, "I_e_pA": 0.0}))
    net.add_population(rv.Population("I", 50, model="iaf_psc_alpha", params={**RV_PARAMS, "I_e_pA": 0.0},
                                     excitatory=False))
    net.connect(rv.Projection(source="E", target="E", indegree=20, weight=40.0, delay_ms=1.5))
    net.connect(rv.Projection(source="E", target="I", indegree=20, weight=40.0, delay_ms=1.0))
    net.connect(rv.Projection(source="I", target="E", indegree=10, weight=-120.0, delay_ms=1.0))
    net.inject(rv.StepCurrent("E", [10.0, 60.0, 120.0], [380.0, 250.0, 420.0], neurons=list(range(0, 200, 3))))
    net.inject(rv.DCCurrent("E", 300.0, start_ms=30.0, stop_ms=150.0, neurons=list(range(100, 200))))
    net.inject(rv.DCCurrent("I", 330.0, start_ms=5.0))
    return net


def test_the_same_spikes_for_any_threads_and_placement():
    net = network_with_currents()
    runs = [rv.Simulation(net, threads=t, placement=p).run(200.0).spikes
            for t, p in ((1, "round-robin"), (2, "block"), (2, "random"), (2, "round-robin"))]
    assert runs[0][0].size > 200
    for ids, times in runs[1:]:
        assert np.array_equal(ids, runs[0][0]) and np.array_equal(times, runs[0][1])


@pytest.mark.parametrize("make, words", [
    (lambda net: net.inject(rv.StepCurrent("L", [1.0], [5.0])), ["model 'lifca' takes no injected current",
                                                                 "iaf_psc_alpha"]),
    (lambda net: net.inject(rv.StepCurrent("A", [1.0, 2.0], [5.0])), ["'times_ms' (2)", "'amplitudes_pA' (1)"]),
    (lambda net: net.inject(rv.StepCurrent("A", [2.0, 1.0], [5.0, 0.0])), ["strictly increasing"]),
    (lambda net: net.inject(rv.StepCurrent("A", [1.0], [5.0], neurons=[0, 3])), ["'neurons' must be in [0, 3)"]),
    (lambda net: net.inject(rv.DCCurrent("A", 5.0, start_ms=10.0, stop_ms=5.0)), ["stop_ms", "after start_ms"]),
    (lambda net: net.inject(rv.StepCurrent("B", [1.0], [5.0])), ["no population named 'B'"]),
    (lambda net: net.inject(rv.ACCurrent("A", 5.0, -10.0)), ["AC current on 'A'", "'frequency_hz' (-10.0)"]),
    (lambda net: net.inject(rv.ACCurrent("A", 5.0, 10.0, start_ms=10.0, stop_ms=5.0)), ["stop_ms", "after start_ms"]),
    (lambda net: net.inject(rv.ACCurrent("A", 5.0, float("nan"))), ["'frequency_hz' must be a finite number"]),
    (lambda net: net.inject(rv.ACCurrent("L", 5.0, 10.0)), ["model 'lifca' takes no injected current"]),
])
def test_bad_sources_are_refused_by_name(make, words):
    net = rv.Network()
    net.add_population(rv.Population("L", 3))
    net.add_population(rv.Population("A", 3, model="iaf_psc_alpha"))
    with pytest.raises(rv.ConfigError) as e:
        make(net)
    for w in words:
        assert w in str(e.value)


def test_a_time_off_the_grid_is_refused_before_the_build():
    net = rv.Network()
    net.add_population(rv.Population("A", 3, model="iaf_psc_alpha"))
    net.inject(rv.StepCurrent("A", [1.05], [5.0]))
    with pytest.raises(rv.ConfigError, match="1.05 ms is not a whole number of steps of 0.1 ms"):
        rv.Simulation(net).run(10.0)


def currents_seen(net, ids, T=1000.0):
    """The injected current of every step, recovered from V (exact integration: V' = P30 (I + I_e) + e^(-h/tau) V;
    V_th far above, so no spike, and no synaptic input)."""
    res = rv.Simulation(net, resolution_ms=H, record_state=ids).run(T)
    v = np.asarray(res.state["V"]).T                   # [step, neuron], relative to E_L; V starts at V0 - E_L
    tau, c = RV_PARAMS["tau_m_ms"], RV_PARAMS["C_m_pF"]
    p30 = -tau / c * np.expm1(-H / tau)
    v0 = np.full((1, len(ids)), RV_PARAMS["V0_mean_mV"] - RV_PARAMS["E_L_mV"])
    before = np.vstack([v0, v[:-1]])
    return (v - np.exp(-H / tau) * before) / p30 - RV_PARAMS["I_e_pA"]


def quiet_population(n):
    net = rv.Network()
    net.add_population(rv.Population("n", n, model="iaf_psc_alpha", params={**RV_PARAMS, "V_th_mV": 1e6}))
    return net


def test_noise_current_draws_its_value_every_dt_with_its_mean_and_sd():
    net = quiet_population(4)
    net.inject(rv.NoiseCurrent("n", mean_pA=50.0, std_pA=20.0, dt_ms=0.5, start_ms=100.0, stop_ms=900.0))
    i = currents_seen(net, [0, 1, 2, 3])
    assert np.max(np.abs(i[:1000])) < 1e-6 and np.max(np.abs(i[9000:])) < 1e-6    # off before start, after stop
    on = i[1000:9000].reshape(-1, 5, 4)                  # 1600 intervals of 5 steps, 4 neurons
    assert np.max(np.ptp(on, axis=1)) < 1e-6             # constant within an interval
    draws = on[:, 0, :]
    assert abs(draws.mean() - 50.0) < 5 * 20.0 / np.sqrt(draws.size)
    assert abs(draws.std() / 20.0 - 1) < 0.05
    c = np.corrcoef(draws.T)
    assert np.max(np.abs(c[np.triu_indices(4, 1)])) < 0.1   # each neuron its own draws


def test_noise_without_spread_is_its_mean_exactly():
    noisy = quiet_population(2)
    noisy.inject(rv.NoiseCurrent("n", mean_pA=75.0, std_pA=0.0, dt_ms=1.0, start_ms=10.0))
    dc = quiet_population(2)
    dc.inject(rv.DCCurrent("n", 75.0, start_ms=10.0))
    a = rv.Simulation(noisy, resolution_ms=H, record_state=[0, 1]).run(100.0).state["V"]
    b = rv.Simulation(dc, resolution_ms=H, record_state=[0, 1]).run(100.0).state["V"]
    assert np.array_equal(np.asarray(a), np.asarray(b))


def test_noise_is_the_same_for_any_threads_and_placement():
    net = network_with_currents()
    net.inject(rv.NoiseCurrent("E", mean_pA=100.0, std_pA=150.0, dt_ms=1.0, neurons=list(range(50))))
    runs = [rv.Simulation(net, threads=t, placement=p).run(200.0).spikes
            for t, p in ((1, "round-robin"), (2, "block"), (2, "random"))]
    for ids, times in runs[1:]:
        assert np.array_equal(ids, runs[0][0]) and np.array_equal(times, runs[0][1])


@pytest.mark.parametrize("interval_ms", [0.5, 1.0, 2.5])
def test_state_sampled_at_an_interval_is_the_every_step_state_at_its_multiples(interval_ms):
    """record_state_interval_ms: the state at every multiple of the interval, over run() calls
    that end anywhere (here 37.3 ms, then the rest)."""
    net = network_with_currents()
    ids = [0, 5, 120, 230]
    full = rv.Simulation(net, record_state=ids)
    full.run(37.3)
    every = full.run(62.7).state
    sampled_sim = rv.Simulation(net, record_state=ids, record_state_interval_ms=interval_ms)
    sampled_sim.run(37.3)
    sampled = sampled_sim.run(62.7).state
    k = round(interval_ms / H)
    assert sampled["interval_ms"] == pytest.approx(interval_ms)
    assert np.asarray(sampled["V"]).shape == (4, round(100.0 / interval_ms))
    assert np.array_equal(np.asarray(sampled["V"]), np.asarray(every["V"])[:, k - 1::k])
    assert np.array_equal(np.asarray(sampled["c"]), np.asarray(every["c"])[:, k - 1::k])


def test_an_interval_off_the_grid_is_refused():
    with pytest.raises(rv.ConfigError, match="record_state_interval_ms must be a whole number"):
        rv.Simulation(network_with_currents(), record_state=[0], record_state_interval_ms=0.25 + 0.01)


@pytest.mark.parametrize("ranks,threads,placement,exchange", [(2, 1, "block", "alltoallv"),
                                                             (3, 2, "round-robin", "p2p"),
                                                             (2, 2, "random", "allgather")])
def test_devices_give_the_same_spikes_for_any_decomposition(workloads, ranks, threads, placement, exchange):
    """Step, DC, AC and noise currents and inhomogeneous Poisson, gamma and dead-time Poisson
    sources on iaf_psc_alpha neurons: the same spikes on any ranks x threads x placement x exchange
    (tests/mpi_runner.py: devices_network)."""
    kw = dict(model="devices", neurons=1000, probability=0.05, ms=200.0)
    ref = workloads(1, threads=1, exchange="allgather", placement="round-robin", **kw)
    run = workloads(ranks, threads=threads, exchange=exchange, placement=placement, **kw)
    quiet = workloads(1, threads=1, exchange="allgather", placement="round-robin", model="iaf_psc_alpha",
                      neurons=1000, probability=0.05, ms=200.0)
    assert ref["ids"].size > 1000 and ref["digest"] != quiet["digest"]      # the devices change the spikes
    assert run["digest"] == ref["digest"]
    assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"])


def test_parameters_set_between_runs_are_nests_setstatus():
    """Simulation.set_parameters between runs: NEST's SetStatus between Simulate calls, V within
    1e-9 mV at every step (iaf_psc_alpha: I_e and the threshold change; the state is kept)."""
    nest = pytest.importorskip("nest")
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.resolution = H
    n = nest.Create("iaf_psc_alpha", params=NEST_PARAMS)
    meter = nest.Create("multimeter", params={"record_from": ["V_m"], "interval": H})
    nest.Connect(meter, n)
    nest.Simulate(30.0)
    n.set({"I_e": 420.0, "V_th": -52.0})
    nest.Simulate(70.0)
    net = rv.Network()
    net.add_population(rv.Population("n", 1, model="iaf_psc_alpha", params=RV_PARAMS))
    sim = rv.Simulation(net, resolution_ms=H, record_state=[0])
    sim.run(30.0)
    sim.set_parameters("n", I_e_pA=420.0, V_th_mV=-52.0)
    res = sim.run(70.0)
    v = np.asarray(res.state["V"]).ravel() + RV_PARAMS["E_L_mV"]
    k = np.rint(meter.events["times"] / H).astype(int) - 1
    assert res.spikes_total > 0 and np.max(np.abs(v[k] - meter.events["V_m"])) < 1e-9
    assert net.population("n").params["I_e_pA"] == 420.0


def test_new_spike_trains_go_on_from_the_current_time():
    net = rv.Network()
    net.add_population(rv.Population("s", 2, params={"spike_times_ms": [[5.0, 25.0], []]}, model="spike_train"))
    sim = rv.Simulation(net)
    sim.run(10.0)
    sim.set_parameters("s", spike_times_ms=[[2.0, 12.0, 15.0], [17.0]])     # 2.0 is past: not fired again
    ids, times = sim.run(20.0).spikes
    assert list(zip(ids.tolist(), times.tolist())) == [(0, 5.0), (0, 12.0), (0, 15.0), (1, 17.0)]


def test_a_current_schedule_replaced_between_runs_equals_the_whole_schedule():
    def build():
        net = network_with_currents()
        return net
    whole = build()
    whole.currents[0] = rv.StepCurrent("E", [10.0, 60.0, 80.0, 120.0], [380.0, 250.0, 100.0, 420.0],
                                       neurons=list(range(0, 200, 3)))
    ref = rv.Simulation(whole, threads=2).run(200.0).spikes
    for threads, placement in ((1, "round-robin"), (2, "random")):
        net = build()
        sim = rv.Simulation(net, threads=threads, placement=placement)
        sim.run(70.0)                 # the old schedule until 70 ms: 380 from 10, 250 from 60
        sim.set_current(0, rv.StepCurrent("E", [10.0, 60.0, 80.0, 120.0], [380.0, 250.0, 100.0, 420.0],
                                          neurons=list(range(0, 200, 3))))
        ids, times = sim.run(130.0).spikes
        assert np.array_equal(ids, ref[0]) and np.array_equal(times, ref[1])


def test_what_cannot_change_between_runs_is_refused():
    net = rv.Network()
    net.add_population(rv.Population("p", 3, model="psc_exp", params={"tau_syn_ms": 2.0}))
    net.inject(rv.DCCurrent("p", 10.0))
    sim = rv.Simulation(net)
    sim.run(5.0)
    with pytest.raises(rv.ConfigError, match="unknown parameter"):
        sim.set_parameters("p", tau_m=3.0)
    with pytest.raises(rv.ConfigError, match="same kind of source on the same neurons"):
        sim.set_current(0, rv.DCCurrent("p", 10.0, neurons=[0]))


def test_the_inhibitory_synaptic_variable_is_recorded_as_nests():
    """Result.state["c_in"]: iaf_cond_*'s g_in and iaf_psc_alpha's I_in, equal to NEST's g_in and
    I_syn_in at every step (1e-9); NaN for a model without one (lifca)."""
    nest = pytest.importorskip("nest")
    for model, nest_name in (("iaf_cond_exp", "g_in"), ("iaf_cond_alpha", "g_in"), ("iaf_psc_alpha", "I_syn_in")):
        params, nest_model, nest_params, (w_ex, w_in) = MODELS[model]
        nest.ResetKernel()
        nest.set_verbosity("M_ERROR")
        nest.resolution = H
        n = nest.Create(nest_model, params=nest_params)
        pre = nest.Create("spike_generator", params={"spike_times": INPUT_TIMES})
        nest.Connect(pre, n, syn_spec={"weight": w_ex, "delay": 1.0})
        nest.Connect(pre, n, syn_spec={"weight": w_in, "delay": 2.0})
        meter = nest.Create("multimeter", params={"record_from": [nest_name], "interval": H})
        nest.Connect(meter, n)
        nest.Simulate(100.0)
        _, res = one_neuron(times=[50.0], amps=[0.0], model=model)
        c_in = np.asarray(res.state["c_in"]).ravel()
        k = np.rint(meter.events["times"] / H).astype(int) - 1
        theirs = np.abs(meter.events[nest_name])
        assert theirs.max() > 0 and np.max(np.abs(np.abs(c_in[k]) - theirs)) < 1e-9
    net = rv.Network()
    net.add_population(rv.Population("L", 2))
    assert np.all(np.isnan(rv.Simulation(net, record_state=[0]).run(5.0).state["c_in"]))


AC = dict(amplitude=900.0, offset=150.0, frequency=37.0, phase=25.0, start=12.0, stop=81.3)


@pytest.mark.parametrize("model", ["psc_exp", "iaf_psc_alpha", "iaf_cond_exp"])
@pytest.mark.parametrize("delay_ms", [0.1, 1.0])
def test_nests_ac_generator_to_the_step(model, delay_ms):
    """NEST's ac_generator (start S, stop E, phase phi, offset, over two Simulate calls) reaching
    the neuron over delay d: ACCurrent(start S + d, stop E + d, phase phi - 360 f d / 1000) gives
    its V at every step within 1e-9 mV, and its spikes."""
    nest = pytest.importorskip("nest")
    params, nest_model, nest_params, _ = MODELS[model]
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.resolution = H
    n = nest.Create(nest_model, params=nest_params)
    gen = nest.Create("ac_generator", params=AC)
    nest.Connect(gen, n, syn_spec={"delay": delay_ms})
    meter = nest.Create("multimeter", params={"record_from": ["V_m"], "interval": H})
    nest.Connect(meter, n)
    rec = nest.Create("spike_recorder")
    nest.Connect(n, rec)
    nest.Simulate(40.0)
    nest.Simulate(60.0)
    net = rv.Network()
    net.add_population(rv.Population("n", 1, model=model, params=params))
    f = AC["frequency"]
    net.inject(rv.ACCurrent("n", AC["amplitude"], f, phase_deg=AC["phase"] - 360.0 * f * delay_ms / 1000.0,
                            offset_pA=AC["offset"], start_ms=AC["start"] + delay_ms, stop_ms=AC["stop"] + delay_ms))
    sim = rv.Simulation(net, resolution_ms=H, record_state=[0])
    sim.run(40.0)
    res = sim.run(60.0)
    v = np.asarray(res.state["V"]).ravel() + params["E_L_mV"]
    k = np.rint(meter.events["times"] / H).astype(int) - 1
    assert k.size > 900 and np.max(np.abs(v[k] - meter.events["V_m"])) < 1e-9
    assert np.ptp(meter.events["V_m"]) > 10.0                      # the current moves V a lot
    ids, times = res.spikes
    assert rec.events["times"].size > 0 and np.allclose(times, rec.events["times"], atol=1e-9)


def test_ac_current_is_its_sine_in_its_window():
    """offset + A sin(2 pi f t / 1000 + phi) in the step that starts at t, start <= t < stop, 0
    outside; Simulation.current_values gives what the neurons get (recovered from V)."""
    net = quiet_population(3)
    net.inject(rv.ACCurrent("n", 250.0, 13.0, phase_deg=70.0, offset_pA=-30.0, start_ms=100.0, stop_ms=850.0,
                            neurons=[0, 2]))
    i = currents_seen(net, [0, 1, 2])
    t = np.arange(10000) * H
    sine = np.where((t >= 100.0 - 1e-9) & (t < 850.0 - 1e-9),
                    -30.0 + 250.0 * np.sin(2 * np.pi * 13.0 * t / 1000.0 + np.deg2rad(70.0)), 0.0)
    assert np.max(np.abs(i[:, 0] - sine)) < 1e-6 and np.max(np.abs(i[:, 2] - sine)) < 1e-6
    assert np.max(np.abs(i[:, 1])) < 1e-6                         # not a target
    assert i[999, 0] == pytest.approx(0.0, abs=1e-6) and abs(i[1000, 0]) > 1.0 and abs(i[8499, 0]) > 1.0
    sim = rv.Simulation(net, resolution_ms=H)
    values = sim.current_values(0, 0, 10000)
    assert np.max(np.abs(values - sine)) < 1e-9
    assert np.max(np.abs(values - i[:, 0])) < 1e-6
    assert np.array_equal(sim.current_values(0, 4000, 300), values[4000:4300])   # a function of the step


def test_ac_current_set_between_runs_takes_effect_at_the_next_step():
    net = quiet_population(1)
    net.inject(rv.ACCurrent("n", 200.0, 20.0))
    sim = rv.Simulation(net, resolution_ms=H, record_state=[0])
    sim.run(30.0)
    before = sim.current_values(0, 0, 300)
    sim.set_current(0, rv.ACCurrent("n", 120.0, 55.0, phase_deg=10.0, offset_pA=5.0))
    res = sim.run(70.0)
    after = sim.current_values(0, 300, 700)
    tau, c = RV_PARAMS["tau_m_ms"], RV_PARAMS["C_m_pF"]
    v = np.asarray(res.state["V"]).ravel()
    seen = (v[1:] - np.exp(-H / tau) * v[:-1]) / (-tau / c * np.expm1(-H / tau)) - RV_PARAMS["I_e_pA"]
    assert np.max(np.abs(seen[299:] - after)) < 1e-6 and np.max(np.abs(seen[:299] - before[1:])) < 1e-6
    with pytest.raises(rv.ConfigError, match="same kind of source"):
        sim.set_current(0, rv.DCCurrent("n", 5.0))


def test_ac_current_is_the_same_for_any_threads_and_placement():
    net = network_with_currents()
    net.inject(rv.ACCurrent("E", 400.0, 10.0, phase_deg=15.0, offset_pA=250.0, start_ms=20.0, neurons=list(range(60))))
    runs = [rv.Simulation(net, threads=t, placement=p).run(200.0).spikes
            for t, p in ((1, "round-robin"), (2, "block"), (2, "random"))]
    plain = rv.Simulation(network_with_currents()).run(200.0).spikes
    assert not (plain[0].size == runs[0][0].size and np.array_equal(plain[0], runs[0][0]))
    for ids, times in runs[1:]:
        assert np.array_equal(ids, runs[0][0]) and np.array_equal(times, runs[0][1])


def test_current_values_are_what_the_neurons_get():
    """Simulation.current_values for step, DC and noise sources: each target's current recovered
    from V (one target each; a noise source over two targets gives their average)."""
    net = quiet_population(4)
    net.inject(rv.StepCurrent("n", [10.0, 40.0, 70.0], [120.0, -60.0, 30.0], neurons=[0]))
    net.inject(rv.DCCurrent("n", 75.0, start_ms=20.0, stop_ms=60.0, neurons=[1]))
    net.inject(rv.NoiseCurrent("n", mean_pA=40.0, std_pA=90.0, dt_ms=0.5, start_ms=15.0, stop_ms=80.0,
                               neurons=[2, 3]))
    i = currents_seen(net, [0, 1, 2, 3], T=100.0)
    sim = rv.Simulation(net, resolution_ms=H)
    assert np.max(np.abs(sim.current_values(0, 0, 1000) - i[:, 0])) < 1e-6
    assert np.max(np.abs(sim.current_values(1, 0, 1000) - i[:, 1])) < 1e-6
    noise = sim.current_values(2, 0, 1000)
    assert np.ptp(i[150:800, 2]) > 100.0 and np.max(np.abs(noise - (i[:, 2] + i[:, 3]) / 2)) < 1e-6
    with pytest.raises(rv.ConfigError, match="no number 3"):
        sim.current_values(3, 0, 10)
