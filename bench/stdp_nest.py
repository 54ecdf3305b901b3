#!/usr/bin/env python3
"""Ranvier's STDP against NEST 3.10's, rule by rule: the pairing protocol and a recurrent network.

    python bench/stdp_nest.py                 # both comparisons, a table each
    python bench/stdp_nest.py --pairing       # the weight-change curves only
    python bench/stdp_nest.py --network       # the recurrent network only

Pairing protocol: 60 pre/post pairs at 1 Hz, the post-synaptic spike Delta ms after the
pre-synaptic one, Delta from -50 to +50 ms every 1 ms and every 0.1 ms around 0 and +-1.5 ms (the
delay), one independent pair of neurons per Delta (109 synapses in one run). NEST:
spike_generator -> parrot_neuron (pre) -stdp-> parrot_neuron (post, receptor 1: the plastic input
does not make it fire), the post parrot driven by its own spike_generator; Ranvier: two
spike_train populations given exactly the parrots' spike times. The final weight of every synapse
must agree to 1e-9 relative, for every rule: stdp_synapse additive, multiplicative and with other
exponents, the three nearest-neighbour variants, stdp_pl_synapse_hom and vogels_sprekeler_synapse
(symmetric: every pairing facilitates, every pre-synaptic spike depresses). The delay (1.5 ms) is
dendritic in both.

Recurrent network (1000 neurons, 1 s): 800 excitatory and 200 inhibitory iaf_psc_delta neurons (Ranvier's lifca
with NEST's defaults), fixed in-degrees drawn once and given to both simulators as explicit
lists, E->E synapses stdp_synapse, each neuron driven by its own Poisson spike train (drawn once,
a spike_generator in NEST, a spike_train neuron in Ranvier), 1 s. Spikes are compared first;
the final weights of the plastic synapses whose pre- and post-synaptic spike trains agree in
both simulators must agree to 1e-6 relative, leaving out those whose source fired in the last
5 ms: NEST applies a pre-synaptic spike's update when it delivers the spike (within one
communication interval of its emission), Ranvier when the spike arrives (a delay later), so at
the end of a run the spikes still in flight differ. (Ranvier sums synaptic input in fixed point,
2^-16 mV here, NEST in double precision; a spike can move by a step where a potential grazes
the threshold, and synapses touching such a neuron are then left out and counted.)

NEST (`pip install "nest-simulator>=3.10"`) is imported inside the functions; it is never a
dependency of Ranvier. tests/test_stdp_nest.py runs both comparisons in CI.
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

H = 0.1                 # ms
DELAY_MS = 1.5          # dendritic, in both simulators
# every 1 ms, and densely around 0 and +-DELAY_MS: NEST sees a post-synaptic spike at the synapse
# a (dendritic) delay after it, so Delta = -DELAY_MS is where a pair flips from depressing to
# facilitating, and the window edges (t_last - d, t_pre - d] are met exactly there
DELTAS_MS = np.union1d(np.arange(-50, 51, 1.0), [-1.6, -1.5, -1.4, -0.1, 0.1, 1.4, 1.5, 1.6])
PAIRS, PERIOD_MS, FIRST_MS = 60, 1000.0, 100.0
W0 = 50.0               # initial weight (the parrots ignore it; stdp_synapse needs w <= Wmax)

# (label, Ranvier synapse kind arguments, NEST model, NEST parameters)
RULES = [
    ("stdp additive", dict(kind="STDP", lambda_=0.005, alpha=1.1, mu_plus=0.0, mu_minus=0.0, w_max=100.0),
     "stdp_synapse", dict(lambda_=0.005, alpha=1.1, mu_plus=0.0, mu_minus=0.0, Wmax=100.0)),
    ("stdp multiplicative", dict(kind="STDP", lambda_=0.01, alpha=1.0, mu_plus=1.0, mu_minus=1.0, w_max=100.0),
     "stdp_synapse", dict(lambda_=0.01, alpha=1.0, mu_plus=1.0, mu_minus=1.0, Wmax=100.0)),
    ("stdp mu 0.4/0.7", dict(kind="STDP", lambda_=0.01, alpha=0.9, mu_plus=0.4, mu_minus=0.7, w_max=100.0),
     "stdp_synapse", dict(lambda_=0.01, alpha=0.9, mu_plus=0.4, mu_minus=0.7, Wmax=100.0)),
    ("nearest symmetric", dict(kind="STDP", lambda_=0.01, alpha=1.0, w_max=100.0, pairing="nearest-symmetric"),
     "stdp_nn_symm_synapse", dict(lambda_=0.01, alpha=1.0, Wmax=100.0)),
    ("nearest pre-centred", dict(kind="STDP", lambda_=0.01, alpha=1.0, w_max=100.0,
                                 pairing="nearest-presynaptic-centered"),
     "stdp_nn_pre_centered_synapse", dict(lambda_=0.01, alpha=1.0, Wmax=100.0)),
    ("nearest restricted", dict(kind="STDP", lambda_=0.01, alpha=1.0, w_max=100.0, pairing="nearest-restricted"),
     "stdp_nn_restr_synapse", dict(lambda_=0.01, alpha=1.0, Wmax=100.0)),
    ("power law", dict(kind="STDPPowerLaw", lambda_=0.1, alpha=1.0, mu=0.4),
     "stdp_pl_synapse_hom", dict(lambda_=0.1, alpha=1.0, mu=0.4)),
    ("vogels-sprekeler", dict(kind="VogelsSprekeler", eta=0.5, alpha=0.2, w_max=100.0),
     "vogels_sprekeler_synapse", dict(eta=0.5, alpha=0.2, Wmax=100.0)),
]
TAU_PLUS_MS, TAU_MINUS_MS = 16.8, 33.7


def _nest():
    import nest
    nest.ResetKernel()
    if hasattr(nest, "VerbosityLevel"):          # NEST 3.10
        nest.verbosity = nest.VerbosityLevel.ERROR
    else:
        nest.set_verbosity("M_ERROR")
    nest.SetKernelStatus({"resolution": H, "print_time": False})
    return nest


def _nest_params(params: dict) -> dict:
    return {("lambda" if k == "lambda_" else k): v for k, v in params.items()}


def synapse_kind(args: dict):
    import ranvier as rv
    args = dict(args)
    kind = getattr(rv, args.pop("kind"))
    tau = "tau_ms" if kind is rv.VogelsSprekeler else "tau_plus_ms"      # its one time constant: NEST's tau
    return kind(**{tau: TAU_PLUS_MS}, **args)


# -- the pairing protocol ---------------------------------------------------------------------
def protocol_times() -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The generators' times: pairs k at FIRST + k PERIOD (pre) and that + Delta (post)."""
    base = FIRST_MS + PERIOD_MS * np.arange(PAIRS)
    return [base.copy() for _ in DELTAS_MS], [np.round(base + d, 1) for d in DELTAS_MS]


