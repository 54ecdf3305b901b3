"""A two-dimensional grid of cortical columns and its lateral connectivity.

A population laid out on a `columns_x x columns_y` grid holds its neurons column by column:
neuron i of the population lies in column i // (size / columns), and column c at
(x, y) = (c % columns_x, c // columns_x). A projection with `grid=ColumnGrid(...)` and
`indegree=K` gives every target K synapse draws; each draw picks a column offset (dx, dy) with
probability proportional to the kernel w(d) at the distance d = sqrt(dx^2 + dy^2) (in column
spacings, up to `cutoff`), and a source uniformly in the column at that offset from the
target's (multapses and autapses allowed, as for indegree=):

- law "exponential": w(d) = exp(-d / length), the long-range lateral connectivity;
- law "gaussian":    w(d) = exp(-d^2 / (2 length^2)), the short-range one;

(the two laws of Pastorelli et al., "Gaussian and exponential lateral connectivity on
distributed spiking neural network simulation", PDP 2018). The own column is offset (0, 0),
weight w(0) = 1, so the share of local synapses is 1 / sum of the kernel. `decimals` rounds
each w(d) to that many decimals first, offsets rounded to 0 dropped: the DPSNN release's
kernel ("exponential3": "an exponential kernel ... with a rounding at the third decimal digit",
APE-group/201903LargeScaleSimScaling, NEST/README.md), which then sets the reach itself. With boundary
"periodic" the grid is a torus; with "open", draws that fall outside the grid are dropped, so
targets near an edge get fewer synapses.

The engine draws with a table of cumulative thresholds over the offsets (32-bit words of the
target's connect stream, keyed by its global id: the same synapses on any decomposition).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

LAWS = ("exponential", "gaussian")
BOUNDARIES = ("periodic", "open")


@dataclass(frozen=True)
class ColumnGrid:
    columns_x: int
    columns_y: int
    law: str = "exponential"
    length: float = 1.0          # decay length (exponential) or standard deviation (gaussian), column spacings
    cutoff: float = 3.0          # no synapse from columns farther than this, column spacings
    boundary: str = "periodic"
    decimals: int | None = None  # round the kernel to this many decimals (DPSNN's rule: 3); None: exact

    @property
    def columns(self) -> int:
        return self.columns_x * self.columns_y

    def validate(self, where: str) -> None:
        for name in ("columns_x", "columns_y"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ConfigError(f"{where}: grid '{name}' must be a positive integer, got {v!r}")
            object.__setattr__(self, name, int(v))      # a NumPy integer as a Python int (frozen dataclass)
        if self.law not in LAWS:
            raise ConfigError(f"{where}: grid 'law' must be one of {list(LAWS)}, got {self.law!r}")
        if self.boundary not in BOUNDARIES:
            raise ConfigError(f"{where}: grid 'boundary' must be one of {list(BOUNDARIES)}, got {self.boundary!r}")
        for name in ("length", "cutoff"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ConfigError(f"{where}: grid '{name}' must be a positive number of column spacings, got {v!r}")
        d = self.decimals
        if d is not None and (isinstance(d, bool) or not isinstance(d, numbers.Integral) or not 0 <= d <= 12):
            raise ConfigError(f"{where}: grid 'decimals' must be an integer from 0 to 12 (the DPSNN release rounds its "
                              f"kernel to 3), or None for the exact kernel; got {d!r}")

    def offsets(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(dx, dy, probability) of every column offset within the cutoff (on a periodic grid, each
        distinct offset once: a small torus does not count a column twice)."""
        r = int(math.floor(self.cutoff))
        dx, dy = np.meshgrid(np.arange(-r, r + 1), np.arange(-r, r + 1), indexing="xy")
        dx, dy = dx.ravel(), dy.ravel()
        d = np.hypot(dx, dy)
        keep = d <= self.cutoff + 1e-12
        if self.boundary == "periodic":     # offsets that land on the same column of a small torus: once
            seen, unique = set(), np.zeros(dx.size, dtype=bool)
            for i in np.flatnonzero(keep)[np.argsort(d[keep], kind="stable")]:
                key = (int(dx[i]) % self.columns_x, int(dy[i]) % self.columns_y)
                if key not in seen:
                    seen.add(key)
                    unique[i] = True
            keep &= unique
        dx, dy, d = dx[keep], dy[keep], d[keep]
        w = self._kernel(d)
        nonzero = w > 0                    # a rounded kernel ends where its weights round to 0
        dx, dy, w = dx[nonzero], dy[nonzero], w[nonzero]
        return dx.astype(np.int32), dy.astype(np.int32), w / w.sum()

    def _kernel(self, d: np.ndarray) -> np.ndarray:
        w = np.exp(-d / self.length) if self.law == "exponential" else np.exp(-d * d / (2 * self.length ** 2))
        return w if self.decimals is None else np.round(w, self.decimals)

    def thresholds(self, probability: np.ndarray) -> np.ndarray:
        """Cumulative thresholds on 32-bit words: offset o for a word u with t[o-1] <= u < t[o]."""
        t = np.rint(np.cumsum(probability) * 2.0 ** 32).astype(np.uint64)
        t[-1] = 2 ** 32
        return t

    def in_bounds_fraction(self) -> float:
        """The mean fraction of a target's draws that land on the grid (1 when periodic)."""
        if self.boundary == "periodic":
            return 1.0
        dx, dy, p = self.offsets()
        x, y = np.meshgrid(np.arange(self.columns_x), np.arange(self.columns_y), indexing="xy")
        x, y = x.ravel()[:, None], y.ravel()[:, None]
        inside = (x + dx >= 0) & (x + dx < self.columns_x) & (y + dy >= 0) & (y + dy < self.columns_y)
        return float((inside * p).sum(axis=1).mean())

    def column_of(self, local_ids, size: int) -> np.ndarray:
        """The column of population-local ids of a population of `size` neurons."""
        return np.asarray(local_ids) // (size // self.columns)

    def distance(self, a, b) -> np.ndarray:
        """Distance between columns a and b (in column spacings, wrapped on a periodic grid)."""
        ax, ay = np.asarray(a) % self.columns_x, np.asarray(a) // self.columns_x
        bx, by = np.asarray(b) % self.columns_x, np.asarray(b) // self.columns_x
        ddx, ddy = np.abs(ax - bx), np.abs(ay - by)
        if self.boundary == "periodic":
            ddx, ddy = np.minimum(ddx, self.columns_x - ddx), np.minimum(ddy, self.columns_y - ddy)
        return np.hypot(ddx, ddy)


def rank_blocks(columns_x: int, columns_y: int, ranks: int) -> tuple[int, int]:
    """px x py = ranks rectangles of columns, as square as the grid allows."""
    best = None
    for px in range(1, ranks + 1):
        if ranks % px:
            continue
        py = ranks // px
        if px > columns_x or py > columns_y:
            continue
        score = abs(math.log((columns_x / px) / (columns_y / py)))   # blocks as square as possible
        if best is None or score < best[0]:
            best = (score, px, py)
    if best is None:
        raise ConfigError(f"placement 'grid': {ranks} ranks cannot each take a block of a {columns_x} x {columns_y} "
                          f"grid of columns; use fewer ranks or more columns")
    return best[1], best[2]


def column_rank(columns_x: int, columns_y: int, ranks: int) -> np.ndarray:
    """The rank of every column: the grid cut into px x py blocks of consecutive columns."""
    px, py = rank_blocks(columns_x, columns_y, ranks)
    c = np.arange(columns_x * columns_y)
    x, y = c % columns_x, c // columns_x
    return (x * px // columns_x) + px * (y * py // columns_y)
