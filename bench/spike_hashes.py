"""SHA-256 of every spike of a few fixed workloads, to prove a refactoring changed no spike.

Each workload runs through `ranvier run --out` (in a subprocess, under mpiexec where it needs
ranks); the spikes are read back from spikes.h5 as (population, node id, step), sorted, and
hashed. Run it before and after a change (on the same machine) and compare the lines.

Usage:
    python bench/spike_hashes.py                     # every workload, the default SIMD kernels
    python bench/spike_hashes.py --simd avx2         # RANVIER_SIMD=avx2 (no AVX-512 kernels)
    python bench/spike_hashes.py --only dpsnn microcircuit
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# name -> (ranks, arguments of `ranvier run`)
WORKLOADS = {
    "dpsnn": (1, [str(ROOT / "examples/dpsnn-small.toml"), "--duration-ms", "1000"]),
    "microcircuit": (1, ["--model", "microcircuit", "--set", "scale=0.05", "--set", "k_scale=0.05",
                         "--duration-ms", "500"]),
    "mam-two-tier": (2, [str(ROOT / "examples/mam-benchmark.toml"), "--duration-ms", "200",
                         "--exchange", "two-tier", "--placement", "by-area"]),
    "artificial-cells": (1, [str(ROOT / "examples/artificial-cells.toml"), "--duration-ms", "500"]),
}


def spike_hash(out: Path) -> tuple[str, int]:
    """SHA-256 of the sorted (population, node id, step) triples in out/spikes.h5, and their count."""
    resolution = json.loads((out / "summary.json").read_text())["resolution_ms"]
    digest, total = hashlib.sha256(), 0
    with h5py.File(out / "spikes.h5", "r") as f:
        for name in sorted(f["spikes"]):
            ids = f[f"spikes/{name}/node_ids"][:].astype(np.int64)
            steps = np.rint(f[f"spikes/{name}/timestamps"][:] / resolution).astype(np.int64)
            order = np.lexsort((steps, ids))
            digest.update(name.encode())
            digest.update(np.stack([ids[order], steps[order]], axis=1).tobytes())
            total += len(ids)
    return digest.hexdigest(), total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--simd", help="RANVIER_SIMD for the runs (avx2, scalar)")
    ap.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), help="run only these workloads")
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if args.simd:
        env["RANVIER_SIMD"] = args.simd
    mpiexec = Path(sys.executable).parent / "mpiexec"
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or WORKLOADS:
            ranks, run_args = WORKLOADS[name]
            out = Path(tmp) / name
            cmd = [sys.executable, "-m", "ranvier", "run", *run_args, "--threads", "1", "--energy", "none",
                   "--quiet", "--out", str(out)]
            if ranks > 1:
                cmd = [str(mpiexec), "-n", str(ranks), *cmd]
            t = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"{name}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
                return 1
            h, n = spike_hash(out)
            print(f"{name:18s} {n:9d} spikes  sha256 {h}  ({time.perf_counter() - t:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
