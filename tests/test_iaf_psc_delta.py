"""lifca without adaptation is NEST's iaf_psc_delta (potentials relative to E_L).

Left out, lifca's parameters are NEST's iaf_psc_delta defaults relative to E_L (tau_m 10 ms,
theta 15 mV, reset 0 mV, tau_arp 2 ms) with the adaptation off (alpha_c = g_c = 0), so
`Population("E", 100, {})` is a plain LIF with delta synapses. Checked here:

- without NEST: the defaults, and the firing times of a default neuron under a constant drive
  against the closed form (first spike when dc tau (1 - exp(-t / tau)) reaches theta, then every
  refractory period plus that time);
- with NEST 3.10 (skipped when `nest` is not importable): Poisson sources drive one lifca
  neuron with excitatory and inhibitory weights on top of a constant drive dc = I_e / C_m; NEST's
  iaf_psc_delta with I_e gets the same spikes from spike generators with the same delay. V is
  compared on the time grid (column k of the trace is V after step k + 1, at (k + 1) h). The
  input is strong enough that spikes arrive while the neuron is refractory: both drop them
  (NEST's default, refractory_input = False), and NEST with refractory_input = True, which
  keeps them, gives another trace, so the comparison does see those spikes.

Tolerance 1e-9 mV: weights exact in fixed point (0.5 and -0.25 mV); what can remain is the
rounding of the constant drive's propagator (lifca: dc tau_m (1 - exp(-h/tau_m)); NEST:
-tau_m / C_m expm1(-h/tau_m) I_e), a few 1e-15 mV at most (0 measured with these values).
"""
import math

import numpy as np
import pytest

import ranvier as rv

H = 0.1
C_M_PF, I_E_PA = 250.0, 250.0       # NEST's C_m; dc = I_e / C_m = 1 mV/ms: V would rest at 10 mV
W_EX, W_IN = 0.5, -0.25             # mV, exact in fixed point
DELAY_MS = 1.0
TOL = 1e-9
NEST_DEFAULTS = {"tau_m_ms": 10.0, "theta_mV": 15.0, "reset_mV": 0.0, "tau_arp_ms": 2.0}


def test_defaults_are_a_plain_lif():
    pop = rv.Network().add_population(rv.Population("E", 100, params={}, model="lifca"))
    assert pop.params == {**NEST_DEFAULTS, "alpha_c": 0.0, "tau_c_ms": 1000.0, "g_c_mV_per_ms": 0.0,
                          "dc_mV_per_ms": 0.0}
    assert rv.Population("E", 100).model == "lifca"            # params may be left out altogether


def test_default_neuron_under_dc_fires_at_the_closed_form_times():
    dc = 2.0                                                    # mV/ms: V -> 20 mV, above theta = 15
    net = rv.Network()
    net.add_population(rv.Population("E", 3, params={"dc_mV_per_ms": dc}))
    res = rv.Simulation(net, threads=1, resolution_ms=H).run(100.0)
    tau, theta, ref = NEST_DEFAULTS["tau_m_ms"], NEST_DEFAULTS["theta_mV"], round(NEST_DEFAULTS["tau_arp_ms"] / H)
    t_star = -tau * math.log(1.0 - theta / (dc * tau))           # 13.86 ms from reset to threshold
    to_threshold = math.ceil(t_star / H)                        # the first step at or above theta
    expected = to_threshold + (ref + to_threshold) * np.arange(10)
    expected = expected[expected <= 1000]
    for gid in range(3):
        assert np.array_equal(res.spike_steps[res.spike_ids == gid], expected)


def simulate(sources, ms, params):
    """sources: (name, weight, rate_hz). Returns (result, gid of the neuron)."""
    net = rv.Network(name="delta")
    for name, _, rate in sources:
        net.add_population(rv.Population(name, 1, {"rate_hz": rate, "start_ms": 0.0, "stop_ms": ms},
                                         model="poisson_source"))
    net.add_population(rv.Population("n", 1, params))
    for name, w, _ in sources:
        net.connect(rv.Projection(source=name, target="n", probability=1.0, weight=w, delay_ms=DELAY_MS))
    gid = len(sources)
    sim = rv.Simulation(net, threads=1, seed=5, resolution_ms=H, record_state=[gid])
    return sim.run(ms), gid


def nest_delta(nest, ms, spike_times, weights, refractory_input):
    """V_m (absolute, E_L = -70 mV) and spike times of NEST's iaf_psc_delta with its defaults and I_e."""
    nest.ResetKernel()
    nest.SetKernelStatus({"resolution": H})
    neuron = nest.Create("iaf_psc_delta", params={"I_e": I_E_PA, "C_m": C_M_PF, "refractory_input": refractory_input})
    for times, w in zip(spike_times, weights):
        generator = nest.Create("spike_generator", params={"spike_times": [round(t, 10) for t in times]})
        nest.Connect(generator, neuron, syn_spec={"weight": w, "delay": DELAY_MS})
    meter = nest.Create("multimeter", params={"record_from": ["V_m"], "interval": H})
    recorder = nest.Create("spike_recorder")
    nest.Connect(meter, neuron)
    nest.Connect(neuron, recorder)
    nest.Simulate(ms + H)
    ev = meter.get("events")
    return np.asarray(ev["times"]), np.asarray(ev["V_m"]), np.asarray(recorder.get("events")["times"])


def test_against_nest_iaf_psc_delta():
    nest = pytest.importorskip("nest")
    nest.verbosity = nest.VerbosityLevel.ERROR
    d = nest.GetDefaults("iaf_psc_delta")
    assert (d["tau_m"], d["V_th"] - d["E_L"], d["V_reset"] - d["E_L"], d["t_ref"]) == tuple(NEST_DEFAULTS.values())
    ms = 300.0
    sources = [("ex", W_EX, 3000.0), ("in", W_IN, 2000.0)]
    res, gid = simulate(sources, ms, {"dc_mV_per_ms": I_E_PA / C_M_PF})
    V = np.asarray(res.state["V"][0], dtype=np.float64) + d["E_L"]
    ids, steps = np.asarray(res.spike_ids), np.asarray(res.spike_steps)
    spike_times = [steps[ids == i] * H for i in range(len(sources))]      # a spike of step s has time s h
    assert all(t.size > 100 for t in spike_times)

    times, V_nest, nest_spikes = nest_delta(nest, ms, spike_times, [w for _, w, _ in sources], False)
    k = np.rint(times / H).astype(int) - 1                                # V after step k + 1
    keep = k < V.size
    assert keep.sum() >= V.size - 1
    diff = np.abs(V_nest[keep] - V[k[keep]])
    assert diff.max() < TOL, f"largest difference {diff.max():.3g} mV at t = {(k[keep][diff.argmax()] + 1) * H} ms"
    ours = steps[ids == gid]
    theirs = np.rint(nest_spikes / H).astype(int)
    assert ours.size > 10                               # threshold, reset and refractoriness are exercised
    assert np.array_equal(np.sort(ours), np.sort(theirs[theirs <= round(ms / H)]))

    # Input did arrive while refractory (and was dropped by both): keeping it changes NEST's trace.
    _, V_kept, _ = nest_delta(nest, ms, spike_times, [w for _, w, _ in sources], True)
    assert np.abs(V_kept[keep] - V[k[keep]]).max() > 0.1
