"""Every command and every Python example in README.md and docs/ runs, as documented.

The commands are read from the pages themselves (```sh blocks; ```python blocks), so a
documented command cannot break unnoticed, and a new one cannot be added without a line here:
`SCALED` names each documented command and the flags appended to scale it down (flags given
later override earlier ones, so the command run is the documented one plus these). The
commands of a page run in the order they appear, in one scratch folder that has the
repository's examples/ and bench/, so `ranvier energy results/dpsnn` finds the folder the
`ranvier run ... --out results/dpsnn` before it wrote. Python blocks of a page run in one
namespace, after the textual substitutions in `PYTHON_SCALED` (each must match).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import data_sets
from conftest import ROOT, mpiexec_path, subprocess_env

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
COMMAND_WORDS = ("ranvier", "mpiexec", "python", "pip")


@dataclass(frozen=True)
class Scaled:
    append: str = ""            # flags appended to the documented command
    skip: str | None = None     # why it is not run by this test (and where it is checked instead)
    timeout_s: int = 300
    files: tuple = ()           # scratch files the command reads: (name, text or callable(scratch))
    needs: str | None = None    # a Python module or a program it needs; skipped without it
    exit_codes: tuple = (0,)    # a validation's verdict on a scaled-down model may be "fail" (1)


SMALL_DPSNN = "--neurons 2048 --duration-ms 100"
SMALL_MC = "--set scale=0.02 --set k_scale=0.05 --duration-ms 100"
SMALL_MAM = "--set area_size=400 --set K=40 --duration-ms 100"
VALIDATION = "--scale 0.02 --set k_scale=0.05 --seeds 1 --duration-ms 200 --transient-ms 100"
NEST_SMALL = "--scale 0.02 --k-scale 0.05 --duration-ms 200 --transient-ms 100"
NEST_DPSNN_SMALL = "--neurons 500 --synapses-per-neuron 50 --threads 1"
GRID_2X2 = "--neurons 5000 --set columns_x=2 --set columns_y=2 --duration-ms 600"
GRID_SEARCH = "--neurons 5000 --columns 2x2 --duration-ms 300 --drive 0.5"
UP_SEARCH = "--neurons 2048 --duration-ms 300 --g-c 0.1 --drive 0.5"
# bench/multi_area_nest.py on 2 areas (the model's data set: skipped without it, tests/data_sets.py)
MAM_NEST_SMALL = "--scale 0.002 --k-scale 0.05 --areas V1 V2 --duration-ms 200 --transient-ms 100 --threads 1"
STDP_SMALL = "--neurons 1000 --synapses-per-neuron 100 --duration-ms 200 --transient-ms 50 --threads 1"


def _wall_meter_trace(scratch: Path) -> str:
    """A wall meter's trace (epoch seconds, watts) covering the run archived in results/dpsnn."""
    import json
    marks = json.loads((scratch / "results/dpsnn/summary.json").read_text())["energy"]["marks"]
    start, end = min(marks.values()) - 1.0, max(marks.values()) + 1.0
    times = [start + i * (end - start) / 200 for i in range(201)]
    return "time_s,watts\n" + "".join(f"{t:.3f},{100 + 20 * (i % 2)}\n" for i, t in enumerate(times))


POWER_TRACE = ("wallmeter.csv", _wall_meter_trace)

