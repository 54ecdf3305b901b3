"""The command line: bad input is one clear line and exit status 2; a run writes a complete,
reproducible result folder."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import h5py
import numpy as np
import pytest

import ranvier

SMALL = ["--neurons", "2048", "--duration-ms", "200", "--threads", "1"]
SUMMARY_KEYS = ["real_time_factor", "build_seconds", "simulate_seconds", "rates_hz", "spikes_total",
                "synaptic_events", "phase_seconds", "peak_rss_bytes", "ranks", "threads", "exchange",
                "placement", "seed", "version"]


def ranvier_cli(*args, cwd=None, launcher=(), timeout=300):
    return subprocess.run([*launcher, sys.executable, "-m", "ranvier", *map(str, args)], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- bad input ----------------------------------------------------------------------------
# (arguments, a config file's text or None, a word the message must contain)
BAD_INPUT = {
    "unknown simulation key": ([], '[simulation]\ndurration_ms = 100.0\n', "durration_ms"),
    "unknown top-level key": ([], 'modle = "dpsnn"\n', "modle"),
    "unknown parameter in config": ([], '[parameters]\nnuerons = 2048\n', "nuerons"),
    "negative size in config": ([], '[parameters]\nneurons = -5\n', "neurons"),
    "non-numeric value in config": ([], '[parameters]\ntheta_mV = "high"\n', "theta_mV"),
    "invalid toml": ([], 'model = dpsnn = 3\n', "config.toml"),
    "missing config": (["missing.toml"], None, "missing.toml"),
    "unknown flag": (["--nerons", "2048"], None, "--nerons"),
    "bad exchange": (["--exchange", "carrier-pigeon"], None, "--exchange"),
    "bad placement": (["--placement", "diagonal"], None, "--placement"),
    "negative neurons": (["--neurons", "-5"], None, "--neurons"),
    "non-integer neurons": (["--neurons", "1.5"], None, "--neurons"),
    "zero threads": (["--threads", "0"], None, "--threads"),
    "non-numeric duration": (["--duration-ms", "ten"], None, "--duration-ms"),
    "duration off the grid": (["--duration-ms", "10.05"], None, "duration_ms"),
    "delay below resolution": (["--set", "delay_min_ms=0.05"], None, "delay"),
    "unknown --set parameter": (["--set", "tau_x=3"], None, "tau_x"),
    "non-numeric --set value": (["--set", "theta_mV=high"], None, "theta_mV"),
    "malformed --set": (["--set", "neurons"], None, "--set"),
    "network too large for memory": (["--neurons", "100000000"], None, "memory"),
}


@pytest.mark.parametrize("case", BAD_INPUT, ids=list(BAD_INPUT))
def test_bad_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path):
    args, config_text, field = BAD_INPUT[case]
    config = [write(tmp_path / "config.toml", config_text)] if config_text is not None else []
    small = SMALL[2:] if config else SMALL          # a config case may be about its own neurons
    # the small run's flags go first so that the flags under test override them
    done = ranvier_cli("run", *config, *small, *args, "--out", tmp_path / "out", cwd=tmp_path, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ranvier: error: ")
    assert field in lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == (["config.toml"] if config else [])


def test_non_empty_out_folder_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    write(out / "keep.txt", "mine")
    done = ranvier_cli("run", *SMALL, "--out", out)
    assert done.returncode == 2
    assert done.stderr.startswith("ranvier: error: ") and "--force" in done.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_no_command_is_a_usage_error():
    done = ranvier_cli()
    assert done.returncode == 2
    assert done.stderr.strip().startswith("ranvier: error: ") and len(done.stderr.strip().splitlines()) == 1


def test_info():
    done = ranvier_cli("info")
    assert done.returncode == 0, done.stderr
    assert f"ranvier {ranvier.__version__}" in done.stdout
    assert "OpenMP" in done.stdout


# -- a successful run -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    done = ranvier_cli("run", *SMALL, "--out", root / "out", cwd=root)
    assert done.returncode == 0, done.stderr
    return root, done


def read_spikes(path: Path) -> dict:
    with h5py.File(path, "r") as f:
        return {name: (g["node_ids"][()], g["timestamps"][()]) for name, g in f["spikes"].items()}


def test_run_prints_a_summary(small_run):
    _, done = small_run
    for label in ("neurons", "synapses", "real-time factor", "synaptic events", "peak RSS", "bytes per synapse"):
        assert label in done.stdout
    for phase in ranvier.PHASES:
        assert phase in done.stdout
    assert "100%" in done.stderr                  # the plain progress lines off a terminal


def test_run_writes_every_output_file(small_run):
    root, _ = small_run
    out = root / "out"
    assert sorted(p.name for p in out.iterdir()) == [".ranvier-result", "config.toml", "environment.json",
                                                     "spikes.h5", "summary.json", "timers.h5"]
    assert [p.name for p in root.iterdir() if p.name.startswith(".")] == []   # no temporary folder left

    env = json.loads((out / "environment.json").read_text())
    assert env["cores_logical"] == os.cpu_count() and env["threads_per_rank"] == 1 and env["ranks"] == 1
    assert env["ranvier"]["version"] == ranvier.__version__ and env["ranvier"]["compiler"]
    assert env["ranvier"]["git_commit"]                    # a commit, or "unknown" outside a git checkout
    assert env["cpu_model"] and env["memory_bytes"] > 0 and env["date_utc"].endswith("+00:00")
    energy = json.loads((out / "summary.json").read_text())["energy"]
    if not energy["available"]:                            # no counters here: the reason, no number
        assert energy["reason"] and energy["energy_j"] is None and energy["j_per_synaptic_event"]["all"] is None
    assert {"simulation_start", "simulation_end"} <= set(energy["marks"])

    text = (out / "config.toml").read_text()
    config = tomllib.loads(text)
    assert config["model"] == "dpsnn"
    defaults = ranvier.models.defaults("dpsnn")
    unset = {key for key, value in defaults.items() if value is None}     # TOML has no null: named in comments
    assert unset and set(config["parameters"]) == set(defaults) - unset
    assert all(f"\n# {key} = (not set)\n" in text for key in unset)
    assert config["parameters"]["neurons"] == 2048
    assert config["simulation"]["duration_ms"] == 200.0 and config["simulation"]["threads"] == 1

    summary = json.loads((out / "summary.json").read_text())
    for key in SUMMARY_KEYS:
        assert key in summary, key
    assert set(summary["phase_seconds"]) == set(ranvier.PHASES)
    assert summary["neurons"] == 2048 and summary["ranks"] == 1 and summary["threads"] == 1

    with h5py.File(out / "spikes.h5", "r") as f:
        assert f["spikes"].attrs["sorting"] == "by_time"
        total = 0
        for pop in ranvier.models.dpsnn(neurons=2048).populations:
            name, size = pop.name, pop.size
            group = f["spikes"][name]
            sorting = group.attrs.get_id("sorting").dtype        # SONATA's enum, as libsonata reads it
            assert h5py.check_enum_dtype(sorting)["by_time"] == group.attrs["sorting"]
            ids, times = group["node_ids"], group["timestamps"]
            assert ids.dtype == np.uint64 and times.dtype == np.float64
            assert times.attrs["units"] == "ms"
            assert ids.shape == times.shape
            if ids.size:
                assert ids[()].max() < size
                assert np.all(np.diff(times[()]) >= 0)
                assert 0 <= times[()].min() and times[()].max() <= 200.0
            total += ids.size
        assert total == summary["spikes_total"] > 0

    with h5py.File(out / "timers.h5", "r") as f:
        timers = f["cycle_seconds"]
        assert timers.shape == (1, 200, len(ranvier.PHASES))      # 200 cycles of 1 ms
        assert [str(p) for p in timers.attrs["phases"]] == list(ranvier.PHASES)
        assert timers.attrs["cycle_ms"] == pytest.approx(1.0)
        assert np.all(timers[()] >= 0)


def test_config_toml_reproduces_the_run(small_run):
    root, _ = small_run
    done = ranvier_cli("run", root / "out" / "config.toml", "--quiet", "--out", root / "again")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    first, again = read_spikes(root / "out" / "spikes.h5"), read_spikes(root / "again" / "spikes.h5")
    assert first.keys() == again.keys()
    for name in first:
        np.testing.assert_array_equal(first[name][0], again[name][0])
        np.testing.assert_array_equal(first[name][1], again[name][1])


def test_under_mpiexec_rank_0_alone_prints_and_writes(small_run):
    mpiexec = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not installed")
    pytest.importorskip("mpi4py")
    root, _ = small_run
    done = ranvier_cli("run", *SMALL, "--exchange", "alltoallv", "--out", root / "mpi",
                       launcher=(mpiexec, "-n", "2"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("real-time factor") == 1
    summary = json.loads((root / "mpi" / "summary.json").read_text())
    assert summary["ranks"] == 2 and len(summary["peak_rss_bytes"]) == 2
    first, mpi = read_spikes(root / "out" / "spikes.h5"), read_spikes(root / "mpi" / "spikes.h5")
    for name in first:
        np.testing.assert_array_equal(first[name][0], mpi[name][0])
        np.testing.assert_array_equal(first[name][1], mpi[name][1])


# -- energy on a machine without counters ----------------------------------------------------
def test_energy_from_an_external_trace_after_the_run(tmp_path):
    """A wall-meter trace (40 W idle, 100 W while simulating) applied to a finished run with a
    baseline pause: the energy above baseline and the joules per synaptic event, against
    hand-computed values."""
    run = tmp_path / "run"
    done = ranvier_cli("run", *SMALL, "--baseline-s", "0.3", "--out", run)
    assert done.returncode == 0, done.stderr
    summary = json.loads((run / "summary.json").read_text())
    marks = summary["energy"]["marks"]
    t0, t1 = marks["simulation_start"], marks["simulation_end"]
    # samples at the marks, so the trapezoid rule has no ramp inside the baseline or the simulation
    b0, b1 = marks["baseline_start"], marks["baseline_end"]
    times = np.concatenate([np.arange(b0 - 5, b0, 0.01), [b0, b1, t0, t1], np.arange(t1 + 0.01, t1 + 5, 0.01)])
    watts = np.where((times >= t0) & (times <= t1), 100.0, 40.0)
    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,watts\n" + "".join(f"{float(t)!r},{float(w)}\n" for t, w in zip(times, watts)))
    done = ranvier_cli("energy", run, "--power-trace", trace)
    assert done.returncode == 0, done.stderr
    assert "J per synaptic event" in done.stdout
    energy = json.loads((run / "summary.json").read_text())["energy"]
    events = summary["synaptic_events"]["recurrent"] + summary["synaptic_events"]["external"]
    assert energy["available"] and energy["meter"] == "external" and not energy["estimate"]
    assert marks["baseline_end"] - marks["baseline_start"] == pytest.approx(0.3, abs=0.05)
    assert energy["baseline_power_w"] == pytest.approx(40.0)
    expected = 60.0 * (t1 - t0)
    assert energy["energy_j"] == pytest.approx(expected, rel=0.02)
    assert energy["j_per_synaptic_event"]["all"] == pytest.approx(energy["energy_j"] / events)


def test_energy_refuses_a_bad_trace_in_one_line(small_run, tmp_path):
    root, _ = small_run
    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,watts\n1795000000,40\nnot-a-number,41\n")
    done = ranvier_cli("energy", root / "out", "--power-trace", trace)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "trace.csv" in done.stderr


def test_power_model_gives_a_labelled_estimate(tmp_path):
    done = ranvier_cli("run", *SMALL, "--power-model", "static=10,per_core=5", "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    energy = json.loads((tmp_path / "out" / "summary.json").read_text())["energy"]
    assert energy["estimate"] and energy["meter"] == "model"
    assert energy["energy_j"] == pytest.approx(15.0 * energy["simulation_s"])     # 1 rank x 1 thread
    assert "estimate" in done.stdout
    bad = ranvier_cli("run", *SMALL, "--power-model", "static=10,per_kore=5")
    assert bad.returncode == 2 and "per_kore" in bad.stderr


def test_bad_energy_option_stops_every_rank(tmp_path):
    """Options are checked on every rank: a refusal on rank 0 alone would leave the others
    waiting in the build's first collective."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not installed")
    done = ranvier_cli("run", *SMALL, "--power-model", "static=10,per_kore=5", launcher=(mpiexec, "-n", "2"),
                       timeout=60)
    assert done.returncode == 2 and done.stderr.count("ranvier: error:") == 1 and "per_kore" in done.stderr


