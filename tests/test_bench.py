"""`ranvier bench exchange` and `ranvier bench mpi`: input checks, tiny end-to-end runs, the
latency/bandwidth fit."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import PNG_MAGIC, mpiexec_path, assert_bad_input, needs_mpiexec, ranvier_cli, read_csv

from ranvier import _engine, cli
from ranvier.bench import exchange, mpi, runner

# A small dpsnn: each run takes well under a second, so the file stays fast.
TINY = ["--neurons", "1024", "--set", "synapses_per_neuron=100", "--duration-ms", "20", "--repeats", "1"]
TWO_STRATEGIES = "allgather,alltoallv"          # in every engine build




# -- bad input ----------------------------------------------------------------------------
# (arguments after `ranvier bench`, a word the message must contain)
BAD_INPUT = {
    "unknown strategy": (["exchange", "dpsnn", "--ranks", "1", "--strategies", "allgather,carrier-pigeon"],
                         "carrier-pigeon"),
    "rank list with a word": (["exchange", "dpsnn", "--ranks", "1,two"], "--ranks"),
    "rank list with zero": (["exchange", "dpsnn", "--ranks", "0,2"], "--ranks"),
    "empty rank in list": (["exchange", "dpsnn", "--ranks", "1,,2"], "--ranks"),
    "missing rank list": (["exchange", "dpsnn"], "--ranks"),
    "unknown workload": (["exchange", "no-such-model", "--ranks", "1"], "no-such-model"),
    "missing config file": (["exchange", "missing.toml", "--ranks", "1"], "missing.toml"),
    "unknown model parameter": (["exchange", "dpsnn", "--ranks", "1", "--set", "tau_x=3"], "tau_x"),
    "duration off the grid": (["exchange", "dpsnn", "--ranks", "1", "--duration-ms", "10.05"], "duration_ms"),
    "no benchmark named": ([], "exchange"),
    "one mpi size": (["mpi", "--sizes", "64"], "--sizes"),
}


@pytest.mark.parametrize("case", BAD_INPUT, ids=list(BAD_INPUT))
def test_bad_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path, capsys):
    args, word = BAD_INPUT[case]
    out = tmp_path / "out"
    with_out = [*args, "--out", str(out)] if args else args
    assert_bad_input(["bench", *with_out], word, out, capsys)


def test_unknown_strategy_lists_the_valid_ones(capsys):
    assert cli.main(["bench", "exchange", "dpsnn", "--ranks", "1", "--strategies", "pigeon"]) == 2
    message = capsys.readouterr().err
    assert "'pigeon'" in message
    assert all(name in message for name in _engine.EXCHANGES)


def test_unknown_primitive_lists_the_valid_ones(capsys):
    assert cli.main(["bench", "mpi", "--primitives", "smoke-signal"]) == 2
    message = capsys.readouterr().err
    assert "'smoke-signal'" in message
    assert all(name in message for name in _engine.MPI_PRIMITIVES)


# -- launching ------------------------------------------------------------------------------
def test_one_rank_runs_without_mpiexec_and_ranks_are_pinned_only_when_cores_suffice(monkeypatch):
    if mpiexec_path() is None:
        pytest.skip("no mpiexec")
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 4)
    assert runner.launch_prefix(1, threads=8) == []
    assert runner.launch_prefix(2)[-2:] == ["-bind-to", "core"]
    assert runner.launch_prefix(2, threads=2)[-2:] == ["-bind-to", "core:2"]
    assert "-bind-to" not in runner.launch_prefix(8)
    assert "-bind-to" not in runner.launch_prefix(2, threads=3)
    monkeypatch.setenv("OMP_PROC_BIND", "close")
    assert runner.launch_env(2, 1)["OMP_PROC_BIND"] == "close"     # pinned inside each rank's cores
    assert "OMP_PROC_BIND" not in runner.launch_env(8, 1)          # else all ranks would share core 0
    assert runner.launch_env(2, 2)["OMP_NUM_THREADS"] == "2"


# -- the fit --------------------------------------------------------------------------------
def test_fit_recovers_latency_and_bandwidth():
    latency, bandwidth = 3.5e-6, 2.5e9
    sizes = np.array([8, 64, 512, 4096, 32768, 262144], dtype=float)
    got_latency, got_bandwidth = mpi.fit_latency_bandwidth(sizes, latency + sizes / bandwidth)
    assert got_latency == pytest.approx(latency, rel=1e-9)
    assert got_bandwidth == pytest.approx(bandwidth, rel=1e-9)

    noise = np.random.default_rng(1).normal(1.0, 0.01, sizes.size)      # 1 % timing noise
    got_latency, got_bandwidth = mpi.fit_latency_bandwidth(sizes, (latency + sizes / bandwidth) * noise)
    assert got_bandwidth == pytest.approx(bandwidth, rel=0.05)
    assert abs(got_latency - latency) < 0.02 * (latency + sizes[-1] / bandwidth)


def test_fit_of_a_size_independent_time_has_infinite_bandwidth():
    latency, bandwidth = mpi.fit_latency_bandwidth([8, 512, 32768], [2e-6, 2e-6, 2e-6])
    assert latency == pytest.approx(2e-6)
    assert math.isinf(bandwidth)


# -- end to end ---------------------------------------------------------------------------
@needs_mpiexec
def test_exchange_bench_writes_one_row_per_run_and_a_plot(tmp_path):
    overlap = "both"
    settings = exchange.OVERLAP_SETTINGS[overlap]
    out = tmp_path / "bench"
    done = ranvier_cli("bench", "exchange", "dpsnn", "--ranks", "1,2", "--strategies", TWO_STRATEGIES,
                       "--overlap", overlap, *TINY, "--out", out)
    assert done.returncode == 0, done.stderr
    rows = read_csv(out / exchange.EXCHANGE_CSV)
    expected = {(r, s, "on" if o else "off") for r in ("1", "2") for s in TWO_STRATEGIES.split(",") for o in settings}
    assert sorted((row["ranks"], row["strategy"], row["overlap"]) for row in rows) == sorted(expected)
    assert list(rows[0]) == exchange.EXCHANGE_COLUMNS
    for row in rows:
        assert row["repeat"] == "1"
        assert float(row["duration_ms"]) == 20.0
        assert float(row["real_time_factor"]) > 0
        assert float(row["spikes_sent_per_cycle"]) == float(row["spikes_received_per_cycle"])
        if row["ranks"] == "2":
            assert float(row["bytes_per_cycle"]) > 0 and float(row["spikes_sent_per_cycle"]) > 0
    assert (out / exchange.EXCHANGE_PNG).read_bytes()[:8] == PNG_MAGIC
    progress = [line for line in done.stderr.splitlines() if "real-time factor" in line]
    assert len(progress) == len(rows)
    assert done.stdout.count("communicate µs/cycle") == 2            # one table per rank count
    assert str(out / exchange.EXCHANGE_CSV) in done.stdout


@needs_mpiexec
def test_mpi_bench_writes_times_fits_and_a_plot(tmp_path):
    primitives = list(_engine.MPI_PRIMITIVES[:2])
    out = tmp_path / "mpi"
    done = ranvier_cli("bench", "mpi", "--ranks", "2", "--primitives", ",".join(primitives),
                       "--sizes", "1,512", "--repeats", "5", "--out", out)
    assert done.returncode == 0, done.stderr
    rows = read_csv(out / mpi.MPI_CSV)
    assert sorted((row["primitive"], row["words"]) for row in rows) == sorted(
        (p, w) for p in primitives for w in ("1", "512"))
    assert all(0 < float(row["min_s"]) <= float(row["median_s"]) for row in rows)
    fit = json.loads((out / mpi.MPI_FIT).read_text())
    assert fit["ranks"] == 2
    assert set(fit["primitives"]) == set(primitives)
    for entry in fit["primitives"].values():
        assert math.isfinite(entry["latency_us"])
        assert entry["bytes"] == [8, 4096]
    assert (out / mpi.MPI_PNG).read_bytes()[:8] == PNG_MAGIC


# -- the communication model (theory.md, section 3) -------------------------------------------
def test_exchange_model_adds_latencies_and_charges_the_records_bytes():
    from ranvier.analysis import theory

    fit = {"ranks": 3, "primitives": {
        "allgather": {"latency_s": 2e-6, "bandwidth_bytes_per_s": 1e9},
        "alltoall": {"latency_s": 3e-6, "bandwidth_bytes_per_s": 2e9},
        "alltoallv": {"latency_s": 4e-6, "bandwidth_bytes_per_s": 1e9},
        "ibarrier": {"latency_s": 1e-6, "bandwidth_bytes_per_s": None},
        "isend_irecv": {"latency_s": 5e-6, "bandwidth_bytes_per_s": 4e9}}}
    # 2000 bytes per rank to 2 other ranks: 1000 per peer
    assert theory.exchange_seconds("allgather", 3, 2000, fit) == pytest.approx(2e-6 + 2e-6 + 1000 / 1e9)
    assert theory.exchange_seconds("alltoallv", 3, 2000, fit) == pytest.approx(3e-6 + 4e-6 + 1000 / 1e9)
    assert theory.exchange_seconds("p2p-nbx", 3, 2000, fit) == pytest.approx(5e-6 + 1000 / 4e9 + 1e-6)
    assert theory.exchange_seconds("allgather", 2, 2000, fit) is None      # fitted on another rank count
    assert theory.exchange_seconds("neighbor", 3, 2000, fit) is None       # primitive not measured
    assert set(theory.EXCHANGE_CALLS) == set(_engine.EXCHANGES)