# The documented command (comment stripped, continuation lines joined) -> how it is run here.
SCALED: dict[str, Scaled] = {
    # README: the two setup commands are run exactly as written by .ci/run on a fresh clone.
    'python3 -m venv .venv && . .venv/bin/activate && pip install . && ranvier run':
        Scaled(skip="the README main command: .ci/run runs it on a fresh clone"),
    'python3 -m venv .venv && . .venv/bin/activate && pip install mpich mpi4py && pip install ".[test]" && python -m pytest -q':
        Scaled(skip="the README test command: .ci/run runs it on a fresh clone"),
    "ranvier run": Scaled(SMALL_DPSNN),
    "ranvier run examples/dpsnn-small.toml": Scaled("--duration-ms 100"),
    "ranvier run dpsnn --neurons 2048 --duration-ms 500": Scaled("--duration-ms 100"),
    "ranvier run dpsnn --neurons 2048 --duration-ms 1000 --pace": Scaled("--duration-ms 200"),
    "ranvier bench imbalance --states aw,swa --duration-ms 3000":
        Scaled("--duration-ms 300 --set neurons=2048 --placements block,random"),
    "ranvier run dpsnn-swa --duration-ms 10000": Scaled("--duration-ms 1000 --neurons 2048"),
    "ranvier bench imbalance examples/dpsnn-grid.toml --placements round-robin,block,random,grid --states aw,swa "
    "--duration-ms 2000": Scaled("--duration-ms 200 --placements random,grid"),
    "ranvier bench exchange examples/dpsnn-grid.toml --ranks 2 --strategies allgather,p2p,neighbor --repeats 1":
        Scaled("--duration-ms 100"),
    "ranvier run artificial-cells --set cells=2000 --duration-ms 200": Scaled("--duration-ms 100"),
    # docs/dpsnn.md, "The papers' grid": 2 x 2 modules of 1250 instead of 4 x 4 and 16 x 16
    "ranvier run examples/dpsnn-grid-swa.toml --out results/grid-swa": Scaled(GRID_2X2),
    "python bench/grid_updown.py results/grid-swa": Scaled(),
    "ranvier run examples/dpsnn-grid-swa.toml --neurons 320000 --set columns_x=16 --set columns_y=16 "
    "--out results/grid-swa-320k": Scaled(GRID_2X2),
    "ranvier run examples/dpsnn-grid-swa.toml --neurons 320000 --set columns_x=16 --set columns_y=16 "
    "--set lateral_length=2 --set lateral_cutoff=6 --out results/grid-swa-320k-l2": Scaled(GRID_2X2),
    "ranvier run examples/dpsnn-grid-swa.toml --neurons 320000 --set columns_x=16 --set columns_y=16 "
    "--set lateral_length=1 --set lateral_cutoff=3 --out results/grid-swa-320k-l1": Scaled(GRID_2X2),
    "ranvier run examples/dpsnn-grid-swa.toml --set lateral_length=1 --set lateral_cutoff=3 --out results/grid-swa-l1":
        Scaled(GRID_2X2),
    "python bench/swa_search.py --neurons 80000 --columns 8x8 --synapses 1125 --duration-ms 3000 --coupling 2.0,1.9 "
    "--g-c 0.2 --drive 0.45,0.47,0.48,0.5 --out results/grid-search-l1": Scaled(GRID_SEARCH),
    "python bench/swa_search.py --neurons 80000 --columns 8x8 --synapses 1125 --lateral-length 2 --lateral-cutoff 6 "
    "--duration-ms 3000 --coupling 2.0,1.9 --g-c 0.2 --drive 0.5 --out results/grid-search-l2": Scaled(GRID_SEARCH),
    "python bench/swa_search.py --neurons 80000 --columns 8x8 --synapses 1125 --lateral-length 0.6 --lateral-cutoff 5 "
    "--lateral-decimals 3 --lateral-inhibitory local --external-weight-f 0.832761 --duration-ms 3000 --coupling 2.0,1.9 "
    "--g-c 0.2 --drive 0.5,0.55 --out results/grid-search-release": Scaled(GRID_SEARCH),
    "ranvier run examples/dpsnn-grid-swa.toml --neurons 320000 --set columns_x=16 --set columns_y=16 "
    "--set lateral_length=0.6 --set lateral_cutoff=5 --set lateral_decimals=3 --set lateral_inhibitory=local "
    "--set external_weight_F_mV=0.832761 --out results/grid-swa-320k-release": Scaled(GRID_2X2),
    'python bench/swa_search.py --neurons 10240 --duration-ms 4000 --threads 1 --coupling "1.5,1.5;2.0,2.0" '
    '--g-c 0.03,0.06 --drive 0.5,0.6,0.7,0.8 --out results/long-up': Scaled(UP_SEARCH),
    'python bench/swa_search.py --neurons 10240 --duration-ms 4000 --threads 1 --coupling "2.0,1.7;2.0,1.65" '
    '--g-c 0.05,0.1 --drive 0.45,0.5 --out results/long-up-2': Scaled(UP_SEARCH),
    "python bench/swa_search.py --neurons 10240 --duration-ms 5000 --threads 1 --coupling 2.0,1.7 --g-c 0.2,0.4 "
    "--drive 0.3,0.38 --out results/long-up-3": Scaled(UP_SEARCH),
    "python bench/swa_search.py --neurons 10240 --duration-ms 5000 --threads 1 --coupling 2.0,1.7 --g-c 0.2,0.3 "
    "--drive 0.42,0.45 --out results/long-up-3b": Scaled(UP_SEARCH),
    "python bench/swa_search.py --neurons 10240 --duration-ms 10000 --threads 1 --coupling 2.0,1.7 --g-c 0.15,0.2 "
    "--drive 0.46,0.48 --out results/long-up-4": Scaled(UP_SEARCH),
    "python bench/swa_search.py --neurons 10240 --duration-ms 10000 --threads 1 --coupling 2.0,1.6 --g-c 0.2,0.3 "
    "--drive 0.42,0.45 --out results/long-up-5": Scaled(UP_SEARCH),
    # docs/checkpoints.md: a run with checkpoints, resumed past its end, then on 2 ranks further still
    "ranvier run examples/dpsnn-small.toml --duration-ms 60000 --checkpoint-every 10s --out results/long-run":
        Scaled("--duration-ms 300 --checkpoint-every 100ms"),
    "ranvier run --resume results/long-run": Scaled("--duration-ms 400"),
    "ranvier run --resume results/long": Scaled("--duration-ms 400"),
    # docs/command-line.md: the same, for the main workload
    "ranvier run examples/dpsnn.toml --duration-ms 600000 --checkpoint-every 60s --out results/long":
        Scaled("--neurons 2048 --duration-ms 300 --checkpoint-every 100ms"),
    "mpiexec -n 2 ranvier run --resume results/long-run --threads 1 --exchange alltoallv": Scaled("--duration-ms 500"),
    "python bench/checkpoint_cost.py dpsnn dpsnn-stdp microcircuit":
        Scaled(skip="full-size benchmark (GBs, minutes): run for docs/checkpoints.md; tests/test_checkpoint.py "
                    "checks resuming on every decomposition"),
    "python bench/soak.py": Scaled("--duration-s 3 --every-s 1 --check-s 0.5"),
    # docs/interconnect.md: where namespaces cannot be made, the TCP transports are left out with the reason
    "ranvier bench interconnect examples/dpsnn-small.toml --duration-ms 1000 --runs 5":
        Scaled("--duration-ms 100 --runs 1 --repeats 5 --sizes 1,512"),
    "ranvier bench interconnect examples/dpsnn-small.toml --duration-ms 1000 --runs 3 --rate 1mbit --sizes 1,64,512":
        Scaled("--duration-ms 100 --runs 1 --repeats 3 --sizes 1,64"),
    "python bench/netns_hosts.py -n 2 -- python -m ranvier run examples/dpsnn-small.toml --out results/two-hosts":
        Scaled(skip="needs root and network namespaces: tests/test_netns_hosts.py runs this script where they can "
                    "be made (and compares its spikes with one process's), and skips with the reason elsewhere"),
    # docs/faults.md: a run stopped by SIGTERM (status 143), then resumed
    "timeout --preserve-status -s TERM 10 ranvier run examples/dpsnn-small.toml --duration-ms 600000 "
    "--checkpoint-every 1s --out results/faulty": Scaled("--checkpoint-every 200ms", exit_codes=(143,), needs="timeout"),
    "ls -a results/": Scaled(),
    "ranvier run --resume results/faulty": Scaled(skip="resumes to the run's end, 600 s simulated, from wherever the "
                                                       "run above was stopped; tests/test_job_faults.py resumes runs "
                                                       "stopped by every fault and compares the spikes"),
    # docs/devices.md
    "ranvier run dpsnn --neurons 2048 --duration-ms 300 --record-state 0,5,10-12 --record-state-interval-ms 1 "
    "--record-spikes-of 0-99 --out results/recorded": Scaled(),
    # docs/pynn.md
    'pip install ".[pynn]"': Scaled(skip="an install: .ci/run installs the test extra, which has PyNN"),
    'pip install "ranvier[nestml]"': Scaled(skip="an install: .ci/run installs nestml for tests/test_nestml.py"),
    # docs/nestml.md: the library table, on one model (every model: minutes of SymPy)
    "python bench/nestml_library.py": Scaled("--only iaf_psc_exp_neuron", needs="pynestml", timeout_s=600),
    # docs/nestml.md: the speed of generated models (the update part, scaled down; the Brunel part
    # against NEST runs minutes)
    "python bench/nestml_speed.py": Scaled("--only update --neurons 1000 --duration-ms 100 --repeats 1",
                                           needs="pynestml", timeout_s=600),
    "python bench/nestml_speed.py --only update": Scaled("--neurons 1000 --duration-ms 100 --repeats 1",
                                                         needs="pynestml", timeout_s=600),
    "python bench/pynn_scenarios.py --out results/pynn-scenarios.md":
        Scaled(skip="PyNN's scenarios: tests/test_pynn_scenarios.py runs them"),
    "python bench/pynn_examples.py --out results/pynn-examples.md":
        Scaled("--only specific_network.py,tsodyksmarkram.py", needs="nest", timeout_s=600),
    "python bench/va_benchmark.py --out results/va-benchmark":
        Scaled(skip="needs the nest extra; tests/test_pynn_backend.py runs the benchmark on 1 and 2 ranks"),
    # docs/dpsnn.md: the DPSNN release's slow-wave configuration on 16 x 16 modules
    "ranvier run dpsnn --neurons 320000 --set columns_x=16 --set columns_y=16 --set J_FF=0.600961 --set J_FB=0.382635 "
    "--set J_BF=0.382635 --set external_weight_F_mV=0.832761 --set lateral_length=0.6 --set lateral_cutoff=5.0 "
    "--set lateral_decimals=3 --set lateral_inhibitory=local --duration-ms 6000 --threads 2 --out results/release-sw":
        Scaled("--neurons 20000 --set columns_x=4 --set columns_y=4 --duration-ms 200"),
    # docs/workloads/multi-area.md, docs/multi-area.md: the model reads its data set (skipped without it)
    "ranvier run --model multi-area --set scale=0.002 --set k_scale=0.1 --duration-ms 1000": Scaled("--duration-ms 100"),
    "ranvier run --model multi-area --set scale=0.2 --set k_scale=0.25 --duration-ms 10000 --threads 2 "
    "--out results/multi-area-0.2":
        Scaled(skip="12 GB (the largest run here; tests/test_multi_area.py runs the model small)"),
    "ranvier run --model multi-area --set scale=0.05 --set k_scale=1.0 --duration-ms 10000 --threads 2 "
    "--out results/multi-area-0.05":
        Scaled(skip="12 GB (the largest run here; tests/test_multi_area.py runs the model small)"),
    "ranvier bench structure-aware multi-area --ranks 2 --set scale=0.01 --set k_scale=0.1 "
    "--set inter_area_delay_min_ms=1.0 --duration-ms 2000 --repeats 3 --out results/structure-aware":
        Scaled(skip="tests/test_multi_area.py runs this bench on the model, scaled down"),
    "ranvier report results/structure-aware":
        Scaled(skip="reads the folder of the bench above; tests/test_multi_area.py writes the report of that bench "
                    "run scaled down"),
    "python bench/multi_area_nest.py --scale 0.01 --k-scale 0.1 --duration-ms 5000 --threads 2 --parallel "
    "--out results/multi-area-nest.json":
        Scaled(MAM_NEST_SMALL, needs="nest"),
    "python bench/multi_area_nest.py --scale 0.01 --k-scale 0.1 --duration-ms 5000 --threads 2 --seeds 1,2 "
    "--connectivity law --out results/multi-area-nest-law.json":
        Scaled(MAM_NEST_SMALL, needs="nest"),
    # docs/sonata.md
    "python examples/sonata/make_network.py sonata-small": Scaled(),
    "ranvier run sonata-small/simulation_config.json --out results/sonata": Scaled(),
    "mpiexec -n 2 ranvier run sonata-small/simulation_config.json --out results/sonata-2 --threads 1": Scaled(),
    "python bench/sonata_300.py --out results/sonata-300-nest":
        Scaled(skip="the example at three resolutions, with the nest extra (tests/test_sonata.py checks the "
                    "example against NEST's output where its data set is here)"),
    # docs/data.md: the data sets (a fetch downloads from GitHub; run where the data set is here)
    "python -m ranvier.datasets list": Scaled(),
    "python -m ranvier.datasets fetch multi-area-model":
        Scaled(skip="downloads from GitHub and installs packages: tests/test_datasets.py runs the fetch offline, "
                    "from a local archive"),
    "python -m ranvier.datasets fetch sonata-300":
        Scaled(skip="downloads from GitHub: tests/test_datasets.py runs the fetch offline, from a local archive"),
    "ranvier run data/sonata/300_pointneurons/simulation_config.json --out results/sonata-300":
        Scaled("--duration-ms 100"),
    # docs/mpi.md, a cluster's own MPI: site-specific (a module system, a placeholder path, srun)
    "module load cray-mpich-abi": Scaled(skip="needs a Cray module system"),
    "export LD_LIBRARY_PATH=/path/to/mpi/lib:$LD_LIBRARY_PATH": Scaled(skip="a placeholder for the site's MPI folder"),
    "srun -n 64 ranvier run examples/dpsnn.toml": Scaled(skip="needs a Slurm cluster"),
    "ranvier run examples/dpsnn.toml --threads 2 --exchange alltoallv --out results/dpsnn": Scaled(SMALL_DPSNN),
    "ranvier run --neurons 40960 --duration-ms 2000 --set g_c_exc_mV_per_ms=0.03 --seed 7": Scaled(SMALL_DPSNN),
    "mpiexec -n 2 -bind-to core ranvier run examples/dpsnn.toml --threads 1 --out results/dpsnn-2ranks":
        Scaled(SMALL_DPSNN),
    "mpiexec -n 2 ranvier run examples/artificial-cells.toml --exchange p2p-nbx --overlap":
        Scaled("--set cells=2000 --duration-ms 100"),
    "ranvier info": Scaled(),
    "ranvier bench exchange dpsnn --ranks 1,2,4 --overlap both --duration-ms 1000 --repeats 3":
        Scaled("--ranks 2 --strategies allgather,p2p --set neurons=2048 --duration-ms 50 --repeats 1"),
    "ranvier bench exchange examples/dpsnn-small.toml --ranks 2 --strategies allgather,alltoallv":
        Scaled("--duration-ms 50 --repeats 1"),
    # default strategies: the list must fit the workload (two-tier needs areas)
    "ranvier bench exchange artificial-cells --ranks 1,2 --set cells=2000 --duration-ms 200 --repeats 1":
        Scaled("--ranks 1 --duration-ms 50"),
    "ranvier bench mpi --ranks 2 --sizes 1,64,4096,32768 --repeats 200": Scaled("--sizes 1,64 --repeats 5"),
    "ranvier bench strong-scaling examples/dpsnn.toml --ranks 1,2,4 --threads 1,2 --baseline-s 5":
        Scaled("--ranks 1,2 --threads 1 --baseline-s 0.1 --set neurons=2048 --duration-ms 100 --repeats 1"),
    "ranvier bench weak-scaling dpsnn --ranks 1,2,4 --per-core 10240":
        Scaled("--ranks 1,2 --per-core 1500 --duration-ms 100 --repeats 1"),
    "ranvier bench weak-scaling mam-benchmark --ranks 1,2,4 --duration-ms 5000 --repeats 5":
        Scaled("--ranks 1,2 --set area_size=400 --set K=40 --duration-ms 100 --repeats 1"),
    "ranvier bench heterogeneity mam-benchmark --knob delay_ratio --values 1,2,5,10,20 --ranks 2":
        Scaled("--values 1,2 --set area_size=400 --set K=40 --duration-ms 100 --repeats 1"),
    "ranvier bench cycle-times mam-benchmark --ranks 2 --duration-ms 10000":
        Scaled("--set area_size=400 --set K=40 --duration-ms 100"),
    "ranvier run examples/dpsnn.toml --baseline-s 5 --out results/dpsnn":
        Scaled(SMALL_DPSNN + " --baseline-s 0.1 --force"),
    "ranvier energy results/dpsnn --power-trace wallmeter.csv": Scaled(files=(POWER_TRACE,)),
    "ranvier bench strong-scaling dpsnn --ranks 1,2 --threads 1,2 --out results/scaling":
        Scaled("--threads 1 --set neurons=2048 --duration-ms 100 --repeats 1"),
    "ranvier report results/scaling": Scaled(),
    "ranvier run examples/microcircuit.toml --out results/microcircuit": Scaled(SMALL_MC),
    "ranvier run --model microcircuit --set scale=0.1 --set k_scale=0.1 --duration-ms 2000": Scaled(SMALL_MC),
    "python bench/microcircuit_validation.py --scale 1 --seeds 1,2,3 --duration-ms 10500 --threads 2 --out results/validation":
        Scaled(VALIDATION, exit_codes=(0, 1)),
    'python bench/nest_compare.py microcircuit --scale 0.1 --k-scale 0.1 --threads 2 --out results/vs-nest':
        Scaled(skip="needs NEST: .ci/run installs the nest extra and runs tests/test_nest_compare.py"),
    "mpiexec -n 4 ranvier run examples/mam-benchmark.toml": Scaled(SMALL_MAM),
    "mpiexec -n 2 ranvier run examples/mam-benchmark.toml --exchange allgather --placement round-robin":
        Scaled(SMALL_MAM),
    # docs/workloads/mam-benchmark.md: the study's own parameters
    "mpiexec -n 4 ranvier run examples/mam-benchmark-study.toml": Scaled("--set scale=0.01 --duration-ms 100"),
    "ranvier run --model mam-benchmark-study --set n_areas=2 --set scale=0.05 --duration-ms 1000":
        Scaled("--set scale=0.01 --duration-ms 100"),
    "ranvier run --model mam-benchmark-study --set n_areas=2 --set scale=0.05 --set area_size=80000 "
    "--set indegree=4000 --set intra_delay_cap=threshold_delay --duration-ms 1000":
        Scaled("--set scale=0.01 --duration-ms 100"),
    "mpiexec -n 4 ranvier run --model mam-benchmark --set n_areas=4 --set area_size_sd=3000 --exchange two-tier "
    "--placement area-groups --global-interval 5": Scaled(SMALL_MAM + " --set area_size_sd=100"),
    # docs/exchange.md
    "ranvier run --exchange p2p-nbx --overlap": Scaled(SMALL_DPSNN),
    "mpiexec -n 4 ranvier run examples/dpsnn.toml --exchange neighbor": Scaled(SMALL_DPSNN),
    "ranvier bench exchange dpsnn --ranks 1,2,4 --overlap both":
        Scaled("--ranks 2 --strategies allgather,neighbor --set neurons=2048 --duration-ms 50 --repeats 1"),
    "ranvier bench exchange artificial-cells --ranks 1,2 --set cells=16384":
        Scaled("--ranks 2 --strategies allgather --set cells=2000 --duration-ms 50 --repeats 1"),
    "ranvier bench mpi --ranks 2": Scaled("--sizes 1,64 --repeats 5"),
    # docs/structure-aware.md
    "mpiexec -n 8 ranvier run examples/mam-benchmark.toml --global-interval 5 --tier-exchange alltoallv":
        Scaled(SMALL_MAM + " --set area_size=200"),
    "mpiexec -n 2 ranvier run examples/mam-benchmark.toml --set d_min_ms=0.2 --overlap": Scaled(SMALL_MAM),
    "python bench/two_tier_overlap.py --repeats 8 --duration-ms 2000 --out results/two-tier-overlap-2areas.csv":
        Scaled("--repeats 1 --duration-ms 50 --area-size 400 --K 40 --barrier on "
               "--configs two-tier,two-tier+overlap --out two-tier-overlap.csv"),
    "python bench/two_tier_overlap.py --areas 4 --repeats 5 --duration-ms 2000 --barrier on "
    "--out results/two-tier-overlap-4areas.csv":
        Scaled("--repeats 1 --duration-ms 50 --area-size 400 --K 40 --configs two-tier+overlap,conventional+overlap "
               "--out two-tier-overlap-4.csv"),
    # docs/microcircuit.md: scaled-down rates drift from the reference, so the verdict may be 1
    "python bench/microcircuit_validation.py --scale 1 --seeds 1,2,3 --duration-ms 10500 --transient-ms 500 "
    "--threads 2 --out bench-results/microcircuit": Scaled(VALIDATION, exit_codes=(0, 1)),
    "python bench/microcircuit_validation.py --scale 0.1 --set k_scale=0.1 --seeds 1,2,3 --out /tmp/mc-0.1":
        Scaled(VALIDATION + " --out mc-0.1", exit_codes=(0, 1)),
    "python bench/microcircuit_validation.py --scale 0.1 --set k_scale=0.5 --set input=dc --out /tmp/mc-k":
        Scaled(VALIDATION + " --out mc-k", exit_codes=(0, 1)),
    "python bench/microcircuit_validation.py --from bench-results/microcircuit --transient-ms 1000":
        Scaled("--transient-ms 100", exit_codes=(0, 1)),
    # docs/nest-comparison.md
    "pip install nest-simulator==3.10.0": Scaled(skip="installs NEST: .ci/run installs the nest extra"),
    'python -c "import nest; print(nest.__version__)"': Scaled(needs="nest"),
    "python bench/nest_compare.py microcircuit --scale 0.1 --k-scale 0.1 --threads 2 --duration-ms 1000 "
    "--transient-ms 500 --seed 1 --out bench-results/nest-0.1": Scaled(NEST_SMALL, needs="nest"),
    "python bench/nest_compare.py microcircuit --scale 0.05 --threads 2 --duration-ms 1000 --transient-ms 500":
        Scaled(NEST_SMALL, needs="nest"),
    "python bench/nest_compare.py microcircuit --scale 1 --threads 2 --duration-ms 1500 --transient-ms 500 "
    "--repeats 1 --out bench-results/nest-full": Scaled(NEST_SMALL, needs="nest"),
    "python bench/nest_compare.py microcircuit --scale 0.1 --skip-nest": Scaled(NEST_SMALL),
    "python bench/nest_compare.py microcircuit --scale 0.1 --skip-ranvier": Scaled(NEST_SMALL, needs="nest"),
    "python bench/nest_compare.py all --scale 0.1 --k-scale 0.1 --neurons 20480 --threads 2 --duration-ms 1000 "
    "--transient-ms 500 --seed 1 --out bench-results/nest-all":
        Scaled(NEST_SMALL + " " + NEST_DPSNN_SMALL, needs="nest"),
    "python bench/nest_compare.py dpsnn --neurons 20480 --threads 2 --duration-ms 2000 --transient-ms 500":
        Scaled(NEST_DPSNN_SMALL + " --duration-ms 200 --transient-ms 100", needs="nest"),
    "python bench/nest_compare.py microcircuit dpsnn --skip-nest": Scaled(NEST_SMALL + " " + NEST_DPSNN_SMALL),
    "pip install microcircuit": Scaled(skip="installs the INM-6 package, never a dependency: "
                                       "tests/test_nest_compare_models.py runs it where it is installed"),
    "python bench/nest_compare.py microcircuit --nest-implementation inm6 --scale 0.1 --k-scale 0.1 --threads 2":
        Scaled(NEST_SMALL, needs="microcircuit"),
    # docs/workloads/dpsnn.md, "Plasticity" (NEST runs too where it is installed)
    "ranvier run examples/dpsnn-stdp.toml": Scaled(SMALL_DPSNN),
    "ranvier run dpsnn --set plasticity=stdp --set stdp_lambda=0.02 --duration-ms 2000": Scaled(SMALL_DPSNN),
    "python bench/stdp_compare.py --neurons 20480 --duration-ms 10000 --threads 2 --out bench-results/stdp":
        Scaled(STDP_SMALL),
    "python bench/stdp_compare.py --neurons 5120 --duration-ms 3000 --transient-ms 1000 --skip-nest":
        Scaled(STDP_SMALL),
    # docs/plasticity.md: weights out and back in (in this order, in one scratch folder), the report
    "ranvier run dpsnn --neurons 2048 --duration-ms 1000 --set plasticity=stdp --set stdp_lambda=0.1 "
    "--out results/learn": Scaled("--duration-ms 100 --force"),
    "ranvier run dpsnn --neurons 2048 --duration-ms 1000 --set plasticity=stdp --set stdp_lambda=0.1 "
    "--initial-weights results/learn/weights.h5": Scaled("--duration-ms 100"),
    "ranvier report results/learn": Scaled(),
    "ranvier run dpsnn --neurons 2048 --duration-ms 1000 --set plasticity=stdp --set stdp_lambda=0.1 "
    "--record-weights 10 --weight-interval-ms 50 --out results/traced": Scaled("--duration-ms 100 --force"),
    "ranvier report results/traced": Scaled(),
    # docs/plasticity.md: the comparison with NEST (tests/test_stdp_nest.py runs it in full)
    "python bench/stdp_nest.py": Scaled("--pairing", needs="nest"),
    # docs/performance.md: callgrind counts (the scratch folder has its own copy of docs/)
    "python bench/instructions.py": Scaled("--workloads dpsnn", needs="valgrind"),
    "python bench/roofline.py": Scaled("--quick"),
    "python bench/roofline.py --workloads dpsnn --threads 2 --json roofline.json": Scaled("--quick"),
    "python bench/roofline.py --calibrate-only": Scaled("--quick"),
    "python bench/instructions.py --compare docs/measurements/instructions.json":
        Scaled("--workloads dpsnn", needs="valgrind", exit_codes=(0, 1)),
    "python bench/instructions.py --out results/instructions.json": Scaled("--workloads dpsnn", needs="valgrind"),
    # docs/performance.md: paired chunks (this engine reads no switch: both settings run the same code)
    "python bench/paired_chunks.py RANVIER_SCHED_PF=16,8 dpsnn --base RANVIER_SCHED_PF=8,4 --pairs 30 --chunk-ms 200 "
    "--threads 2": Scaled("--pairs 2 --chunk-ms 20 --threads 1 --set neurons=2048"),
    "python bench/paired_chunks.py RANVIER_SCHED_ONCE=split microcircuit --pairs 30 --chunk-ms 100 --threads 2":
        Scaled("--pairs 2 --chunk-ms 10 --threads 1 --set scale=0.02 --set k_scale=0.05"),
}


