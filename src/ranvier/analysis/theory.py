"""Models that explain the measurements (docs/theory.md).

Synchronisation (section 1): cycle times as iid N(mu, sigma^2) draws; every cycle (or every D
cycles) waits for the slowest of P ranks, k_P sigma above the mean on average.

Irregular memory access (section 2): the fraction of synapse reads that start a new run on a
thread (a cache miss), for round-robin and structure-aware placement.

Communication (section 3): the time of one exchange interval, predicted from Ranvier's own MPI
micro-benchmark (`ranvier bench mpi` writes mpi_fit.json: per primitive, latency and bandwidth
of t = latency + bytes / bandwidth, on a given number of ranks).
"""
from __future__ import annotations

import functools
import json
import math
import numbers
from pathlib import Path

import numpy as np

from ..errors import ConfigError

# The primitive calls one interval of each strategy makes: (primitive, calls, carries the records).
# The records' call is charged bytes / bandwidth with the bytes each rank sends to one other rank;
# the others their latency only. Fences of rma: three per interval.
EXCHANGE_CALLS = {
    "allgather": [("allgather", 1, False), ("allgather", 1, True)],
    "allgather-compressed": [("allgather", 1, True)],
    "alltoallv": [("alltoall", 1, False), ("alltoallv", 1, True)],
    "alltoall-fixed": [("alltoall", 1, True)],
    "p2p": [("isend_irecv", 1, True), ("allreduce", 1, False)],
    "p2p-nbx": [("isend_irecv", 1, True), ("ibarrier", 1, False)],
    "neighbor": [("neighbor_alltoallv", 1, False), ("neighbor_alltoallv", 1, True)],
    "rma": [("put_fence", 1, True), ("put_fence", 2, False)],
    "rma-pscw": [("put_fence", 1, True), ("put_fence", 2, False)],
    "hierarchical": [("isend_irecv", 1, True), ("allgather", 1, True), ("allgather", 1, False)],
    "persistent-allgather": [("allgather_init", 1, True)],
    "persistent-alltoall": [("alltoallv_init", 1, True)],
    "persistent-p2p": [("send_recv_init", 1, True)],
}


def load_mpi_fit(path) -> dict:
    try:
        fit = json.loads(Path(path).read_text())
        fit["primitives"], fit["ranks"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"--mpi-fit: '{path}' is not an mpi_fit.json written by 'ranvier bench mpi' ({e})") from None
    return fit


def exchange_seconds(strategy: str, ranks: int, bytes_per_rank: float, fit: dict) -> float | None:
    """Predicted time of one interval's exchange: the sum over the strategy's calls of their
    latency, plus the records' bytes over the bandwidth. bytes_per_rank: data one rank sends to
    the other ranks in one interval (Result counters: bytes_sent / ranks / intervals). None when
    the fit was measured on another number of ranks (latency depends on it) or lacks a primitive."""
    if ranks < 2 or fit.get("ranks") != ranks or strategy not in EXCHANGE_CALLS:
        return None
    per_peer = bytes_per_rank / (ranks - 1)
    total = 0.0
    for primitive, calls, carries_records in EXCHANGE_CALLS[strategy]:
        p = fit["primitives"].get(primitive)
        if p is None:
            return None
        total += calls * p["latency_s"]
        bandwidth = p.get("bandwidth_bytes_per_s")
        if carries_records and bandwidth:
            total += per_peer / bandwidth
    return total


# ---------------------------------------------------------------------------------------------
# Argument checks: a bad value is a ConfigError naming the argument.

def _integer_at_least(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum} (got {value!r})")
    return int(value)


def _finite_at_least(name: str, value, minimum: float, strict: bool = False) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = value > minimum if strict else value >= minimum
    if not ok:
        raise ConfigError(f"{name} must be a finite number {'>' if strict else '>='} {minimum} (got {value!r})")
    return float(value)


# ---------------------------------------------------------------------------------------------
# Section 1: synchronisation time.

