"""Plastic weights in and out (ranvier.io.weights): weights.h5 in the SONATA edge layout, written
in an order that does not depend on the decomposition; a simulation started from it holds the
saved weights exactly, on any ranks and threads; the weight recorder; bad files refused."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import ranvier as rv
from conftest import ROOT, TESTS, mpiexec_path, needs_mpiexec, subprocess_env
from mpi_runner import plastic_network
from ranvier.io import weights as weights_io


def saved(tmp_path, threads=2, ms=200.0):
    net = plastic_network(600, 30)
    sim = rv.Simulation(net, threads=threads, seed=1)
    sim.run(ms)
    path = tmp_path / "weights.h5"
    weights_io.write_weights(path, sim, weights_io.gather_plastic(sim))
    return net, sim, path


def test_the_file_is_sonata_edges_in_canonical_order(tmp_path):
    net, sim, path = saved(tmp_path)
    with h5py.File(path) as f:
        names = set(f["edges"])
        assert names == {"E_to_E", "I_to_E", "B_to_B", "E_to_B", "B_to_E", "B_to_P", "S_to_E",
                         "E_to_T", "B_to_T"}
        g = f["edges/E_to_E"]
        src, tgt = g["source_node_id"][()], g["target_node_id"][()]
        assert g["source_node_id"].attrs["node_population"] == "E" and g["target_node_id"].attrs["node_population"] == "E"
        n = src.size
        assert g["edge_type_id"].shape == g["edge_group_id"].shape == (n,)
        assert np.array_equal(g["edge_group_index"][()], np.arange(n))
        w, d = g["0/syn_weight"][()], g["0/delay"][()]
    order = np.lexsort((d, tgt, src))
    assert np.array_equal(order, np.arange(n))                     # sorted by (source, target, delay)
    ours = sim.weights("E", "E")                                   # the same synapses, the same weights
    assert np.array_equal(np.sort(ours.weight), np.sort(w)) and n == ours.weight.size


def test_a_simulation_started_from_saved_weights_holds_them(tmp_path):
    net, sim, path = saved(tmp_path)
    again = rv.Simulation(net, threads=1, seed=1, initial_weights=path)
    fresh = rv.Simulation(net, threads=1, seed=1)
    for pr in net.projections:
        if pr.synapse is None:
            continue
        a, b = sim.weights(pr.source, pr.target), again.weights(pr.source, pr.target)
        assert np.array_equal(a.weight, b.weight), (pr.source, pr.target)
        assert not np.array_equal(fresh.weights(pr.source, pr.target).weight, b.weight)
    # and it learns on from there
    again.run(50.0)
    assert not np.array_equal(again.weights("E", "E").weight, sim.weights("E", "E").weight)



def plastic_weights_of(sim, net) -> dict:
    return {(pr.source, pr.target): sim.weights(pr.source, pr.target) for pr in net.projections
            if pr.synapse is not None}


def test_one_second_saved_then_one_more_from_the_file(tmp_path):
    """1 s + 1 s in one simulation, against 1 s, save, load, 1 s: the loaded simulation starts
    from exactly the saved weights; what follows differs, since neuron state and spike traces
    start afresh (the file holds weights, not a checkpoint)."""
    net = plastic_network(600, 30)
    one = rv.Simulation(net, threads=2, seed=1, record_weights=rv.WeightRecorder(source="E", target="E",
                                                                                  synapses=5, interval_ms=500.0))
    one.run(1000.0)
    path = one.save_weights(tmp_path / "weights.h5")
    assert path == tmp_path / "weights.h5" and [p.name for p in tmp_path.iterdir()] == ["weights.h5"]
    at_1s = plastic_weights_of(one, net)
    with h5py.File(path) as f:                      # the recorder's samples so far went with them
        assert np.array_equal(f["weight_trace/E_to_E/times_ms"][()], [0.0, 500.0, 1000.0])
        traced = f["weight_trace/E_to_E/weights"][()]
    loaded = rv.Simulation(net, threads=1, seed=1, placement="block", initial_weights=path,
                           record_weights=rv.WeightRecorder(source="E", target="E", synapses=5, interval_ms=500.0))
    for key, w in plastic_weights_of(loaded, net).items():
        assert np.array_equal(w.source, at_1s[key].source) and np.array_equal(w.delay_ms, at_1s[key].delay_ms)
        assert np.array_equal(w.weight, at_1s[key].weight), key                # exactly, at t = 0
    first = one.run(1000.0)
    second = loaded.run(1000.0)
    assert np.array_equal(second.weight_traces["E_to_E"]["weights"][:, 0], traced[:, -1])
    assert np.array_equal(first.weight_traces["E_to_E"]["weights"][:, 2], traced[:, -1])
    after_2s, after_load = plastic_weights_of(one, net), plastic_weights_of(loaded, net)
    assert not np.array_equal(after_2s[("E", "E")].weight, at_1s[("E", "E")].weight)       # both learned on,
    assert not np.array_equal(after_load[("E", "E")].weight, at_1s[("E", "E")].weight)
    assert not np.array_equal(after_2s[("E", "E")].weight, after_load[("E", "E")].weight)  # not alike


def test_save_weights_writes_whole_files_or_none(tmp_path, monkeypatch):
    from ranvier.io.output import OutputError
    net, sim, path = saved(tmp_path)
    before = path.read_bytes()
    sim.run(20.0)

    def fails(tmp, *args):
        Path(tmp).write_bytes(b"half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(weights_io, "_write_weights_file", fails)
    with pytest.raises(OutputError, match="save_weights: cannot write .*No space left on device"):
        sim.save_weights(path)
    monkeypatch.undo()
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["weights.h5"]
    with pytest.raises(OutputError, match="cannot write .*missing"):
        sim.save_weights(tmp_path / "missing" / "weights.h5")
    sim.save_weights(path)                                          # replaced, readable by others
    assert path.read_bytes() != before and path.stat().st_mode & 0o044 == 0o044
    static = rv.Simulation(rv.models.dpsnn(neurons=600, synapses_per_neuron=30), threads=1)
    with pytest.raises(rv.ConfigError, match="save_weights: the network has no plastic projection"):
        static.save_weights(tmp_path / "static.h5")


def test_one_recorder_per_projection():
    net = plastic_network(600, 30)
    with pytest.raises(rv.ConfigError, match="two recorders on projection E->E .*one WeightRecorder"):
        rv.Simulation(net, threads=1, record_weights=[rv.WeightRecorder(source="E", target="E", synapses=2),
                                                      rv.WeightRecorder(source="E", target="E", synapses=[(0, 1)])])

LOAD_SCRIPT = """
import sys, numpy as np, ranvier as rv
sys.path.insert(0, {tests!r})
from mpi_runner import plastic_network
from ranvier.io import weights as weights_io
net = plastic_network(600, 30)
plastic = [(pr.source, pr.target) for pr in net.projections if pr.synapse is not None]
# a file one rank wrote, read by two ranks of two threads: every plastic weight
sim = rv.Simulation(net, threads=2, seed=1, placement="block", initial_weights={path!r})
loaded = {{f"{{s}}_{{t}}": sim.weights(s, t) for s, t in plastic}}       # collective: rank 0 receives
# the same run on two ranks writes the same file
fresh = rv.Simulation(net, threads=2, seed=1)
fresh.run(200.0)
returned = fresh.save_weights({written!r})                     # collective: rank 0 writes
assert (returned is None) == (fresh.rank != 0)
if fresh.rank == 0:
    np.savez({out!r}, **{{k: w.weight for k, w in loaded.items()}})
