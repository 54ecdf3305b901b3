"""Decomposition invariance (DESIGN.md, invariant 1).

For a fixed seed, the network instance (every synapse) and every spike (id, step) are the
same whatever the number of ranks, threads, the placement and the exchange strategy. The
workload is dpsnn scaled down to 2048 neurons (full in-degree, 1125 synapses per neuron),
300 ms: about 2200 spikes, the initial synchronous wave included, and 2.4 million recurrent
synaptic events. Multi-rank configurations run under mpiexec (tests/mpi_runner.py); every
one is compared with the single-rank, single-thread reference, spike for spike.
"""
import itertools

import numpy as np
import pytest

from conftest import DPSNN_SMALL, counters

RANKS = (1, 2, 3)
THREADS = (1, 2)
EXCHANGES = ("allgather", "alltoallv")
PLACEMENTS = ("round-robin", "block", "random")
REFERENCE = (1, 1, "allgather", "round-robin")
MATRIX = [c for c in itertools.product(RANKS, THREADS, EXCHANGES, PLACEMENTS) if c != REFERENCE]

# Totals that do not depend on the decomposition (bytes, messages and per-rank counts do).
INVARIANT_COUNTERS = ("spikes_emitted", "synaptic_events_recurrent", "synaptic_events_external",
                      "events_scheduled", "events_expected", "events_pending")


@pytest.fixture(scope="module")
def reference(workloads):
    return workloads.dpsnn(*REFERENCE)


def test_reference_is_not_trivial(reference):
    """Plenty of spikes from both populations, all through the run, and recurrent traffic."""
    ids, steps = reference["ids"], reference["steps"]
    first_i = int(reference["population_first_ids"][2])          # F, B, I: I is inhibitory
    n = DPSNN_SMALL["neurons"]
    assert ids.size > n                                            # about 3.5 Hz x 2048 x 0.3 s
    late = steps * 0.1 >= 100.0                                    # after the initial wave
    assert np.count_nonzero(late & (ids < first_i)) > 300          # excitatory: about 870
    assert np.count_nonzero(late & (ids >= first_i)) > 150         # inhibitory: about 430
    assert steps.max() * 0.1 > 280.0
    assert np.unique(ids).size > n // 2                            # not a handful of neurons
    c = counters(reference)
    assert c["synaptic_events_recurrent"] > 1_000_000
    assert c["events_pending"] > 0                                 # long delays still in flight
    # canonical order: by step, then id, and no spike twice
    assert np.all(np.diff(steps) >= 0)
    same = np.diff(steps) == 0
    assert np.all(np.diff(ids)[same] > 0)


@pytest.mark.parametrize("ranks,threads,exchange,placement", MATRIX,
                         ids=[f"ranks={r}-threads={t}-{e}-{p}" for r, t, e, p in MATRIX])
def test_spikes_and_network_identical(workloads, reference, ranks, threads, exchange, placement):
    run = workloads.dpsnn(ranks, threads, exchange, placement)
    # the run really was decomposed as asked
    assert run["ranks"] == ranks
    assert run["counters_per_rank"].shape[0] == ranks
    assert run["synapses_per_rank"].size == ranks
    if ranks > 1:
        assert np.all(run["synapses_per_rank"] > 0)
    # the same network instance: synapse count and a digest of every (source, target, weight, delay)
    assert run["synapses_per_rank"].sum() == reference["synapses_per_rank"].sum()
    assert run["digest"] == reference["digest"], "the network instance differs"
    # spike for spike
    ids, steps = run["ids"], run["steps"]
    if ids.size != reference["ids"].size or not (np.array_equal(ids, reference["ids"])
                                                   and np.array_equal(steps, reference["steps"])):
        n = min(ids.size, reference["ids"].size)
        diff = np.flatnonzero((ids[:n] != reference["ids"][:n]) | (steps[:n] != reference["steps"][:n]))
        first = int(diff[0]) if diff.size else n
        pytest.fail(f"spike trains differ: {ids.size} spikes vs {reference['ids'].size} in the reference; "
                    f"first difference at index {first}, step "
                    f"{steps[first] if first < ids.size else None} vs "
                    f"{reference['steps'][first] if first < reference['ids'].size else None}")
    got, want = counters(run), counters(reference)
    for key in INVARIANT_COUNTERS:
        assert got[key] == want[key], key
    # the membrane traces of the recorded neurons, bit for bit
    assert np.array_equal(run["state_ids"], reference["state_ids"])
    assert np.array_equal(run["state_V"], reference["state_V"]), "V traces differ"
    assert np.array_equal(run["state_c"], reference["state_c"]), "c traces differ"


def test_another_seed_gives_another_network_and_other_spikes(workloads, reference):
    other = workloads.dpsnn(*REFERENCE, seed=2)
    assert other["digest"] != reference["digest"]
    assert not (other["ids"].size == reference["ids"].size and np.array_equal(other["ids"], reference["ids"])
                and np.array_equal(other["steps"], reference["steps"]))
    # but the same statistics: the total rate within 15 %
    assert abs(other["ids"].size / reference["ids"].size - 1) < 0.15


@pytest.mark.parametrize("ranks,threads", [(2, 4), (3, 2)])
def test_more_threads_than_neurons(workloads, ranks, threads):
    """5 neurons over 8 or 6 threads (round-robin leaves some threads empty): the same spikes."""
    kw = dict(model="burst", neurons=5, probability=0.5, ms=20.0)
    ref = workloads(1, threads=1, **kw)
    run = workloads(ranks, threads=threads, exchange="alltoallv", **kw)
    assert ref["ids"].size > 10                   # the synchronous burst and two more rounds
    assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"])
    assert run["digest"] == ref["digest"]


def test_state_recorded_on_some_ranks_only(workloads):
    """Recording neurons that all live on one rank: the other ranks contribute no trace, and
    the gathered trace is that of the single-rank run."""
    kw = dict(model="burst", neurons=50, probability=0.1, ms=10.0, record="0,2")   # both on rank 0
    ref = workloads(1, **kw)
    run = workloads(2, **kw)
    assert ref["state_V"].shape == (2, 100)
    assert np.array_equal(run["state_ids"], ref["state_ids"])
    assert np.array_equal(run["state_V"], ref["state_V"]) and np.array_equal(run["state_c"], ref["state_c"])


def test_splitting_the_run_changes_nothing(reference):
    """run(300) == run(100) three times == run(300) in chunks of one cycle: spikes, counters and
    recorded traces (which must also be continuous across run() calls)."""
    import ranvier as rv
    from mpi_runner import recorded_ids

    net = rv.models.dpsnn(neurons=DPSNN_SMALL["neurons"], synapses_per_neuron=DPSNN_SMALL["synapses"])
    for split in ("thirds", "cycles"):
        sim = rv.Simulation(net, threads=2, seed=1, record_state=recorded_ids(net))
        if split == "thirds":
            for _ in range(3):
                res = sim.run(DPSNN_SMALL["ms"] / 3)
        else:
            res = sim.run(DPSNN_SMALL["ms"], chunk_ms=1.0)
        assert res.duration_ms == DPSNN_SMALL["ms"]
        assert np.array_equal(res.spike_ids, reference["ids"]), split
        assert np.array_equal(res.spike_steps, reference["steps"]), split
        assert np.array_equal(res.state["V"], reference["state_V"]), split
        assert np.array_equal(res.state["c"], reference["state_c"]), split
        for key in INVARIANT_COUNTERS:
            assert res.counters[key] == counters(reference)[key], (split, key)
