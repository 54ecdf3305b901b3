"""Real-time deadlines: how far wall time runs behind simulated time, cycle by cycle.

The DPSNN study separates soft real time (the whole run no slower than biology: a real-time
factor of at most 1) from hard real time (every step on time). A cycle is one communication
interval, of simulated length `cycle_ms`; its deadline is the run's start plus the simulated
time at its end. Per cycle:

- lag = wall time at the end of the cycle's work - (run start + simulated time at its end);
  positive: behind biology. The cycle missed its deadline when its lag is positive.
- cycle time = the cycle's work, from its start to its end (the sum of its phases: any wait
  for pacing and the time between chunks are not in it); a cycle over budget took longer than
  `cycle_ms`. A run keeps hard real time only if its cycle times stay within budget, apart from
  what the lead it has built up can absorb.

Each rank measures both on its own clock from its own start of the run (the engine's
`take_cycle_ends`); the run is as late as its slowest rank, so rank 0 keeps, per cycle, the
largest lag and cycle time over ranks. Lags are continuous across the chunks a run is cut
into (progress, weight samples): the time between chunks counts. Every run() call starts from
its own origin (a pause between two calls is not a missed deadline).

With pacing (`Simulation(pace=True)`, `ranvier run --pace`), the engine holds each cycle until
its deadline, so the run never goes faster than biology (for closed loops with the outside
world); the time held is not part of any phase (`pace_wait_seconds`).

This module does not import the engine: `summarize` works on arrays.
"""
from __future__ import annotations

import math

import numpy as np

TRACE_POINTS = 400           # the lag over the run, for the report: at most 800 points
POINTS_PER_CHUNK = 16        # trace points a chunk adds before merging
PERCENTILES = (50, 90, 99)


class DeadlineLog:
    """Rank 0's record of every cycle's lag and cycle time (seconds, slowest rank), in bounded
    memory whatever the run's length: counts, the worst lag, a histogram of cycle time over
    cycle length (log bins, 1 % wide: the percentiles to 1 %), and the lag trace as the
    largest lag of stretches that merge in pairs whenever the trace outgrows its points."""

    BINS_PER_DECADE = 230                    # 10^(1/230) = 1.01
    LOWEST, DECADES = 1e-5, 10               # ratios from 1e-5 to 1e5; outside: the end bins

    def __init__(self, cycle_ms: float):
        self.cycle_ms = float(cycle_ms)
        self.cycles = self.missed = self.over_budget = 0
        self.ratio_sum = 0.0
        self.ratio_max = 0.0
        self.worst_lag, self.worst_at_ms, self.final_lag = -math.inf, 0.0, 0.0
        self.histogram = np.zeros(self.BINS_PER_DECADE * self.DECADES + 2, dtype=np.int64)
        self.trace_t: list[float] = []       # simulated time at the end of each stretch (ms)
        self.trace_lag: list[float] = []     # its largest lag (s)

    def add(self, lag_s, cycle_s, end_ms) -> None:
        """One chunk: per cycle, the lag and the cycle time (seconds, slowest rank), and the
        simulated time at its end (ms, since the simulation's start)."""
        lag = np.asarray(lag_s, dtype=np.float64)
        if lag.size == 0:
            return
        end_ms = np.asarray(end_ms, dtype=np.float64)
        ratio = np.asarray(cycle_s, dtype=np.float64) / (self.cycle_ms * 1e-3)
        self.cycles += lag.size
        self.missed += int(np.count_nonzero(lag > 0))
        self.over_budget += int(np.count_nonzero(ratio > 1.0))
        self.ratio_sum += float(ratio.sum())
        self.ratio_max = max(self.ratio_max, float(ratio.max()))
        at = int(np.argmax(lag))
        if lag[at] > self.worst_lag:
            self.worst_lag, self.worst_at_ms = float(lag[at]), float(end_ms[at])
        self.final_lag = float(lag[-1])
        where = np.floor(np.log10(np.maximum(ratio, 1e-300) / self.LOWEST) * self.BINS_PER_DECADE) + 1
        np.add.at(self.histogram, np.clip(where, 0, self.histogram.size - 1).astype(np.int64), 1)
        # the trace: the largest lag of up to POINTS_PER_CHUNK stretches of the chunk, pairs of
        # points merged whenever there are more than 2 TRACE_POINTS (bounded, whatever the length)
        starts = np.linspace(0, lag.size, min(POINTS_PER_CHUNK, lag.size) + 1).astype(np.int64)[:-1]
        starts = np.unique(starts)
        ends = np.append(starts[1:], lag.size) - 1
        self.trace_lag.extend(np.maximum.reduceat(lag, starts).tolist())
        self.trace_t.extend(end_ms[ends].tolist())
        while len(self.trace_t) > 2 * TRACE_POINTS:
            self.trace_lag = [max(self.trace_lag[i:i + 2]) for i in range(0, len(self.trace_lag), 2)]
            self.trace_t = [self.trace_t[min(i + 1, len(self.trace_t) - 1)] for i in range(0, len(self.trace_t), 2)]

    def percentile(self, q: float) -> float:
        """The q-th percentile of cycle time / cycle length (the upper edge of its 1 % bin, at
        most the largest ratio seen)."""
        rank = q / 100.0 * self.cycles
        k = int(np.searchsorted(np.cumsum(self.histogram), max(rank, 1), side="left"))
        edge = self.LOWEST * 10 ** (k / self.BINS_PER_DECADE)
        return float(min(edge, self.ratio_max))


