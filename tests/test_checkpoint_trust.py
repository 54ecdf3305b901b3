"""Checkpoints that are not what Ranvier wrote are not trusted (ranvier.io.checkpoint).

Every byte of every file of a checkpoint is covered by a digest (checkpoint.json's own
included): an edited checkpoint is refused in one line naming the checkpoint, the file and the
reason. A checkpoint of another Ranvier version is refused as docs/checkpoints.md says.
`ranvier run --resume` that passes over a damaged newest checkpoint says so in one line and
resumes the one before with the uninterrupted run's spikes. Counters are checked after a
resumed run as after any other. network.pickle names only Ranvier's own network classes: a
pickle that would run code is refused before it does, even with matching digests."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil

import numpy as np
import pytest

import ranvier as rv
from ranvier.io import checkpoint
from ranvier import cli
from ranvier.errors import ConfigError
from test_checkpoint import copy_of, edit_meta, refused, same_spike_files, small_network
from test_checkpoint import saved  # noqa: F401 (a fixture)


def sign(path, **files):
    """Files replaced (name=bytes) with the sizes and digests recomputed, as someone who knows the
    format could: only what is beyond the digests can refuse the result."""
    meta = json.loads((path / "checkpoint.json").read_text())
    for name, data in files.items():
        (path / name).write_bytes(data)
        meta["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    meta["sha256"] = checkpoint.meta_digest(meta)
    (path / "checkpoint.json").write_text(json.dumps(meta, indent=1) + "\n")


def flip_bit(f, at=None):
    data = bytearray(f.read_bytes())
    data[len(data) // 2 if at is None else at] ^= 0x01
    f.write_bytes(bytes(data))


# -- checkpoint.json is covered by a digest ------------------------------------------------------
def test_edited_counters_are_refused(saved, tmp_path):
    """The counters of checkpoint.json (not covered by the file hashes it lists) edited: refused."""
    path = copy_of(saved, tmp_path)
    edit_meta(path, lambda m: m["counters"].update(spikes_emitted=m["counters"]["spikes_emitted"] // 6), signed=False)
    refused(path, f"checkpoint '{path}'", "checkpoint.json", "digest")


@pytest.mark.parametrize("change", [
    lambda m: m.update(step=m["step"] + 10),
    lambda m: m["network"].update(name="other"),
    lambda m: m.update(seed=m["seed"] + 1),
    lambda m: m.pop("sha256"),
], ids=["step", "network-name", "seed", "digest-removed"])
def test_any_edit_of_checkpoint_json_is_refused(saved, tmp_path, change):
    path = copy_of(saved, tmp_path)
    edit_meta(path, change, signed=False)
    refused(path, f"checkpoint '{path}'", "checkpoint.json")


def test_one_changed_byte_of_checkpoint_json_is_refused(saved, tmp_path):
    path = copy_of(saved, tmp_path)
    text = (path / "checkpoint.json").read_text()
    at = text.index('"spikes_emitted": ') + len('"spikes_emitted": ')
    digit = text[at]
    (path / "checkpoint.json").write_text(text[:at] + ("1" if digit != "1" else "2") + text[at + 1:])
    refused(path, "checkpoint.json", "digest")


# -- another version -----------------------------------------------------------------------------
def test_a_checkpoint_of_another_ranvier_version_is_refused(saved, tmp_path):
    """docs/checkpoints.md: a checkpoint resumes only in the Ranvier version that wrote it (digests
    recomputed, so that only the version refuses it)."""
    path = copy_of(saved, tmp_path)
    edit_meta(path, lambda m: m.update(ranvier_version="0.0.9"))
    message = refused(path, "Ranvier 0.0.9", f"Ranvier {rv.__version__}", "ranvier==0.0.9")
    assert message.startswith(f"checkpoint '{path}'"), message


# -- the counters after a resume -----------------------------------------------------------------
@pytest.mark.parametrize("counter, change", [
    ("spikes_emitted", -1000),
    ("spikes_emitted", +7),
    ("spikes_delivered", +10**6),
    ("spikes_received", +3),
    ("events_scheduled", -5),
    ("events_expected", +5),
    ("synaptic_events_recurrent", +5),
])
def test_a_resumed_run_with_altered_counters_is_caught(saved, counter, change):
    """The second line of defence: the counters taken from a checkpoint (here altered in memory,
    past the digest) must still balance with the run's own at the end."""
    sim = rv.Simulation.resume(saved, threads=1)
    sim.counters_before[counter] += change
    with pytest.raises(RuntimeError, match="spike conservation violated"):
        sim.run(20.0)