def nest_pairing(model: str, params: dict) -> tuple[np.ndarray, list, list]:
    """NEST's final weights per Delta, and the parrots' spike times (pre, post) per Delta."""
    nest = _nest()
    pre_times, post_times = protocol_times()
    n = len(DELTAS_MS)
    pre_gen = nest.Create("spike_generator", n, params=[{"spike_times": t.tolist()} for t in pre_times])
    post_gen = nest.Create("spike_generator", n, params=[{"spike_times": t.tolist()} for t in post_times])
    pre = nest.Create("parrot_neuron", n)
    post = nest.Create("parrot_neuron", n, params={"tau_minus": TAU_MINUS_MS})
    rec_pre, rec_post = nest.Create("spike_recorder"), nest.Create("spike_recorder")
    nest.Connect(pre_gen, pre, "one_to_one", {"delay": H})
    nest.Connect(post_gen, post, "one_to_one", {"delay": H})
    nest.Connect(pre, rec_pre)
    nest.Connect(post, rec_post)
    tau = "tau" if model == "vogels_sprekeler_synapse" else "tau_plus"
    nest.CopyModel(model, "plastic", {tau: TAU_PLUS_MS, **_nest_params(params)})
    nest.Connect(pre, post, "one_to_one", {"synapse_model": "plastic", "weight": W0, "delay": DELAY_MS,
                                           "receptor_type": 1})
    # A whole number of communication intervals (Ranvier's is the 1.5 ms delay), so both run the same time.
    duration = float(np.ceil((FIRST_MS + PERIOD_MS * PAIRS + 100.0) / DELAY_MS) * DELAY_MS)
    nest.Simulate(duration)
    conns = nest.GetConnections(pre, post)
    order = np.argsort(np.asarray(conns.get("source")))
    weights = np.asarray(conns.get("weight"), dtype=np.float64)[order]

    def trains(rec, nodes):
        ev = rec.get("events")
        first = nodes[0].global_id
        return [np.sort(np.asarray(ev["times"])[np.asarray(ev["senders"]) == first + i]) for i in range(n)]
    return weights, trains(rec_pre, pre), trains(rec_post, post), duration


