"""ranvier.analysis.activity and bench/microcircuit_validation.py on synthetic spike data with known
answers; no engine run."""
from __future__ import annotations

import csv
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from ranvier.analysis import activity as v

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "microcircuit_validation.py"


def load_script():
    spec = importlib.util.spec_from_file_location("microcircuit_validation", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def poisson_trains(rng, n, rate_hz, start_ms, stop_ms, first_id=0):
    """Independent Poisson trains of n neurons: (ids, times), sorted by time."""
    span = stop_ms - start_ms
    counts = rng.poisson(rate_hz * span * 1e-3, size=n)
    ids = np.repeat(np.arange(first_id, first_id + n, dtype=np.int64), counts)
    times = rng.uniform(start_ms, stop_ms, size=ids.size)
    order = np.argsort(times)
    return ids[order], times[order]


# -- the statistics -------------------------------------------------------------------------
def test_poisson_trains_have_cv_and_synchrony_near_one():
    rng = np.random.default_rng(7)
    ids, times = poisson_trains(rng, 2000, 10.0, 0.0, 20000.0)
    stats = v.population_statistics(ids, times, [("P", 0, 2000)], 0.0, 20000.0)["P"]
    assert stats["rate_hz"] == pytest.approx(10.0, rel=0.01)
    assert stats["cv_isi"] == pytest.approx(1.0, abs=0.03)
    assert stats["cv_neurons"] == 2000
    assert stats["synchrony"] == pytest.approx(1.0, abs=0.1)
    assert stats["synchrony_neurons"] == 1000


def test_regular_trains_have_cv_zero():
    rng = np.random.default_rng(1)
    n, period = 50, 25.0
    phases = rng.uniform(0, period, n)
    k = np.arange(400)
    times = (phases[:, None] + period * k[None, :]).ravel()
    ids = np.repeat(np.arange(n), k.size)
    stats = v.population_statistics(ids, times, [("R", 0, n)], 0.0, 10000.0)["R"]
    assert stats["cv_isi"] == pytest.approx(0.0, abs=1e-9)
    assert stats["cv_neurons"] == n
    assert stats["rate_hz"] == pytest.approx(40.0, rel=0.01)


def test_synchronous_population_has_large_synchrony():
    rng = np.random.default_rng(3)
    shared = np.sort(rng.uniform(0, 10000.0, 100))          # one train, fired by every neuron
    n = 200
    ids = np.tile(np.arange(n), shared.size)
    times = np.repeat(shared, n)
    stats = v.population_statistics(ids, times, [("S", 0, n)], 0.0, 10000.0)["S"]
    assert stats["synchrony"] > 100                           # ~ n for a perfectly shared train
    assert stats["cv_isi"] == pytest.approx(1.0, abs=0.2)     # each neuron alone is still Poisson


def test_rates_exact_with_non_contiguous_populations_and_stray_ids():
    pops = [("A", 100, 10), ("B", 5, 5)]                      # B before A in id space
    ids = np.array([100] * 12 + [109] * 8 + [5, 6, 7, 8, 9] + [0, 50, 110, 2**40])   # last four: no population
    times = np.linspace(0.0, 999.0, ids.size)
    rates = v.firing_rates(ids, times, pops, 0.0, 1000.0)
    assert rates == {"A": pytest.approx(20 / 10 / 1.0), "B": pytest.approx(5 / 5 / 1.0)}
    stats = v.population_statistics(ids, times, pops, 0.0, 1000.0)
    assert stats["A"]["spikes"] == 20 and stats["B"]["spikes"] == 5
    assert list(stats) == ["A", "B"]


def test_window_is_half_open():
    pops = [("P", 0, 2)]
    ids = np.array([0, 0, 0, 1, 1])
    times = np.array([99.999, 100.0, 250.0, 299.999, 300.0])
    rates = v.firing_rates(ids, times, pops, 100.0, 300.0)
    # 100.0, 250.0 and 299.999 are in [100, 300): 3 spikes / 2 neurons / 0.2 s
    assert rates["P"] == pytest.approx(3 / 2 / 0.2)
    assert v.population_statistics(ids, times, pops, 100.0, 300.0)["P"]["spikes"] == 3
    with pytest.raises(ValueError, match="empty or invalid window"):
        v.firing_rates(ids, times, pops, 300.0, 300.0)


def test_cv_excludes_neurons_with_too_few_spikes():
    pops = [("P", 0, 4), ("Q", 4, 1)]
    ids = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2, 4, 4])
    times = np.array([0.0, 10.0, 30.0, 0.0, 10.0, 20.0, 30.0, 5.0, 50.0, 1.0, 2.0])
    stats = v.population_statistics(ids, times, pops, 0.0, 100.0)
    # neuron 0: ISIs 10, 20 -> CV 5/15; neuron 1: CV 0; neuron 2 (2 spikes) and 3 (none) excluded
    assert stats["P"]["cv_neurons"] == 2
    assert stats["P"]["cv_isi"] == pytest.approx((1 / 3 + 0.0) / 2)
    assert stats["Q"]["cv_neurons"] == 0 and math.isnan(stats["Q"]["cv_isi"])
    looser = v.cv_isi(ids, times, pops, 0.0, 100.0, min_spikes=2)
    assert looser["P"]["cv_neurons"] == 3 and looser["Q"]["cv_neurons"] == 1
    # spikes outside the window do not count towards a neuron's spikes or intervals
    windowed = v.population_statistics(ids, times, pops, 5.0, 100.0)["P"]
    assert windowed["cv_neurons"] == 1                        # neuron 0 keeps 2 spikes, neuron 1 keeps 3
    assert windowed["cv_isi"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="min_spikes"):
        v.population_statistics(ids, times, pops, 0.0, 100.0, min_spikes=1)


