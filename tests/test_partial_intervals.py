"""Runs that end inside a communication interval (Engine::run_steps): the time asked for is the time
simulated, and how a run is split into run() calls changes nothing: the same spikes, state
traces, counters, plastic weights and synapse state as one uninterrupted run, on any ranks x
threads x exchange x placement, with and without overlap, through the two-tier pathway too.
The spikes of an interval's first steps are exchanged when a later call completes it; until
then they are counted as unsent, and the conservation check holds at every stop."""
from __future__ import annotations

import json

import numpy as np
import pytest

import ranvier as rv
from conftest import counters, needs_mpiexec

# Stops at 0.3, 33.6, 33.7 and 33.8 ms: inside cycles of 1 ms (and of 0.5 ms with overlap), two
# stops in one cycle, and one of a single step.
SPLITS = "0.3,33.3,0.1,0.1"
COMPARED = ("spikes_emitted", "synaptic_events_recurrent",
            "synaptic_events_external", "events_scheduled", "events_expected", "events_pending")


def same_run(split: dict, whole: dict, extra=()) -> None:
    assert split["ids"].size > 100
    assert np.array_equal(split["ids"], whole["ids"]) and np.array_equal(split["steps"], whole["steps"])
    a, b = counters(split), counters(whole)
    for k in COMPARED:
        assert a[k] == b[k], k
    assert a["spikes_unsent"] == 0                     # the last call ended on a cycle boundary
    for k in ("state_ids", "state_V", "state_c", *extra):
        assert np.array_equal(split[k], whole[k], equal_nan=True), k


# -- in one process ------------------------------------------------------------------------------
def small_dpsnn():
    return rv.models.dpsnn(neurons=1000, synapses_per_neuron=100)


@pytest.mark.parametrize("kw", [dict(threads=1), dict(threads=2), dict(threads=2, overlap=True)],
                         ids=["1-thread", "2-threads", "overlap"])
def test_splits_at_any_step_change_nothing(kw):
    record = [0, 7, 500, 999]
    whole = rv.Simulation(small_dpsnn(), record_state=record, **kw).run(60.0)
    sim = rv.Simulation(small_dpsnn(), record_state=record, **kw)
    for ms in (0.1, 0.2, 12.3, 0.4, 7.0, 0.05 * 2, 39.9):
        res = sim.run(ms)
        res.check_conservation()
    assert res.duration_ms == pytest.approx(60.0)
    assert res.spike_ids.size > 1000
    assert np.array_equal(res.spike_ids, whole.spike_ids) and np.array_equal(res.spike_steps, whole.spike_steps)
    for k in COMPARED:
        assert res.counters[k] == whole.counters[k], k
    for k in ("V", "c"):
        assert np.array_equal(res.state[k], whole.state[k]), k
    assert res.cycle_timers.shape[0] == whole.cycle_timers.shape[0]   # one timer row per cycle, split or not


def test_a_stop_inside_a_cycle_counts_its_spikes_as_unsent():
    sim = rv.Simulation(small_dpsnn(), threads=1)
    unsent = []
    for _ in range(40):                       # 40 stops of 0.7 ms: most inside a cycle of 1 ms
        res = sim.run(0.7)
        unsent.append(res.counters["spikes_unsent"])
        c = res.counters
        assert c["spikes_emitted"] + c["spikes_unsent"] == res.spikes_total
    assert max(unsent) > 0 and unsent[9] == 0            # at 7.0 ms the cycle is complete


# -- on any decomposition (tests/mpi_runner.py --splits) -------------------------------------------
PLASTIC = dict(model="plastic", neurons=600, synapses=30, ms=120.0)
TSODYKS = dict(model="tsodyks", neurons=500, synapses=40, ms=120.0)
DEVICES = dict(model="devices", neurons=400, ms=120.0)
CELLS = dict(model="pynn-cells", neurons=400, probability=0.05, ms=60.0, record="0,150,395")
TWO_TIER = dict(model="mam-benchmark", neurons=150, synapses=40, ms=60.0, d_min_ms=0.4)   # cycles of 4 steps


