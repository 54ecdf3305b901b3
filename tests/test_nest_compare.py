"""bench/nest_compare.py without NEST and without the engine: arguments, the model's arithmetic,
the tables and the files. (The harness itself runs both simulators; see docs/nest-comparison.md.)"""
from __future__ import annotations

import csv
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load():
    spec = importlib.util.spec_from_file_location("nest_compare", ROOT / "bench" / "nest_compare.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("nest_compare", module)
    spec.loader.exec_module(module)
    return module


nc = _load()


# -- arguments ------------------------------------------------------------------------------
def test_defaults_and_values():
    a = nc.parse_args(["microcircuit", "--scale", "0.1", "--threads", "2", "--duration-ms", "1000",
                       "--transient-ms", "500", "--seed", "1"])
    assert (a.models, a.scale, a.threads, a.duration_ms, a.transient_ms, a.seed) == \
        (["microcircuit"], 0.1, 2, 1000.0, 500.0, 1)
    assert a.k_scale is None and a.input is None and a.repeats == 1 and a.out is None
    assert a.nest_implementation == "ours" and (a.neurons, a.synapses_per_neuron) == (2048, 1125)
    w = nc.workload(a)
    assert w["k_scale"] == 1.0 and not w["k_scale_given"] and w["input"] == "poisson"
    assert w["model"] == "microcircuit" and w["nest_implementation"] == "ours"
    assert list(nc.workloads(a)) == ["microcircuit"]


@pytest.mark.parametrize("models, expected", [
    (["dpsnn"], ["dpsnn"]), (["all"], ["microcircuit", "dpsnn"]),
    (["dpsnn", "microcircuit"], ["dpsnn", "microcircuit"]),
    (["microcircuit", "all", "dpsnn"], ["microcircuit", "dpsnn"]),
])
def test_models_in_order_all_expanded(models, expected):
    a = nc.parse_args([*models, "--neurons", "500", "--synapses-per-neuron", "50", "--threads", "1"])
    assert a.models == expected
    ws = nc.workloads(a)
    assert list(ws) == expected
    if "dpsnn" in ws:
        d = ws["dpsnn"]
        assert (d["model"], d["neurons"], d["synapses_per_neuron"], d["threads"]) == ("dpsnn", 500, 50, 1)
        assert d["plastic"] is False and d["read_weights"] is False and d["sets"] == []
        assert d["nest_neuron"] == "aeif_psc_delta" and d["transient_ms"] == 500.0


@pytest.mark.parametrize("argv, message", [
    (["microcircuit", "--scale", "0"], "--scale must lie in (0, 1]"),
    (["microcircuit", "--scale", "1.5"], "--scale must lie in (0, 1]"),
    (["microcircuit", "--scale", "nan"], "--scale must lie in (0, 1]"),
    (["microcircuit", "--k-scale", "0"], "--k-scale must lie in (0, 1]"),
    (["microcircuit", "--k-scale", "2"], "--k-scale must lie in (0, 1]"),
    (["microcircuit", "--threads", "0"], "--threads must be at least 1"),
    (["microcircuit", "--duration-ms", "-5"], "--duration-ms must be positive"),
    (["microcircuit", "--duration-ms", "100.05"], "multiple of the resolution"),
    (["microcircuit", "--duration-ms", "200", "--transient-ms", "200"], "--transient-ms must lie in [0,"),
    (["microcircuit", "--transient-ms", "-1"], "--transient-ms must lie in [0,"),
    (["microcircuit", "--seed", "0"], "--seed must lie in [1,"),
    (["microcircuit", "--seed", str(2**31)], "--seed must lie in [1,"),
    (["microcircuit", "--repeats", "0"], "--repeats must be at least 1"),
    (["microcircuit", "--skip-nest", "--skip-ranvier"], "leave nothing to run"),
    (["dpsnn", "--neurons", "2"], "--neurons must be at least 3"),
    (["dpsnn", "--neurons", "1000"], "--synapses-per-neuron must lie in [0, --neurons = 1000)"),
    (["all", "--neurons", "1000"], "--synapses-per-neuron 100"),
    (["dpsnn", "--nest-implementation", "inm6"], "applies to the microcircuit only"),
    (["microcircuit", "--nest-implementation", "inm6", "--scale", "0.0002"], "rounds L5I to no neuron"),
])
def test_bad_arguments_are_refused_clearly(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        nc.parse_args(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_unknown_model_and_input_are_refused(capsys):
    with pytest.raises(SystemExit):
        nc.parse_args(["brunel"])
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        nc.parse_args(["microcircuit", "--nest-implementation", "nest-examples"])
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        nc.parse_args(["microcircuit", "--input", "noise"])
    assert "invalid choice" in capsys.readouterr().err


def test_out_must_be_a_folder(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(SystemExit):
        nc.parse_args(["microcircuit", "--out", str(f)])
    assert "is not a folder" in capsys.readouterr().err


def test_ranvier_command_passes_k_scale_and_input_only_when_given():
    a = nc.parse_args(["microcircuit", "--scale", "0.1", "--threads", "2", "--duration-ms", "1000", "--seed", "3"])
    cmd = nc.ranvier_command(nc.workload(a), Path("/tmp/o"))
    assert cmd[1:4] == ["-m", "ranvier", "run"]
    joined = " ".join(cmd)
    assert "--model microcircuit" in joined and "--set scale=0.1" in joined and "--threads 2" in joined
    assert "--duration-ms 1000.0" in joined and "--seed 3" in joined and "--force" in cmd and "--quiet" in cmd
    assert "k_scale" not in joined and "input" not in joined
    a = nc.parse_args(["microcircuit", "--k-scale", "0.5", "--input", "dc"])
    cmd = nc.ranvier_command(nc.workload(a), Path("/tmp/o"))
    assert "k_scale=0.5" in cmd and 'input="dc"' in cmd


# -- the model's arithmetic ------------------------------------------------------------------
def test_synapse_formula():
    # S = ln(1 - p) / ln(1 - 1/(N_i N_j)); about p N_i N_j for small p
    s = nc.synapses_full(0.1009, 20683, 20683)
    assert s == pytest.approx(math.log(1 - 0.1009) / math.log(1 - 1 / 20683**2), rel=1e-7)   # log1p: exact
    assert s == pytest.approx(-math.log(1 - 0.1009) * 20683**2, rel=1e-6)
    assert nc.synapses_full(0.0, 10, 10) == 0.0
    assert nc.synapses_full(0.01, 100, 100) == pytest.approx(math.log(0.99) / math.log(1 - 1e-4))
    with pytest.raises(nc.HarnessError):
        nc.synapses_full(1.0, 10, 10)
    # full scale: about 299 million (docs/workloads/microcircuit.md)
    total = sum(map(sum, nc.synapse_numbers(1.0)))
    assert 298.5e6 < total < 299.3e6


def test_scaled_synapse_numbers():
    full = [[nc.synapses_full(nc.P[i][j], nc.N_FULL[i], nc.N_FULL[j]) for j in range(8)] for i in range(8)]
    for scale, k in ((0.1, 1.0), (0.05, 0.5), (1.0, 0.1)):
        numbers = nc.synapse_numbers(scale, k)
        for i in range(8):
            for j in range(8):
                assert numbers[i][j] == round(full[i][j] * scale * k)
                assert isinstance(numbers[i][j], int)
    assert nc.synapse_numbers(0.1)[0][5] == 0        # p = 0: L5I -> L2/3E


def test_population_sizes():
    assert nc.population_sizes(1.0) == list(nc.N_FULL) and sum(nc.N_FULL) == 77169
    assert nc.population_sizes(0.1) == [2068, 583, 2192, 548, 485, 106, 1440, 295]
    assert nc.population_sizes(0.0001) == [2, 1, 2, 1, 1, 1, 1, 1]      # at least 1, as Ranvier
    assert nc.external_indegrees(1.0) == list(nc.K_EXT_FULL)
    assert nc.external_indegrees(0.1) == [160, 150, 210, 190, 200, 190, 290, 210]
    assert nc.external_indegrees(0.013) == [21, 20, 27, 25, 26, 25, 38, 27]


def test_psp_to_psc_factor():
    # 0.15 mV -> about 87.8 pA (docs/workloads/microcircuit.md)
    assert 0.15 * nc.psc_per_psp() == pytest.approx(87.81, abs=0.01)
    # the factor is the inverse of the peak of the PSP of a 1 pA exponential current,
    # V(t) = tau_s tau_m / (C (tau_m - tau_s)) (exp(-t/tau_m) - exp(-t/tau_s))
    tau_m, tau_s, c = 10.0, 0.5, 250.0
    peak = max(tau_s * tau_m / (c * (tau_m - tau_s)) * (math.exp(-x / tau_m) - math.exp(-x / tau_s))
               for x in (i * 1e-4 for i in range(1, 100000)))
    assert nc.psc_per_psp(tau_m, tau_s, c) == pytest.approx(1.0 / peak, rel=1e-5)


def test_mean_weights():
    w = nc.mean_weights_pA()
    base = 0.15 * nc.psc_per_psp()
    assert w[0][2] == pytest.approx(2 * base)               # L4E -> L2/3E doubled
    assert w[2][0] == pytest.approx(base)
    assert w[0][1] == pytest.approx(-4 * base)              # inhibitory: g = -4
    assert all(w[i][j] > 0 for i in range(8) for j in (0, 2, 4, 6))
    assert all(w[i][j] < 0 for i in range(8) for j in (1, 3, 5, 7))


def test_dc_compensation_arithmetic():
    assert nc.dc_compensation_pA(1.0) == [0.0] * 8
    w, k = nc.mean_weights_pA(), nc.indegrees_full()
    w_ext = 0.15 * nc.psc_per_psp()
    kk = 0.25
    dc = nc.dc_compensation_pA(kk)
    for i in range(8):
        rec = sum(w[i][j] * k[i][j] * nc.REFERENCE_RATES_HZ[p] for j, p in enumerate(nc.POPULATIONS))
        ext = w_ext * nc.K_EXT_FULL[i] * 8.0
        assert dc[i] == pytest.approx(0.001 * 0.5 * (1 - math.sqrt(kk)) * (rec + ext))
    # K_full = S_full / N_i
    assert k[0][0] == pytest.approx(nc.synapses_full(0.1009, 20683, 20683) / 20683)
    # the mean input with scaled in-degree and weight plus the DC equals the full one
    for i in range(8):
        full = sum(w[i][j] * k[i][j] * nc.REFERENCE_RATES_HZ[p] for j, p in enumerate(nc.POPULATIONS)) \
            + w_ext * nc.K_EXT_FULL[i] * 8.0
        scaled = sum(w[i][j] / math.sqrt(kk) * k[i][j] * kk * nc.REFERENCE_RATES_HZ[p]
                     for j, p in enumerate(nc.POPULATIONS)) + w_ext / math.sqrt(kk) * nc.K_EXT_FULL[i] * kk * 8.0
        assert 0.001 * 0.5 * scaled + dc[i] == pytest.approx(0.001 * 0.5 * full)
    # hand check, L2/3E external part alone: 87.81 pA * 1600 * 8 Hz * 0.5 ms = 562 pA at k = 1
    assert nc.dc_input_pA(1.0)[0] == pytest.approx(0.001 * 0.5 * 87.8085 * 1600 * 8, rel=1e-4)
    with pytest.raises(nc.HarnessError):
        nc.dc_compensation_pA(0.0)


# -- tables ----------------------------------------------------------------------------------
def _fake(name, construction, simulate, rss, synapses, rates):
    return {"simulator": name, "neurons": 7717, "synapses": synapses, "construction_s": construction,
            "simulate_s": simulate, "real_time_factor": simulate / 1.0, "peak_rss_bytes": rss,
            "bytes_per_synapse": rss / synapses, "rates_hz": rates, "runs": []}


NEST = _fake("NEST 3.10.0", 12.0, 26.0, 1500 * 2**20, 29_888_096, dict(zip(nc.POPULATIONS, [0.9] * 8)))
RANVIER = _fake("Ranvier 0.1.0", 3.0, 6.5, 500 * 2**20, 29_888_096, dict(zip(nc.POPULATIONS, [1.0] * 8)))


def test_ratio_and_deviation():
    assert nc.ratio(6.0, 3.0) == 2.0
    assert nc.ratio(None, 3.0) is None and nc.ratio(1.0, None) is None and nc.ratio(1.0, 0) is None
    assert nc.deviation_pct(1.1, 1.0) == pytest.approx(10.0)
    assert nc.deviation_pct(None, 1.0) is None


def test_comparison_rows_from_fake_results():
    rows = {r["key"]: r for r in nc.comparison_rows(NEST, RANVIER)}
    assert rows["construction_s"]["ratio"] == pytest.approx(4.0)
    assert rows["simulate_s"]["ratio"] == pytest.approx(4.0)
    assert rows["real_time_factor"]["ratio"] == pytest.approx(4.0)
    assert rows["peak_rss_mib"]["nest"] == pytest.approx(1500) and rows["peak_rss_mib"]["ratio"] == pytest.approx(3)
    assert rows["bytes_per_synapse"]["ranvier"] == pytest.approx(500 * 2**20 / 29_888_096)
    assert rows["synapses"]["ratio"] == 1.0
    assert all(r["reference"] is None for r in rows.values())


def test_comparison_table_text():
    text = nc.format_comparison(NEST, RANVIER)
    lines = text.splitlines()
    assert lines[0].split()[:1] == ["figure"] and "NEST 3.10.0" in lines[0] and "NEST / Ranvier" in lines[0]
    line = next(x for x in lines if x.startswith("network construction (s)"))
    assert line.split()[-3:] == ["12.00", "3.00", "4.00"]
    line = next(x for x in lines if x.startswith("synapses"))
    assert line.split()[-3:] == ["29,888,096", "29,888,096", "1.00"]
    line = next(x for x in lines if x.startswith("peak resident memory (MiB)"))
    assert line.split()[-3:] == ["1500", "500", "3.00"]
    # every line the same width: columns aligned
    assert len({len(x) for x in lines[:2]}) == 1


def test_comparison_with_one_side_missing():
    text = nc.format_comparison(None, RANVIER)
    line = next(x for x in text.splitlines() if x.startswith("simulation wall (s)"))
    assert line.split()[-3:] == ["n/a", "6.50", "n/a"]


def test_reference_columns_at_full_scale():
    ref = nc.reference_nest_figures()
    assert ref["real_time_factor"] == 260.0 and ref["construction_s"] == 120.0
    assert ref["peak_rss_mib"] == pytest.approx(14.5e9 / 2**20)
    text = nc.format_comparison(NEST, RANVIER, ref)
    assert "NEST reference" in text and "reference / Ranvier" in text
    line = next(x for x in text.splitlines() if x.startswith("real-time factor"))
    assert line.split()[-2:] == ["260.000", f"{260.0 / 6.5:.2f}"]


def test_rates_table_deviation_from_reference():
    rows = nc.rate_rows(NEST, RANVIER)
    assert [r["population"] for r in rows] == list(nc.POPULATIONS)
    l23e = rows[0]
    assert l23e["reference"] == 0.903
    assert l23e["nest_dev_pct"] == pytest.approx(100 * (0.9 - 0.903) / 0.903)
    assert l23e["ranvier_dev_pct"] == pytest.approx(100 * (1.0 - 0.903) / 0.903)
    assert l23e["ratio"] == pytest.approx(0.9)
    text = nc.format_rates(NEST, RANVIER)
    line = next(x for x in text.splitlines() if x.startswith("L4E"))
    assert line.split() == ["L4E", "4.414", "0.900", f"{100 * (0.9 - 4.414) / 4.414:+.1f}", "1.000",
                            f"{100 * (1 - 4.414) / 4.414:+.1f}", "0.90"]


def test_report_mentions_reference_only_at_full_scale():
    a = nc.parse_args(["microcircuit", "--scale", "0.1"])
    assert "NEST reference" not in nc.report(nc.workload(a), NEST, RANVIER, [])
    a = nc.parse_args(["microcircuit", "--scale", "1"])
    text = nc.report(nc.workload(a), NEST, RANVIER, ["a note"])
    assert "NEST reference" in text and "260 s per simulated second" in text and text.endswith("a note")


def test_aggregate_repeats():
    runs = [dict(NEST, construction_s=c, simulate_s=s, real_time_factor=s, peak_rss_bytes=m)
            for c, s, m in ((1.0, 5.0, 100), (3.0, 4.0, 300), (2.0, 9.0, 200))]
    agg = nc.aggregate(runs)
    assert agg["construction_s"] == 2.0 and agg["simulate_s"] == 5.0 and agg["real_time_factor_min"] == 4.0
    assert agg["peak_rss_bytes"] == 300 and agg["repeats"] == 3
    assert agg["rates_hz"]["L23E"] == pytest.approx(0.9)
    assert nc.aggregate([]) is None


def test_output_files(tmp_path):
    a = nc.parse_args(["microcircuit", "--scale", "0.1", "--out", str(tmp_path)])
    nc.write_outputs(tmp_path, [nc.model_record(nc.workload(a), NEST, RANVIER, ["m"])], ["n"])
    record = json.loads((tmp_path / "nest_compare.json").read_text())
    mc = record["models"]["microcircuit"]
    assert mc["workload"]["scale"] == 0.1 and mc["notes"] == ["m"] and record["notes"] == ["n"]
    assert mc["reference_rates_hz"]["L5I"] == 8.633 and mc["reference_nest"] is None
    rows = list(csv.DictReader((tmp_path / "nest_compare.csv").read_text().splitlines()))
    assert list(rows[0]) == list(nc.CSV_FIELDS)
    by = {r["figure"]: r for r in rows}
    assert float(by["construction_s"]["nest_over_ranvier"]) == pytest.approx(4.0)
    assert by["construction_s"]["reference"] == "" and by["construction_s"]["model"] == "microcircuit"
    assert float(by["rate_L23E_hz"]["reference"]) == 0.903
    assert len(rows) == len(nc.FIGURES) + 8 == len(record["combined"])


DPSNN_NEST = _fake("NEST 3.10.0", 10.0, 16.0, 2000 * 2**20, 23_041_107,
                   {"F": 2.96, "B": 2.39, "I": 5.47, "E": 2.53, "all": 3.12})
DPSNN_RANVIER = _fake("Ranvier 0.1.0", 0.5, 2.0, 200 * 2**20, 23_032_064,
                      {"F": 2.92, "B": 2.37, "I": 5.45, "E": 2.51, "all": 3.10})


def _records():
    a = nc.parse_args(["all", "--scale", "0.1", "--neurons", "20480"])
    ws = nc.workloads(a)
    resolved = {"sizes": {"F": 4096, "B": 12288, "I": 4096}, "parameters": {}}
    return [nc.model_record(ws["microcircuit"], NEST, RANVIER, []),
            nc.model_record(ws["dpsnn"], DPSNN_NEST, DPSNN_RANVIER, [], resolved)]


def test_combined_rows_and_table():
    records = _records()
    rows = nc.combined_rows(records)
    assert [r["model"] for r in rows] == ["microcircuit"] * (len(nc.FIGURES) + 8) + ["dpsnn"] * (len(nc.FIGURES) + 5)
    by = {(r["model"], r["figure"]): r for r in rows}
    assert by["dpsnn", "construction_s"]["nest_over_ranvier"] == pytest.approx(20.0)
    assert by["dpsnn", "peak_rss_mib"]["nest_over_ranvier"] == pytest.approx(10.0)
    assert by["dpsnn", "rate_I_hz"]["nest_over_ranvier"] == pytest.approx(5.47 / 5.45)
    assert by["dpsnn", "rate_I_hz"]["reference"] is None and by["microcircuit", "rate_L4E_hz"]["reference"] == 4.414
    text = nc.format_combined(records)
    lines = text.splitlines()
    assert lines[0].split() == ["model", "figure", "NEST", "Ranvier", "NEST", "/", "Ranvier"]
    assert lines[2].startswith("microcircuit  network construction (s)")
    start = next(k for k, x in enumerate(lines) if x.startswith("dpsnn"))
    assert lines[start].split()[-3:] == ["10.00", "0.50", "20.00"]
    assert any(x.split()[:3] == ["rate", "F", "(Hz)"] and x.split()[-1] == f"{2.96 / 2.92:.2f}" for x in lines)
    assert len({len(x) for x in lines[:2]}) == 1
    # the model is named once, on its first row
    assert sum(x.startswith("dpsnn") for x in lines) == 1


def test_dpsnn_report():
    records = _records()
    w = records[1]["workload"]
    text = nc.report_dpsnn(w, records[1]["resolved"], DPSNN_NEST, DPSNN_RANVIER, ["a note"])
    assert "20,480 neurons (F 4,096, B 12,288, I 4,096)" in text and text.endswith("a note")
    line = next(x for x in text.splitlines() if x.startswith("B "))
    assert line.split() == ["B", "2.390", "2.370", f"{2.39 / 2.37:.2f}"]


def test_ranvier_rates_from_spike_file(tmp_path):
    h5py = pytest.importorskip("h5py")
    import numpy as np
    # a run of an unknown model: sizes inferred from the whole-run rates of summary.json
    with h5py.File(tmp_path / "spikes.h5", "w") as f:
        for name, times in (("A", [10.0, 150.0, 160.0, 199.9]), ("B", [50.0])):
            g = f.create_group(f"spikes/{name}")
            g.create_dataset("timestamps", data=np.array(times))
            g.create_dataset("node_ids", data=np.zeros(len(times), dtype=np.uint64))
    summary = {"model": "not-a-model", "duration_ms": 200.0, "rates_hz": {"A": 4 / 2 / 0.2, "B": 1 / 5 / 0.2}}
    rates = nc.ranvier_rates(tmp_path, summary, 100.0)
    assert rates == {"A": pytest.approx(3 / 2 / 0.1), "B": 0.0}


def test_nest_missing_message():
    text = nc.NEST_MISSING
    assert "pip install nest-simulator" in text and "pip install .[nest]" in text and "unavailable" in text


# -- NEST missing or broken ------------------------------------------------------------------
FAKE_RANVIER_RUN = dict(RANVIER, runs=None)


def test_nest_not_installed_still_runs_ranvier(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(nc, "run_ranvier", lambda w, folder: dict(FAKE_RANVIER_RUN))
    assert nc.main(["microcircuit", "--scale", "0.1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("NEST is not installed") == 1 and "pip install nest-simulator" in out
    line = next(x for x in out.splitlines() if x.startswith("simulation wall (s)"))
    assert line.split()[-3:] == ["n/a", "6.50", "n/a"]
    record = json.loads((tmp_path / "nest_compare.json").read_text())["models"]["microcircuit"]
    assert record["nest"] is None and record["ranvier"]["simulate_s"] == 6.5


def test_nest_not_installed_with_skip_ranvier_fails(monkeypatch, capsys):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert nc.main(["microcircuit", "--skip-ranvier"]) == 1
    assert "NEST is not installed" in capsys.readouterr().err


def test_skip_nest_says_nothing_about_nest(monkeypatch, capsys):
    monkeypatch.setattr(nc, "run_ranvier", lambda w, folder: dict(FAKE_RANVIER_RUN))
    monkeypatch.setattr(nc, "run_nest", lambda w, folder: pytest.fail("NEST ran despite --skip-nest"))
    assert nc.main(["microcircuit", "--skip-nest"]) == 0
    assert "not installed" not in capsys.readouterr().out


def test_broken_nest_import_is_reported(monkeypatch, tmp_path):
    fake = tmp_path / "fake"
    (fake / "nest").mkdir(parents=True)
    (fake / "nest" / "__init__.py").write_text("raise ImportError('libnest.so: cannot open shared object file')\n")
    monkeypatch.setenv("PYTHONPATH", str(fake))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    a = nc.parse_args(["microcircuit", "--scale", "0.1"])
    with pytest.raises(nc.NestUnavailable, match="libnest.so"):
        nc.run_nest(nc.workload(a), tmp_path / "run")


def test_inm6_package_missing_stops_with_a_clear_message(monkeypatch, capsys):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "microcircuit" else object())
    monkeypatch.setattr(nc, "run_nest", lambda w, folder: pytest.fail("ran without the package"))
    monkeypatch.setattr(nc, "run_ranvier", lambda w, folder: pytest.fail("ran without the package"))
    assert nc.main(["microcircuit", "--nest-implementation", "inm6"]) == 1
    err = capsys.readouterr().err
    assert "INM-6 microcircuit package is not installed" in err and "pip install microcircuit" in err
    assert "--nest-implementation ours" in err


def test_nest_environment_pins_threads_like_ranvier():
    env = nc.nest_env(2, base={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "OMP_NUM_THREADS": "2", "OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}
    env = nc.nest_env(1, base={"OMP_PROC_BIND": "false", "OMP_NUM_THREADS": "8"})
    assert env["OMP_PROC_BIND"] == "false" and env["OMP_NUM_THREADS"] == "1"


def test_module_imports_neither_nest_nor_ranvier():
    import subprocess
    code = ("import importlib.util, sys; s = importlib.util.spec_from_file_location('m', sys.argv[1]); "
            "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
            "print(sorted(x for x in ('nest', 'ranvier', 'h5py') if x in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "bench" / "nest_compare.py")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"



def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    import ast
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_harnesses_import_one_way():
    """nest_compare.py imports stdp_compare.py (its dpsnn children) and harness.py; stdp_compare.py
    imports harness.py only; harness.py neither: no cycle, not even inside a function."""
    bench = ROOT / "bench"
    mine = {"nest_compare", "stdp_compare", "harness"}
    assert _imported_modules(bench / "nest_compare.py") & mine == {"stdp_compare", "harness"}
    assert _imported_modules(bench / "stdp_compare.py") & mine == {"harness"}
    assert _imported_modules(bench / "harness.py") & mine == set()
    for name in mine:
        assert "sys.modules" not in (bench / f"{name}.py").read_text(), name

# -- the NEST side's workload is Ranvier's ----------------------------------------------------
@pytest.mark.parametrize("scale, k_scale, input_", [(0.05, 1.0, "poisson"), (0.1, 0.1, "poisson"),
                                                    (0.1, 0.25, "dc"), (0.02, 0.5, "poisson")])
def test_same_workload_as_ranvier_model(scale, k_scale, input_):
    models = pytest.importorskip("ranvier.models")
    if "microcircuit" not in models.REGISTRY:
        pytest.skip("ranvier has no microcircuit model yet")
    net = models.build("microcircuit", scale=scale, k_scale=k_scale, input=input_)
    pops = {p.name: p for p in net.populations}
    assert [p.name for p in net.populations] == list(nc.POPULATIONS)
    assert [pops[p].size for p in nc.POPULATIONS] == nc.population_sizes(scale)
    # DC: compensation (k < 1) plus, with input "dc", the mean external current
    dc = nc.dc_compensation_pA(k_scale) if k_scale < 1 else [0.0] * 8
    if input_ == "dc":
        dc = [a + b for a, b in zip(dc, nc.dc_input_pA(k_scale))]
    for i, name in enumerate(nc.POPULATIONS):
        assert pops[name].params["I_e_pA"] == pytest.approx(dc[i], rel=1e-6, abs=1e-9)   # S_ij: log1p here
        assert pops[name].params["V0_mean_mV"] == nc.V0_MEAN_MV[i]
    numbers = nc.synapse_numbers(scale, k_scale)
    weights = nc.mean_weights_pA()
    seen = 0
    for pr in net.projections:
        i, j = nc.POPULATIONS.index(pr.target), nc.POPULATIONS.index(pr.source)
        assert abs(pr.total_synapses - numbers[i][j]) <= 1          # S_ij evaluated with log1p here
        assert pr.weight == pytest.approx(weights[i][j] / math.sqrt(k_scale))
        assert pr.weight_sd == pytest.approx(0.1 * abs(weights[i][j]) / math.sqrt(k_scale))
        assert pr.delay_mean_ms == nc.DELAY_MEAN_MS[nc.EXCITATORY[j]]
        seen += 1
    assert seen == sum(1 for row in numbers for n in row if n > 0)
    drives = {d.target: d for d in net.drives}
    if input_ == "poisson":
        for i, name in enumerate(nc.POPULATIONS):
            assert drives[name].n_synapses == nc.external_indegrees(k_scale)[i]
            assert drives[name].rate_hz == 8.0
            assert drives[name].weight == pytest.approx(0.15 * nc.psc_per_psp() / math.sqrt(k_scale))
    else:
        assert not drives
