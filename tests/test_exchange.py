"""The spike-exchange suite: every strategy, with and without the overlapped schedule.

- Decomposition invariance across strategies: on 1 to 4 ranks, every strategy and overlap
  setting gives spike trains (and the network instance) identical to allgather on one rank,
  on scaled-down dpsnn and artificial-cells. 3 and 4 ranks are grouped two per node, so the
  hierarchical exchange has leaders that talk to each other.
- A burst (every neuron fires in the same step) overflows the fixed buffers of
  allgather-compressed, alltoall-fixed, rma and the persistent strategies: an overflow round
  and a resize must follow (for the persistent ones, a re-initialisation of their persistent
  operations on every rank), and nothing may be lost.
- The persistent strategies' fixed partners: on a chain of populations placed in blocks, some
  ranks never talk and partners differ in the two directions.
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
PERSISTENT = ("persistent-allgather", "persistent-alltoall", "persistent-p2p")
FIXED_BUFFER = ("allgather-compressed", "alltoall-fixed", "rma", "rma-pscw") + PERSISTENT
# Fixed buffers that hold the rank's own records too, so that they overflow on one rank as well.
SELF_IN_BUFFER = ("allgather-compressed", "alltoall-fixed", "persistent-allgather")
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


@pytest.mark.parametrize("ranks,placement", [(2, "random"), (3, "block")])
def test_every_strategy_with_other_placements_and_two_threads(workloads, ranks, placement):
    """The other axes of the decomposition: block and random placement (a keyed permutation:
    every rank holds targets of every other), 2 threads per rank, every strategy with and
    without overlap; test_invariance.py crosses placements with ranks and threads in full for
    allgather and alltoallv."""
    reference = sweep(workloads, 1, "dpsnn")[("allgather", False)]
    runs = workloads.sweep(ranks, EXCHANGES, (False, True), threads=2, placement=placement,
                           ranks_per_node=ranks_per_node(ranks), **WORKLOADS["dpsnn"])
    assert len(runs) == 2 * len(EXCHANGES)
    for (exchange, overlap), run in runs.items():
        where = f"{exchange} overlap={overlap} placement={placement}"
        assert run["ranks"] == ranks, where
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
        if exchange in FIXED_BUFFER and (ranks > 1 or exchange in SELF_IN_BUFFER):
            assert c["overflow_rounds"] > 0, where
            assert c["exchange_resizes"] > 0, where
        if exchange not in FIXED_BUFFER:
            assert c["overflow_rounds"] == 0 and c["exchange_resizes"] == 0, where
        if exchange not in PERSISTENT:
            assert c["persistent_reinits"] == 0, where


@pytest.mark.parametrize("ranks", (1, 2, 3))
def test_a_burst_reinitialises_the_persistent_operations(workloads, ranks):
    """The burst (4000 records in one interval, initial slots of 16) cannot fit: every rank that
    exchanges records re-initialises its persistent operations with larger slots and redoes the
    interval; the spikes are alltoallv's, and the counters balance. The collective strategies
    grow on every rank together (the same number of re-initialisations on each)."""
    runs = workloads.sweep(ranks, ("alltoallv",) + PERSISTENT, (False, True), threads=2,
                           ranks_per_node=ranks_per_node(ranks), **BURST)
    for (exchange, overlap), run in runs.items():
        reference = runs[("alltoallv", overlap)]
        where = f"{exchange} overlap={overlap}"
        assert run["ranks"] == ranks, where
        assert np.array_equal(run["ids"], reference["ids"]) and np.array_equal(run["steps"], reference["steps"]), where
        assert np.count_nonzero(run["steps"] == BURST_STEP) == BURST["neurons"], where
        check_counters(run)
        if exchange == "alltoallv":
            continue
        per = counters_per_rank(run)
        reinits, rounds = per["persistent_reinits"], per["overflow_rounds"]
        if ranks == 1 and exchange != "persistent-allgather":     # own records are copied, never sent
            assert reinits.sum() == 0 and rounds.sum() == 0, where
            continue
        assert np.all(reinits > 0) and np.all(rounds > 0), (where, reinits, rounds)
        assert np.array_equal(per["exchange_resizes"], reinits), where
        if exchange != "persistent-p2p":                          # collective: every rank at once
            assert np.all(reinits == reinits[0]) and np.all(rounds == rounds[0]), (where, reinits, rounds)


CHAIN = dict(model="burst-chain", neurons=4000, probability=0.01, ms=20.0, placement="block")


@pytest.mark.parametrize("ranks", (2, 3, 4))
def test_persistent_strategies_with_ranks_that_never_talk(workloads, ranks):
    """A chain of four populations L0 -> L1 -> L2 -> L3 (each also onto itself) in blocks: rank r
    sends to higher ranks only, the last rank to nobody. The persistent strategies' partners are
    fixed at configure: the spikes must still be those of one rank, with the burst overflowing
    the slots of the ranks that talk. persistent-p2p sends nothing from the last rank;
    persistent-alltoall sends it only the header words that keep every rank's decision alike."""
    reference = workloads(1, exchange="allgather", **CHAIN)
    exchanges = ("alltoallv", "neighbor") + PERSISTENT
    runs = workloads.sweep(ranks, exchanges, (False, True), threads=1, **CHAIN)
    for (exchange, overlap), run in runs.items():
        where = f"{exchange} overlap={overlap}"
        assert run["ranks"] == ranks, where
        assert run["digest"] == reference["digest"], where
        assert np.array_equal(run["ids"], reference["ids"]) and np.array_equal(run["steps"], reference["steps"]), where
        check_balance(counters(run), run["ids"].size)
        per = counters_per_rank(run)
        edges = partner_edges(run, owner=block_owner(run))
        assert (edges != edges.T).any(), where                             # one-way partners
        silent = not edges[-1].any()                                       # on 2 and 4 ranks: blocks = links
        assert silent == (ranks != 3), where
        cycles = round(run["duration_ms"] / (run["steps_per_cycle"] * 0.1))
        if exchange == "persistent-p2p":
            talks = edges.any(axis=1) | edges.any(axis=0)
            assert np.all(per["persistent_reinits"][talks] > 0), where     # every pair overflowed once
            if silent:
                assert per["bytes_sent"][-1] == 0 and per["messages_sent"][-1] == 0, where
        if exchange == "persistent-alltoall":
            assert np.all(per["persistent_reinits"] == per["persistent_reinits"][0]), where
            assert per["persistent_reinits"][0] > 0, where
            if silent:
                rounds = cycles + per["overflow_rounds"][-1]
                assert per["bytes_sent"][-1] == 8 * (ranks - 1) * rounds, where


