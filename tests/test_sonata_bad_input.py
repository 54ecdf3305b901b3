"""SONATA input the reader must not take in silence: every malformed file, config value or node
set is one `ranvier: error:` line (exit 2) naming the file, the field and the fix, before anything
is built; inputs that are dropped on purpose are counted in a note. The circuits are small
variants of examples/sonata/make_network.py, written in tmp_path."""
from __future__ import annotations

import json
import sys

import h5py
import numpy as np
import pytest

import ranvier as rv
from conftest import ROOT, assert_bad_input
from ranvier import cli
from ranvier.io import sonata

sys.path.insert(0, str(ROOT / "examples" / "sonata"))
from make_network import write_network  # noqa: E402


@pytest.fixture
def circuit(tmp_path):
    """The example network in tmp_path/net; returns its simulation config."""
    return write_network(tmp_path / "net")


class _Kept:
    """capsys, keeping what assert_bad_input reads."""
    def __init__(self, capsys):
        self.capsys, self.err = capsys, ""

    def readouterr(self):
        captured = self.capsys.readouterr()
        self.err = captured.err
        return captured


def refused(config, tmp_path, capsys, *words):
    """`ranvier run CONFIG --out DIR`: exit 2, one error line holding every word; the line."""
    out, kept = tmp_path / "out", _Kept(capsys)
    assert_bad_input(["run", str(config), "--out", str(out)], words[0], out, kept)
    line = kept.err.strip()
    for w in words[1:]:
        assert w in line, line
    return line


def edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def replace(path, dataset, values):
    with h5py.File(path, "a") as f:
        attrs = dict(f[dataset].attrs)
        del f[dataset]
        f[dataset] = values
        f[dataset].attrs.update(attrs)


def notes(config, capsys):
    """The `ranvier: note:` lines of a run of CONFIG (it must succeed)."""
    assert cli.main(["run", str(config), "--duration-ms", "20"]) == 0
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("ranvier: note: ")]


# -- node sets ---------------------------------------------------------------------------------
def test_a_node_set_naming_a_population_that_does_not_exist_is_refused(circuit, tmp_path, capsys):
    # every input of the network dropped: a silent network is never what was meant
    edit_json(circuit.parent / "node_sets.json", lambda s: s.update(thalamic={"population": "thalamos"}))
    refused(circuit, tmp_path, capsys, "node set 'thalamic'", "population 'thalamos'", "cortex", "thalamus")


def test_a_node_set_filtering_on_an_attribute_no_node_has_is_refused(circuit, tmp_path, capsys):
    edit_json(circuit.parent / "node_sets.json", lambda s: s["even_exc"].update(model_nam="E"))
    refused(circuit, tmp_path, capsys, "node set 'even_exc'", "'model_nam'", "no node")


@pytest.mark.parametrize("what, change, words", [
    ("input", lambda s: s.update(thalamic={"population": "thalamus", "node_id": [99]}), ["input 'lgn'", "selects no node"]),
    ("report", lambda s: s.update(recorded={"population": "cortex", "node_id": [99]}),
     ["report 'membrane_potential'", "select no neuron"]),
    ("clamp", lambda s: s.update(even_exc={"population": "thalamus"}), ["input 'clamp'", "selects no neuron"]),
])
def test_an_input_or_report_whose_node_set_selects_nothing_is_refused(circuit, tmp_path, capsys, what, change, words):
    edit_json(circuit.parent / "node_sets.json", change)
    refused(circuit, tmp_path, capsys, *words)


def test_a_node_set_that_names_itself_is_refused(circuit, tmp_path, capsys):
    edit_json(circuit.parent / "node_sets.json", lambda s: s.update(thalamic=["thalamic"]))
    refused(circuit, tmp_path, capsys, "node set 'thalamic'", "names itself")


# -- spike inputs ------------------------------------------------------------------------------
def test_input_spikes_of_node_ids_outside_the_population_are_refused(circuit, tmp_path, capsys):
    # A spike of a node the population does not have: the file is another circuit's, or its ids
    # are off by one; running on part of the input would be a wrong network that looks right.
    inputs = circuit.parent / "inputs.h5"
    with h5py.File(inputs) as f:
        ids = f["spikes/thalamus/node_ids"][:]
    replace(inputs, "spikes/thalamus/node_ids", np.where(ids == 0, 20, ids).astype(np.uint64))   # 1..20, not 0..19
    line = refused(circuit, tmp_path, capsys, "input 'lgn'", "population 'thalamus'", "node id 20", "0..19")
    assert f"{int(np.count_nonzero(ids == 0))} spike(s)" in line


