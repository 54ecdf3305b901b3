"""Checkpoints (ranvier.io.checkpoint, cpp/core/checkpoint.cpp): a run saved and resumed on another
decomposition gives the uninterrupted run's spikes (and plastic weights) exactly, and a
checkpoint that does not fit is refused in one line saying why.

Resumed on: 1 -> 2 ranks, 2 -> 1 rank, threads 1 -> 2, another placement and exchange, with and
without overlap, two-tier; the plastic network (every rule) and the devices network (current
sources, Poisson and spike-train sources) included."""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ranvier as rv
from conftest import DPSNN_SMALL, counters, mpiexec_path, needs_mpiexec, run_workload, subprocess_env
from ranvier.bench import restore_cpus
from ranvier.io import checkpoint
from ranvier.errors import ConfigError

SAVE_AT_MS = 150.0
PLASTIC = dict(model="plastic", neurons=600, synapses=30, ms=200.0)
DEVICES = dict(model="devices", neurons=400, ms=200.0)


def same_run(resumed: dict, whole: dict, weights: bool = False) -> None:
    assert resumed["ids"].size > 100
    assert np.array_equal(resumed["ids"], whole["ids"]) and np.array_equal(resumed["steps"], whole["steps"])
    a, b = counters(resumed), counters(whole)
    for k in ("spikes_emitted", "synaptic_events_recurrent", "synaptic_events_external", "events_scheduled",
              "events_expected", "events_pending"):
        assert a[k] == b[k], k
    if not weights:     # the runner's digest, taken after the build, holds a resumed run's restored weights
        assert resumed["digest"] == whole["digest"]
    if weights:
        for k in ("source", "target", "delay_ms", "weight"):
            assert np.array_equal(resumed[f"connections_{k}"], whole[f"connections_{k}"]), k


def save_then_resume(tmp_path, kw, save: dict, resume: dict, ranks=(1, 1), at_ms=SAVE_AT_MS):
    """Run kw to at_ms on ranks[0] with the `save` decomposition, checkpoint, run on; then resume
    the checkpoint on ranks[1] with the `resume` decomposition. Both runs' results."""
    ck = tmp_path / "ck"
    ms = kw["ms"]
    continued = run_workload(ranks[0], tmp_path, **kw, **save, save_at_ms=at_ms, checkpoint=str(ck))
    resumed = run_workload(ranks[1], tmp_path, **dict(kw, ms=ms), **resume, resume=str(ck))
    return continued, resumed


@pytest.mark.parametrize("ranks, save, resume", [
    ((1, 1), {}, dict(threads=2, placement="random")),
    ((1, 2), {}, dict(exchange="alltoallv", placement="block")),
    ((2, 1), dict(exchange="p2p"), dict(threads=2)),
    ((1, 2), dict(overlap=True), dict(exchange="neighbor")),
], ids=["threads-1-to-2", "ranks-1-to-2", "ranks-2-to-1", "overlap-to-none"])
def test_dpsnn_resumed_on_another_decomposition_gives_the_same_spikes(workloads, tmp_path, ranks, save, resume):
    whole = workloads.dpsnn()
    continued, resumed = save_then_resume(tmp_path, dict(DPSNN_SMALL), save, resume, ranks)
    same_run(continued, whole)            # saving changes nothing
    same_run(resumed, whole)


@pytest.mark.parametrize("ranks, save, resume", [
    ((1, 2), {}, dict(threads=2, exchange="alltoallv", placement="random")),
    ((2, 1), dict(threads=2), dict(placement="block")),
], ids=["ranks-1-to-2", "ranks-2-to-1"])
def test_plastic_network_resumed_gives_the_same_spikes_and_weights(workloads, tmp_path, ranks, save, resume):
    whole = workloads(1, **PLASTIC)
    continued, resumed = save_then_resume(tmp_path, dict(PLASTIC), save, resume, ranks)
    same_run(continued, whole, weights=True)
    same_run(resumed, whole, weights=True)
    for k in ("source", "target", "delay_ms", "weight"):       # brought up to date: the traces came along
        assert np.array_equal(resumed[f"up_to_date_{k}"], whole[f"up_to_date_{k}"]), k