def test_sigterm_turned_into_another_error_by_a_library_still_ends_as_terminated(monkeypatch, capsys):
    """SIGTERM raises Terminated in whatever Python code runs then; a library may turn it into
    another error (numpy's sort of a structured array, inside np.unique(axis=0) of a checkpoint,
    made it "TypeError: Cannot compare structured arrays ..."). The job still ends as terminated:
    status 143 and its one line. The next main() in the process starts afresh."""
    import signal

    from ranvier import cli
    from ranvier.errors import Terminated

    def sigterm_inside_a_library(argv, rank):
        try:
            cli.signals._on_sigterm(signal.SIGTERM, None)
        except Terminated:
            raise TypeError("Cannot compare structured arrays unless they have a common dtype") from None

    def plain_failure(argv, rank):
        raise TypeError("a real type error")

    monkeypatch.delenv("RANVIER_TRACEBACK", raising=False)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        monkeypatch.setattr(cli, "_dispatch", sigterm_inside_a_library)
        assert cli.main(["run"]) == 143
        err = capsys.readouterr().err
        assert "ranvier: terminated (SIGTERM)" in err and "TypeError" not in err, err
        monkeypatch.setattr(cli, "_dispatch", plain_failure)
        assert cli.main(["run"]) == 1
        assert "ranvier: error: TypeError: a real type error" in capsys.readouterr().err
    finally:
        signal.signal(signal.SIGTERM, previous)


