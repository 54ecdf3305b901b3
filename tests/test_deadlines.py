"""Real-time deadlines (ranvier.analysis.deadlines): the lag of wall time behind simulated time per
cycle, hard and soft real time in every summary, and --pace (never faster than biology)."""
import json
import subprocess
import sys

import numpy as np
import pytest

import ranvier as rv
from ranvier.analysis import deadlines
from conftest import mpiexec_path, needs_mpiexec, ranvier_cli, subprocess_env


def test_rank_lags_count_from_the_run_origin():
    # cycles 10, 11, 12 of a run that began at cycle 8 (origin 100 s), 1 ms cycles:
    # deadlines 100.003, 100.004, 100.005
    lag = deadlines.rank_lags([100.0025, 100.0041, 100.0050], 100.0, 10, 8, 1.0)
    np.testing.assert_allclose(lag, [-0.0005, 0.0001, 0.0], atol=1e-9)


def _log(lag, times, end_ms, chunk=64):
    log = deadlines.DeadlineLog(1.0)
    for i in range(0, len(lag), chunk):                # in chunks, as a run hands them over
        log.add(lag[i:i + chunk], times[i:i + chunk], end_ms[i:i + chunk])
    return log


def test_summarize_counts_a_late_cycle_as_missed():
    n = 1000
    lag = np.full(n, -0.5e-3)
    lag[700] = 2e-3                       # one cycle 2 ms behind biology, caught up afterwards
    times = np.full(n, 0.4e-3)
    times[700] = 2.9e-3
    end_ms = np.arange(1, n + 1, dtype=float)
    d = deadlines.summarize(_log(lag, times, end_ms), real_time_factor=0.5)
    assert d["cycles"] == n and d["cycles_missed"] == 1
    assert d["cycles_on_time_fraction"] == pytest.approx(0.999)
    assert d["hard_real_time"] is False and d["soft_real_time"] is True
    assert d["worst_lag_ms"] == pytest.approx(2.0) and d["worst_lag_at_s"] == pytest.approx(0.701)
    assert d["cycle_time_ratio"]["p50"] == pytest.approx(0.4, rel=0.011)
    assert d["cycle_time_ratio"]["max"] == pytest.approx(2.9)
    assert d["cycles_over_budget_fraction"] == pytest.approx(0.001)
    trace = d["lag_trace"]
    assert len(trace["t_s"]) == 16 * deadlines.POINTS_PER_CHUNK       # 16 chunks, no merging yet
    assert max(trace["lag_ms"]) == pytest.approx(2.0) and trace["t_s"][-1] == pytest.approx(1.0)
    # behind at the end: not soft real time
    lag[-1] = 1e-3
    assert deadlines.summarize(_log(lag, times, end_ms))["soft_real_time"] is False
    lines = "\n".join(v for _, v in deadlines.format_rows(d))
    assert "1 missed" in lines and "p99" in lines


def test_a_long_log_stays_bounded_and_keeps_its_worst_stretch():
    rng = np.random.default_rng(1)
    n = 100_003
    lag = -np.linspace(0, 1, n)
    lag[77_777] = 5e-3
    times = rng.uniform(0.1e-3, 0.9e-3, n)
    end_ms = np.arange(1, n + 1, dtype=float)
    d = deadlines.summarize(_log(lag, times, end_ms, chunk=1000))
    t, x = np.array(d["lag_trace"]["t_s"]), np.array(d["lag_trace"]["lag_ms"])
    assert deadlines.TRACE_POINTS <= t.size <= 2 * deadlines.TRACE_POINTS + 1
    assert np.all(np.diff(t) > 0) and t[-1] == pytest.approx(n / 1000)
    assert x.max() == pytest.approx(5.0)
    peak = t[np.argmax(x)]                              # the stretch that holds cycle 77,777 ends after it
    assert 77.778 <= peak < 77.778 + 2 * n / t.size / 1000
    for q in (50, 90, 99):                              # uniform ratios 0.1..0.9: percentiles to 1 %
        assert d["cycle_time_ratio"][f"p{q}"] == pytest.approx(np.percentile(times / 1e-3, q), rel=0.011)


def _small(**kw):
    return rv.models.dpsnn(neurons=1024, synapses_per_neuron=200, **kw)


def test_every_run_has_deadlines_across_chunks():
    with rv.Simulation(_small(), threads=1) as sim:
        sim.run(150.0, chunk_ms=20.0)              # 8 chunks
        result = sim.run(50.0, chunk_ms=20.0)      # a second run() call: its own origin
    d = result.summary()["deadlines"]
    assert d["cycles"] == 200 and d["cycle_ms"] == 1.0 and d["paced"] is False
    assert 0.0 <= d["cycles_on_time_fraction"] <= 1.0
    assert 0.0 < d["cycle_time_ratio"]["p50"] <= d["cycle_time_ratio"]["p90"] <= d["cycle_time_ratio"]["max"]
    assert d["lag_trace"]["t_s"][-1] == pytest.approx(0.2)
    assert d["soft_real_time"] == (d["final_lag_ms"] <= 0)


def test_pace_holds_the_run_to_biology_and_keeps_the_spikes():
    with rv.Simulation(_small(), threads=1) as sim:
        fast = sim.run(300.0)
        fast_ids, fast_steps = fast.spike_ids.copy(), fast.spike_steps.copy()
    with rv.Simulation(_small(), threads=1, pace=True) as sim:
        paced = sim.run(300.0)
    assert paced.simulate_seconds >= 0.3                  # never faster than biology
    assert fast.simulate_seconds < 0.3                    # (the unpaced run is: else the test shows nothing)
    np.testing.assert_array_equal(paced.spike_ids, fast_ids)
    np.testing.assert_array_equal(paced.spike_steps, fast_steps)
    d = paced.summary()["deadlines"]
    assert d["paced"] is True and d["pace_wait_seconds"] > 0.1
    # pacing waits outside the phases: the cycles' work stays a fraction of their length
    assert d["cycle_time_ratio"]["p50"] < 0.9


def test_pace_refuses_a_non_boolean():
    with pytest.raises(rv.ConfigError, match="pace"):
        rv.Simulation(_small(), pace="yes")


@needs_mpiexec
def test_pace_on_two_ranks_from_the_command_line(tmp_path):
    out = tmp_path / "paced"
    cmd = [mpiexec_path(), "-n", "2", sys.executable, "-m", "ranvier", "run", "dpsnn", "--neurons", "1024",
           "--set", "synapses_per_neuron=200", "--duration-ms", "300", "--pace", "--energy", "none",
           "--quiet", "--out", str(out)]
    proc = subprocess.run(cmd, env=subprocess_env(), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["simulate_seconds"] >= 0.3 and s["deadlines"]["paced"] is True and s["ranks"] == 2
    free = ranvier_cli("run", "dpsnn", "--neurons", "1024", "--set", "synapses_per_neuron=200",
                       "--duration-ms", "300", "--energy", "none", "--quiet", "--out", tmp_path / "free")
    assert free.returncode == 0, free.stderr
    assert json.loads((tmp_path / "free" / "summary.json").read_text())["spikes_total"] == s["spikes_total"]
