"""Input that used to end in a raw exception after the build, run the default job in silence, or
be ignored: each is now one `ranvier: error:` line naming the field and the fix, exit 2, before
anything is built or written (issue "Trust, round two"). Each test reproduces what a probe found.
"""
from __future__ import annotations

import pytest
from conftest import assert_bad_input

import ranvier as rv
from ranvier import cli
from ranvier.runtime import resources

TINY = ["dpsnn", "--neurons", "400", "--set", "synapses_per_neuron=40", "--threads", "1", "--quiet",
        "--energy", "none"]


@pytest.mark.parametrize("argv, word", [
    (["--duration-ms", "1e-10"], "shorter than one step"),                  # was ZeroDivisionError
    (["--duration-ms", "0.04"], "'duration_ms' = 0.04 is shorter than one step of 0.1 ms"),
    (["--duration-ms", "100", "--checkpoint-every", "0.05ms", "--out", "OUT"],   # named duration_ms
     "--checkpoint-every 0.05ms is shorter than the communication interval of 1 ms"),
    (["--duration-ms", "100", "--weight-interval-ms", "50"],                # was ignored
     "weight_interval_ms (--weight-interval-ms): the network has no plastic projection"),
    (["--duration-ms", "100", "--set", "plasticity=stdp", "--weight-interval-ms", "50"],
     "give --record-weights N too"),
    (["--duration-ms", "10", "--out", "/proc/x"], "cannot write in '/proc'"),     # was FileNotFoundError
    (["--duration-ms", "10", "--out", "/sys/x"], "cannot write in '/sys'"),       # was PermissionError
], ids=["1e-10 ms", "under a step", "checkpoint under an interval", "weight interval, static",
        "weight interval without recorder", "/proc", "/sys"])
def test_run_flags_refused_in_one_line(argv, word, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    assert_bad_input(["run", *TINY, *argv], word, tmp_path / "out", capsys)


def test_an_empty_or_comment_only_config_is_refused_not_the_default_job(tmp_path, capsys):
    for text in ("", "# nothing set here\n\n"):
        path = tmp_path / "empty.toml"
        path.write_text(text)
        assert_bad_input(["run", str(path)], "sets nothing", tmp_path / "out", capsys)


def test_a_config_with_a_byte_order_mark_is_read(tmp_path, capsys):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + b'model = "dpsnn"\n[parameters]\nneurons = 400\nsynapses_per_neuron = 40\n'
                     b'[simulation]\nduration_ms = 10.0\nthreads = 1\n')
    assert cli.main(["run", str(path), "--quiet", "--energy", "none"]) == 0, capsys.readouterr().err


def test_simulation_run_shorter_than_a_step_is_refused():
    sim = rv.Simulation(rv.models.dpsnn(neurons=400, synapses_per_neuron=40), threads=1)
    for duration in (1e-300, 0.04):
        with pytest.raises(rv.ConfigError, match="shorter than one step of 0.1 ms"):
            sim.run(duration)


def test_stream_to_that_is_a_file_or_unwritable_is_refused_before_the_build(tmp_path):
    path = tmp_path / "a-file"
    path.write_text("mine\n")
    net = rv.models.dpsnn(neurons=400, synapses_per_neuron=40)
    with pytest.raises(rv.ConfigError, match="is a file, not a folder"):
        rv.Simulation(net, threads=1, stream_to=path)
    assert path.read_text() == "mine\n"
    with pytest.raises(rv.ConfigError, match="cannot write there"):
        rv.Simulation(net, threads=1, stream_to="/proc/ranvier-x")


def test_memory_amounts_near_a_limit_read_as_different_numbers():
    """'estimated 1.0 GiB ... allows 1.0 GiB more (limit 1.0 GiB)': a refusal whose figures read
    alike; three significant digits tell them apart."""
    assert resources.gib(1.02 * 2**30) == "1.02 GiB"
    assert resources.gib(0.998 * 2**30) == "0.998 GiB"
    assert resources.gib(2**30) == "1 GiB"


def test_a_memory_refusal_shows_the_estimate_and_the_limit_apart():
    import re

    net = rv.models.dpsnn(neurons=400, synapses_per_neuron=40)
    estimate = rv.Simulation(net, threads=1).memory_estimate_bytes
    with pytest.raises(rv.ConfigError) as refused:
        rv.Simulation(net, threads=1, max_memory_bytes=int(estimate * 0.98))
    shown = re.search(r"estimated ([\d.]+) GiB.*allows ([\d.]+) GiB", str(refused.value))
    assert shown and shown.group(1) != shown.group(2), str(refused.value)


def test_a_resolution_too_fine_for_the_delays_is_refused_with_readable_numbers(tmp_path, capsys):
    """--resolution-ms 1e-300 printed the delay's 300-digit step count."""
    assert_bad_input(["run", *TINY, "--duration-ms", "100", "--resolution-ms", "1e-300"], "steps",
                     tmp_path / "out", capsys)
    capsys.readouterr()
    assert cli.main(["run", *TINY, "--duration-ms", "100", "--resolution-ms", "1e-300"]) == 2
    line = capsys.readouterr().err
    assert "8e+301 steps" in line and len(line) < 400, line
