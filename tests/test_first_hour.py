"""A user's first hour with the command line, each check a command as a user types it (scaled
down): naming a model, the exchange benchmark's default strategies, durations between two
communication intervals, the population table of summary.json, silent populations in the
summary, and every command the README and docs/ show."""
from __future__ import annotations

import json
import re
import shlex
import sys
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest
import data_sets
from conftest import ROOT, assert_bad_input, needs_mpiexec, read_csv, subprocess_env

import ranvier as rv
from ranvier import cli, models
from ranvier.bench import restore_cpus
from ranvier.core.simulation import EXCHANGES

# dpsnn small enough to build and run in about a second; its communication interval is 1 ms.
DPSNN_TINY = ["--neurons", "1024", "--set", "synapses_per_neuron=100", "--threads", "1", "--energy", "none"]


def ranvier(*args, cwd=None, timeout=240):
    """The `ranvier` console script of this environment, as a user types it (python -m ranvier
    where the script is not installed next to this Python)."""
    import subprocess

    script = Path(sys.executable).parent / "ranvier"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "ranvier"]
    return subprocess.run([*command, *map(str, args)], cwd=cwd, env=subprocess_env(), capture_output=True,
                          text=True, timeout=timeout, check=False, preexec_fn=restore_cpus)


def one_error_line(done) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ranvier: error: ")
    assert "Traceback" not in done.stderr + done.stdout
    return lines[0]


