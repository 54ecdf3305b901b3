"""dpsnn on a grid of columns (ranvier.core.grid): lateral connectivity by distance, exponential or
Gaussian, periodic or open; placement 'grid'; the same spikes on any decomposition; targeted
exchanges send less than allgather when the grid is larger than the connectivity's range."""
import numpy as np
import pytest

import ranvier as rv
from ranvier.core import grid as gridmod
from ranvier.core import placement
from conftest import counters, counters_per_rank

GRID_RUN = dict(model="dpsnn-grid", neurons=5120, synapses=200, ms=200.0)   # 16 x 16 columns of 20
# every strategy but two-tier (for multi-area models) on the 4-rank grid placement; four on the others
ALL_STRATEGIES = tuple(e for e in rv.core.simulation.EXCHANGES if e != "two-tier")
SOME_STRATEGIES = ("allgather", "alltoallv", "p2p", "neighbor")


def _columns(net, ids):
    g = net.column_grid
    out = np.empty(ids.size, np.int64)
    for p in net.populations:
        m = (ids >= p.first_id) & (ids < p.first_id + p.size)
        out[m] = (ids[m] - p.first_id) // (p.size // g.columns)
    return out


@pytest.mark.parametrize("law,length", [("exponential", 1.0), ("gaussian", 0.8)])
def test_synapses_follow_the_lateral_law(law, length):
    net = rv.models.dpsnn(neurons=16 * 16 * 20, synapses_per_neuron=200, columns_x=16, columns_y=16,
                          lateral_law=law, lateral_length=length, lateral_cutoff=3.0)
    c = rv.Simulation(net, threads=2).connections()
    g = net.column_grid
    assert c.source.size == sum(round(200 * p.size / net.size) for p in net.populations) * net.size
    d = g.distance(_columns(net, c.source), _columns(net, c.target))
    dx, dy, prob = g.offsets()
    dist = np.hypot(dx, dy)
    assert d.max() <= 3.0 + 1e-9
    n = d.size
    for D in np.unique(dist):
        expected = prob[np.isclose(dist, D)].sum()
        measured = np.mean(np.isclose(d, D))
        assert abs(measured - expected) < 5 * np.sqrt(expected * (1 - expected) / n) + 1e-4, (D, measured, expected)
    w = np.exp(-dist / length) if law == "exponential" else np.exp(-dist ** 2 / (2 * length ** 2))
    assert np.allclose(prob, w / w.sum())
    # every target exactly its in-degree (periodic), sources uniform within a column
    per_target = np.bincount(c.target, minlength=net.size)
    assert np.all(per_target == per_target[0])


# The DPSNN release of Pastorelli et al. 2019 (APE-group/201903LargeScaleSimScaling, config/*/connectivity.txt):
# the connection probability of an excitatory pair at module offset (dx, dy), for dx, dy = 0 ... 4 (lambda 0.6)
# and 0 ... 3 (lambda 0.4); sum over the plane 0.9, i.e. 0.9 x 1250 = 1125 synapses per neuron.
RELEASE_KERNELS = {
    0.6: [[0.344037, 0.0650229, 0.0123853, 0.00240826, 0.000344037],
          [0.0650229, 0.0326835, 0.00825688, 0.00172018, 0.000344037],
          [0.0123853, 0.00825688, 0.00309633, 0.000688073, 0.000344037],
          [0.00240826, 0.00172018, 0.000688073, 0.000344037, 0],
          [0.000344037, 0.000344037, 0.000344037, 0, 0]],
    0.4: [[0.595238, 0.0488095, 0.00416667, 0.000595238],
          [0.0488095, 0.0172619, 0.00238095, 0],
          [0.00416667, 0.00238095, 0.000595238, 0],
          [0.000595238, 0, 0, 0]],
}


