"""Up and down states: detection on the population rate, as the slow-wave literature does.

Method (after the threshold-with-hysteresis detectors of the slow-oscillation literature,
e.g. Mattia and Sanchez-Vives 2012; Capone et al. 2017; the DPSNN slow-wave studies):

1. the population rate of the whole network in bins of `bin_ms` (5 ms), in Hz per neuron;
2. smoothed by a Gaussian of standard deviation `smooth_ms` (20 ms): the up/down transitions of
   slow waves take tens of milliseconds, the fluctuations of an asynchronous state less;
3. two thresholds placed between the low and the high levels of the smoothed rate: with
   `low` and `high` the 10th and 98th percentiles (`LEVELS`: up states may fill only a few per cent of the time), an up state begins where the rate
   rises above low + 0.5 (high - low) and ends where it falls below low + 0.25 (high - low)
   (hysteresis: the noise near one threshold cannot flip the state back and forth);
4. states shorter than `min_state_ms` (50 ms) are merged into their neighbours;
5. the network has up and down states only if they are distinct: the high level at least
   `min_contrast` (4) times the low level (plus 0.5 Hz, so a silent network is not bistable by
   division), and at least two complete up states. An asynchronous network, whose rate
   fluctuates by tens of percent around its mean, has none.

Reported: the up states (onset, offset), their number, the slow-oscillation frequency (up
onsets per second of analysed time), the up- and down-state durations (mean, CV), the rate in
each state, the fraction of time up. The first `transient_ms` (500 ms) are left out: the
dpsnn's synchronous start is not a slow wave. Pure NumPy; works on spike times alone.
"""
from __future__ import annotations

import numpy as np

BIN_MS = 5.0
SMOOTH_MS = 20.0
LEVELS = (10.0, 98.0)            # percentiles of the smoothed rate: the down and up levels (short up states: 98)
UP_AT, DOWN_AT = 0.5, 0.25       # thresholds, as fractions of the way from the low to the high level
MIN_STATE_MS = 50.0
MIN_CONTRAST = 4.0
TRANSIENT_MS = 500.0


def smooth(rate, bin_ms: float = BIN_MS, smooth_ms: float = SMOOTH_MS):
    """Gaussian smoothing (standard deviation smooth_ms), edges normalised by the kernel's mass."""
    rate = np.asarray(rate, dtype=np.float64)
    if smooth_ms <= 0 or rate.size == 0:
        return rate.copy()
    sd = smooth_ms / bin_ms
    half = min(int(np.ceil(4 * sd)), (rate.size - 1) // 2)   # a kernel no longer than the series ("same" keeps its length)
    k = np.exp(-0.5 * (np.arange(-half, half + 1) / sd) ** 2)
    num = np.convolve(rate, k, mode="same")
    den = np.convolve(np.ones_like(rate), k, mode="same")
    return num / den


def _runs(up: np.ndarray) -> list[list]:
    """[state, first bin, end bin) runs of a boolean series."""
    change = np.flatnonzero(np.diff(up.astype(np.int8))) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [up.size]])
    return [[bool(up[s]), int(s), int(e)] for s, e in zip(starts, ends)]


def _merge_short(runs: list[list], min_bins: int) -> list[list]:
    """Repeatedly gives the shortest run below min_bins to its neighbours' state (first and
    last runs excepted: they are cut by the window and may be short)."""
    while True:
        inner = [i for i in range(1, len(runs) - 1) if runs[i][2] - runs[i][1] < min_bins]
        if not inner:
            return runs
        i = min(inner, key=lambda j: runs[j][2] - runs[j][1])
        runs[i - 1][2] = runs[i + 1][2]            # neighbours share a state: all three become one
        del runs[i:i + 2]


def detect(times_ms, neurons: int, duration_ms: float, *, bin_ms: float = BIN_MS, **kw) -> dict:
    """Up/down analysis of the spikes (times in ms) of `neurons` neurons over [0, duration_ms)."""
    edges = np.arange(0.0, duration_ms + 0.5 * bin_ms, bin_ms)
    counts, _ = np.histogram(np.asarray(times_ms, dtype=np.float64), bins=edges)
    return detect_counts(counts, bin_ms, neurons, **kw)


