"""SONATA input (ranvier.io.sonata): a point-neuron network in SONATA files runs unchanged.

Two sources of networks: one written here (every feature the reader takes: two node
populations, types with dynamics files and per-node parameters, virtual nodes with spike
inputs in the SONATA layout, node sets, edges with per-edge and per-type weights, delays and
nsyns), and the AllenInstitute/sonata 300-neuron example with the output NEST produced (the
sonata-300 data set, docs/data.md, where it is here), the peer reference.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import data_sets
import ranvier as rv
import ranvier.datasets
from conftest import ROOT, mpiexec_path, needs_mpiexec, restore_cpus, subprocess_env
from ranvier.io import sonata

sys.path.insert(0, str(ROOT / "examples" / "sonata"))
from make_network import write_network  # noqa: E402

EXAMPLE_300 = data_sets.folder("sonata-300") / "300_pointneurons"


def sonata_spikes(net, info, res):
    ids, times = res.spikes
    out = {}
    for p in net.populations:
        if p.name in info.virtual:
            continue
        mine = (ids >= p.first_id) & (ids < p.first_id + p.size)
        name, node_ids = info.populations[p.name]
        a, b = out.get(name, (np.zeros(0, np.int64), np.zeros(0)))
        out[name] = (np.concatenate([a, node_ids[ids[mine] - p.first_id]]), np.concatenate([b, times[mine]]))
    return out


def test_the_network_is_read_as_written(tmp_path):
    config = write_network(tmp_path)
    net, info = sonata.load(config)
    names = [p.name for p in net.populations]
    assert names == ["cortex.E", "cortex.I", "thalamus.9"]
    e = net.population("cortex.E")
    assert e.model == "iaf_psc_alpha" and e.size == 30
    assert e.params["C_m_pF"] == 200.0 and e.params["tau_syn_ex_ms"] == 1.5
    assert np.all(np.asarray(e.params["I_e_pA"]) == 50.0)          # the per-node dynamics_params
    assert net.population("cortex.I").params["tau_syn_in_ms"] == 3.0 and not net.population("cortex.I").excitatory
    # node ids in order within each type: the map back to SONATA is a bijection onto 0..39
    node_ids = np.concatenate([info.populations[n][1] for n in ("cortex.E", "cortex.I")])
    assert sorted(node_ids.tolist()) == list(range(40))
    with h5py.File(tmp_path / "network" / "th_cx_edges.h5") as f:
        nsyns = f["edges/thalamus_to_cortex/0/nsyns"][:]
    th = [pr for pr in net.projections if pr.source == "thalamus.9"]
    weights = np.concatenate([pr.weight for pr in th])
    assert sorted(weights.tolist()) == sorted((120.0 * nsyns).tolist())     # syn_weight x nsyns
    assert {d for pr in th for d in pr.delay_ms} == {1.5}                    # the type's delay
    cx = [pr for pr in net.projections if pr.source.startswith("cortex")]
    assert sum(len(pr.sources) for pr in cx) == 600
    assert {d for pr in cx for d in pr.delay_ms} == {1.0, 2.0, 3.5}         # per edge
    trains = net.population("thalamus.9").params["spike_times_ms"]
    with h5py.File(tmp_path / "inputs.h5") as f:
        t = f["spikes/thalamus/timestamps"][:]
    assert sum(len(x) for x in trains) == np.count_nonzero((t > 0) & (t <= 300.0))   # inside the run, none lost


def test_spikes_are_the_same_for_any_threads_and_placement(tmp_path):
    config = write_network(tmp_path)
    net, info = sonata.load(config)
    runs = [sonata_spikes(net, info, rv.Simulation(net, resolution_ms=0.1, threads=t, placement=pl).run(300.0))
            for t, pl in ((1, "round-robin"), (2, "block"), (2, "random"))]
    assert runs[0]["cortex"][0].size > 100                                   # it fires
    for other in runs[1:]:
        assert np.array_equal(other["cortex"][0], runs[0]["cortex"][0])
        assert np.array_equal(other["cortex"][1], runs[0]["cortex"][1])


def test_a_node_set_may_be_a_population_name(tmp_path):
    """bmtk's examples name the input's population as its node set ("node_set": "thalamus"),
    which SONATA allows: the same network as the node set {"population": "thalamus"}."""
    named = write_network(tmp_path / "named")
    by_population = write_network(tmp_path / "by_population")
    cfg = json.loads(by_population.read_text())
    cfg["inputs"]["lgn"]["node_set"] = "thalamus"
    by_population.write_text(json.dumps(cfg))
    runs = []
    for config in (named, by_population):
        net, info = sonata.load(config)
        runs.append(sonata_spikes(net, info, rv.Simulation(net, resolution_ms=0.1).run(100.0)))
    assert runs[0]["cortex"][0].size > 10
    assert all(np.array_equal(a, b) for a, b in zip(runs[0]["cortex"], runs[1]["cortex"]))


STDP_DYNAMICS = {"tau_plus": 15.0, "lambda": 0.05, "alpha": 0.8, "mu_plus": 0.0, "mu_minus": 0.0, "Wmax": 150.0}


def write_plastic_network(folder: Path, template: str = "nest:stdp_synapse", dynamics: dict | None = None,
                          synapse_file: Path | None = None) -> Path:
    """The network above with its excitatory cortical edges as an edge type of its own (7) with
    the given model_template and dynamics_params file, the inhibitory ones static (type 6), and
    tau_minus (NEST's, of the neuron) on the excitatory cells."""
    config = write_network(folder)
    comp = folder / "components"
    exc = json.loads((comp / "exc.json").read_text())
    (comp / "exc.json").write_text(json.dumps({**exc, "tau_minus": 25.0}))
    (comp / "plastic.json").write_text(json.dumps(STDP_DYNAMICS if dynamics is None else dynamics))
    if synapse_file is not None:
        shutil.copy(synapse_file, comp / synapse_file.name)
    circuit = folder / "circuit_config.json"
    cfg = json.loads(circuit.read_text())
    cfg["components"]["synaptic_models_dir"] = "$COMP"
    circuit.write_text(json.dumps(cfg))
    (folder / "network" / "cx_cx_edge_types.csv").write_text(
        "edge_type_id model_template dynamics_params\n6 static_synapse NULL\n"
        f"7 {template} plastic.json\n")
    with h5py.File(folder / "network" / "cx_cx_edges.h5", "a") as f:
        g = f["edges/cortex_to_cortex"]
        g["edge_type_id"][...] = np.where(g["0/syn_weight"][:] > 0, 7, 6).astype(np.uint32)
    return config


def test_plastic_edge_types_are_read_by_nests_names(tmp_path):
    """An edge type of nest:stdp_synapse with dynamics_params by NEST's names: its edges one
    projection per source and target population with rv.STDP of those parameters; the static
    ones apart; the neurons' tau_minus their populations' trace."""
    net, _ = sonata.load(write_plastic_network(tmp_path))
    plastic = [pr for pr in net.projections if pr.synapse is not None]
    static = [pr for pr in net.projections if pr.synapse is None and pr.source.startswith("cortex")]
    assert {(pr.source, pr.target) for pr in plastic} == {(a, b) for a in ("cortex.E", "cortex.I")
                                                          for b in ("cortex.E", "cortex.I")}
    assert all(pr.synapse == rv.STDP(tau_plus_ms=15.0, lambda_=0.05, alpha=0.8, mu_plus=0.0, mu_minus=0.0,
                                      w_max=150.0) for pr in plastic)
    assert all(w > 0 for pr in plastic for w in pr.weight) and all(w <= 0 for pr in static for w in pr.weight)
    assert sum(len(pr.sources) for pr in plastic + static) == 600
    assert net.population("cortex.E").tau_minus_ms == 25.0 and net.population("cortex.I").tau_minus_ms == 20.0
    nn, _ = sonata.load(write_plastic_network(tmp_path / "nn", "nest:stdp_nn_restr_synapse", {"lambda": 0.02}))
    assert {pr.synapse.pairing for pr in nn.projections if pr.synapse} == {"nearest-restricted"}
    tm, _ = sonata.load(write_plastic_network(tmp_path / "tm", "nest:tsodyks_synapse",
                                              {"U": 0.3, "tau_rec": 400.0, "tau_psc": 1.5}))
    tsodyks = [pr.synapse for pr in tm.projections if pr.synapse]
    assert tsodyks and all(k == rv.TsodyksMarkram(U=0.3, tau_rec_ms=400.0, tau_psc_ms=1.5) for k in tsodyks)


@pytest.mark.parametrize("template, dynamics, words", [
    ("nest:ht_synapse", {}, ["edge type 7", "'nest:ht_synapse'", "not supported", "stdp_synapse"]),
    ("nest:stdp_synapse", {"tau": 3.0}, ["edge type 7", "stdp_synapse parameter(s) ['tau']", "Wmax"]),
    ("nest:stdp_synapse", {"weight": 3.0}, ["['weight']", "the edges' own"]),
    ("nest:stdp_synapse", {"Wmax": -5.0}, ["initial weights", "sign of w_max"]),
    ("static_synapse", {"receptor_type": 4}, ["receptor_type", "not supported"]),
])
def test_an_edge_type_the_reader_cannot_take_is_named(tmp_path, template, dynamics, words):
    with pytest.raises(rv.ConfigError) as e:
        net, _ = sonata.load(write_plastic_network(tmp_path, template, dynamics))
        rv.Simulation(net, resolution_ms=0.1)
    for w in words:
        assert w in str(e.value)


def test_plastic_edges_give_the_same_weights_for_any_threads_and_placement(tmp_path):
    net, info = sonata.load(write_plastic_network(tmp_path))
    plastic = [j for j, pr in enumerate(net.projections) if pr.synapse is not None]
    runs = []
    for threads, placement in ((1, "round-robin"), (2, "block"), (2, "random")):
        sim = rv.Simulation(net, resolution_ms=0.1, threads=threads, placement=placement)
        spikes = sonata_spikes(net, info, sim.run(300.0))
        runs.append((spikes, [sim.weights(net.projections[j].source, net.projections[j].target, index=j)
                              for j in plastic]))
    (spikes0, weights0) = runs[0]
    assert spikes0["cortex"][0].size > 100
    initial = np.concatenate([net.projections[j].weight for j in plastic])
    assert not np.allclose(np.sort(np.concatenate([w.weight for w in weights0])), np.sort(initial))   # it learned
    for spikes, weights in runs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(spikes["cortex"], spikes0["cortex"]))
        for w, w0 in zip(weights, weights0):
            assert all(np.array_equal(a, b) for a, b in zip(w, w0))


