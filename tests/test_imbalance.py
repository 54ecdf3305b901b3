"""Load imbalance (ranvier.analysis.imbalance): spikes emitted and received per rank and interval, in
every summary, and `ranvier bench imbalance` over placements."""
import json
import subprocess
import sys

import numpy as np
import pytest

from ranvier.analysis import imbalance
from conftest import mpiexec_path, needs_mpiexec, ranvier_cli, subprocess_env


def test_the_log_measures_known_counts_in_chunks():
    # 3 ranks, 4 intervals: emitted (rank 0 always busiest), received (even), one silent interval
    emitted = np.array([[4, 0, 6, 3], [2, 0, 0, 3], [0, 0, 3, 3]])
    received = np.array([[5, 0, 5, 5], [5, 0, 5, 5], [5, 0, 5, 5]])
    counts = np.stack([emitted, received], axis=2)                    # [rank, cycle, 2]
    cumulative = np.cumsum(counts, axis=1)
    log = imbalance.ImbalanceLog(3)
    log.add(cumulative[:, :2])                                         # two chunks
    log.add(cumulative[:, 2:])
    d = imbalance.summarize(log)
    e, r = d["emitted"], d["received"]
    assert e["intervals"] == 3 and r["intervals"] == 3                 # the silent interval is left out
    ratios = [4 / 2, 6 / 3, 3 / 3]
    assert e["max_over_mean"] == pytest.approx(np.mean(ratios)) and e["max_over_mean_worst"] == pytest.approx(2.0)
    cvs = [np.std([4, 2, 0]) / 2, np.std([6, 0, 3]) / 3, 0.0]
    assert e["cv"] == pytest.approx(np.mean(cvs))
    assert e["per_rank"] == [13, 5, 6] and e["per_rank_max_over_mean"] == pytest.approx(13 / 8)
    assert e["weighted_max_over_mean"] == pytest.approx((4 + 6 + 3) / (2 + 3 + 3))
    assert r["max_over_mean"] == pytest.approx(1.0) and r["cv"] == pytest.approx(0.0)
    rows = imbalance.format_rows(d)
    assert len(rows) == 2 and "max/mean 1.667" in rows[0][1]
    assert imbalance.format_rows({**d, "ranks": 1}) == []


@needs_mpiexec
def test_two_ranks_report_their_imbalance_and_block_placement_is_uneven(tmp_path):
    """dpsnn's inhibitory neurons fire about twice as fast as the excitatory ones: block placement
    (F and B on rank 0, B and I on rank 1) gives rank 1 more spikes over the run than rank 0,
    round-robin and random spread every population evenly."""
    totals = {}
    for placement in ("block", "random", "round-robin"):
        out = tmp_path / placement
        cmd = [mpiexec_path(), "-n", "2", sys.executable, "-m", "ranvier", "run", "dpsnn", "--neurons", "2048",
               "--duration-ms", "600", "--threads", "1", "--placement", placement, "--energy", "none", "--quiet",
               "--out", str(out)]
        proc = subprocess.run(cmd, env=subprocess_env(), capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr
        d = json.loads((out / "summary.json").read_text())["imbalance"]
        assert d["ranks"] == 2 and len(d["emitted"]["per_rank"]) == 2
        assert sum(d["emitted"]["per_rank"]) == json.loads((out / "summary.json").read_text())["spikes_total"]
        assert d["emitted"]["max_over_mean"] >= 1.0 and d["received"]["max_over_mean"] >= 1.0
        totals[placement] = d["emitted"]["per_rank_max_over_mean"]
    assert totals["block"] > 1.1
    assert totals["random"] < 1.06 and totals["round-robin"] < 1.06


@needs_mpiexec
def test_bench_imbalance_writes_its_table(tmp_path):
    out = tmp_path / "imb"
    done = ranvier_cli("bench", "imbalance", "--set", "neurons=1024", "--set", "synapses_per_neuron=200",
                       "--duration-ms", "200", "--placements", "block,random", "--out", out, timeout=240)
    assert done.returncode == 0, done.stderr
    rows = json.loads((out / "imbalance.json").read_text())
    assert [r["placement"] for r in rows] == ["block", "random"] and all(r["ranks"] == 2 for r in rows)
    assert rows[0]["spikes"] == rows[1]["spikes"] > 0                  # the placement changes no spike
    assert "emitted max/mean" in done.stdout and (out / "imbalance.csv").is_file()
    assert (out / "imbalance.png").read_bytes()[:4] == b"\x89PNG"


def test_bench_imbalance_refuses_a_state_the_model_lacks(tmp_path):
    done = ranvier_cli("bench", "imbalance", "artificial-cells", "--states", "swa", "--out", tmp_path / "x")
    assert done.returncode != 0 and "regime" in done.stderr