def test_dpsnn_saved_inside_a_drive_window(workloads, tmp_path):
    """With overlap a cycle is half the drive window: the rows of the window's second half already
    hold their drive at the checkpoint."""
    whole = workloads.dpsnn()
    _, resumed = save_then_resume(tmp_path, dict(DPSNN_SMALL), dict(overlap=True),
                                  dict(overlap=True, threads=2, placement="random"), (1, 2), at_ms=150.5)
    same_run(resumed, whole)
    with np.load(tmp_path / "ck" / "state.npz") as state:     # there was input to carry over
        assert np.count_nonzero(state["neuron.input"]) > 1000 and state["pending.gid"].size > 10


@pytest.mark.parametrize("kw", [
    DEVICES,
    dict(model="microcircuit", neurons=2000, ms=200.0),
    dict(model="pynn-cells", neurons=800, probability=0.05, ms=200.0),
    dict(model="heterogeneous", neurons=1000, probability=0.05, ms=200.0),
], ids=lambda kw: kw["model"])
def test_other_models_and_devices_resumed_on_two_threads(workloads, tmp_path, kw):
    whole = workloads(1, **kw)
    _, resumed = save_then_resume(tmp_path, dict(kw), {}, dict(threads=2, placement="random"), at_ms=100.0)
    same_run(resumed, whole)


@needs_mpiexec
def test_two_tier_resumed_on_another_exchange(workloads, tmp_path):
    kw = dict(model="mam-benchmark", neurons=150, synapses=40, ms=60.0)
    whole = workloads(1, **kw)
    ck = tmp_path / "ck"
    run_workload(2, tmp_path, **kw, exchange="two-tier/alltoallv", placement="by-area", save_at_ms=30.0,
                 checkpoint=str(ck))
    resumed = run_workload(1, tmp_path, **kw, threads=2, resume=str(ck))
    same_run(resumed, whole)


# -- refusals ------------------------------------------------------------------------------------
def small_network(neurons=400):
    return rv.models.dpsnn(neurons=neurons, synapses_per_neuron=100)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A small run's checkpoint after 50 ms (copied by each test that damages it)."""
    path = tmp_path_factory.mktemp("saved") / "ck"
    sim = rv.Simulation(small_network(), threads=1, seed=3)
    sim.run(50.0)
    sim.save(path)
    return path


def copy_of(saved, tmp_path):
    dest = tmp_path / "ck"
    shutil.copytree(saved, dest)
    return dest


def refused(path, *words, **kwargs):
    with pytest.raises(ConfigError) as e:
        rv.Simulation.resume(path, **kwargs)
    message = str(e.value)
    assert "\n" not in message
    for w in words:
        assert w in message, message
    return message


def test_resume_takes_the_saved_network_seed_and_time(saved):
    sim = rv.Simulation.resume(saved, threads=1)
    assert sim.seed == 3 and sim.steps_done == 500 and sim.network.size == 400
    res = sim.run(50.0)
    assert res.duration_ms == 100.0 and res.summary()["resumed_from"]["time_ms"] == 50.0


def test_another_network_is_refused(saved):
    refused(saved, "another network", "400", network=small_network(800))


def test_another_parameter_is_refused(saved):
    net = small_network()
    net.populations[0].params["tau_m_ms"] = 25.0
    refused(saved, "another network", "parameters", network=net)


def test_another_seed_is_refused(saved):
    refused(saved, "seed 3", network=small_network(), seed=4)


def edit_meta(path, change, signed=True):
    """checkpoint.json changed by `change(meta)`; signed: its digest recomputed (as someone who knows
    the format could), so that what is beyond the digest must refuse it."""
    meta = json.loads((path / "checkpoint.json").read_text())
    change(meta)
    if signed:
        meta["sha256"] = checkpoint.meta_digest(meta)
    (path / "checkpoint.json").write_text(json.dumps(meta, indent=1) + "\n")


def test_another_format_version_is_refused(saved, tmp_path):
    path = copy_of(saved, tmp_path)
    edit_meta(path, lambda m: m.update(format_version=99))
    refused(path, "format 99")


@pytest.mark.parametrize("damage, words", [
    (lambda p: (p / "state.npz").write_bytes((p / "state.npz").read_bytes()[:1000]), ("truncated", "state.npz")),
    (lambda p: (p / "recording.npz").unlink(), ("incomplete", "recording.npz")),
    (lambda p: (p / "checkpoint.json").unlink(), ("incomplete", "checkpoint.json")),
    (lambda p: (p / "network.pickle").write_bytes(b"x" * (p / "network.pickle").stat().st_size), ("damaged",)),
], ids=["truncated", "file-missing", "no-meta", "changed"])
def test_incomplete_or_damaged_checkpoint_is_refused(saved, tmp_path, damage, words):
    path = copy_of(saved, tmp_path)
    damage(path)
    refused(path, *words)