def _commands_of(page: Path) -> list[str]:
    """The commands of a page's ```sh blocks: continuation lines joined, comments dropped."""
    commands = []
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", page.read_text(), re.S):
        if lang not in ("sh", "bash"):
            continue
        for line in re.sub(r"\\\n\s*", " ", body).splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                commands.append(re.sub(r"\s+", " ", line))
    return commands


def _untagged_commands(page: Path) -> list[str]:
    found = []
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", page.read_text(), re.S):
        if lang in ("sh", "bash", "python"):
            continue
        found += [line.strip() for line in body.splitlines() if line.strip().split(" ")[0] in COMMAND_WORDS]
    return found


def _documented() -> list[tuple[Path, str]]:
    """Each documented command once, under the first page that shows it: a second run would find
    the first one's --out folder in the shared scratch folder."""
    first: dict[str, tuple[Path, str]] = {}
    for page in PAGES:
        for command in _commands_of(page):
            first.setdefault(command, (page, command))
    return list(first.values())


DOCUMENTED = _documented()


def test_every_documented_command_is_covered():
    missing = sorted({c for _, c in DOCUMENTED if c not in SCALED})
    assert not missing, ("documented commands without a line in SCALED (tests/test_documented_commands.py): "
                         + "; ".join(missing))
    stale = sorted(set(SCALED) - {c for _, c in DOCUMENTED})
    assert not stale, f"SCALED lists commands no page documents any more: {stale}"


