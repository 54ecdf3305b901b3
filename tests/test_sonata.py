"""SONATA input (ranvier.io.sonata): a point-neuron network in SONATA files runs unchanged.

Two sources of networks: one written here (every feature the reader takes: two node
populations, types with dynamics files and per-node parameters, virtual nodes with spike
inputs in the SONATA layout, node sets, edges with per-edge and per-type weights, delays and
nsyns), and the AllenInstitute/sonata 300-neuron example with the output NEST produced (the
sonata-300 data set, docs/data.md, where it is here), the peer reference.
"""
from __future__ import annotations

import json
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
