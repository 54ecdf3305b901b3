"""Load imbalance between ranks: spikes emitted and received per rank and interval.

The Blue Gene/P exchange study found that what limits scaling is load imbalance, the spikes
per rank per interval: every rank waits, at each exchange, for the busiest one. Each rank's
engine counts, per cycle (one communication interval), the spikes its neurons emitted and
the received spikes that have at least one synapse on it (the spikes it must deliver: with
allgather every rank receives every spike, but delivers only these). Rank 0 gathers them and
keeps, in bounded memory, per quantity:

- `max_over_mean`: per interval, the busiest rank's count over the mean over ranks (1 = even),
  averaged over the intervals with any spike, and its largest value. Intervals with a handful
  of spikes weigh as much as busy ones here (two spikes on two ranks: 1 or 2), so also
- `weighted_max_over_mean`: the busiest rank's counts summed over intervals over the mean's:
  the work the slowest rank does per unit of mean work, if work follows spikes;
- `cv`: per interval, the coefficient of variation of the counts over ranks, averaged;
- `per_rank`: each rank's total over the run, and the max/mean of those totals (an imbalance
  that persists, as block placement of populations with different rates gives).

With overlap, a cycle's received spikes are counted when their exchange completes, one cycle
later. This module does not import the engine.
"""
from __future__ import annotations

import numpy as np

QUANTITIES = ("emitted", "received")


class ImbalanceLog:
    """Rank 0's running record of per-rank, per-interval spike counts."""

    def __init__(self, ranks: int):
        self.ranks = int(ranks)
        self._previous = np.zeros((self.ranks, 2), dtype=np.int64)    # cumulative counts so far
        self.totals = np.zeros((self.ranks, 2), dtype=np.int64)
        self.intervals = np.zeros(2, dtype=np.int64)                   # intervals with any spike
        self.ratio_sum = np.zeros(2)
        self.ratio_max = np.ones(2)
        self.cv_sum = np.zeros(2)
        self.max_sum = np.zeros(2)
        self.mean_sum = np.zeros(2)

    def add(self, cumulative) -> None:
        """One chunk: [rank, cycle, 2] cumulative counts (emitted, received) at each cycle's end."""
        c = np.asarray(cumulative, dtype=np.int64)
        if c.shape[1] == 0:
            return
        counts = np.diff(c, axis=1, prepend=self._previous[:, None, :]).astype(np.float64)  # [rank, cycle, 2]
        self._previous = c[:, -1, :]
        self.totals += counts.sum(axis=1).astype(np.int64)
        mean = counts.mean(axis=0)                                     # [cycle, 2]
        busy = mean > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(busy, counts.max(axis=0) / mean, 0.0)
            cv = np.where(busy, counts.std(axis=0) / mean, 0.0)
        self.intervals += busy.sum(axis=0)
        self.ratio_sum += ratio.sum(axis=0)
        self.ratio_max = np.maximum(self.ratio_max, ratio.max(axis=0))
        self.cv_sum += cv.sum(axis=0)
        self.max_sum += counts.max(axis=0).sum(axis=0)
        self.mean_sum += mean.sum(axis=0)


def summarize(log: ImbalanceLog) -> dict | None:
    """The "imbalance" entry of summary.json."""
    if log is None or not log.intervals.any():
        return None
    out = {"ranks": log.ranks}
    for k, name in enumerate(QUANTITIES):
        n = int(log.intervals[k])
        totals = log.totals[:, k]
        mean_total = totals.mean()
        out[name] = {
            "intervals": n,
            "max_over_mean": float(log.ratio_sum[k] / n) if n else None,
            "max_over_mean_worst": float(log.ratio_max[k]) if n else None,
            "weighted_max_over_mean": float(log.max_sum[k] / log.mean_sum[k]) if log.mean_sum[k] > 0 else None,
            "cv": float(log.cv_sum[k] / n) if n else None,
            "per_rank": totals.tolist(),
            "per_rank_max_over_mean": float(totals.max() / mean_total) if mean_total > 0 else None,
        }
    return out


def format_rows(d: dict | None) -> list[tuple[str, str]]:
    """The run summary's lines (only with more than one rank: one rank has nothing to balance)."""
    if not d or d["ranks"] < 2:
        return []
    rows = []
    for name, label in (("emitted", "spikes emitted"), ("received", "spikes received (synapses here)")):
        q = d[name]
        if q["max_over_mean"] is None:
            continue
        rows.append((f"imbalance, {name}", f"{label} per rank and interval: max/mean {q['max_over_mean']:.3f} "
                                           f"(spike-weighted {q['weighted_max_over_mean']:.3f}, worst "
                                           f"{q['max_over_mean_worst']:.2f}), CV {q['cv']:.3f}; over the run "
                                           f"{q['per_rank_max_over_mean']:.3f}"))
    return rows