@pytest.mark.parametrize("length", sorted(RELEASE_KERNELS))
def test_the_rounded_kernel_is_the_dpsnn_releases(length):
    """decimals=3 is DPSNN's exponential kernel rounded at the third decimal: the share of each
    offset times the release's 0.9 is its connection probability, offset for offset, and the
    rounding alone sets the reach (the cutoff of 5 spacings is never the limit)."""
    dx, dy, share = rv.ColumnGrid(24, 24, law="exponential", length=length, cutoff=5.0, decimals=3).offsets()
    table = np.array(RELEASE_KERNELS[length])
    for x, y, q in zip(dx, dy, share):
        assert abs(x) < table.shape[0] and abs(y) < table.shape[1], (x, y)
        assert 0.9 * q == pytest.approx(table[abs(x), abs(y)], rel=6e-6), (x, y)     # 6 digits printed
    expected = sum((4 if a and b else 2 if a or b else 1) * (table[a, b] > 0)
                   for a in range(table.shape[0]) for b in range(table.shape[1]))
    assert dx.size == expected                      # every offset with a probability, and no other
    # without rounding the same cutoff keeps more offsets at other shares
    exact = rv.ColumnGrid(24, 24, law="exponential", length=length, cutoff=5.0).offsets()
    assert exact[0].size > dx.size
    with pytest.raises(rv.ConfigError, match="'decimals'"):
        rv.ColumnGrid(24, 24, length=length, decimals=-1).validate("test")


def test_local_inhibition_and_fs_own_external_efficacy():
    """lateral_inhibitory="local": inhibitory neurons reach only their own module (the release's
    inhibitory row: probability 0.9 at offset (0, 0), 0 elsewhere); excitatory sources keep the
    law. external_weight_F_mV sets F's external efficacy alone (the release's SW: 0.832761 mV)."""
    net = rv.models.dpsnn(neurons=8 * 8 * 20, synapses_per_neuron=200, columns_x=8, columns_y=8,
                          lateral_length=0.6, lateral_cutoff=5.0, lateral_decimals=3, lateral_inhibitory="local",
                          external_weight_F_mV=0.832761)
    c = rv.Simulation(net, threads=1).connections()
    inh = net.population("I")
    from_i = (c.source >= inh.first_id)
    d = net.column_grid.distance(_columns(net, c.source), _columns(net, c.target))
    assert from_i.any() and np.all(d[from_i] == 0)
    assert np.mean(d[~from_i] > 0) > 0.5                              # excitatory: 38 % local at lambda 0.6
    assert [round(dr.weight, 6) for dr in net.drives] == [0.832761, 0.858516, 1.12047]
    assert [dr.weight for dr in rv.models.dpsnn(neurons=2048).drives] == [0.858516, 0.858516, 1.12047]
    with pytest.raises(rv.ConfigError, match="'lateral_inhibitory'"):
        rv.models.dpsnn(neurons=5120, columns_x=16, columns_y=16, lateral_inhibitory="near")
    with pytest.raises(rv.ConfigError, match="'external_weight_F_mV'"):
        rv.models.dpsnn(neurons=2048, external_weight_F_mV="strong")


def test_open_boundaries_drop_draws_off_the_edge():
    kw = dict(neurons=8 * 8 * 20, synapses_per_neuron=200, columns_x=8, columns_y=8, lateral_length=1.5,
              lateral_cutoff=3.0)
    periodic = rv.Simulation(rv.models.dpsnn(**kw), threads=1).connections()
    net = rv.models.dpsnn(**kw, lateral_boundary="open")
    c = rv.Simulation(net, threads=1).connections()
    g = net.column_grid
    fraction = c.source.size / periodic.source.size
    assert fraction == pytest.approx(g.in_bounds_fraction(), rel=0.01) and fraction < 0.85
    assert sum(net.projection_synapses(pr) for pr in net.projections) == pytest.approx(c.source.size, rel=0.01)
    col = _columns(net, c.target)
    corner = np.isin(col, [0, 7, 56, 63])
    centre = np.isin(col, [27, 28, 35, 36])
    per_target = np.bincount(c.target, minlength=net.size)
    targets_col = _columns(net, np.arange(net.size))
    assert per_target[np.isin(targets_col, [0, 7, 56, 63])].mean() < 0.6 * per_target[np.isin(targets_col, [27, 28, 35, 36])].mean()
    assert corner.any() and centre.any()
    sx, sy = _columns(net, c.source) % 8, _columns(net, c.source) // 8
    tx, ty = col % 8, col // 8
    assert np.all(np.hypot(sx - tx, sy - ty) <= 3.0)                 # no wrap-around on an open grid