def test_cv_does_not_depend_on_the_order_of_the_spikes():
    rng = np.random.default_rng(11)
    ids, times = poisson_trains(rng, 300, 5.0, 0.0, 5000.0)
    shuffled = rng.permutation(ids.size)
    a = v.population_statistics(ids, times, [("P", 0, 300)], 0.0, 5000.0)
    b = v.population_statistics(ids[shuffled], times[shuffled], [("P", 0, 300)], 0.0, 5000.0)
    assert a["P"]["cv_isi"] == pytest.approx(b["P"]["cv_isi"], rel=1e-12)
    assert a["P"] == pytest.approx(b["P"])


def test_synchrony_histogram_by_hand():
    pops = [("P", 0, 3)]
    ids = np.array([0, 1, 2, 0])
    times = np.array([0.5, 1.0, 4.0, 9.5])
    # window [0, 10): bins [0,3) [3,6) [6,9); 9.5 is in the incomplete last bin, dropped
    # counts 2, 1, 0: mean 1, variance 2/3
    stats = v.synchrony(ids, times, pops, 0.0, 10.0)
    assert stats["P"]["synchrony"] == pytest.approx(2 / 3)
    assert stats["P"]["synchrony_neurons"] == 3
    # the bins start at the window's start
    shifted = v.synchrony(ids + 0, times + 100.0, pops, 100.0, 110.0)
    assert shifted["P"]["synchrony"] == pytest.approx(2 / 3)
    silent = v.synchrony(ids[:0], times[:0], pops, 0.0, 10.0)
    assert math.isnan(silent["P"]["synchrony"])


def test_synchrony_subsample_is_the_first_ids():
    rng = np.random.default_rng(5)
    n = 1500
    ids, times = poisson_trains(rng, 1000, 10.0, 0.0, 10000.0)          # ids 0..999: independent
    shared = np.sort(rng.uniform(0, 10000.0, 100))
    sync_ids = np.tile(np.arange(1000, n), shared.size)                 # ids 1000..1499: synchronous
    ids = np.concatenate([ids, sync_ids])
    times = np.concatenate([times, np.repeat(shared, n - 1000)])
    stats = v.population_statistics(ids, times, [("P", 0, n)], 0.0, 10000.0)["P"]
    assert stats["synchrony_neurons"] == 1000
    assert stats["synchrony"] == pytest.approx(1.0, abs=0.15)
    everyone = v.population_statistics(ids, times, [("P", 0, n)], 0.0, 10000.0, max_neurons=n)["P"]
    assert everyone["synchrony_neurons"] == n and everyone["synchrony"] > 10


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="overlap"):
        v.firing_rates([0], [1.0], [("A", 0, 10), ("B", 5, 10)], 0, 10)
    with pytest.raises(ValueError, match="same length"):
        v.firing_rates([0, 1], [1.0], [("A", 0, 10)], 0, 10)
    with pytest.raises(ValueError, match="repeat"):
        v.firing_rates([0], [1.0], [("A", 0, 10), ("A", 10, 10)], 0, 10)