# a file with one synapse changed: refused on every rank, whichever rank holds that synapse
for bad in {tampered!r}:
    try:
        rv.Simulation(net, threads=2, seed=1, initial_weights=bad)
        message = "accepted"
    except rv.ConfigError as e:
        message = str(e)
    with open(bad + f".rank{{sim.rank}}.txt", "w") as f:
        f.write(message)
"""


def tamper(src, dst, name: str, place: int, dataset: str, value) -> None:
    import shutil
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        f[f"edges/{name}/{dataset}"][place] = value


@needs_mpiexec
def test_two_ranks_load_a_file_one_rank_wrote_and_write_the_same(tmp_path):
    net, sim, path = saved(tmp_path, threads=1)
    # the last E->E synapse's delay, and the first B->E synapse's target: held by different ranks
    last = tmp_path / "delay.h5"
    with h5py.File(path) as f:
        n, d_last = f["edges/E_to_E/0/delay"].shape[0], f["edges/E_to_E/0/delay"][-1]
    tamper(path, last, "E_to_E", n - 1, "0/delay", d_last + 0.5)
    first = tmp_path / "target.h5"
    tamper(path, first, "B_to_E", 0, "target_node_id", 0)     # fewer onto one target, more onto 0
    out, written = tmp_path / "loaded.npz", tmp_path / "written.h5"
    script = tmp_path / "load.py"
    script.write_text(LOAD_SCRIPT.format(tests=str(TESTS), path=str(path), out=str(out), written=str(written),
                                         tampered=[str(last), str(first)]))
    proc = subprocess.run([mpiexec_path(), "-n", "2", sys.executable, str(script)], cwd=ROOT, env=subprocess_env(),
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = np.load(out)
    for pr in net.projections:
        if pr.synapse is not None:
            assert np.array_equal(loaded[f"{pr.source}_{pr.target}"], sim.weights(pr.source, pr.target).weight)
    with h5py.File(path) as a, h5py.File(written) as b:         # 2 ranks x 2 threads wrote 1 rank's file
        names = []
        a.visit(names.append)
        assert names and sorted(names) == sorted(_names(b))
        for name in names:
            if isinstance(a[name], h5py.Dataset):
                assert np.array_equal(a[name][()], b[name][()]), name
    for bad, words in ((last, "'E_to_E'.*stands where the network has"), (first, "'B_to_E'.*synapse 0->0 ")):
        messages = [(tmp_path / f"{bad.name}.rank{r}.txt").read_text() for r in (0, 1)]
        assert messages[0] == messages[1] and re.search(words + ".*another network", messages[0]), messages


def _names(f) -> list[str]:
    names = []
    f.visit(names.append)
    return names


def test_a_file_of_another_network_is_refused(tmp_path):
    net, sim, path = saved(tmp_path)
    other = plastic_network(600, 30)
    with pytest.raises(rv.ConfigError, match="E->E.*another network"):
        rv.Simulation(other, threads=1, seed=2, initial_weights=path)
    smaller = plastic_network(500, 30)
    with pytest.raises(rv.ConfigError, match="another network"):
        rv.Simulation(smaller, threads=1, seed=1, initial_weights=path)
    static = rv.models.dpsnn(neurons=600, synapses_per_neuron=30)
    with pytest.raises(rv.ConfigError, match="no plastic projection to start from"):
        rv.Simulation(static, threads=1, initial_weights=path)
    with pytest.raises(rv.ConfigError, match="cannot read"):
        rv.Simulation(net, threads=1, initial_weights=tmp_path / "missing.h5")


def test_the_weight_recorder(tmp_path):
    net = plastic_network(600, 30)
    probe = rv.Simulation(net, threads=1, seed=1).weights("E", "E")
    pairs = [(int(probe.source[k]), int(probe.target[k])) for k in (0, 500)]
    sim = rv.Simulation(net, threads=2, seed=1, record_weights=[
        rv.WeightRecorder(source="E", target="E", synapses=pairs, interval_ms=20.0),
        rv.WeightRecorder(source="B", target="B", synapses=4, interval_ms=100.0)])
    res = sim.run(150.0)
    ee = res.weight_traces["E_to_E"]
    assert np.allclose(ee["times_ms"], np.arange(0, 141, 20.0))     # whole intervals within the run
    assert [(s, t) for s, t in zip(ee["source"], ee["target"])] == pairs
    final = sim.weights("E", "E")
    for k, (s, t) in enumerate(pairs):
        first = np.flatnonzero((final.source == s) & (final.target == t))
        assert ee["weights"][k, 0] == probe.weight[first].min() or ee["weights"][k, 0] in probe.weight[first]
    assert res.weight_traces["B_to_B"]["weights"].shape == (4, 2)
    with pytest.raises(rv.ConfigError, match="is static"):
        rv.Simulation(net, threads=1, record_weights=rv.WeightRecorder(source="E", target="I"))
    with pytest.raises(rv.ConfigError, match="whole number of communication intervals"):
        rv.Simulation(net, threads=1, record_weights=rv.WeightRecorder(source="E", target="E", interval_ms=0.5))
    with pytest.raises(rv.ConfigError, match="has no synapse"):
        rv.Simulation(net, threads=1, record_weights=rv.WeightRecorder(source="E", target="E",
                                                                       synapses=[(0, 10**6 - 1)]))


def test_ranvier_run_writes_weights_and_starts_from_them(tmp_path):
    from ranvier import cli
    first, second = tmp_path / "first", tmp_path / "second"
    base = ["run", "dpsnn", "--neurons", "1024", "--set", "synapses_per_neuron=100", "--set", "plasticity=stdp",
            "--set", "stdp_lambda=0.1", "--duration-ms", "200", "--quiet", "--threads", "1"]
    assert cli.main(base + ["--record-weights", "3", "--weight-interval-ms", "50", "--out", str(first)]) == 0
    with h5py.File(first / "weights.h5") as f:
        assert set(f["edges"]) == {"F_to_F", "F_to_B", "B_to_F", "B_to_B"}
        assert f["weight_trace/F_to_F/weights"].shape == (3, 5)
        saved_w = f["edges/B_to_B/0/syn_weight"][()]
    import json
    summary = json.loads((first / "summary.json").read_text())
    dist = summary["plasticity"]["F_to_F"]
    assert sum(dist["final"]["histogram"]) == dist["final"]["synapses"] > 0
    assert dist["initial"]["mean"] != dist["final"]["mean"]
    # the report draws the distributions and the traces
    assert cli.main(["report", str(first), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "figures" / "weights.png").stat().st_size > 10_000
    text = (tmp_path / "report" / "report.md").read_text()
    assert "plastic projection" in text and "F -> F" in text
    assert cli.main(base + ["--duration-ms", "1", "--initial-weights", str(first / "weights.h5"),
                            "--out", str(second)]) == 0
    with h5py.File(second / "weights.h5") as f:
        # 1 ms later: only synapses whose source spiked since could move
        assert np.mean(f["edges/B_to_B/0/syn_weight"][()] == saved_w) > 0.9


def test_weight_settings_in_a_run_configuration(tmp_path, monkeypatch, capsys):
    import tomllib

    from ranvier import cli
    monkeypatch.chdir(tmp_path)
    model = ('model = "dpsnn"\n[parameters]\nneurons = 1024\nsynapses_per_neuron = 100\nplasticity = "stdp"\n'
             'stdp_lambda = 0.1\n')
    (tmp_path / "learn.toml").write_text(model + "[simulation]\nduration_ms = 100.0\nthreads = 1\n")
    assert cli.main(["run", "learn.toml", "--quiet", "--out", "learn"]) == 0
    (tmp_path / "go-on.toml").write_text(model + '[simulation]\nduration_ms = 100.0\nthreads = 1\n'
                                         'initial_weights = "learn/weights.h5"\nrecord_weights = 2\n'
                                         'weight_interval_ms = 50.0\n')
    assert cli.main(["run", "go-on.toml", "--quiet", "--out", "go-on"]) == 0
    with h5py.File("go-on/weights.h5") as f, h5py.File("learn/weights.h5") as g:
        assert f["weight_trace/F_to_F/weights"].shape == (2, 3)           # t = 0, 50, 100 ms
        first = g["edges/F_to_F/0/syn_weight"][()]
        place = np.flatnonzero((g["edges/F_to_F/source_node_id"][()] == f["weight_trace/F_to_F/source"][0])
                               & (g["edges/F_to_F/target_node_id"][()] == f["weight_trace/F_to_F/target"][0]))[0]
        assert f["weight_trace/F_to_F/weights"][0, 0] == first[place]     # it started from the saved weights
    written = tomllib.loads((tmp_path / "go-on" / "config.toml").read_text())["simulation"]
    assert written["initial_weights"] == str(tmp_path / "learn" / "weights.h5")      # absolute: reruns anywhere
    assert (written["record_weights"], written["weight_interval_ms"]) == (2, 50.0)
    # the flags override the file; the run's own config.toml reruns it
    assert cli.main(["run", "go-on/config.toml", "--record-weights", "3", "--quiet", "--out", "again"]) == 0
    with h5py.File("again/weights.h5") as f, h5py.File("go-on/weights.h5") as g:
        assert f["weight_trace/F_to_F/weights"].shape == (3, 3)
        assert np.array_equal(f["edges/F_to_F/0/syn_weight"][()], g["edges/F_to_F/0/syn_weight"][()])
    static = "[simulation]\nduration_ms = 100.0\nthreads = 1\n"
    for text, words in (("record_weights = -1\n", "'record_weights' must be a whole number"),
                        ("record_weights = 2.5\n", "'record_weights' must be a whole number"),
                        ("weight_interval_ms = 0.0\n", "'weight_interval_ms' must be positive"),
                        ("initial_weights = 3\n", "'initial_weights' must be the path"),
                        ("record_weights = 2\n", "no plastic projection")):
        (tmp_path / "bad.toml").write_text('model = "dpsnn"\n[parameters]\nneurons = 1024\n'
                                           'synapses_per_neuron = 100\n' + static + text)
        capsys.readouterr()
        assert cli.main(["run", "bad.toml", "--quiet"]) != 0
        assert re.search(words, capsys.readouterr().err), words
    assert "config.toml" not in {p.name for p in tmp_path.iterdir()}          # nothing written by them


def test_canonical_order_is_lexsorts():
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 5000):
        s, t, d = rng.integers(-5, 50, n), rng.integers(100, 130, n), rng.integers(1, 4, n)   # many multapses
        assert np.array_equal(weights_io.canonical_order(s, t, d), np.lexsort((np.arange(n), d, t, s)))
    s, t, d = np.array([0, 2**40, 5, 5]), np.array([0, 2**30, 1, 1]), np.array([0, 2**10, 3, 3])   # no 63-bit key
    assert np.array_equal(weights_io.canonical_order(s, t, d), [0, 2, 3, 1])
