"""Result.to_neo(): a run as a neo.Block laid out as PyNN's get_data() (ranvier.io.neo)."""
import numpy as np
import pytest

import ranvier as rv
from ranvier.errors import ConfigError

neo = pytest.importorskip("neo")
pq = pytest.importorskip("quantities")

MS = 200.0


def dpsnn():
    return rv.models.dpsnn(neurons=400, synapses_per_neuron=100)


def content(block):
    """Everything a Block holds that a decomposition must not change (threads and ranks excluded)."""
    seg, = block.segments
    ann = {k: v for k, v in block.annotations.items() if k not in ("threads", "mpi_processes")}
    trains = [(dict(t.annotations), t.magnitude.tobytes(), float(t.t_start), float(t.t_stop), str(t.units))
              for t in seg.spiketrains]
    signals = [(s.name, str(s.units), s.magnitude.tobytes(), s.shape, float(s.t_start), float(s.sampling_period),
                s.annotations["source_population"], s.annotations["source_ids"].tolist(),
                {k: v.tolist() for k, v in s.array_annotations.items()}) for s in seg.analogsignals]
    groups = [(g.name, len(g.spiketrains), len(g.analogsignals)) for g in block.groups]
    return ann, trains, signals, groups


def check_trains(block, res, names=None):
    """Each neuron's SpikeTrain holds exactly its spikes of res.spikes, in time order."""
    ids, times = res.spikes
    pops = [p for p in res.network.populations if names is None or p.name in names]
    seg, = block.segments
    assert len(seg.spiketrains) == sum(p.size for p in pops)
    trains = iter(seg.spiketrains)
    for p in pops:
        for i in range(p.size):
            t = next(trains)
            gid = p.first_id + i
            assert t.annotations == {"source_population": p.name, "source_id": gid, "source_index": i,
                                     "model": p.model}
            assert t.units == pq.ms and float(t.t_start) == 0.0 and float(t.t_stop) == res.duration_ms
            assert np.array_equal(t.magnitude, times[ids == gid])
    return seg


def test_spike_trains_equal_result_spikes():
    res = rv.Simulation(dpsnn(), threads=1, seed=1).run(MS)
    block = res.to_neo()
    seg = check_trains(block, res)
    assert sum(t.size for t in seg.spiketrains) == res.spikes[0].size > 1000
    assert [s.size for s in seg.spiketrains] == np.bincount(res.spikes[0], minlength=400).tolist()
    assert len(seg.analogsignals) == 0                          # no record_state
    assert block.name == "dpsnn" and block.annotations["simulator"] == "ranvier"
    assert block.annotations["dt"] == 0.1 and block.annotations["duration_ms"] == MS
    assert [g.name for g in block.groups] == ["F", "B", "I"]
    for g, p in zip(block.groups, res.network.populations):
        assert len(g.spiketrains) == p.size
        assert all(t.annotations["source_population"] == p.name for t in g.spiketrains)
        assert g.annotations["first_id"] == p.first_id and g.annotations["model"] == "lifca"

    only = res.to_neo(populations=["I", "F"])                 # id order, whatever order asked
    check_trains(only, res, names={"I", "F"})
    assert [g.name for g in only.groups] == ["F", "I"]
    check_trains(res.to_neo(populations="B"), res, names={"B"})
    with pytest.raises(ConfigError, match=r"no population 'X'; the populations are \['F', 'B', 'I'\]"):
        res.to_neo(populations=["F", "X"])


def test_streamed_spikes_give_the_same_block(tmp_path):
    memory = rv.Simulation(dpsnn(), threads=1, seed=2, record_state=[3, 390]).run(MS).to_neo()
    with rv.Simulation(dpsnn(), threads=1, seed=2, record_state=[3, 390], stream_to=tmp_path / "run") as sim:
        res = sim.run(MS)
        during = res.to_neo()                      # read from the binary chunks, before close
    after = res.to_neo()                           # read from spikes.h5
    assert (tmp_path / "run" / "spikes.h5").exists()
    assert content(during) == content(memory)
    assert content(after) == content(memory)
    check_trains(after, res)


def test_counted_spikes_refused_and_unrecorded_spikes_omitted():
    res = rv.Simulation(dpsnn(), threads=1, seed=1, record_spikes="counts").run(100.0)
    with pytest.raises(ConfigError, match=r'record_spikes="counts".*record_spikes=True.*stream_to=FOLDER'):
        res.to_neo()
    res = rv.Simulation(dpsnn(), threads=1, seed=1, record_spikes=False, record_state=[7]).run(100.0)
    seg, = res.to_neo().segments
    assert len(seg.spiketrains) == 0                 # none recorded: no trains (not empty ones)
    assert [s.name for s in seg.analogsignals] == ["v", "c"]


def test_missing_neo_is_a_clear_error(monkeypatch):
    res = rv.Simulation(dpsnn(), threads=1, seed=1).run(100.0)
    monkeypatch.setitem(__import__("sys").modules, "neo", None)     # import neo raises ImportError
    with pytest.raises(ConfigError, match=r'pip install "ranvier\[neo\]"'):
        res.to_neo()