# -- bytes and messages: what each strategy must send -----------------------------------------

class Capacity:
    """cpp/exchange/fixed_buffer.hpp, replayed. update: whether the capacity changed."""
    MINIMUM = 16

    def __init__(self, shrink_after=256, growth=1):
        self.capacity, self.shrink_after, self.updates, self.window_max = self.MINIMUM, shrink_after, 0, 0
        self.growth = growth

    def update(self, most):
        self.window_max = max(self.window_max, most)
        if most > self.capacity:
            self.capacity = max(most + most // 4 + 1, self.growth * self.capacity)
            self.updates = self.window_max = 0
            return True
        self.updates += 1
        if self.updates < self.shrink_after:
            return False
        shrink = self.window_max * 4 < self.capacity and self.capacity > self.MINIMUM
        if shrink:
            self.capacity = max(self.MINIMUM, 2 * self.window_max)
        self.updates = self.window_max = 0
        return shrink


def round_robin_owner(run):
    return np.arange(run["has_targets"].shape[1]) % run["ranks"]


def block_owner(run):
    """cpp/base/placement.hpp's balanced blocks: the first n % P blocks hold one neuron more."""
    n, P = run["has_targets"].shape[1], run["ranks"]
    starts = np.array([r * (n // P) + min(r, n % P) for r in range(P + 1)])
    return np.searchsorted(starts, np.arange(n), side="right") - 1


def partner_edges(run, owner=None):
    """edges[r, d]: some neuron of rank r has a synapse on rank d != r (the partners)."""
    P = run["ranks"]
    owner = round_robin_owner(run) if owner is None else owner
    edges = (run["has_targets"][:, None, :] & (owner == np.arange(P)[:, None])[None, :, :]).any(axis=2).T
    return edges & ~np.eye(P, dtype=bool)


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
        edges = partner_edges(run)
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
    elif exchange in PERSISTENT:
        B, M, _ = expected_persistent(run)
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


def expected_persistent(run):
    """(bytes, messages, re-initialisations) per rank of the persistent strategies: fixed slots
    every interval, a second round with the grown slots where one overflowed, the capacity
    policy with doubling replayed (one global capacity for the collectives, one per pair of
    ranks for persistent-p2p, kept alike by both sides)."""
    exchange, P = run["exchange"], run["ranks"]
    s, n = traffic(run)
    others = ~np.eye(P, dtype=bool)
    edges = partner_edges(run)
    B = np.zeros(P, dtype=np.int64)
    M = np.zeros(P, dtype=np.int64)
    R = np.zeros(P, dtype=np.int64)
    if exchange == "persistent-p2p":
        caps = {(r, d): Capacity(growth=2) for r in range(P) for d in range(P) if edges[r, d]}
        for nc in n:
            for (r, d), cap in caps.items():
                B[r] += 8 * (1 + cap.capacity)
                M[r] += 1
                overflow = nc[r, d] > cap.capacity
                if cap.update(int(nc[r, d])):
                    R[r] += 1                       # the sender's send and the receiver's receive
                    R[d] += 1
                if overflow:
                    B[r] += 8 * (1 + cap.capacity)
                    M[r] += 1
        return B, M, R
    cap = Capacity(growth=2)
    for sc, nc in zip(s, n):
        most = int(sc.max()) if exchange == "persistent-allgather" else int((nc * others).max())
        rounds = [cap.capacity]
        changed = cap.update(most)
        if changed:
            R += 1
        if most > rounds[0]:
            rounds.append(cap.capacity)
        for c in rounds:
            M += P - 1
            if exchange == "persistent-allgather":
                B += (P - 1) * 8 * (1 + c)
            else:                                   # a block to each partner, a header word to the others
                B += (8 * np.where(edges, 1 + c, 1) * others).sum(axis=1)
    return B, M, R


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
    if exchange in PERSISTENT:
        _, _, R = expected_persistent(run)
        assert R.sum() > 0                                             # the initial wave overflows
        assert np.array_equal(per["persistent_reinits"], R), (per["persistent_reinits"], R)
    else:
        assert per["persistent_reinits"].sum() == 0
