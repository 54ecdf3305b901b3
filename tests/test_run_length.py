"""Memory does not grow with the run, and long runs keep every spike.

The engine once reserved its timer vector to the exact new size on every chunk (100 ms
simulated), copying the whole history each time: long runs slowed down quadratically and
spikes and timers piled up in memory. Now both leave the engine after every chunk (streamed
to files, or counted), so the memory a process holds after 82 s of history is what it held
after 12 s: that is what this test pins. Whether a cycle then costs the same late as early is
a timing, measured by bench/run_length.py (it prints the seconds of every block), not here:
a timed assertion in a unit test failed on a noisy shared CI core while the engine was flat
(0.108 s per 10 s simulated, every block, on the development machine).
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

import ranvier as rv
from conftest import restore_cpus, subprocess_env


LONG_RUN = """
import json, sys
import ranvier as rv

def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0

net = rv.models.dpsnn(neurons=400, synapses_per_neuron=100)
sim = rv.Simulation(net, threads=1, seed=3, stream_to=sys.argv[1])
sim.run(2000.0)                                   # warm-up: caches, buffers, the first allocations
sim.run(10000.0)
rss_after_early = rss_bytes()
for _ in range(7):                                # 70 s more, in the chunks a long run is made of
    res = sim.run(10000.0)
growth = rss_bytes() - rss_after_early
sim.close()
print(json.dumps({"growth": growth, "cycles": res.cycles, "spikes_total": res.spikes_total,
                  "populations": [[p.name, p.first_id] for p in net.populations]}))
"""


def test_a_long_run_holds_no_more_memory_and_keeps_every_spike(tmp_path):
    # In a process of its own: inside the test session's process (gigabytes of heap left by the
    # tests before it) the allocator's reuse of freed blocks moved RSS by 2 MB either way.
    child = subprocess.run([sys.executable, "-c", LONG_RUN, str(tmp_path)], env=subprocess_env(),
                           capture_output=True, text=True, timeout=600, preexec_fn=restore_cpus)
    assert child.returncode == 0, child.stderr
    out = json.loads(child.stdout.strip().splitlines()[-1])
    # 70 s of spikes and timers went to the files, not to memory (they would be about 5 MB here)
    assert out["growth"] < 2 * 2**20
    assert out["cycles"] == 82000 and out["spikes_total"] > 0          # a result covers the whole run
    names, firsts = zip(*out["populations"])
    ids, steps = rv.core.recording.read_spike_file(tmp_path / "spikes.h5", list(names), list(firsts), 0.1)
    assert ids.size == out["spikes_total"] and np.all(np.diff(steps) >= 0)
    assert steps.max() >= 810000                       # the last second is in the file too


def test_counted_and_streamed_runs_give_the_same_summary_as_a_kept_one(tmp_path):
    net = rv.models.dpsnn(neurons=400, synapses_per_neuron=100)
    kept = rv.Simulation(net, threads=1, seed=5).run(1500.0)
    counted = rv.Simulation(net, threads=1, seed=5, record_spikes="counts").run(1500.0)
    streamed_sim = rv.Simulation(net, threads=1, seed=5, stream_to=tmp_path)
    streamed = streamed_sim.run(1500.0)
    for other in (counted, streamed):
        assert other.rates() == kept.rates()
        assert other.rates(start_ms=1000.0) == kept.rates(start_ms=1000.0)
        assert other.spikes_total == kept.spike_ids.size
        assert other.cycle_timers.shape == kept.cycle_timers.shape
        assert other.summary()["rates_steady_hz"] == kept.summary()["rates_steady_hz"]
    assert streamed.rates(200.0, 700.0) == kept.rates(200.0, 700.0)      # any window, read from the files
    ids, times = streamed.spikes
    assert np.array_equal(ids, kept.spikes[0]) and np.array_equal(times, kept.spikes[1])
    streamed_sim.close()                                                   # the SONATA file holds the same
    ids, times = streamed.spikes
    assert np.array_equal(ids, kept.spikes[0]) and np.array_equal(times, kept.spikes[1])
    assert counted.spikes is None


def test_a_record_that_cannot_fit_in_memory_is_refused_before_the_run(tmp_path):
    """The artificial-cells probe: spikes kept in memory once went far past the memory estimate."""
    net = rv.models.artificial_cells(cells=2000, targets_per_cell=50)
    sim = rv.Simulation(net, threads=1)
    try:
        sim.run(1e9)          # about 1.3e11 spikes at 65 Hz: terabytes if kept
    except rv.ConfigError as e:
        assert "stream_to" in str(e) and "counts" in str(e)
    else:
        raise AssertionError("a run whose spikes cannot fit in memory was accepted")
    assert sim.steps_done == 0
    streamed = rv.Simulation(net, threads=1, stream_to=tmp_path)        # streamed: accepted, and it runs
    assert streamed.run(100.0).spikes_total > 0
    streamed.close()


def test_time_order_is_lexsorts_order():
    """Spikes sorted by (step, id) through one combined key, as np.lexsort((ids, steps)) sorts
    them: for a chunk's sorted runs (threads' and ranks' parts), for shuffled spikes, and where
    the key would not fit in 63 bits (lexsort itself)."""
    rng = np.random.default_rng(7)
    steps = np.sort(rng.integers(1, 1000, 5000))
    ids = rng.integers(0, 20480, 5000)
    parts = (np.concatenate([ids[::2], ids[1::2]]), np.concatenate([steps[::2], steps[1::2]]))
    shuffled = rng.permutation(5000)
    wide = (rng.integers(0, 2**40, 300), rng.integers(0, 2**30, 300))
    for i, s in (parts, (ids[shuffled], steps[shuffled]), wide, (ids[:0], steps[:0])):
        assert np.array_equal(rv.core.recording.time_order(i, s), np.lexsort((i, s)))


def test_fast_chunks_grow_and_keep_every_spike(monkeypatch):
    """Chunks that take under FAST_CHUNK_S of wall time double, up to LONGEST_CHUNK_MS: the same
    spikes and timers as a run in fixed chunks, in fewer gathers."""
    from ranvier.core import simulation
    net = rv.models.dpsnn(neurons=400, synapses_per_neuron=100)
    fixed = rv.Simulation(net, threads=1, seed=5).run(1700.0, chunk_ms=100.0)
    sizes = []
    original = rv.Simulation._collect

    def collect(self):
        sizes.append(self._engine.cycles_done)
        original(self)
    monkeypatch.setattr(simulation, "FAST_CHUNK_S", 1e9)        # every chunk counts as fast
    monkeypatch.setattr(rv.Simulation, "_collect", collect)
    grown = rv.Simulation(net, threads=1, seed=5).run(1700.0)
    lengths = np.diff([0] + sizes)
    assert lengths.tolist() == [100, 200, 400, 800, 200]       # cycles of 1 ms: doubled, then the rest
    assert np.array_equal(grown.spikes[0], fixed.spikes[0]) and np.array_equal(grown.spikes[1], fixed.spikes[1])
    assert grown.cycle_timers.shape == fixed.cycle_timers.shape
    monkeypatch.setattr(simulation, "FAST_CHUNK_S", 0.0)        # none is: 100 ms chunks, as before
    sizes.clear()
    rv.Simulation(net, threads=1, seed=5).run(1700.0)
    assert np.diff([0] + sizes).tolist() == [100] * 17