def rank_lags(ends, origin: float, first_cycle: int, run_first_cycle: int, cycle_ms: float) -> np.ndarray:
    """One rank's chunk: the lag in seconds of each cycle from its end (wall clock), the run's
    origin on the same clock, and the index of the chunk's first cycle and of the run's first."""
    ends = np.asarray(ends, dtype=np.float64)
    done = first_cycle - run_first_cycle + 1 + np.arange(ends.size)       # cycles of this run done
    return ends - origin - done * (cycle_ms * 1e-3)


def summarize(log: DeadlineLog, *, real_time_factor: float | None = None, paced: bool = False,
              pace_wait_seconds: float = 0.0) -> dict | None:
    """The "deadlines" entry of summary.json."""
    if log.cycles == 0:
        return None
    return {
        "cycle_ms": log.cycle_ms,
        "cycles": int(log.cycles),
        "paced": bool(paced),
        "pace_wait_seconds": float(pace_wait_seconds),
        # hard real time: every cycle done by its deadline
        "cycles_on_time_fraction": 1.0 - log.missed / log.cycles,
        "cycles_missed": int(log.missed),
        "hard_real_time": log.missed == 0,
        # soft real time: the run's last cycle done by its deadline (its wall time up to there
        # against the simulated time)
        "soft_real_time": bool(log.final_lag <= 0),
        "real_time_factor": real_time_factor,
        "worst_lag_ms": log.worst_lag * 1e3,
        "worst_lag_at_s": log.worst_at_ms / 1000,
        "final_lag_ms": log.final_lag * 1e3,
        # a cycle's work over its simulated length (1 = exactly real time)
        "cycle_time_ratio": {**{f"p{q}": log.percentile(q) for q in PERCENTILES},
                             "max": log.ratio_max, "mean": log.ratio_sum / log.cycles},
        "cycles_over_budget_fraction": log.over_budget / log.cycles,
        "lag_trace": {"t_s": [t / 1000 for t in log.trace_t], "lag_ms": [x * 1e3 for x in log.trace_lag]},
    }


def format_rows(d: dict | None) -> list[tuple[str, str]]:
    """The run summary's lines."""
    if not d:
        return []
    r = d["cycle_time_ratio"]
    soft = "yes" if d["soft_real_time"] else "no"
    rows = [("real time", f"hard: {100 * d['cycles_on_time_fraction']:.1f} % of {d['cycles']:,} cycles on time "
                          f"({d['cycles_missed']:,} missed), worst lag {d['worst_lag_ms']:+.2f} ms at "
                          f"{d['worst_lag_at_s']:g} s; soft: {soft}"),
            (f"  cycle time / {d['cycle_ms']:g} ms",
             f"p50 {r['p50']:.3g}  p90 {r['p90']:.3g}  p99 {r['p99']:.3g}  max {r['max']:.3g}; "
             f"{100 * d['cycles_over_budget_fraction']:.1f} % of cycles over budget")]
    if d["paced"]:
        rows.append(("  paced", f"held back {d['pace_wait_seconds']:.3f} s to stay at biology's pace"))
    return rows