def test_plastic_edges_give_nests_spikes_and_weights(tmp_path):
    """NEST 3.10 given the network read (each edge type's synapse as NEST's model, the neurons'
    tau_minus): the same spikes step for step and the same weights at the end, synapse for
    synapse, but for the synapses whose source fired in the last 5 ms: NEST applies a spike's
    update when it delivers it, Ranvier when it arrives, so the spikes still in flight at the
    end differ (bench/stdp_nest.py). Skipped without the nest extra."""
    pytest.importorskip("nest")
    sys.path.insert(0, str(ROOT / "bench"))
    from sonata_300 import identical, nest_run
    net, info = sonata.load(write_plastic_network(tmp_path))
    sim = rv.Simulation(net, resolution_ms=0.1, threads=2)
    res = sim.run(300.0)
    ours = sonata_spikes(net, info, res)
    theirs, _, nest_weights = nest_run(net, info, 0.1, weights=True)
    assert ours["cortex"][0].size > 100 and identical(ours, theirs, 0.1)
    ids, times = res.spikes
    in_flight = np.unique(ids[times > 300.0 - 5.0])
    compared = changed = total = 0
    for j, (src, tgt, w) in nest_weights.items():
        pr = net.projections[j]
        mine = sim.weights(pr.source, pr.target, index=j)
        a, b = np.lexsort((mine.weight, mine.target, mine.source)), np.lexsort((w, tgt, src))
        assert np.array_equal(mine.source[a], src[b]) and np.array_equal(mine.target[a], tgt[b])
        settled = ~np.isin(src[b], in_flight)
        np.testing.assert_allclose(mine.weight[a][settled], w[b][settled], rtol=1e-9, atol=1e-9)
        compared, total = compared + int(settled.sum()), total + w.size
        changed += int(np.count_nonzero(~np.isin(w[b][settled], pr.weight)))
    assert compared > total / 2 and changed > 50                 # most compared; the rule acted