def test_three_million_spikes_are_fast():
    import time

    rng = np.random.default_rng(0)
    sizes = [20683, 5834, 21915, 5479, 4850, 1065, 14395, 2948]
    pops, first = [], 0
    for name, size in zip(v.MICROCIRCUIT_POPULATIONS, sizes):
        pops.append((name, first, size))
        first += size
    ids = rng.integers(0, first, 3_000_000)
    times = np.sort(rng.uniform(0, 10500.0, ids.size))
    start = time.perf_counter()
    stats = v.population_statistics(ids, times, pops, 500.0, 10500.0)
    assert time.perf_counter() - start < 15.0             # about 1 s here; generous for slow CI
    assert sum(s["spikes"] for s in stats.values()) == np.count_nonzero(times >= 500.0)


# -- the reference and the comparison -------------------------------------------------------
def test_reference_rates():
    ref = v.reference_rates()
    assert list(ref) == list(v.MICROCIRCUIT_POPULATIONS)
    assert ref["L23E"] == 0.903 and ref["L5I"] == 8.633 and ref["L6I"] == 7.829
    ref["L23E"] = 0.0
    assert v.reference_rates()["L23E"] == 0.903             # a copy


def test_reference_rates_agree_with_the_model():
    from ranvier import models

    theirs = getattr(models, "MICROCIRCUIT_REFERENCE_RATES", None)
    if theirs is None:
        pytest.skip("models.MICROCIRCUIT_REFERENCE_RATES not defined (yet)")
    assert dict(theirs) == pytest.approx(v.reference_rates())


@pytest.mark.parametrize("name,factor,passed", [
    ("L23E", 1.10, True), ("L23E", 0.90, True), ("L23E", 1.1001, False), ("L23E", 0.8999, False),
    ("L4I", 1.15, True), ("L4I", 0.85, True), ("L4I", 1.1501, False), ("L4I", 0.8499, False),
])
def test_compare_rates_tolerance_boundaries(name, factor, passed):
    ref = v.reference_rates()
    rates = dict(ref, **{name: ref[name] * factor})
    result = v.compare_rates(rates)
    assert result[name]["passed"] is passed
    assert result[name]["deviation_pct"] == pytest.approx(100 * (factor - 1))
    assert result[name]["tolerance_pct"] == (10.0 if name.endswith("E") else 15.0)
    assert all(r["passed"] for n, r in result.items() if n != name)


def test_compare_rates_missing_extra_and_custom_tolerances():
    ref = v.reference_rates()
    rates = dict(ref, TH=20.0)
    del rates["L5E"]
    rates["L6E"] = math.nan
    result = v.compare_rates(rates)
    assert "TH" not in result and list(result) == list(ref)
    assert result["L5E"]["passed"] is False and result["L5E"]["rate_hz"] is None
    assert result["L6E"]["passed"] is False and result["L6E"]["deviation_pct"] is None
    # own reference and tolerances: a name overrides its class
    custom = v.compare_rates({"X_E": 1.25, "Y_I": 1.25}, reference={"X_E": 1.0, "Y_I": 1.0},
                             tolerances={"E": 10.0, "I": 15.0, "Y_I": 30.0})
    assert custom["X_E"]["passed"] is False and custom["Y_I"]["passed"] is True
    assert custom["Y_I"]["tolerance_pct"] == 30.0
    with pytest.raises(ValueError, match="no tolerance"):
        v.compare_rates({"TH": 1.0}, reference={"TH": 1.0})