def test_an_unaltered_resumed_run_balances(saved):
    res = rv.Simulation.resume(saved, threads=1).run(20.0)
    c = res.counters
    assert c["spikes_emitted"] == res.spikes_total > 0
    assert 0 < c["spikes_delivered"] <= c["spikes_received"]


def test_a_resumed_run_recorded_only_in_part_balances(tmp_path):
    """Counts of the part before the checkpoint without spikes (record_spikes=False): the recording
    does not count every spike, and that is no imbalance."""
    sim = rv.Simulation(small_network(), threads=1, seed=3, record_spikes=False)
    sim.run(30.0)
    sim.save(tmp_path / "ck")
    res = rv.Simulation.resume(tmp_path / "ck", threads=2).run(20.0)
    assert res.counters["spikes_emitted"] > res.spikes_total > 0


# -- network.pickle runs no code -----------------------------------------------------------------
class Payload:
    """Unpickled, it would run a shell command that leaves a marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_pickle_that_would_run_code_is_refused(saved, tmp_path):
    path = copy_of(saved, tmp_path)
    marker = tmp_path / "ran"
    net = small_network()
    net.parameters = dict(net.parameters, extra=Payload(marker))
    sign(path, **{"network.pickle": pickle.dumps(net, protocol=4)})
    message = refused(path, "network.pickle", "system", f"checkpoint '{path}'")
    assert not marker.exists()
    assert "posix.system" in message or "os.system" in message or "nt.system" in message, message


@pytest.mark.parametrize("payload", [
    (shutil.rmtree, ("nowhere",)),
    (getattr, ("", "join")),
    (eval, ("1",)),
    (__import__, ("os",)),
], ids=["shutil.rmtree", "getattr", "eval", "import"])
def test_no_callable_outside_ranvier_network_classes_is_taken(saved, tmp_path, payload):
    class Reduced:
        def __reduce__(self):
            return payload

    path = copy_of(saved, tmp_path)
    sign(path, **{"network.pickle": pickle.dumps(Reduced(), protocol=4)})
    refused(path, "network.pickle", payload[0].__name__, "not one of Ranvier's network classes")


def test_a_function_of_ranvier_is_not_taken(saved, tmp_path):
    """Ranvier's own module, but a function, not a network class: it could do anything."""
    from ranvier.cli import run as run_command

    class Reduced:
        def __reduce__(self):
            return run_command.command, (None,)

    path = copy_of(saved, tmp_path)
    sign(path, **{"network.pickle": pickle.dumps(Reduced(), protocol=4)})
    refused(path, "network.pickle", "ranvier.cli.run.command")


def round_trip_networks():
    import mpi_runner
    from conftest import ROOT
    yield "dpsnn", small_network()
    scalars = small_network()                  # NumPy scalars and arrays among the parameters
    scalars.populations[0].params.update(tau_m_ms=np.float64(21.0), t_ref_ms=np.float32(2.0),
                                         V_reset_mV=np.full(scalars.populations[0].size, -60.0))
    scalars.parameters = dict(scalars.parameters, count=np.int64(3), flag=np.bool_(True))
    yield "numpy-scalars", scalars
    yield "dpsnn-stdp", rv.models.dpsnn(neurons=400, synapses_per_neuron=40, plasticity="stdp")
    yield "dpsnn-grid", rv.models.dpsnn(neurons=1280, synapses_per_neuron=100, columns_x=4, columns_y=4,
                                        lateral_length=0.7, lateral_cutoff=2.0)
    yield "microcircuit", rv.models.build("microcircuit", scale=0.01, k_scale=0.01)
    yield "mam-benchmark", rv.models.build("mam-benchmark", n_areas=4, area_size=100, K=40)
    yield "mam-benchmark-study", rv.models.build("mam-benchmark-study", n_areas=4, area_size=100, indegree=40)
    yield "artificial-cells", rv.models.build("artificial-cells", cells=200, targets_per_cell=20)
    try:
        multi_area = rv.models.build("multi-area", scale=1000 / 4130057, k_scale=0.01, **mpi_runner.MULTI_AREA_TEST)
    except ConfigError:         # its data set is not on this machine
        multi_area = None
    if multi_area is not None:
        yield "multi-area", multi_area
    for name in ("devices", "pynn-cells", "heterogeneous"):
        build = {"devices": mpi_runner.devices_network, "pynn-cells": mpi_runner.pynn_cells_network,
                 "heterogeneous": mpi_runner.heterogeneous_network}[name]
        yield name, build(400, 0.05)
    yield "plastic", mpi_runner.plastic_network(600, 30)
    import sys
    sys.path.insert(0, str(ROOT / "examples" / "sonata"))
    from make_network import write_network
    import tempfile
    from ranvier.io import sonata
    with tempfile.TemporaryDirectory() as d:
        yield "sonata", sonata.load(write_network(checkpoint.Path(d)))[0]