class _DropsAnInterrupt:
    """An object whose __del__ meets SIGINT: Python prints "Exception ignored in ..." and goes on,
    as it did when an interrupt hit importlib's module-lock callback during an import."""

    def __del__(self):
        from ranvier.cli import signals
        signals._on_sigint(signal.SIGINT, None)


@pytest.mark.parametrize("where", ["during the build", "during the run"])
def test_an_interrupt_that_python_dropped_still_ends_the_run(monkeypatch, capsys, tmp_path, where):
    """An interrupt raised where Python drops exceptions (a weakref callback, a __del__) is
    remembered and raised where the command can stop: after the build, after each chunk, before
    the results are published. Before, the 600 s run went on to its end with status 0."""
    from ranvier import cli, models
    from ranvier.core import simulation

    build, run_steps = models.build, simulation.Simulation.run

    def build_then_drop(*args, **kwargs):
        network = build(*args, **kwargs)
        _DropsAnInterrupt()                     # deleted at once, its exception dropped
        return network

    def run_then_drop(self, *args, **kwargs):
        _DropsAnInterrupt()
        return run_steps(self, *args, **kwargs)

    if where == "during the build":
        monkeypatch.setattr(models, "build", build_then_drop)
    else:
        monkeypatch.setattr(simulation.Simulation, "run", run_then_drop)
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: dropped.append(unraisable.exc_type))
    previous = signal.getsignal(signal.SIGINT)
    try:
        started = time.perf_counter()
        status = cli.main(["run", "--neurons", "300", "--set", "synapses_per_neuron=10", "--duration-ms", "600000",
                           "--threads", "1", "--quiet", "--out", str(tmp_path / "res")])
        err = capsys.readouterr().err
        assert status == 130, err
        assert dropped == [KeyboardInterrupt] and "ranvier: interrupted" in err
        assert time.perf_counter() - started < 60        # stopped, not run to its end
        assert not (tmp_path / "res").exists()
    finally:
        signal.signal(signal.SIGINT, previous)
