"""Every kernel level gives the same spikes, bit for bit: the scalar steps of the neuron models,
their AVX2 kernels and their AVX-512 kernels (where the CPU has AVX-512). As GeNN runs every
test on every backend, every workload here runs on every level the machine offers, each in a
fresh process (RANVIER_SIMD=scalar|avx2|avx512, which the run's options read),
and its spikes are compared with the scalar level's."""
from __future__ import annotations

import functools
import subprocess
import sys

import pytest

from conftest import subprocess_env

LEVELS = ("scalar", "avx2", "avx512")

# Small instances of every workload, and a network of every neuron model with a vector kernel.
WORKLOADS = {
    "dpsnn": ("rv.models.dpsnn(neurons=1000, synapses_per_neuron=200)", 300.0, {}),
    "microcircuit": ("rv.models.microcircuit(scale=0.02, k_scale=0.05)", 200.0, {}),
    # About 12 external events per neuron and step: many counts reach the vector kernels' cap
    # (PoissonTable::kCounted) and are drawn exactly after.
    "microcircuit-strong-drive": ("rv.models.microcircuit(scale=0.02, k_scale=0.05, bg_rate_hz=60.0)", 100.0, {}),
    # About 16 external events per neuron and 1 ms window: the drive's event lists take many
    # events past the third (further Philox blocks) and counts past the cap.
    "dpsnn-strong-drive": ("rv.models.dpsnn(neurons=1000, synapses_per_neuron=200, external_rate_exc_hz=40.0, "
                           "external_rate_inh_hz=40.0)", 100.0, {}),
    "mam-benchmark": ("rv.models.mam_benchmark(n_areas=2, area_size=500, K=50)", 100.0, {}),
    "artificial-cells": ("rv.models.artificial_cells(cells=2000, targets_per_cell=50)", 100.0, {}),
    "dpsnn-2-threads": ("rv.models.dpsnn(neurons=1000, synapses_per_neuron=200)", 300.0, {"threads": 2}),
}

RUN = """
import hashlib, sys
import numpy as np
import ranvier as rv
from ranvier import _engine
net = {network}
res = rv.Simulation(net, seed=3, threads={threads}).run({duration})
ids, times = res.spikes
digest = hashlib.sha256(np.stack([ids, np.rint(times * 10).astype(np.int64)]).tobytes()).hexdigest()
print(_engine.neuron_simd(), ids.size, digest)
"""


@functools.lru_cache(maxsize=None)
def run(workload: str, level: str) -> tuple[str, int, str]:
    network, duration, options = WORKLOADS[workload]
    code = RUN.format(network=network, duration=duration, threads=options.get("threads", 1))
    done = subprocess.run([sys.executable, "-c", code], env={**subprocess_env(), "RANVIER_SIMD": level},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    used, count, digest = done.stdout.split()
    return used, int(count), digest


@functools.lru_cache(maxsize=None)
def offered(level: str) -> bool:
    """Whether this build on this CPU runs the level's kernels (AVX-512 needs a CPU that has it)."""
    code = "from ranvier import _engine; print(_engine.best_simd())"
    done = subprocess.run([sys.executable, "-c", code], env=subprocess_env(),
                          capture_output=True, text=True, timeout=60, check=True)
    return LEVELS.index(level) <= LEVELS.index(done.stdout.strip())


@pytest.fixture(params=LEVELS)
def simd_level(request) -> str:
    if not offered(request.param):
        pytest.skip(f"this CPU or build does not run the {request.param} kernels")
    return request.param


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_every_kernel_level_gives_the_scalar_spikes(workload, simd_level):
    used, count, digest = run(workload, simd_level)
    assert used == simd_level
    assert count > 0
    assert (count, digest) == run(workload, "scalar")[1:]
