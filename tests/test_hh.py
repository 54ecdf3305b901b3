"""hh_cond_exp_traub (NEST's hh_cond_exp_traub; PyNN's HH_cond_exp): the Hodgkin-Huxley neuron of
Traub and Miles with exponential conductances, integrated with NEST's adaptive
Runge-Kutta-Fehlberg scheme as iaf_cond_exp is.

Checks:
- without NEST: the defaults are NEST's (the initial gates its steady state at -60 mV); a spike
  is V crossing V_T + 30 mV at its maximum, once per action potential, none in the refractory
  period; threads and placement give the same spikes and traces;
- with NEST 3.10 (skipped when `nest` is not importable): one neuron driven by spike trains
  (excitatory and inhibitory) and a constant current, NEST's model fed the same spikes; V within
  1e-6 mV on the grid, the same spike steps; PyNN's HH_cond_exp through pyNN.ranvier against
  NEST's hh_cond_exp_traub run directly with pyNN.nest's translation.
"""
import numpy as np
import pytest

import ranvier as rv
from test_pynn_cells import compare, nest_one_cell, nest_run, pynn_one_cell, simulate, trains

HH = {"I_e_pA": 200.0, "V0_mean_mV": -65.0}


def nest_params(p):
    names = {"g_Na_nS": "g_Na", "g_K_nS": "g_K", "g_L_nS": "g_L", "C_m_pF": "C_m", "E_Na_mV": "E_Na",
             "E_K_mV": "E_K", "E_L_mV": "E_L", "V_T_mV": "V_T", "E_ex_mV": "E_ex", "E_in_mV": "E_in",
             "tau_syn_ex_ms": "tau_syn_ex", "tau_syn_in_ms": "tau_syn_in", "tau_arp_ms": "t_ref", "I_e_pA": "I_e",
             "V0_mean_mV": "V_m", "Act_m0": "Act_m", "Inact_h0": "Inact_h", "Act_n0": "Act_n"}
    return {names[k]: v for k, v in p.items() if k in names}    # V0_sd_mV: 0


def full(params):
    pop = rv.Population("n", 1, dict(params), model="hh_cond_exp_traub")
    pop.validate()
    return dict(pop.params)


def test_defaults_are_nests():
    p = full({})
    assert {k: p[k] for k in ("g_Na_nS", "g_K_nS", "g_L_nS", "C_m_pF", "V_T_mV", "E_L_mV", "tau_syn_ex_ms",
                              "tau_syn_in_ms", "tau_arp_ms")} == {
        "g_Na_nS": 20000.0, "g_K_nS": 6000.0, "g_L_nS": 10.0, "C_m_pF": 200.0, "V_T_mV": -63.0, "E_L_mV": -60.0,
        "tau_syn_ex_ms": 5.0, "tau_syn_in_ms": 10.0, "tau_arp_ms": 2.0}
    assert 0 < p["Act_m0"] < 1e-7 and 1 - 1e-8 < p["Inact_h0"] <= 1 and 0 < p["Act_n0"] < 1e-6
    with pytest.raises(rv.ConfigError, match="'C_m_pF' must be positive"):
        full({"C_m_pF": 0.0})
    with pytest.raises(rv.ConfigError, match="'Act_n0' must be zero or positive"):
        full({"Act_n0": -0.1})


def test_spikes_at_the_peak_of_each_action_potential():
    ms = 100.0
    V, _, spikes = simulate("hh_cond_exp_traub", full(HH), [], ms)
    assert spikes.size >= 4
    threshold = -63.0 + 30.0
    for s in spikes:                 # spike step s: V after step s is below V after step s - 1, above threshold
        k = s - 1                    # column k: V after step k + 1
        assert V[k] >= threshold and V[k - 1] > V[k] and V[k - 1] >= V[k - 2]
    # One spike per excursion above the threshold.
    above = V >= threshold
    assert np.count_nonzero(above[1:] & ~above[:-1]) == spikes.size
    assert V.max() > 0 and V.min() < -70


