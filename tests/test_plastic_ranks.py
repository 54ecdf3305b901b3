"""Plastic runs of the command line on several ranks: output, checkpoints and resumes.

The weights are gathered with a collective call after the run. It used to sit behind a test of
rank 0's output folder, so `mpiexec -n 2 ranvier run <plastic> --out DIR` reached 100 % and then
waited forever (and every multi-rank resume of a plastic run with it). Each command here runs
under a timeout, and its spikes and weights are compared with one rank's.
"""
from __future__ import annotations

import subprocess
import sys

import h5py
import numpy as np
import pytest
from conftest import mpiexec_path, needs_mpiexec, subprocess_env

from ranvier.bench import restore_cpus

PLASTIC = ["dpsnn", "--neurons", "1024", "--set", "synapses_per_neuron=100", "--set", "plasticity=stdp",
           "--threads", "1", "--quiet", "--energy", "none"]
TIMEOUT_S = 180          # a hang fails the test instead of the suite


def ranvier(ranks: int, *args, cwd):
    command = [sys.executable, "-m", "ranvier", *map(str, args)]
    if ranks > 1:
        command = [mpiexec_path(), "-n", str(ranks), *command]
    try:
        done = subprocess.run(command, cwd=cwd, env=subprocess_env(), capture_output=True, text=True,
                              timeout=TIMEOUT_S, preexec_fn=restore_cpus)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(command)} still running after {TIMEOUT_S} s (ranks waiting for each other?):\n"
                    f"{e.stderr}")
    assert done.returncode == 0, done.stderr
    return done


def spikes(folder) -> dict:
    with h5py.File(folder / "spikes.h5", "r") as f:
        return {name: (f[f"spikes/{name}/node_ids"][:], f[f"spikes/{name}/timestamps"][:]) for name in f["spikes"]}


def weights(folder) -> dict:
    """Every plastic synapse (source, target, delay, weight), in the file's canonical order."""
    with h5py.File(folder / "weights.h5", "r") as f:
        return {name: tuple(g[key][:] for key in ("source_node_id", "target_node_id", "0/delay", "0/syn_weight"))
                for name, g in f["edges"].items()}


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        for x, y in zip(a[name], b[name]):
            np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory):
    """The reference: one rank, 300 ms, and the same run's state at 200 ms."""
    where = tmp_path_factory.mktemp("one-rank")
    for ms in (200, 300):
        ranvier(1, "run", *PLASTIC, "--duration-ms", ms, "--out", where / f"{ms}ms", cwd=where)
    return where


@needs_mpiexec
@pytest.mark.parametrize("ranks", [2, 3])
def test_plastic_run_with_out_on_several_ranks_writes_the_weights_of_one_rank(one_rank, tmp_path, ranks):
    ranvier(ranks, "run", *PLASTIC, "--duration-ms", 200, "--out", tmp_path / "out", cwd=tmp_path)
    assert_same(spikes(tmp_path / "out"), spikes(one_rank / "200ms"))
    assert_same(weights(tmp_path / "out"), weights(one_rank / "200ms"))
    w = weights(tmp_path / "out")
    assert any(not np.all(v[3] == v[3][0]) for v in w.values())      # the weights did change


@needs_mpiexec
@pytest.mark.parametrize("save_ranks, resume_ranks", [(2, 3), (3, 2)])
def test_plastic_checkpoint_resumed_on_other_ranks_gives_the_weights_of_one_rank(one_rank, tmp_path, save_ranks,
                                                                                   resume_ranks):
    run = tmp_path / "run"
    ranvier(save_ranks, "run", *PLASTIC, "--duration-ms", 200, "--checkpoint-every", "100ms", "--out", run,
            cwd=tmp_path)
    assert_same(weights(run), weights(one_rank / "200ms"))
    ranvier(resume_ranks, "run", "--resume", run, "--duration-ms", 300, "--threads", 1, "--quiet", "--out",
            tmp_path / "resumed", cwd=tmp_path)
    assert_same(spikes(tmp_path / "resumed"), spikes(one_rank / "300ms"))
    assert_same(weights(tmp_path / "resumed"), weights(one_rank / "300ms"))


@needs_mpiexec
def test_recorded_weights_on_two_ranks_are_one_ranks(tmp_path):
    traces = {}
    for ranks in (1, 2):
        out = tmp_path / f"{ranks}"
        ranvier(ranks, "run", *PLASTIC, "--duration-ms", 200, "--record-weights", 5, "--weight-interval-ms", 50,
                "--out", out, cwd=tmp_path)
        with h5py.File(out / "weights.h5", "r") as f:
            traces[ranks] = {name: g["weights"][:] for name, g in f["weight_trace"].items()}
    assert traces[1].keys() == traces[2].keys() and traces[1]
    for name in traces[1]:
        assert traces[1][name].shape[1] == 5         # samples at 0, 50, ..., 200 ms
        np.testing.assert_array_equal(traces[1][name], traces[2][name])
