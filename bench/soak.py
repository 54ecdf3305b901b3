"""A soak run: a long simulation with checkpoints, checking that memory stays flat, rates stay
stable, and every checkpoint resumes to the same spikes.

    python bench/soak.py [--config examples/dpsnn-small.toml] [--duration-s 1000] [--every-s 100]
        [--threads 2] [--folder /tmp/ranvier-soak] [--check-s 1] [--json FILE]

Runs `ranvier run CONFIG --duration-ms ... --checkpoint-every ...s --checkpoint-keep all --out
FOLDER/run` and samples the resident memory of the run once a second. Then, for every checkpoint
at time t, `ranvier run --resume` on a different decomposition (the other thread count, random
placement) to t + --check-s, and compares its spikes in [t, t + check) with the soak run's.
Prints the memory and rate per interval between checkpoints, the checkpoints' sizes and save
times, and the resume checks; exits 1 if any check fails.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def rss_bytes(pid: int) -> int:
    """Resident memory of a process and its children (mpiexec's ranks too)."""
    try:
        import psutil
        p = psutil.Process(pid)
        return sum(q.memory_info().rss for q in [p, *p.children(recursive=True)])
    except Exception:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
    return 0


def spikes(path: Path):
    """All spikes of a SONATA spike file: (global ids, times in ms), sorted by (time, id)."""
    with h5py.File(path) as f:
        groups = f["spikes"]
        ids, times = [], []
        summary = json.loads((path.parent / "summary.json").read_text())
        first = {p["name"]: p["first_id"] for p in summary["populations"]}
        for name in groups:
            ids.append(np.asarray(groups[name]["node_ids"]) + first[name])
            times.append(np.asarray(groups[name]["timestamps"]))
    ids, times = np.concatenate(ids), np.concatenate(times)
    order = np.lexsort((ids, times))
    return ids[order], times[order]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "examples" / "dpsnn-small.toml"))
    ap.add_argument("--duration-s", type=float, default=1000.0)
    ap.add_argument("--every-s", type=float, default=100.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--check-s", type=float, default=1.0, help="simulated seconds each resume check runs")
    ap.add_argument("--folder", default="/tmp/ranvier-soak")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    folder = Path(a.folder)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    keep = int(a.duration_s / a.every_s) + 1
    cmd = [sys.executable, "-m", "ranvier", "run", a.config, "--duration-ms", f"{a.duration_s * 1000:g}",
           "--threads", str(a.threads), "--checkpoint-every", f"{a.every_s:g}s", "--checkpoint-keep", str(keep),
           "--energy", "none", "--out", "run"]
    print("$", " ".join(cmd[1:]), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    memory: list[tuple[float, int]] = []
    saves: list[dict] = []

    def read_stderr():
        for line in proc.stderr:
            m = re.search(r"checkpoint at t = ([0-9.e+]+) s: (\S+) \(([0-9.]+) MB, ([0-9.]+) s\)", line)
            if m:
                saves.append({"t_s": float(m.group(1)), "path": m.group(2), "MB": float(m.group(3)),
                              "save_s": float(m.group(4)), "wall_s": time.perf_counter() - t0})

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    while proc.poll() is None:
        memory.append((time.perf_counter() - t0, rss_bytes(proc.pid)))
        time.sleep(1.0)
    out = proc.stdout.read()
    reader.join(timeout=10)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(out, file=sys.stderr)
        print(f"the soak run failed with status {proc.returncode}", file=sys.stderr)
        return 1
    run = folder / "run"
    summary = json.loads((run / "summary.json").read_text())
    ids, times = spikes(run / "spikes.h5")
    n = summary["neurons"]
    print(f"soak: {summary['duration_ms'] / 1000:g} s simulated in {wall:.1f} s wall (RTF {summary['real_time_factor']:.3f}), "
          f"{summary['spikes_total']:,} spikes, {len(saves)} checkpoints")
    # memory and rate per interval between checkpoints
    rows = []
    edges = [0.0] + [s["wall_s"] for s in saves] + [wall]
    for k in range(len(edges) - 1):
        inside = [m for t, m in memory if edges[k] <= t < edges[k + 1]]
        t_lo, t_hi = k * a.every_s, min((k + 1) * a.every_s, a.duration_s)
        if t_hi <= t_lo:
            continue
        count = int(np.count_nonzero((times >= t_lo * 1000) & (times < t_hi * 1000)))
        rows.append({"interval_s": [t_lo, t_hi], "rate_hz": count / n / (t_hi - t_lo),
                     "rss_max_MB": max(inside) / 2**20 if inside else None,
                     "rss_min_MB": min(inside) / 2**20 if inside else None})
    print(f"{'simulated s':>14}{'rate Hz':>10}{'RSS min MB':>12}{'RSS max MB':>12}")
    for r in rows:
        lo, hi = r["interval_s"]
        rss = (f"{r['rss_min_MB']:>12.1f}{r['rss_max_MB']:>12.1f}" if r["rss_max_MB"] is not None else f"{'-':>12}{'-':>12}")
        print(f"{lo:>6g}-{hi:<7g}{r['rate_hz']:>10.3f}{rss}")
    # every checkpoint resumed on another decomposition, compared over check_s
    other = 1 if a.threads > 1 else 2
    checks = []
    print(f"{'checkpoint':>12}{'MB':>8}{'save s':>8}  resumed ({other} thread(s), random placement) for {a.check_s:g} s")
    for s in saves:
        ck = run / "checkpoints" / Path(s["path"]).name
        t = s["t_s"]
        if t + a.check_s > a.duration_s + 1e-9:
            checks.append({**s, "same": None})
            print(f"{t:>10g} s{s['MB']:>8.1f}{s['save_s']:>8.2f}  (the run's end: not resumed)")
            continue
        dest = folder / f"resumed-{t:g}"
        done = subprocess.run([sys.executable, "-m", "ranvier", "run", "--resume", str(ck), "--duration-ms",
                               f"{(t + a.check_s) * 1000:g}", "--threads", str(other), "--placement", "random",
                               "--energy", "none", "--quiet", "--out", str(dest)], capture_output=True, text=True)
        same = False
        if done.returncode == 0:
            r_ids, r_times = spikes(dest / "spikes.h5")
            window = (times >= t * 1000) & (times < (t + a.check_s) * 1000)
            mine = (r_times >= t * 1000) & (r_times < (t + a.check_s) * 1000)
            before = (r_times < t * 1000)
            same = bool(np.array_equal(ids[window], r_ids[mine]) and np.array_equal(times[window], r_times[mine])
                        and np.count_nonzero(before) == np.count_nonzero(times < t * 1000))
        checks.append({**s, "same": same, "status": done.returncode})
        print(f"{t:>10g} s{s['MB']:>8.1f}{s['save_s']:>8.2f}  {'same spikes' if same else 'DIFFERENT: ' + done.stderr[-300:]}")
        shutil.rmtree(dest, ignore_errors=True)
    ok = all(c["same"] is not False for c in checks)
    if a.json:
        Path(a.json).write_text(json.dumps({"command": cmd[1:], "wall_s": wall, "summary_rtf": summary["real_time_factor"],
                                            "spikes_total": summary["spikes_total"], "intervals": rows,
                                            "checkpoints": checks, "memory": memory}, indent=1) + "\n")
    print("every checkpoint resumed to the same spikes" if ok else "a checkpoint did not resume to the same spikes")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
