"""Shared helpers of the engine's test suite.

Multi-rank runs go through tests/mpi_runner.py under the virtual environment's mpiexec;
single-rank runs call the same code in-process (mpiexec -n 1 would give the same serial
communicator, only slower). Runs are cached for the whole session, so that the
conservation and invariance tests share the dpsnn runs they both need.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

# Many ranks and threads share two cores in CI: threads must sleep, not spin, while they wait.
# Set before the engine (and its OpenMP runtime) is loaded.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))

import mpi_runner  # noqa: E402
from ranvier.bench import restore_cpus  # noqa: E402

# The scaled-down dpsnn used by the invariance and conservation tests.
DPSNN_SMALL = dict(model="dpsnn", neurons=2048, synapses=1125, ms=300.0)
MPI_TIMEOUT_S = 240


def mpiexec_path() -> str | None:
    """The mpiexec next to this Python (the venv's MPI wheel), else one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    return shutil.which("mpiexec")


def subprocess_env() -> dict:
    env = dict(os.environ)
    env["OMP_WAIT_POLICY"] = "passive"
    env.setdefault("PYTHONUNBUFFERED", "1")
    # Set by importing ranvier in this process; ranks sharing two cores must not all pin their
    # threads to the same first ones.
    env.pop("OMP_PROC_BIND", None)
    env.pop("OMP_PLACES", None)
    return env



def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml's addopts): a worker per core, at most four, since one test may
    start four ranks of its own."""
    return max(1, min(os.cpu_count() or 1, 4))


def session_cache_dir(tmp_path_factory) -> Path:
    """A model cache (RANVIER_CACHE_DIR) for the whole test session, shared by its xdist
    workers: each model compiles once (ranvier.nestml locks the cache entry it builds)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "ranvier-cache"


# -- helpers of the `ranvier bench` test files -----------------------------------------------
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
needs_mpiexec = pytest.mark.skipif(mpiexec_path() is None, reason="no mpiexec (pip install mpich mpi4py)")


def ranvier_cli(*args, timeout=180):
    """`python -m ranvier ARGS` in a child with every CPU (importing ranvier pinned this one)."""
    return subprocess.run([sys.executable, "-m", "ranvier", *map(str, args)], env=subprocess_env(),
                          capture_output=True, text=True, timeout=timeout, check=False, preexec_fn=restore_cpus)


def read_csv(path):
    import csv
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def assert_bad_input(argv, word, out, capsys):
    """`ranvier ARGV` refuses its input: exit 2, one line `ranvier: error: ...` naming `word`,
    nothing on stdout and nothing written to `out`."""
    from ranvier import cli
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("ranvier: error: ")
    assert word in lines[0], lines[0]
    assert captured.out == ""
    assert not out.exists()


def describe(ranks: int, kw: dict) -> str:
    return (f"{kw.get('model', 'dpsnn')}: ranks={ranks} threads={kw.get('threads', 1)} "
            f"exchange={kw.get('exchange', 'allgather')} overlap={kw.get('overlap', False)} "
            f"placement={kw.get('placement', 'round-robin')} seed={kw.get('seed', 1)}")


def run_workload(ranks: int, tmp_dir: Path, **kw) -> dict:
    """Run one configuration of tests/mpi_runner.py on `ranks` ranks; the dict rank 0 wrote."""
    exchange = kw.pop("exchange", "allgather")
    overlap = kw.pop("overlap", False)
    return run_sweep(ranks, tmp_dir, [exchange], [overlap], **kw)[(exchange, overlap)]


def run_sweep(ranks: int, tmp_dir: Path, exchanges, overlaps, **kw) -> dict:
    """Every exchange x overlap setting of one workload in one launch: {(exchange, overlap): run}."""
    t0 = time.perf_counter()
    if ranks == 1:
        runs = {}
        for exchange in exchanges:
            for overlap in overlaps:
                out = mpi_runner.run_config(exchange=exchange, overlap=overlap, **kw)
                out["wall_seconds"] = time.perf_counter() - t0
                runs[(exchange, overlap)] = out
        return runs
    mpiexec = mpiexec_path()
    if mpiexec is None:
        pytest.skip("no mpiexec found (pip install mpich mpi4py)")
    name = "run_%d_%s" % (ranks, "_".join(f"{k}-{v}" for k, v in sorted(kw.items())))
    if "/" in name or len(name) > 120:       # values that are paths (checkpoints): a short unique name
        import hashlib
        name = f"run_{ranks}_" + hashlib.sha256(name.encode()).hexdigest()[:16]
    base = Path(tmp_dir) / name
    cmd = [mpiexec, "-n", str(ranks), sys.executable, str(TESTS / "mpi_runner.py"), "--out", str(base),
           "--exchange", ",".join(exchanges), "--overlap", ",".join(str(int(o)) for o in overlaps)]
    for key, value in kw.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    kw = dict(kw, exchange=",".join(exchanges), overlap=",".join(str(int(o)) for o in overlaps))
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                              timeout=MPI_TIMEOUT_S, preexec_fn=restore_cpus)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{describe(ranks, kw)} did not finish in {MPI_TIMEOUT_S} s (deadlock?)\n"
                    f"stdout: {e.stdout}\nstderr: {e.stderr}")
    paths = {(e, o): Path(f"{base}-{e.replace('/', '+')}-{int(o)}.npz") for e in exchanges for o in overlaps}
    if proc.returncode != 0 or not all(p.exists() for p in paths.values()):
        pytest.fail(f"{describe(ranks, kw)} failed with status {proc.returncode}\n"
                    f"command: {' '.join(cmd)}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}")
    runs = {}
    for key, path in paths.items():
        with np.load(path) as f:
            out = {k: (f[k].item() if f[k].ndim == 0 and k != "digest" else f[k]) for k in f.files}
        out["digest"] = np.uint64(out["digest"])
        out["wall_seconds"] = time.perf_counter() - t0
        path.unlink()
        runs[key] = out
    return runs


