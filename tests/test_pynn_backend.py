"""pyNN.ranvier beyond PyNN's own scenarios (tests/test_pynn_scenarios.py): the Vogels-Abbott
benchmark script unchanged on 1 and 2 ranks, threads, STDP and recorded electrode currents
against pyNN.nest (nest extra)."""
from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, mpiexec_path, needs_mpiexec, restore_cpus, subprocess_env

pytest.importorskip("pyNN")
sys.path.insert(0, str(ROOT / "bench"))
import va_benchmark  # noqa: E402


def va_spikes(tmp_path, ranks):
    try:
        script = va_benchmark.script()
    except Exception as e:                                   # no network: the script cannot be had
        pytest.skip(f"PyNN's VAbenchmarks.py could not be downloaded: {e}")
    shutil.copy(script, tmp_path / "VAbenchmarks.py")
    cmd = [sys.executable, "VAbenchmarks.py", "ranvier", "CUBA"]
    if ranks > 1:
        cmd = [mpiexec_path(), "-n", str(ranks)] + cmd
    done = subprocess.run(cmd, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=600,
                          preexec_fn=restore_cpus)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = sorted((tmp_path / "Results").rglob(f"VAbenchmarks_CUBA_exc_ranvier_np{ranks}_*.pkl"))
    return va_benchmark.spikes(str(path)), done.stdout


