"""pyNN.ranvier.nestml.nestml_cell_type, as PyNN 0.13's pyNN.nest.nestml offers it (docs/pynn.md):
a PyNN script with a NESTML neuron gives the membrane trace and spikes of pyNN.nest with NEST's
built-in model of the same dynamics (NESTML's iaf_psc_exp_neuron against NEST 3.10's
iaf_psc_exp through pyNN.nest's native_cell_type; skipped without nest); the model given as
source text runs as the file does; parameters and the membrane potential's start may differ per
cell; initial values of the other state variables that the model would not start from are
refused, naming the variable."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import subprocess_env

pytest.importorskip("pyNN")
pytest.importorskip("pynestml", reason="nestml (pip install 'nestml==9.0.0') is not installed")
MODEL = f"{sys.prefix}/models/neurons/iaf_psc_exp_neuron.nestml"

SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    import pyNN.{backend} as sim
    sim.setup(timestep=0.1, min_delay=0.1)
    if "{backend}" == "ranvier":
        description = {description}
        celltype = sim.nestml.nestml_cell_type("iaf_psc_exp_nestml", description)
        cells = sim.Population(2, celltype(I_e=np.array([400.0, 420.0]), tau_syn_exc=2.0, tau_syn_inh=5.0, refr_T=2.0))
    else:
        celltype = sim.native_cell_type("iaf_psc_exp")
        # (pyNN.nest 0.13 fails on per-cell values of a native cell type under NEST 3.10: its numpy
        # bool ignore_and_spike is refused; NEST is given the second cell's I_e itself)
        cells = sim.Population(2, celltype(I_e=400.0, tau_syn_ex=2.0, tau_syn_in=5.0, t_ref=2.0))
        import nest
        cells.node_collection[1].set(I_e=420.0)
    cells.initialize(V_m=np.array([-70.0, -58.0]))         # per cell, as the parameters
    src = sim.Population(2, sim.SpikeSourceArray(spike_times=[[10.0, 50.0, 51.3, 90.0], [30.0, 70.0, 91.0]]))
    sim.Projection(src[0:1], cells, sim.AllToAllConnector(), sim.StaticSynapse(weight=0.4, delay=1.0),
                   receptor_type="excitatory")
    sim.Projection(src[1:2], cells, sim.AllToAllConnector(), sim.StaticSynapse(weight=-0.3, delay=1.5),
                   receptor_type="inhibitory")
    cells.record(["V_m", "spikes"])
    sim.run(150.0)
    seg = cells.get_data().segments[0]
    np.save(sys.argv[1], seg.filter(name="V_m")[0].magnitude)
    np.save(sys.argv[2], np.array([len(t) for t in seg.spiketrains] + [x for t in seg.spiketrains for x in t.magnitude]))
    sim.end()
""")