def test_nan_input_spike_times_are_refused(circuit, tmp_path, capsys):
    inputs = circuit.parent / "inputs.h5"
    with h5py.File(inputs) as f:
        ts = f["spikes/thalamus/timestamps"][:]
    ts[[4, 9]] = np.nan
    replace(inputs, "spikes/thalamus/timestamps", ts)
    refused(circuit, tmp_path, capsys, "inputs.h5", "population 'thalamus'", "2 spike time(s) are NaN")


def test_a_spike_file_without_the_node_sets_population_is_refused(circuit, tmp_path, capsys):
    with h5py.File(circuit.parent / "inputs.h5", "a") as f:
        f.move("spikes/thalamus", "spikes/lgn")
    refused(circuit, tmp_path, capsys, "input 'lgn'", "no spikes of population 'thalamus'", "['lgn']")


def test_a_spike_file_with_more_ids_than_times_is_refused(circuit, tmp_path, capsys):
    inputs = circuit.parent / "inputs.h5"
    with h5py.File(inputs) as f:
        ts = f["spikes/thalamus/timestamps"][:]
    replace(inputs, "spikes/thalamus/timestamps", ts[:-3])
    refused(circuit, tmp_path, capsys, "inputs.h5", "'thalamus'", f"{ts.size} node_ids", f"{ts.size - 3} timestamps")


def test_spikes_for_nodes_that_are_not_virtual_are_refused(circuit, tmp_path, capsys):
    # they would be read and never fired: spike inputs drive virtual nodes only
    with h5py.File(circuit.parent / "inputs.h5", "a") as f:
        f["spikes/cortex/node_ids"] = np.array([3, 5], np.uint64)
        f["spikes/cortex/timestamps"] = np.array([10.0, 20.0])
    edit_json(circuit.parent / "node_sets.json", lambda s: s.update(thalamic=["thalamic_only", "cortex_all"],
                                                                     thalamic_only={"population": "thalamus"},
                                                                     cortex_all={"population": "cortex"}))
    refused(circuit, tmp_path, capsys, "input 'lgn'", "2 spike(s)", "population 'cortex'", "not virtual")


@pytest.mark.parametrize("text, words", [
    ("timestamps population\n1.5 thalamus\n", ["spikes.csv", "node_ids"]),
    ("timestamps population node_ids\n1.5 thalamus two\n", ["spikes.csv", "line 2", "'two'"]),
])
def test_a_bad_csv_spike_file_is_refused(circuit, tmp_path, capsys, text, words):
    (circuit.parent / "spikes.csv").write_text(text)
    edit_json(circuit, lambda s: s["inputs"]["lgn"].update(module="csv", input_file=str(circuit.parent / "spikes.csv")))
    refused(circuit, tmp_path, capsys, *words)


def test_input_spikes_after_tstop_are_counted_in_a_note(circuit, capsys):
    with h5py.File(circuit.parent / "inputs.h5") as f:
        late = int(np.count_nonzero(f["spikes/thalamus/timestamps"][:] > 300.0))
    said = notes(circuit, capsys)
    assert late > 0 and any(f"{late} input spike(s) after tstop (300 ms) dropped" in n for n in said), said


# -- nodes -------------------------------------------------------------------------------------
def test_duplicated_node_ids_in_a_nodes_file_are_refused(circuit, tmp_path, capsys):
    nodes = circuit.parent / "network" / "cortex_nodes.h5"
    with h5py.File(nodes) as f:
        ids = f["nodes/cortex/node_id"][:]
    ids[ids == 7] = 12                                        # two nodes 12, no node 7
    replace(nodes, "nodes/cortex/node_id", ids)
    refused(circuit, tmp_path, capsys, "cortex_nodes.h5", "population 'cortex'", "node id 12", "2 times")


def test_a_population_in_two_nodes_files_is_refused(circuit, tmp_path, capsys):
    edit_json(circuit.parent / "circuit_config.json", lambda c: c["networks"]["nodes"].append(c["networks"]["nodes"][0]))
    refused(circuit, tmp_path, capsys, "population 'cortex'", "cortex_nodes.h5", "twice")


@pytest.mark.parametrize("dataset, values, words", [
    ("node_type_id", np.ones(39, np.uint64), ["node_type_id", "39", "node_id", "40"]),
    ("node_group_index", np.arange(40, dtype=np.uint64) + 1, ["node_group_index", "40", "group 0", "40 row(s)"]),
])
def test_node_columns_that_do_not_fit_are_refused(circuit, tmp_path, capsys, dataset, values, words):
    replace(circuit.parent / "network" / "cortex_nodes.h5", f"nodes/cortex/{dataset}", values)
    refused(circuit, tmp_path, capsys, "cortex_nodes.h5", "'cortex'", *words)


def test_a_nodes_file_without_node_type_id_is_refused(circuit, tmp_path, capsys):
    with h5py.File(circuit.parent / "network" / "cortex_nodes.h5", "a") as f:
        del f["nodes/cortex/node_type_id"]
    refused(circuit, tmp_path, capsys, "cortex_nodes.h5", "'cortex'", "no node_type_id")