def test_input_spikes_in_one_step_are_all_delivered(tmp_path):
    """Three spikes of one node inside one step: two copies of the population fire them."""
    config = write_network(tmp_path, duplicate_input=True)
    net, info = sonata.load(config)
    assert [p.name for p in net.populations][-2:] == ["thalamus.9#2", "thalamus.9#3"]
    assert any("none is lost" in n for n in info.notes)
    res = rv.Simulation(net, resolution_ms=0.1).run(300.0)
    ids, _ = res.spikes
    copies = [net.population(n) for n in ("thalamus.9#2", "thalamus.9#3")]
    assert [int(np.count_nonzero((ids >= p.first_id) & (ids < p.first_id + p.size))) for p in copies] == [1, 1]
    # each copy has the original's edges
    assert sum(len(pr.sources) for pr in net.projections if pr.source == "thalamus.9#2") == 400


@pytest.mark.parametrize("change, words", [
    (dict(template="nest:ht_neuron"), ["model_template 'nest:ht_neuron'", "nest:iaf_psc_alpha", "nest:aeif_cond_exp"]),
    (dict(input_type="voltage_clamp"), ["input 'lgn'", "voltage_clamp", "not supported"]),
])
def test_what_is_not_supported_is_named_before_anything_runs(tmp_path, change, words):
    config = write_network(tmp_path, **change)
    with pytest.raises(rv.ConfigError) as e:
        sonata.load(config)
    for w in words:
        assert w in str(e.value)


