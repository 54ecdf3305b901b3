"""iaf_psc_alpha: LIF with alpha-shaped currents, separate excitatory and inhibitory time constants.

Two checks of the membrane trace (column k of the trace is V after step k + 1, at (k + 1) h,
relative to rest):
- without NEST: one excitatory and one inhibitory spike, each a Poisson source fired once by a
  one-step window at rate 1 / h, against the closed-form PSP of an alpha current;
- with NEST 3.10 (skipped when `nest` is not importable): Poisson sources drive the neuron with
  excitatory and inhibitory weights on top of a DC current; NEST's iaf_psc_alpha gets the same
  spikes from spike generators with the same delay, and its V_m is compared on the time grid.

Tolerance 1e-9 mV: synaptic input is summed in fixed point (fraction_bits), so the weights are
chosen exactly representable (100 and -62.5 pA); both simulators then integrate the same linear
propagators in the same order in double precision, and what remains is the rounding of exp and
expm1 and of a few sums (about 1e-14 mV).
"""
import math

import numpy as np
import pytest

import ranvier as rv

H = 0.1
PARAMS = {"E_L_mV": -70.0, "V_th_mV": -55.0, "V_reset_mV": -70.0, "C_m_pF": 250.0, "tau_m_ms": 10.0,
          "tau_syn_ex_ms": 2.0, "tau_syn_in_ms": 5.0, "tau_arp_ms": 2.0, "I_e_pA": 0.0,
          "V0_mean_mV": -70.0, "V0_sd_mV": 0.0}
W_EX, W_IN = 100.0, -62.5      # pA, exact in fixed point
DELAY_MS = 1.0
TOL = 1e-9


def simulate(params, sources, ms):
    """sources: (name, weight, rate_hz, start_ms, stop_ms). Returns (result, gid of the neuron)."""
    net = rv.Network(name="alpha")
    for name, _, rate, start, stop in sources:
        net.add_population(rv.Population(name, 1, {"rate_hz": rate, "start_ms": start, "stop_ms": stop},
                                         model="poisson_source"))
    net.add_population(rv.Population("n", 1, params, model="iaf_psc_alpha"))
    for name, w, *_ in sources:
        net.connect(rv.Projection(source=name, target="n", probability=1.0, weight=w, delay_ms=DELAY_MS))
    gid = len(sources)
    sim = rv.Simulation(net, threads=1, seed=3, resolution_ms=H, record_state=[gid])
    return sim.run(ms), gid


def alpha_psp(t, w, tau_s, tau_m, c_m):
    """V(t) of dV/dt = -V/tau_m + I/C_m, V(0) = 0, for I(t) = w e / tau_s t exp(-t / tau_s)."""
    a = 1.0 / tau_s - 1.0 / tau_m
    return w * math.e / (tau_s * c_m) * np.exp(-t / tau_m) * (1.0 - np.exp(-a * t) * (1.0 + a * t)) / a**2


def test_closed_form_psp():
    # One excitatory spike emitted in step 50 (window [5.0, 5.1) ms at rate 1/h: probability 1),
    # one inhibitory in step 200; high threshold, so V is the sum of the two PSPs.
    params = {**PARAMS, "V_th_mV": 1000.0}
    sources = [("ex", W_EX, 1e4, 5.0, 5.0 + H), ("in", W_IN, 1e4, 20.0, 20.0 + H)]
    res, gid = simulate(params, sources, 60.0)
    V = np.asarray(res.state["V"][0], dtype=np.float64)
    d = round(DELAY_MS / H)
    k = np.arange(V.size)
    expected = np.zeros(V.size)
    for s0, w, tau_s in ((50, W_EX, params["tau_syn_ex_ms"]), (200, W_IN, params["tau_syn_in_ms"])):
        # The input of a spike found in step s0 is taken by step s0 + d; V moves from the next step.
        elapsed = (k - s0 - d) * H
        on = elapsed > 0
        expected[on] += alpha_psp(elapsed[on], w, tau_s, params["tau_m_ms"], params["C_m_pF"])
    assert np.max(np.abs(V - expected)) < TOL
    assert V.max() > 0.1 and V.min() < -0.05      # both PSPs are there
    assert not np.any(res.spike_ids == gid)


def test_against_nest():
    nest = pytest.importorskip("nest")
    params = {**PARAMS, "I_e_pA": 300.0}           # DC: V would rest at 12 mV above E_L, below threshold
    sources = [("ex", W_EX, 800.0, 0.0, 200.0), ("in", W_IN, 400.0, 0.0, 200.0)]
    ms = 200.0
    res, gid = simulate(params, sources, ms)
    V = np.asarray(res.state["V"][0], dtype=np.float64) + params["E_L_mV"]
    ids, steps = np.asarray(res.spike_ids), np.asarray(res.spike_steps)

    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.SetKernelStatus({"resolution": H})
    neuron = nest.Create("iaf_psc_alpha", params={
        "E_L": params["E_L_mV"], "V_th": params["V_th_mV"], "V_reset": params["V_reset_mV"],
        "C_m": params["C_m_pF"], "tau_m": params["tau_m_ms"], "tau_syn_ex": params["tau_syn_ex_ms"],
        "tau_syn_in": params["tau_syn_in_ms"], "t_ref": params["tau_arp_ms"], "I_e": params["I_e_pA"],
        "V_m": params["V0_mean_mV"]})
    for i, (_, w, *_) in enumerate(sources):
        times = steps[ids == i] * H                 # a spike of step s has time s h
        assert times.size > 5
        generator = nest.Create("spike_generator", params={"spike_times": [round(t, 10) for t in times]})
        nest.Connect(generator, neuron, syn_spec={"weight": w, "delay": DELAY_MS})
    meter = nest.Create("multimeter", params={"record_from": ["V_m"], "interval": H})
    recorder = nest.Create("spike_recorder")
    nest.Connect(meter, neuron)
    nest.Connect(neuron, recorder)
    nest.Simulate(ms + H)
    ev = meter.get("events")
    k = np.rint(np.asarray(ev["times"]) / H).astype(int) - 1   # V after step k + 1
    keep = k < V.size
    diff = np.abs(np.asarray(ev["V_m"])[keep] - V[k[keep]])
    assert keep.sum() >= V.size - 1
    assert diff.max() < TOL, f"largest difference {diff.max():.3g} mV at t = {(k[keep][diff.argmax()] + 1) * H} ms"
    nest_spikes = np.rint(np.asarray(recorder.get("events")["times"]) / H).astype(int)
    ours = steps[ids == gid]
    assert ours.size > 0                            # the test covers threshold, reset, refractoriness
    assert np.array_equal(np.sort(ours), np.sort(nest_spikes[nest_spikes <= round(ms / H)]))


@pytest.mark.parametrize("ranks,threads,placement,exchange", [(1, 2, "round-robin", "allgather"),
                                                             (2, 1, "block", "alltoallv"),
                                                             (3, 2, "round-robin", "p2p"),
                                                             (2, 2, "random", "alltoallv")])
def test_spikes_identical_for_any_decomposition(workloads, ranks, threads, placement, exchange):
    """Excitatory and inhibitory input in separate columns, alpha currents: the same spikes on any
    ranks x threads x placement x exchange (tests/mpi_runner.py: alpha_network)."""
    kw = dict(model="iaf_psc_alpha", neurons=1000, probability=0.05, ms=200.0)
    ref = workloads(1, threads=1, exchange="allgather", placement="round-robin", **kw)
    run = workloads(ranks, threads=threads, exchange=exchange, placement=placement, **kw)
    assert ref["ids"].size > 1000
    assert run["digest"] == ref["digest"]
    assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"])
