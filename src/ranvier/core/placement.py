"""Placement of neurons on ranks for models with areas.

The engine places neurons by arithmetic: `round-robin` (every area spread over every rank, the
conventional scheme), `block` and `random` (each population shuffled over ranks and threads by a
bijection keyed by the seed: cpp/base/placement.hpp) need nothing from here. The area-aware schemes are computed
here, from the network alone, as contiguous gid segments with a rank each:

- `by-area`: each area whole on one rank (area i on rank i % ranks); needs at least as many
  areas as ranks. With one area per rank, the study's structure-aware placement.
- `area-groups`: each area on a group of consecutive ranks, its neurons in equal blocks; an
  area gets ranks in proportion to its cost, so work per rank stays even. With fewer ranks
  than areas, whole areas are packed as by `balanced`.
- `balanced`: whole areas packed onto ranks by cost, largest first onto the least loaded rank.

Cost of an area: its neuron updates plus its expected synaptic events, in nanoseconds per
simulated second (see `area_costs`). No padding neurons are ever created: ranks simply hold
different numbers of neurons when areas differ.
"""
from __future__ import annotations

from ..errors import ConfigError

AREA_PLACEMENTS = ("by-area", "area-groups", "balanced")
# `grid`: a network on a grid of columns (ranvier.core.grid) cut into px x py rectangles of columns,
# one per rank, so that a rank's neurons and their nearest partners share it.
SEGMENT_PLACEMENTS = AREA_PLACEMENTS + ("grid",)
PLACEMENTS = ("round-robin", "block", "random") + SEGMENT_PLACEMENTS
# Relative costs used to balance areas (measured on the 2-core development VM: about 1 ns per
# neuron update step, about 4 ns per delivered synaptic event).
NS_PER_NEURON_STEP = 1.0
NS_PER_SYNAPTIC_EVENT = 4.0


def area_ranges(network) -> list[tuple[str, int, int]]:
    """(area, first gid, neurons) per area, in gid order. Every population needs an area and the
    populations of an area must be consecutive."""
    out: list[list] = []
    for p in network.populations:
        if p.area is None:
            raise ConfigError(f"population '{p.name}' has no area; the area placements ({', '.join(AREA_PLACEMENTS)}) "
                              f"need an area for every population: Population(..., area=\"V1\")")
        if out and out[-1][0] == p.area:
            out[-1][2] += p.size
        elif any(a == p.area for a, _, _ in out):
            raise ConfigError(f"area '{p.area}': its populations must be added one after another "
                              f"(population '{p.name}' follows another area's)")
        else:
            out.append([p.area, p.first_id, p.size])
    return [tuple(a) for a in out]


def area_costs(network, resolution_ms: float) -> dict[str, float]:
    """Expected nanoseconds of work per simulated second for each area: neuron update steps plus
    synaptic events delivered to its neurons (rates: see Network.expected_spike_rate_hz)."""
    steps_per_second = 1000.0 / resolution_ms
    cost: dict[str, float] = {}
    for p in network.populations:
        cost[p.area] = cost.get(p.area, 0.0) + p.size * steps_per_second * NS_PER_NEURON_STEP
    for pr in network.projections:
        src, tgt = network.population(pr.source), network.population(pr.target)
        events = network.projection_synapses(pr) * network.expected_spike_rate_hz(src)
        cost[tgt.area] = cost.get(tgt.area, 0.0) + events * NS_PER_SYNAPTIC_EVENT
    return cost


def _blocks(first: int, size: int, parts: int) -> list[tuple[int, int]]:
    """size neurons from first in parts balanced contiguous blocks: (start, end) pairs."""
    q, r = divmod(size, parts)
    out, at = [], first
    for i in range(parts):
        n = q + (1 if i < r else 0)
        out.append((at, at + n))
        at += n
    return out


