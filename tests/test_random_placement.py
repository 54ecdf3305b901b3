"""Random placement (cpp/base/placement.hpp): each population shuffled over ranks and threads by
a bijection keyed by the seed, with no table. The spikes it gives are checked in every
invariance matrix (test_invariance, test_plasticity, ...); here the map itself."""
import numpy as np
import pytest

import ranvier as rv
from ranvier import _engine

CASES = [([0, 5, 1000, 1001, 4097], 3, 2, 7), ([0, 10], 4, 1, 1), ([0, 1, 2, 3], 2, 2, 9),
         ([0, 2048, 4096, 4097, 10_000], 1, 3, 2**63 + 5), ([0, 77, 800, 8000], 5, 2, 0)]


@pytest.mark.parametrize("first,ranks,threads,seed", CASES)
def test_a_bijection_that_keeps_populations_contiguous(first, ranks, threads, seed):
    rank, thread, index, rank_index, back = _engine.random_placement(first, ranks, threads, seed)
    n = first[-1]
    # (rank, thread, index) <-> gid both ways: `back` lists gid(r, t, k) rank by rank, thread by thread
    assert np.array_equal(np.sort(back), np.arange(n))
    slot = np.zeros(ranks * threads + 1, dtype=np.int64)
    np.add.at(slot, rank * threads + thread + 1, 1)
    offset = np.cumsum(slot)[:-1]
    assert np.array_equal(back[offset[rank * threads + thread] + index], np.arange(n))
    pop = np.searchsorted(first[1:], np.arange(n), side="right")
    for r in range(ranks):
        on_r = rank == r
        # every population split evenly: its size // ranks or one more on each rank
        for p in range(len(first) - 1):
            size = first[p + 1] - first[p]
            assert np.count_nonzero(on_r & (pop == p)) in (size // ranks, -(-size // ranks))
        # rank-local indices: 0..count-1, populations in order
        order = np.argsort(rank_index[on_r])
        assert np.array_equal(rank_index[on_r][order], np.arange(on_r.sum()))
        assert np.all(np.diff(pop[on_r][order]) >= 0)
        # threads take the rank's neurons round-robin by local index; populations stay contiguous per thread
        assert np.array_equal(thread[on_r], rank_index[on_r] % threads)
        for t in range(threads):
            mine = back[offset[r * threads + t]:offset[r * threads + t] + np.count_nonzero(on_r & (thread == t))]
            assert np.all(np.diff(pop[mine]) >= 0)


def test_the_seed_decides_and_the_placement_is_not_round_robin():
    first = [0, 3000, 6000]
    a = _engine.random_placement(first, 4, 1, 11)[0]
    b = _engine.random_placement(first, 4, 1, 11)[0]
    c = _engine.random_placement(first, 4, 1, 12)[0]
    assert np.array_equal(a, b)
    assert np.mean(a != c) > 0.6                               # another seed: another placement (3/4 expected)
    assert np.mean(a != np.arange(6000) % 4) > 0.6              # not round-robin
    # neighbours in gid spread over ranks like independent draws: no rank holds long runs of ids
    same_as_next = np.mean(a[1:] == a[:-1])
    assert 0.2 < same_as_next < 0.3                             # 1/4 for random ranks


def test_random_placement_runs_and_names_itself():
    net = rv.models.dpsnn(neurons=600, synapses_per_neuron=60)
    with rv.Simulation(net, threads=2, placement="random") as sim:
        res = sim.run(100.0)
    ref = rv.Simulation(net, threads=1).run(100.0)
    assert res.summary()["placement"] == "random"
    assert np.array_equal(res.spike_ids, ref.spike_ids) and np.array_equal(res.spike_steps, ref.spike_steps)
    with pytest.raises(rv.ConfigError, match="random"):
        rv.Simulation(net, placement="randomly")
