"""Projection(probability=p, autapses=True): the pairs (t, t) of one population are candidates
too (PyNN's FixedProbabilityConnector with allow_self_connections, NEST's allow_autapses)."""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv


def network(p, autapses, n=60):
    net = rv.Network()
    net.add_population(rv.Population("E", n))
    net.connect(rv.Projection(source="E", target="E", probability=p, weight=1.0, delay_ms=1.0, autapses=autapses))
    return net


def test_all_pairs_with_and_without_autapses():
    for autapses, expected in ((True, 60 * 60), (False, 60 * 59)):
        c = rv.Simulation(network(1.0, autapses)).connections()
        assert c.source.size == expected
        assert np.count_nonzero(c.source == c.target) == (60 if autapses else 0)


def test_self_pairs_are_drawn_at_the_probability_and_the_same_for_any_decomposition():
    n = 2000
    ref = rv.Simulation(network(0.3, True, n)).connections()
    selfs = np.count_nonzero(ref.source == ref.target)
    assert abs(selfs - 0.3 * n) < 5 * np.sqrt(n * 0.3 * 0.7)
    assert abs(ref.source.size / n ** 2 - 0.3) < 0.005
    for threads, placement in ((2, "block"), (2, "random")):
        c = rv.Simulation(network(0.3, True, n), threads=threads, placement=placement).connections()
        assert all(np.array_equal(a, b) for a, b in zip(c, ref))


def test_autapses_belong_to_the_pairwise_rule():
    net = rv.Network()
    net.add_population(rv.Population("E", 10))
    with pytest.raises(rv.ConfigError, match="'autapses' chooses among the pairs of probability=p"):
        net.connect(rv.Projection(source="E", target="E", indegree=3, weight=1.0, delay_ms=1.0, autapses=True))