def test_a_missing_dynamics_file_names_the_folder(tmp_path):
    config = write_network(tmp_path)
    (tmp_path / "components" / "inh.json").unlink()
    with pytest.raises(rv.ConfigError, match="inh.json' not found in point_neuron_models_dir"):
        sonata.load(config)


@needs_mpiexec
def test_ranvier_run_writes_sonata_spikes_identical_on_one_and_two_ranks(tmp_path):
    config = write_network(tmp_path / "net")
    outs = []
    for ranks, extra in ((1, ["--threads", "1"]), (2, ["--threads", "2", "--exchange", "p2p", "--placement", "block"])):
        out = tmp_path / f"out{ranks}"
        cmd = [mpiexec_path(), "-n", str(ranks), sys.executable, "-m", "ranvier", "run", str(config), "--out", str(out),
               "--quiet", *extra]
        proc = subprocess.run(cmd, env=subprocess_env(), capture_output=True, text=True, timeout=300,
                              preexec_fn=restore_cpus)
        assert proc.returncode == 0, proc.stderr
        outs.append(sonata.read_spikes(out / "sonata" / "cortex_spikes.h5"))
        with h5py.File(out / "sonata" / "cortex_spikes.h5") as f:
            assert list(f["spikes"]) == ["cortex"]                     # virtual nodes are not in the output
            assert np.all(np.diff(f["spikes/cortex/timestamps"][:]) >= 0)
        assert "model = \"sonata\"" in (out / "config.toml").read_text()        # the rerun's configuration
    assert outs[0]["cortex"][0].size > 100
    assert np.array_equal(outs[0]["cortex"][0], outs[1]["cortex"][0])
    assert np.array_equal(outs[0]["cortex"][1], outs[1]["cortex"][1])


def test_the_reference_spike_layouts_are_read(tmp_path):
    old = tmp_path / "old.h5"
    with h5py.File(old, "w") as f:
        f["spikes/gids"] = np.array([3, 1], np.uint64)
        f["spikes/timestamps"] = np.array([5.0, 7.5])
    ids, ts = sonata.read_spikes(old)[None]
    assert ids.tolist() == [3, 1] and ts.tolist() == [5.0, 7.5]
    csv = tmp_path / "s.csv"
    csv.write_text("timestamps population node_ids\n1.5 lgn 2\n3.0 lgn 0\n")
    ids, ts = sonata.read_spikes(csv, "csv")["lgn"]
    assert ids.tolist() == [2, 0] and ts.tolist() == [1.5, 3.0]


