"""The synchronisation and irregular-access models of docs/theory.md (sections 1, 2)."""
import math

import pytest

from ranvier.analysis import theory
from ranvier.errors import ConfigError


# Expected maxima of P standard normals with closed forms or tabulated values.
KNOWN_K = {1: 0.0, 2: 1 / math.sqrt(math.pi), 3: 1.5 / math.sqrt(math.pi), 4: 1.0293753730,
           5: 1.1629644736, 10: 1.5387527308}


@pytest.mark.parametrize("P, k", sorted(KNOWN_K.items()))
def test_expected_max_normal_known_values(P, k):
    assert theory.expected_max_normal(P) == pytest.approx(k, abs=1e-6)


def test_expected_max_normal_grows_with_P():
    ks = [theory.expected_max_normal(P) for P in range(1, 130)]
    assert all(b > a for a, b in zip(ks, ks[1:]))


def test_blom_close_to_exact():
    assert theory.blom_max_normal(1) == pytest.approx(0.0, abs=1e-12)
    for P in range(2, 65):
        assert abs(theory.blom_max_normal(P) - theory.expected_max_normal(P)) < 0.05, P
        # and it is Blom's plotting position, checked through the (independent) erfc-based CDF
        assert theory.normal_cdf(theory.blom_max_normal(P)) == pytest.approx((P - 0.375) / (P + 0.25), rel=1e-12)


def test_normal_quantile():
    assert theory.normal_quantile(0.975) == pytest.approx(1.959963984540054, rel=1e-12)
    assert theory.normal_quantile(0.5) == pytest.approx(0.0, abs=1e-15)
    for p in (1e-10, 1e-3, 0.02, 0.3, 0.7, 0.98, 1 - 1e-9):     # both tails and the centre
        assert theory.normal_cdf(theory.normal_quantile(p)) == pytest.approx(p, rel=1e-12)
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ConfigError, match="p must"):
            theory.normal_quantile(bad)


def test_sync_model_independent_cycles_by_hand():
    mu, sigma, P, C, D = 1e-3, 2e-4, 2, 100, 4
    k = 1 / math.sqrt(math.pi)
    m = theory.sync_model(mu, sigma, P, C, D)
    assert m["k_P"] == pytest.approx(k, abs=1e-9)
    assert m["T_conv_s"] == pytest.approx(100 * (1e-3 + k * 2e-4), rel=1e-9)
    assert m["T_sa_s"] == pytest.approx(25 * (4e-3 + k * 2 * 2e-4), rel=1e-9)   # sqrt(4) sigma
    assert m["sync_conv_s"] == pytest.approx(100 * k * 2e-4, rel=1e-9)
    assert m["sync_sa_s"] == pytest.approx(100 * k * 1e-4, rel=1e-9)
    assert m["variance_factor"] == 1.0
    for D in (1, 2, 3, 10, 64):
        m = theory.sync_model(mu, sigma, 8, 1000, D)
        assert m["sync_ratio"] == pytest.approx(1 / math.sqrt(D), rel=1e-14)
        assert m["cv_ratio"] == pytest.approx(1 / math.sqrt(D), rel=1e-14)
        assert m["sync_sa_s"] / m["sync_conv_s"] == pytest.approx(1 / math.sqrt(D), rel=1e-12)


def test_sync_model_correlated_by_hand():
    rho = [0.5, 0.25, 0.125]
    factor = 1 + 2 * (0.75 * 0.5 + 0.5 * 0.25 + 0.25 * 0.125)      # 2.0625
    m = theory.sync_model(1e-3, 1e-4, 4, 40, 4, rho=rho)
    assert m["variance_factor"] == pytest.approx(factor)
    assert m["sync_ratio"] == pytest.approx(math.sqrt(factor / 4))
    assert m["lumped_sd_s"] == pytest.approx(1e-4 * math.sqrt(4 * factor))
    assert m["sync_sa_s"] / m["sync_conv_s"] == pytest.approx(math.sqrt(factor / 4))
    # lags beyond D - 1 do not enter
    assert theory.sync_model(1e-3, 1e-4, 4, 40, 4, rho=rho + [0.9, 0.9])["variance_factor"] == pytest.approx(factor)


def test_sync_model_one_rank_has_no_sync_but_a_ratio():
    m = theory.sync_model(1e-3, 1e-4, 1, 50, 9)
    assert m["k_P"] == 0.0 and m["sync_conv_s"] == 0.0 and m["sync_sa_s"] == 0.0
    assert m["T_conv_s"] == pytest.approx(50e-3) and m["T_sa_s"] == pytest.approx(50e-3)
    assert m["sync_ratio"] == pytest.approx(1 / 3)