def test_other_synapses_are_refused_after_the_build(saved, tmp_path):
    path = copy_of(saved, tmp_path)
    edit_meta(path, lambda m: m["network"].update(synapse_digest="12345"))
    refused(path, "synapses built from seed 3 differ")



def edit_state(path, change):
    """state.npz's columns changed by `change(columns)`, and checkpoint.json signed again for the
    new file (as someone who knows the format could): only the engine's own checks stand between
    the corrupt state and a resume."""
    with np.load(path / "state.npz") as z:
        columns = {k: z[k] for k in z.files}
    change(columns)
    buffer = io.BytesIO()
    np.savez(buffer, **columns)
    data = buffer.getvalue()
    (path / "state.npz").write_bytes(data)
    edit_meta(path, lambda m: m["files"]["state.npz"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest()))


def test_a_triplet_trace_of_a_neuron_without_history_is_refused(tmp_path):
    """A corrupt post.triplet.gid (a neuron that post.gid, the saved spike histories, lacks) is a
    ConfigError that names the column and the neuron, not a bare lookup failure."""
    n = 4
    net = rv.Network()
    net.add_population(rv.Population("pre", n, {"spike_times_ms": [[5.0 + i, 25.0 + i] for i in range(n)]},
                                     model="spike_train"))
    net.add_population(rv.Population("post", n, {"spike_times_ms": [[8.0 + i, 30.0 + i] for i in range(n)]},
                                     model="spike_train", tau_minus_ms=33.7, tau_minus_triplet_ms=125.0))
    net.connect(rv.Projection(source="pre", target="post", sources=np.arange(n), targets=np.arange(n), weight=1.0,
                              delay_ms=1.0, synapse=rv.STDPTriplet(w_max=100.0)))
    sim = rv.Simulation(net, threads=1)
    sim.run(40.0)
    sim.save(tmp_path / "ck")
    with np.load(tmp_path / "ck" / "state.npz") as z:
        histories = set(z["post.gid"].tolist())
        assert z["post.triplet.gid"].size == n and set(z["post.triplet.gid"].tolist()) <= histories
    stray = next(g for g in range(net.size) if g not in histories)     # a source: no history of its own
    edit_state(tmp_path / "ck", lambda c: c["post.triplet.gid"].__setitem__(0, stray))
    refused(tmp_path / "ck", "post.triplet.gid", f"neuron {stray}", "post.gid", "corrupt")

def test_a_step_inside_this_runs_interval_is_refused(tmp_path):
    sim = rv.Simulation(small_network(), threads=1, overlap=True)
    sim.run(50.0 + sim.cycle_ms)          # ends inside a plain interval
    sim.save(tmp_path / "ck")
    refused(tmp_path / "ck", "inside this run's communication interval", "overlap")


def test_newest_complete_checkpoint_is_taken(saved, tmp_path):
    run = tmp_path / "run.checkpoints"
    run.mkdir()
    shutil.copytree(saved, run / "step-000000000500")
    shutil.copytree(saved, run / "step-000000001000")
    (run / "step-000000001000" / "state.npz").write_bytes(b"truncated")
    assert checkpoint.newest(run) == run / "step-000000000500"
    (run / "step-000000000500" / "checkpoint.json").unlink()
    with pytest.raises(ConfigError, match="no complete checkpoint"):
        checkpoint.newest(run)