def ranvier_pairing(kind_args: dict, pre_trains, post_trains, duration_ms) -> np.ndarray:
    """Ranvier's final weights per Delta: the same spike trains, the same synapses."""
    import ranvier as rv
    n = len(pre_trains)
    net = rv.Network()
    net.add_population(rv.Population("pre", n, {"spike_times_ms": [t.tolist() for t in pre_trains]},
                                     model="spike_train"))
    net.add_population(rv.Population("post", n, {"spike_times_ms": [t.tolist() for t in post_trains]},
                                     model="spike_train", tau_minus_ms=TAU_MINUS_MS))
    net.connect(rv.Projection(source="pre", target="post", sources=np.arange(n), targets=np.arange(n), weight=W0,
                              delay_ms=DELAY_MS, synapse=synapse_kind(kind_args)))
    sim = rv.Simulation(net, threads=1, seed=1)
    sim.run(duration_ms)
    w = sim.weights("pre", "post")
    return w.weight[np.argsort(w.source)]


def pairing_curves() -> list[dict]:
    """Per rule: Delta (ms), NEST's and Ranvier's final weights, the largest relative deviation."""
    out = []
    for label, kind_args, model, params in RULES:
        nest_w, pre, post, duration = nest_pairing(model, params)
        ours = ranvier_pairing(kind_args, pre, post, duration)
        deviation = float(np.max(np.abs(ours - nest_w) / np.maximum(np.abs(nest_w), 1e-300)))
        out.append({"rule": label, "nest_model": model, "delta_ms": DELTAS_MS.copy(), "nest": nest_w,
                    "ranvier": ours, "max_relative_deviation": deviation})
    return out


# -- the recurrent network --------------------------------------------------------------------
NE, NI, CE, CI = 800, 200, 80, 20
J, G, J_EXT, EXT_RATE_HZ = 0.5, 5.0, 0.5, 3500.0
NETWORK_MS = 1000.0
NETWORK_STDP = dict(lambda_=0.05, alpha=1.05, mu_plus=1.0, mu_minus=1.0)
W_MAX = 1.0
IAF = {"tau_m": 10.0, "t_ref": 2.0, "theta": 15.0, "reset": 0.0}


def network_instance(seed: int = 11) -> dict:
    """The synapses and external trains, drawn once (numpy), for both simulators."""
    rng = np.random.default_rng(seed)
    n = NE + NI
    targets = np.repeat(np.arange(n), CE + CI)
    exc = rng.integers(0, NE, (n, CE))
    inh = rng.integers(NE, n, (n, CI))
    sources = np.concatenate([exc, inh], axis=1).ravel()
    delays = np.round(rng.uniform(1.0, 3.0, sources.size), 1)
    ext = []
    for _ in range(n):
        k = rng.poisson(EXT_RATE_HZ * NETWORK_MS * 1e-3)
        ext.append(np.unique(np.round(rng.uniform(H, NETWORK_MS - H, k) / H) * H).round(1))
    return {"sources": sources, "targets": targets, "delays": delays, "external": ext}


