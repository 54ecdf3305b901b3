"""The spike-exchange suite: every strategy, with and without the overlapped schedule.

- Decomposition invariance across strategies: on 1 to 4 ranks, every strategy and overlap
  setting gives spike trains (and the network instance) identical to allgather on one rank,
  on scaled-down dpsnn and artificial-cells. 3 and 4 ranks are grouped two per node, so the
  hierarchical exchange has leaders that talk to each other.
- A burst (every neuron fires in the same step) overflows the fixed buffers of
  allgather-compressed, alltoall-fixed and rma: an overflow round and a resize must follow,
  and nothing may be lost.
- Bytes and messages per rank match what each strategy must send, computed here from the
  recorded spikes and which ranks hold targets of each neuron, with the capacity policy of
  the fixed-buffer strategies replayed in Python.
"""
import math

import numpy as np
import pytest
from conftest import check_balance, check_exchange, counters, counters_per_rank
from mpi_runner import BURST_STEP

from ranvier import _engine

EXCHANGES = tuple(_engine.EXCHANGES)
FIXED_BUFFER = ("allgather-compressed", "alltoall-fixed", "rma", "rma-pscw")
WORKLOADS = {
    "dpsnn": dict(model="dpsnn", neurons=1024, synapses=400, ms=200.0),
    "artificial-cells": dict(model="artificial-cells", neurons=1200, synapses=100, ms=100.0),
}
RANKS = (1, 2, 3, 4)


def ranks_per_node(ranks: int) -> int:
    return 2 if ranks > 2 else 0


def sweep(workloads, ranks, workload, **extra):
    return workloads.sweep(ranks, EXCHANGES, (False, True), threads=1, ranks_per_node=ranks_per_node(ranks),
                           **WORKLOADS[workload], **extra)


def check_counters(run):
    check_balance(counters(run), run["ids"].size)
    check_exchange(run, run["exchange"])


@pytest.mark.parametrize("workload", list(WORKLOADS))
@pytest.mark.parametrize("ranks", RANKS)
def test_every_strategy_gives_the_reference_spikes(workloads, workload, ranks):
    reference = sweep(workloads, 1, workload)[("allgather", False)]
    assert reference["ids"].size > 500
    runs = sweep(workloads, ranks, workload)
    failures = []
    for (exchange, overlap), run in runs.items():
        assert run["ranks"] == ranks and run["exchange"] == exchange and run["overlap"] == overlap
        if run["digest"] != reference["digest"]:
            failures.append(f"{exchange} overlap={overlap}: network instance differs")
        elif not (np.array_equal(run["ids"], reference["ids"]) and np.array_equal(run["steps"], reference["steps"])):
            failures.append(f"{exchange} overlap={overlap}: {run['ids'].size} spikes vs {reference['ids'].size}, "
                            f"trains differ")
        check_counters(run)
        assert run["steps_per_cycle"] == (5 if overlap else 10)
    assert not failures, "; ".join(failures)


@pytest.mark.parametrize("ranks", (2, 3))
def test_every_strategy_with_block_placement_and_two_threads(workloads, ranks):
    """The other axes of the decomposition: block placement and 2 threads per rank."""
    reference = sweep(workloads, 1, "dpsnn")[("allgather", False)]
    runs = workloads.sweep(ranks, EXCHANGES, (False, True), threads=2, placement="block",
                           ranks_per_node=ranks_per_node(ranks), **WORKLOADS["dpsnn"])
    for (exchange, overlap), run in runs.items():
        where = f"{exchange} overlap={overlap}"
        assert run["digest"] == reference["digest"], where
        assert np.array_equal(run["ids"], reference["ids"]) and np.array_equal(run["steps"], reference["steps"]), where
        check_balance(counters(run), run["ids"].size)


BURST = dict(model="burst", neurons=4000, probability=0.01, ms=20.0)