def test_aggregate_seeds():
    per_seed = [{"A": {"rate_hz": 1.0, "cv_isi": 0.8, "cv_neurons": 10}},
                {"A": {"rate_hz": 2.0, "cv_isi": math.nan, "cv_neurons": 0}},
                {"A": {"rate_hz": 3.0, "cv_isi": 1.0, "cv_neurons": 12}, "B": {"rate_hz": 5.0}}]
    agg = v.aggregate_seeds(per_seed)
    assert agg["A"]["rate_hz"] == {"mean": 2.0, "sd": 1.0, "n": 3}
    assert agg["A"]["cv_isi"]["mean"] == pytest.approx(0.9) and agg["A"]["cv_isi"]["n"] == 2
    assert agg["A"]["cv_isi"]["sd"] == pytest.approx(np.std([0.8, 1.0], ddof=1))
    assert agg["B"]["rate_hz"]["mean"] == 5.0 and math.isnan(agg["B"]["rate_hz"]["sd"])
    assert agg["B"]["rate_hz"]["n"] == 1
    assert list(agg) == ["A", "B"]


def test_read_spikes_makes_local_sonata_ids_global(tmp_path):
    pops = [("A", 0, 3), ("B", 3, 4)]
    path = tmp_path / "spikes.h5"
    write_sonata(path, {"A": ([2, 0], [1.0, 2.0]), "B": ([3, 0, 1], [0.5, 1.5, 2.5])})
    ids, times = v.read_spikes(path, pops)
    got = sorted(zip(ids.tolist(), times.tolist()))
    assert got == sorted([(2, 1.0), (0, 2.0), (6, 0.5), (3, 1.5), (4, 2.5)])
    with pytest.raises(ValueError, match="outside"):
        v.read_spikes(path, [("A", 0, 3), ("B", 3, 3)])
    with pytest.raises(ValueError, match="not among the populations"):
        v.read_spikes(path, [("A", 0, 3)])
    ids, _ = v.read_spikes(path, [("A", 0, 3), ("B", 3, 4), ("C", 7, 2)])   # C: no group, no spikes
    assert ids.size == 5


# -- the bench script -----------------------------------------------------------------------
def write_sonata(path, spikes: dict) -> None:
    """spikes: {population: (local node ids, times)}, as ranvier's output.write_spikes lays it out."""
    with h5py.File(path, "w") as f:
        group = f.create_group("spikes")
        group.attrs["sorting"] = "by_time"
        for name, (ids, times) in spikes.items():
            ids, times = np.asarray(ids, dtype=np.uint64), np.asarray(times, dtype=np.float64)
            order = np.argsort(times, kind="stable")
            g = group.create_group(name)
            g.create_dataset("node_ids", data=ids[order])
            g.create_dataset("timestamps", data=times[order]).attrs["units"] = "ms"


FAKE_SIZE = 400          # neurons per population of the fake runs (plus a thalamic "TH")


def fake_run(folder: Path, seed: int, factors: dict | None = None, duration_ms: float = 10500.0,
             transient_ms: float = 500.0, populations_file: bool = True) -> list:
    """A result folder like `ranvier run --out` writes: spikes at exactly the reference rates (times
    factors) in [transient, duration), plus transient spikes that the window must leave out."""
    factors = factors or {}
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    names = [*v.MICROCIRCUIT_POPULATIONS, "TH"]
    rates = dict(v.reference_rates(), TH=15.0)
    pops = [[name, i * FAKE_SIZE, FAKE_SIZE] for i, name in enumerate(names)]
    span_s = (duration_ms - transient_ms) * 1e-3
    spikes = {}
    for name, _, size in pops:
        count = round(rates[name] * factors.get(name, 1.0) * size * span_s)
        ids = rng.integers(0, size, count)
        times = np.round(rng.uniform(transient_ms, duration_ms, count), 1)
        times = np.minimum(times, duration_ms - 0.1)
        early = rng.integers(0, size, 500)                   # a burst in the transient
        spikes[name] = (np.concatenate([ids, early]),
                        np.concatenate([times, rng.uniform(0.0, transient_ms - 1.0, early.size)]))
    write_sonata(folder / "spikes.h5", spikes)
    summary = {"model": "microcircuit", "neurons": len(names) * FAKE_SIZE, "synapses": 12345,
               "duration_ms": duration_ms, "real_time_factor": 2.5 + seed / 10, "build_seconds": 3.0 + seed,
               "simulate_seconds": 26.0, "peak_rss_bytes": [200 * 2**20, 100 * 2**20], "threads": 2,
               "ranks": 1, "seed": seed}
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "config.toml").write_text('model = "microcircuit"\n\n[parameters]\nscale = 0.05\n')
    if populations_file:
        (folder / "populations.json").write_text(json.dumps(pops))
    return pops