def test_the_same_spikes_for_any_threads_and_placement():
    net = rv.Network()
    net.add_population(rv.Population("P", 200, {"rate_hz": 50.0, "stop_ms": 1e9}, model="poisson_source"))
    net.add_population(rv.Population("H", 60, {"I_e_pA": 50.0, "V0_mean_mV": -65.0, "V0_sd_mV": 3.0},
                                     model="hh_cond_exp_traub"))
    net.connect(rv.Projection(source="P", target="H", indegree=20, weight=4.0, delay_ms=1.0))
    net.connect(rv.Projection(source="H", target="H", indegree=5, weight=-3.0, delay_ms=1.5))
    runs = [rv.Simulation(net, threads=t, placement=p, record_state=[200, 259]).run(200.0)
            for t, p in ((1, "round-robin"), (2, "block"), (2, "random"))]
    ids = np.asarray(runs[0].spike_ids)
    assert np.count_nonzero(ids >= 200) > 30
    for r in runs[1:]:
        assert np.array_equal(np.asarray(r.spike_ids), ids)
        assert np.array_equal(np.asarray(r.spike_steps), np.asarray(runs[0].spike_steps))
        assert np.array_equal(np.asarray(r.state["V"]), np.asarray(runs[0].state["V"]))


@pytest.mark.parametrize("I_e, weights", [(0.0, (8.0, 30.0, -10.0)), (150.0, (2.0, 10.0, -4.0))],
                         ids=["synaptic", "current-and-synaptic"])
def test_against_nest(I_e, weights):
    nest = pytest.importorskip("nest")
    ms = 300.0
    params = full({"I_e_pA": I_e, "V0_mean_mV": -64.0})
    inputs = list(zip(trains(ms), weights))
    V, _, ours = simulate("hh_cond_exp_traub", params, inputs, ms)
    k, V_nest, theirs = nest_run(nest, "hh_cond_exp_traub", nest_params(params), inputs, ms)
    largest, at = compare("hh_cond_exp_traub vs NEST", V, ours, k, V_nest, theirs, ms)
    assert largest < 1e-6, f"largest difference {largest:.3g} mV at t = {at} ms"


def test_pynn_hh_cond_exp_is_nests_hh_cond_exp_traub():
    """PyNN's HH_cond_exp through pyNN.ranvier (PyNN's units; its initial gates m 0, h 1, n 0, as
    pyNN.nest sets them) against NEST's hh_cond_exp_traub run directly with pyNN.nest's
    translation: the same spikes, V within 1e-6 mV at every step, gsyn_exc NEST's g_ex (uS)."""
    nest = pytest.importorskip("nest")
    pytest.importorskip("pyNN")
    import pyNN.ranvier as sim
    times_ex, times_in = [5.0, 6.0, 20.0, 30.5, 31.0, 52.0, 70.0], [40.0, 41.0, 75.0]
    cell_params = dict(gbar_Na=20.0, gbar_K=6.0, g_leak=0.01, cm=0.2, v_offset=-63.0, e_rev_Na=50.0, e_rev_K=-90.0,
                       e_rev_leak=-65.0, e_rev_E=0.0, e_rev_I=-80.0, tau_syn_E=0.2, tau_syn_I=2.0, i_offset=0.1)
    ours, signals = pynn_one_cell(sim.HH_cond_exp(**cell_params), {"v": -64.0},
                                  [(times_ex, 0.05, "excitatory"), (times_in, 0.02, "inhibitory")], ["v", "gsyn_exc"])
    theirs, events, k = nest_one_cell(nest, "hh_cond_exp_traub", {
        "g_Na": 20000.0, "g_K": 6000.0, "g_L": 10.0, "C_m": 200.0, "V_T": -63.0, "E_Na": 50.0, "E_K": -90.0,
        "E_L": -65.0, "E_ex": 0.0, "E_in": -80.0, "tau_syn_ex": 0.2, "tau_syn_in": 2.0, "I_e": 100.0,
        "V_m": -64.0, "Act_m": 0.0, "Inact_h": 1.0, "Act_n": 0.0}, [(times_ex, 50.0), (times_in, -20.0)], ["V_m", "g_ex"])
    assert ours.size > 2 and np.allclose(ours, theirs, atol=1e-9)
    largest = np.max(np.abs(signals["v"][k] - events["V_m"]))
    print(f"HH_cond_exp (pyNN.ranvier) vs NEST hh_cond_exp_traub: largest |V difference| {largest:.3g} mV")
    assert largest < 1e-6
    assert np.max(np.abs(signals["gsyn_exc"][k] - events["g_ex"] / 1000.0)) < 1e-9
    assert signals["v"][0] == -64.0


def test_pynn_gates_must_be_one_per_population():
    pytest.importorskip("pyNN")
    import pyNN.ranvier as sim
    from pyNN import errors
    sim.setup(timestep=0.1)
    cell = sim.Population(2, sim.HH_cond_exp())
    cell.initialize(m=[0.0, 0.1])
    with pytest.raises(errors.InvalidParameterValueError, match="initial 'm' must be the same for every cell"):
        sim.run(1.0)
    sim.end()