def counters(run: dict) -> dict:
    """Counter totals over ranks, as plain ints."""
    return {str(k): int(v) for k, v in zip(run["counter_names"], run["counters_per_rank"].sum(axis=0))}


def spikes_per_population(run: dict) -> np.ndarray:
    """A runner result's spikes counted per population, in id order."""
    first = run["population_first_ids"]
    return np.bincount(np.searchsorted(first[1:], run["ids"], side="right"), minlength=first.size)


def counters_per_rank(run: dict) -> dict:
    return {str(k): run["counters_per_rank"][:, i] for i, k in enumerate(run["counter_names"])}


def check_balance(c: dict, n_spikes: int):
    assert c["spikes_emitted"] == n_spikes
    assert c["spikes_sent"] == c["spikes_received"]
    assert c["events_scheduled"] == c["events_expected"]
    assert c["events_scheduled"] == c["synaptic_events_recurrent"] + c["events_pending"]


# Strategies that give every rank every spike; the others bring each rank exactly what it needs.
RECEIVE_ALL = ("allgather", "allgather-compressed", "hierarchical", "persistent-allgather")


def check_exchange(run: dict, exchange: str):
    """Per-rank exchange counts. Round-robin placement: neuron g lives on rank g % P. A rank
    needs a spike when the spiking neuron has a synapse there (has_targets[rank, source])."""
    P = run["ranks"]
    per = counters_per_rank(run)
    ids = run["ids"]
    total = ids.size
    emitted_here = np.bincount(ids % P, minlength=P)
    needed = run["has_targets"][:, ids].sum(axis=1)           # per rank
    assert np.array_equal(per["spikes_emitted"], emitted_here)
    assert np.array_equal(per["spikes_delivered"], needed)    # received spikes with a local synapse
    if exchange in RECEIVE_ALL:
        assert np.all(per["spikes_received"] == total)        # every rank receives every spike
        assert np.array_equal(per["spikes_sent"], emitted_here * P)
    else:
        assert np.array_equal(per["spikes_received"], needed)  # exactly the spikes it needs
        assert per["spikes_sent"].sum() == needed.sum()
    if P == 1:
        assert per["bytes_sent"][0] == 0 and per["messages_sent"][0] == 0
    else:
        assert np.all(per["bytes_sent"] > 0) and np.all(per["messages_sent"] > 0)


class WorkloadCache:
    def __init__(self, tmp_dir: Path):
        self.tmp_dir = tmp_dir
        self.runs = {}

    @staticmethod
    def _key(ranks, kw):
        # defaults left out, so a run asked for with or without them is the same run
        kw = {k: v for k, v in kw.items() if not (k == "overlap" and not v) and not (k == "ranks_per_node" and not v)}
        kw.setdefault("exchange", "allgather")
        return (ranks, tuple(sorted(kw.items())))

    def __call__(self, ranks: int = 1, **kw) -> dict:
        key = self._key(ranks, kw)
        if key not in self.runs:
            self.runs[key] = run_workload(ranks, self.tmp_dir, **kw)
        return self.runs[key]

    def sweep(self, ranks: int, exchanges, overlaps=(False, True), **kw) -> dict:
        """{(exchange, overlap): run}; the missing ones run together in one launch."""
        want = {(e, o): self._key(ranks, dict(kw, exchange=e, overlap=o)) for e in exchanges for o in overlaps}
        missing = [eo for eo, key in want.items() if key not in self.runs]
        if missing:
            ex = sorted({e for e, _ in missing}, key=list(exchanges).index)
            ov = sorted({o for _, o in missing})
            for eo, run in run_sweep(ranks, self.tmp_dir, ex, ov, **kw).items():
                self.runs[self._key(ranks, dict(kw, exchange=eo[0], overlap=eo[1]))] = run
        return {eo: self.runs[key] for eo, key in want.items()}

    def dpsnn(self, ranks=1, threads=1, exchange="allgather", placement="round-robin", seed=1) -> dict:
        return self(ranks, threads=threads, exchange=exchange, placement=placement, seed=seed, **DPSNN_SMALL)


@pytest.fixture(scope="session")
def workloads(tmp_path_factory) -> WorkloadCache:
    """Cached runs of tests/mpi_runner.py configurations, shared by all test files."""
    return WorkloadCache(tmp_path_factory.mktemp("mpi_runs"))


@pytest.fixture(scope="session")
def engine():
    from ranvier import _engine
    return _engine