def normal_cdf(x: float) -> float:
    """Phi(x) of the standard normal; erfc keeps the lower tail accurate."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


# Acklam's rational approximation of Phi^-1 (relative error 1.15e-9), refined by one Halley step.
_ACKLAM_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_ACKLAM_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
             6.680131188771972e+01, -1.328068155288572e+01)
_ACKLAM_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_ACKLAM_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
             3.754408661907416e+00)
_ACKLAM_P_LOW = 0.02425


def _polynomial(coefficients, x: float) -> float:
    result = 0.0
    for c in coefficients:
        result = result * x + c
    return result


def normal_quantile(p: float) -> float:
    """Phi^-1(p), the inverse standard normal CDF, for 0 < p < 1."""
    if not (isinstance(p, numbers.Real) and 0.0 < p < 1.0):
        raise ConfigError(f"p must be a probability strictly between 0 and 1 (got {p!r})")
    if p < _ACKLAM_P_LOW or p > 1.0 - _ACKLAM_P_LOW:
        # tails: rational function of sqrt(-2 log(tail probability)), odd in x
        q = math.sqrt(-2.0 * math.log(min(p, 1.0 - p)))
        x = _polynomial(_ACKLAM_C, q) / (_polynomial(_ACKLAM_D, q) * q + 1.0)
        x = x if p < 0.5 else -x
    else:
        q = p - 0.5
        r = q * q
        x = _polynomial(_ACKLAM_A, r) * q / (_polynomial(_ACKLAM_B, r) * r + 1.0)
    # Halley step: takes the 1e-9 approximation to machine precision
    error = normal_cdf(x) - p
    u = error * math.sqrt(2.0 * math.pi) * math.exp(0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)


@functools.lru_cache(maxsize=1)
def _integration_grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x on [-12, 12] (beyond it the integrand is below 1e-30), log phi(x), log Phi(x)."""
    x = np.linspace(-12.0, 12.0, 24001)
    # log Phi from erfc on both sides, so that neither tail loses digits (Phi^(P-1) for large P)
    log_cdf = np.array([math.log(0.5 * math.erfc(-v / math.sqrt(2.0))) if v < 0.0
                        else math.log1p(-0.5 * math.erfc(v / math.sqrt(2.0))) for v in x])
    log_pdf = -0.5 * x * x - 0.5 * math.log(2.0 * math.pi)
    return x, log_pdf, log_cdf


@functools.lru_cache(maxsize=256)
def _expected_max_normal(P: int) -> float:
    if P == 1:
        return 0.0
    # E[max] = integral of x * P phi(x) Phi(x)^(P-1) dx
    x, log_pdf, log_cdf = _integration_grid()
    integrand = x * P * np.exp(log_pdf + (P - 1) * log_cdf)
    # composite Simpson (24000 intervals, an even number)
    h = x[1] - x[0]
    return float(h / 3.0 * (integrand[0] + integrand[-1] + 4.0 * integrand[1:-1:2].sum()
                            + 2.0 * integrand[2:-1:2].sum()))


def expected_max_normal(P: int) -> float:
    """k_P: expected maximum of P iid standard normal draws, by numerical integration
    (theory.md section 1). k_1 = 0, k_2 = 1/sqrt(pi)."""
    return _expected_max_normal(_integer_at_least("P", P, 1))


def blom_max_normal(P: int) -> float:
    """Blom's approximation of k_P: Phi^-1((P - 0.375) / (P + 0.25)) (theory.md section 1)."""
    P = _integer_at_least("P", P, 1)
    return normal_quantile((P - 0.375) / (P + 0.25))


def _autocorrelations(D: int, rho) -> list[float]:
    """The lag-1..D-1 autocorrelations the lumped variance needs; extra lags are ignored."""
    values = [float(r) for r in rho]
    if len(values) < D - 1:
        raise ConfigError(f"rho must give the autocorrelation at lags 1..{D - 1} for D={D} "
                          f"(got {len(values)} lags)")
    if not all(math.isfinite(r) for r in values):
        raise ConfigError(f"rho must be finite (got {values[:D - 1]})")
    return values[:D - 1]