def test_correlated_sync_ratio_limits():
    for D in (2, 5, 16):
        assert theory.correlated_sync_ratio(D, [1.0] * (D - 1)) == pytest.approx(1.0)  # no reduction
        assert theory.correlated_sync_ratio(D, [0.0] * (D - 1)) == pytest.approx(1 / math.sqrt(D))
        assert theory.correlated_sync_ratio(D, None) == pytest.approx(1 / math.sqrt(D))
    # anticorrelated estimates can push the variance below 0: clamped, not NaN
    assert theory.correlated_sync_ratio(3, [-1.0, -1.0]) == 0.0
    assert theory.correlated_sync_ratio(1, []) == 1.0


def test_sync_model_rejects_bad_arguments():
    with pytest.raises(ConfigError, match="rho"):
        theory.sync_model(1e-3, 1e-4, 4, 100, 5, rho=[0.1, 0.2])          # needs lags 1..4
    with pytest.raises(ConfigError, match="sigma"):
        theory.sync_model(1e-3, -1e-4, 4, 100, 5)
    with pytest.raises(ConfigError, match="P must"):
        theory.sync_model(1e-3, 1e-4, 0, 100, 5)
    with pytest.raises(ConfigError, match="D must"):
        theory.sync_model(1e-3, 1e-4, 4, 100, 2.5)
    with pytest.raises(ConfigError, match="cycles must"):
        theory.sync_model(1e-3, 1e-4, 4, True, 1)


def test_top_fraction_probability():
    assert theory.top_fraction_probability(0.05, 1) == pytest.approx(0.05)
    assert theory.top_fraction_probability(0.05, 4) == pytest.approx(1 - 0.95 ** 4)
    assert theory.top_fraction_probability(0.1, 1000) == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="q must"):
        theory.top_fraction_probability(1.5, 4)


def test_irregular_access_by_hand():
    # K=4 targets over M T = 2 threads: 2 (1 - 1/16) threads hit. Structure-aware: 2 targets on
    # the own single thread and 2 on the other one: both hit for sure.
    a = theory.irregular_access(4, 2, 1)
    assert a["f_conv"] == pytest.approx(15 / 32)
    assert a["f_sa"] == pytest.approx(0.5)
    assert a["advantage"] == pytest.approx(15 / 16)
    # M = 1: the off-rank term is 0
    b = theory.irregular_access(2, 1, 2)
    assert b["f_conv"] == pytest.approx(2 * (1 - 0.25) / 2)
    assert b["f_sa"] == pytest.approx(2 * (1 - 0.5) / 2)


def test_irregular_access_limits():
    M, T = 4, 8
    many = theory.irregular_access(1e6, M, T)
    assert many["f_conv"] == pytest.approx(M * T / 1e6, rel=1e-9)     # every thread hit
    assert theory.irregular_access(1, M, T)["f_conv"] == pytest.approx(1.0)   # one synapse: a miss
    # the advantage grows with M and with T (at K=1000 it is 1 to 1e-10 until M T is about 64)
    by_ranks = [theory.irregular_access(1000, M, 8)["advantage"] for M in (4, 8, 16, 32, 64)]
    assert all(b > a for a, b in zip(by_ranks, by_ranks[1:])) and by_ranks[-1] > 1.1
    by_threads = [theory.irregular_access(1000, 16, T)["advantage"] for T in (4, 8, 16, 32)]
    assert all(b > a for a, b in zip(by_threads, by_threads[1:]))


def test_irregular_access_fraction_general():
    K = 30
    direct = (7 * (1 - (1 - 1 / 7) ** 10) + 100 * (1 - (1 - 1 / 100) ** 20)) / K
    assert theory.irregular_access_fraction(K, [(7, 10), (100, 20)]) == pytest.approx(direct, rel=1e-12)
    assert theory.irregular_access_fraction(K, [(1, 30)]) == pytest.approx(1 / 30)
    assert theory.irregular_access_fraction(K, [(5, 0), (1, 30)]) == pytest.approx(1 / 30)


@pytest.mark.parametrize("args, name", [((0, 2, 1), "K"), ((-3, 2, 1), "K"), ((4, 0, 1), "M"),
                                        ((4, 2, 0), "T"), ((4, 2, 1.5), "T"), ((float("nan"), 2, 1), "K")])
def test_irregular_access_rejects_bad_arguments(args, name):
    with pytest.raises(ConfigError, match=f"^{name} must"):
        theory.irregular_access(*args)


def test_irregular_access_fraction_rejects_zero_threads():
    with pytest.raises(ConfigError, match="threads"):
        theory.irregular_access_fraction(4, [(0, 4)])