@pytest.mark.parametrize("ranks", (1, 2, 3))
def test_burst_grows_every_buffer_and_loses_nothing(workloads, ranks):
    """All 4000 neurons fire at step 51, far past the initial capacity (16 records) of the
    fixed buffers. Runs 20 ms, so the rma windows reach their first capacity agreement (every
    16 intervals) and grow."""
    runs = workloads.sweep(ranks, EXCHANGES, (False, True), threads=2, ranks_per_node=ranks_per_node(ranks), **BURST)
    reference = runs[("allgather", False)]
    burst = reference["steps"] == BURST_STEP
    assert np.array_equal(reference["ids"][burst], np.arange(BURST["neurons"]))
    for (exchange, overlap), run in runs.items():
        where = f"{exchange} overlap={overlap}"
        assert np.array_equal(run["ids"], reference["ids"]) and np.array_equal(run["steps"], reference["steps"]), where
        check_counters(run)
        c = counters(run)
        if exchange in FIXED_BUFFER and (ranks > 1 or not exchange.startswith("rma")):
            assert c["overflow_rounds"] > 0, where
            assert c["exchange_resizes"] > 0, where
        if exchange not in FIXED_BUFFER:
            assert c["overflow_rounds"] == 0 and c["exchange_resizes"] == 0, where


# -- bytes and messages: what each strategy must send -----------------------------------------

class Capacity:
    """cpp/exchange/fixed_buffer.hpp, replayed."""
    MINIMUM = 16

    def __init__(self, shrink_after=256):
        self.capacity, self.shrink_after, self.updates, self.window_max = self.MINIMUM, shrink_after, 0, 0

    def update(self, most):
        self.window_max = max(self.window_max, most)
        if most > self.capacity:
            self.capacity = most + most // 4 + 1
            self.updates = self.window_max = 0
            return
        self.updates += 1
        if self.updates < self.shrink_after:
            return
        if self.window_max * 4 < self.capacity and self.capacity > self.MINIMUM:
            self.capacity = max(self.MINIMUM, 2 * self.window_max)
        self.updates = self.window_max = 0


def traffic(run):
    """Per cycle: spikes of each rank s[c, r], records from rank r to rank d n[c, r, d]."""
    P, L = run["ranks"], run["steps_per_cycle"]
    cycles = int(round(run["duration_ms"] / (L * 0.1)))
    ids, steps = run["ids"], run["steps"]
    cycle = (steps - 1) // L
    owner = ids % P                                   # round-robin placement
    s = np.zeros((cycles, P), dtype=np.int64)
    np.add.at(s, (cycle, owner), 1)
    n = np.zeros((cycles, P, P), dtype=np.int64)
    for d in range(P):
        np.add.at(n[:, :, d], (cycle, owner), run["has_targets"][d, ids].astype(np.int64))
    return s, n