def test_commands_are_in_sh_blocks():
    """A command in an untagged block would escape this test: tag command blocks ```sh."""
    found = {str(p.relative_to(ROOT)): _untagged_commands(p) for p in PAGES}
    assert not {k: v for k, v in found.items() if v}


# -- what documented commands write ------------------------------------------------------------
OUTPUT_FLAGS = ("--out", "--json", "--to", "--output", "-o")


def written_paths(command: str) -> list[str]:
    """The files and folders a command writes: the values of its output flags and redirections."""
    words = shlex.split(command, comments=True)
    found = []
    for i, word in enumerate(words):
        flag, equals, value = word.partition("=")
        if flag in OUTPUT_FLAGS and equals:
            found.append(value)
        elif word in (*OUTPUT_FLAGS, ">", ">>", "tee") and i + 1 < len(words):
            found.append(words[i + 1])
        elif word.startswith(">") and word.lstrip(">"):
            found.append(word.lstrip(">"))
    return found


@functools.cache
def tracked_paths() -> frozenset[str]:
    """Every file git tracks here and every folder that holds one (relative, POSIX)."""
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    files = [f for f in done.stdout.decode().split("\0") if f]
    return frozenset(files) | {str(parent.as_posix()) for f in files for parent in Path(f).parents
                               if str(parent) != "."}


