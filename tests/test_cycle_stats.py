"""Cycle-time statistics (ranvier.analysis.cycle_stats) on synthetic timers with known properties."""
import json
import math

import numpy as np
import pytest

from ranvier.analysis import cycle_stats, theory
from ranvier.errors import ConfigError

RANKS, CYCLES = 4, 20000


def timers_from(times: np.ndarray, rng=None) -> np.ndarray:
    """[ranks, cycles, 5] timers whose compute phases sum to `times`; communicate and
    synchronize get large values that the statistics must leave out."""
    rng = rng or np.random.default_rng(0)
    split = rng.dirichlet([1.0, 1.0, 1.0], size=times.shape)          # deliver/update/collocate shares
    t = np.empty(times.shape + (5,))
    t[..., :3] = split * times[..., None]
    t[..., 3:] = rng.uniform(0.5, 1.0, times.shape + (2,))
    return t


def ar1(phi: float, rng, ranks=RANKS, cycles=CYCLES, mean=2e-3, sd=1e-4) -> np.ndarray:
    """Stationary AR(1) series per rank: autocorrelation phi^l, standard deviation sd."""
    noise = rng.normal(0.0, sd * math.sqrt(1 - phi ** 2), (ranks, cycles))
    x = np.empty((ranks, cycles))
    x[:, 0] = rng.normal(0.0, sd, ranks)
    for i in range(1, cycles):
        x[:, i] = phi * x[:, i - 1] + noise[:, i]
    return mean + x


@pytest.fixture(scope="module")
def iid_stats():
    rng = np.random.default_rng(12345)
    times = rng.normal(1e-3, 1e-4, (RANKS, CYCLES))
    return cycle_stats.summarize(timers_from(times), D=10)


@pytest.fixture(scope="module")
def ar1_stats():
    return cycle_stats.summarize(timers_from(ar1(0.9, np.random.default_rng(7))), D=10)


def test_cycle_times_sum_compute_phases_only():
    t = np.arange(2 * 3 * 5, dtype=float).reshape(2, 3, 5)
    assert np.array_equal(cycle_stats.cycle_times(t), t[:, :, 0] + t[:, :, 1] + t[:, :, 2])
    order = ("synchronize", "collocate", "communicate", "update", "deliver")
    assert np.array_equal(cycle_stats.cycle_times(t, order), t[:, :, 1] + t[:, :, 3] + t[:, :, 4])


def test_lumped_by_hand():
    times = np.array([[1.0, 2, 3, 4, 5, 6, 7], [10, 20, 30, 40, 50, 60, 70]])
    assert np.array_equal(cycle_stats.lumped(times, 3), [[6.0, 15.0], [60.0, 150.0]])   # tail 7 dropped
    assert np.array_equal(cycle_stats.lumped(times, 1), times)
    assert np.array_equal(cycle_stats.lumped(times[0], 2), [3.0, 7.0, 11.0])
    with pytest.raises(ConfigError, match="D=8"):
        cycle_stats.lumped(times, 8)
    with pytest.raises(ConfigError, match="D must"):
        cycle_stats.lumped(times, 0)


def test_autocorrelation_by_hand():
    # x - mean = [-1.5, -0.5, 0.5, 1.5]: lag-0 sum 5, lag sums 1.25, -1.5, -2.25
    assert np.allclose(cycle_stats.autocorrelation([1.0, 2, 3, 4], 3), [0.25, -0.3, -0.45])
    assert np.allclose(cycle_stats.autocorrelation([1.0, -1, 1, -1, 1, -1], 2), [-5 / 6, 4 / 6])
    # constant, including a value whose mean is not exact in floating point
    for constant in ([3.0] * 50, [0.1] * 37):
        acf = cycle_stats.autocorrelation(constant, 5)
        assert np.array_equal(acf, np.zeros(5))
    assert cycle_stats.autocorrelation([1.0, 2.0], 0).shape == (0,)
    with pytest.raises(ConfigError, match="max_lag"):
        cycle_stats.autocorrelation([1.0, 2, 3], 3)