@pytest.mark.skipif(not data_sets.present("sonata-300"), reason=ranvier.datasets.missing("sonata-300"))
def test_the_300_neuron_example_agrees_with_nests_reference_output():
    """NEST (through BMTK's PointNet) produced output/spikes.h5 at dt 0.001 ms: per type rates
    within 2 % (measured: within 0.1 %), per-neuron rates correlated, 95 % of its spikes within
    1 ms of one of ours (measured: 99.1 %)."""
    config = EXAMPLE_300 / "simulation_config.json"
    net, info = sonata.load(config)
    res = rv.Simulation(net, resolution_ms=info.dt_ms, threads=2).run(info.tstop_ms)
    ours = sonata_spikes(net, info, res)
    reference = sonata.read_spikes(EXAMPLE_300 / "output" / "spikes.h5")
    c = sonata.compare_spikes(ours, reference, tstop_ms=info.tstop_ms)
    assert c["rate_correlation"] > 0.999 and c["matched_fraction"] > 0.95
    for p in net.populations:
        if p.name in info.virtual:
            continue
        node_ids = info.populations[p.name][1]
        ratio = c["rates_hz"][node_ids].mean() / c["reference_rates_hz"][node_ids].mean()
        assert abs(ratio - 1) < 0.02, (p.name, ratio)


def test_the_network_read_gives_nests_spikes_to_the_step(tmp_path):
    """NEST 3.10 (the nest extra) given the network Ranvier read from SONATA: the same spikes,
    node for node and step for step (iaf_psc_alpha is exact on the grid in both)."""
    pytest.importorskip("nest")
    sys.path.insert(0, str(ROOT / "bench"))
    from sonata_300 import identical, nest_run
    config = write_network(tmp_path)
    net, info = sonata.load(config)
    ours = sonata_spikes(net, info, rv.Simulation(net, resolution_ms=0.1, threads=2).run(300.0))
    theirs, _ = nest_run(net, info, 0.1)
    assert ours["cortex"][0].size > 100 and identical(ours, theirs, 0.1)


def test_a_bad_config_is_one_line_naming_the_file(tmp_path):
    from conftest import ranvier_cli
    missing = ranvier_cli("run", tmp_path / "nope.json")
    assert missing.returncode == 2 and "SONATA config" in missing.stderr and "does not exist" in missing.stderr
    broken = tmp_path / "simulation_config.json"
    broken.write_text('{"run": {"tstop": 100.0}, "network": "circuit.json"')
    bad = ranvier_cli("run", broken)
    assert bad.returncode == 2 and "not valid JSON" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_membrane_report_is_written_in_the_sonata_layout(tmp_path):
    from conftest import ranvier_cli
    config = write_network(tmp_path / "net")
    done = ranvier_cli("run", config, "--out", tmp_path / "out", "--quiet")
    assert done.returncode == 0, done.stderr
    net, info = sonata.load(config)
    gids = info.reports[0][1]
    res = rv.Simulation(net, resolution_ms=0.1, record_state=gids, record_state_interval_ms=0.5).run(300.0)
    with h5py.File(tmp_path / "out" / "sonata" / "membrane_potential.h5") as f:
        g = f["report/cortex"]
        node_ids = g["mapping/node_ids"][:]
        data = g["data"][:]
        assert node_ids.tolist() == [0, 1, 2, 35] and data.shape == (600, 4)
        assert g["mapping/time"][:].tolist() == [0.5, 300.5, 0.5] and g["data"].attrs["units"] == "mV"
    # the same potentials as Result.state (absolute: E_L added back), node by node
    for col, nid in enumerate(node_ids):
        pop = next(p for p in net.populations if p.name in info.populations and nid in info.populations[p.name][1]
                   and info.populations[p.name][0] == "cortex")
        local = int(np.flatnonzero(info.populations[pop.name][1] == nid)[0])
        row = res.state["ids"].tolist().index(pop.first_id + local)
        expected = np.asarray(res.state["V"])[row] + pop.params["E_L_mV"]
        assert np.allclose(data[:, col], expected, atol=1e-4)           # float32 in the file