def test_from_recomputes_and_writes_table_json_csv_png(tmp_path, capsys):
    script = load_script()
    for seed in (1, 2, 3):
        fake_run(tmp_path / "runs" / f"seed-{seed}", seed)
    out = tmp_path / "results"
    status = script.main(["--from", str(tmp_path / "runs"), "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "PASS" in printed and "L23E" in printed and "TH" in printed
    assert "real-time factor" in printed and "peak RSS MiB" in printed
    report = json.loads((out / "validation.json").read_text())
    assert report["passed"] is True and report["seeds"] == [1, 2, 3]
    assert report["settings"]["scale"] == 0.05
    assert list(report["comparison"]) == list(v.MICROCIRCUIT_POPULATIONS)   # TH not compared
    assert "TH" in report["aggregate"]
    for name, ref in v.reference_rates().items():
        rate = report["aggregate"][name]["rate_hz"]
        assert rate["mean"] == pytest.approx(ref, rel=2e-3)       # exact counts: transient left out
        assert rate["n"] == 3
        assert report["comparison"][name]["deviation_pct"] == pytest.approx(0.0, abs=0.2)
    assert report["per_seed"][0]["window_ms"] == [500.0, 10500.0]
    assert report["per_seed"][0]["peak_rss_bytes"] == 200 * 2**20               # max over ranks
    assert report["performance"]["real_time_factor"]["mean"] == pytest.approx(2.7)
    assert report["aggregate"]["L4E"]["cv_isi"]["mean"] == pytest.approx(1.0, abs=0.1)
    assert report["aggregate"]["L4E"]["synchrony"]["mean"] == pytest.approx(1.0, abs=0.2)
    with open(out / "validation.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["population"] for r in rows] == [*v.MICROCIRCUIT_POPULATIONS, "TH"]
    assert rows[0]["passed"] == "True" and rows[-1]["passed"] == "" and rows[-1]["reference_hz"] == ""
    assert float(rows[0]["reference_hz"]) == 0.903 and rows[0]["seeds"] == "3"
    png = (out / "rates.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_from_fails_the_gate_when_a_rate_is_off(tmp_path, capsys):
    script = load_script()
    for seed in (1, 2):
        fake_run(tmp_path / f"seed-{seed}", seed, factors={"L5I": 1.2, "L23E": 0.95})
    status = script.main(["--from", str(tmp_path)])              # results go into the --from folder
    printed = capsys.readouterr().out
    assert status == 1
    assert "FAIL: L5I outside tolerance" in printed
    report = json.loads((tmp_path / "validation.json").read_text())
    assert report["passed"] is False
    assert report["comparison"]["L5I"]["passed"] is False
    assert report["comparison"]["L23E"]["passed"] is True
    assert report["comparison"]["L5I"]["deviation_pct"] == pytest.approx(20.0, abs=0.5)
    assert (tmp_path / "rates.png").exists() and (tmp_path / "validation.csv").exists()


def test_from_with_seeds_and_transient(tmp_path, capsys):
    script = load_script()
    for seed in (1, 2, 5):
        fake_run(tmp_path / f"seed-{seed}", seed)
    status = script.main(["--from", str(tmp_path), "--seeds", "5,1", "--transient-ms", "1500",
                          "--out", str(tmp_path / "r")])
    capsys.readouterr()
    report = json.loads((tmp_path / "r" / "validation.json").read_text())
    assert status == 0 and report["seeds"] == [5, 1]
    assert report["per_seed"][0]["window_ms"] == [1500.0, 10500.0]


def test_populations_from_config_when_no_populations_file(tmp_path):
    script = load_script()
    folder = tmp_path / "seed-1"
    folder.mkdir()
    (folder / "config.toml").write_text('model = "dpsnn"\n\n[parameters]\nneurons = 2048\n')
    assert script.populations_of(folder) == [["F", 0, 410], ["B", 410, 1228], ["I", 1638, 410]]
    (folder / "config.toml").write_text('model = "no-such-model"\n')
    with pytest.raises(script.RunFailed, match="cannot rebuild the populations"):
        script.populations_of(folder)


def test_run_mode_runs_each_seed_then_reports(tmp_path, capsys, monkeypatch):
    script = load_script()
    calls = []

    def fake_subprocess_run(command, **kwargs):
        calls.append((command, kwargs.get("env", {}).get("OMP_NUM_THREADS")))
        seed = int(command[command.index("--seed") + 1])
        folder = Path(command[command.index("--out") + 1])
        fake_run(folder, seed, populations_file=False)
        return subprocess.CompletedProcess(command, 0, "", "")

    pops = [[name, i * FAKE_SIZE, FAKE_SIZE] for i, name in enumerate([*v.MICROCIRCUIT_POPULATIONS, "TH"])]
    monkeypatch.setattr(script.subprocess, "run", fake_subprocess_run)
    monkeypatch.setattr(script, "populations_from_config", lambda folder: pops)
    out = tmp_path / "new" / "val"
    status = script.main(["--scale", "0.05", "--seeds", "3,1", "--duration-ms", "10500", "--threads", "2",
                          "--out", str(out), "--set", "k_scale=0.1", "--set", "input=dc"])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert [c[1] for c in calls] == ["2", "2"]
    first = calls[0][0]
    assert first[1:4] == ["-m", "ranvier", "run"]
    text = " ".join(first[4:])
    assert text == (f"--model microcircuit --set scale=0.05 --set k_scale=0.1 --set input=dc --threads 2 "
                    f"--duration-ms 10500 --seed 3 --out {out / 'seed-3'} --force --quiet")
    assert json.loads((out / "seed-1" / "populations.json").read_text()) == pops
    report = json.loads((out / "validation.json").read_text())
    assert report["seeds"] == [3, 1] and report["settings"]["set"] == ["k_scale=0.1", "input=dc"]
    assert report["per_seed"][0]["wall_seconds"] is not None


def test_run_mode_reports_a_failed_run(tmp_path, capsys, monkeypatch):
    script = load_script()
    monkeypatch.setattr(script.subprocess, "run", lambda command, **kw: subprocess.CompletedProcess(
        command, 2, "", "ranvier: error: unknown model 'microcircuit'; available: [...]\n"))
    status = script.main(["--seeds", "1", "--out", str(tmp_path / "v")])
    err = capsys.readouterr().err
    assert status == 3
    assert "seed 1: ranvier run failed with status 2" in err and "unknown model" in err


@pytest.mark.parametrize("args,message", [
    (["--seeds", "1,x", "--out", "D"], "argument --seeds: must be comma-separated non-negative integers"),
    (["--seeds", "1,1", "--out", "D"], "argument --seeds: repeats a seed"),
    (["--seeds", "", "--out", "D"], "argument --seeds: must be comma-separated"),
    (["--seeds", "1,2"], "--out DIR is required"),
    (["--from", "{tmp}/missing"], "--from '{tmp}/missing': no such folder"),
    (["--from", "{tmp}"], "--from '{tmp}': no seed-<N> run folders in it"),
    (["--from", "{tmp}", "--seeds", "4"], "no run folder {tmp}/seed-4"),
    (["--from", "{tmp}", "--set", "k_scale=0.1"], "--set only apply to new runs"),
    (["--out", "D", "--set", "k_scale"], "argument --set: must be KEY=VALUE"),
    (["--out", "D", "--set", "scale=2"], "set the scale with --scale"),
    (["--out", "D", "--scale", "-1"], "argument --scale: must be a positive number"),
    (["--out", "D", "--duration-ms", "400"], "--transient-ms 500 must be below --duration-ms 400"),
    (["--out", "D", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_cli_argument_errors_are_one_line(tmp_path, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("microcircuit_validation: error: ")
    assert message.replace("{tmp}", str(tmp_path)) in lines[0]
    assert done.stdout == ""
    assert not (tmp_path / "D").exists()
