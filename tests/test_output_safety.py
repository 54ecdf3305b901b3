"""The result folder never costs a user a file: --force replaces only Ranvier's own folders, two
runs cannot write one folder, a full disk or an interrupt leaves nothing half-written, and
whatever was there before stays intact. Each test reproduces a failure found by probing."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import pytest

from conftest import ROOT, subprocess_env
from ranvier.bench import restore_cpus
from ranvier.io.output import MARKER, STAGING_SUFFIX

SMALL = str(ROOT / "examples" / "dpsnn-small.toml")
QUICK = ["--neurons", "400", "--set", "synapses_per_neuron=100", "--duration-ms", "100", "--threads", "1", "--quiet"]


def run(*args, cwd, timeout=120, env=None):
    return subprocess.run([sys.executable, "-m", "ranvier", "run", *map(str, args)], cwd=cwd,
                          env=env or subprocess_env(), capture_output=True, text=True, timeout=timeout,
                          preexec_fn=restore_cpus)


def start(*args, cwd):
    return subprocess.Popen([sys.executable, "-m", "ranvier", "run", *map(str, args)], cwd=cwd,
                            env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=restore_cpus)


def one_error_line(done, *words):
    """Exactly one `ranvier: error:` line on stderr (progress lines aside), no traceback."""
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith(("[", "ranvier: built"))]
    assert len(lines) == 1 and lines[0].startswith("ranvier: error:"), done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def user_files(folder: Path) -> None:
    (folder / "notes.txt").write_text("a user's notes\n")
    (folder / "data").mkdir()
    (folder / "data" / "recording.bin").write_bytes(os.urandom(1000))


def no_staging_left(parent: Path) -> None:
    left = [p.name for p in parent.iterdir() if p.name.endswith(STAGING_SUFFIX) or p.name.endswith(".ranvier-lock")]
    assert not left, left


# -- never delete what Ranvier did not write -------------------------------------------------
@pytest.mark.parametrize("target", [".", ".."])
def test_force_never_deletes_the_current_or_parent_folder(tmp_path, target):
    work = tmp_path / "work"
    work.mkdir()
    user_files(work)
    user_files(tmp_path)
    before = snapshot(tmp_path)
    done = run(SMALL, *QUICK, "--out", target, "--force", cwd=work)
    assert done.returncode == 2
    one_error_line(done, f"'{target}'")
    assert snapshot(tmp_path) == before


def test_force_never_deletes_home_or_root(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    user_files(home)
    before = snapshot(home)
    env = {**subprocess_env(), "HOME": str(home)}
    for target in (str(home), "~", "/"):
        done = run(SMALL, *QUICK, "--out", os.path.expanduser(target) if target != "~" else str(home), "--force",
                   cwd=tmp_path, env=env)
        assert done.returncode == 2, done.stderr
        one_error_line(done)
    assert snapshot(home) == before


def test_force_refuses_a_folder_ranvier_did_not_write(tmp_path):
    theirs = tmp_path / "analysis"
    theirs.mkdir()
    user_files(theirs)
    before = snapshot(theirs)
    done = run(SMALL, *QUICK, "--out", theirs, "--force", cwd=tmp_path)
    assert done.returncode == 2
    one_error_line(done, MARKER)
    assert snapshot(theirs) == before
    no_staging_left(tmp_path)


def test_force_replaces_an_earlier_result_and_missing_parents_are_made(tmp_path):
    out = tmp_path / "results" / "deep" / "run"
    first = run(SMALL, *QUICK, "--out", out, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (out / MARKER).is_file()
    summary = json.loads((out / "summary.json").read_text())
    again = run(SMALL, *QUICK, "--out", out, cwd=tmp_path)          # without --force: refused
    assert again.returncode == 2
    one_error_line(again, "--force")
    replaced = run(SMALL, *QUICK, "--seed", "2", "--out", out, "--force", cwd=tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    assert json.loads((out / "summary.json").read_text())["seed"] == 2 != summary["seed"]
    no_staging_left(out.parent)


def test_a_refusal_after_the_claim_leaves_no_folder_and_no_parents(tmp_path):
    out = tmp_path / "new" / "run"
    # refused by the memory check, which comes after the folder was claimed (parents, lock, staging)
    done = run(SMALL, "--neurons", "2000000", "--set", "synapses_per_neuron=100000", "--out", out, cwd=tmp_path)
    assert done.returncode == 2
    one_error_line(done, "memory")
    assert list(tmp_path.iterdir()) == []


# -- one writer per folder -------------------------------------------------------------------
@pytest.mark.parametrize("force", [False, True])
def test_a_second_run_on_the_same_folder_is_refused_while_the_first_writes(tmp_path, force):
    out = tmp_path / "shared"
    if force:                                         # an earlier result that --force may replace
        assert run(SMALL, *QUICK, "--out", out, cwd=tmp_path).returncode == 0
    flags = ["--force"] if force else []
    # long enough that the second run starts while the first still writes, on a fast machine too
    # (3 s simulated once ended first on a fast core, and the second run then rightly succeeded)
    first = start(SMALL, "--neurons", "2000", "--duration-ms", "30000", "--threads", "1", "--out", out, *flags,
                  cwd=tmp_path)
    try:
        lock = tmp_path / ".shared.ranvier-lock"
        deadline = time.time() + 60
        while not lock.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert lock.exists(), "the first run never claimed the folder"
        second = run(SMALL, *QUICK, "--out", out, *flags, cwd=tmp_path)
        assert second.returncode == 2
        line = one_error_line(second, "another ranvier run", f"pid {first.pid}")
        assert "results written" not in second.stdout, line
    finally:
        stdout, stderr = first.communicate(timeout=180)
    assert first.returncode == 0, stderr
    assert "results written" in stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["duration_ms"] == 30000.0 and summary["neurons"] == 2000
    with h5py.File(out / "spikes.h5") as f:
        assert sum(f[f"spikes/{p}/node_ids"].shape[0] for p in f["spikes"]) == summary["spikes_total"]
    no_staging_left(tmp_path)


@pytest.mark.parametrize("watcher", ["watcher", "watcher-killed-too"])
def test_a_killed_run_leaves_no_folder_and_its_leftovers_are_cleaned(tmp_path, watcher):
    """SIGKILL runs none of the run's own clean-up: its watcher process (ranvier.io.leftovers) removes
    the staging folder and the lock; where the watcher died too, the next claim does."""
    import psutil
    out = tmp_path / "killed"
    proc = start(SMALL, "--neurons", "2000", "--duration-ms", "60000", "--threads", "1", "--out", out, cwd=tmp_path)
    deadline = time.time() + 60
    while not list(tmp_path.glob(f"*{STAGING_SUFFIX}")) and time.time() < deadline:
        time.sleep(0.05)
    watchers = []
    while not watchers and time.time() < deadline:
        watchers = [p for p in psutil.Process(proc.pid).children() if "--watch" in p.cmdline()]
    assert len(watchers) == 1
    time.sleep(1.0)
    if watcher == "watcher-killed-too":
        watchers[0].kill()
    proc.kill()
    proc.communicate(timeout=30)
    psutil.wait_procs(watchers, timeout=10)
    assert not out.exists()
    if watcher == "watcher":
        no_staging_left(tmp_path)
    else:
        assert list(tmp_path.glob(f".killed.*{STAGING_SUFFIX}"))        # hidden, never the result folder
        done = run(SMALL, *QUICK, "--out", out, cwd=tmp_path)           # the next claim removes them
        assert done.returncode == 0, done.stderr
        no_staging_left(tmp_path)


# An interrupt at each point of a run's life: (what the run does, the run, when to send SIGINT).
# `staging` is the hidden folder, claimed before the build; `built` the line printed after it;
# `writing` the spike file the run writes into the staging folder at its end.
BUILD_SLOW = [SMALL, "--neurons", "81920", "--set", "synapses_per_neuron=1000", "--duration-ms", "600000",
              "--threads", "1"]
LONG = [SMALL, "--neurons", "2000", "--duration-ms", "600000", "--threads", "1"]
WRITE_HEAVY = ["artificial-cells", "--set", "cells=50000", "--set", "targets_per_cell=0", "--duration-ms", "3000",
               "--threads", "1"]
MOMENTS = {
    "before the build": (LONG, "staging", 0.0),
    "during the build": (BUILD_SLOW, "staging", 0.3),
    "in the first chunk": (LONG, "built", 0.0),
    "between later chunks": (LONG, "built", 1.5),
    "while writing": (WRITE_HEAVY, "writing", 0.0),
}


def _wait_for(proc, tmp_path, event, lines, deadline) -> bool:
    """Whether the run reached `event`; False where it ended well first (a missed moment)."""
    while time.time() < deadline and proc.poll() is None:
        staging = list(tmp_path.glob(f".res.*{STAGING_SUFFIX}"))
        if event == "staging" and staging:
            return True
        if event == "built" and any("ranvier: built" in line for line in lines):
            return True
        if event == "writing" and staging and (staging[0] / "spikes.h5").exists():
            return True
        time.sleep(0.01)
    if event == "writing" and proc.poll() == 0:
        return False
    pytest.fail(f"the run never reached '{event}' (status {proc.poll()}):\n{''.join(lines)}")


@pytest.mark.parametrize("inherited", ["default", "ignored"])
@pytest.mark.parametrize("moment", list(MOMENTS))
def test_an_interrupt_at_any_moment_ends_the_run_and_leaves_the_earlier_result(tmp_path, moment, inherited):
    """SIGINT at every point of a run's life ends it with 130 and the earlier result as it was,
    nothing hidden left. 'ignored': the run was started with SIGINT ignored, as a shell starts a
    background job (a script's `ranvier run ... &`, a test suite run with &): Python keeps the
    disposition, and the interrupt was lost (the 600 s run finished with status 0)."""
    import threading

    out = tmp_path / "res"
    argv, event, delay = MOMENTS[moment]

    def start_child():
        restore_cpus()
        if inherited == "ignored":
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    # The write at the end lasts a fraction of a second: on a loaded machine the interrupt may
    # land after it, and the run ends well (status 0, its result published). That attempt missed
    # the moment, not the behaviour: try again, a few times, and fail if every one missed it.
    for attempt in range(4 if event == "writing" else 1):
        assert run(SMALL, *QUICK, "--out", out, "--force", cwd=tmp_path).returncode == 0
        before = snapshot(out)
        proc = subprocess.Popen([sys.executable, "-m", "ranvier", "run", *map(str, argv), "--out", str(out),
                                 "--force"], cwd=tmp_path, env=subprocess_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=start_child)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
        reader.start()
        try:
            if _wait_for(proc, tmp_path, event, lines, time.time() + 240):
                time.sleep(delay)
                proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(timeout=10)
        stderr = "".join(lines)
        if proc.returncode == 0 and event == "writing":
            assert "ranvier: interrupted" not in stderr and json.loads((out / "summary.json").read_text()), stderr
            no_staging_left(tmp_path)
            continue                     # finished before the interrupt landed: again
        break
    assert proc.returncode == 130, stderr
    assert "ranvier: interrupted" in stderr and "Traceback" not in stderr, stderr
    assert snapshot(out) == before
    no_staging_left(tmp_path)


# -- a full disk ---------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB file system of its own (tmpfs; needs root, as in CI)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_prints_the_summary_then_one_line_and_keeps_the_earlier_folder(small_disk, tmp_path):
    out = small_disk / "res"
    tiny = run(SMALL, "--neurons", "200", "--set", "synapses_per_neuron=100", "--duration-ms", "50", "--threads", "1", "--quiet", "--out", out,
               cwd=tmp_path)
    assert tiny.returncode == 0, tiny.stderr
    before = snapshot(out)
    # About 60,000 spikes (1 MB in spikes.h5): more than the disk holds.
    done = run(SMALL, "--neurons", "2048", "--duration-ms", "10000", "--threads", "1", "--out", out, "--force",
               cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "real-time factor" in done.stdout and "spikes" in done.stdout        # the summary came first
    line = one_error_line(done, f"mounted at {small_disk}", "full", "need")
    assert "nothing was written" in line
    assert snapshot(out) == before
    no_staging_left(small_disk)


# -- --force killed mid-replacement ---------------------------------------------------------------
FORCE_KILLED = """\
import os, signal, sys
from pathlib import Path
from ranvier.io import leftovers, output

dest, mode = Path(sys.argv[1]), sys.argv[2]
out = output.OutputFolder(dest, force=True)
(out.staging / "spikes.h5").write_bytes(b"the new run's spikes")
if mode == "no-watcher":                  # the watcher killed too: the next claim must recover
    os.kill(out.watcher_pid, signal.SIGKILL)
    out._watcher.proc.wait()
print(out.watcher_pid, flush=True)
if mode == "exchange":                    # killed after the one exchange, before the old folder is removed
    leftovers.shutil.rmtree = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
else:                                     # killed between the two renames: the earlier result held aside
    leftovers._exchange = lambda a, b: False
    rename = os.replace

    def replace(src, dst):
        rename(src, dst)
        if Path(src) == dest:
            os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace
out.publish({"model": "dpsnn"}, {"seed": 9})
"""


@pytest.mark.parametrize("mode", ["exchange", "two-renames", "no-watcher"])
def test_force_killed_mid_replacement_never_loses_the_earlier_result(tmp_path, mode):
    """--force puts the new folder in place of the old one with no moment where neither is there
    (one rename exchange), or, where the file system cannot exchange names, holds the old one
    aside where the watcher, or the next claim, puts it back."""
    from ranvier.io import leftovers
    probe_a, probe_b = tmp_path / "a", tmp_path / "b"
    probe_a.mkdir(), probe_b.mkdir()
    if mode == "exchange" and not leftovers._exchange(probe_a, probe_b):
        pytest.skip("this file system cannot exchange two names in one step")
    probe_a.rmdir(), probe_b.rmdir()
    out = tmp_path / "res"
    assert run(SMALL, *QUICK, "--out", out, cwd=tmp_path).returncode == 0
    before = snapshot(out)
    script = tmp_path / "force_killed.py"
    script.write_text(FORCE_KILLED)
    killed = subprocess.run([sys.executable, script, out, mode], env=subprocess_env(), capture_output=True, text=True,
                            timeout=60, cwd=tmp_path)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    watcher = int(killed.stdout.split()[0])
    if mode != "no-watcher":
        import psutil
        try:
            psutil.Process(watcher).wait(timeout=10)
        except psutil.NoSuchProcess:
            pass
    if mode == "exchange":                # the new result is in place, the earlier one removed
        assert json.loads((out / "summary.json").read_text()) == {"seed": 9}
        assert (out / "spikes.h5").read_bytes() == b"the new run's spikes"
    elif mode == "two-renames":           # the watcher put the earlier result back
        assert snapshot(out) == before
    else:                                 # nobody did yet: the next run puts it back, and refuses without --force
        assert not out.exists()
        again = run(SMALL, *QUICK, "--out", out, cwd=tmp_path)
        assert again.returncode == 2, again.stderr
        one_error_line(again, "--force")
        assert snapshot(out) == before
    no_staging_left(tmp_path)


def test_a_full_disk_while_checkpointing_is_one_line_and_keeps_the_earlier_checkpoints(small_disk, tmp_path):
    """The checkpoints of a run on a 1 MiB disk fill it: one line naming the checkpoint and the
    disk, status 1; the complete checkpoints before it are intact and resumable, an earlier
    result folder is untouched, nothing half-written stays."""
    from ranvier.io import checkpoint
    out = small_disk / "res"
    first = run(SMALL, "--neurons", "200", "--set", "synapses_per_neuron=100", "--duration-ms", "50", "--threads", "1",
                "--quiet", "--out", out, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = snapshot(out)
    done = run(SMALL, "--neurons", "1000", "--set", "synapses_per_neuron=100", "--duration-ms", "10000",
               "--threads", "1", "--energy", "none", "--checkpoint-every", "200ms", "--checkpoint-keep", "100", "--quiet",
               "--out", out, "--force", cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stderr
    line = one_error_line(done, "could not write the checkpoint", f"mounted at {small_disk}", "full",
                          "earlier checkpoints are intact")
    assert snapshot(out) == before
    no_staging_left(small_disk)
    folder = small_disk / "res.checkpoints"
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")], line
    newest = checkpoint.newest(folder)
    checkpoint.read_meta(newest)                       # every file whole
    assert checkpoint.read_meta(newest)["time_ms"] >= 200.0


def test_recover_puts_back_a_held_result_and_clears_the_rest(tmp_path):
    """ranvier.io.leftovers.recover, as the next claim runs it: an earlier result held aside by a run
    that died between its two renames goes back; with a new result in place it is removed; a
    half-written checkpoint goes, one held aside while being replaced comes back."""
    from ranvier.io import leftovers
    held = tmp_path / ".res.replaced.abc.ranvier-tmp" / "result"
    held.mkdir(parents=True)
    (held / MARKER).write_text("earlier")
    (tmp_path / ".res.xyz.ranvier-tmp").mkdir()                      # a staging folder
    (tmp_path / ".other.xyz.ranvier-tmp").mkdir()                    # another destination's: kept
    leftovers.recover(tmp_path, "res")
    assert (tmp_path / "res" / MARKER).read_text() == "earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.xyz.ranvier-tmp", "res"]
    held.mkdir(parents=True)                                         # again, now with a result in place
    (held / MARKER).write_text("older")
    leftovers.recover(tmp_path, "res")
    assert (tmp_path / "res" / MARKER).read_text() == "earlier"
    assert not (tmp_path / ".res.replaced.abc.ranvier-tmp").exists()
    ck = tmp_path / "run.checkpoints"
    (ck / ".step-000000001000.old.q.ranvier-tmp" / "checkpoint").mkdir(parents=True)
    (ck / ".step-000000002000.w.ranvier-tmp").mkdir()
    (ck / ".spikes-000000000000-000000000010.npz.ranvier-tmp").write_bytes(b"half")
    leftovers.recover_checkpoints(ck)
    assert sorted(p.name for p in ck.iterdir()) == ["step-000000001000"]


def test_the_crash_line_is_formatted_when_installed():
    from ranvier import _engine
    from ranvier.runtime import parallel
    was = _engine.crash_report_installed()
    try:
        parallel.install_crash_report(2, 4)
        assert _engine.crash_report_line(signal.SIGSEGV) == (
            "\nranvier: error: rank 2 of 4: crashed (SIGSEGV, an invalid memory access); stopping every rank\n")
        parallel.install_crash_report(0, 1)
        assert _engine.crash_report_line(signal.SIGABRT) == "\nranvier: error: crashed (SIGABRT, aborted)\n"
        assert _engine.crash_report_line(signal.SIGTERM) == ""           # not a crash
    finally:
        if not was:
            _engine.uninstall_crash_report()


def test_an_interrupt_while_the_result_takes_its_place_waits_for_it():
    """The rename of the staging folder into place and the release of the claim run whole: an
    interrupt then acts once they are done (the result is complete, never half-replaced)."""
    from ranvier.io.output import interrupts_held

    # Python's own SIGINT handler, as in a foreground process: a suite started in the background
    # (`pytest &` in a script) inherits SIGINT ignored, and the held interrupt then goes, as it
    # should, to that disposition
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        done = []
        with pytest.raises(KeyboardInterrupt):
            with interrupts_held():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)                   # the handler would have run by now
                done.append("the block went on")
        assert done == ["the block went on"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, inherited)