@pytest.mark.parametrize("template, model, check", [
    ("nest:iaf_psc_exp", "psc_exp", {"tau_syn_ex_ms": 1.5, "tau_syn_in_ms": 2.0}),
    ("nest:iaf_cond_exp", "iaf_cond_exp", {"C_m_pF": 200.0, "E_L_mV": -65.0}),
    ("nest:iaf_cond_alpha", "iaf_cond_alpha", {"C_m_pF": 200.0, "E_L_mV": -65.0}),
    ("nest:iaf_cond_exp_sfa_rr", "iaf_cond_exp_sfa_rr", {"C_m_pF": 200.0, "E_L_mV": -65.0, "q_sfa_nS": 10.0,
                                                         "tau_rr_ms": 2.5}),
])
def test_the_other_nest_models_are_read(tmp_path, template, model, check):
    config = write_network(tmp_path, template=template)
    if template.startswith("nest:iaf_cond"):     # the excitatory type's file: NEST's names
        extra = {"q_sfa": 10.0, "tau_rr": 2.5} if template.endswith("sfa_rr") else {}
        (tmp_path / "components" / "exc.json").write_text(json.dumps(
            {"C_m": 200.0, "g_L": 13.3, "E_L": -65.0, "V_th": -50.0, "V_reset": -65.0, "t_ref": 2.0,
             "E_ex": 0.0, "E_in": -80.0, "tau_syn_ex": 1.5, **extra}))
    net, info = sonata.load(config)
    e = net.population("cortex.E")
    assert e.model == model and all(e.params[k] == v for k, v in check.items())
    res = rv.Simulation(net, resolution_ms=0.1).run(300.0)
    assert res.spikes_total > 0


NEST_DYNAMICS = {   # the excitatory type's dynamics_params, by NEST's names
    "nest:aeif_cond_exp": {"C_m": 200.0, "g_L": 10.0, "E_L": -65.0, "V_th": -50.0, "V_reset": -60.0, "V_peak": -20.0,
                           "Delta_T": 1.5, "tau_w": 100.0, "a": 2.0, "b": 20.0, "t_ref": 2.0, "E_ex": 0.0,
                           "E_in": -80.0, "tau_syn_ex": 1.5, "tau_syn_in": 3.0, "I_e": 150.0, "V_m": -62.0},
    "nest:aeif_cond_alpha": {"C_m": 200.0, "g_L": 10.0, "E_L": -65.0, "V_th": -50.0, "V_reset": -60.0,
                             "V_peak": -20.0, "Delta_T": 1.5, "t_ref": 2.0, "tau_syn_ex": 1.0, "I_e": 150.0},
    "nest:hh_cond_exp_traub": {"C_m": 200.0, "g_Na": 20000.0, "g_K": 6000.0, "V_T": -63.0, "E_L": -60.0,
                               "I_e": 100.0, "V_m": -60.0},
    "nest:izhikevich": {"a": 0.02, "b": 0.2, "c": -65.0, "d": 8.0, "I_e": 5.0, "V_m": -70.0, "U_m": -14.0},
}


@pytest.mark.parametrize("template", sorted(NEST_DYNAMICS))
def test_more_nest_models_give_nests_spikes(tmp_path, template):
    """A node type of nest:aeif_cond_exp, aeif_cond_alpha, hh_cond_exp_traub or izhikevich,
    parameters by NEST's names (each model's NeuronModel.nest_parameters): read as the Ranvier
    model of the same dynamics (the nodes' per-node I_e over the type's), and NEST 3.10 given the
    network read gives the same spikes (skipped without the nest extra)."""
    config = write_network(tmp_path, template=template)
    (tmp_path / "components" / "exc.json").write_text(json.dumps(NEST_DYNAMICS[template]))
    net, info = sonata.load(config)
    e = net.population("cortex.E")
    model = rv.core.neurons.NEURON_MODELS[e.model]
    assert "nest:" + model.nest_model == template
    for nest_key, value in NEST_DYNAMICS[template].items():
        if nest_key != "I_e":                  # the nodes' own I_e (50 pA) stands over the type's
            assert np.all(np.asarray(e.params[model.nest_parameters[nest_key]]) == value), nest_key
    assert np.all(e.params["I_e_pA"] == 50.0)
    ours = sonata_spikes(net, info, rv.Simulation(net, resolution_ms=0.1, threads=2).run(300.0))
    assert ours["cortex"][0].size > 20
    pytest.importorskip("nest")
    sys.path.insert(0, str(ROOT / "bench"))
    from sonata_300 import identical, nest_run
    theirs, _ = nest_run(net, info, 0.1)
    assert identical(ours, theirs, 0.1)
