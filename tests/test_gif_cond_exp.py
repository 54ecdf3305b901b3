"""gif_cond_exp (NEST's gif_cond_exp; PyNN's GIF_cond_exp): the generalised integrate-and-fire
neuron with a spike-triggered current, a moving threshold and stochastic spiking.

Column k of a trace is V after step k + 1. Checks, against NEST 3.10 (skipped without `nest`)
with the same spike trains and the same delay:
- without spikes (lambda_0 = 0): V, g_ex, g_in within 1e-9 (mV, nS) at every step;
- with a hazard sharp enough to be deterministic (Delta_V 1e-3 mV, lambda_0 1e12/s: a neuron
  spikes in the first step V passes E_sfa, never before): the same spike steps, so the
  spike-triggered current and the moving threshold jump and decay as NEST's, V within 1e-9 mV;
- stochastic spiking (NEST's defaults but a drive): the rate of 400 neurons within 5 % of NEST's
  (its own random numbers: the same law, not the same spikes);
- without NEST: the same spikes on 1 and 2 threads (each neuron draws from its own stream).
"""
import numpy as np
import pytest

import ranvier as rv
from ranvier.errors import ConfigError
from test_pynn_cells import DELAY_MS, H, nest_run, trains

GIF = {"E_L_mV": -70.0, "V_reset_mV": -55.0, "V_T_star_mV": -35.0, "Delta_V_mV": 0.5, "lambda_0_hz": 1.0,
       "C_m_pF": 80.0, "g_L_nS": 4.0, "E_ex_mV": 0.0, "E_in_mV": -85.0, "tau_syn_ex_ms": 2.0, "tau_syn_in_ms": 5.0,
       "tau_arp_ms": 4.0, "I_e_pA": 60.0, "gsl_error_tol": 1e-3,
       "tau_stc_ms": [10.0, 50.0], "q_stc_pA": [20.0, 5.0], "tau_sfa_ms": [20.0, 200.0], "q_sfa_mV": [8.0, 2.0],
       "V0_mean_mV": -70.0, "V0_sd_mV": 0.0}
NEST_NAMES = {"E_L_mV": "E_L", "V_reset_mV": "V_reset", "V_T_star_mV": "V_T_star", "Delta_V_mV": "Delta_V",
              "lambda_0_hz": "lambda_0", "C_m_pF": "C_m", "g_L_nS": "g_L", "E_ex_mV": "E_ex", "E_in_mV": "E_in",
              "tau_syn_ex_ms": "tau_syn_ex", "tau_syn_in_ms": "tau_syn_in", "tau_arp_ms": "t_ref", "I_e_pA": "I_e",
              "gsl_error_tol": "gsl_error_tol", "tau_stc_ms": "tau_stc", "q_stc_pA": "q_stc", "tau_sfa_ms": "tau_sfa",
              "q_sfa_mV": "q_sfa"}
INPUTS = (1.5, 12.0, -2.0)            # nS: frequent excitatory, rare strong excitatory, inhibitory


def nest_params(params):
    return {NEST_NAMES[k]: v for k, v in params.items() if k in NEST_NAMES}


def simulate(params, inputs, ms, n=1, threads=1, seed=3):
    """(V absolute of the first neuron per step, g_ex, g_in, spike steps of every neuron, ids)."""
    net = rv.Network(name="gif")
    for i, (times, _) in enumerate(inputs):
        net.add_population(rv.Population(f"s{i}", 1, {"spike_times_ms": times.tolist()}, model="spike_train"))
    net.add_population(rv.Population("n", n, dict(params), model="gif_cond_exp"))
    for i, (_, w) in enumerate(inputs):
        net.connect(rv.Projection(source=f"s{i}", target="n", probability=1.0, weight=w, delay_ms=DELAY_MS))
    first = len(inputs)
    res = rv.Simulation(net, threads=threads, seed=seed, resolution_ms=H, record_state=[first]).run(ms)
    V = np.asarray(res.state["V"][0], dtype=np.float64) + params["E_L_mV"]
    g_ex, g_in = (np.asarray(res.state[key][0], dtype=np.float64) for key in ("c", "c_in"))
    ids, steps = np.asarray(res.spike_ids), np.asarray(res.spike_steps)
    mine = ids >= first
    return V, g_ex, g_in, steps[mine], ids[mine] - first


def nest_traces(nest, params, inputs, ms):
    k, V, spikes = nest_run(nest, "gif_cond_exp", nest_params(params), inputs, ms)
    return k, V, spikes


def test_without_spikes_the_traces_are_nests():
    nest = pytest.importorskip("nest")
    ms = 300.0
    params = {**GIF, "lambda_0_hz": 0.0}
    inputs = list(zip(trains(ms, seed=4), INPUTS))
    V, g_ex, g_in, ours, _ = simulate(params, inputs, ms)
    assert ours.size == 0
    k, V_nest, theirs = nest_traces(nest, params, inputs, ms)
    assert theirs.size == 0
    keep = k < V.size
    largest = np.abs(V_nest[keep] - V[k[keep]]).max()
    print(f"gif_cond_exp without spikes against NEST: largest |V difference| {largest:.3g} mV; V from "
          f"{V.min():.2f} to {V.max():.2f} mV")
    assert largest < 1e-9 and V.max() - V.min() > 5.0


