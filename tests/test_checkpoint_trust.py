"""Checkpoints that are not what Ranvier wrote are not trusted (ranvier.checkpoint).

Every byte of every file of a checkpoint is covered by a digest (checkpoint.json's own
included): an edited checkpoint is refused in one line naming the checkpoint, the file and the
reason. A checkpoint of another Ranvier version is refused as docs/checkpoints.md says.
`ranvier run --resume` that passes over a damaged newest checkpoint says so in one line and
resumes the one before with the uninterrupted run's spikes."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

import ranvier as rv
from ranvier import checkpoint, cli
from test_checkpoint import copy_of, edit_meta, refused, same_spike_files
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
