"""A small SONATA point-neuron network, written with h5py: every feature Ranvier's SONATA
reader takes (docs/sonata.md). Two node populations: cortex (30 excitatory and 10 inhibitory
nest:iaf_psc_alpha neurons, two node types with dynamics files, a per-node I_e) and thalamus
(20 virtual nodes firing spike trains from inputs.h5); edges thalamus -> cortex (weight and
delay from the edge type, nsyns per edge) and cortex -> cortex (weight and delay per edge); a
current clamp on the excitatory cells with an even node id; a membrane potential report of four
cells.

    python examples/sonata/make_network.py sonata-small
    ranvier run sonata-small/simulation_config.json --out results/sonata

The tests build their variants with write_network(folder, ...).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import h5py
import numpy as np


def write_types(path, header, rows):
    path.write_text(" ".join(header) + "\n" + "".join(" ".join(map(str, r)) + "\n" for r in rows))


def write_network(folder: Path, *, duplicate_input=False, template="nest:iaf_psc_alpha", input_type="spikes",
                  tstop=300.0, dt=0.1, clamp=True) -> Path:
    """A small SONATA network: cortex (40 neurons of two types), thalamus (20 virtual nodes)."""
    rng = np.random.default_rng(7)
    net, comp = folder / "network", folder / "components"
    net.mkdir(parents=True)
    comp.mkdir()
    (comp / "exc.json").write_text(json.dumps({"C_m": 200.0, "tau_m": 15.0, "E_L": -65.0, "V_th": -50.0,
                                               "V_reset": -65.0, "t_ref": 2.0, "tau_syn_ex": 1.5}))
    (comp / "inh.json").write_text(json.dumps({"C_m": 100.0, "tau_m": 8.0, "E_L": -70.0, "V_th": -52.0,
                                               "V_reset": -70.0, "t_ref": 1.0, "tau_syn_in": 3.0}))
    write_types(net / "cortex_node_types.csv", ["node_type_id", "model_type", "model_template", "dynamics_params",
                                                "model_name", "ei"],
                [[1, "point_process", template, "exc.json", "E", "e"],
                 [2, "point_process", "nest:iaf_psc_alpha", "inh.json", "I", "i"]])
    write_types(net / "thalamus_node_types.csv", ["node_type_id", "model_type", "ei"], [[9, "virtual", "e"]])
    with h5py.File(net / "cortex_nodes.h5", "w") as f:
        g = f.create_group("nodes/cortex")
        types = np.array([1] * 30 + [2] * 10)
        order = rng.permutation(40)                      # node ids not in type order
        g["node_id"] = np.arange(40, dtype=np.uint64)[order]
        g["node_type_id"] = types[order].astype(np.uint64)
        g["node_group_id"] = np.zeros(40, np.uint32)
        g["node_group_index"] = np.arange(40, dtype=np.uint64)
        g["0/x"] = rng.uniform(0, 100, 40)
        g["0/dynamics_params/I_e"] = np.where(types[order] == 1, 50.0, 0.0)[np.arange(40)]
    with h5py.File(net / "thalamus_nodes.h5", "w") as f:
        g = f.create_group("nodes/thalamus")
        g["node_id"] = np.arange(20, dtype=np.uint64)
        g["node_type_id"] = np.full(20, 9, np.uint64)
        g["node_group_id"] = np.zeros(20, np.uint32)
        g["node_group_index"] = np.arange(20, dtype=np.uint64)
        f.create_group("nodes/thalamus/0")
    write_types(net / "th_cx_edge_types.csv", ["edge_type_id", "delay", "syn_weight", "model_template"],
                [[5, 1.5, 120.0, "static_synapse"]])
    write_types(net / "cx_cx_edge_types.csv", ["edge_type_id", "model_template"], [[6, "static_synapse"]])
    with h5py.File(net / "th_cx_edges.h5", "w") as f:
        g = f.create_group("edges/thalamus_to_cortex")
        src, trg = rng.integers(0, 20, 400), rng.integers(0, 40, 400)
        g["source_node_id"] = src.astype(np.uint64)
        g["source_node_id"].attrs["node_population"] = "thalamus"
        g["target_node_id"] = trg.astype(np.uint64)
        g["target_node_id"].attrs["node_population"] = "cortex"
        g["edge_type_id"] = np.full(400, 5, np.uint32)
        g["edge_group_id"] = np.zeros(400, np.uint16)
        g["edge_group_index"] = np.arange(400, dtype=np.uint32)
        g["0/nsyns"] = rng.integers(1, 3, 400).astype(np.uint32)          # weight = syn_weight x nsyns
    with h5py.File(net / "cx_cx_edges.h5", "w") as f:
        g = f.create_group("edges/cortex_to_cortex")
        src, trg = rng.integers(0, 40, 600), rng.integers(0, 40, 600)
        g["source_node_id"] = src.astype(np.uint64)
        g["source_node_id"].attrs["node_population"] = "cortex"
        g["target_node_id"] = trg.astype(np.uint64)
        g["target_node_id"].attrs["node_population"] = "cortex"
        g["edge_type_id"] = np.full(600, 6, np.uint32)
        g["edge_group_id"] = np.zeros(600, np.uint16)
        g["edge_group_index"] = np.arange(600, dtype=np.uint32)
        g["0/syn_weight"] = rng.uniform(-60.0, 80.0, 600)
        g["0/delay"] = rng.choice([1.0, 2.0, 3.5], 600)
    times = [np.sort(rng.uniform(0.0, tstop + 50.0, 15)) for _ in range(20)]
    if duplicate_input:
        times[3] = np.sort(np.append(times[3], [times[3][0] + 0.01 * dt, times[3][0] + 0.02 * dt]))
    ids = np.concatenate([np.full(t.size, k) for k, t in enumerate(times)])
    with h5py.File(folder / "inputs.h5", "w") as f:
        f["spikes/thalamus/node_ids"] = ids.astype(np.uint64)
        f["spikes/thalamus/timestamps"] = np.concatenate(times)
    (folder / "circuit_config.json").write_text(json.dumps({
        "manifest": {"$NET": "./network", "$COMP": "./components"},
        "components": {"point_neuron_models_dir": "$COMP"},
        "networks": {"nodes": [{"nodes_file": "$NET/cortex_nodes.h5", "node_types_file": "$NET/cortex_node_types.csv"},
                               {"nodes_file": "$NET/thalamus_nodes.h5",
                                "node_types_file": "$NET/thalamus_node_types.csv"}],
                     "edges": [{"edges_file": "$NET/th_cx_edges.h5", "edge_types_file": "$NET/th_cx_edge_types.csv"},
                               {"edges_file": "$NET/cx_cx_edges.h5", "edge_types_file": "$NET/cx_cx_edge_types.csv"}]}}))
    node_sets = {"thalamic": {"population": "thalamus"}}
    sim = {"manifest": {"$BASE_DIR": "."}, "network": "$BASE_DIR/circuit_config.json",
           "run": {"tstop": tstop, "dt": dt}, "node_sets_file": "node_sets.json",
           "inputs": {"lgn": {"input_type": input_type, "module": "sonata", "input_file": "$BASE_DIR/inputs.h5",
                              "node_set": "thalamic"}},
           "output": {"output_dir": "$BASE_DIR/output", "spikes_file": "cortex_spikes.h5"}}
    # a membrane potential report of four cortex cells, every 0.5 ms
    sim["reports"] = {"membrane_potential": {"cells": "recorded", "variable_name": "V_m", "module": "membrane_report",
                                             "sections": "soma", "dt": 0.5}}
    node_sets["recorded"] = {"population": "cortex", "node_id": [0, 1, 2, 35]}
    if clamp:       # a current clamp on the excitatory cells with an even node id, 100-200 ms
        sim["inputs"]["clamp"] = {"input_type": "current_clamp", "module": "IClamp", "node_set": "even_exc",
                                  "amp": 150.0, "delay": 100.0, "duration": 100.0}
        node_sets["even_exc"] = {"population": "cortex", "model_name": "E", "node_id": list(range(0, 40, 2))}
    (folder / "node_sets.json").write_text(json.dumps(node_sets))
    (folder / "simulation_config.json").write_text(json.dumps(sim))
    return folder / "simulation_config.json"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/sonata/make_network.py FOLDER")
    folder = Path(sys.argv[1])
    if folder.exists() and any(folder.iterdir()):
        sys.exit(f"{folder} exists and is not empty; give a new folder")
    print(f"wrote {write_network(folder)}")