def test_networks_of_every_model_round_trip(tmp_path):
    """What a checkpoint's network.pickle holds for every model is read back, equal."""
    for name, net in round_trip_networks():
        f = tmp_path / "network.pickle"
        f.write_bytes(pickle.dumps(net, protocol=4))
        back = checkpoint.load_network(f, where=f"checkpoint '{tmp_path}'")
        assert checkpoint.network_digest(back) == checkpoint.network_digest(net), name


def test_a_pynn_built_network_round_trips(tmp_path):
    pytest.importorskip("pyNN")
    import pyNN.ranvier as sim
    from ranvier.pynn import simulator
    sim.setup(timestep=0.1, min_delay=1.0, threads=1)
    try:
        exc = sim.Population(60, sim.IF_curr_exp(i_offset=0.2))
        inh = sim.Population(20, sim.IF_cond_exp())
        src = sim.Population(20, sim.SpikeSourcePoisson(rate=30.0))
        rng = sim.NumpyRNG(seed=11)
        sim.Projection(src, exc, sim.FixedProbabilityConnector(0.2, rng=rng), sim.StaticSynapse(weight=0.6, delay=1.0))
        stdp = sim.STDPMechanism(timing_dependence=sim.SpikePairRule(tau_plus=20.0, tau_minus=20.0, A_plus=0.01,
                                                                     A_minus=0.012),
                                 weight_dependence=sim.AdditiveWeightDependence(w_min=0.0, w_max=1.5), weight=0.5,
                                 delay=1.0)
        sim.Projection(exc, inh, sim.FixedNumberPreConnector(5, rng=rng), stdp)
        exc.inject(sim.StepCurrentSource(times=[5.0, 10.0], amplitudes=[0.3, 0.0]))
        exc.inject(sim.NoisyCurrentSource(mean=0.1, stdev=0.05, dt=1.0))
        sim.run(5.0)
        net = simulator.state.network
        f = tmp_path / "network.pickle"
        f.write_bytes(pickle.dumps(net, protocol=4))
        back = checkpoint.load_network(f, where="here")
        assert checkpoint.network_digest(back) == checkpoint.network_digest(net)
    finally:
        sim.end()


def test_a_saved_network_resumes_without_being_given(saved):
    sim = rv.Simulation.resume(saved, threads=1)
    assert checkpoint.network_digest(sim.network) == checkpoint.network_digest(small_network())


# -- ranvier run --resume past a damaged newest checkpoint ---------------------------------------
RUN = ["run", "dpsnn", "--neurons", "400", "--set", "synapses_per_neuron=100", "--threads", "1", "--quiet",
       "--energy", "none"]