def segments(network, placement: str, ranks: int, resolution_ms: float) -> tuple[list[int], list[int]]:
    """(bounds, ranks) of the contiguous gid segments of an area placement: segment s holds gids
    [bounds[s], bounds[s+1]) on rank ranks[s]. Adjacent segments on one rank are merged."""
    if placement not in SEGMENT_PLACEMENTS:
        raise ConfigError(f"placement must be one of {list(SEGMENT_PLACEMENTS)} here, got {placement!r}")
    if placement == "grid":
        return _merged(grid_pieces(network, ranks))
    areas = area_ranges(network)
    A = len(areas)
    pieces: list[tuple[int, int, int]] = []     # (start, end, rank)
    if placement == "by-area":
        if A < ranks:
            raise ConfigError(f"placement 'by-area' puts each area on one rank: {A} area(s) cannot fill {ranks} "
                              f"ranks; use placement 'area-groups' (an area spans a group of ranks) or fewer ranks")
        pieces = [(first, first + size, i % ranks) for i, (_, first, size) in enumerate(areas)]
    elif placement == "area-groups" and ranks >= A:
        cost = area_costs(network, resolution_ms)
        share = [1] * A
        for _ in range(ranks - A):   # each further rank to the area with the most work per rank
            i = max(range(A), key=lambda a: (cost[areas[a][0]] / share[a], -a))
            share[i] += 1
        for i, (_, first, size) in enumerate(areas):
            if share[i] > size:
                raise ConfigError(f"placement 'area-groups': area '{areas[i][0]}' has {size} neurons for "
                                  f"{share[i]} ranks; use fewer ranks")
        rank = 0
        for i, (_, first, size) in enumerate(areas):
            for b, e in _blocks(first, size, share[i]):
                pieces.append((b, e, rank))
                rank += 1
    else:  # balanced, and area-groups with fewer ranks than areas
        if A < ranks:
            raise ConfigError(f"placement 'balanced' packs whole areas onto ranks: {A} area(s) cannot fill "
                              f"{ranks} ranks; use placement 'area-groups' or fewer ranks")
        cost = area_costs(network, resolution_ms)
        load = [0.0] * ranks
        rank_of = {}
        for i in sorted(range(A), key=lambda a: (-cost[areas[a][0]], a)):
            r = min(range(ranks), key=lambda k: (load[k], k))
            rank_of[i] = r
            load[r] += cost[areas[i][0]]
        pieces = [(first, first + size, rank_of[i]) for i, (_, first, size) in enumerate(areas)]
    return _merged(pieces)


def grid_pieces(network, ranks: int) -> list[tuple[int, int, int]]:
    """(start, end, rank) of every column of every population under placement 'grid'."""
    from .grid import column_rank

    g = network.column_grid
    if g is None:
        raise ConfigError("placement 'grid' needs a network on a grid of columns (projections with "
                          "grid=rv.ColumnGrid(...); dpsnn: --set columns_x=16 --set columns_y=16)")
    owner = column_rank(g.columns_x, g.columns_y, ranks)
    pieces = []
    for p in network.populations:
        if p.size % g.columns:
            raise ConfigError(f"placement 'grid': population '{p.name}' has {p.size} neurons, not a multiple of "
                              f"the grid's {g.columns} columns")
        per = p.size // g.columns
        pieces += [(p.first_id + c * per, p.first_id + (c + 1) * per, int(owner[c])) for c in range(g.columns)]
    return pieces


def _merged(pieces) -> tuple[list[int], list[int]]:
    bounds, owners = [0], []
    for b, e, r in pieces:
        if owners and owners[-1] == r:
            bounds[-1] = e
        else:
            owners.append(r)
            bounds.append(e)
    return bounds, owners


def rank_loads(network, bounds: list[int], owners: list[int], ranks: int, resolution_ms: float) -> list[float]:
    """Expected cost per rank of a segment placement (for reports): area costs shared by neurons."""
    cost = area_costs(network, resolution_ms)
    load = [0.0] * ranks
    for area, first, size in area_ranges(network):
        for s, r in enumerate(owners):
            overlap = min(bounds[s + 1], first + size) - max(bounds[s], first)
            if overlap > 0:
                load[r] += cost[area] * overlap / size
    return load