def lumped_variance_factor(D: int, rho=None) -> float:
    """Var(sum of D draws) / (D sigma^2) = 1 + 2 sum_{l<D} (1 - l/D) rho_l (theory.md section 1),
    clamped at 0: estimated autocorrelations can make it slightly negative. 1 when rho is None."""
    D = _integer_at_least("D", D, 1)
    if rho is None:
        return 1.0
    values = _autocorrelations(D, rho)
    return max(0.0, 1.0 + 2.0 * sum((1.0 - lag / D) * r for lag, r in enumerate(values, start=1)))


def correlated_sync_ratio(D: int, rho=None) -> float:
    """Predicted synchronisation-time ratio (and CV ratio) of exchanging every D cycles against
    every cycle: sqrt(1 + 2 sum (1 - l/D) rho_l) / sqrt(D); 1/sqrt(D) for independent cycles,
    1 for fully correlated ones (theory.md section 1)."""
    return math.sqrt(lumped_variance_factor(D, rho) / D)


def sync_model(mu: float, sigma: float, P: int, cycles: int, D: int, rho=None) -> dict:
    """Predicted run time and synchronisation time of C cycles on P ranks (theory.md section 1).

    Exchanging every cycle: T_conv = C (mu + k_P sigma); every D cycles: T_sa = (C/D)(D mu +
    k_P sigma_lumped), sigma_lumped = sigma sqrt(D * variance_factor). rho: the autocorrelation of
    a rank's cycle times at lags 1..D-1, or None for independent cycles (variance_factor 1).
    The ratios do not depend on k_P, so they are reported for P = 1 too (where sync is 0)."""
    mu = _finite_at_least("mu", mu, 0.0)
    sigma = _finite_at_least("sigma", sigma, 0.0)
    P = _integer_at_least("P", P, 1)
    cycles = _integer_at_least("cycles", cycles, 1)
    D = _integer_at_least("D", D, 1)
    k = expected_max_normal(P)
    factor = lumped_variance_factor(D, rho)
    lumped_sd = sigma * math.sqrt(D * factor)
    ratio = math.sqrt(factor / D)            # sync_sa / sync_conv = sigma_lumped / (D sigma)
    return {
        "k_P": k,
        "T_conv_s": cycles * (mu + k * sigma),
        "T_sa_s": cycles / D * (D * mu + k * lumped_sd),
        "sync_conv_s": cycles * k * sigma,
        "sync_sa_s": cycles / D * k * lumped_sd,
        "sync_ratio": ratio,
        # CV of lumped times / CV of cycle times = (sigma_lumped / (D mu)) / (sigma / mu)
        "cv_ratio": ratio,
        "variance_factor": factor,
        "lumped_sd_s": lumped_sd,
    }


def top_fraction_probability(q: float, P: int) -> float:
    """Probability that the slowest of P iid ranks falls in the top fraction q of the
    cycle-time distribution: 1 - (1 - q)^P (theory.md section 1)."""
    q = _finite_at_least("q", q, 0.0)
    if q > 1.0:
        raise ConfigError(f"q must be a fraction between 0 and 1 (got {q!r})")
    P = _integer_at_least("P", P, 1)
    return 1.0 - (1.0 - q) ** P


# ---------------------------------------------------------------------------------------------
# Section 2: irregular memory access in spike delivery.

def irregular_access_fraction(K: float, threads_holding_targets) -> float:
    """Fraction of a neuron's K synapse reads that are irregular (the first on a thread):
    sum_i n_i (1 - (1 - 1/n_i)^k_i) / K, for k_i targets spread uniformly over n_i threads
    (theory.md section 2). threads_holding_targets: (n_i, k_i) pairs; the k_i sum to K."""
    K = _finite_at_least("K", K, 0.0, strict=True)
    threads_hit = 0.0
    for threads, targets in threads_holding_targets:
        threads = _finite_at_least("threads", threads, 0.0, strict=True)
        targets = _finite_at_least("targets", targets, 0.0)
        if targets == 0.0:
            continue
        if threads == 1.0:                 # log1p(-1) is -inf: one thread is always hit
            threads_hit += 1.0
            continue
        # -expm1(k log1p(-1/n)) = 1 - (1 - 1/n)^k, accurate when 1/n is tiny (many threads)
        threads_hit += threads * -math.expm1(targets * math.log1p(-1.0 / threads))
    return threads_hit / K


