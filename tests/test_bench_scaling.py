"""`ranvier bench strong-scaling` and the generic `ranvier bench weak-scaling` (ranvier.bench.scaling):
input checks that fail before anything runs, the figures, tables and plot on synthetic summaries,
the `ranvier run` command of each run, the plan of runs with a stand-in launcher, and tiny
end-to-end runs that leave real run archives."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PNG_MAGIC, assert_bad_input, needs_mpiexec, ranvier_cli, read_csv

from ranvier import cli
from ranvier.analysis import speedup
from ranvier.bench import areas as bench_areas
from ranvier.bench import common, runner
from ranvier.bench import scaling as bench_scaling
from ranvier.cli import run as run_command

# A tiny dpsnn (dpsnn needs synapses_per_neuron < neurons) and a tiny artificial-cells.
TINY_DPSNN = ["--set", "neurons=600", "--set", "synapses_per_neuron=60", "--duration-ms", "50"]
TINY_CELLS = ["--set", "targets_per_cell=50", "--duration-ms", "50"]




# -- bad input: one line, exit 2, nothing run or written --------------------------------------
S, W = "strong-scaling", "weak-scaling"
BAD_INPUT = {
    "rank list with zero": ([S, "dpsnn", "--ranks", "0,2"], "--ranks"),
    "rank list with a word": ([S, "dpsnn", "--ranks", "1,two"], "--ranks"),
    "missing rank list": ([S, "dpsnn"], "--ranks"),
    "thread list with zero": ([S, "dpsnn", "--ranks", "1", "--threads", "1,0"], "--threads"),
    "thread list empty item": ([S, "dpsnn", "--ranks", "1", "--threads", "1,,2"], "--threads"),
    "zero repeats": ([S, "dpsnn", "--ranks", "1", "--repeats", "0"], "--repeats"),
    "unknown workload": ([S, "no-such-model", "--ranks", "1"], "no-such-model"),
    "missing config file": ([S, "missing.toml", "--ranks", "1"], "missing.toml"),
    "unknown parameter": ([S, "dpsnn", "--ranks", "1,2", "--set", "tau_x=3"], "--set tau_x"),
    "model refuses the network": ([S, "dpsnn", "--ranks", "1,2", "--set", "neurons=600"], "synapses_per_neuron"),
    "duration off the grid": ([S, "dpsnn", "--ranks", "1", *TINY_DPSNN[:4], "--duration-ms", "10.05"],
                              "--duration-ms"),
    "more threads than neurons": ([S, "dpsnn", "--ranks", "2", "--threads", "1,200", "--set", "neurons=100",
                                   "--set", "synapses_per_neuron=10"], "--threads 200"),
    "two-tier without areas": ([S, "dpsnn", "--ranks", "2", *TINY_DPSNN, "--exchange", "two-tier"], "--exchange"),
    "unknown exchange": ([S, "dpsnn", "--ranks", "2", "--exchange", "smoke-signals"], "--exchange"),
    "unknown energy meter": ([S, "dpsnn", "--ranks", "2", "--energy", "wattmeter"], "--energy"),
    "negative baseline": ([S, "dpsnn", "--ranks", "2", "--baseline-s", "-1"], "--baseline-s"),
    "weak: size set by hand": ([W, "dpsnn", "--ranks", "1,2", "--set", "neurons=1000"], "--set neurons"),
    "weak: zero per core": ([W, "dpsnn", "--ranks", "1,2", "--per-core", "0"], "--per-core"),
    "weak: per core too small for the model": ([W, "dpsnn", "--ranks", "1,2", "--per-core", "600"], "--per-core"),
    "weak: unknown parameter": ([W, "artificial-cells", "--ranks", "1", "--set", "neurons=5"], "--set neurons"),
    "weak: area flag without areas": ([W, "dpsnn", "--ranks", "1,2", "--global-interval", "2"], "--global-interval"),
    "weak: conventional exchange without areas": ([W, "dpsnn", "--ranks", "2", "--conventional-exchange",
                                                   "alltoallv"], "--conventional-exchange"),
    "weak: per core with areas": ([W, "mam-benchmark", "--ranks", "1,2", "--per-core", "100"], "--per-core"),
    "weak: energy with areas": ([W, "mam-benchmark", "--ranks", "1,2", "--energy", "none"], "--energy"),
    "weak: thread list with areas": ([W, "mam-benchmark", "--ranks", "1,2", "--threads", "1,2"], "--threads"),
}


@pytest.fixture
def no_runs(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a benchmark ran despite bad input")
    monkeypatch.setattr(bench_scaling, "launch_run", refuse)
    monkeypatch.setattr(bench_areas, "run_worker", refuse)


@pytest.mark.parametrize("case", BAD_INPUT, ids=list(BAD_INPUT))
def test_bad_input_is_one_line_exit_2_before_anything_runs(case, tmp_path, capsys, no_runs):
    args, word = BAD_INPUT[case]
    out = tmp_path / "out"
    assert_bad_input(["bench", *args, "--out", str(out)], word, out, capsys)


def test_a_folder_with_earlier_results_or_archives_is_refused(tmp_path, capsys, no_runs):
    for name in ("strong_scaling.csv", "runs/r1-t1-1/summary.json"):
        out = tmp_path / name.split("/")[0].replace(".csv", "")
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text("x")
        assert cli.main(["bench", S, "dpsnn", "--ranks", "1", *TINY_DPSNN, "--out", str(out)]) == 2
        assert "--out" in capsys.readouterr().err


# -- one run's figures, on synthetic summaries ---------------------------------------------------
def synthetic_summary(ranks=1, threads=1, rtf=2.0, wall=4.0, phases=(1.0, 0.6, 0.4, 1.2, 0.6), energy="absent",
                      recurrent=1_000_000, build=0.5, rss=(100 * 2**20, 150 * 2**20)):
    summary = {"model": "dpsnn", "neurons": 600, "synapses": 36000, "duration_ms": 2000.0, "ranks": ranks,
               "threads": threads, "real_time_factor": rtf, "simulate_seconds": wall, "build_seconds": build,
               "phase_seconds": dict(zip(("deliver", "update", "collocate", "communicate", "synchronize"), phases)),
               "peak_rss_bytes": list(rss[:ranks]), "synaptic_events": {"recurrent": recurrent, "external": 5}}
    if energy != "absent":
        summary["energy"] = energy
    return summary


def measured_energy(joules=20.0, seconds=4.0, watts=30.0, baseline=25.0, per_event=None):
    return {"available": True, "reason": None, "meter": "rapl", "estimate": False, "simulation_s": seconds,
            "energy_total_j": watts * seconds, "energy_j": joules, "mean_power_w": watts,
            "baseline_power_w": baseline, "j_per_synaptic_event": {"all": None, "recurrent": per_event}}


def test_a_run_row_gives_the_dpsnn_profile_as_percent_of_the_wall_time():
    row = bench_scaling.run_row(synthetic_summary(ranks=2, threads=1), repeat=3, archive="runs/r2-t1-3")
    assert (row["ranks"], row["threads"], row["cores"], row["repeat"]) == (2, 1, 2, 3)
    # (1.0 + 0.6 + 0.4) / 4 s, 1.2 / 4 s, 0.6 / 4 s; the rest 0.2 / 4 s
    assert row["computation_pct"] == pytest.approx(50.0)
    assert row["communication_pct"] == pytest.approx(30.0)
    assert row["barrier_pct"] == pytest.approx(15.0)
    assert row["other_pct"] == pytest.approx(5.0)
    assert row["peak_rss_mib"] == pytest.approx(150.0)              # the largest rank
    assert row["build_seconds"] == 0.5 and row["real_time_factor"] == 2.0
    assert row["energy_j"] is None and "no energy report" in row["energy_unavailable"]
    assert row["archive"] == "runs/r2-t1-3"


def test_energy_figures_read_the_runs_energy_report():
    figures = bench_scaling.energy_figures(synthetic_summary(energy=measured_energy(per_event=2e-5)))
    assert figures["joules"] == 20.0 and figures["seconds"] == 4.0 and figures["watts"] == 30.0
    assert figures["baseline_w"] == 25.0 and figures["source"] == "rapl"
    assert figures["uj_per_event"] == pytest.approx(20.0)            # 2e-5 J = 20 µJ
    # no per-event figure in the report: energy / recurrent synaptic events (20 J / 1e6 = 20 µJ)
    figures = bench_scaling.energy_figures(synthetic_summary(energy=measured_energy(), recurrent=2_000_000))
    assert figures["uj_per_event"] == pytest.approx(10.0)
    # a power-model estimate knows the power above idle only (ranvier run --power-model)
    estimate = {**measured_energy(), "meter": "model", "estimate": True, "mean_power_w": None,
                "baseline_power_w": None, "mean_power_above_baseline_w": 5.0}
    figures = bench_scaling.energy_figures(synthetic_summary(energy=estimate))
    assert figures["watts"] == 5.0 and figures["source"] == "model (estimate)" and figures["baseline_w"] is None
    unavailable = {"available": False, "reason": "RAPL: not readable", "energy_j": None}
    assert bench_scaling.energy_figures(synthetic_summary(energy=unavailable)) == "RAPL: not readable"
    assert "no energy" in bench_scaling.energy_figures(synthetic_summary())
    assert "no energy" in bench_scaling.energy_figures(synthetic_summary(energy=None))


def strong_runs(oversubscribed=()):
    """Medians (repeats 1, 2, 3): 1x1 RTF 2.0, 2x1 1.25, 4x1 0.8, 2x2 0.5; on a machine with enough
    cores for all but the (ranks, threads) in `oversubscribed`."""
    runs = []
    for ranks, threads, rtfs in ((1, 1, (2.0, 2.2, 1.9)), (2, 1, (1.25, 1.3, 1.2)), (4, 1, (0.8, 0.9, 0.7)),
                                 (2, 2, (0.5, 0.6, 0.4))):
        for repeat, rtf in enumerate(rtfs, 1):
            row = bench_scaling.run_row(synthetic_summary(ranks, threads, rtf=rtf, rss=(2**20,) * 4,
                                                          energy=measured_energy(joules=10.0 * repeat)), repeat=repeat)
            row["oversubscribed"] = int((ranks, threads) in oversubscribed)
            runs.append(row)
    return runs


def test_strong_scaling_speedup_and_efficiency_against_the_fewest_cores():
    summary = bench_scaling.summarize(strong_runs(), bench_scaling.STRONG)
    assert [(s["ranks"], s["threads"], s["cores"]) for s in summary] == [(1, 1, 1), (2, 1, 2), (2, 2, 4), (4, 1, 4)]
    by = {(s["ranks"], s["threads"]): s for s in summary}
    assert by[(1, 1)]["rtf_median"] == 2.0 and by[(1, 1)]["rtf_min"] == 1.9
    # speedup = 2.0 / median RTF; efficiency = speedup / cores
    assert by[(1, 1)]["speedup"] == pytest.approx(1.0) and by[(1, 1)]["efficiency"] == pytest.approx(1.0)
    assert by[(2, 1)]["speedup"] == pytest.approx(1.6) and by[(2, 1)]["efficiency"] == pytest.approx(0.8)
    assert by[(4, 1)]["speedup"] == pytest.approx(2.5) and by[(4, 1)]["efficiency"] == pytest.approx(0.625)
    assert by[(2, 2)]["speedup"] == pytest.approx(4.0) and by[(2, 2)]["efficiency"] == pytest.approx(1.0)
    assert by[(2, 2)]["energy_j"] == pytest.approx(20.0)             # median of 10, 20, 30
    assert by[(2, 2)]["computation_pct"] == pytest.approx(50.0)


def test_one_definition_of_speedup_and_efficiency():
    """ranvier.analysis.speedup: speedup = baseline RTF / RTF, efficiency = speedup / (cores / baseline cores);
    weak scaling: efficiency = the speedup; none where oversubscribed."""
    assert speedup.scaling(0.5, 4, 2.0, 1) == speedup.Scaling(4.0, 1.0)
    assert speedup.scaling(1.25, 2, 2.0, 1) == speedup.Scaling(1.6, 0.8)
    assert speedup.scaling(2.5, 4, 2.0, 1, weak=True) == speedup.Scaling(0.8, 0.8)
    assert speedup.scaling(1.6, 8, 5.0, 4, oversubscribed=True) == speedup.Scaling(3.125, None, "oversubscribed")
    assert speedup.scaling(1.6, 8, 5.0, 4, base_oversubscribed=True).efficiency is None
    assert speedup.is_oversubscribed(2, 4, 2) and speedup.is_oversubscribed(1, 3, 2)
    assert not speedup.is_oversubscribed(2, 1, 2) and not speedup.is_oversubscribed(4, 4, None)


def test_oversubscribed_configurations_get_no_efficiency():
    """The issue's case: 1 rank x 4 threads on 2 cores (spinning, RTF 5.0) as the baseline of 2 ranks x
    4 threads (RTF 1.6) read as a parallel efficiency of 156 %; now neither has one."""
    runs = [bench_scaling.run_row(synthetic_summary(r, 4, rtf=rtf)) for r, rtf in ((1, 5.0), (2, 1.6))]
    for row in runs:
        row["oversubscribed"] = 1
    summary = bench_scaling.summarize(runs, bench_scaling.STRONG)
    assert [s["speedup"] for s in summary] == pytest.approx([1.0, 3.125])
    assert [s["efficiency"] for s in summary] == [None, None]
    table = bench_scaling.format_scaling_table(summary, bench_scaling.STRONG).splitlines()
    assert all(line.split()[7] == "-" and line.endswith("oversubscribed") for line in table[-2:]), table
    # in a sweep, only the rows over the machine's cores lose their efficiency
    by = {(s["ranks"], s["threads"]): s for s in
          bench_scaling.summarize(strong_runs(oversubscribed={(4, 1), (2, 2)}), bench_scaling.STRONG)}
    assert by[(2, 1)]["efficiency"] == pytest.approx(0.8)
    assert by[(4, 1)]["efficiency"] is None and by[(2, 2)]["efficiency"] is None
    assert by[(2, 2)]["speedup"] == pytest.approx(4.0)


def test_the_command_words_speedup_as_it_computes_it(capsys):
    """speedup = RTF at the baseline / RTF (the former caption had the ratio the other way round)."""
    summary = bench_scaling.summarize(strong_runs(), bench_scaling.STRONG)
    bench_scaling.print_tables(summary, bench_scaling.STRONG, repeats=3)
    out = capsys.readouterr().out
    assert speedup.definition("1 core(s)") in out
    assert "speedup = real-time factor at 1 core(s) / real-time factor" in out
    assert "speedup = RTF / RTF" not in out


def test_weak_scaling_efficiency_is_the_ratio_of_real_time_factors():
    runs = [dict(bench_scaling.run_row(synthetic_summary(r, 1, rtf=rtf)), oversubscribed=0)
            for r, rtf in ((2, 1.0), (1, 0.8), (4, 1.6))]
    summary = bench_scaling.summarize(runs, bench_scaling.WEAK)
    assert [s["ranks"] for s in summary] == [1, 2, 4]
    assert [s["efficiency"] for s in summary] == pytest.approx([1.0, 0.8, 0.5])     # 0.8 / RTF
    assert all(s["speedup"] is None for s in summary)
    assert "speedup" not in bench_scaling.format_scaling_table(summary, bench_scaling.WEAK)


def test_tables_show_the_profile_the_scaling_and_the_energy():
    summary = bench_scaling.summarize(strong_runs())
    profile = bench_scaling.format_profile_table(summary).splitlines()
    assert len(profile) == 1 + 4 and "computation %" in profile[0] and "barrier %" in profile[0]
    assert profile[1].split()[4:7] == ["50.0", "30.0", "15.0"]
    scaling = bench_scaling.format_scaling_table(summary).splitlines()
    assert scaling[2].split()[:8] == ["2", "1", "2", "600", "1.200", "1.250", "1.60", "0.80"]
    energy = bench_scaling.format_energy(summary).splitlines()
    assert "µJ/synaptic event" in energy[0] and len(energy) == 5
    # the µJ per recurrent synaptic event of the median run: 20 J / 1e6 events
    assert energy[1].split()[-2:] == ["20.000", "rapl"]


def test_energy_is_one_line_when_any_configuration_lacks_it():
    runs = strong_runs()
    runs[0] = bench_scaling.run_row(synthetic_summary(energy={"available": False, "reason": "no meter here"}))
    text = bench_scaling.format_energy(bench_scaling.summarize(runs))
    assert text == "energy: unavailable: no meter here"


def test_plot_is_written(tmp_path):
    plt = common.pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed")
    for mode in (bench_scaling.STRONG, bench_scaling.WEAK):
        path = tmp_path / f"{mode}.png"
        bench_scaling.plot_scaling(plt, bench_scaling.summarize(strong_runs(), mode), path, "test", mode)
        assert path.read_bytes()[:8] == PNG_MAGIC


# -- the `ranvier run` command of one run ---------------------------------------------------------
def test_the_run_command_reads_back_as_the_same_configuration(tmp_path):
    overrides = {"neurons": 600, "weight_relative_sd": 0.25, "initial": "uniform"}
    argv = bench_scaling.run_argv(["--model", "dpsnn"], overrides, 2, 50.0, tmp_path / "r1-t2-1")
    assert argv[:4] == [sys.executable, "-m", "ranvier", "run"]
    assert "--energy" not in argv and "--baseline-s" not in argv and "--exchange" not in argv
    assert argv[-3:] == ["--out", str(tmp_path / "r1-t2-1"), "--quiet"]
    from ranvier.core.simulation import EXCHANGES, PLACEMENTS
    args = cli.make_parser(EXCHANGES, PLACEMENTS).parse_args(argv[3:])
    cfg = run_command.resolve_config(args)
    assert cfg.model == "dpsnn" and cfg.parameters == overrides
    assert cfg.simulation["threads"] == 2 and cfg.simulation["duration_ms"] == 50.0
    argv = bench_scaling.run_argv(["--model", "dpsnn"], {}, 1, 50.0, tmp_path / "x", exchange="alltoallv",
                                  energy="none", baseline_s=5.0)
    assert argv[argv.index("--energy") + 1] == "none" and float(argv[argv.index("--baseline-s") + 1]) == 5.0
    assert argv[argv.index("--exchange") + 1] == "alltoallv"


# -- the plan of runs, with a stand-in launcher ---------------------------------------------------
@pytest.fixture
def launched(monkeypatch):
    """A stand-in `ranvier run`: records (ranks, threads, argv) and writes a synthetic summary.json."""
    calls = []

    def fake_launch(ranks, threads, argv):
        calls.append((ranks, threads, argv))
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True)
        overrides = dict(argv[i + 1].split("=", 1) for i, word in enumerate(argv) if word == "--set")
        summary = synthetic_summary(ranks, threads, rtf=1.0 / (ranks * threads), rss=(2**20,) * 8)
        summary["neurons"] = int(overrides.get("neurons", 600))
        (out / "summary.json").write_text(json.dumps(summary))
        return subprocess.CompletedProcess(argv, 0, "", "")
    monkeypatch.setattr(bench_scaling, "launch_run", fake_launch)
    monkeypatch.setattr(runner, "launch_prefix", lambda ranks, threads=1: [])     # no mpiexec needed
    return calls


def test_strong_scaling_runs_the_grid_with_repeats_outermost(tmp_path, launched, capsys, monkeypatch):
    monkeypatch.setattr(bench_scaling.os, "cpu_count", lambda: 2)
    out = bench_scaling.strong_scaling_bench("dpsnn", [2, 1], threads=[2, 1], duration_ms=50, repeats=2,
                                             parameters={"neurons": 600, "synapses_per_neuron": 60},
                                             out=tmp_path / "strong")
    grid = [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert [(r, t) for r, t, _ in launched] == grid * 2
    for (r, t, argv), k in zip(launched, [1] * 4 + [2] * 4):
        assert argv[argv.index("--threads") + 1] == str(t)
        assert argv[argv.index("--out") + 1] == str(out / "runs" / f"r{r}-t{t}-{k}")
        assert "neurons=600" in argv and "synapses_per_neuron=60" in argv
    rows = read_csv(out / "strong_scaling.csv")
    assert list(rows[0]) == bench_scaling.RUN_COLUMNS and len(rows) == 8
    assert [row["oversubscribed"] for row in rows[:4]] == ["0", "0", "0", "1"]     # 4 cores on 2
    captured = capsys.readouterr()
    assert "oversubscribed" in captured.err and "2 rank(s) x 2 thread(s)" in captured.err
    assert "ranvier report " + str(out) in captured.out
    assert "energy: unavailable:" in captured.out
    saved = json.loads((out / "strong_scaling.json").read_text())
    # RTF = 1 / cores: efficiency 1, but 2 x 2 on 2 cores is oversubscribed and has none
    assert [s["efficiency"] for s in saved["summary"]][:3] == pytest.approx([1.0, 1.0, 1.0])
    assert saved["summary"][3]["efficiency"] is None and saved["summary"][3]["oversubscribed"]


def test_generic_weak_scaling_grows_the_size_with_the_cores(tmp_path, launched, capsys):
    out = bench_areas.weak_scaling_bench("dpsnn", [1, 2], threads=[1, 2], duration_ms=50, repeats=1,
                                         per_core=1200, out=tmp_path / "weak")
    sizes = {(r, t): argv[argv.index("--set") + 1] for r, t, argv in launched}
    assert sizes == {(1, 1): "neurons=1200", (1, 2): "neurons=2400", (2, 1): "neurons=2400",
                     (2, 2): "neurons=4800"}
    assert [row["neurons"] for row in read_csv(out / "weak_scaling.csv")] == ["1200", "2400", "2400", "4800"]
    assert "weak scaling" in capsys.readouterr().out
    # the default size per core: half the model's default size (dpsnn: 20480 neurons)
    launched.clear()
    bench_areas.weak_scaling_bench("dpsnn", [1], duration_ms=50, repeats=1, out=tmp_path / "default")
    assert "neurons=10240" in launched[0][2]


def test_a_failed_run_stops_the_benchmark_with_its_stderr(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench_scaling, "launch_run",
                        lambda ranks, threads, argv: subprocess.CompletedProcess(argv, 3, "", "boom\n"))
    monkeypatch.setattr(runner, "launch_prefix", lambda ranks, threads=1: [])
    assert cli.main(["bench", S, "dpsnn", "--ranks", "1", *TINY_DPSNN, "--repeats", "1",
                     "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "failed with status 3" in err and "boom" in err


def test_a_workload_config_file_is_run_as_such(tmp_path, launched):
    config = tmp_path / "small.toml"
    config.write_text('model = "artificial-cells"\n[parameters]\ncells = 900\ntargets_per_cell = 30\n'
                      '[simulation]\nduration_ms = 40.0\nthreads = 2\n')
    bench_scaling.strong_scaling_bench(str(config), [1], repeats=1, out=tmp_path / "o")
    (_, threads, argv), = launched
    assert threads == 2 and argv[4] == str(config.absolute())        # the config's threads and the file itself
    assert argv[argv.index("--duration-ms") + 1] == "40.0"


# -- end to end ------------------------------------------------------------------------------------
@needs_mpiexec
def test_strong_scaling_end_to_end_leaves_run_archives(tmp_path):
    out = tmp_path / "strong"
    done = ranvier_cli("bench", S, "dpsnn", "--ranks", "1,2", "--threads", "1", *TINY_DPSNN, "--repeats", "1",
                       "--out", out)
    assert done.returncode == 0, done.stderr
    rows = read_csv(out / "strong_scaling.csv")
    assert [(row["ranks"], row["threads"], row["repeat"]) for row in rows] == [("1", "1", "1"), ("2", "1", "1")]
    for row in rows:
        archive = Path(row["archive"])
        assert archive == out / "runs" / f"r{row['ranks']}-t1-1"
        for name in ("summary.json", "config.toml", "spikes.h5", "timers.h5"):
            assert (archive / name).is_file(), name
        summary = json.loads((archive / "summary.json").read_text())
        assert summary["ranks"] == int(row["ranks"]) and summary["threads"] == 1 and summary["neurons"] == 600
        assert summary["duration_ms"] == 50.0
        assert float(row["real_time_factor"]) == pytest.approx(summary["real_time_factor"])
        assert 0 < float(row["computation_pct"]) <= 100
        parts = sum(float(row[k]) for k in ("computation_pct", "communication_pct", "barrier_pct", "other_pct"))
        assert parts == pytest.approx(100.0)
    assert float(rows[0]["communicate_s"]) < float(rows[1]["communicate_s"])   # one rank exchanges nothing
    assert (out / "strong_scaling.png").read_bytes()[:8] == PNG_MAGIC
    assert "computation %" in done.stdout and "efficiency" in done.stdout
    assert "energy" in done.stdout and f"ranvier report {out}" in done.stdout
    assert len([line for line in done.stderr.splitlines() if "real-time factor" in line]) == 2


@needs_mpiexec
def test_generic_weak_scaling_end_to_end(tmp_path):
    out = tmp_path / "weak"
    done = ranvier_cli("bench", W, "artificial-cells", "--ranks", "1,2", "--per-core", "500", *TINY_CELLS,
                       "--repeats", "1", "--out", out)
    assert done.returncode == 0, done.stderr
    rows = read_csv(out / "weak_scaling.csv")
    assert [(row["ranks"], row["neurons"]) for row in rows] == [("1", "500"), ("2", "1000")]
    for row in rows:
        assert (Path(row["archive"]) / "summary.json").is_file()
    assert (out / "weak_scaling.png").read_bytes()[:8] == PNG_MAGIC
    assert "weak scaling" in done.stdout and "efficiency" in done.stdout