@needs_mpiexec
@pytest.mark.parametrize("ranks, kw", [
    (1, dict(threads=2, overlap=True)),
    (2, dict(exchange="alltoallv", placement="block")),
    (3, dict(exchange="p2p", placement="random")),
], ids=["1x2-overlap", "2-ranks", "3-ranks"])
def test_plastic_weights_and_traces_split_on_any_decomposition(workloads, ranks, kw):
    whole = workloads(1, **PLASTIC)
    split = workloads(ranks, **PLASTIC, **kw, splits=SPLITS)
    traces = [k for k in whole if k.startswith(("trace_", "connections_", "up_to_date_"))]
    assert any(k.startswith("trace_") for k in traces)
    same_run(split, whole, traces)


@needs_mpiexec
@pytest.mark.parametrize("ranks, kw", [(1, dict(threads=2)), (2, dict(placement="block", overlap=True))],
                         ids=["1x2", "2-ranks-overlap"])
def test_tsodyks_state_split_on_any_decomposition(workloads, ranks, kw):
    whole = workloads(1, **TSODYKS)
    split = workloads(ranks, **TSODYKS, **kw, splits=SPLITS)
    same_run(split, whole, [k for k in whole if k.startswith("synapse_state_")])


@needs_mpiexec
def test_devices_split_on_two_ranks(workloads):
    """Current sources, spike-train, gamma and dead-time sources across stops inside cycles."""
    whole = workloads(1, **DEVICES)
    same_run(workloads(2, **DEVICES, threads=2, splits="10.3,19.9,0.5"), whole)


@needs_mpiexec
def test_ode_models_split_on_two_ranks(workloads):
    whole = workloads(1, **CELLS)
    same_run(workloads(2, **CELLS, placement="block", splits=SPLITS), whole, ("state_w",))


@needs_mpiexec
def test_two_tier_split_inside_its_windows(workloads):
    whole = workloads(1, **TWO_TIER)
    split = workloads(2, **TWO_TIER, exchange="two-tier/alltoallv", placement="by-area", splits="0.3,17.4,0.1")
    assert split["global_interval"] > 1
    same_run(split, whole)


# -- checkpoints are taken at the end of an interval ------------------------------------------------
def test_saving_inside_a_cycle_is_refused_in_one_line(tmp_path):
    sim = rv.Simulation(small_dpsnn(), threads=1)
    sim.run(10.5)
    with pytest.raises(rv.ConfigError, match=r"t = 10.5 ms, inside one: run to a multiple of 1 ms before saving"):
        sim.save(tmp_path / "ck")
    assert not (tmp_path / "ck").exists()
    sim.run(0.5)
    sim.save(tmp_path / "ck")                     # at the boundary it is taken, and resumes
    resumed = rv.Simulation.resume(tmp_path / "ck", threads=2).run(9.0)
    whole = rv.Simulation(small_dpsnn(), threads=1).run(20.0)
    assert np.array_equal(resumed.spike_ids, whole.spike_ids)
    assert np.array_equal(resumed.spike_steps, whole.spike_steps)


def test_cli_checkpoints_every_interval_not_on_the_cycle_grid(tmp_path):
    """--checkpoint-every 2.5 with cycles of 1 ms: a checkpoint at the end of the cycle in which
    each multiple falls (3, 5, 8, 10 ms), and the run's spikes as without checkpoints."""
    from ranvier import cli

    args = ["run", "dpsnn", "--neurons", "1000", "--set", "synapses_per_neuron=100", "--threads", "1",
            "--energy", "none", "--quiet", "--duration-ms", "10.5"]
    assert cli.main(args + ["--out", str(tmp_path / "plain")]) == 0
    assert cli.main(args + ["--out", str(tmp_path / "ck"), "--checkpoint-every", "2.5ms", "--checkpoint-keep",
                            "10"]) == 0
    steps = sorted(int(p.name.rsplit("-", 1)[-1]) for p in (tmp_path / "ck" / "checkpoints").iterdir()
                   if p.is_dir())
    assert steps == [30, 50, 80, 100]
    a = json.loads((tmp_path / "plain" / "summary.json").read_text())
    b = json.loads((tmp_path / "ck" / "summary.json").read_text())
    assert a["duration_ms"] == b["duration_ms"] == 10.5
    assert a["spikes_total"] == b["spikes_total"] > 100