def nest_network(inst: dict) -> dict:
    nest = _nest()
    n = NE + NI
    params = {"C_m": 1.0, "tau_m": IAF["tau_m"], "t_ref": IAF["t_ref"], "E_L": 0.0, "V_th": IAF["theta"],
              "V_reset": IAF["reset"], "V_m": IAF["reset"], "tau_minus": 20.0}
    neurons = nest.Create("iaf_psc_delta", n, params=params)
    gens = nest.Create("spike_generator", n, params=[{"spike_times": t.tolist()} for t in inst["external"]])
    nest.Connect(gens, neurons, "one_to_one", {"weight": J_EXT, "delay": 1.0})
    rec = nest.Create("spike_recorder")
    nest.Connect(neurons, rec)
    s, t, d = inst["sources"], inst["targets"], inst["delays"]
    plastic = (s < NE) & (t < NE)
    first = neurons[0].global_id
    nest.CopyModel("stdp_synapse", "plastic", {"tau_plus": 20.0, "Wmax": W_MAX, **_nest_params(NETWORK_STDP)})
    # arrays of node ids, weights and delays: NEST's fast path for explicit connections
    nest.Connect(np.asarray(s[plastic] + first, dtype=np.int64), np.asarray(t[plastic] + first, dtype=np.int64),
                 "one_to_one", {"synapse_model": "plastic", "weight": np.full(int(plastic.sum()), J),
                                "delay": np.ascontiguousarray(d[plastic])})
    static = ~plastic
    w = np.where(s[static] < NE, J, -G * J).astype(np.float64)
    nest.Connect(np.asarray(s[static] + first, dtype=np.int64), np.asarray(t[static] + first, dtype=np.int64),
                 "one_to_one", {"weight": w, "delay": np.ascontiguousarray(d[static])})
    nest.Simulate(NETWORK_MS)
    ev = rec.get("events")
    conns = nest.GetConnections(synapse_model="plastic")
    return {"ids": np.asarray(ev["senders"]) - first, "times_ms": np.asarray(ev["times"]),
            "source": np.asarray(conns.get("source")) - first, "target": np.asarray(conns.get("target")) - first,
            "delay": np.asarray(conns.get("delay")), "weight": np.asarray(conns.get("weight"))}


def ranvier_network(inst: dict) -> dict:
    import ranvier as rv
    n = NE + NI
    lif = {"tau_m_ms": IAF["tau_m"], "theta_mV": IAF["theta"], "reset_mV": IAF["reset"], "tau_arp_ms": IAF["t_ref"]}
    net = rv.Network()
    net.add_population(rv.Population("E", NE, dict(lif), tau_minus_ms=20.0))
    net.add_population(rv.Population("I", NI, dict(lif), excitatory=False))
    net.add_population(rv.Population("X", n, {"spike_times_ms": [t.tolist() for t in inst["external"]]},
                                     model="spike_train"))
    s, t, d = inst["sources"], inst["targets"], inst["delays"]
    stdp = rv.STDP(tau_plus_ms=20.0, w_max=W_MAX, **NETWORK_STDP)
    for src, tgt in (("E", "E"), ("E", "I"), ("I", "E"), ("I", "I")):
        s_lo = 0 if src == "E" else NE
        t_lo = 0 if tgt == "E" else NE
        keep = (s >= s_lo) & (s < s_lo + (NE if src == "E" else NI)) & (t >= t_lo) & (t < t_lo + (NE if tgt == "E" else NI))
        net.connect(rv.Projection(source=src, target=tgt, sources=s[keep] - s_lo, targets=t[keep] - t_lo,
                                  weight=J if src == "E" else -G * J, delay_ms=d[keep],
                                  synapse=stdp if (src, tgt) == ("E", "E") else None))
    for tgt, lo, size in (("E", 0, NE), ("I", NE, NI)):
        net.connect(rv.Projection(source="X", target=tgt, sources=np.arange(lo, lo + size), targets=np.arange(size),
                                  weight=J_EXT, delay_ms=1.0))
    sim = rv.Simulation(net, threads=2, seed=1)
    res = sim.run(NETWORK_MS)
    w = sim.weights("E", "E")
    keep = res.spike_ids < n                       # E and I (X is the input)
    return {"ids": res.spike_ids[keep], "times_ms": res.spike_steps[keep] * H, "source": w.source,
            "target": w.target, "delay": w.delay_ms, "weight": w.weight}


