"""What is built is validated at build time, whatever was changed after it was added.

Network.add_population, connect, drive and inject check what they are given; a Simulation checks
the whole description again before anything is built (EngineSpec -> Network.validate), so a
field changed afterwards (net.projections[0].probability = 7.0) is refused with the message it
would have had at construction. Booleans are not integers, NumPy integers are; population names
must be ones the output (HDF5 groups of spikes.h5) can hold.
"""
import re

import numpy as np
import pytest

import ranvier as rv

LIF = dict(tau_m_ms=20.0, theta_mV=20.0, reset_mV=10.0, tau_arp_ms=2.0)


def small(drive=True, current=False):
    net = rv.Network()
    net.add_population(rv.Population("E", 20, dict(LIF)))
    net.add_population(rv.Population("I", 10, {}, model="psc_exp"))
    net.connect(rv.Projection(source="E", target="I", probability=0.2, weight=50.0, delay_ms=1.0))
    net.connect(rv.Projection(source="I", target="E", indegree=3, weight=-0.5, delay_ms=1.5))
    if drive:
        net.drive(rv.PoissonDrive("E", n_synapses=100, rate_hz=20.0, weight=0.5))
    if current:
        net.inject(rv.StepCurrent("I", times_ms=[1.0], amplitudes_pA=[300.0]))
    return net


def refusal(make, change):
    """The message of the error `make()` raises when it is constructed with the change already in
    place, and the message a Simulation raises when the change is made after it was added."""
    with pytest.raises(rv.ConfigError) as at_construction:
        make(change)
    net = make(None)
    change(net)
    with pytest.raises(rv.ConfigError) as at_build:
        rv.Simulation(net, threads=1)
    return str(at_construction.value), str(at_build.value)


def test_the_issues_probability_after_connect():
    net = small()
    net.projections[0].probability = 7.0
    with pytest.raises(rv.ConfigError, match=r"projection E->I: 'probability' must lie in \[0, 1\], got 7\.0"):
        rv.Simulation(net, threads=1)


@pytest.mark.parametrize("field, value, words", [
    ("probability", 7.0, "'probability' must lie in [0, 1], got 7.0"),
    ("probability", -0.5, "'probability' must be zero or positive"),
    ("weight", float("nan"), "'weight' must be a finite number"),
    ("weight", "strong", "'weight' must be a finite number"),
    ("weight_sd", float("inf"), "'weight_sd' must be"),
    ("weight_sd", -1.0, "'weight_sd' must be zero or positive"),
    ("delay_ms", -1.0, "'delay_ms' must be positive"),
    ("autapses", "yes", "'autapses' must be true or false"),
    ("indegree", 5, "give exactly one connection rule, got probability and indegree"),
])
def test_a_projection_changed_after_connect_is_refused_as_at_construction(field, value, words):
    def make(change):
        net = small()
        kw = dict(source="E", target="I", probability=0.2, weight=50.0, delay_ms=1.0)
        if change is not None:
            kw[field] = value
        net.connect(rv.Projection(**kw))
        return net
    first, later = refusal(make, lambda net: setattr(net.projections[-1], field, value))
    assert words in first and first == later


@pytest.mark.parametrize("field, value, words", [
    ("indegree", True, "'indegree' must be a non-negative integer, got True"),
    ("indegree", -3, "'indegree' must be a non-negative integer, got -3"),
    ("indegree", 2.5, "'indegree' must be a non-negative integer, got 2.5"),
])
def test_a_degree_changed_after_connect_is_refused_as_at_construction(field, value, words):
    def make(change):
        net = small()
        net.connect(rv.Projection(source="I", target="I", indegree=value if change else 3, weight=-0.5,
                                  delay_ms=1.0))
        return net
    first, later = refusal(make, lambda net: setattr(net.projections[-1], field, value))
    assert words in first and first == later


