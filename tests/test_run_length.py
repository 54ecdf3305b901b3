"""A cycle costs the same however many came before it, and memory does not grow with the run.

The engine once reserved its timer vector to the exact new size on every chunk (100 ms
simulated), copying the whole history each time: long runs slowed down quadratically and
spikes and timers piled up in memory. Now both leave the engine after every chunk (streamed
to files, or counted). bench/run_length.py measures long runs; this test checks the rule on a
small network: after a warm-up, 10 s simulated cost the same CPU time (within 20 %, least of
three) after 82 s of history as after 2 s, and a run 5 times longer costs 5 times as much.
"""
from __future__ import annotations

import resource

import numpy as np

import ranvier as rv


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def test_a_ten_times_longer_run_costs_ten_times_the_time(tmp_path):
    net = rv.models.dpsnn(neurons=400, synapses_per_neuron=100)
    sim = rv.Simulation(net, threads=1, seed=3, stream_to=tmp_path)
    sim.run(2000.0)                                   # warm-up: caches, buffers, the first allocations

    def chunk_seconds():
        """CPU seconds of 10 s simulated, the least of three runs (a shared CI core is noisy),
        and the last run's result."""
        times = []
        for _ in range(3):
            t0 = cpu_seconds()
            result = sim.run(10000.0)
            times.append(cpu_seconds() - t0)
        return min(times), result

    early, _ = chunk_seconds()
    rss_after_early = rss_bytes()
    t0 = cpu_seconds()
    sim.run(50000.0)
    long = cpu_seconds() - t0
    late, res = chunk_seconds()
    # A cycle costs the same after 82 s of history as after 2 s; the copying of the whole
    # history every chunk that this guards against made the late chunk several times dearer.
    assert late <= 1.2 * early, f"10 s simulated cost {late:.3f} s of CPU after 82 s, {early:.3f} s after 2 s"
    assert 4.0 <= long / early <= 6.0, f"50 s cost {long / early:.2f}x the CPU time of 10 s"
    # 80 s of spikes and timers went to the files, not to memory (they would be about 5 MB here)
    assert rss_bytes() - rss_after_early < 2 * 2**20
    assert res.cycles == 112000 and res.spikes_total > 0
    sim.close()
    ids, steps = rv.recording.read_spike_file(tmp_path / "spikes.h5", [p.name for p in net.populations],
                                              [p.first_id for p in net.populations], 0.1)
    assert ids.size == res.spikes_total
    assert np.all(np.diff(steps) >= 0)


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