def test_one_column_is_the_homogeneous_network_and_bad_grids_are_refused():
    assert all(pr.grid is None for pr in rv.models.dpsnn(neurons=2048).projections)
    with pytest.raises(rv.ConfigError, match="multiple"):
        rv.models.dpsnn(neurons=2048, columns_x=16, columns_y=16)
    with pytest.raises(rv.ConfigError, match="'law'"):
        rv.models.dpsnn(neurons=5120, synapses_per_neuron=100, columns_x=16, columns_y=16, lateral_law="cubic")
    with pytest.raises(rv.ConfigError, match="needs a network on a grid"):
        rv.Simulation(rv.models.dpsnn(neurons=600, synapses_per_neuron=50), placement="grid")
    with pytest.raises(rv.ConfigError, match="cannot each take a block"):
        gridmod.column_rank(2, 2, 8)


def test_grid_placement_gives_each_rank_a_rectangle_of_columns():
    net = rv.models.dpsnn(neurons=5120, synapses_per_neuron=200, columns_x=16, columns_y=16)
    owner = gridmod.column_rank(16, 16, 4)
    assert np.array_equal(owner.reshape(16, 16)[:8, :8], np.zeros((8, 8)))     # 2 x 2 blocks of 8 x 8
    assert np.bincount(owner).tolist() == [64] * 4
    bounds, ranks = placement.segments(net, "grid", 4, 0.1)
    sizes = np.bincount(ranks, weights=np.diff(bounds), minlength=4)
    assert sizes.tolist() == [1280.0] * 4
    assert gridmod.rank_blocks(16, 16, 2) in ((2, 1), (1, 2)) and gridmod.rank_blocks(16, 4, 4) == (4, 1)


@pytest.fixture(scope="module")
def grid_reference(workloads):
    return workloads(1, threads=1, placement="round-robin", **GRID_RUN)


@pytest.mark.parametrize("ranks,threads,placement_name", [(2, 1, "grid"), (2, 2, "random"), (4, 1, "grid"),
                                                          (4, 1, "block"), (4, 2, "round-robin")])
def test_the_grid_gives_the_same_spikes_on_any_decomposition(workloads, grid_reference, ranks, threads,
                                                             placement_name):
    ref = grid_reference
    assert ref["ids"].size > 5000
    strategies = ALL_STRATEGIES if (ranks, placement_name) == (4, "grid") else SOME_STRATEGIES
    runs = workloads.sweep(ranks, strategies, (False,), threads=threads, placement=placement_name, **GRID_RUN)
    assert len(runs) == len(strategies)
    for (exchange, _), run in runs.items():
        assert run["digest"] == ref["digest"], exchange
        assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"]), exchange
    if placement_name == "grid" and ranks == 4:
        sent = {e: counters(run)["bytes_sent"] for (e, _), run in runs.items()}
        # the grid (16 columns wide) is larger than the connectivity's range (2 columns): the
        # targeted strategies send each spike only where it has synapses
        assert sent["p2p"] < 0.5 * sent["allgather"], sent
        assert sent["neighbor"] < 0.5 * sent["allgather"], sent


def test_targeted_exchange_gains_from_grid_placement_not_from_round_robin(workloads):
    grid = workloads.sweep(4, ("p2p",), (False,), threads=1, placement="grid", **GRID_RUN)[("p2p", False)]
    spread = workloads.sweep(4, ("p2p",), (False,), threads=1, placement="round-robin", **GRID_RUN)[("p2p", False)]
    assert counters(grid)["bytes_sent"] < 0.5 * counters(spread)["bytes_sent"]
    assert counters_per_rank(grid)["spikes_emitted"].sum() == counters_per_rank(spread)["spikes_emitted"].sum()