@needs_mpiexec
def test_the_va_benchmark_runs_unchanged_with_the_same_spikes_on_one_and_two_ranks(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one, _ = va_spikes(tmp_path / "one", 1)
    two, out2 = va_spikes(tmp_path / "two", 2)
    assert len(one) == 3200 and sum(map(len, one.values())) > 10000      # every excitatory cell, about 6 Hz
    assert one.keys() == two.keys() and all(np.array_equal(one[k], two[k]) for k in one)
    assert "Excitatory rate" in out2 and "Nodes                  : 2" in out2


def small_network(sim, threads):
    sim.setup(timestep=0.1, min_delay=1.0, threads=threads)
    exc = sim.Population(120, sim.IF_curr_exp(tau_syn_E=2.0, tau_syn_I=4.0, i_offset=0.2))
    inh = sim.Population(30, sim.IF_cond_exp())
    src = sim.Population(40, sim.SpikeSourcePoisson(rate=30.0))
    rng = sim.NumpyRNG(seed=11)
    sim.Projection(src, exc, sim.FixedProbabilityConnector(0.2, rng=rng), sim.StaticSynapse(weight=0.6, delay=1.0))
    sim.Projection(exc, inh, sim.FixedNumberPreConnector(15, rng=rng), sim.StaticSynapse(weight=0.004, delay=1.5))
    sim.Projection(inh, exc, sim.FixedProbabilityConnector(0.3, rng=rng), sim.StaticSynapse(weight=-0.3, delay=1.0),
                   receptor_type="inhibitory")
    exc.inject(sim.StepCurrentSource(times=[50.0, 100.0], amplitudes=[0.3, 0.0]))
    exc.record("spikes")
    inh.record("spikes")
    sim.run(150.0)
    exc.set(i_offset=0.5)                   # a change between runs
    sim.run(50.0)
    trains = [np.asarray(st.magnitude) for p in (exc, inh) for st in p.get_data().segments[0].spiketrains]
    sim.end()
    return trains


def test_threads_give_the_same_spikes():
    import pyNN.ranvier as sim
    one, two = small_network(sim, 1), small_network(sim, 2)
    assert sum(map(len, one)) > 100
    assert all(np.array_equal(a, b) for a, b in zip(one, two))


@pytest.mark.parametrize("dependence", ["AdditiveWeightDependence", "MultiplicativeWeightDependence",
                                        "AdditivePotentiationMultiplicativeDepression", "GutigWeightDependence"])
def test_stdp_gives_nests_weights(dependence):
    """Each of PyNN's weight dependences (Gütig's with its defaults, mu = 0.5: pyNN.nest 0.13
    drops the values a script gives)."""
    pytest.importorskip("nest")

    def run(name):
        import importlib
        sim = importlib.import_module(f"pyNN.{name}")
        sim.setup(timestep=0.1, min_delay=1.0)
        pre = sim.Population(20, sim.SpikeSourceArray(spike_times=[[5.0 + 10 * k + i * 0.5 for k in range(30)]
                                                                   for i in range(20)]))
        post = sim.Population(5, sim.IF_curr_alpha(tau_refrac=2.0))
        stdp = sim.STDPMechanism(timing_dependence=sim.SpikePairRule(tau_plus=20.0, tau_minus=20.0, A_plus=0.01,
                                                                     A_minus=0.012),
                                 weight_dependence=getattr(sim, dependence)(w_min=0.0, w_max=1.5),
                                 weight=0.6, delay=1.0)
        prj = sim.Projection(pre, post, sim.AllToAllConnector(), stdp)
        post.record("spikes")
        sim.run(320.0)
        w = prj.get("weight", format="array")
        n = sum(len(s) for s in post.get_data().segments[0].spiketrains)
        sim.end()
        return w, n

    ours, n_ours = run("ranvier")
    theirs, n_theirs = run("nest")
    assert n_ours == n_theirs > 0
    moved = 0.05 if dependence == "AdditiveWeightDependence" else 0.01   # w-dependent steps are smaller
    assert np.nanmax(np.abs(ours - 0.6)) > moved                      # the weights moved
    assert np.nanmax(np.abs(ours - theirs)) < 1e-12


def test_if_curr_delta_is_nests_iaf_psc_delta():
    """IF_curr_delta on lifca: NEST's iaf_psc_delta (run directly: pyNN.nest takes the precise
    iaf_psc_delta_ps for it), V within 1e-9 mV at every step, the same spikes; a weight w jumps V
    by 1000 w mV, as pyNN.nest's translation gives iaf_psc_delta."""
    nest = pytest.importorskip("nest")
    import pyNN.ranvier as sim
    sim.setup(timestep=0.1, min_delay=1.0)
    cell = sim.Population(1, sim.IF_curr_delta(i_offset=0.8, tau_refrac=2.0, v_rest=-60.0, v_thresh=-50.0,
                                                 v_reset=-62.0, cm=1.0, tau_m=20.0))
    src = sim.Population(1, sim.SpikeSourceArray(spike_times=[10.0, 20.0, 30.0, 52.0]))
    sim.Projection(src, cell, sim.AllToAllConnector(), sim.StaticSynapse(weight=0.002, delay=1.0))
    cell.record(["spikes", "v"])
    sim.run(100.0)
    seg = cell.get_data().segments[0]
    v = np.asarray(seg.analogsignals[0]).ravel()
    ours = np.asarray(seg.spiketrains[0].magnitude)
    sim.end()
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.resolution = 0.1
    n = nest.Create("iaf_psc_delta", params={"E_L": -60.0, "V_th": -50.0, "V_reset": -62.0, "C_m": 1000.0,
                                              "tau_m": 20.0, "t_ref": 2.0, "I_e": 800.0, "V_m": -65.0})
    g = nest.Create("spike_generator", params={"spike_times": [10.0, 20.0, 30.0, 52.0]})
    nest.Connect(g, n, syn_spec={"weight": 2.0, "delay": 1.0})
    m = nest.Create("multimeter", params={"record_from": ["V_m"], "interval": 0.1})
    nest.Connect(m, n)
    r = nest.Create("spike_recorder")
    nest.Connect(n, r)
    nest.Simulate(100.0)
    k = np.rint(m.events["times"] / 0.1).astype(int)            # PyNN's signal: t = 0, then every step
    assert ours.size > 2 and np.allclose(ours, r.events["times"], atol=1e-9)
    assert np.max(np.abs(v[k] - m.events["V_m"])) < 1e-9


def test_pynns_connectors_give_pyNN_nests_connections():
    """The connectors PyNN draws (AllToAll, OneToOne, FromList, DistanceDependentProbability on
    PyNN's structures, and FixedProbability and FixedNumberPre given the script's NumpyRNG) give
    the connections pyNN.nest gives with the same RNG."""
    pytest.importorskip("nest")
    import importlib

    def connections(name):
        sim = importlib.import_module(f"pyNN.{name}")
        from pyNN.space import Grid2D
        sim.setup(timestep=0.1, min_delay=0.5)
        a = sim.Population(36, sim.IF_curr_exp(), structure=Grid2D(dx=10.0, dy=10.0))
        b = sim.Population(36, sim.IF_curr_exp(), structure=Grid2D(dx=10.0, dy=10.0))
        syn = sim.StaticSynapse(weight=0.1, delay=0.5)
        out = []
        for connector in (sim.AllToAllConnector(allow_self_connections=False), sim.OneToOneConnector(),
                          sim.FromListConnector([(0, 3, 0.2, 1.0), (5, 7, 0.3, 1.5), (35, 0, 0.4, 2.0)]),
                          sim.DistanceDependentProbabilityConnector("exp(-d/15.0)", rng=sim.NumpyRNG(seed=3)),
                          sim.FixedProbabilityConnector(0.1, rng=sim.NumpyRNG(seed=5)),
                          sim.FixedNumberPreConnector(4, with_replacement=True, rng=sim.NumpyRNG(seed=6))):
            prj = sim.Projection(a, b, connector, syn)
            out.append(sorted(tuple(round(x, 9) for x in c) for c in prj.get(["weight", "delay"], format="list")))
        sim.end()
        return out

    ours, theirs = connections("ranvier"), connections("nest")
    assert [len(c) for c in ours] == [len(c) for c in theirs] and len(ours[3]) > 36 and len(ours[4]) > 36
    assert ours == theirs


def test_a_native_rng_lets_ranvier_draw_and_draws_numpys_numbers_elsewhere():
    """FixedProbabilityConnector with sim.NativeRNG (or no RNG): Ranvier's keyed rule draws the
    connections; with a NumpyRNG, PyNN's connector does. A NativeRNG's own numbers are NumPy's
    from its seed."""
    import pyNN.ranvier as sim
    from pyNN.random import NumpyRNG
    assert np.array_equal(sim.NativeRNG(seed=9).next(5), NumpyRNG(seed=9).next(5))
    sim.setup(timestep=0.1)
    try:
        a, b, c = (sim.Population(30, sim.IF_curr_exp()) for _ in range(3))
        syn = sim.StaticSynapse(weight=0.1, delay=0.5)
        native = sim.Projection(a, b, sim.FixedProbabilityConnector(0.2, rng=sim.NativeRNG(seed=1)), syn)
        default = sim.Projection(b, a, sim.FixedProbabilityConnector(0.2), syn)
        scripts = sim.Projection(a, c, sim.FixedProbabilityConnector(0.2, rng=NumpyRNG(seed=1)), syn)
        assert native.native is not None and default.native is not None and scripts.native is None
        assert 100 < native.size() < 260 and 100 < scripts.size() < 260
    finally:
        sim.end()


def test_a_label_with_a_slash_is_a_pynn_label():
    """'L2/3E', as cortical models label their layers: the label stays PyNN's; the Ranvier
    population behind it takes a name the results files can hold."""
    import pyNN.ranvier as sim
    sim.setup(timestep=0.1, min_delay=1.0)
    cells = sim.Population(4, sim.IF_curr_exp(i_offset=1.0), label="L2/3E")
    cells.record("spikes")
    sim.run(50.0)
    trains = cells.get_data().segments[0].spiketrains
    sim.end()
    assert cells.label == "L2/3E"
    assert len(trains) == 4 and all(len(t) > 0 for t in trains)


@pytest.mark.parametrize("connector", ["OneToOneConnector", "AllToAllConnector"])
def test_a_one_cell_population_connects(connector):
    """PyNN's connectors on a 1 x 1 map (its examples/simple_STDP.py): each connection made once,
    the spike delivered (PyNN 0.13 with NumPy 2 fails there without pyNN.ranvier's guard)."""
    import pyNN.ranvier as sim
    sim.setup(timestep=0.1)
    try:
        src = sim.Population(1, sim.SpikeSourceArray(spike_times=[5.0]))
        cell = sim.Population(1, sim.IF_curr_exp())
        prj = sim.Projection(src, cell, getattr(sim, connector)(), sim.StaticSynapse(weight=2.0, delay=1.0))
        cell.record("v")
        sim.run(20.0)
        assert prj.get("weight", format="list") == [(0, 0, 2.0)]
        v = cell.get_data("v").segments[0].analogsignals[0].magnitude[:, 0]
        assert v[:60].max() == v[0] and v.max() > v[0] + 1.0         # rest until the spike acts, then a PSP
    finally:
        sim.end()


def test_pyNN_parameter_types_are_exported_as_pyNN_nest_exports_them():
    """Scripts write sim.Sequence, sim.ArrayParameter and sim.ParameterSpace (PyNN's examples do)."""
    import pyNN.parameters
    import pyNN.ranvier as sim
    assert sim.Sequence is pyNN.parameters.Sequence and sim.ArrayParameter is pyNN.parameters.ArrayParameter
    assert sim.ParameterSpace is pyNN.parameters.ParameterSpace
    sim.setup(timestep=0.1)
    try:
        src = sim.Population(2, sim.SpikeSourceArray(spike_times=[sim.Sequence([5.0, 9.0]), sim.Sequence([7.0])]))
        src.record("spikes")
        sim.run(20.0)
        trains = src.get_data("spikes").segments[0].spiketrains
        assert [list(t.magnitude) for t in trains] == [[5.0, 9.0], [7.0]]
    finally:
        sim.end()


def test_the_procedural_set_is_exported_as_pyNN_nest_exports_it():
    """sim.set(cells, **parameters), PyNN's procedural API (deprecated there, still exported)."""
    import warnings

    import pyNN.ranvier as sim
    sim.setup(timestep=0.1)
    try:
        cells = sim.Population(3, sim.IF_curr_exp())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            sim.set(cells, tau_m=15.0, i_offset=[0.1, 0.2, 0.3])
        assert cells.get("tau_m") == 15.0 and list(cells.get("i_offset")) == [0.1, 0.2, 0.3]
    finally:
        sim.end()


def test_gutig_takes_the_scripts_mu():
    """The mu_plus and mu_minus a script gives reach the engine (rv.STDP's mu_plus, mu_minus)."""
    import pyNN.ranvier as sim

    def final_weights(mu):
        sim.setup(timestep=0.1, min_delay=1.0)
        pre = sim.Population(10, sim.SpikeSourceArray(spike_times=[[5.0 + 10 * k + i for k in range(20)]
                                                                   for i in range(10)]))
        post = sim.Population(3, sim.IF_curr_alpha(tau_refrac=2.0))
        stdp = sim.STDPMechanism(timing_dependence=sim.SpikePairRule(tau_plus=20.0, tau_minus=20.0, A_plus=0.01,
                                                                     A_minus=0.012),
                                 weight_dependence=sim.GutigWeightDependence(w_max=1.5, mu_plus=mu, mu_minus=mu),
                                 weight=0.6, delay=1.0)
        prj = sim.Projection(pre, post, sim.AllToAllConnector(), stdp)
        sim.run(220.0)
        w = prj.get("weight", format="array")
        sim.end()
        return w

    default, other = final_weights(0.5), final_weights(0.1)
    assert np.nanmax(np.abs(default - 0.6)) > 0.005
    assert np.nanmax(np.abs(default - other)) > 1e-4


def _assembly_run(split: bool):
    """Two spike-source populations onto a population and a view of another, each connection with
    its own weight: through Assemblies (one Projection) or population by population."""
    import pyNN.ranvier as sim
    sim.setup(timestep=0.1)
    try:
        a = sim.Population(2, sim.SpikeSourceArray(spike_times=[[2.0, 11.0], [4.0]]))
        b = sim.Population(1, sim.SpikeSourceArray(spike_times=[[6.0, 8.0]]))
        c = sim.Population(2, sim.IF_curr_exp())
        d = sim.Population(3, sim.IF_curr_exp())
        view = d[[0, 2]]
        # (pre, post) within the Assemblies a + b and c + d[0, 2]
        conns = [(0, 0, 0.5), (0, 3, 0.7), (1, 1, 0.9), (2, 2, 1.1), (2, 0, 1.3), (1, 3, 1.7)]
        parts = {}
        if split:
            for i, j, w in conns:
                pre, pi = (a, i) if i < 2 else (b, i - 2)
                post, pj = (c, j) if j < 2 else (view, j - 2)
                parts.setdefault((id(pre), id(post)), (pre, post, []))[2].append((pi, pj, w, 1.0))
            for pre, post, lst in parts.values():
                sim.Projection(pre, post, sim.FromListConnector(lst), sim.StaticSynapse(), receptor_type="excitatory")
            got = None
        else:
            # receptor_type given: PyNN guesses an Assembly's from a set (its order varies by process)
            prj = sim.Projection(a + b, c + view, sim.FromListConnector([(i, j, w, 1.0) for i, j, w in conns]),
                                 sim.StaticSynapse(), receptor_type="excitatory")
        c.record("v")
        d.record("v")
        sim.run(20.0)
        if not split:
            got = sorted(prj.get("weight", format="list"))
        v = [p.get_data("v").segments[0].analogsignals[0].magnitude for p in (c, d)]
        return v, got, sorted((i, j, w) for i, j, w in conns)
    finally:
        sim.end()


def test_a_projection_between_assemblies_is_split_by_population():
    """sim.connect(cells, excitatory + inhibitory), as PyNN's scenario1a: a Projection whose source
    and target are Assemblies (of populations and views) gives the membrane traces of the same
    connections made population by population, and reads back in the Assemblies' indices."""
    v_split, _, _ = _assembly_run(split=True)
    v_joined, got, conns = _assembly_run(split=False)
    assert got == conns
    for ours, theirs in zip(v_joined, v_split):
        assert np.array_equal(ours, theirs)
    assert np.ptp(v_joined[1][:, 1]) == 0 and np.ptp(v_joined[1][:, 0]) > 0    # d[1] is outside the view


def test_a_plastic_projection_across_populations_of_an_assembly_is_refused():
    import pyNN.ranvier as sim
    sim.setup(timestep=0.1)
    try:
        a = sim.Population(2, sim.SpikeSourceArray(spike_times=[[2.0], [4.0]]))
        c, d = sim.Population(2, sim.IF_curr_exp()), sim.Population(2, sim.IF_curr_exp())
        stdp = sim.STDPMechanism(timing_dependence=sim.SpikePairRule(), weight_dependence=sim.AdditiveWeightDependence(),
                                 weight=0.5, delay=1.0)
        sim.Projection(a, c + d, sim.AllToAllConnector(), stdp, receptor_type="excitatory")
        with pytest.raises(NotImplementedError, match="connect their populations one by one"):
            sim.run(10.0)
    finally:
        sim.end()


def test_what_pyNN_ranvier_lacks_is_refused_with_pyNNs_errors():
    """A missing cell type raises PyNN's NoModelAvailableError, naming those there are."""
    import pyNN.ranvier as sim
    from pyNN import errors
    from pyNN.standardmodels import StandardCellType
    sim.setup(timestep=0.1)
    try:
        class Unknown(StandardCellType):
            default_parameters = {}
        with pytest.raises(errors.NoModelAvailableError, match="available: "):
            sim.Population(1, Unknown())
    finally:
        sim.end()


def _numpy_rng_network(name):
    """One NumpyRNG draws the initial potentials of two populations, then the connections of two
    FixedProbabilityConnectors, as PyNN's VAbenchmarks.py shares one."""
    import importlib
    from pyNN.random import NumpyRNG, RandomDistribution
    sim = importlib.import_module(f"pyNN.{name}")
    sim.setup(timestep=0.1, min_delay=0.1)
    rng = NumpyRNG(seed=98765)
    uniform = RandomDistribution("uniform", low=-60.0, high=-50.0, rng=rng)
    exc = sim.Population(40, sim.IF_cond_exp(i_offset=1.0))
    inh = sim.Population(10, sim.IF_cond_exp(i_offset=1.0))
    for p in (exc, inh):
        p.initialize(v=uniform)
    sim.Projection(exc, inh, sim.FixedProbabilityConnector(0.2, rng=rng), sim.StaticSynapse(weight=0.004, delay=0.2))
    sim.Projection(inh, exc, sim.FixedProbabilityConnector(0.3, rng=rng), sim.StaticSynapse(weight=0.02, delay=0.5),
                   receptor_type="inhibitory")
    inh.record(["v", "spikes"])
    sim.run(100.0)
    seg = inh.get_data().segments[0]
    out = seg.filter(name="v")[0].magnitude, [np.rint(t.magnitude / 0.1).astype(int).tolist() for t in seg.spiketrains]
    sim.end()
    return out


def test_a_scripts_numpy_rng_gives_pyNN_nests_initial_values_and_connections():
    """The same script and seed: initial values and connections drawn from the script's NumpyRNG
    in pyNN.nest's order, so V (IF_cond_exp, NEST's scheme) and spikes are pyNN.nest's. The
    t = 0 sample is left out: pyNN.nest records there a second draw of the distribution, not the
    value its neurons start from (NEST's V_m after initialize() is the first draw, as ours)."""
    pytest.importorskip("nest")
    v, spikes = _numpy_rng_network("ranvier")
    v_nest, spikes_nest = _numpy_rng_network("nest")
    assert v.shape == v_nest.shape
    assert float(np.max(np.abs(v[1:] - v_nest[1:]))) < 1e-9
    assert sum(map(len, spikes)) > 20 and spikes == spikes_nest


def test_recorded_electrode_currents_and_v_are_pynn_nests():
    """source.record() / get_data(): ACSource, DCSource and StepCurrentSource give pyNN.nest's
    current traces (one point a step, 0 to the end, the current of the step starting then) and
    V, over two runs."""
    pytest.importorskip("nest")

    def run(name):
        import importlib
        sim = importlib.import_module(f"pyNN.{name}")
        sim.setup(timestep=0.1, min_delay=1.0)
        cells = sim.Population(3, sim.IF_curr_exp(v_thresh=50.0, tau_refrac=5.0, v_rest=-60.0))
        cells.initialize(v=-60.0)
        sources = [sim.ACSource(start=50.0, stop=125.0, amplitude=0.5, offset=0.1, frequency=100.0, phase=30.0),
                   sim.DCSource(amplitude=0.5, start=50.0, stop=125.0),
                   sim.StepCurrentSource(times=[50.0, 87.5, 125.0], amplitudes=[0.4, 0.6, 0.2])]
        for k, s in enumerate(sources):
            cells[k].inject(s)
            s.record()
        cells.record("v")
        sim.run(100.0)
        sim.run(100.0)
        v = cells.get_data().segments[0].filter(name="v")[0].magnitude
        traces = [s.get_data() for s in sources]
        sim.end()
        return v, [(t.times.magnitude, t.magnitude.ravel()) for t in traces]

    v_ours, ours = run("ranvier")
    v_theirs, theirs = run("nest")
    for (t, i), (t_nest, i_nest) in zip(ours, theirs):
        assert t.size == 2001 and np.allclose(t, t_nest, atol=1e-9)
        assert np.ptp(i) > 0.1 and np.max(np.abs(i - i_nest)) < 1e-12
    assert np.max(np.abs(v_ours - v_theirs)) < 1e-9


def test_ac_source_set_after_a_run_and_recording_started_after_a_run():
    """ACSource.amplitude set between runs: the new amplitude from the next step; the phase holds
    at start. record() after a run: the trace starts at the current time."""
    import pyNN.ranvier as sim
    sim.setup(timestep=0.1, min_delay=1.0)
    cells = sim.Population(2, sim.IF_curr_exp())
    ac = sim.ACSource(start=5.0, stop=50.0, amplitude=0.5, frequency=50.0, phase=90.0)
    cells[0].inject(ac)
    ac.record()
    dc = sim.DCSource(amplitude=0.3, start=2.0)
    cells[1].inject(dc)
    sim.run(10.0)
    ac.amplitude = 1.0
    dc.record()
    sim.run(10.0)
    i_ac, i_dc = ac.get_data(), dc.get_data()
    sim.end()
    t = np.arange(201) * 0.1
    expected = np.where((t >= 5 - 1e-9) & (t < 50), np.where(t < 10 - 1e-9, 0.5, 1.0) *
                        np.sin(2 * np.pi * 50.0 * (t - 5.0) / 1000.0 + np.pi / 2), 0.0)
    assert len(i_ac) == 201 and np.max(np.abs(i_ac.magnitude.ravel() - expected)) < 1e-12
    assert len(i_dc) == 101 and float(i_dc.times[0]) == pytest.approx(10.0)
    assert np.all(i_dc.magnitude == 0.3)


def test_if_facets_hardware1_is_pyNN_nests():
    """IF_facets_hardware1: pyNN.nest's iaf_cond_exp with C_m, t_ref and E_ex fixed (its
    extra_parameters); the same script on both backends, per-cell g_leak: V within 1e-6 mV (the
    RKF45 tolerance of iaf_cond_exp), the same spikes, the parameters read back as given."""
    pytest.importorskip("nest")

    def run(name):
        import importlib
        sim = importlib.import_module(f"pyNN.{name}")
        sim.setup(timestep=0.1, min_delay=1.0)
        cell = sim.Population(2, sim.IF_facets_hardware1(g_leak=[40.0, 25.0], v_thresh=-57.0))
        src = sim.Population(3, sim.SpikeSourceArray(spike_times=[[5.0, 10.0, 11.0, 12.0, 40.0], [20.0, 21.0, 23.0],
                                                                  [30.0, 60.0]]))
        sim.Projection(src, cell, sim.AllToAllConnector(), sim.StaticSynapse(weight=0.006, delay=1.0),
                       receptor_type="excitatory")
        sim.Projection(src[2:3], cell, sim.AllToAllConnector(), sim.StaticSynapse(weight=0.01, delay=1.0),
                       receptor_type="inhibitory")
        cell.record(["spikes", "v"])
        sim.run(100.0)
        seg = cell.get_data().segments[0]
        v = np.asarray(seg.filter(name="v")[0])
        spikes = [np.asarray(t.magnitude) for t in seg.spiketrains]
        g_leak = cell.get("g_leak")
        sim.end()
        return v, spikes, g_leak

    v, spikes, g_leak = run("ranvier")
    v_nest, spikes_nest, _ = run("nest")
    assert list(g_leak) == [40.0, 25.0]
    assert all(s.size > 3 for s in spikes)
    assert all(a.shape == b.shape and np.allclose(a, b, rtol=0, atol=1e-9) for a, b in zip(spikes, spikes_nest)), \
        (spikes, spikes_nest)
    assert np.max(np.abs(v - v_nest)) < 1e-6


def test_native_cell_type_takes_the_models_own_names_and_gives_nests_trace():
    """native_cell_type("psc_exp"): Ranvier's parameter names and units, initialize(V_m=...), V_m
    and I_syn recordable; against NEST's iaf_psc_exp wired the same way (run directly: pyNN.nest
    0.13's own native_cell_type fails on NEST 3.10 when it reads the model's defaults), V_m
    within 1e-9 mV at every step and the same spikes."""
    import pyNN.ranvier as sim
    from pyNN import errors
    with pytest.raises(errors.NoModelAvailableError, match="not one of Ranvier's neuron models"):
        sim.native_cell_type("iaf_psc_exp")
    times = [[5.0, 10.0, 30.0, 31.0], [20.0, 50.0]]
    sim.setup(timestep=0.1, min_delay=1.0)
    try:
        cell = sim.Population(2, sim.native_cell_type("psc_exp")(
            E_L_mV=-65.0, V_th_mV=-52.0, V_reset_mV=-70.0, tau_syn_ex_ms=0.5, tau_syn_in_ms=3.0,
            I_e_pA=[400.0, 100.0], tau_arp_ms=2.0))
        cell.initialize(V_m=[-60.0, -65.0])
        src = sim.Population(2, sim.SpikeSourceArray(spike_times=times))
        sim.Projection(src[0:1], cell, sim.AllToAllConnector(), sim.StaticSynapse(weight=0.5, delay=1.0),
                       receptor_type="excitatory")
        sim.Projection(src[1:2], cell, sim.AllToAllConnector(), sim.StaticSynapse(weight=-0.25, delay=1.5),
                       receptor_type="inhibitory")
        cell.record(["spikes", "V_m", "I_syn"])
        assert list(cell.get("I_e_pA")) == [400.0, 100.0] and cell.get("C_m_pF") == 250.0
        sim.run(100.0)
        seg = cell.get_data().segments[0]
        v = np.asarray(seg.filter(name="V_m")[0])
        assert str(seg.filter(name="I_syn")[0].units.dimensionality) == "pA"
        ours = [np.asarray(t.magnitude) for t in seg.spiketrains]
    finally:
        sim.end()
    assert v[0].tolist() == [-60.0, -65.0]
    nest = pytest.importorskip("nest")
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.resolution = 0.1
    n = nest.Create("iaf_psc_exp", 2, params={"E_L": -65.0, "V_th": -52.0, "V_reset": -70.0, "tau_syn_ex": 0.5,
                                               "tau_syn_in": 3.0, "t_ref": 2.0})
    n.I_e = [400.0, 100.0]
    n.V_m = [-60.0, -65.0]
    g = nest.Create("spike_generator", 2)
    for k in range(2):
        g[k].spike_times = times[k]
    nest.Connect(g[0], n, syn_spec={"weight": 500.0, "delay": 1.0})
    nest.Connect(g[1], n, syn_spec={"weight": -250.0, "delay": 1.5})
    m = nest.Create("multimeter", params={"record_from": ["V_m"], "interval": 0.1})
    nest.Connect(m, n)
    r = nest.Create("spike_recorder")
    nest.Connect(n, r)
    nest.Simulate(100.0)
    ev = m.events
    for i, s in enumerate(n.tolist()):
        mine = ev["senders"] == s
        k = np.rint(ev["times"][mine] / 0.1).astype(int)
        assert np.max(np.abs(v[k, i] - ev["V_m"][mine])) < 1e-9
        assert np.allclose(ours[i], r.events["times"][r.events["senders"] == s], rtol=0, atol=1e-9)
    assert ours[0].size > 2


def test_vogels2011_rule_gives_nests_vogels_sprekeler_weights():
    """PyNN's Vogels2011Rule (pyNN.nest 0.13 has none) through pyNN.ranvier against NEST 3.10's
    vogels_sprekeler_synapse run directly with the same cells, spike trains and translated
    parameters (alpha = 2 rho tau, eta and weights in pA): the same post-synaptic spikes, final
    weights equal within 1e-9 pA, and the weights moved."""
    nest = pytest.importorskip("nest")
    import pyNN.ranvier as sim
    trains = [[5.0 + 10 * k + i * 0.7 for k in range(30)] for i in range(20)]
    tau, eta, rho, w0, w_max = 20.0, 0.002, 5.0, 0.05, 0.4        # ms, nA, Hz, nA, nA
    sim.setup(timestep=0.1, min_delay=1.0)
    pre = sim.Population(20, sim.SpikeSourceArray(spike_times=trains))
    post = sim.Population(5, sim.IF_curr_alpha(tau_refrac=2.0, i_offset=np.linspace(1.0, 1.4, 5).tolist()))
    vogels = sim.STDPMechanism(timing_dependence=sim.Vogels2011Rule(tau=tau, eta=eta, rho=rho),
                               weight_dependence=sim.AdditiveWeightDependence(w_min=0.0, w_max=w_max),
                               weight=-w0, delay=1.0)          # PyNN: inhibitory current weights negative
    prj = sim.Projection(pre, post, sim.AllToAllConnector(), vogels, receptor_type="inhibitory")
    post.record("spikes")
    sim.run(320.0)
    ours = np.abs(prj.get("weight", format="array"))               # nA, magnitudes
    ours_spikes = [np.asarray(t.magnitude) for t in post.get_data().segments[0].spiketrains]
    sim.end()

    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.resolution = 0.1
    gens = nest.Create("spike_generator", 20, params=[{"spike_times": [round(x - 0.1, 1) for x in t]}
                                                      for t in trains])   # the parrots' 0.1 ms
    parrots = nest.Create("parrot_neuron", 20)
    nest.Connect(gens, parrots, "one_to_one", {"delay": 0.1})
    cells = nest.Create("iaf_psc_alpha", 5, params={"t_ref": 2.0, "C_m": 1000.0, "tau_m": 20.0, "E_L": -65.0,
                                                    "V_th": -50.0, "V_reset": -65.0, "V_m": -65.0,
                                                    "tau_syn_ex": 0.3, "tau_syn_in": 0.5})   # PyNN's defaults
    for k, c in enumerate(cells):
        c.I_e = float(np.linspace(1.0, 1.4, 5)[k]) * 1000.0
    nest.CopyModel("vogels_sprekeler_synapse", "vogels", {"tau": tau, "eta": eta * 1000.0,
                                                          "alpha": 2 * rho * tau / 1000.0, "Wmax": -w_max * 1000.0,
                                                          "weight": -w0 * 1000.0})
    nest.Connect(parrots, cells, "all_to_all", {"synapse_model": "vogels", "weight": -w0 * 1000.0, "delay": 1.0})
    rec = nest.Create("spike_recorder")
    nest.Connect(cells, rec)
    nest.Simulate(320.0 + 0.1)
    conns = nest.GetConnections(parrots, cells)
    src = np.asarray(conns.get("source")) - parrots[0].global_id
    tgt = np.asarray(conns.get("target")) - cells[0].global_id
    theirs = np.full((20, 5), np.nan)
    theirs[src, tgt] = -np.asarray(conns.get("weight")) / 1000.0
    ev = rec.events
    theirs_spikes = [np.sort(ev["times"][ev["senders"] == c.global_id]) for c in cells]
    assert sum(t.size for t in ours_spikes) > 10
    assert all(a.size == b.size and np.allclose(a, b, rtol=0, atol=1e-9) for a, b in zip(ours_spikes, theirs_spikes))
    assert np.nanmax(np.abs(ours - w0)) > 0.01
    assert np.nanmax(np.abs(ours - theirs)) < 1e-12