# -- 1. one convention for naming a model ---------------------------------------------------------
def test_a_bare_model_name_runs_that_model(tmp_path):
    done = ranvier("run", "dpsnn", *DPSNN_TINY, "--duration-ms", "20", "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["model"] == "dpsnn" and summary["neurons"] == 1024
    assert 'model = "dpsnn"' in (tmp_path / "out" / "config.toml").read_text()


def test_model_by_positional_name_or_by_flag_is_the_same_run(tmp_path):
    spikes = {}
    for naming, name in (("positional", ["artificial-cells"]), ("flag", ["--model", "artificial-cells"])):
        out = tmp_path / naming
        assert cli.main(["run", *name, "--set", "cells=300", "--set", "targets_per_cell=20", "--duration-ms", "20",
                         "--threads", "1", "--energy", "none", "--quiet", "--out", str(out)]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["model"] == "artificial-cells" and summary["neurons"] == 300
        with h5py.File(out / "spikes.h5", "r") as f:
            spikes[naming] = f["spikes"]["cells"]["node_ids"][()], f["spikes"]["cells"]["timestamps"][()]
    assert spikes["positional"][0].size > 0
    assert all(np.array_equal(a, b) for a, b in zip(spikes["positional"], spikes["flag"]))


def test_a_config_file_and_a_config_file_without_toml_suffix(tmp_path):
    text = (ROOT / "examples" / "dpsnn-small.toml").read_text()
    (tmp_path / "myrun").write_text(text)
    for config in (ROOT / "examples" / "dpsnn-small.toml", "myrun"):
        done = ranvier("run", config, *DPSNN_TINY, "--duration-ms", "10", "--quiet", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "" and done.stderr == ""


# (positional, words the one line must hold)
BAD_NAMES = {
    "misspelt model": ("dpsn", ["'dpsn'", "neither a model name", *models.REGISTRY, "no such file"]),
    "missing .toml": ("nothere.toml", ["nothere.toml", "no such file", "dpsnn"]),
    "missing path with a folder": ("runs/dpsnn", ["runs/dpsnn", "no such file"]),
}


@pytest.mark.parametrize("case", BAD_NAMES, ids=list(BAD_NAMES))
def test_neither_a_model_nor_a_file_is_one_line(case, tmp_path):
    positional, words = BAD_NAMES[case]
    done = ranvier("run", positional, *DPSNN_TINY, "--out", tmp_path / "out", cwd=tmp_path)
    line = one_error_line(done)
    for word in words:
        assert word in line, line
    assert list(tmp_path.iterdir()) == []


def test_a_path_is_a_file_even_when_its_name_is_a_model(tmp_path):
    """'./dpsnn' holds a /: it names a file, and a missing one is 'no such file'."""
    done = ranvier("run", "./dpsnn", *DPSNN_TINY, cwd=tmp_path)
    assert "no such file" in one_error_line(done)


def test_two_different_models_named_are_refused(tmp_path, capsys):
    out = tmp_path / "out"
    assert_bad_input(["run", "dpsnn", "--model", "microcircuit", *DPSNN_TINY, "--out", str(out)],
                     "two models named", out, capsys)


def test_bench_workload_names_follow_the_same_convention(tmp_path, capsys):
    out = tmp_path / "out"
    assert_bad_input(["bench", "exchange", "dpsn", "--ranks", "1", "--out", str(out)], "no such file", out, capsys)
    assert_bad_input(["bench", "exchange", "nothere.toml", "--ranks", "1", "--out", str(out)], "no such file",
                     out, capsys)


def test_run_help_shows_both_ways_of_naming_a_model():
    done = ranvier("run", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "MODEL|CONFIG.toml" in text
    assert "ranvier run dpsnn" in text
    for name in models.REGISTRY:
        assert name in text


# -- every command the README and docs/ show -------------------------------------------------------
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [--flag], ..., a|b and placeholders (DIR, RUN_DIR, EPOCH): notation, not a command to type
SYNOPSIS = re.compile(r"\[|\.\.\.|\||\b[A-Z][A-Z_]+\b")
# prose naming a command, or one of its flags: `ranvier report`, `ranvier bench exchange --mpi-fit`
REFERENCE = re.compile(r"ranvier [a-z]+( [a-z-]+)?( --[a-z-]+)?")


def documented_commands() -> list[tuple[str, str]]:
    """(where, command) for every `ranvier ...` line of a code block, and every inline `ranvier
    ...` span, in the README and docs/; continued lines (a trailing backslash) joined."""
    found = []
    for path in DOCUMENTS:
        text = path.read_text()
        blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
        indented = re.findall(r"(?m)^    (\S.*)$", text)
        lines = "\n".join([*blocks, *indented]).replace("\\\n", " ").splitlines()
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        inline = [m.replace("\n", " ") for m in re.findall(r"`([^`]*ranvier (?:run|bench|energy|report|info)[^`]*)`",
                                                           prose)]
        inline = [command for command in inline if not REFERENCE.fullmatch(command)]
        for command in [line.strip() for line in lines] + inline:
            if re.match(r"(mpiexec .*?)?ranvier (run|bench|energy|report|info)\b", command):
                found.append((path.name, command))
    return list(dict.fromkeys(found))


def ranvier_argv(command: str) -> list[str]:
    """The words after `ranvier` (after mpiexec -n N [-bind-to core]), without the comment."""
    words = shlex.split(command, comments=True)
    return words[words.index("ranvier") + 1:]


def check_documented(argv: list[str]) -> None:
    """What `ranvier ARGV` checks before it runs anything, without running it."""
    from ranvier.io import config as cfgmod
    from ranvier.bench import common, exchange
    from ranvier.cli import run
    from ranvier.core.simulation import EXCHANGES, PLACEMENTS

    try:
        args = cli.make_parser(EXCHANGES, PLACEMENTS).parse_args(argv)
    except SystemExit as e:                 # --help
        assert "--help" in argv and e.code == 0
        return
    if args.command == "run":
        cfg = run.resolve_config(args)
        cfgmod.check_simulation(cfg, models.build(cfg.model, **cfg.parameters))
    elif args.command == "bench" and args.bench_command == "exchange":
        parameters = dict(args.set, **({"neurons": args.neurons} if args.neurons else {}))
        exchange.plan_exchange(args.workload, args.strategies, args.overlap, args.duration_ms, args.threads,
                               parameters)
    elif args.command == "bench" and hasattr(args, "workload"):
        cfg = common.resolve_workload(args.workload)
        common.check_parameters(cfg, dict(args.set))


def test_the_docs_show_commands():
    commands = documented_commands()
    assert len(commands) > 40
    assert any("ranvier run examples/dpsnn-small.toml" in c for _, c in commands)


@pytest.mark.parametrize("where,command", documented_commands())
def test_every_documented_command_is_valid(where, command, capsys, tmp_path, monkeypatch):
    argv = ranvier_argv(command)
    if SYNOPSIS.search(" ".join(argv)):
        pytest.skip("a synopsis")
    # A command that reads a data set (the multi-area model, data/...): skipped with the reason
    # without it; else checked in a folder like the repository's root, whose data/ is the data root.
    if data_sets.missing_for(command):
        pytest.skip(data_sets.missing_for(command))
    if data_sets.needed_by(command):
        data_sets.link_data_root(tmp_path)
        (tmp_path / "examples").symlink_to(ROOT / "examples")
        monkeypatch.chdir(tmp_path)
    # docs/sonata.md: its commands read the network the page's first command writes
    if any(a.startswith("sonata-small/") for a in argv):
        sys.path.insert(0, str(ROOT / "examples" / "sonata"))
        from make_network import write_network
        write_network(tmp_path / "sonata-small")
        monkeypatch.chdir(tmp_path)
    try:
        check_documented(argv)
    except (cli.UsageError, rv.ConfigError) as e:
        pytest.fail(f"{where}: `{command}` is refused: {e}")


# -- 2. the exchange benchmark's default strategies fit the workload --------------------------------
@needs_mpiexec
def test_bench_exchange_defaults_leave_two_tier_out_without_areas(tmp_path):
    out = tmp_path / "bench"
    done = ranvier("bench", "exchange", "artificial-cells", "--ranks", "1,2", "--set", "cells=400", "--set",
                   "targets_per_cell=20", "--duration-ms", "20", "--repeats", "1", "--out", out, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "two-tier left out: artificial-cells has no areas" in done.stdout
    rows = read_csv(out / "exchange_bench.csv")
    strategies = [s for s in EXCHANGES if s != "two-tier"]
    assert sorted({row["strategy"] for row in rows}) == sorted(strategies)
    assert sorted((int(row["ranks"]), row["strategy"]) for row in rows) == \
        sorted((r, s) for r in (1, 2) for s in strategies)


def test_bench_exchange_of_a_config_file_without_areas(tmp_path):
    out = tmp_path / "bench"
    done = ranvier("bench", "exchange", ROOT / "examples" / "dpsnn-small.toml", "--ranks", "1", "--repeats", "1",
                   "--duration-ms", "10", "--neurons", "600", "--set", "synapses_per_neuron=50", "--out", out,
                   timeout=600)
    assert done.returncode == 0, done.stderr
    assert "two-tier left out: dpsnn has no areas" in done.stdout + done.stderr
    assert "two-tier" not in {row["strategy"] for row in read_csv(out / "exchange_bench.csv")}


def test_bench_exchange_refuses_two_tier_without_areas_before_running(tmp_path, capsys):
    out = tmp_path / "bench"
    assert_bad_input(["bench", "exchange", "dpsnn", "--ranks", "1", "--strategies", "allgather,two-tier",
                      "--out", str(out)], "two-tier: dpsnn has no areas", out, capsys)


def test_bench_exchange_help_says_when_two_tier_is_left_out():
    done = ranvier("bench", "exchange", "--help")
    assert "two-tier is left out for a network without areas" in " ".join(done.stdout.split())


def test_two_tier_stays_in_the_defaults_of_a_multi_area_model():
    from ranvier.bench import exchange
    plan = exchange.plan_exchange("mam-benchmark", duration_ms=10.0, parameters={"area_size": 100, "K": 10})
    assert plan["strategies"] == list(EXCHANGES) and plan["left_out"] == []
    # two-tier overlaps too: kept with --overlap on and both (an even minimum delay of 0.2 ms)
    for overlap in ("on", "both"):
        plan = exchange.plan_exchange("mam-benchmark", overlap=overlap, duration_ms=10.0,
                                      parameters={"area_size": 100, "K": 10, "d_min_ms": 0.2})
        assert plan["strategies"] == list(EXCHANGES) and plan["left_out"] == [], overlap
    # without areas it cannot run: left out of the defaults, refused by name
    plan = exchange.plan_exchange("artificial-cells", overlap="on", duration_ms=10.0,
                                  parameters={"cells": 100, "targets_per_cell": 10})
    assert "two-tier" not in plan["strategies"]
    network = models.build("artificial-cells", cells=100, targets_per_cell=10)
    assert exchange.fitting_strategies(["allgather", "two-tier"], False, network, "artificial-cells", "on") == \
        (["allgather"], ["two-tier left out: artificial-cells has no areas"])
    with pytest.raises(rv.ConfigError, match="--strategies two-tier: artificial-cells has no areas"):
        exchange.fitting_strategies(["two-tier"], True, network, "artificial-cells", "on")


def test_bench_exchange_refuses_overlap_on_an_odd_minimum_delay(tmp_path, capsys):
    """mam-benchmark's minimum delay is one step: no half interval for overlap."""
    out = tmp_path / "bench"
    assert_bad_input(["bench", "exchange", "mam-benchmark", "--ranks", "1", "--overlap", "both", "--out", str(out)],
                     "--overlap both", out, capsys)


# -- 3. durations that end inside a communication interval ----------------------------------------
# (the engine's side, splits at any step on any decomposition: tests/test_partial_intervals.py)
def tiny_dpsnn():
    return rv.models.dpsnn(neurons=1024, synapses_per_neuron=100)


def test_a_duration_inside_a_cycle_stops_exactly_there():
    sim = rv.Simulation(tiny_dpsnn(), threads=1)
    assert sim.cycle_ms == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # nothing to warn about
        res = sim.run(15.5)
    assert res.duration_ms == 15.5
    longer = rv.Simulation(tiny_dpsnn(), threads=1).run(16.0)
    inside = longer.spike_steps <= 155
    assert res.spike_ids.size > 100 and np.any(~inside)
    assert np.array_equal(res.spike_ids, longer.spike_ids[inside])
    assert np.array_equal(res.spike_steps, longer.spike_steps[inside])
    assert res.spikes[1].max() <= 15.5
    summary = res.summary()
    assert summary["duration_ms"] == 15.5 and "requested_duration_ms" not in summary
    assert summary["rates_window_ms"] == [0.0, 15.5]


def test_consecutive_runs_inside_cycles_add_up_exactly():
    """run(1.5) three times simulates 4.5 ms and gives the spikes of run(4.5), then of run(5)."""
    reference = rv.Simulation(tiny_dpsnn(), threads=1).run(5.0)
    sim = rv.Simulation(tiny_dpsnn(), threads=1)
    stops = [sim.run(1.5).duration_ms for _ in range(3)]
    assert stops == [1.5, 3.0, 4.5]
    res = sim.run(0.5)
    assert res.duration_ms == 5.0
    assert np.array_equal(res.spike_ids, reference.spike_ids)
    assert np.array_equal(res.spike_steps, reference.spike_steps)


def test_a_duration_off_the_step_grid_is_still_refused():
    sim = rv.Simulation(tiny_dpsnn(), threads=1)
    with pytest.raises(rv.ConfigError, match="not a multiple of the resolution"):
        sim.run(15.55)


def test_cli_duration_inside_a_cycle_runs_that_long(tmp_path):
    out = tmp_path / "out"
    done = ranvier("run", "dpsnn", *DPSNN_TINY, "--duration-ms", "15.5", "--out", out)
    assert done.returncode == 0, done.stderr
    assert not [line for line in done.stderr.splitlines() if line.startswith("ranvier: note:")], done.stderr
    assert "0.0155 s at 0.1 ms steps" in done.stdout, done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["duration_ms"] == 15.5
    with h5py.File(out / "spikes.h5", "r") as f:
        last = max(g["timestamps"][()].max(initial=0.0) for g in f["spikes"].values())
    assert 14.0 < last <= 15.5
    quiet = ranvier("run", "dpsnn", *DPSNN_TINY, "--duration-ms", "15.5", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ""
    refused = ranvier("run", "dpsnn", *DPSNN_TINY, "--duration-ms", "15.55")
    assert "not a multiple of the resolution" in one_error_line(refused)


# -- 4. the population table of summary.json ------------------------------------------------------
def test_population_table_maps_the_spike_files_local_ids_to_global_ones(tmp_path):
    out = tmp_path / "out"
    assert cli.main(["run", "microcircuit", "--set", "scale=0.01", "--set", "k_scale=0.05", "--duration-ms", "50",
                     "--threads", "1", "--energy", "none", "--quiet", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    table = summary["populations"]
    assert [p["name"] for p in table] == ["L23E", "L23I", "L4E", "L4I", "L5E", "L5I", "L6E", "L6I"]
    assert sum(p["size"] for p in table) == summary["neurons"]
    assert [p["first_id"] for p in table] == list(np.cumsum([0] + [p["size"] for p in table[:-1]]))
    assert all(p["model"] == "psc_exp" and p["area"] is None for p in table)
    assert [p["excitatory"] for p in table] == [True, False] * 4

    # spikes.h5 holds local node_ids per population; global = first_id + local
    first = {p["name"]: p["first_id"] for p in table}
    ids, times = [], []
    with h5py.File(out / "spikes.h5", "r") as f:
        for name, group in f["spikes"].items():
            local = group["node_ids"][()].astype(np.int64)
            size = next(p["size"] for p in table if p["name"] == name)
            assert local.size == 0 or local.max() < size
            ids.append(first[name] + local)
            times.append(group["timestamps"][()])
    ids, times = np.concatenate(ids), np.concatenate(times)
    order = np.lexsort((ids, times))

    # Result.spikes of the same run (the same configuration: spikes do not depend on anything else)
    net = models.build("microcircuit", scale=0.01, k_scale=0.05)
    result = rv.Simulation(net, threads=1).run(50.0)
    expected_ids, expected_times = result.spikes
    assert ids.size == expected_ids.size > 0
    assert np.array_equal(ids[order], expected_ids)
    assert np.allclose(times[order], expected_times, rtol=0, atol=1e-9)
    assert result.populations() == table

    # and back: population_of gives the population and the local id
    index, local = result.population_of(expected_ids)
    names = np.array([p["name"] for p in table])[index]
    for name in first:
        with h5py.File(out / "spikes.h5", "r") as f:
            stored = f["spikes"][name]["node_ids"][()].astype(np.int64)
        assert np.array_equal(np.sort(local[names == name]), np.sort(stored))
    with pytest.raises(rv.ConfigError, match="outside"):
        result.population_of([summary["neurons"]])


# -- 5. silent populations in the summary ---------------------------------------------------------
def silent_network():
    """Two populations: A driven hard enough to fire, B without input, so silent."""
    from mpi_runner import BURST_PARAMS, burst_dc

    net = rv.Network(name="silent-test")
    net.add_population(rv.Population("A", 50, dict(BURST_PARAMS, dc_mV_per_ms=burst_dc())))
    net.add_population(rv.Population("B", 30, dict(BURST_PARAMS), excitatory=False))
    net.connect(rv.Projection(source="B", target="A", probability=0.1, weight=-0.1, delay_ms=1.0))
    return net


def test_the_summary_shows_silent_populations():
    from ranvier.cli.run import format_summary

    result = rv.Simulation(silent_network(), threads=1).run(50.0)
    rates = result.rates()
    assert rates["A"] > 0 and rates["B"] == 0
    summary = result.summary()
    assert [p["name"] for p in summary["populations"]] == ["A", "B"]
    table = format_summary(summary)
    row = next(line for line in table.splitlines() if line.startswith("rates"))
    assert re.search(r"A \d+\.\d\d", row) and "B silent" in row
    by_type = table.splitlines()[table.splitlines().index(row) + 1]
    assert "inhibitory silent" in by_type


def test_a_small_dpsnn_names_the_parameter_to_scale_down(tmp_path):
    """`ranvier run dpsnn --neurons 500`: the default in-degree (1125) does not fit; the one line
    says which parameter to set, and the command it suggests runs."""
    done = ranvier("run", "dpsnn", "--neurons", "500", cwd=tmp_path)
    assert done.returncode == 2
    line = one_error_line(done)
    assert "synapses_per_neuron" in line and "--set synapses_per_neuron=50" in line, line
    done = ranvier("run", "dpsnn", "--neurons", "500", "--set", "synapses_per_neuron=50", "--duration-ms", "100",
                   "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