def network_comparison() -> dict:
    """Spikes per simulator, the neurons whose trains agree, and the weight deviation of the
    plastic synapses between agreeing neurons."""
    inst = network_instance()
    a, b = nest_network(inst), ranvier_network(inst)
    n = NE + NI

    def trains(r):
        order = np.lexsort((r["times_ms"], r["ids"]))
        ids, times = r["ids"][order], np.round(r["times_ms"][order] / H).astype(np.int64)
        bounds = np.searchsorted(ids, np.arange(n + 1))
        return [times[bounds[i]:bounds[i + 1]] for i in range(n)]
    ta, tb = trains(a), trains(b)
    agree = np.array([np.array_equal(x, y) for x, y in zip(ta, tb)])

    def keyed(r):
        order = np.lexsort((r["weight"], np.round(r["delay"] / H), r["target"], r["source"]))
        return (r["source"][order].astype(np.int64), r["target"][order].astype(np.int64),
                np.round(r["delay"][order] / H).astype(np.int64), r["weight"][order])
    sa, tga, da, wa = keyed(a)
    sb, tgb, db, wb = keyed(b)
    assert np.array_equal(sa, sb) and np.array_equal(tga, tgb) and np.array_equal(da, db), \
        "the two simulators hold different plastic synapses"
    # A pre-synaptic spike changes a weight when it is received, in both simulators at the end of
    # the communication interval (1 ms here) it was emitted in; NEST leaves the last interval's
    # spikes for the next Simulate call, Ranvier receives them at the run's end. Synapses whose
    # source fired in the last (longest delay + two intervals) are left out.
    recent = np.zeros(n, dtype=bool)
    recent[b["ids"][b["times_ms"] > NETWORK_MS - (3.0 + 2 * 1.0)]] = True
    usable = agree[sa] & agree[tga] & ~recent[sa]
    initial = np.count_nonzero(np.abs(wb - J) > 1e-12)
    deviation = float(np.max(np.abs(wb[usable] - wa[usable]) / np.abs(wa[usable]))) if usable.any() else math.nan
    return {"spikes_nest": int(a["ids"].size), "spikes_ranvier": int(b["ids"].size),
            "neurons_agreeing": float(agree.mean()), "synapses": int(sa.size), "synapses_compared": int(usable.sum()),
            "synapses_changed": int(initial), "max_relative_deviation": deviation}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairing", action="store_true", help="the pairing protocol only")
    ap.add_argument("--network", action="store_true", help="the recurrent network only")
    a = ap.parse_args(argv)
    try:
        import nest  # noqa: F401
    except ImportError:
        print("stdp_nest: NEST is not installed (pip install \"nest-simulator>=3.10\")", file=sys.stderr)
        return 1
    both = not a.pairing and not a.network
    if a.pairing or both:
        print(f"{'rule':22} {'NEST model':30} {'w(-10 ms)':>12} {'w(+10 ms)':>12} {'max rel. deviation':>20}")
        for c in pairing_curves():
            i, j = list(c["delta_ms"]).index(-10.0), list(c["delta_ms"]).index(10.0)
            print(f"{c['rule']:22} {c['nest_model']:30} {c['ranvier'][i]:12.6f} {c['ranvier'][j]:12.6f} "
                  f"{c['max_relative_deviation']:20.3e}")
    if a.network or both:
        r = network_comparison()
        print(f"\nrecurrent network, {NE + NI} neurons, {NETWORK_MS:g} ms: spikes NEST {r['spikes_nest']}, Ranvier "
              f"{r['spikes_ranvier']}; neurons with identical trains {100 * r['neurons_agreeing']:.1f} %; "
              f"plastic synapses {r['synapses']}, changed {r['synapses_changed']}, compared "
              f"{r['synapses_compared']}; max relative weight deviation {r['max_relative_deviation']:.3e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
