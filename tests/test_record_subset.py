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
    ids, steps = rv.recording.read_spike_file(tmp_path / "spikes.h5", [p.name for p in net.populations],
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