@pytest.mark.parametrize("field, value, words", [
    ("size", -5, "population 'X': 'size' must be a positive integer, got -5"),
    ("size", True, "population 'X': 'size' must be a positive integer, got True"),
    ("size", 2.5, "population 'X': 'size' must be a positive integer, got 2.5"),
    ("model", "hh", "population 'X': 'model' must be one of"),
    ("tau_minus_ms", -1.0, "'tau_minus_ms' (the STDP trace of its spikes) must be a positive number"),
])
def test_a_population_changed_after_adding_is_refused_as_at_construction(field, value, words):
    def make(change):
        net = small()
        kw = dict(name="X", size=4, params=dict(LIF))
        if change is not None:
            kw[field] = value
        net.add_population(rv.Population(**kw))
        return net
    first, later = refusal(make, lambda net: setattr(net.populations[-1], field, value))
    assert words in first and first == later


def test_a_parameter_changed_after_adding_is_refused_as_at_construction():
    def make(change):
        net = small()
        net.add_population(rv.Population("X", 4, dict(LIF, tau_m_ms=-1.0 if change else 20.0)))
        return net
    first, later = refusal(make, lambda net: net.populations[-1].params.update(tau_m_ms=-1.0))
    assert "population 'X': 'tau_m_ms' must be positive" in first and first == later


@pytest.mark.parametrize("field, value, words", [
    ("n_synapses", True, "'n_synapses' must be a non-negative integer, got True"),
    ("n_synapses", -1, "'n_synapses' must be a non-negative integer, got -1"),
    ("rate_hz", -3.0, "'rate_hz' must be zero or positive"),
    ("weight", float("inf"), "'weight' must be a finite number"),
    ("weight_sd", -0.1, "'weight_sd' must be zero or positive"),
])
def test_a_drive_changed_after_adding_is_refused_as_at_construction(field, value, words):
    def make(change):
        net = small(drive=False)
        kw = dict(target="E", n_synapses=100, rate_hz=20.0, weight=0.5)
        if change is not None:
            kw[field] = value
        net.drive(rv.PoissonDrive(**kw))
        return net
    first, later = refusal(make, lambda net: setattr(net.drives[0], field, value))
    assert words in first and first == later


def test_a_current_changed_after_injecting_is_refused_as_at_construction():
    def make(change):
        net = small(drive=False)
        net.inject(rv.StepCurrent("I", times_ms=[1.0], amplitudes_pA=[float("nan") if change else 300.0]))
        return net
    first, later = refusal(make, lambda net: setattr(net.currents[0], "amplitudes_pA", [float("nan")]))
    assert "current source on 'I': 'amplitudes_pA' must be finite numbers" in first and first == later


def test_what_was_added_must_still_be_there():
    net = small()
    net.populations[1].name = "J"              # the projections still name 'I'
    with pytest.raises(rv.ConfigError, match=r"no population named 'I'"):
        rv.Simulation(net, threads=1)
    net = small()
    net.populations[1].name = "E"
    with pytest.raises(rv.ConfigError, match=r"population 'E' is defined twice"):
        rv.Simulation(net, threads=1)
    net = small()
    net.drives.append(rv.PoissonDrive("E", n_synapses=10, rate_hz=1.0, weight=0.1))
    with pytest.raises(rv.ConfigError, match=r"population 'E' already has a Poisson drive"):
        rv.Simulation(net, threads=1)
    net = small()
    net.projections.append({"source": "E", "target": "I"})
    with pytest.raises(rv.ConfigError, match=r"connect needs a ranvier Projection, got dict"):
        rv.Simulation(net, threads=1)
    net = small()
    net.populations.append("F")
    with pytest.raises(rv.ConfigError, match=r"add_population needs a ranvier Population, got str"):
        rv.Simulation(net, threads=1)


def test_a_size_changed_after_adding_moves_the_later_populations():
    """Global ids follow the sizes as they are at build time: the populations never overlap."""
    net = small()
    net.populations[0].size = 30
    sim = rv.Simulation(net, threads=1)
    assert [p.first_id for p in net.populations] == [0, 30]
    c = sim.connections()
    e_to_i = c.source < 30
    assert np.all(c.target[e_to_i] >= 30) and np.all(c.target[~e_to_i] < 30)
    assert c.source.max() < 40 and c.target.max() < 40


