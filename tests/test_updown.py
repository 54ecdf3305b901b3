"""Up/down-state detection (ranvier.analysis.updown) on spike trains with known states, and none on
asynchronous activity."""
import re

import numpy as np
import pytest

from ranvier.analysis import updown


def _spikes(rng, neurons, rate_of_t, duration_ms, dt_ms=1.0):
    """Poisson spikes of `neurons` neurons whose rate (Hz) follows rate_of_t(t in ms)."""
    t = np.arange(0.0, duration_ms, dt_ms)
    counts = rng.poisson(neurons * rate_of_t(t) * dt_ms * 1e-3)
    return np.repeat(t, counts) + rng.uniform(0, dt_ms, counts.sum())


def test_known_up_and_down_states_are_found():
    rng = np.random.default_rng(4)
    period, up_ms = 1250.0, 400.0                      # 0.8 Hz, up 400 ms, down 850 ms

    def rate(t):
        return np.where((t % period) < up_ms, 25.0, 0.3)
    times = _spikes(rng, 2000, rate, 12_000.0)
    d = updown.detect(times, 2000, 12_000.0)
    assert d["has_up_down"], d.get("reason")
    assert d["frequency_hz"] == pytest.approx(0.8, abs=0.1)
    assert d["up_duration"]["mean_ms"] == pytest.approx(up_ms, rel=0.1)
    assert d["down_duration"]["mean_ms"] == pytest.approx(period - up_ms, rel=0.1)
    assert d["up_duration"]["cv"] < 0.1 and d["down_duration"]["cv"] < 0.1
    assert d["rate_up_hz"] == pytest.approx(25.0, rel=0.15) and d["rate_down_hz"] < 1.5
    assert d["fraction_up"] == pytest.approx(up_ms / period, abs=0.05)
    lines = "\n".join(v for _, v in updown.format_rows(d))
    assert re.search(r"slow oscillation 0\.[78]\d Hz", lines)
    # the up intervals lie where the states were
    for a, b in d["up_intervals_ms"][1:-1]:
        assert (a % period) < 60 or (a % period) > period - 60


def test_irregular_durations_give_their_cv():
    rng = np.random.default_rng(7)
    edges, t, up = [], 0.0, False
    while t < 20_000.0:
        length = rng.uniform(200, 600) if up else rng.uniform(400, 1600)
        edges.append((t, t + length, up))
        t += length
        up = not up

    def rate(x):
        out = np.full(x.shape, 0.2)
        for a, b, u in edges:
            if u:
                out[(x >= a) & (x < b)] = 30.0
        return out
    d = updown.detect(_spikes(rng, 1000, rate, 20_000.0), 1000, 20_000.0)
    ups = np.array([b - a for a, b, u in edges if u and a > 600 and b < 19_900])
    assert d["has_up_down"]
    assert d["up_duration"]["mean_ms"] == pytest.approx(ups.mean(), rel=0.1)
    assert d["up_duration"]["cv"] == pytest.approx(ups.std() / ups.mean(), abs=0.08)


@pytest.mark.parametrize("rate_hz", [3.0, 0.5])
def test_asynchronous_activity_has_none(rate_hz):
    rng = np.random.default_rng(1)
    # Poisson activity with slow fluctuations of +-30 %: an asynchronous state, not slow waves
    times = _spikes(rng, 20_000, lambda t: rate_hz * (1 + 0.3 * np.sin(2 * np.pi * t / 700.0)), 10_000.0)
    d = updown.detect(times, 20_000, 10_000.0)
    assert not d["has_up_down"] and "no distinct states" in d["reason"]
    assert updown.format_rows(d)[0][1].startswith("none")


def test_silence_and_short_runs_are_not_up_down():
    assert not updown.detect(np.zeros(0), 100, 5000.0)["has_up_down"]
    assert not updown.detect(np.array([1.0, 2.0]), 100, 10.0)["has_up_down"]
    for bins in range(1, 40):                      # runs shorter than the smoothing kernel
        d = updown.detect_counts(np.arange(bins) % 3, 5.0, 10, transient_ms=0.0)
        assert d["has_up_down"] is False


def test_flicker_shorter_than_a_state_is_merged():
    rng = np.random.default_rng(2)
    # up states of 500 ms every 2 s, each broken by a 20 ms dip to silence: still one up state each
    def rate(t):
        phase = t % 2000.0
        return np.where((phase < 500) & ~((phase > 240) & (phase < 260)), 20.0, 0.1)
    d = updown.detect(_spikes(rng, 2000, rate, 12_000.0), 2000, 12_000.0)
    assert d["has_up_down"] and d["frequency_hz"] == pytest.approx(0.5, abs=0.1)
    assert d["up_duration"]["mean_ms"] == pytest.approx(500, rel=0.1)


def test_rate_trace_pools_to_its_limit():
    counts = np.ones(10_001, dtype=np.int64)
    tr = updown.rate_trace(counts, 5.0, 10, max_points=4000)
    assert len(tr["hz"]) <= 4000 and tr["bin_ms"] == 15.0
    assert tr["hz"][0] == pytest.approx(3 / (10 * 0.015))