def mixed_network():
    """psc_exp with E_L per neuron, lifca, and a Poisson source (no membrane), all recorded."""
    net = rv.Network(name="mixed")
    e_l = np.linspace(-72.0, -60.0, 30)
    net.add_population(rv.Population("P", 30, {"E_L_mV": e_l, "V_th_mV": -50.0, "V_reset_mV": -65.0,
                                               "V0_mean_mV": -65.0, "V0_sd_mV": 3.0}, model="psc_exp"))
    net.add_population(rv.Population("L", 20, {"tau_m_ms": 20.0, "theta_mV": 20.0, "reset_mV": 10.0,
                                               "alpha_c": 0.1, "g_c_mV_per_ms": 0.05},
                                      initial=rv.random.Uniform(0.0, 15.0)))
    net.add_population(rv.Population("S", 5, {"rate_hz": 50.0, "start_ms": 0.0, "stop_ms": 1000.0},
                                      model="poisson_source"))
    net.connect(rv.Projection(source="S", target="P", probability=1.0, weight=80.0, delay_ms=1.0))
    net.connect(rv.Projection(source="P", target="L", indegree=5, weight=0.5, delay_ms=1.5))
    net.drive(rv.PoissonDrive(target="P", n_synapses=100, rate_hz=100.0, weight=20.0))
    net.drive(rv.PoissonDrive(target="L", n_synapses=100, rate_hz=20.0, weight=0.5))
    return net, e_l


def test_analog_signals_equal_result_state():
    net, e_l = mixed_network()
    record = [1, 29, 8, 30, 49, 52]                # P: 1, 8, 29; L: 30, 49; S: 52
    sim = rv.Simulation(net, threads=1, seed=4, record_state=record)
    sim.run(60.0)
    res = sim.run(40.0)                            # two runs: one Segment for all 100 ms
    steps = round(100.0 / 0.1)
    assert res.state["V"].shape == (len(record), steps)
    block = res.to_neo()
    seg, = block.segments
    by = {(s.annotations["source_population"], s.name): s for s in seg.analogsignals}
    assert list(by) == [("P", "v"), ("P", "I_syn"), ("L", "v"), ("L", "c")]     # none for the source S
    ids = res.state["ids"]
    for pop, first, gids in (("P", 0, [1, 8, 29]), ("L", 30, [30, 49])):
        rows = np.searchsorted(ids, gids)
        for s in (by[pop, "v"], by[pop, "I_syn" if pop == "P" else "c"]):
            assert s.shape == (steps, len(gids))
            assert float(s.t_start) == 0.1 and float(s.sampling_period) == 0.1 and s.t_start.units == pq.ms
            assert s.annotations["source_ids"].tolist() == gids
            assert s.array_annotations["source_id"].tolist() == gids
            assert s.array_annotations["channel_index"].tolist() == [g - first for g in gids]
        v = by[pop, "v"]
        assert v.units == pq.mV
        if pop == "P":                                                  # absolute: E_L added back per neuron
            assert np.array_equal(v.magnitude, (res.state["V"][rows] + e_l[gids][:, None]).T)
            assert v.annotations["v_reference"].startswith("absolute")
            assert by[pop, "I_syn"].units == pq.pA
            assert np.array_equal(by[pop, "I_syn"].magnitude, res.state["c"][rows].T)
            assert np.all(np.abs(v.magnitude[0] - (-65.0)) < 15.0)        # near V0 = -65 mV absolute, not 0
        else:                                                           # lifca: relative to rest, as recorded
            assert np.array_equal(v.magnitude, res.state["V"][rows].T)
            assert v.annotations["v_reference"].startswith("relative to the resting potential")
            assert by[pop, "c"].units == pq.dimensionless
            assert np.array_equal(by[pop, "c"].magnitude, res.state["c"][rows].T)
    assert np.ptp(by["P", "I_syn"].magnitude) > 0 and np.ptp(by["L", "c"].magnitude) > 0   # something moved
    check_trains(block, res)
    groups = {g.name: g for g in block.groups}
    assert len(groups["P"].analogsignals) == 2 and len(groups["S"].analogsignals) == 0
    assert len(groups["S"].spiketrains) == 5 and sum(t.size for t in groups["S"].spiketrains) > 0
    only = res.to_neo(populations=["L"]).segments[0]
    assert [s.name for s in only.analogsignals] == ["v", "c"] and len(only.spiketrains) == 20


def test_two_threads_give_the_same_block():
    blocks = [rv.Simulation(dpsnn(), threads=t, seed=5, record_state=[0, 100, 333, 399]).run(MS).to_neo()
              for t in (1, 2)]
    assert blocks[1].annotations["threads"] == 2
    one, two = content(blocks[0]), content(blocks[1])
    assert one == two
    assert sum(len(t[1]) for t in one[1]) > 0 and len(one[2]) == 6     # spikes there; v and c of F, B, I