# -- integers -------------------------------------------------------------------------------------
def test_numpy_integers_are_sizes_and_booleans_are_not():
    net = rv.Network()
    pop = net.add_population(rv.Population("A", np.int64(100), dict(LIF)))
    assert type(pop.size) is int and pop.size == 100
    net.add_population(rv.Population("B", np.uint16(7), dict(LIF)))
    net.connect(rv.Projection(source="A", target="B", outdegree=np.int32(2), weight=0.5, delay_ms=1.0))
    net.drive(rv.PoissonDrive("A", n_synapses=np.int64(10), rate_hz=5.0, weight=0.5))
    sim = rv.Simulation(net, threads=1)
    assert [p.first_id for p in net.populations] == [0, 100]
    assert sim.connections().source.size == 200
    for bad in (True, False):
        with pytest.raises(rv.ConfigError, match=rf"'size' must be a positive integer, got {bad}"):
            rv.Population("C", bad, dict(LIF))
    with pytest.raises(rv.ConfigError, match=r"'outdegree' must be a non-negative integer, got True"):
        net.connect(rv.Projection(source="A", target="B", outdegree=True, weight=0.5, delay_ms=1.0))


def test_grid_columns_take_numpy_integers_not_booleans():
    grid = rv.ColumnGrid(np.int64(2), 2)
    grid.validate("here")
    with pytest.raises(rv.ConfigError, match=r"grid 'columns_y' must be a positive integer, got True"):
        rv.ColumnGrid(2, True).validate("here")


def test_a_wrong_positional_type_names_the_parameter():
    """rv.Population(5, 10, lif): the name is 5; it used to be a nanobind TypeError at the build."""
    lif = dict(LIF)
    with pytest.raises(rv.ConfigError, match=r"Population: 'name' must be a string .*got 5 \(int\)"):
        rv.Population(5, 10, lif)
    with pytest.raises(rv.ConfigError, match=r"population 'A': 'size' must be a positive integer, got '10'"):
        rv.Population("A", "10", lif)
    with pytest.raises(rv.ConfigError, match=r"population 'A': 'params' must be a dict"):
        rv.Network().add_population(rv.Population("A", 10, 5))
    with pytest.raises(rv.ConfigError, match=r"population 'A': 'excitatory' must be true or false, got 'no'"):
        rv.Network().add_population(rv.Population("A", 10, lif, excitatory="no"))


# -- names ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, rule", [
    ("", "empty"),
    ("a/b", "'/'"),
    ("/a", "'/'"),
    (".", "'.'"),
    ("a\x00b", "NUL"),
])
def test_names_the_output_cannot_hold_are_refused(name, rule):
    message = rf"population {re.escape(repr(name))}: the name .*{re.escape(rule)}"
    with pytest.raises(rv.ConfigError, match=message):
        rv.Population(name, 10, dict(LIF))
    net = small()
    net.populations[1].name = name
    for pr in net.projections:
        pr.source, pr.target = (name if x == "I" else x for x in (pr.source, pr.target))
    with pytest.raises(rv.ConfigError, match=message):
        rv.Simulation(net, threads=1)


def test_the_issues_names_beside_each_other():
    net = rv.Network()
    net.add_population(rv.Population("a", 10, dict(LIF)))
    with pytest.raises(rv.ConfigError, match=r"population 'a/b'"):
        net.add_population(rv.Population("a/b", 10, dict(LIF)))


def test_names_the_output_can_hold_are_written_and_read_back(tmp_path):
    from ranvier.core import recording

    names = ["..", " lead", "trail ", "L2.3e", "é#2", "a b"]
    net = rv.Network()
    for name in names:
        net.add_population(rv.Population(name, 5, dict(LIF, dc_mV_per_ms=10.0)))
    sim = rv.Simulation(net, threads=1, stream_to=tmp_path)
    res = sim.run(10.0)
    sim.close()
    ids, steps = recording.read_spike_file(tmp_path / "spikes.h5", names, [p.first_id for p in net.populations], 0.1)
    assert ids.size == res.spike_ids.size > 0
    assert np.array_equal(np.sort(ids), np.sort(res.spike_ids))


def test_numpy_integers_are_taken_as_seed_and_threads():
    net = rv.models.dpsnn(neurons=400, synapses_per_neuron=40)
    sim = rv.Simulation(net, threads=np.int64(1), seed=np.uint32(7))
    assert sim.threads == 1 and type(sim.threads) is int and sim.seed == 7 and type(sim.seed) is int
    for bad in (True, np.bool_(True)):
        with pytest.raises(rv.ConfigError, match="threads must be a positive integer"):
            rv.Simulation(net, threads=bad)
