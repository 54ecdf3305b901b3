"""pyNN.ranvier's reads from arrays (Projection.get, size, get_data) give what PyNN's generic
one-connection-at-a-time code gives on the same connections."""
import numpy as np
import pytest

pytest.importorskip("pyNN")
import pyNN.ranvier as sim                      # noqa: E402
from pyNN.common.projections import Projection as GenericProjection   # noqa: E402
from pyNN.random import NumpyRNG               # noqa: E402


def _network(connector, weights=None):
    sim.setup(timestep=0.1, min_delay=0.1)
    pre = sim.Population(30, sim.SpikeSourcePoisson(rate=40.0))
    post = sim.Population(20, sim.IF_curr_exp())
    prj = sim.Projection(pre, post, connector, sim.StaticSynapse(weight=0.2, delay=0.5))
    if weights is not None:
        prj.set(weight=weights(len(prj)))
    post.record("spikes")
    pre.record("spikes")
    sim.run(200.0)
    return pre, post, prj


@pytest.fixture(params=["native", "drawn by PyNN"])
def projection(request):
    if request.param == "native":      # Ranvier draws it (fixed in-degree with replacement: multapses)
        connector = sim.FixedNumberPreConnector(12, with_replacement=True, allow_self_connections=True)
        _, _, prj = _network(connector)
    else:                              # PyNN's connector draws it, weights per connection
        connector = sim.FixedNumberPreConnector(12, with_replacement=True, rng=NumpyRNG(seed=3))
        _, _, prj = _network(connector, weights=lambda n: np.linspace(0.1, 0.3, n))
    yield prj
    sim.end()


@pytest.mark.parametrize("multiple", ["sum", "min", "max", "first", "last"])
def test_arrays_combine_multapses_as_pyNN_does(projection, multiple):
    ours = projection.get(["weight", "delay"], format="array", multiple_synapses=multiple)
    theirs = GenericProjection._get_attributes_as_arrays(projection, ["weight", "delay"], multiple)
    pairs = np.array([(c.presynaptic_index, c.postsynaptic_index) for c in projection.connections])
    assert len(np.unique(pairs, axis=0)) < len(pairs)            # the case is there: multapses
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape == (30, 20)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=1e-12)


def test_lists_and_sizes_are_pyNNs(projection):
    ours = projection.get(["weight", "delay"], format="list")
    theirs = [c.as_tuple("presynaptic_index", "postsynaptic_index", "weight", "delay") for c in projection.connections]
    assert ours == theirs
    assert projection.size() == len(theirs) == 20 * 12


def test_a_native_projection_is_counted_without_a_connection_object():
    _, _, prj = _network(sim.FixedProbabilityConnector(0.3))
    try:
        n = prj.size()
        assert prj._connections is None                          # nothing materialised
        assert n == len(prj.connections) > 0
    finally:
        sim.end()


def test_get_data_gives_every_spike_of_every_recorded_cell():
    pre, post, _ = _network(sim.FixedProbabilityConnector(0.3))
    try:
        gids, times = sim.state.result.spikes
        trains = pre.get_data("spikes").segments[0].spiketrains
        assert len(trains) == pre.size
        for cell, train in zip(pre.all_cells, trains):
            assert int(train.annotations["channel_id"]) == int(cell)
            np.testing.assert_array_equal(np.sort(train.magnitude), np.sort(times[gids == int(cell)]))
        assert sum(len(t) for t in trains) > 100
    finally:
        sim.end()
