"""SONATA input the reader must not take in silence: every malformed file, config value or node
set is one `ranvier: error:` line (exit 2) naming the file, the field and the fix, before anything
is built; inputs that are dropped on purpose are counted in a note. The circuits are small
variants of examples/sonata/make_network.py, written in tmp_path."""
from __future__ import annotations

import json
import sys

import h5py
import numpy as np
import pytest

import ranvier as rv
from conftest import ROOT, assert_bad_input
from ranvier import cli, sonata

sys.path.insert(0, str(ROOT / "examples" / "sonata"))
from make_network import write_network  # noqa: E402


@pytest.fixture
def circuit(tmp_path):
    """The example network in tmp_path/net; returns its simulation config."""
    return write_network(tmp_path / "net")


class _Kept:
    """capsys, keeping what assert_bad_input reads."""
    def __init__(self, capsys):
        self.capsys, self.err = capsys, ""

    def readouterr(self):
        captured = self.capsys.readouterr()
        self.err = captured.err
        return captured


def refused(config, tmp_path, capsys, *words):
    """`ranvier run CONFIG --out DIR`: exit 2, one error line holding every word; the line."""
    out, kept = tmp_path / "out", _Kept(capsys)
    assert_bad_input(["run", str(config), "--out", str(out)], words[0], out, kept)
    line = kept.err.strip()
    for w in words[1:]:
        assert w in line, line
    return line


def edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def replace(path, dataset, values):
    with h5py.File(path, "a") as f:
        attrs = dict(f[dataset].attrs)
        del f[dataset]
        f[dataset] = values
        f[dataset].attrs.update(attrs)


def notes(config, capsys):
    """The `ranvier: note:` lines of a run of CONFIG (it must succeed)."""
    assert cli.main(["run", str(config), "--duration-ms", "20"]) == 0
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("ranvier: note: ")]


def test_a_dynamics_file_that_is_not_an_object_is_refused(circuit, tmp_path, capsys):
    (circuit.parent / "components" / "exc.json").write_text("[1, 2]")
    refused(circuit, tmp_path, capsys, "exc.json", "not a JSON object")


# -- the run section ---------------------------------------------------------------------------
@pytest.mark.parametrize("key, value", [("dt", 0), ("dt", -0.1), ("dt", float("nan")), ("dt", "fast"), ("dt", None),
                                        ("tstop", -5.0), ("tstop", float("inf")), ("tstop", "long")])
def test_a_bad_run_dt_or_tstop_is_refused_before_the_build(circuit, tmp_path, capsys, key, value):
    edit_json(circuit, lambda s: s["run"].update({key: value}))
    refused(circuit, tmp_path, capsys, f"run.{key}", "simulation_config.json", "a positive number")


def test_a_bad_dt_from_python_is_refused(circuit):
    with pytest.raises(rv.ConfigError, match="dt_ms"):
        sonata.load(circuit, dt_ms=0.0)