def test_saving_over_a_foreign_folder_is_refused(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    sim = rv.Simulation(small_network(), threads=1)
    sim.run(10.0)
    with pytest.raises(OSError, match="not a checkpoint"):
        sim.save(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


# -- ranvier run --checkpoint-every / --resume ---------------------------------------------------
def spike_file(path):
    import h5py
    with h5py.File(path) as f:
        return {pop: (np.asarray(g["node_ids"]), np.asarray(g["timestamps"])) for pop, g in f["spikes"].items()}


def same_spike_files(a, b):
    sa, sb = spike_file(a), spike_file(b)
    assert sa.keys() == sb.keys()
    for pop in sa:
        assert np.array_equal(sa[pop][0], sb[pop][0]) and np.array_equal(sa[pop][1], sb[pop][1]), pop
    return sum(v[0].size for v in sa.values())


def cli_in(folder, *args):
    return subprocess.run([sys.executable, "-m", "ranvier", *map(str, args)], cwd=folder, env=subprocess_env(),
                          capture_output=True, text=True, timeout=300, preexec_fn=restore_cpus)


CLI_RUN = ["dpsnn", "--neurons", "2048", "--duration-ms", "30000", "--energy", "none"]


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_a_killed_run_resumes_from_its_last_checkpoint_with_the_same_spikes(tmp_path, how):
    """The run is killed (or interrupted) after its second checkpoint, on 2 ranks where mpiexec is at
    hand: no result folder, the checkpoints intact; `ranvier run --resume` on one rank with two
    threads writes the uninterrupted run's spike file."""
    import signal

    from test_faults import Launched

    mpiexec = mpiexec_path()
    prefix = [mpiexec, "-n", "2"] if mpiexec else []
    job = Launched([*prefix, sys.executable, "-m", "ranvier", "run", *CLI_RUN, "--threads", "1",
                    "--checkpoint-every", "2s", "--out", "run"], cwd=tmp_path)
    try:
        job.wait_for("checkpoint at t = 4 s", timeout=180)
        if how == "SIGKILL":
            os.killpg(job.proc.pid, signal.SIGKILL)
        else:
            job.proc.send_signal(signal.SIGINT)
        job.wait(timeout=15)
    finally:
        job.kill()
    assert job.proc.returncode != 0
    assert not (tmp_path / "run").exists()                       # nothing half-written
    saved = sorted(p.name for p in (tmp_path / "run.checkpoints").iterdir() if p.name.startswith("step-"))
    assert saved[-1] >= "step-000000040000", saved
    segments = sorted(p.name for p in (tmp_path / "run.checkpoints").glob("spikes-*.npz"))  # spikes once each
    assert segments[0].startswith("spikes-000000000000-"), segments
    assert len(segments) == int(saved[-1][len("step-"):]) // 20000, segments   # one per checkpoint saved
    assert not list((tmp_path / "run.checkpoints").glob(".*"))                     # nothing half-written
    done = cli_in(tmp_path, "run", "--resume", "run", "--threads", "2", "--placement", "random", "--quiet")
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["resumed_from"]["time_ms"] >= 4000.0 and summary["duration_ms"] == 30000.0
    whole = cli_in(tmp_path, "run", *CLI_RUN, "--threads", "1", "--quiet", "--out", "whole")
    assert whole.returncode == 0, whole.stderr
    assert same_spike_files(tmp_path / "run" / "spikes.h5", tmp_path / "whole" / "spikes.h5") > 10000
    assert summary["counters"]["spikes_emitted"] == json.loads((tmp_path / "whole" / "summary.json").read_text())[
        "counters"]["spikes_emitted"]


@pytest.mark.parametrize("argv, words", [
    (["run", "dpsnn", "--checkpoint-every", "1s"], ("--checkpoint-every", "--out")),
    (["run", "dpsnn", "--checkpoint-every", "10", "--out", "x"], ("--checkpoint-every", "10s or 500ms")),
    (["run", "--resume", "nowhere"], ("--resume", "no complete checkpoint")),
    (["run", "dpsnn", "--resume", "nowhere"], ("either", "--resume")),
], ids=["no-out", "no-unit", "no-checkpoint", "config-and-resume"])
def test_checkpoint_flags_refused_in_one_line(tmp_path, capsys, monkeypatch, argv, words):
    from ranvier import cli
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ranvier: error:"), err
    for w in words:
        assert w in err[0], err[0]
    assert not any(tmp_path.iterdir())


def test_a_finished_run_resumes_only_to_a_longer_end(tmp_path, capsys, monkeypatch):
    from ranvier import cli
    monkeypatch.chdir(tmp_path)
    base = ["run", "dpsnn", "--neurons", "400", "--set", "synapses_per_neuron=100", "--threads", "1", "--quiet",
            "--energy", "none"]
    assert cli.main([*base, "--duration-ms", "200", "--checkpoint-every", "100ms", "--out", "a"]) == 0
    assert sorted(p.name for p in (tmp_path / "a" / "checkpoints").glob("step-*")) == [
        "step-000000001000", "step-000000002000"]
    capsys.readouterr()
    assert cli.main(["run", "--resume", "a"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
    # on to 300 ms: the same spikes as a 300 ms run
    assert cli.main(["run", "--resume", "a", "--duration-ms", "300", "--out", "longer", "--quiet"]) == 0
    assert cli.main([*base, "--duration-ms", "300", "--out", "b"]) == 0
    same_spike_files(tmp_path / "longer" / "spikes.h5", tmp_path / "b" / "spikes.h5")
