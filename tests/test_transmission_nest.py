"""Neuron-to-neuron transmission against NEST 3.10 (the optional `nest` extra; skipped without
it): where a systematic difference between the two simulators of one network could hide, in
the step at which a spike with delay d first acts, in the order of input and propagation, in
spikes of many sources arriving in one step, and in refractoriness.

Sources A_i of the model under test, driven by DC to fire regularly, project onto one neuron B
of the same model; B's membrane potential at every step and its spike times are compared with
NEST's built-in model wired the same way. Weights are multiples of 1/16 (exact in Ranvier's
fixed point of synaptic input), so the two integrate the same numbers with the same linear
propagators and what remains is rounding of exp and a few sums (below 1e-9 mV).
"""
import numpy as np
import pytest

import ranvier as rv

nest = pytest.importorskip("nest")

H = 0.1
COMMON = {"E_L_mV": -65.0, "V_th_mV": -50.0, "V_reset_mV": -65.0, "C_m_pF": 250.0, "tau_arp_ms": 2.0,
          "I_e_pA": 0.0, "V0_mean_mV": -65.0, "V0_sd_mV": 0.0, "tau_syn_ex_ms": 0.5, "tau_syn_in_ms": 1.0}
MODELS = {  # Ranvier model: (its parameters, NEST's model, the weights' scale: pA or nS)
    "psc_exp": ({**COMMON, "tau_m_ms": 10.0}, "iaf_psc_exp", 1.0),
    "iaf_psc_alpha": ({**COMMON, "tau_m_ms": 10.0}, "iaf_psc_alpha", 1.0),
    "iaf_cond_exp": ({**COMMON, "g_L_nS": 16.6875, "E_ex_mV": 0.0, "E_in_mV": -85.0}, "iaf_cond_exp", 1 / 4),
    "iaf_cond_alpha": ({**COMMON, "g_L_nS": 16.6875, "E_ex_mV": 0.0, "E_in_mV": -85.0}, "iaf_cond_alpha", 1 / 4),
}
NEST_NAMES = {"E_L_mV": "E_L", "V_th_mV": "V_th", "V_reset_mV": "V_reset", "C_m_pF": "C_m", "tau_m_ms": "tau_m",
              "tau_arp_ms": "t_ref", "I_e_pA": "I_e", "tau_syn_ex_ms": "tau_syn_ex", "tau_syn_in_ms": "tau_syn_in",
              "g_L_nS": "g_L", "E_ex_mV": "E_ex", "E_in_mV": "E_in"}
TOL_MV = 1e-9


def steps(times):
    """Spike times as steps of H (the two simulators write the same time with other roundings)."""
    return np.rint(np.asarray(times) / H).astype(np.int64)


def _nest_params(params):
    out = {NEST_NAMES[k]: v for k, v in params.items() if k in NEST_NAMES}
    out["V_m"] = params["V0_mean_mV"]
    return out


def both(model, sources, duration_ms, b_changes=None):
    """sources: (I_e pA, weight, delay ms) each. B's V (absolute mV, after each step) and spike
    times, and the sources' spike times: from Ranvier and from NEST."""
    params, nest_model, _ = MODELS[model]
    b_params = {**params, **(b_changes or {})}
    net = rv.Network(name="transmission")
    for i, (ie, _, _) in enumerate(sources):
        net.add_population(rv.Population(f"A{i}", 1, {**params, "I_e_pA": ie}, model=model))
    net.add_population(rv.Population("B", 1, b_params, model=model))
    for i, (_, w, d) in enumerate(sources):
        net.connect(rv.Projection(source=f"A{i}", target="B", probability=1.0, weight=w, delay_ms=d))
    b = len(sources)
    sim = rv.Simulation(net, threads=1, seed=1, resolution_ms=H, record_state=[b])
    res = sim.run(duration_ms)
    ids, times = res.spikes
    ours = (np.asarray(res.state["V"][0], dtype=float) + b_params["E_L_mV"], np.sort(times[ids == b]),
            np.sort(times[ids < b]))

    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.resolution = H
    a = [nest.Create(nest_model, params=_nest_params({**params, "I_e_pA": ie})) for ie, _, _ in sources]
    nb = nest.Create(nest_model, params=_nest_params(b_params))
    for n, (_, w, d) in zip(a, sources):
        nest.Connect(n, nb, syn_spec={"weight": w, "delay": d})
    mm = nest.Create("multimeter", params={"record_from": ["V_m"], "interval": H})
    nest.Connect(mm, nb)
    rec_b, rec_a = nest.Create("spike_recorder"), nest.Create("spike_recorder")
    nest.Connect(nb, rec_b)
    for n in a:
        nest.Connect(n, rec_a)
    nest.Simulate(duration_ms + H)
    ev = mm.get("events")
    v = ev["V_m"][np.argsort(ev["times"], kind="stable")]
    theirs = (v, np.sort(rec_b.get("events")["times"]), np.sort(rec_a.get("events")["times"]))
    k = min(ours[0].size, theirs[0].size)
    return (ours[0][:k], *ours[1:]), (theirs[0][:k], *theirs[1:])


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("delay_ms", [0.1, 0.5, 1.0, 2.3, 4.7])
def test_a_spike_first_acts_in_nests_step(model, delay_ms):
    scale = MODELS[model][2]
    (v, _, a), (nv, _, na) = both(model, [(600.0, 64.0 * scale, delay_ms)], 40.0, {"V_th_mV": 1000.0})
    assert a.size >= 2 and np.array_equal(steps(a), steps(na))   # the source fires at NEST's steps
    first, nest_first = np.flatnonzero(v != v[0])[:1], np.flatnonzero(nv != nv[0])[:1]
    assert first.size and first.tolist() == nest_first.tolist(), (first, nest_first)
    # V at index k is after step k + 1, at (k + 1) h. The spike of t_a reaches B's synaptic
    # current at t_a + d (the end of a step); V, integrating that current, moves one step later
    assert steps((first[0] + 1) * H) == steps(a[0] + delay_ms + H)
    assert np.abs(v - nv).max() < TOL_MV


@pytest.mark.parametrize("model", sorted(MODELS))
def test_many_sources_and_same_step_arrivals_give_nests_spikes(model):
    """80 sources of both signs, five delays, so that many spikes arrive in one step; B fires
    and is refractory often: its spike steps and trace are NEST's."""
    scale = MODELS[model][2]
    rng = np.random.default_rng(7)
    sources = [(float(rng.uniform(380.0, 900.0)), float(rng.choice([1, 1, 1, -1]) * rng.integers(320, 3200) / 16 * scale),
                float(rng.choice([0.1, 0.8, 1.5, 2.2, 3.3]))) for _ in range(80)]
    (v, b, a), (nv, nb, na) = both(model, sources, 300.0, {"V_th_mV": -62.0, "I_e_pA": 150.0})
    assert np.array_equal(steps(a), steps(na))
    assert b.size > 20, b.size                                   # B fires and is refractory often
    np.testing.assert_array_equal(steps(b), steps(nb))
    assert np.abs(v - nv).max() < TOL_MV * 100                   # a few hundred sums of exact weights
    assert abs(float(np.mean(v - nv))) < TOL_MV                  # and no bias