def test_iid_cycles_follow_independent_model(iid_stats):
    s = iid_stats
    assert (s["ranks"], s["cycles"], s["D"]) == (RANKS, CYCLES, 10)
    assert s["pooled"]["mean_s"] == pytest.approx(1e-3, rel=0.01)     # communicate left out
    assert s["pooled"]["cv"] == pytest.approx(0.1, rel=0.02)
    assert s["pooled"]["cv_ratio"] == pytest.approx(1 / math.sqrt(10), rel=0.04)
    assert s["pooled"]["cv_ratio_predicted"] == pytest.approx(1 / math.sqrt(10))
    assert len(s["autocorrelation"]) == 10                            # max(D - 1, 10) lags
    assert max(abs(r) for r in s["autocorrelation"]) < 0.03
    # waiting for the slowest of 4 ranks: k_4 sigma per cycle, k_4 sqrt(D) sigma per lumped cycle
    k4 = theory.expected_max_normal(4)
    assert s["predicted"]["k_P"] == pytest.approx(k4)
    assert s["measured"]["cycle_wait_s"] == pytest.approx(k4 * 1e-4, rel=0.04)
    assert s["measured"]["sync_ratio"] == pytest.approx(1 / math.sqrt(10), rel=0.1)
    assert s["measured"]["sync_conv_s"] == pytest.approx(s["predicted"]["sync_conv_s"], rel=0.05)
    top = s["top_fraction"]
    assert top["q_realised"] == pytest.approx(0.05, abs=1e-3)
    assert top["predicted"] == pytest.approx(1 - 0.95 ** 4, abs=2e-3)
    assert top["measured"] == pytest.approx(top["predicted"], abs=0.015)


def test_ar1_cycles_follow_correlated_model(ar1_stats):
    s, phi, D = ar1_stats, 0.9, 10
    assert s["autocorrelation"][0] == pytest.approx(phi, abs=0.02)
    assert s["autocorrelation"][4] == pytest.approx(phi ** 5, abs=0.05)
    expected = theory.correlated_sync_ratio(D, [phi ** lag for lag in range(1, D)])    # ~0.86
    # (lags shifted by one would give 0.817)
    assert s["pooled"]["cv_ratio_predicted_correlated"] == pytest.approx(expected, rel=0.015)
    assert s["pooled"]["cv_ratio"] == pytest.approx(s["pooled"]["cv_ratio_predicted_correlated"], rel=0.05)
    assert s["pooled"]["cv_ratio"] > 2 * s["pooled"]["cv_ratio_predicted"]   # far from 1/sqrt(D)
    assert s["measured"]["sync_ratio"] == pytest.approx(expected, rel=0.05)
    assert s["predicted_correlated"]["sync_ratio"] == pytest.approx(expected, rel=0.015)


def test_correlated_prediction_uses_lags_up_to_D_minus_1_beyond_max_lag():
    times = ar1(0.8, np.random.default_rng(3), ranks=2, cycles=2000)
    s = cycle_stats.summarize(timers_from(times), D=20, max_lag=3)
    assert len(s["autocorrelation"]) == 3
    rho = np.mean([cycle_stats.autocorrelation(row, 19) for row in times], axis=0)
    assert np.allclose(s["autocorrelation"], rho[:3])
    pooled = s["pooled"]
    again = theory.sync_model(pooled["mean_s"], pooled["sd_s"], 2, 2000, 20, rho=rho)
    assert s["predicted_correlated"] == pytest.approx(again, rel=1e-12)