def writes_tracked(path: str) -> bool:
    """Whether writing `path` (relative to the repository's root, as the docs run) would change or
    add to the repository's tracked files: a tracked file or folder, or anything below a tracked
    folder (docs/, examples/, src/, tests/, bench/, ...)."""
    p = Path(os.path.expanduser(path))
    if p.is_absolute():
        try:
            p = p.resolve().relative_to(ROOT.resolve())
        except ValueError:
            return False                        # outside the repository
    parts = Path(os.path.normpath(p)).parts
    return any("/".join(parts[:n]) in tracked_paths() for n in range(1, len(parts) + 1))


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_documented_commands_write_outside_the_tracked_files():
    """A command as documented must not overwrite (or add to) the repository's own files: its
    output goes to results/ (ignored), /tmp or a folder of the user's."""
    assert writes_tracked("docs/measurements/va-benchmark") and writes_tracked("docs/new-measurement.csv")
    assert writes_tracked(str(ROOT / "examples" / "x.toml"))
    assert not writes_tracked("results/va-benchmark") and not writes_tracked("/tmp/mc-0.1")
    assert written_paths("python bench/va_benchmark.py --out docs/measurements/va-benchmark") == \
        ["docs/measurements/va-benchmark"]
    assert written_paths("ranvier run --json=a.json x > log.txt") == ["a.json", "log.txt"]
    bad = [f"{page.relative_to(ROOT)}: `{command}` writes {path}" for page, command in DOCUMENTED
           for path in written_paths(command) if writes_tracked(path)]
    assert not bad, "documented commands that write into the repository's tracked files:\n" + "\n".join(bad)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """One folder per test session with the repository's examples/ and bench/, like a clone."""
    folder = tmp_path_factory.mktemp("documented")
    for name in ("examples", "bench"):
        (folder / name).symlink_to(ROOT / name)
    data_sets.link_data_root(folder)                    # data/...: the data sets, where they are here
    shutil.copytree(ROOT / "docs", folder / "docs")     # commands may write there (a new reference)
    return folder