def test_a_nodes_entry_without_its_types_file_is_refused(circuit, tmp_path, capsys):
    edit_json(circuit.parent / "circuit_config.json", lambda c: c["networks"]["nodes"][0].pop("node_types_file"))
    refused(circuit, tmp_path, capsys, "networks.nodes[0]", "node_types_file")


def test_a_type_listed_twice_in_a_types_file_is_refused(circuit, tmp_path, capsys):
    types = circuit.parent / "network" / "cx_cx_edge_types.csv"
    types.write_text(types.read_text() + "6 static_synapse\n")
    refused(circuit, tmp_path, capsys, "cx_cx_edge_types.csv", "line 3", "edge_type_id 6", "twice")


def test_a_short_row_in_a_types_file_is_refused(circuit, tmp_path, capsys):
    types = circuit.parent / "network" / "cortex_node_types.csv"
    types.write_text(types.read_text() + "3 point_process\n")
    refused(circuit, tmp_path, capsys, "cortex_node_types.csv", "line 4", "2 field(s)", "6")


@pytest.mark.parametrize("value, shown", [("fast", '"tau_m": "fast"'), (True, '"tau_m": true'), (None, '"tau_m": null'),
                                          (float("nan"), '"tau_m": NaN')])
def test_a_dynamics_parameter_that_is_not_a_number_is_refused(circuit, tmp_path, capsys, value, shown):
    edit_json(circuit.parent / "components" / "exc.json", lambda d: d.update(tau_m=value))
    refused(circuit, tmp_path, capsys, "exc.json", shown, "a number")


def test_a_dynamics_parameter_of_iaf_psc_delta_that_is_not_a_number_is_refused(tmp_path, capsys):
    config = write_network(tmp_path / "net", template="nest:iaf_psc_delta", clamp=False)
    edit_json(config.parent / "components" / "exc.json", lambda d: d.clear() or d.update(V_th="high"))
    refused(config, tmp_path, capsys, "exc.json", '"V_th": "high"', "a number")


def test_dynamics_params_null_means_nests_defaults(circuit):
    from ranvier.core.neurons import NEURON_MODELS
    types = circuit.parent / "network" / "cortex_node_types.csv"
    types.write_text(types.read_text().replace("exc.json", "NULL"))
    net, _ = sonata.load(circuit)
    assert net.population("cortex.E").params["C_m_pF"] == NEURON_MODELS["iaf_psc_alpha"].parameters["C_m_pF"].default


def test_a_zero_capacitance_of_iaf_psc_delta_is_refused(tmp_path, capsys):
    config = write_network(tmp_path / "net", template="nest:iaf_psc_delta", clamp=False)
    (config.parent / "components" / "exc.json").write_text(json.dumps({"C_m": 0.0}))
    refused(config, tmp_path, capsys, "nest:iaf_psc_delta", "C_m = 0 pF", "not positive")


def test_a_dynamics_file_that_is_not_an_object_is_refused(circuit, tmp_path, capsys):
    (circuit.parent / "components" / "exc.json").write_text("[1, 2]")
    refused(circuit, tmp_path, capsys, "exc.json", "not a JSON object")


def test_a_per_node_dynamics_parameter_that_is_not_a_number_is_refused(circuit, tmp_path, capsys):
    replace(circuit.parent / "network" / "cortex_nodes.h5", "nodes/cortex/0/dynamics_params/I_e",
            np.array([b"strong"] * 40))
    refused(circuit, tmp_path, capsys, "cortex_nodes.h5", "'cortex'", "dynamics_params 'I_e'", "'strong'")


# -- edges -------------------------------------------------------------------------------------
def test_edges_onto_virtual_nodes_are_counted_in_a_note(circuit, capsys):
    edges = circuit.parent / "network" / "cx_cx_edges.h5"                # 600 edges, now cortex -> thalamus
    with h5py.File(edges, "a") as f:
        f["edges/cortex_to_cortex/target_node_id"].attrs["node_population"] = "thalamus"
        trg = f["edges/cortex_to_cortex/target_node_id"][:]
    replace(edges, "edges/cortex_to_cortex/target_node_id", trg % 20)
    said = notes(circuit, capsys)
    assert any("600 edge(s) onto virtual nodes dropped" in n for n in said), said


def test_edges_whose_target_ids_are_fewer_than_their_source_ids_are_refused(circuit, tmp_path, capsys):
    edges = circuit.parent / "network" / "cx_cx_edges.h5"
    with h5py.File(edges) as f:
        trg = f["edges/cortex_to_cortex/target_node_id"][:]
    replace(edges, "edges/cortex_to_cortex/target_node_id", trg[:599])
    refused(circuit, tmp_path, capsys, "cx_cx_edges.h5", "'cortex_to_cortex'", "target_node_id", "599",
            "source_node_id", "600")