def run(tmp_path, backend, description=repr(MODEL)):
    script = tmp_path / f"script_{backend}.py"
    script.write_text(SCRIPT.format(backend=backend, description=description))
    v, spikes = tmp_path / f"v_{backend}.npy", tmp_path / f"s_{backend}.npy"
    done = subprocess.run([sys.executable, str(script), str(v), str(spikes)], cwd=tmp_path, env=subprocess_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return np.load(v), np.load(spikes)


def test_a_nestml_cell_type_gives_pyNN_nests_trace_with_nests_built_in_model(tmp_path):
    pytest.importorskip("nest")
    v, spikes = run(tmp_path, "ranvier")
    v_nest, spikes_nest = run(tmp_path, "nest")
    assert v.shape == v_nest.shape == (1501, 2)
    largest = float(np.max(np.abs(v - v_nest)))
    print(f"pyNN.ranvier NESTML iaf_psc_exp_neuron vs pyNN.nest iaf_psc_exp: largest |V difference| {largest:.2e} mV")
    assert largest < 1e-9
    assert spikes[0] + spikes[1] > 2 and np.array_equal(spikes, spikes_nest)


def test_the_model_given_as_source_text_runs_as_the_file(tmp_path):
    from pathlib import Path
    v_file, s_file = run(tmp_path, "ranvier")
    v_text, s_text = run(tmp_path, "ranvier", description=repr(Path(MODEL).read_text()))
    assert np.array_equal(v_file, v_text) and np.array_equal(s_file, s_text)


def test_initial_values_the_model_does_not_start_from_are_refused():
    import pyNN.ranvier as sim
    sim.setup(timestep=0.1)
    try:
        celltype = sim.nestml.nestml_cell_type("iaf_psc_exp_nestml", MODEL)
        assert celltype.default_initial_values["V_m"] == celltype.default_parameters["E_L"] == -70.0
        assert "V_m" in celltype.recordable and celltype.units["V_m"] == "mV"
        cells = sim.Population(2, celltype(E_L=-65.0))
        cells.initialize(V_m=-65.0)                          # where the model starts: accepted
        sim.run(1.0)
        sim.reset()
        cells.initialize(V_m=-60.0)                          # the potential: anywhere
        sim.run(1.0)
        assert cells.get_data().segments[-1] is not None
        sim.reset()
        cells.initialize(I_syn_exc=5.0)
        with pytest.raises(NotImplementedError, match=r"starts I_syn_exc from its state block's initial value \(0"):
            sim.run(1.0)
    finally:
        sim.end()


def test_text_that_is_no_model_is_refused():
    import pyNN.ranvier as sim
    from ranvier.errors import ConfigError
    with pytest.raises(ConfigError, match="neither a .nestml file nor NESTML source"):
        sim.nestml.nestml_cell_type("x", "no/such/file.nestml")


def test_receptor_ports_are_pynn_receptor_types(tmp_path):
    """A NESTML model with three spike ports (R1, R2, R3) as a PyNN cell type: its receptor types
    are the ports' names, a projection's receptor_type names one, weights keep their sign. The same
    script with PyNN's PointNeuron of LIF and three current receptors (the same time constants)
    gives the same spikes and V within 1e-9 mV."""
    import pyNN.ranvier as sim
    from test_nestml import RECEPTOR_MODEL

    weights = {"R1": 0.6, "R2": -0.3, "R3": 0.15}            # nA

    def run(make_cells):
        sim.setup(timestep=0.1, min_delay=1.0)
        cells = make_cells()
        rng = np.random.default_rng(4)
        src = sim.Population(3, sim.SpikeSourceArray(spike_times=[
            sim.Sequence(np.unique(np.round(rng.uniform(5, 190, n), 1))) for n in (60, 30, 40)]))
        for i, name in enumerate(("R1", "R2", "R3")):
            sim.Projection(src[i:i + 1], cells, sim.AllToAllConnector(),
                           sim.StaticSynapse(weight=weights[name], delay=1.0), receptor_type=name)
        cells.record(["spikes"])
        cells[0:1].record(["V_m" if "V_m" in cells.celltype.recordable else "v"])
        sim.run(200.0)
        seg = cells.get_data().segments[0]
        v = seg.analogsignals[0].magnitude
        spikes = [np.asarray(t.magnitude) for t in seg.spiketrains]
        sim.end()
        return v, spikes

    celltype = sim.nestml.nestml_cell_type("three_receptor", RECEPTOR_MODEL)
    assert list(celltype().receptor_types) == ["R1", "R2", "R3"]
    v, spikes = run(lambda: sim.Population(2, celltype()))
    point = sim.PointNeuron(sim.LIF(cm=0.25, tau_m=10.0, v_rest=-70.0, v_reset=-70.0, v_thresh=-55.0,
                                    tau_refrac=2.0, i_offset=0.3),
                            R1=sim.CurrExpPostSynapticResponse(tau_syn=0.5),
                            R2=sim.CurrExpPostSynapticResponse(tau_syn=2.0),
                            R3=sim.CurrExpPostSynapticResponse(tau_syn=8.0))
    v_ref, spikes_ref = run(lambda: sim.Population(2, point, initial_values={"v": -70.0}))
    assert sum(t.size for t in spikes) > 5
    assert all(np.array_equal(a, b) for a, b in zip(spikes, spikes_ref))
    assert v.shape == v_ref.shape and np.max(np.abs(v - v_ref)) < 1e-9


SYNAPSE_SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    import pyNN.{backend} as sim
    sim.setup(timestep=0.1, min_delay=0.1, **({{"spike_precision": "on_grid"}} if "{backend}" == "nest" else {{}}))
    # the weight in pA: NEST's units, as pyNN.nest's native synapse types take it; small, so
    # that the targets fire from their current alone and both simulators see the same spikes
    params = dict(weight=0.5, delay=1.5, alpha=1.1, mu_plus=0.0, mu_minus=0.0, Wmax=1.0)
    if "{backend}" == "ranvier":
        stdp = sim.nestml.nestml_synapse_type("stdp_nestml", {description})
        synapse = stdp(tau_tr_pre=16.8, tau_tr_post=20.0, **{{"lambda": 0.02}}, **params)
    else:
        # NEST's built-in stdp_synapse: tau_plus 16.8, the target's tau_minus NEST's default 20 ms
        synapse = sim.native_synapse_type("stdp_synapse")(tau_plus=16.8, **{{"lambda": 0.02}}, **params)
    n = 20
    rng = np.random.default_rng(4)
    # halves of a ms, which binary fractions hold exactly (NEST's spike_generator moves a time such
    # as 68.4, a hair above its step in binary, to the next step)
    trains = [np.unique(np.round(rng.uniform(5.0, 480.0, 12) * 2.0) / 2.0) for _ in range(n)]
    src = sim.Population(n, sim.SpikeSourceArray(spike_times=[t.tolist() for t in trains]))
    cells = sim.Population(4, sim.IF_curr_exp(i_offset=np.array([0.9, 1.1, 1.3, 1.6]), tau_refrac=2.0))
    prj = sim.Projection(src, cells, sim.AllToAllConnector(), synapse, receptor_type="excitatory")
    cells.record("spikes")
    sim.run(500.0)
    w = np.asarray(prj.get("weight", format="array"), dtype=float)
    spikes = [t.magnitude for t in cells.get_data().segments[0].spiketrains]
    np.save(sys.argv[1], w)
    np.save(sys.argv[2], np.array([len(t) for t in spikes] + [x for t in spikes for x in t]))
    np.save(sys.argv[3], np.array([x for t in trains for x in [len(t), *t]]))
    sim.end()
""")


def test_a_nestml_synapse_type_gives_pyNN_nests_weights_with_nests_stdp_synapse(tmp_path):
    """NESTML's stdp_synapse through pyNN.ranvier.nestml.nestml_synapse_type against pyNN.nest's
    native stdp_synapse: the same spikes, and the final weights to 1e-9 relative for every
    synapse none of whose source's spikes reaches it in the step a target spike does (there
    NESTML's definition takes the target spike first, NEST's built-in after: docs/nestml.md)."""
    pytest.importorskip("nest")
    model = f"{sys.prefix}/models/synapses/stdp_synapse.nestml"
    out = {}
    for backend in ("ranvier", "nest"):
        script = tmp_path / f"syn_{backend}.py"
        script.write_text(SYNAPSE_SCRIPT.format(backend=backend, description=repr(model)))
        paths = [tmp_path / f"{x}_{backend}.npy" for x in ("w", "s", "pre")]
        done = subprocess.run([sys.executable, str(script), *map(str, paths)], cwd=tmp_path, env=subprocess_env(),
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        out[backend] = [np.load(p) for p in paths]
    (w_r, s_r, pre), (w_n, s_n, _) = out["ranvier"], out["nest"]
    assert s_r.shape == s_n.shape and np.allclose(s_r, s_n, rtol=0, atol=1e-9)    # the same target spikes
    counts = s_r[:4].astype(int)
    posts = np.split(s_r[4:], np.cumsum(counts)[:-1])
    assert counts.sum() > 20
    trains, k = [], 0
    while k < pre.size:
        m = int(pre[k])
        trains.append(pre[k + 1:k + 1 + m])
        k += 1 + m
    compared = 0
    for i, t_pre in enumerate(trains):
        for j, t_post in enumerate(posts):
            # the target's spikes reach the synapse 1.5 ms after them
            if np.any(np.isclose(t_pre[:, None] - 1.5, t_post[None, :], atol=1e-6)):
                continue
            compared += 1
            assert abs(w_r[i, j] - w_n[i, j]) <= 1e-9 * abs(w_n[i, j]), (i, j, w_r[i, j], w_n[i, j])
    assert compared > 60
    assert np.count_nonzero(np.abs(w_n - 0.5e-3) > 1e-9) > 60          # the rule changed them (get: / 1000)
