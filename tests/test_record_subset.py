"""Simulation(record_spikes_of=...): only some neurons' spikes kept or streamed (NEST's spike
recorder on some neurons), every neuron's still counted."""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv

NET = dict(neurons=400, synapses_per_neuron=100)
CHOSEN = [3, 17, 250, 251, 399]


def test_the_chosen_neurons_spikes_and_whole_counts():
    net = rv.models.dpsnn(**NET)
    full = rv.Simulation(net, threads=1, seed=5).run(1500.0)
    part = rv.Simulation(net, threads=1, seed=5, record_spikes_of=CHOSEN).run(1500.0)
    ids, times = full.spikes
    mine = np.isin(ids, CHOSEN)
    assert mine.sum() > 10
    assert np.array_equal(part.spikes[0], ids[mine]) and np.array_equal(part.spikes[1], times[mine])
    assert part.spikes_total == full.spikes_total and part.rates() == full.rates()
    assert part.summary()["rates_steady_hz"] == full.summary()["rates_steady_hz"]
    with pytest.raises(rv.ConfigError, match="need every neuron's spikes"):
        part.rates(200.0, 700.0)


def test_streamed_the_file_holds_the_chosen_neurons_and_any_decomposition_the_same(tmp_path):
    net = rv.models.dpsnn(**NET)
    ref = rv.Simulation(net, threads=1, seed=5, record_spikes_of=CHOSEN).run(1000.0).spikes
    sim = rv.Simulation(net, threads=2, placement="random", seed=5, record_spikes_of=CHOSEN, stream_to=tmp_path)
    res = sim.run(1000.0)
    sim.close()
    ids, steps = rv.core.recording.read_spike_file(tmp_path / "spikes.h5", [p.name for p in net.populations],
                                              [p.first_id for p in net.populations], 0.1)
    assert np.array_equal(ids, ref[0]) and np.array_equal(steps * 0.1, ref[1])
    assert res.spikes_total > ids.size


@pytest.mark.parametrize("kw, words", [
    (dict(record_spikes_of=[0, 400]), "record_spikes_of: neuron ids must be in [0, 400)"),
    (dict(record_spikes_of=[0], record_spikes="counts"), "record_spikes_of chooses the neurons"),
    (dict(record_spikes_of=["a"]), "must be a list of global neuron ids"),
])
def test_bad_choices_are_refused_by_name(kw, words):
    with pytest.raises(rv.ConfigError) as e:
        rv.Simulation(rv.models.dpsnn(**NET), **kw)
    assert words in str(e.value)


def test_neo_has_the_chosen_neurons_trains_only():
    pytest.importorskip("neo")
    net = rv.models.dpsnn(**NET)
    block = rv.Simulation(net, threads=1, seed=5, record_spikes_of=CHOSEN).run(500.0).to_neo()
    assert sorted(st.annotations["source_id"] for st in block.segments[0].spiketrains) == CHOSEN


def test_ranvier_run_writes_the_state_report_and_the_chosen_spikes(tmp_path):
    import h5py

    from conftest import ranvier_cli
    out = tmp_path / "run"
    done = ranvier_cli("run", "dpsnn", "--neurons", "400", "--set", "synapses_per_neuron=100", "--duration-ms", "300",
                       "--threads", "1", "--record-state", "0,5,10-12", "--record-state-interval-ms", "1",
                       "--record-spikes-of", "0-99", "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    net = rv.models.dpsnn(**NET)
    res = rv.Simulation(net, threads=1, record_state=[0, 5, 10, 11, 12], record_state_interval_ms=1.0,
                        record_spikes_of=list(range(100))).run(300.0)
    with h5py.File(out / "state.h5") as f:
        g = f["report/F"]                                     # neurons 0-12 are in population F
        assert g["mapping/node_ids"][:].tolist() == [0, 5, 10, 11, 12]
        assert g["mapping/time"][:].tolist() == [1.0, 301.0, 1.0]
        assert np.allclose(g["data"][:], np.asarray(res.state["V"]).T, atol=1e-4)      # float32 in the file
    ids, steps = rv.core.recording.read_spike_file(out / "spikes.h5", [p.name for p in net.populations],
                                              [p.first_id for p in net.populations], 0.1)
    assert ids.max() < 100 and np.array_equal(ids, res.spikes[0])
    assert "record_spikes_of = [0, 1, 2" in (out / "config.toml").read_text()           # the rerun keeps them


def test_a_bad_id_list_is_one_line_exit_2(tmp_path):
    from conftest import ranvier_cli
    done = ranvier_cli("run", "dpsnn", "--record-state", "5-2")
    assert done.returncode == 2 and "ranges low-high" in done.stderr