def test_an_edge_group_index_past_its_group_is_refused(circuit, tmp_path, capsys):
    replace(circuit.parent / "network" / "cx_cx_edges.h5", "edges/cortex_to_cortex/edge_group_index",
            np.arange(600, dtype=np.uint32) + 5)
    refused(circuit, tmp_path, capsys, "cx_cx_edges.h5", "'cortex_to_cortex'", "edge_group_index", "604", "600 row(s)")


def test_edges_without_a_node_population_are_refused(circuit, tmp_path, capsys):
    with h5py.File(circuit.parent / "network" / "cx_cx_edges.h5", "a") as f:
        del f["edges/cortex_to_cortex/source_node_id"].attrs["node_population"]
    refused(circuit, tmp_path, capsys, "cx_cx_edges.h5", "source_node_id", "no 'node_population'")


@pytest.mark.parametrize("column, value, shown", [("syn_weight", np.nan, "NaN"), ("delay", np.nan, "NaN"),
                                                 ("syn_weight", np.inf, "inf")])
def test_a_nan_edge_value_is_reported_as_nan(circuit, tmp_path, capsys, column, value, shown):
    edges = circuit.parent / "network" / "cx_cx_edges.h5"
    with h5py.File(edges) as f:
        values = f[f"edges/cortex_to_cortex/0/{column}"][:]
    values[17] = value
    replace(edges, f"edges/cortex_to_cortex/0/{column}", values)
    line = refused(circuit, tmp_path, capsys, "cx_cx_edges.h5", "'cortex_to_cortex'", f"{column} of edge 17 is {shown}")
    assert "has no" not in line


@pytest.mark.parametrize("value, words", [("heavy", ["syn_weight 'heavy'", "a number"]), ("nan", ["syn_weight", "NaN"])])
def test_a_bad_edge_type_value_is_refused(circuit, tmp_path, capsys, value, words):
    types = circuit.parent / "network" / "th_cx_edge_types.csv"
    types.write_text(types.read_text().replace("120.0", value))
    refused(circuit, tmp_path, capsys, "th_cx_edge_types.csv", "edge type 5", *words)


@pytest.mark.parametrize("where, change, words", [
    ("simulation", lambda s: s.update(output="out"), ["'output'", "a JSON object", '"out"']),
    ("simulation", lambda s: s.update(inputs=[1]), ["'inputs'", "a JSON object"]),
    ("simulation", lambda s: s["inputs"]["lgn"].update(node_set=5), ["node set 5", "an object of node attributes"]),
    ("simulation", lambda s: s["inputs"]["lgn"].pop("input_file"), ["input 'lgn'", "no 'input_file'"]),
    ("simulation", lambda s: s.update(manifest=["x"]), ["'manifest'", "a JSON object"]),
    ("simulation", lambda s: s["reports"]["membrane_potential"].update(file_name=5), ["file_name", "5"]),
    ("circuit", lambda c: c["networks"].update(nodes=c["networks"]["nodes"][0]), ["networks.nodes", "a list"]),
    ("circuit", lambda c: c["components"].update(point_neuron_models_dir=5), ["point_neuron_models_dir", "5"]),
])
def test_a_config_section_of_the_wrong_kind_is_refused(circuit, tmp_path, capsys, where, change, words):
    edit_json(circuit if where == "simulation" else circuit.parent / "circuit_config.json", change)
    refused(circuit, tmp_path, capsys, *words)


def test_a_nodes_file_with_a_dataset_for_a_population_is_refused(circuit, tmp_path, capsys):
    with h5py.File(circuit.parent / "network" / "cortex_nodes.h5", "a") as f:
        f["nodes/extra"] = np.arange(3)
    refused(circuit, tmp_path, capsys, "cortex_nodes.h5", "'/nodes/extra'", "not a population's group")


# -- the run section ---------------------------------------------------------------------------
@pytest.mark.parametrize("key, value", [("dt", 0), ("dt", -0.1), ("dt", float("nan")), ("dt", "fast"), ("dt", None),
                                        ("tstop", -5.0), ("tstop", float("inf")), ("tstop", "long")])
def test_a_bad_run_dt_or_tstop_is_refused_before_the_build(circuit, tmp_path, capsys, key, value):
    edit_json(circuit, lambda s: s["run"].update({key: value}))
    refused(circuit, tmp_path, capsys, f"run.{key}", "simulation_config.json", "a positive number")


def test_a_bad_dt_from_python_is_refused(circuit):
    with pytest.raises(rv.ConfigError, match="dt_ms"):
        sonata.load(circuit, dt_ms=0.0)