def test_a_deterministic_hazard_gives_nests_spikes_and_adaptation():
    nest = pytest.importorskip("nest")
    ms = 400.0
    params = {**GIF, "Delta_V_mV": 1e-3, "lambda_0_hz": 1e12, "I_e_pA": 250.0}
    inputs = list(zip(trains(ms, seed=5), INPUTS))
    V, _, _, ours, _ = simulate(params, inputs, ms)
    k, V_nest, theirs = nest_traces(nest, params, inputs, ms)
    theirs = theirs[theirs <= round(ms / H)]
    assert ours.size > 8 and np.array_equal(np.sort(ours), np.sort(theirs))
    intervals = np.diff(np.sort(ours))
    assert intervals[-1] > intervals[0]                     # the threshold and the current adapt
    keep = k < V.size
    largest = np.abs(V_nest[keep] - V[k[keep]]).max()
    print(f"gif_cond_exp, deterministic hazard, against NEST: {ours.size} spikes, largest |V difference| "
          f"{largest:.3g} mV")
    assert largest < 1e-9


def test_stochastic_spiking_has_nests_rate():
    nest = pytest.importorskip("nest")
    ms, n = 2000.0, 400
    params = {**GIF, "I_e_pA": 150.0}
    _, _, _, ours, _ = simulate(params, [], ms, n=n, threads=2)
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.SetKernelStatus({"resolution": H, "rng_seed": 5})
    cells = nest.Create("gif_cond_exp", n, params=nest_params(params))
    recorder = nest.Create("spike_recorder")
    nest.Connect(cells, recorder)
    nest.Simulate(ms)
    theirs = recorder.n_events
    print(f"gif_cond_exp, {n} neurons, {ms:g} ms: {ours.size} spikes, NEST {theirs}")
    assert theirs > 2000 and abs(ours.size - theirs) < 0.05 * theirs


def test_the_same_spikes_on_one_and_two_threads():
    params = {**GIF, "I_e_pA": 150.0}
    one = simulate(params, [], 500.0, n=60, threads=1)
    two = simulate(params, [], 500.0, n=60, threads=2)
    assert one[3].size > 50
    o1, o2 = np.lexsort((one[4], one[3])), np.lexsort((two[4], two[3]))
    assert np.array_equal(one[3][o1], two[3][o2]) and np.array_equal(one[4][o1], two[4][o2])
    other_seed = simulate(params, [], 500.0, n=60, threads=1, seed=4)
    assert not np.array_equal(np.sort(one[3]), np.sort(other_seed[3]))    # the draws are the seed's


def test_bad_adaptation_lists_are_refused_naming_them():
    net = rv.Network(name="bad")
    with pytest.raises(ConfigError, match="'tau_stc_ms' .2 values. and 'q_stc_pA' .1."):
        net.add_population(rv.Population("n", 2, {**GIF, "q_stc_pA": [1.0]}, model="gif_cond_exp"))
    with pytest.raises(ConfigError, match="tau_sfa_ms.*positive"):
        net.add_population(rv.Population("n", 2, {**GIF, "tau_sfa_ms": [20.0, 0.0]}, model="gif_cond_exp"))


PYNN_SCRIPT = """
import sys, numpy as np
import pyNN.{backend} as sim
sim.setup(timestep=0.1, min_delay=1.0)
cells = sim.Population(2, sim.GIF_cond_exp(
    i_offset=0.15, lambda0=1e12, delta_v=1e-3, cm=0.08, tau_m=20.0, v_rest=-70.0, v_reset=-55.0, v_t_star=-35.0,
    e_rev_I=-85.0, tau_syn_E=2.0, tau_syn_I=5.0, tau_refrac=4.0, tau_eta=[10.0, 50.0, 100.0],
    a_eta=[0.02, 0.005, 0.001], tau_gamma=[20.0, 200.0, 5.0], a_gamma=[8.0, 2.0, 1.0]))
cells.initialize(v=np.array([-70.0, -60.0]))
src = sim.Population(1, sim.SpikeSourceArray(spike_times=[20.0, 50.0, 51.3, 90.0, 140.0]))
sim.Projection(src, cells, sim.AllToAllConnector(), sim.StaticSynapse(weight=0.012, delay=1.0),
               receptor_type="excitatory")
cells.record(["v", "spikes", "i_eta"])
sim.run(300.0)
seg = cells.get_data().segments[0]
np.save(sys.argv[1], np.concatenate([seg.filter(name="v")[0].magnitude, seg.filter(name="i_eta")[0].magnitude], axis=1))
np.save(sys.argv[2], np.concatenate([[len(t) for t in seg.spiketrains]] + [t.magnitude for t in seg.spiketrains]))
sim.end()
"""


def test_pynn_GIF_cond_exp_gives_pynn_nests_trace_and_spikes(tmp_path):
    """PyNN's GIF_cond_exp (three elements of each adaptation, lists of PyNN's units) on both
    backends, the hazard made deterministic: the same spikes, V within 1e-9 mV, i_eta (the
    spike-triggered current) within 1e-12 nA."""
    import subprocess
    import sys

    pytest.importorskip("pyNN")
    pytest.importorskip("nest")
    from conftest import subprocess_env
    out = {}
    for backend in ("ranvier", "nest"):
        script = tmp_path / f"gif_{backend}.py"
        script.write_text(PYNN_SCRIPT.format(backend=backend))
        v, s = tmp_path / f"v_{backend}.npy", tmp_path / f"s_{backend}.npy"
        done = subprocess.run([sys.executable, str(script), str(v), str(s)], cwd=tmp_path, env=subprocess_env(),
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        out[backend] = (np.load(v), np.load(s))
    (v, s), (v_nest, s_nest) = out["ranvier"], out["nest"]
    assert v.shape == v_nest.shape == (3001, 4)
    assert s[0] > 2 and s.shape == s_nest.shape
    np.testing.assert_allclose(s, s_nest, rtol=0, atol=1e-9)           # the same spike times (on the grid)
    assert np.abs(v[:, :2] - v_nest[:, :2]).max() < 1e-9
    assert v[:, 2:].max() > 0.01 and np.abs(v[:, 2:] - v_nest[:, 2:]).max() < 1e-12