def test_per_rank_and_histograms(iid_stats):
    s = iid_stats
    assert len(s["per_rank"]) == RANKS
    for r in s["per_rank"]:
        assert r["cv"] == pytest.approx(0.1, rel=0.05)
        assert r["lumped_mean_s"] == pytest.approx(10 * r["mean_s"], rel=1e-9)   # 20000 = 2000 * 10
        assert len(r["autocorrelation"]) == 10
    for kind, values in (("cycle", RANKS * CYCLES), ("lumped", RANKS * CYCLES // 10)):
        h = s["histogram"][kind]
        assert len(h["edges_s"]) == 51 and sum(h["counts"]) == values
        assert np.array_equal(np.sum(h["counts_per_rank"], axis=0), h["counts"])


def test_summary_is_plain_json(iid_stats):
    json.dumps(iid_stats, allow_nan=False)

    def check(value):
        if isinstance(value, dict):
            for v in value.values():
                check(v)
        elif isinstance(value, list):
            for v in value:
                check(v)
        else:
            assert value is None or type(value) in (int, float, str, bool), type(value)
    check(iid_stats)


def test_transient_cycles_skipped():
    times = np.full((2, 400), 1e-3)
    times[:, ::2] = 2e-3                       # alternating: lag-1 autocorrelation -1
    times[:, :50] = 1.0                        # a slow start, left out below
    s = cycle_stats.summarize(timers_from(times), D=2, transient_cycles=50)
    assert s["cycles"] == 350
    assert s["pooled"]["mean_s"] == pytest.approx(1.5e-3, rel=1e-3)
    assert s["autocorrelation"][0] == pytest.approx(-1.0, abs=0.01)
    assert s["pooled"]["lumped_cv"] == pytest.approx(0.0, abs=1e-9)    # 1 + 2 ms in every pair


def test_constant_timers_give_no_nan():
    t = np.zeros((3, 40, 5))
    t[:, :, 1] = 1e-3
    s = cycle_stats.summarize(t, D=4)
    json.dumps(s, allow_nan=False)
    assert s["pooled"]["cv"] == 0.0 and s["pooled"]["cv_ratio"] is None
    assert s["autocorrelation"] == [0.0] * 10
    assert "n/a" in cycle_stats.format_table(s)


def test_format_table(iid_stats):
    text = cycle_stats.format_table(iid_stats)
    assert 4 <= len(text.splitlines()) <= 8
    for part in ("lag 1 ", "lag 2 ", "lag 5 ", "lag 9 ", "1/sqrt(D) 0.3162", "top 5%",
                 f"{iid_stats['top_fraction']['predicted']:.4f}"):
        assert part in text


@pytest.mark.parametrize("kwargs, message", [
    (dict(D=0), "D must"), (dict(D=2.0), "D must"), (dict(D=30), "need at least"),
    (dict(transient_cycles=-1), "transient_cycles"), (dict(D=3, transient_cycles=45), "need at least"),
    (dict(top_q=1.0), "top_q"), (dict(max_lag=50), "max_lag"),
    (dict(phases=("deliver", "update", "communicate", "synchronize", "other")), "collocate"),
])
def test_summarize_rejects_bad_arguments(kwargs, message):
    t = np.ones((2, 50, 5))
    with pytest.raises(ConfigError, match=message):
        cycle_stats.summarize(t, **kwargs)


@pytest.mark.parametrize("shape", [(2, 50), (2, 50, 4), (0, 50, 5), (2, 0, 5)])
def test_summarize_rejects_bad_shapes(shape):
    with pytest.raises(ConfigError, match="cycle_timers"):
        cycle_stats.summarize(np.ones(shape))


def test_summarize_rejects_non_finite_timers():
    t = np.ones((2, 50, 5))
    t[1, 3, 0] = np.nan
    with pytest.raises(ConfigError, match="finite"):
        cycle_stats.summarize(t)


def test_robust_sigma_ignores_rare_long_cycles():
    """Rare long cycles (interrupts) inflate sigma; the interquartile range keeps the bulk's."""
    rng = np.random.default_rng(3)
    times = rng.normal(1e-3, 1e-4, (2, 20000))
    clean = cycle_stats.summarize(timers_from(times), D=10)["pooled"]
    assert clean["sd_robust_s"] == pytest.approx(1e-4, rel=0.03)
    times[:, ::500] += 5e-2                                   # 0.2 % of cycles 500 sigma long
    noisy = cycle_stats.summarize(timers_from(times), D=10)["pooled"]
    assert noisy["sd_s"] > 10 * clean["sd_s"]
    assert noisy["sd_robust_s"] == pytest.approx(1e-4, rel=0.03)
    assert noisy["wait_predicted_robust_s"] == pytest.approx(theory.expected_max_normal(2) * noisy["sd_robust_s"])
