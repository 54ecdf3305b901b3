"""STDP against NEST 3.10 itself (bench/stdp_nest.py): every rule's weight-change curve of the
classic pairing protocol to 1e-9 relative, and a recurrent network's final weights to 1e-6
where the spikes agree. Skipped without NEST (pip install "nest-simulator>=3.10"; CI installs it).
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from conftest import ROOT

nest = pytest.importorskip("nest")

spec = importlib.util.spec_from_file_location("stdp_nest", ROOT / "bench" / "stdp_nest.py")
stdp_nest = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stdp_nest)


@pytest.mark.parametrize("rule", stdp_nest.RULES, ids=[r[0] for r in stdp_nest.RULES])
def test_pairing_curve_matches_nest(rule):
    label, kind_args, model, params = rule
    nest_w, pre, post, duration = stdp_nest.nest_pairing(model, params)
    # the parrots fired every pair: 60 spikes each, at the generators' times plus one step
    assert all(t.size == stdp_nest.PAIRS for t in pre) and all(t.size == stdp_nest.PAIRS for t in post)
    ours = stdp_nest.ranvier_pairing(kind_args, pre, post, duration)
    deltas = stdp_nest.DELTAS_MS
    moved = np.abs(nest_w - stdp_nest.W0) > 1e-3 * stdp_nest.W0
    assert np.count_nonzero(moved) > len(deltas) // 2, label               # the protocol changes weights
    causal, acausal = nest_w[deltas == 10.0][0], nest_w[deltas == -10.0][0]
    if label == "vogels-sprekeler":        # symmetric: close pairs of either order facilitate, far ones depress
        far = nest_w[deltas == 50.0][0]
        assert causal > stdp_nest.W0 and acausal > stdp_nest.W0 > far, (label, causal, acausal, far)
    else:
        assert causal > stdp_nest.W0 > acausal or label == "power law", (label, causal, acausal)
    # Delta = -delay: NEST sees the post-synaptic spike at the synapse as the pre-synaptic one
    # arrives; a step on either side the pair depresses, then facilitates (the window's edges)
    d = stdp_nest.DELAY_MS
    assert {0.0, -d, d} <= set(deltas.tolist())
    before, after = nest_w[np.isclose(deltas, -d - 0.1)][0], nest_w[np.isclose(deltas, -d + 0.1)][0]
    assert before < stdp_nest.W0 < after or label == "vogels-sprekeler", (label, before, after)
    relative = np.abs(ours - nest_w) / np.abs(nest_w)
    worst = int(np.argmax(relative))
    assert relative[worst] < 1e-9, (f"{label}: at Delta = {deltas[worst]:g} ms Ranvier {ours[worst]!r}, "
                                    f"NEST {nest_w[worst]!r}")


def test_recurrent_network_weights_match_nest_where_spikes_agree():
    r = stdp_nest.network_comparison()
    assert r["spikes_nest"] > 5000 and abs(r["spikes_ranvier"] - r["spikes_nest"]) < 0.02 * r["spikes_nest"]
    assert r["neurons_agreeing"] > 0.8, r
    assert r["synapses_changed"] > 0.5 * r["synapses"], r
    assert r["synapses_compared"] > 0.5 * r["synapses"], r
    assert r["max_relative_deviation"] < 1e-6, r
