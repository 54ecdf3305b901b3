"""The default thread count leaves out the cores other work keeps busy (a user's laptop, a
shared node): 2 threads beside one busy process on 2 cores ran slower than 1 thread (real-time
factor 0.55 against 0.38). The figures are in bench/threads_under_load.py; here, the choice."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import ranvier
import ranvier as rv
from ranvier.runtime import resources


@pytest.fixture(autouse=True)
def fresh_measurement(monkeypatch):
    monkeypatch.setattr(resources, "_last_load", None)


@pytest.mark.parametrize("cores, busy, ranks, expected", [
    (2, 0.0, 1, 2), (2, 0.5, 1, 2), (2, 0.8, 1, 1), (2, 1.0, 1, 1), (2, 2.0, 1, 1),
    (8, 1.0, 1, 7), (8, 2.9, 1, 5), (2, 1.0, 2, 1), (8, 3.0, 2, 4),
], ids=lambda v: str(v))
def test_busy_cores_are_left_out_in_one_process(monkeypatch, cores, busy, ranks, expected):
    monkeypatch.setattr(resources, "cores", lambda: cores)
    monkeypatch.setattr(resources.os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(resources, "cores_busy_elsewhere", lambda cpus=None: busy)
    threads, note = resources.default_threads(ranks, set(range(cores)))
    assert threads == expected
    fewer = ranks == 1 and expected < cores
    assert (note is not None) == fewer
    if fewer:
        assert f"running {expected} thread(s) instead of {cores}" in note


def test_a_busy_process_is_measured_as_a_busy_core():
    """Among the CPUs the process had before the engine pinned its thread to one of them: the
    busy process may run on any other."""
    elsewhere = set(ranvier._cpus_at_import) - os.sched_getaffinity(0)     # not where this thread runs
    cpu = min(elsewhere or ranvier._cpus_at_import)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    try:
        time.sleep(0.5)
        assert resources.cores_busy_elsewhere(ranvier._cpus_at_import) >= resources.BUSY_CORE
    finally:
        busy.kill()
        busy.wait()


def test_this_processs_own_work_is_not_counted(monkeypatch):
    """What the measuring process itself computes (a thread of its own spinning through the
    window) is not other work: measured with and without it, back to back, the same."""
    import threading

    def measure_with_spinner():
        stop = threading.Event()
        spinner = threading.Thread(target=lambda: [None for _ in iter(stop.is_set, True)], daemon=True)
        spinner.start()
        try:
            return resources.cores_busy_elsewhere()
        finally:
            stop.set()
            spinner.join()

    alone = []
    for _ in range(3):
        monkeypatch.setattr(resources, "_last_load", None)
        without = resources.cores_busy_elsewhere()
        monkeypatch.setattr(resources, "_last_load", None)
        alone.append(measure_with_spinner() - without)
    assert min(alone) < 0.5, alone                # counted, the spinner would add a whole core


def test_a_simulation_without_threads_says_why_it_runs_fewer(monkeypatch, capsys):
    monkeypatch.setattr(resources, "cores_busy_elsewhere", lambda cpus=None: float(resources.cores()))
    sim = rv.Simulation(rv.models.dpsnn(neurons=400, synapses_per_neuron=40))
    assert sim.threads == 1
    if resources.cores() > 1:
        assert "ranvier: note: other processes keep" in capsys.readouterr().err
    explicit = rv.Simulation(rv.models.dpsnn(neurons=400, synapses_per_neuron=40), threads=2)
    assert explicit.threads == 2                     # an explicit count is never changed
