"""The grid of the DPSNN papers' modules (examples/dpsnn-grid-swa.toml; docs/dpsnn.md, "The papers'
grid"), at 2 x 2 modules: modules of 1250 neurons (250 F, 750 B, 250 I), 1125 synapses per neuron
split over F, B and I in proportion to their sizes, the exponential law's share of local and
lateral synapses (decay length 4, cutoff 8 module spacings), and the slow-wave state's
parameters."""
from pathlib import Path

import numpy as np
import pytest

import ranvier as rv
from ranvier.io import config

PRESET = Path(__file__).resolve().parents[1] / "examples" / "dpsnn-grid-swa.toml"


def _preset(**changes):
    cfg = config.load(PRESET)
    return cfg, rv.models.build(cfg.model, **{**cfg.parameters, **changes})


def test_the_preset_is_the_papers_modules_in_the_slow_wave_state():
    cfg, net = _preset()
    assert cfg.simulation["placement"] == "grid"
    g = net.column_grid
    assert (g.columns_x, g.columns_y, g.law, g.length, g.cutoff, g.boundary) == (4, 4, "exponential", 4.0, 8.0, "periodic")
    assert net.size == 16 * 1250
    assert {p.name: p.size // g.columns for p in net.populations} == {"F": 250, "B": 750, "I": 250}
    assert net.parameters["regime"] == "swa"
    assert net.parameters["g_c_exc_mV_per_ms"] == rv.models.DPSNN_SWA["g_c_exc_mV_per_ms"]
    assert net.parameters["g_c_inh_mV_per_ms"] == 0.0            # no adaptation of inhibitory neurons


def test_two_by_two_modules_get_the_in_degree_and_the_local_share():
    _, net = _preset(columns_x=2, columns_y=2, neurons=4 * 1250, lateral_cutoff=1.0)
    g = net.column_grid
    c = rv.Simulation(net, threads=2).connections(local=True)     # one rank: every synapse, unsorted
    per_target = np.bincount(c.target, minlength=net.size)
    assert np.all(per_target == 1125)                             # 225 from F, 675 from B, 225 from I
    col = np.empty(net.size, np.int64)
    for p in net.populations:
        col[p.first_id:p.first_id + p.size] = np.arange(p.size) // (p.size // g.columns)
    local = np.mean(col[c.source] == col[c.target])
    # cutoff 1 on a 2 x 2 torus: the own module (weight 1) and two distinct neighbours at d = 1
    assert g.length == 4.0
    expected = 1.0 / (1.0 + 2 * np.exp(-1.0 / g.length))
    dx, dy, prob = g.offsets()
    assert prob[(dx == 0) & (dy == 0)][0] == pytest.approx(expected)
    assert local == pytest.approx(expected, abs=5 * np.sqrt(expected * (1 - expected) / c.target.size))
    # the preset's kernel (length 4, cutoff 8): 1.70 % local on 16 x 16 modules (195 offsets);
    # 9.16 % on its 4 x 4 torus, where the disc of radius 8 wraps onto the 16 modules
    for side, share, offsets in ((16, 0.01697, 195), (4, 0.09160, 16)):
        _, net = _preset(columns_x=side, columns_y=side, neurons=side * side * 1250)
        dx, dy, prob = net.column_grid.offsets()
        assert prob.size == offsets and prob[(dx == 0) & (dy == 0)][0] == pytest.approx(share, abs=5e-4)
