"""docs/building-networks.md's examples as a reader meets them: the first one is a working
network (both populations fire at cortical rates, irregularly), and a snippet that stands alone
runs alone (tests/test_documented_commands.py runs all of a page's blocks in one namespace)."""
from __future__ import annotations

import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import ROOT, subprocess_env

PAGE = ROOT / "docs" / "building-networks.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)


def test_the_first_example_is_a_working_network():
    """Both populations fire at a few to tens of Hz (not E silent and I at 98 Hz), E irregularly."""
    first = python_blocks()[0]
    assert "rv.Network(" in first and "print(res.rates(start_ms=100))" in first
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # no DurationRounded or other warning
        exec(compile(first, str(PAGE), "exec"), namespace)
    rates = namespace["res"].rates(start_ms=100)
    assert set(rates) == {"E", "I"}
    for name, rate in rates.items():
        assert 2.0 <= rate <= 50.0, rates
    ids, times = namespace["res"].spikes
    e = namespace["net"].populations[0]
    cvs = []
    for neuron in range(e.first_id, e.first_id + e.size):
        t = times[(ids == neuron) & (times >= 100)]
        if t.size >= 3:
            isi = np.diff(t)
            cvs.append(isi.std() / isi.mean())
    assert len(cvs) > e.size // 2 and np.median(cvs) > 0.3          # fluctuation-driven, not a clock


@pytest.mark.parametrize("marker", ["res.to_neo()", 'rv.Network(name="heterogeneous")'])
def test_a_snippet_that_builds_its_own_network_runs_alone(marker, tmp_path):
    if "neo" in marker:
        pytest.importorskip("neo")
    block = next(b for b in python_blocks() if marker in b)
    assert block.lstrip().startswith("import ranvier as rv"), block[:80]
    script = tmp_path / "snippet.py"
    script.write_text(block)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=subprocess_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