def irregular_access(K: float, M: int, T: int) -> dict:
    """f_conv (round-robin: K targets over M T threads) and f_sa (structure-aware: K/2 over the T
    threads of the own rank, K/2 over the (M - 1) T others), theory.md section 2; advantage =
    f_conv / f_sa. For M = 1 the off-rank term is 0, as in the formula: it still counts only
    the K/2 local targets, so f_sa and the advantage there are the formula's, not a placement's."""
    K = _finite_at_least("K", K, 0.0, strict=True)
    M = _integer_at_least("M", M, 1)
    T = _integer_at_least("T", T, 1)
    f_conv = irregular_access_fraction(K, [(M * T, K)])
    groups = [(T, K / 2.0)]
    if M > 1:
        groups.append(((M - 1) * T, K / 2.0))
    f_sa = irregular_access_fraction(K, groups)
    return {"f_conv": f_conv, "f_sa": f_sa, "advantage": f_conv / f_sa}


# Ranvier's delivery reads a source's synapses on a thread as one run per delay (a segment);
# the first read of each segment is the irregular one. So the irregular fraction of Ranvier's
# layout counts distinct delays, not just threads hit: sum over delays d of 1 - exp(-k p_d)
# for a Poisson number k of synapses on a thread with delay law p (theory.md section 2 at the
# granularity of a segment; it reduces to the thread-level count when all delays are equal).
def truncated_normal_steps(mean_ms: float, sd_ms: float, min_ms: float, resolution_ms: float) -> np.ndarray:
    """The delay law of a "normal" projection in steps (index = steps): N(mean, sd) redrawn
    below min_ms, rounded to the nearest step."""
    h = _finite_at_least("resolution_ms", resolution_ms, 0.0, strict=True)
    sd = _finite_at_least("sd_ms", sd_ms, 0.0)
    lo = round(min_ms / h)
    if sd == 0.0:
        steps = max(lo, round(mean_ms / h))
        pmf = np.zeros(steps + 1)
        pmf[steps] = 1.0
        return pmf
    hi = int(math.ceil((mean_ms + 12 * sd) / h)) + 1
    edges = (np.arange(lo, hi + 1) - 0.5) * h           # step s collects x in [(s-1/2)h, (s+1/2)h)
    edges[0] = lo * h                                   # x below min_ms is redrawn
    cdf = np.array([normal_cdf((e - mean_ms) / sd) for e in edges])
    mass = np.diff(cdf)
    pmf = np.zeros(hi)
    pmf[lo:] = mass / mass.sum()
    return pmf


def expected_segments(count: float, pmf) -> float:
    """Expected distinct delays among a Poisson(count) number of synapses with delay law pmf."""
    count = _finite_at_least("count", count, 0.0)
    p = np.asarray(pmf, dtype=np.float64)
    return float(-np.expm1(-count * p).sum())


def segment_fraction_mam(K: float, frac_intra: float, M: int, T: int, intra_pmf, inter_pmf,
                         by_area: bool) -> float:
    """Delay segments per synaptic event for one neuron of a mam-benchmark network with one
    area per rank (M ranks x T threads): round-robin spreads its intra- and inter-area synapses
    over all M T threads (one mixed delay law per thread); by-area keeps the K frac_intra intra
    synapses on the own rank's T threads and the rest on the (M - 1) T others."""
    K = _finite_at_least("K", K, 0.0, strict=True)
    M = _integer_at_least("M", M, 1)
    T = _integer_at_least("T", T, 1)
    intra, inter = np.asarray(intra_pmf, float), np.asarray(inter_pmf, float)
    n = max(intra.size, inter.size)
    intra, inter = np.pad(intra, (0, n - intra.size)), np.pad(inter, (0, n - inter.size))
    k_intra = K * frac_intra
    k_inter = K - k_intra if M > 1 else 0.0              # one area: no other area to reach
    if not by_area:
        per_thread = (k_intra * intra + k_inter * inter) / (M * T)
        segments = M * T * float(-np.expm1(-per_thread).sum())
    else:
        segments = T * expected_segments(k_intra / T, intra)
        if M > 1:
            segments += (M - 1) * T * expected_segments(k_inter / ((M - 1) * T), inter)
    return segments / (k_intra + k_inter)