def _available(need: str) -> bool:
    if shutil.which(need):
        return True
    return importlib.util.find_spec(need) is not None


def _run_id(item):
    page, command = item
    return f"{page.name}:{command[:70]}"


@pytest.mark.parametrize("item", DOCUMENTED, ids=[_run_id(i) for i in DOCUMENTED])
def test_documented_command_runs(item, scratch):
    page, command = item
    how = SCALED.get(command)
    if how is None:
        pytest.fail(f"not in SCALED: {command}")
    if how.skip:
        pytest.skip(how.skip)
    if data_sets.missing_for(command):
        pytest.skip(data_sets.missing_for(command))
    if how.needs and not _available(how.needs):
        pytest.skip(f"needs {how.needs}")
    if command.startswith("mpiexec") and mpiexec_path() is None:
        pytest.skip("no mpiexec in this environment")
    for name, content in how.files:
        (scratch / name).write_text(content(scratch) if callable(content) else content)
    env = subprocess_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if command.startswith("python "):          # this test's Python, as in the activated venv
        command = f"{sys.executable} {command[len('python '):]}"
    full = f"{command} {how.append}".strip()
    done = subprocess.run(full, shell=True, cwd=scratch, env=env, capture_output=True, text=True,
                          timeout=how.timeout_s)
    assert done.returncode in how.exit_codes, (f"{page.relative_to(ROOT)}: `{full}` exited {done.returncode}:\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


# -- Python blocks ---------------------------------------------------------------------------
# page -> [(pattern, replacement)]: each pattern must occur in the page's Python blocks.
PYTHON_SCALED: dict[str, list[tuple[str, str]]] = {
    "README.md": [("neurons=20480", "neurons=2048"), ("sim.run(10_000,", "sim.run(200,"),
                  ("start_ms=1000", "start_ms=100")],
    "docs/measuring.md": [("sim.run(10_000,", "sim.run(200,")],
    "docs/checkpoints.md": [("sim.run(5000.0)", "sim.run(200.0)")],
    "docs/plasticity.md": [("sim.run(1000.0)", "sim.run(200.0)"), ("# (20, 21)", "# (20, 5)")],
    "docs/building-networks.md": [("order = 2500", "order = 250")],
    "docs/microcircuit.md": [("500.0, 10500.0", "100.0, 300.0"), ("scale=1.0, k_scale=1.0", "scale=0.02, k_scale=0.05"),
                             ("run(10_500)", "run(300)"), ("stop_ms=10_500", "stop_ms=300"),
                             ("start_ms=500", "start_ms=100")],
    "docs/structure-aware.md": [("area_size=10000, K=1000", "area_size=400, K=40"), ("sim.run(2000)", "sim.run(100)")],
}
# page -> the context its fragments assume (a network, a simulation, a run folder), scaled down.
PYTHON_PRELUDE: dict[str, str] = {
    "docs/sonata.md": ("import runpy, sys\nsys.argv = ['make_network.py', 'sonata-small']\n"
                       "runpy.run_path('examples/sonata/make_network.py', run_name='__main__')\n"),
    "docs/exchange.md": "import ranvier as rv\nnet = rv.models.dpsnn(neurons=2048)\n",
    "docs/measuring.md": "import ranvier as rv\nsim = rv.Simulation(rv.models.dpsnn(neurons=2048))\n",
    "docs/microcircuit.md": ("import ranvier as rv\nnet = rv.models.microcircuit(scale=0.02, k_scale=0.05)\n"
                             "sim = rv.Simulation(net, stream_to='run')\nsim.run(300)\nsim.close()\n"
                             "populations = [(p.name, p.first_id, p.size) for p in net.populations]\n"),
}
PYTHON_SKIP: dict[str, str] = {}
# page -> a Python module its examples need (skipped without it)
PYTHON_NEEDS: dict[str, str] = {"docs/nestml.md": "pynestml"}


def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)


PYTHON_PAGES = [p for p in PAGES if _python_blocks(p)]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=[str(p.relative_to(ROOT)) for p in PYTHON_PAGES])
def test_documented_python_runs(page, tmp_path):
    name = str(page.relative_to(ROOT))
    if name in PYTHON_SKIP:
        pytest.skip(PYTHON_SKIP[name])
    if name in PYTHON_NEEDS:
        pytest.importorskip(PYTHON_NEEDS[name], reason=f"{name}'s examples need {PYTHON_NEEDS[name]}")
    code = PYTHON_PRELUDE.get(name, "") + "\n".join(_python_blocks(page))
    for pattern, replacement in PYTHON_SCALED.get(name, []):
        assert pattern in code, f"{name}: the scaling substitution {pattern!r} no longer matches its examples"
        code = code.replace(pattern, replacement)
    script = tmp_path / "example.py"
    script.write_text(code)
    for folder in ("examples", "bench"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=subprocess_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{name}: its Python examples failed:\n{done.stderr[-4000:]}"
