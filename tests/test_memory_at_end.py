"""The end of a long run: the results are written in constant memory, and summary.json reports the
run's true peak, the writing included.

The spikes streamed during a run were mapped whole to write spikes.h5 (pages of a mapped file
count in RSS and in a cgroup's limit), so the end of a 2000 s dpsnn-small run peaked at 282 MB
while the run itself stayed at 65 MB, and summary.json said 65.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT, subprocess_env

from ranvier.bench import restore_cpus

# Writes `spikes` spikes into a FileRecording in chunks, then measures the peak RSS of close()
# alone: VmHWM after resetting it (writing 5 to /proc/self/clear_refs, Linux 4.0 and later).
CLOSE_PEAK = textwrap.dedent("""\
    import sys, numpy as np
    from ranvier.core.recording import FileRecording
    spikes, folder = int(sys.argv[1]), sys.argv[2]
    rec = FileRecording(folder, ["a", "b"], [0, 1000], [1000, 1000], 0.1, 1, ("deliver", "update"))
    chunk, step = 200_000, 0
    rng = np.random.default_rng(1)
    for lo in range(0, spikes, chunk):
        n = min(chunk, spikes - lo)
        steps = np.sort(rng.integers(step, step + 1000, n))
        rec.add(rng.integers(0, 2000, n), steps, np.zeros((1, 10, 2)), step + 1000)
        step += 1000
    def kib(field):
        for line in open("/proc/self/status"):
            if line.startswith(field):
                return int(line.split()[1])
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = kib("VmRSS:")
    rec.close()
    assert rec.error is None, rec.error
    print(kib("VmHWM:") - before)
""")


def close_peak_kib(spikes: int, tmp_path) -> int:
    done = subprocess.run([sys.executable, "-c", CLOSE_PEAK, str(spikes), str(tmp_path / f"rec-{spikes}")],
                          env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_writing_the_spike_file_takes_the_same_memory_for_a_long_record(tmp_path):
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pytest.skip("the peak RSS cannot be reset here (/proc/self/clear_refs)")
    short, long = close_peak_kib(1_000_000, tmp_path), close_peak_kib(4_000_000, tmp_path)
    # 3 million spikes more are 48 MB of ids and steps: mapped, they all stayed resident
    assert long - short < 12 * 1024, (short, long)


def test_summary_json_reports_the_peak_of_the_whole_run_writing_included(tmp_path):
    """The run's peak as the kernel counted it for the whole process (the largest child's
    ru_maxrss, measured by a parent that runs nothing else) is what summary.json says."""
    out = tmp_path / "out"
    measure = textwrap.dedent(f"""\
        import resource, subprocess, sys
        done = subprocess.run({[sys.executable, "-m", "ranvier", "run", str(ROOT / "examples" / "dpsnn-small.toml"),
                                "--duration-ms", "20000", "--threads", "1", "--quiet", "--out", str(out)]!r})
        print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
    """)
    done = subprocess.run([sys.executable, "-c", measure], env=subprocess_env(), capture_output=True, text=True,
                          timeout=600, preexec_fn=restore_cpus)
    status, peak = (int(x) for x in done.stdout.split()[-2:])
    assert status == 0, done.stderr
    reported = json.loads((out / "summary.json").read_text())["peak_rss_bytes"][0]
    assert reported >= 0.98 * peak, (reported, peak)