def expected_traffic(run):
    """(bytes, messages) per rank, or for rma the totals and bounds (see below)."""
    exchange, P = run["exchange"], run["ranks"]
    s, n = traffic(run)
    others = ~np.eye(P, dtype=bool)
    B = np.zeros(P, dtype=np.int64)
    M = np.zeros(P, dtype=np.int64)
    if exchange == "allgather":
        B += ((P - 1) * 8 * (s + 1)).sum(axis=0)
        M += ((P - 1) * np.where(s > 0, 2, 1)).sum(axis=0)
    elif exchange == "alltoallv":
        B += (8 * (n + 1) * others).sum(axis=(0, 2))
        M += (np.where(n > 0, 2, 1) * others).sum(axis=(0, 2))
    elif exchange == "neighbor":
        edges = (run["has_targets"][:, None, :] &
                 (np.arange(run["has_targets"].shape[1]) % P == np.arange(P)[:, None])[None, :, :]).any(axis=2).T
        edges &= others                                  # edges[r, d]: some neuron of r has targets on d
        B += (8 * (n + 1) * edges).sum(axis=(0, 2))
        M += (np.where(n > 0, 2, 1) * edges).sum(axis=(0, 2))
    elif exchange in ("p2p", "p2p-nbx"):
        B += (8 * n * others).sum(axis=(0, 2))
        M += ((n > 0) & others).sum(axis=(0, 2))
    elif exchange == "allgather-compressed":
        most_local = max(len(range(r, run["has_targets"].shape[1], P)) for r in range(P))
        record = max(1, math.ceil((most_local - 1).bit_length() / 8)) + 1        # index bytes + 1 offset byte
        cap = Capacity()
        for sc in s:
            words = 1 + math.ceil(cap.capacity * record / 8)
            B += (P - 1) * 8 * words
            M += P - 1
            over = np.maximum(sc - cap.capacity, 0)
            if sc.max() > cap.capacity:
                B += (P - 1) * 8 * np.ceil(over * record / 8).astype(np.int64)
                M += (P - 1) * (over > 0)
            cap.update(int(sc.max()))
    elif exchange == "alltoall-fixed":
        cap = Capacity()
        for nc in n:
            B += (P - 1) * 8 * (1 + cap.capacity)
            M += P - 1
            if nc.max() > cap.capacity:
                over = np.maximum(nc - cap.capacity, 0) * others
                B += 8 * over.sum(axis=1)
                M += (over > 0).sum(axis=1)
            cap.update(int(nc.max()))
    elif exchange == "hierarchical":
        k = ranks_per_node(P) or P
        leaders = list(range(0, P, k))
        for sc in s:
            total = sc.sum()
            for r in range(P):
                leader = r - r % k
                members = min(k, P - leader)
                if r != leader:
                    B[r] += 8 * sc[r]
                    M[r] += 1
                    continue
                node_total = sc[leader:leader + members].sum()
                B[r] += (len(leaders) - 1) * 8 * (1 + node_total)
                M[r] += (len(leaders) - 1) * (2 if node_total else 1)
                B[r] += (members - 1) * 8 * (1 + total)
                M[r] += (members - 1) * (2 if total else 1)
    else:
        raise AssertionError(exchange)
    return B, M


def expected_rma(run):
    """Totals over ranks: bytes exactly; messages between bounds, because which sender's
    records fall past a full window depends on the order the reservations arrive in."""
    P = run["ranks"]
    _, n = traffic(run)
    others = ~np.eye(P, dtype=bool)
    pairs = (n > 0) & others
    nbytes = int((8 * (n + 1) * pairs).sum())
    low = high = int(2 * pairs.sum())
    cap, need = Capacity(shrink_after=256 // 16), 0
    for c, nc in enumerate(n):
        incoming = (nc * others).sum(axis=0)                       # per receiving rank
        over = np.maximum(incoming - cap.capacity, 0)
        nbytes += int(8 * over.sum())
        low += int((over > 0).sum())                                # at least one sender each
        high += int(((nc * others > 0) & (over > 0)[None, :]).sum())  # at most every sender to it
        need = max(need, int(incoming.max()))
        if (c + 1) % 16 == 0:
            cap.update(need)
            need = 0
    return nbytes, low, high


@pytest.mark.parametrize("exchange", EXCHANGES)
def test_bytes_and_messages_match_the_analysis(workloads, exchange):
    runs = sweep(workloads, 3, "artificial-cells")
    run = runs[(exchange, False)]
    per = counters_per_rank(run)
    assert np.array_equal(per["spikes_sent"].sum(), per["spikes_received"].sum())
    if exchange.startswith("rma"):
        nbytes, low, high = expected_rma(run)
        assert per["bytes_sent"].sum() == nbytes
        assert low <= per["messages_sent"].sum() <= high
        return
    B, M = expected_traffic(run)
    assert np.array_equal(per["bytes_sent"], B), (per["bytes_sent"], B)
    assert np.array_equal(per["messages_sent"], M), (per["messages_sent"], M)