OLDER, NEWEST = "step-000000001000", "step-000000002000"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A 200 ms run with a checkpoint every 100 ms (two kept), and the uninterrupted 300 ms run."""
    folder = tmp_path_factory.mktemp("finished")
    assert cli.main([*RUN, "--duration-ms", "200", "--checkpoint-every", "100ms", "--out", str(folder / "a")]) == 0
    assert sorted(p.name for p in (folder / "a" / "checkpoints").glob("step-*")) == [OLDER, NEWEST]
    assert cli.main([*RUN, "--duration-ms", "300", "--out", str(folder / "whole")]) == 0
    return folder


def listed_segments(ck):
    return [s["name"] for s in json.loads((ck / "checkpoint.json").read_text()).get("spike_segments", [])]


def newest_only_segment(run):
    """A spike segment that the newest checkpoint lists and the older does not."""
    cks = run / "checkpoints"
    mine = sorted(set(listed_segments(cks / NEWEST)) - set(listed_segments(cks / OLDER)))
    assert mine, "the newest checkpoint lists no segment of its own"
    return cks / mine[-1]


def truncate(f, keep=1000):
    f.write_bytes(f.read_bytes()[:keep])


DAMAGE = {
    "state-truncated": (lambda ck, run: truncate(ck / "state.npz"), ("state.npz", "bytes")),
    "state-bit-flipped": (lambda ck, run: flip_bit(ck / "state.npz"), ("state.npz", "SHA-256")),
    "state-missing": (lambda ck, run: (ck / "state.npz").unlink(), ("state.npz", "missing")),
    "json-invalid": (lambda ck, run: (ck / "checkpoint.json").write_text("{not json"), ("checkpoint.json",)),
    "json-missing": (lambda ck, run: (ck / "checkpoint.json").unlink(), ("checkpoint.json", "missing")),
    "unknown-format": (lambda ck, run: edit_meta(ck, lambda m: m.update(format="somebody-else"), signed=False),
                       ("checkpoint.json", "not a Ranvier checkpoint")),
    "format-version": (lambda ck, run: edit_meta(ck, lambda m: m.update(format_version=99)), ("format 99",)),
    "counters-edited": (lambda ck, run: edit_meta(ck, lambda m: m["counters"].update(spikes_emitted=6291),
                                                  signed=False), ("checkpoint.json", "digest")),
    "ranvier-version": (lambda ck, run: edit_meta(ck, lambda m: m.update(ranvier_version="0.0.9")),
                        ("Ranvier 0.0.9",)),
    "pickle-bit-flipped": (lambda ck, run: flip_bit(ck / "network.pickle"), ("network.pickle", "SHA-256")),
    "recording-truncated": (lambda ck, run: truncate(ck / "recording.npz", 100), ("recording.npz", "bytes")),
    "segment-missing": (lambda ck, run: newest_only_segment(run).unlink(), ("spike segment", "missing")),
    "segment-bit-flipped": (lambda ck, run: flip_bit(newest_only_segment(run)), ("spikes-", "SHA-256")),
    "config-changed": (lambda ck, run: (ck / "config.toml").write_text(
        (ck / "config.toml").read_text().replace("400", "401", 1)), ("config.toml", "SHA-256")),
}


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_newest_checkpoint_is_named_and_the_older_resumed(finished, tmp_path, capsys, kind):
    damage, words = DAMAGE[kind]
    run = tmp_path / "a"
    shutil.copytree(finished / "a", run)
    newest = run / "checkpoints" / NEWEST
    damage(newest, run)
    capsys.readouterr()
    assert cli.main(["run", "--resume", str(run), "--duration-ms", "300", "--out", str(tmp_path / "b"),
                     "--quiet"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    notes = [line for line in err if "skipped checkpoint" in line]
    assert len(notes) == 1, err
    note = notes[0]
    assert note.startswith(f"ranvier: note: skipped checkpoint '{newest}': "), note
    assert note.endswith(f"resuming '{run / 'checkpoints' / OLDER}'"), note
    for w in words:
        assert w in note, note
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["resumed_from"]["time_ms"] == 100.0
    assert same_spike_files(tmp_path / "b" / "spikes.h5", finished / "whole" / "spikes.h5") > 100
    whole = json.loads((finished / "whole" / "summary.json").read_text())["counters"]
    assert summary["counters"]["spikes_emitted"] == whole["spikes_emitted"]


def test_every_checkpoint_damaged_names_the_newests_reason(finished, tmp_path, capsys):
    run = tmp_path / "a"
    shutil.copytree(finished / "a", run)
    truncate(run / "checkpoints" / NEWEST / "state.npz")
    flip_bit(run / "checkpoints" / OLDER / "state.npz")
    capsys.readouterr()
    assert cli.main(["run", "--resume", str(run), "--duration-ms", "300", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ranvier: error:"), err
    assert "no complete checkpoint" in err[0] and str(run / "checkpoints" / NEWEST) in err[0], err[0]
    assert "state.npz" in err[0] and "bytes" in err[0], err[0]


def test_simulation_resume_of_a_folder_says_which_it_skipped(saved, tmp_path, capsys):
    run = tmp_path / "run.checkpoints"
    run.mkdir()
    shutil.copytree(saved, run / "step-000000000500")
    shutil.copytree(saved, run / "step-000000001000")
    flip_bit(run / "step-000000001000" / "state.npz")
    capsys.readouterr()
    sim = rv.Simulation.resume(run, threads=1)
    assert sim.steps_done == 500
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ranvier: note: skipped checkpoint '{run / 'step-000000001000'}': state.npz does not match "
                   f"the SHA-256 written with it; resuming '{run / 'step-000000000500'}'"], err


@pytest.mark.parametrize("kind", ["json-missing", "state-bit-flipped"])
def test_a_run_resumed_in_its_own_folder_replaces_the_damaged_checkpoint(finished, tmp_path, capsys, kind):
    """Resumed into the run's own folder (its --out, where its checkpoints are), the run saves again
    at the damaged checkpoint's step: the damaged one is replaced by a whole one, and the run ends
    as the uninterrupted one."""
    damage, _ = DAMAGE[kind]
    run = tmp_path / "a"
    assert cli.main([*RUN, "--duration-ms", "200", "--checkpoint-every", "100ms", "--out", str(run)]) == 0
    damage(run / "checkpoints" / NEWEST, run)
    assert cli.main(["run", "--resume", str(run), "--duration-ms", "300", "--quiet"]) == 0, capsys.readouterr().err
    assert same_spike_files(run / "spikes.h5", finished / "whole" / "spikes.h5") > 100
    checkpoint.read_meta(run / "checkpoints" / NEWEST)          # whole again
