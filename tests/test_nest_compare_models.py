"""bench/nest_compare.py running both workloads in one invocation, at a tiny size: Ranvier alone
(always), NEST and Ranvier side by side (where `nest` is importable), and the microcircuit of
the INM-6 `microcircuit` package against the harness's own (where that package is installed
too; it is never a dependency)."""
from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--scale", "0.02", "--k-scale", "0.05", "--neurons", "500", "--synapses-per-neuron", "50",
        "--duration-ms", "200", "--transient-ms", "100", "--threads", "1"]
MC_POPULATIONS = ["L23E", "L23I", "L4E", "L4I", "L5E", "L5I", "L6E", "L6I"]
DPSNN_POPULATIONS = ["F", "B", "I", "E", "all"]
FIGURES = ["construction_s", "simulate_s", "real_time_factor", "peak_rss_mib", "bytes_per_synapse", "synapses",
           "neurons"]


def harness(*args, timeout=600):
    return subprocess.run([sys.executable, str(ROOT / "bench" / "nest_compare.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def importable(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def _combined_lines(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = lines.index("All models: NEST / Ranvier of each figure")
    return lines[start:]


def _check_ranvier(rec: dict, populations: list[str]):
    r = rec["ranvier"]
    assert r["construction_s"] > 0 and r["simulate_s"] > 0 and r["peak_rss_bytes"] > 0 and r["synapses"] > 0
    assert r["real_time_factor"] == pytest.approx(r["simulate_s"] / 0.2)
    assert set(populations) <= set(r["rates_hz"])


def test_both_models_ranvier_only(tmp_path):
    out = tmp_path / "out"
    done = harness("all", *TINY, "--skip-nest", "--out", out)
    assert done.returncode == 0, done.stderr
    assert done.stderr.index("microcircuit: Ranvier run") < done.stderr.index("dpsnn: Ranvier run")
    assert "NEST run" not in done.stderr and "not installed" not in done.stdout
    combined = _combined_lines(done.stdout)
    assert sum(x.startswith("microcircuit ") for x in combined) == 1
    assert sum(x.startswith("dpsnn ") for x in combined) == 1
    record = json.loads((out / "nest_compare.json").read_text())
    assert list(record["models"]) == ["microcircuit", "dpsnn"]
    for model, pops in (("microcircuit", MC_POPULATIONS), ("dpsnn", DPSNN_POPULATIONS)):
        rec = record["models"][model]
        assert rec["nest"] is None
        _check_ranvier(rec, pops)
    dpsnn = record["models"]["dpsnn"]
    assert dpsnn["ranvier"]["neurons"] == 500 and dpsnn["resolved"]["sizes"] == {"F": 100, "B": 300, "I": 100}
    assert dpsnn["ranvier"]["runs"][0]["ee_weights_mV"] is None          # not read back here
    assert (out / "dpsnn" / "ranvier" / "result.json").exists()
    assert (out / "microcircuit" / "ranvier" / "run" / "summary.json").exists()


def test_bad_dpsnn_value_is_refused_clearly(tmp_path):
    """A value the dpsnn model refuses (its ConfigError, from stdp_compare.py's `_resolve` child)
    is a HarnessError with the model's line, raised before any run."""
    sys.path.insert(0, str(ROOT / "bench"))
    import nest_compare as nc
    a = nc.parse_args(["dpsnn", *TINY])
    w = dict(nc.workloads(a)["dpsnn"], sets=["stdp_lambda=-1"])
    with pytest.raises(nc.HarnessError, match="'stdp_lambda' must be at least 0"):
        nc.resolve_dpsnn(w, tmp_path / "resolve")


@pytest.mark.skipif(not importable("nest"), reason="needs NEST (pip install nest-simulator)")
def test_both_models_with_nest(tmp_path):
    out = tmp_path / "out"
    done = harness("microcircuit", "dpsnn", *TINY, "--out", out)
    assert done.returncode == 0, done.stderr
    order = [done.stderr.index(f"{m}: {s} run") for m in ("microcircuit", "dpsnn") for s in ("NEST", "Ranvier")]
    assert order == sorted(order)
    # one combined table: both models, the NEST, Ranvier and ratio columns, every figure
    combined = _combined_lines(done.stdout)
    assert combined[3].split() == ["model", "figure", "NEST", "Ranvier", "NEST", "/", "Ranvier"]
    rows = [x for x in combined[5:] if x.strip()]
    assert rows[0].startswith("microcircuit") and sum(x.startswith("dpsnn") for x in rows) == 1
    assert sum("real-time factor" in x for x in rows) == 2 and sum("bytes per synapse" in x for x in rows) == 2
    for pop in ("L5I", "F", "B", "I"):
        line = next(x for x in rows if f"rate {pop} (Hz)" in x)
        assert "n/a" not in line
    record = json.loads((out / "nest_compare.json").read_text())
    assert list(record["models"]) == ["microcircuit", "dpsnn"]
    for model, pops in (("microcircuit", MC_POPULATIONS), ("dpsnn", DPSNN_POPULATIONS)):
        rec = record["models"][model]
        _check_ranvier(rec, pops)
        nest = rec["nest"]
        assert nest["simulator"].startswith("NEST 3.") and nest["synapses"] > 0 and nest["construction_s"] > 0
        by = {r["key"]: r for r in rec["comparison"]}
        assert set(FIGURES) == set(by)
        for key in FIGURES:
            assert by[key]["ratio"] == pytest.approx(by[key]["nest"] / by[key]["ranvier"])
        rates = {r["population"]: r for r in rec["rates"]}
        assert list(rates) == pops
        assert all(r["ratio"] is not None and 0.2 < r["ratio"] < 5 for r in rates.values() if r["ranvier"] > 1)
    mc, dp = record["models"]["microcircuit"], record["models"]["dpsnn"]
    assert mc["nest"]["synapses"] == mc["ranvier"]["synapses"] == 298_883     # fixed totals, same formula
    assert dp["nest"]["neurons"] == dp["ranvier"]["neurons"] == 500
    assert dp["nest"]["synapses"] == pytest.approx(dp["ranvier"]["synapses"], rel=0.05)  # each its own draw
    # the CSV: the combined rows, model first
    rows = list(csv.DictReader((out / "nest_compare.csv").read_text().splitlines()))
    assert {r["model"] for r in rows} == {"microcircuit", "dpsnn"}
    assert len(rows) == len(record["combined"]) == 2 * len(FIGURES) + 8 + 5
    assert all(r["nest_over_ranvier"] != "" for r in rows if r["figure"] in FIGURES)


@pytest.mark.skipif(not (importable("nest") and importable("microcircuit")),
                    reason="needs NEST and the INM-6 microcircuit package (pip install microcircuit)")
def test_inm6_package_gives_the_harness_network(tmp_path):
    """The INM-6 package's model, scaled with its own N_scaling and K_scaling, and the harness's
    PyNEST model draw the same network from NEST's generator (same calls, same order): the same
    synapses and the same spikes for a seed and thread count."""
    args = ["microcircuit", "--scale", "0.02", "--k-scale", "0.1", "--duration-ms", "200", "--transient-ms", "100",
            "--threads", "1", "--skip-ranvier"]
    runs = {}
    for impl in ("ours", "inm6"):
        out = tmp_path / impl
        done = harness(*args, "--nest-implementation", impl, "--out", out)
        assert done.returncode == 0, done.stderr
        runs[impl] = json.loads((out / "nest_compare.json").read_text())["models"]["microcircuit"]["nest"]
    ours, inm6 = runs["ours"], runs["inm6"]
    assert inm6["simulator"].startswith("NEST 3.") and "INM-6 microcircuit" in inm6["simulator"]
    run = inm6["runs"][0]
    assert run["implementation"] == "inm6" and run["package_parameters"]["N_scaling"] == 0.02
    assert run["package_parameters"]["K_scaling"] == 0.1 and run["package_parameters"]["bg_input_type"] == "poisson"
    assert inm6["neurons"] == ours["neurons"] and inm6["synapses"] == ours["synapses"] == run["synapses_planned"]
    assert inm6["runs"][0]["spikes_total"] == ours["runs"][0]["spikes_total"] > 0
    assert inm6["rates_hz"] == ours["rates_hz"]


@pytest.mark.parametrize("skip_ranvier", [False, True])
def test_broken_nest_in_the_dpsnn_child(monkeypatch, tmp_path, capsys, skip_ranvier):
    """`import nest` failing in stdp_compare.py's `_nest` child is NEST_BROKEN, said once: the
    Ranvier side still runs, or, with --skip-ranvier, the harness exits 1."""
    sys.path.insert(0, str(ROOT / "bench"))
    import nest_compare as nc
    fake = tmp_path / "fake"
    (fake / "nest").mkdir(parents=True)
    (fake / "nest" / "__init__.py").write_text("raise ImportError('libnest.so: cannot open shared object file')\n")
    monkeypatch.setenv("PYTHONPATH", str(fake))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    args = ["dpsnn", *TINY, "--out", str(tmp_path / "out")] + (["--skip-ranvier"] if skip_ranvier else [])
    code = nc.main(args)
    captured = capsys.readouterr()
    if skip_ranvier:
        assert code == 1 and "libnest.so" in captured.err and "nothing ran" in captured.err
        return
    assert code == 0, captured.err
    assert captured.out.count("`import nest` failed") == 1 and "libnest.so" in captured.out
    record = json.loads((tmp_path / "out" / "nest_compare.json").read_text())["models"]["dpsnn"]
    assert record["nest"] is None and record["ranvier"]["synapses"] > 0