def detect_counts(counts, bin_ms: float, neurons: int, *, transient_ms: float = TRANSIENT_MS,
                  smooth_ms: float = SMOOTH_MS, min_state_ms: float = MIN_STATE_MS,
                  min_contrast: float = MIN_CONTRAST) -> dict:
    """Up/down analysis of spike counts in consecutive bins of bin_ms from time 0 (the whole
    network's: a run keeps them, Simulation.rate_counts, whether or not it keeps its spikes)."""
    counts = np.asarray(counts, dtype=np.float64)
    duration_ms = counts.size * bin_ms
    first = int(round(min(transient_ms, 0.5 * duration_ms) / bin_ms))
    start = first * bin_ms
    rate = counts[first:] / (max(neurons, 1) * bin_ms * 1e-3)
    centres = start + bin_ms * (np.arange(rate.size) + 0.5)
    method = {"bin_ms": bin_ms, "smooth_ms": smooth_ms, "levels_percentiles": list(LEVELS),
              "up_threshold": UP_AT, "down_threshold": DOWN_AT, "min_state_ms": min_state_ms,
              "min_contrast": min_contrast, "window_ms": [float(start), float(duration_ms)]}
    out = {"has_up_down": False, "method": method, "mean_rate_hz": float(rate.mean()) if rate.size else 0.0}
    if rate.size < 4:
        out["reason"] = "too short to analyse"
        return out
    smoothed = smooth(rate, bin_ms, smooth_ms)
    low, high = (float(v) for v in np.percentile(smoothed, LEVELS))
    out.update(low_level_hz=low, high_level_hz=high)
    if high < min_contrast * low + 0.5:
        out["reason"] = (f"no distinct states: the high level {high:.3g} Hz is below {min_contrast:g} x the low "
                         f"level {low:.3g} Hz + 0.5 Hz")
        return out
    up_at, down_at = low + UP_AT * (high - low), low + DOWN_AT * (high - low)
    state = np.zeros(rate.size, dtype=bool)
    now = bool(smoothed[0] > up_at)
    for i, v in enumerate(smoothed):           # hysteresis
        if now and v < down_at:
            now = False
        elif not now and v > up_at:
            now = True
        state[i] = now
    runs = _merge_short(_runs(state), max(1, int(round(min_state_ms / bin_ms))))
    # complete states only: the first and last runs are cut by the window
    complete = runs[1:-1]
    ups = [r for r in complete if r[0]]
    downs = [r for r in complete if not r[0]]
    out.update(up_threshold_hz=up_at, down_threshold_hz=down_at)
    if len(ups) < 2:
        out["reason"] = f"{len(ups)} complete up state(s): at least 2 are needed"
        return out
    span_s = (duration_ms - start) * 1e-3
    onsets = [r for r in runs[1:] if r[0]]      # every up onset inside the window

    def durations(rs):
        d = np.array([(e - s) * bin_ms for _, s, e in rs], dtype=np.float64)
        return {"mean_ms": float(d.mean()), "cv": float(d.std() / d.mean()) if d.size > 1 else None,
                "count": int(d.size)} if d.size else {"mean_ms": None, "cv": None, "count": 0}

    up_mask = np.zeros(rate.size, dtype=bool)
    for up, s, e in runs:
        up_mask[s:e] = up
    out.update(
        has_up_down=True,
        up_states=len(ups),
        frequency_hz=len(onsets) / span_s,
        up_duration=durations(ups),
        down_duration=durations(downs),
        rate_up_hz=float(rate[up_mask].mean()) if up_mask.any() else None,
        rate_down_hz=float(rate[~up_mask].mean()) if (~up_mask).any() else None,
        fraction_up=float(up_mask.mean()),
        up_intervals_ms=[[float(centres[s] - 0.5 * bin_ms), float(centres[e - 1] + 0.5 * bin_ms)]
                         for up, s, e in runs if up][:2000],
    )
    return out


def rate_trace(counts, bin_ms: float, neurons: int, max_points: int = 4000) -> dict:
    """The population rate over the whole run for plots: bins pooled until at most max_points."""
    counts = np.asarray(counts, dtype=np.float64)
    pool = max(1, int(np.ceil(counts.size / max_points)))
    n = counts.size // pool * pool
    pooled = counts[:n].reshape(-1, pool).sum(axis=1) if n else np.zeros(0)
    width = bin_ms * pool
    return {"bin_ms": width, "hz": (pooled / (max(neurons, 1) * width * 1e-3)).round(4).tolist()}


def format_rows(d: dict | None) -> list[tuple[str, str]]:
    """The run summary's lines."""
    if not d:
        return []
    if not d.get("has_up_down"):
        return [("up/down states", f"none ({d.get('reason', 'not analysed')})")]
    up, down = d["up_duration"], d["down_duration"]

    def cv(x):
        return "n/a" if x is None else f"{x:.2f}"
    return [("up/down states", f"{d['up_states']} up states, slow oscillation {d['frequency_hz']:.2f} Hz, "
                               f"{100 * d['fraction_up']:.0f} % of the time up"),
            ("  durations", f"up {up['mean_ms']:.0f} ms (CV {cv(up['cv'])}), down "
                            + (f"{down['mean_ms']:.0f} ms (CV {cv(down['cv'])})" if down["mean_ms"] else "n/a")),
            ("  rates", f"up {d['rate_up_hz']:.2f} Hz, down {d['rate_down_hz']:.2f} Hz (per neuron)")]
