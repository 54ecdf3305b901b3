"""`ranvier bench weak-scaling | heterogeneity | cycle-times` (ranvier.bench.areas): input checks
that fail before anything runs, the tables and plots on synthetic runs, the measurements of one
in-process run, and tiny end-to-end runs."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import PNG_MAGIC, assert_bad_input, needs_mpiexec, ranvier_cli, read_csv

from ranvier.analysis import cycle_stats, theory
from ranvier.bench import areas as bench_areas
from ranvier.errors import ConfigError

# A small mam-benchmark: 400 neurons per area, 40 synapses each, 100 ms = 1000 cycles of 0.1 ms;
# D = delay_ratio = 10 by default.
SMALL = ["--set", "area_size=400", "--set", "K=40", "--duration-ms", "100"]
CYCLES, D = 1000, 10




# -- bad input: one line, exit 2, nothing run or written --------------------------------------
# (arguments after `ranvier bench`, a word the message must contain)
BAD_INPUT = {
    "rank list with zero": (["weak-scaling", "mam-benchmark", "--ranks", "0,2"], "--ranks"),
    "rank list with a word": (["weak-scaling", "mam-benchmark", "--ranks", "1,two"], "--ranks"),
    "missing rank list": (["weak-scaling", "mam-benchmark"], "--ranks"),
    "model without areas": (["cycle-times", "dpsnn"], "n_areas"),
    "heterogeneity without areas": (["heterogeneity", "dpsnn", "--knob", "rate_sd", "--values", "0,1"], "n_areas"),
    "unknown workload": (["weak-scaling", "no-such-model", "--ranks", "1"], "no-such-model"),
    "unknown parameter": (["weak-scaling", "mam-benchmark", "--ranks", "1,2", "--set", "tau_x=3"], "--set tau_x"),
    "n_areas set by hand": (["weak-scaling", "mam-benchmark", "--ranks", "1,2", "--set", "n_areas=3"], "--set n_areas"),
    "global interval beyond the delays": (["weak-scaling", "mam-benchmark", "--ranks", "1,2",
                                           "--global-interval", "11"], "--global-interval"),
    "global interval beyond a smaller D": (["weak-scaling", "mam-benchmark", "--ranks", "2", "--set", "delay_ratio=1",
                                            "--global-interval", "2"], "--global-interval"),
    "two-tier as the conventional exchange": (["weak-scaling", "mam-benchmark", "--ranks", "2",
                                               "--conventional-exchange", "two-tier"], "--conventional-exchange"),
    "model refuses a point": (["weak-scaling", "mam-benchmark", "--ranks", "1,2", "--set", "area_size=100"],
                              "--ranks 1"),
    "more threads than neurons": (["weak-scaling", "mam-benchmark", "--ranks", "2", "--set", "area_size=100",
                                   "--set", "K=10", "--threads", "200"], "--threads"),
    "duration off the grid": (["weak-scaling", "mam-benchmark", "--ranks", "2", "--duration-ms", "10.05"],
                              "duration_ms"),
    "unknown knob": (["heterogeneity", "mam-benchmark", "--knob", "tau_m", "--values", "1,2"], "--knob"),
    "missing knob": (["heterogeneity", "mam-benchmark", "--values", "1,2"], "--knob"),
    "fractional delay ratio": (["heterogeneity", "mam-benchmark", "--knob", "delay_ratio", "--values", "1,2.5"],
                               "--values"),
    "delay ratio zero": (["heterogeneity", "mam-benchmark", "--knob", "delay_ratio", "--values", "0,5"], "--values"),
    "negative sd": (["heterogeneity", "mam-benchmark", "--knob", "rate_sd", "--values", "0,-0.5"], "--values"),
    "sd not a number": (["heterogeneity", "mam-benchmark", "--knob", "area_size_sd", "--values", "0,wide"], "--values"),
    "empty value": (["heterogeneity", "mam-benchmark", "--knob", "rate_sd", "--values", "0,,1"], "--values"),
    "heterogeneity on one rank": (["heterogeneity", "mam-benchmark", "--knob", "rate_sd", "--values", "0,1",
                                   "--ranks", "1"], "--ranks"),
    "knob also set": (["heterogeneity", "mam-benchmark", "--knob", "rate_sd", "--values", "0,1",
                       "--set", "rate_sd=0.5"], "--set rate_sd"),
    "cycle-times zero ranks": (["cycle-times", "mam-benchmark", "--ranks", "0"], "--ranks"),
    "cycle-times too short": (["cycle-times", "mam-benchmark", "--duration-ms", "1"], "--duration-ms"),
    "cycle-times n_areas set": (["cycle-times", "mam-benchmark", "--set", "n_areas=4"], "--set n_areas"),
}


@pytest.mark.parametrize("case", BAD_INPUT, ids=list(BAD_INPUT))
def test_bad_input_is_one_line_exit_2_before_anything_runs(case, tmp_path, capsys, monkeypatch):
    def no_run(*args, **kwargs):
        raise AssertionError("a benchmark ran despite bad input")
    monkeypatch.setattr(bench_areas, "run_worker", no_run)
    args, word = BAD_INPUT[case]
    out = tmp_path / "out"
    assert_bad_input(["bench", *args, "--out", str(out)], word, out, capsys)


def test_knob_values_are_parsed_per_knob():
    assert bench_areas.parse_knob_values("delay_ratio", "1, 2,5,2") == [1, 2, 5]
    assert all(isinstance(v, int) for v in bench_areas.parse_knob_values("delay_ratio", "1,10"))
    assert bench_areas.parse_knob_values("rate_sd", [0, "0.5", 1.0]) == [0.0, 0.5, 1.0]
    assert bench_areas.parse_knob_values("area_size_sd", "0,1e3") == [0.0, 1000.0]
    for knob, values in (("delay_ratio", "3.0"), ("delay_ratio", "-1"), ("rate_sd", "inf"), ("rate_sd", "nan"),
                         ("rate_sd", ""), ("weight_mV", "1")):
        with pytest.raises(ConfigError, match="--values|--knob"):
            bench_areas.parse_knob_values(knob, values)


# -- summaries, tables and plots on synthetic runs ---------------------------------------------
def synthetic_run(ranks, scheme, repeat=1, sync=10.0, comm=5.0, rtf=1.0, delivery=20.0, acf=None, **extra):
    sa = scheme == bench_areas.STRUCTURE_AWARE
    run = {"ranks": ranks, "threads": 1, "scheme": scheme, "D": D if sa else 1, "lumped_D": D, "repeat": repeat,
           "K": 40.0, "real_time_factor": rtf,
           "deliver_us_per_cycle": 3.0, "update_us_per_cycle": 2.0, "collocate_us_per_cycle": 0.5,
           "communicate_us_per_cycle": comm, "synchronize_us_per_cycle": sync, "exchange_us_per_cycle": comm + sync,
           "delivery_ns_per_event": delivery, "exchanges_global": CYCLES // (D if sa else 1),
           "exchanges_local": CYCLES if sa else 0, "bytes_per_cycle": 100.0, "global_bytes_per_cycle": 50.0,
           "cycle_mean_us": 5.5, "cycle_cv": 0.5, "lumped_cv": 0.2, "cv_ratio": 0.4,
           "autocorrelation": acf if acf is not None else [0.0] * 10, "cycle_wait_us": 1.0,
           "histogram": {"cycle": {"edges_s": [1e-6, 2e-6, 3e-6], "counts": [5, repeat]},
                         "lumped": {"edges_s": [1e-5, 2e-5, 4e-5], "counts": [3, 4]}}, **extra}
    run["autocorrelation_lag1"] = run["autocorrelation"][0]
    return run


def weak_runs():
    C, S = bench_areas.CONVENTIONAL, bench_areas.STRUCTURE_AWARE
    rho = [0.5, 0.3, 0.2, 0.1, 0.1, 0.05, 0.0, 0.0, 0.0, 0.0]
    return [
        synthetic_run(1, C, sync=0.1, rtf=0.5), synthetic_run(1, S, sync=0.1, rtf=0.6),
        synthetic_run(2, C, 1, sync=10.0, rtf=1.0, acf=rho), synthetic_run(2, C, 2, sync=14.0, rtf=3.0, acf=[0.3] * 10),
        synthetic_run(2, C, 3, sync=12.0, rtf=2.0, acf=[0.1] * 10),
        synthetic_run(2, S, 1, sync=4.0, comm=1.0, rtf=0.8, delivery=15.0),
        synthetic_run(2, S, 2, sync=5.0, comm=2.0, rtf=0.9, delivery=17.0),
        synthetic_run(2, S, 3, sync=3.0, comm=3.0, rtf=0.7, delivery=16.0),
    ]


def test_summary_gives_medians_minimum_and_mean_autocorrelation():
    summary = bench_areas.summarize_runs(weak_runs())
    assert [(s["ranks"], s["scheme"]) for s in summary] == [
        (1, "conventional"), (1, "structure-aware"), (2, "conventional"), (2, "structure-aware")]
    conv2 = summary[2]
    assert conv2["repeats"] == 3
    assert conv2["synchronize_us_per_cycle"] == 12.0
    assert conv2["rtf_min"] == 1.0 and conv2["rtf_median"] == 2.0
    expected_acf = np.mean([[0.5, 0.3, 0.2, 0.1, 0.1, 0.05, 0, 0, 0, 0], [0.3] * 10, [0.1] * 10], axis=0)
    assert conv2["autocorrelation"] == pytest.approx(expected_acf.tolist())
    assert conv2["histogram"]["cycle"]["counts"] == [5, 3]        # repeat 3 has the median real-time factor
    sa2 = summary[3]
    assert sa2["exchange_us_per_cycle"] == 6.0                      # median of 5, 7, 6
    assert sa2["exchanges_global"] == CYCLES // D and sa2["exchanges_local"] == CYCLES


def test_comparison_puts_measured_ratios_next_to_theory():
    summary = bench_areas.summarize_runs(weak_runs())
    comparison = bench_areas.compare_schemes(summary)
    assert [c["ranks"] for c in comparison] == [2]                # one rank has nothing to synchronise
    c = comparison[0]
    assert c["D"] == D
    assert c["sync_ratio"] == pytest.approx(4.0 / 12.0)
    assert c["exchange_ratio"] == pytest.approx(6.0 / 17.0)
    assert c["sync_ratio_predicted"] == pytest.approx(1 / math.sqrt(D))
    rho = summary[2]["autocorrelation"][:D - 1]
    assert c["sync_ratio_predicted_correlated"] == pytest.approx(theory.correlated_sync_ratio(D, rho))
    assert c["sync_ratio_predicted_correlated"] > c["sync_ratio_predicted"]      # positive correlation
    access = theory.irregular_access(40.0, 2, 1)
    assert (c["f_conv"], c["f_sa"]) == pytest.approx((access["f_conv"], access["f_sa"]))
    assert c["delivery_ratio"] == pytest.approx(16.0 / 20.0)
    assert c["speedup"] == pytest.approx(2.0 / 0.8)
    # one scheme missing: no comparison
    assert bench_areas.compare_schemes([s for s in summary if s["scheme"] == "conventional"]) == []


def test_comparison_without_enough_autocorrelation_lags_leaves_the_correlated_prediction_out():
    runs = [synthetic_run(2, bench_areas.CONVENTIONAL, acf=[0.2, 0.1]), synthetic_run(2, bench_areas.STRUCTURE_AWARE)]
    (c,) = bench_areas.compare_schemes(bench_areas.summarize_runs(runs))
    assert c["sync_ratio_predicted_correlated"] is None
    assert "-" in bench_areas.format_comparison_table([c]).splitlines()[1].split()


def test_tables_have_one_row_per_entry_and_mark_missing_values():
    summary = bench_areas.summarize_runs(weak_runs())
    summary[0]["cycle_wait_us"] = None
    phases = bench_areas.format_phase_table(summary).splitlines()
    assert len(phases) == 1 + len(summary)
    assert "synchronize" in phases[0] and "deliver ns/event" in phases[0]
    assert phases[3].split()[:2] == ["2", "conventional"] and "12.00" in phases[3].split()
    cycles = bench_areas.format_cycle_table(summary).splitlines()
    assert len(cycles) == 1 + len(summary) and cycles[1].split()[-1] == "-"
    comparison = bench_areas.compare_schemes(summary)
    table = bench_areas.format_comparison_table(comparison).splitlines()
    assert "sync ratio" in table[0] and "1/sqrt(D)" in table[0]
    assert table[1].split()[:6] == ["2", "10", "12.00", "4.00", "0.333", "0.316"]
    comparison[0].update(segments_conv=0.5, segments_conv_predicted=0.25)
    delivery = bench_areas.format_delivery_table(comparison).splitlines()
    assert "f_conv" in delivery[0] and "segments/event SA" in delivery[0]
    assert delivery[1].split()[:4] == ["2", "20.00", "16.00", "0.800"]
    assert delivery[1].split()[-3:] == ["0.5000", "(0.2500)", "-"]
    # heterogeneity: the knob's values label the first column
    het = [dict(r, value=0.5, knob="rate_sd") for r in weak_runs() if r["ranks"] == 2]
    assert bench_areas.format_phase_table(bench_areas.summarize_runs(het, "value"), "value", "rate_sd") \
        .splitlines()[0].startswith("rate_sd")


def test_plots_are_written(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    summary = bench_areas.summarize_runs(weak_runs())
    bench_areas.plot_weak_scaling(plt, summary, tmp_path / "weak.png", "weak")
    runs = [dict(synthetic_run(2, scheme, sync=s), knob="delay_ratio", value=v, D=v if scheme != "conventional" else 1)
            for v in (1, 2, 10) for scheme, s in (("conventional", 10.0), ("structure-aware", 10.0 / math.sqrt(v)))]
    het = bench_areas.summarize_runs(runs, "value")
    bench_areas.plot_heterogeneity(plt, het, bench_areas.compare_schemes(het, "value"), "delay_ratio",
                                   tmp_path / "het.png", "het")
    rng = np.random.default_rng(1)
    timers = {scheme: rng.lognormal(-12, 0.3, (2, 400, 5)) for scheme in bench_areas.SCHEMES}
    stats = {scheme: cycle_stats.summarize(t, D=D) for scheme, t in timers.items()}
    times = {scheme: cycle_stats.cycle_times(t) for scheme, t in timers.items()}
    bench_areas.plot_cycle_times(plt, times, stats, tmp_path / "cycles.png", "cycles")
    for name in ("weak.png", "het.png", "cycles.png"):
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC


# -- the plan of runs, with a stand-in worker ----------------------------------------------------
@pytest.fixture
def specs(monkeypatch) -> list:
    """A stand-in worker: records (ranks, threads, spec) of every run and returns a synthetic one."""
    launched = []

    def fake_worker(ranks, threads, spec, workdir, label):
        launched.append((ranks, threads, spec))
        run = synthetic_run(ranks, spec["scheme"], sync=10.0 if spec["scheme"] == bench_areas.CONVENTIONAL else 5.0)
        del run["repeat"]
        return run
    monkeypatch.setattr(bench_areas, "run_worker", fake_worker)
    monkeypatch.setattr(bench_areas, "launch_prefix", lambda ranks, threads: [])     # no mpiexec needed
    return launched


def test_weak_scaling_runs_both_schemes_per_rank_count_with_repeats_outermost(tmp_path, specs, capsys):
    C, S = bench_areas.CONVENTIONAL, bench_areas.STRUCTURE_AWARE
    out = bench_areas.weak_scaling_bench("mam-benchmark", [2, 1], repeats=2, duration_ms=100,
                                         parameters={"area_size": 400, "K": 40}, conventional_exchange="alltoallv",
                                         tier_exchange="alltoallv", global_interval=5, out=tmp_path / "weak")
    assert [(ranks, spec["scheme"]) for ranks, _, spec in specs] == [(1, C), (1, S), (2, C), (2, S)] * 2
    for ranks, threads, spec in specs:
        assert threads == 1 and spec["kind"] == "areas" and spec["duration_ms"] == 100.0
        assert spec["parameters"] == {"n_areas": ranks, "area_size": 400, "K": 40}
        sim = spec["simulation"]
        assert sim["barrier"] is True and sim["overlap"] is False
        # one area has no inter-area delays: two-tier exchanges every cycle there
        D_asked = 5 if ranks == 2 else None
        assert spec["lump_cycles"] == D_asked             # the conventional run is lumped by the same D
        if spec["scheme"] == C:
            assert (sim["exchange"], sim["placement"], sim["global_interval"]) == ("alltoallv", "round-robin", None)
        else:
            assert (sim["exchange"], sim["placement"], sim["tier_exchange"]) == ("two-tier", "by-area", "alltoallv")
            assert sim["global_interval"] == D_asked
    rows = read_csv(out / bench_areas.WEAK_CSV)
    assert [row["repeat"] for row in rows] == ["1"] * 4 + ["2"] * 4
    printed = capsys.readouterr().out
    assert "structure-aware (SA) against conventional (conv)" in printed and "spike delivery" in printed
    assert json.loads((out / bench_areas.WEAK_JSON).read_text())["comparison"][0]["sync_ratio"] == pytest.approx(0.5)


def test_a_config_file_gives_the_model_but_not_the_schemes(tmp_path, specs):
    config = tmp_path / "mam.toml"
    config.write_text('model = "mam-benchmark"\n[parameters]\nn_areas = 7\narea_size = 300\nK = 30\n'
                      '[simulation]\nduration_ms = 50.0\nthreads = 1\nexchange = "two-tier"\nplacement = "balanced"\n'
                      'overlap = true\nbarrier = false\ntier_exchange = "alltoallv"\n')
    bench_areas.heterogeneity_bench(str(config), "rate_sd", "0,1", ranks=2, repeats=1, out=tmp_path / "het")
    assert len(specs) == 4
    for ranks, _, spec in specs:
        assert spec["duration_ms"] == 50.0 and spec["parameters"]["n_areas"] == 2     # areas = ranks, not 7
        assert spec["parameters"]["area_size"] == 300
        sim = spec["simulation"]
        assert sim["overlap"] is False and sim["barrier"] is True     # synchronize needs the barrier
        assert sim["placement"] == ("by-area" if spec["scheme"] == bench_areas.STRUCTURE_AWARE else "round-robin")
        assert sim["tier_exchange"] == "alltoallv"                    # the config's, as --tier-exchange was not given
    assert [spec["parameters"]["rate_sd"] for _, _, spec in specs] == [0.0, 0.0, 1.0, 1.0]


# -- the worker, in process on one rank ---------------------------------------------------------
@pytest.mark.parametrize("scheme", bench_areas.SCHEMES)
def test_worker_measures_phases_exchanges_and_cycle_statistics(scheme, tmp_path):
    from ranvier.core.simulation import PHASES

    parameters = {"n_areas": 2, "area_size": 400, "K": 40}
    settings = bench_areas._scheme_settings(scheme, "allgather", None, None)
    spec = {"kind": "areas", "model": "mam-benchmark", "parameters": parameters, "scheme": scheme,
            "simulation": {"threads": 1, **settings}, "duration_ms": 100.0, "lump_cycles": 5,
            "result": str(tmp_path / "result.json"), "timers": str(tmp_path / "timers.npy")}
    bench_areas.worker(spec)
    m = json.loads((tmp_path / "result.json").read_text())
    timers = np.load(tmp_path / "timers.npy")
    assert timers.shape == (1, CYCLES, len(PHASES))
    assert m["scheme"] == scheme and m["cycles"] == CYCLES and m["ranks"] == 1
    for i, phase in enumerate(PHASES):
        assert m[f"{phase}_us_per_cycle"] == pytest.approx(timers[0, :, i].mean() * 1e6)
    assert m["exchange_us_per_cycle"] == pytest.approx(m["communicate_us_per_cycle"] + m["synchronize_us_per_cycle"])
    structure_aware = scheme == bench_areas.STRUCTURE_AWARE
    # two areas on one rank still have inter-area delays: two-tier exchanges globally every D cycles
    assert m["D"] == (D if structure_aware else 1)
    assert m["exchanges_global"] == CYCLES // m["D"]
    assert m["exchanges_local"] == (CYCLES if structure_aware else 0)
    assert m["lumped_D"] == 5                                    # as the spec asked
    assert m["K"] == pytest.approx(40, rel=0.1)
    assert m["synaptic_events"] > 0 and m["delivery_ns_per_event"] > 0
    assert m["cycle_mean_us"] > 0 and m["transient_cycles"] == 100    # 10 % of 100 ms
    assert len(m["autocorrelation"]) >= 4 and m["autocorrelation_lag1"] == m["autocorrelation"][0]
    assert sum(m["histogram"]["cycle"]["counts"]) == CYCLES - 100
    assert sum(m["histogram"]["lumped"]["counts"]) == (CYCLES - 100) // 5


# -- end to end ----------------------------------------------------------------------------------
@needs_mpiexec
def test_weak_scaling_writes_one_row_per_run_tables_and_a_plot(tmp_path):
    out = tmp_path / "weak"
    done = ranvier_cli("bench", "weak-scaling", "mam-benchmark", "--ranks", "1,2", *SMALL, "--repeats", "1",
                       "--out", out)
    assert done.returncode == 0, done.stderr
    rows = read_csv(out / bench_areas.WEAK_CSV)
    assert list(rows[0]) == bench_areas.RUN_COLUMNS
    assert sorted((row["ranks"], row["scheme"]) for row in rows) == sorted(
        (r, s) for r in ("1", "2") for s in bench_areas.SCHEMES)
    for row in rows:
        assert row["repeat"] == "1" and int(row["cycles"]) == CYCLES
        assert int(row["neurons"]) == 400 * int(row["ranks"])       # one area of 400 per rank
        assert float(row["real_time_factor"]) > 0
        if row["ranks"] == "2":
            sa = row["scheme"] == bench_areas.STRUCTURE_AWARE
            assert row["placement"] == ("by-area" if sa else "round-robin")
            assert int(row["D"]) == (D if sa else 1)
            assert int(row["exchanges_global"]) == CYCLES // int(row["D"])
            assert int(row["exchanges_local"]) == (CYCLES if sa else 0)
            assert float(row["global_bytes_per_cycle"]) > 0
            assert float(row["cycle_mean_us"]) > 0 and row["cycle_wait_us"] != ""
            assert 0 < float(row["segments_per_event"]) <= 1 and 0 < float(row["segments_per_event_predicted"]) <= 1
    result = json.loads((out / bench_areas.WEAK_JSON).read_text())
    (comparison,) = result["comparison"]
    assert comparison["ranks"] == 2 and comparison["D"] == D
    assert comparison["sync_ratio"] > 0
    assert comparison["sync_ratio_predicted"] == pytest.approx(1 / math.sqrt(D))
    assert (out / bench_areas.WEAK_PNG).read_bytes()[:8] == PNG_MAGIC
    assert done.stdout.count("structure-aware") >= 4 and "sync ratio" in done.stdout and "f_sa/f_conv" in done.stdout
    assert len([line for line in done.stderr.splitlines() if "real-time factor" in line]) == len(rows)
    assert str(out / bench_areas.WEAK_CSV) in done.stdout


@needs_mpiexec
def test_heterogeneity_sets_the_knob_and_the_global_interval(tmp_path):
    out = tmp_path / "het"
    done = ranvier_cli("bench", "heterogeneity", "mam-benchmark", "--knob", "delay_ratio", "--values", "2,5",
                       "--ranks", "2", *SMALL, "--repeats", "1", "--out", out)
    assert done.returncode == 0, done.stderr
    rows = read_csv(out / bench_areas.HETERO_CSV)
    assert list(rows[0]) == bench_areas.HETERO_COLUMNS
    assert sorted((row["value"], row["scheme"]) for row in rows) == sorted(
        (v, s) for v in ("2", "5") for s in bench_areas.SCHEMES)
    for row in rows:
        assert row["knob"] == "delay_ratio" and row["ranks"] == "2"
        sa = row["scheme"] == bench_areas.STRUCTURE_AWARE
        assert int(row["D"]) == (int(row["value"]) if sa else 1)     # D follows the knob
        assert int(row["lumped_D"]) == int(row["value"])
        assert int(row["exchanges_global"]) == CYCLES // int(row["D"])
    comparison = json.loads((out / bench_areas.HETERO_JSON).read_text())["comparison"]
    assert [(c["value"], c["D"]) for c in comparison] == [(2, 2), (5, 5)]
    assert (out / bench_areas.HETERO_PNG).read_bytes()[:8] == PNG_MAGIC
    assert done.stdout.splitlines()[3].startswith("delay_ratio")          # the first table, by D


@needs_mpiexec
def test_cycle_times_writes_every_cycle_of_every_rank(tmp_path):
    out = tmp_path / "cycles"
    done = ranvier_cli("bench", "cycle-times", "mam-benchmark", "--ranks", "2", *SMALL, "--out", out)
    assert done.returncode == 0, done.stderr
    rows = read_csv(out / bench_areas.CYCLES_CSV)
    assert len(rows) == len(bench_areas.SCHEMES) * 2 * CYCLES
    assert {(row["scheme"], row["rank"]) for row in rows} == {(s, r) for s in bench_areas.SCHEMES for r in ("0", "1")}
    with np.load(out / bench_areas.CYCLES_NPZ) as f:
        assert f["conventional"].shape == f["structure_aware"].shape == (2, CYCLES, 5)
        assert int(f["D"]) == D
        first = [row for row in rows if row["scheme"] == "conventional" and row["rank"] == "1"][:3]
        compute = f["conventional"][1, :3, :3].sum(axis=1) * 1e6
        assert [float(row["compute_us"]) for row in first] == pytest.approx(compute, abs=1e-3)
    stats = json.loads((out / bench_areas.CYCLES_JSON).read_text())["statistics"]
    for scheme in bench_areas.SCHEMES:
        assert stats[scheme]["ranks"] == 2 and stats[scheme]["D"] == D
        assert len(stats[scheme]["autocorrelation"]) >= D - 1
    assert (out / bench_areas.CYCLES_PNG).read_bytes()[:8] == PNG_MAGIC
    assert done.stdout.count("CV ratio: measured") == 2           # cycle_stats.format_table for both schemes
