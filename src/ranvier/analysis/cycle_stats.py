"""Statistics of per-rank cycle times, next to the synchronisation model (theory.md section 1).

Input: `cycle_timers`, seconds, shape [ranks, cycles, phases] (Result.cycle_timers). A cycle
time is the compute part of one rank's cycle (deliver + update + collocate); communicate and
synchronize are what the ranks wait for, so they are left out. This module does not import
the engine, so it also works on timers loaded from a file.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from . import theory
from ..errors import ConfigError

PHASES = ("deliver", "update", "collocate", "communicate", "synchronize")
COMPUTE_PHASES = ("deliver", "update", "collocate")


def _integer_at_least(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum} (got {value!r})")
    return int(value)


def cycle_times(cycle_timers, phases=PHASES) -> np.ndarray:
    """[ranks, cycles]: deliver + update + collocate of each rank in each cycle."""
    timers = np.asarray(cycle_timers, dtype=np.float64)
    phases = tuple(phases)
    if timers.ndim != 3 or timers.shape[2] != len(phases):
        raise ConfigError(f"cycle_timers must have shape [ranks, cycles, {len(phases)} phases] "
                          f"(got {timers.shape})")
    if timers.shape[0] < 1 or timers.shape[1] < 1:
        raise ConfigError(f"cycle_timers must hold at least one rank and one cycle (got {timers.shape})")
    missing = [p for p in COMPUTE_PHASES if p not in phases]
    if missing:
        raise ConfigError(f"phases must name {', '.join(COMPUTE_PHASES)} (missing {', '.join(missing)})")
    if not np.all(np.isfinite(timers)):
        raise ConfigError("cycle_timers must be finite")
    return timers[:, :, [phases.index(p) for p in COMPUTE_PHASES]].sum(axis=2)


def lumped(times, D: int) -> np.ndarray:
    """Sums of consecutive blocks of D cycles along the last axis ([ranks, cycles // D]); an
    incomplete block at the end is dropped."""
    times = np.asarray(times, dtype=np.float64)
    D = _integer_at_least("D", D, 1)
    if times.ndim < 1:
        raise ConfigError("times must have a cycle axis (got a scalar)")
    blocks = times.shape[-1] // D
    if blocks < 1:
        raise ConfigError(f"D={D} is more than the {times.shape[-1]} cycles given")
    return times[..., :blocks * D].reshape(*times.shape[:-1], blocks, D).sum(axis=-1)


def autocorrelation(series, max_lag: int) -> np.ndarray:
    """Autocorrelation at lags 1..max_lag: the biased estimator (sums over n - l pairs divided
    by n) normalised by the lag-0 variance. A constant series has none: zeros, not NaN."""
    x = np.asarray(series, dtype=np.float64)
    if x.ndim != 1:
        raise ConfigError(f"series must be one-dimensional (got shape {x.shape})")
    max_lag = _integer_at_least("max_lag", max_lag, 0)
    if max_lag >= x.size:
        raise ConfigError(f"max_lag must be less than the series length {x.size} (got {max_lag})")
    # checked on the data, not on the variance: the mean of equal values can differ from them
    # in the last bit, which would give a tiny variance and spurious correlations of 1
    if x.size == 0 or np.ptp(x) == 0.0:
        return np.zeros(max_lag)
    d = x - x.mean()
    # all lags at once through the FFT, zero-padded so that the products do not wrap around
    size = 1 << (2 * x.size - 1).bit_length()
    spectrum = np.fft.rfft(d, size)
    autocovariance = np.fft.irfft(spectrum * np.conj(spectrum), size)[:max_lag + 1]
    return autocovariance[1:] / autocovariance[0]


def _cv(mean: float, sd: float) -> float | None:
    return sd / mean if mean != 0.0 else None


def _ratio(numerator, denominator) -> float | None:
    if numerator is None or denominator is None or denominator == 0.0:
        return None
    return float(numerator / denominator)


def _histogram(values: np.ndarray, bins: int) -> dict:
    """Counts pooled over ranks and per rank, on one set of edges."""
    low, high = float(values.min()), float(values.max())
    # A (nearly) constant sample, where rounding leaves a range too small for the bins: widen
    # it to a millionth of the value around its centre.
    width = 1e-6 * max(abs(low), abs(high)) or 1e-12
    if high - low < width:
        centre = 0.5 * (low + high)
        low, high = centre - 0.5 * width, centre + 0.5 * width
    edges = np.linspace(low, high, bins + 1)
    return {"edges_s": edges.tolist(),
            "counts": np.histogram(values, bins=edges)[0].tolist(),
            "counts_per_rank": [np.histogram(row, bins=edges)[0].tolist() for row in values]}


def _spread(values: np.ndarray) -> tuple[float, float, float | None]:
    mean = float(values.mean())
    # equal values: 0 exactly, not the rounding error of their mean
    sd = float(values.std(ddof=1)) if np.ptp(values) > 0.0 else 0.0
    return mean, sd, _cv(mean, sd)


def summarize(cycle_timers, D: int = 1, transient_cycles: int = 0, max_lag: int | None = None,
              bins: int = 50, top_q: float = 0.05, phases=PHASES) -> dict:
    """Measured cycle-time statistics next to the predictions of theory.sync_model, as a dict of
    plain floats, ints, lists and None (JSON-serialisable). D: cycles per global exchange (the
    lumped cycle); transient_cycles: cycles skipped at the start; max_lag: autocorrelation lags
    reported (default max(D - 1, 10), at most cycles // 4); top_q: the top fraction checked.
    Standard deviations are sample ones (ddof=1), so at least 2 lumped cycles are needed."""
    times = cycle_times(cycle_timers, phases)
    D = _integer_at_least("D", D, 1)
    transient_cycles = _integer_at_least("transient_cycles", transient_cycles, 0)
    bins = _integer_at_least("bins", bins, 1)
    if not (isinstance(top_q, numbers.Real) and 0.0 < top_q < 1.0):
        raise ConfigError(f"top_q must be a fraction strictly between 0 and 1 (got {top_q!r})")
    times = times[:, transient_cycles:]
    ranks, cycles = times.shape
    if cycles < 2 * D:
        raise ConfigError(f"{cycles} cycles after the {transient_cycles} transient ones: need at "
                          f"least 2 D = {2 * D} for the spread of lumped cycles")
    if max_lag is None:
        max_lag = min(max(D - 1, 10), cycles // 4)
    max_lag = _integer_at_least("max_lag", max_lag, 0)
    if max_lag >= cycles:
        raise ConfigError(f"max_lag must be less than the {cycles} cycles (got {max_lag})")
    blocks = lumped(times, D)

    # Autocorrelation up to the lags reported, and up to D - 1 for the correlated prediction.
    lags = max(max_lag, D - 1)
    acf = np.array([autocorrelation(row, lags) for row in times])    # [ranks, lags]
    mean_acf = acf.mean(axis=0)

    per_rank = []
    for r in range(ranks):
        mean, sd, cv = _spread(times[r])
        lumped_mean, lumped_sd, lumped_cv = _spread(blocks[r])
        per_rank.append({"mean_s": mean, "sd_s": sd, "cv": cv,
                         "autocorrelation": acf[r, :max_lag].tolist(),
                         "lumped_mean_s": lumped_mean, "lumped_sd_s": lumped_sd, "lumped_cv": lumped_cv})

    # Pooled over ranks: differences between the ranks' means count as spread too; they are
    # not reduced by lumping, as the waiting for a persistently slow rank is not.
    mu, sigma, cv = _spread(times)
    # Cycle times have heavy tails (rare long cycles: interrupts, page faults), which inflate
    # sigma far beyond the bulk's spread; the interquartile range gives the bulk's sigma.
    q1, q3 = np.percentile(times, [25.0, 75.0])
    sigma_robust = float(q3 - q1) / 1.3489795
    lumped_mu, lumped_sigma, lumped_cv = _spread(blocks)
    predicted = theory.sync_model(mu, sigma, ranks, cycles, D)
    predicted_correlated = theory.sync_model(mu, sigma, ranks, cycles, D, rho=mean_acf[:D - 1])
    pooled = {"mean_s": mu, "sd_s": sigma, "cv": cv,
              "lumped_mean_s": lumped_mu, "lumped_sd_s": lumped_sigma, "lumped_cv": lumped_cv,
              "cv_ratio": _ratio(lumped_cv, cv),
              "cv_ratio_predicted": 1.0 / math.sqrt(D),
              "cv_ratio_predicted_correlated": predicted_correlated["cv_ratio"],
              "sd_robust_s": sigma_robust,
              "wait_predicted_robust_s": theory.expected_max_normal(ranks) * sigma_robust}

    # Every cycle (every D cycles) lasts as long as its slowest rank; the excess over the mean
    # is the waiting. Scaled to all C cycles, to compare with the predicted T and sync times.
    cycle_max = float(times.max(axis=0).mean())
    lumped_max = float(blocks.max(axis=0).mean())
    cycle_wait = cycle_max - mu
    lumped_wait = lumped_max - lumped_mu
    measured = {"cycle_max_mean_s": cycle_max, "cycle_wait_s": cycle_wait,
                "lumped_max_mean_s": lumped_max, "lumped_wait_s": lumped_wait,
                "T_conv_s": cycles * cycle_max, "T_sa_s": cycles / D * lumped_max,
                "sync_conv_s": cycles * cycle_wait, "sync_sa_s": cycles / D * lumped_wait,
                "sync_ratio": _ratio(lumped_wait, D * cycle_wait) if ranks > 1 else None}

    # Top-fraction check: how often the slowest rank lands in the top q of all cycle times.
    # Ties (timer resolution) can make the realised fraction above the threshold differ from
    # q; the prediction uses the realised one.
    threshold = np.quantile(times, 1.0 - top_q)
    q_realised = float(np.mean(times > threshold))
    top_fraction = {"q": float(top_q), "q_realised": q_realised, "threshold_s": float(threshold),
                    "measured": float(np.mean(times.max(axis=0) > threshold)),
                    "predicted": theory.top_fraction_probability(q_realised, ranks)}

    return {"ranks": ranks, "cycles": cycles, "D": D, "transient_cycles": transient_cycles,
            "max_lag": max_lag, "per_rank": per_rank, "pooled": pooled,
            "autocorrelation": mean_acf[:max_lag].tolist(),
            "measured": measured,
            "histogram": {"cycle": _histogram(times, bins), "lumped": _histogram(blocks, bins)},
            "top_fraction": top_fraction,
            "predicted": predicted, "predicted_correlated": predicted_correlated}


def _optional(value, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def format_table(stats: dict) -> str:
    """A few lines for a terminal: measured against predicted."""
    D = stats["D"]
    pooled, measured, top = stats["pooled"], stats["measured"], stats["top_fraction"]
    predicted, correlated = stats["predicted"], stats["predicted_correlated"]
    acf = stats["autocorrelation"]
    shown = sorted({lag for lag in (1, 2, 5, D - 1) if 1 <= lag <= len(acf)})
    lines = [
        f"cycle time ({stats['ranks']} ranks, {stats['cycles']} cycles, D={D}): "
        f"mean {pooled['mean_s'] * 1e6:.3f} us, CV {_optional(pooled['cv'], '.4f')}, "
        f"lumped CV {_optional(pooled['lumped_cv'], '.4f')}",
        f"CV ratio: measured {_optional(pooled['cv_ratio'], '.4f')}, "
        f"predicted 1/sqrt(D) {pooled['cv_ratio_predicted']:.4f}, "
        f"with measured autocorrelation {pooled['cv_ratio_predicted_correlated']:.4f}",
        "autocorrelation: " + (", ".join(f"lag {lag} {acf[lag - 1]:+.3f}" for lag in shown) or "n/a"),
        f"waiting per cycle: measured {measured['cycle_wait_s'] * 1e6:.3f} us, "
        f"predicted {predicted['sync_conv_s'] / stats['cycles'] * 1e6:.3f} us "
        f"(k_P sigma; {pooled['wait_predicted_robust_s'] * 1e6:.3f} us with sigma from the interquartile range); "
        f"sync ratio measured {_optional(measured['sync_ratio'], '.4f')}, "
        f"predicted {predicted['sync_ratio']:.4f} (correlated {correlated['sync_ratio']:.4f})",
        f"slowest rank in top {top['q'] * 100:g}%: measured {top['measured']:.4f}, "
        f"predicted {top['predicted']:.4f}",
    ]
    return "\n".join(lines)
