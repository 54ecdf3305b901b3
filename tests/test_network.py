"""Validation of network descriptions: refused with a message naming the field, before any build."""
import pytest

import ranvier as rv

LIF = dict(tau_m_ms=20.0, theta_mV=20.0, reset_mV=10.0, tau_arp_ms=2.0, alpha_c=0.0, tau_c_ms=100.0,
           g_c_mV_per_ms=0.0, dc_mV_per_ms=0.0)


def test_second_drive_on_a_population_is_refused():
    net = rv.Network()
    net.add_population(rv.Population("A", 10, dict(LIF)))
    net.drive(rv.PoissonDrive("A", 10, 5.0, weight=0.1))
    with pytest.raises(rv.ConfigError, match="already has a Poisson drive"):
        net.drive(rv.PoissonDrive("A", 10, 5.0, weight=0.1))


@pytest.mark.parametrize("field, value, message", [
    ("size", -5, "'size' must be a positive integer"),
    ("size", 2.5, "'size' must be a positive integer"),
])
def test_bad_population_size(field, value, message):
    with pytest.raises(rv.ConfigError, match=message):
        rv.Network().add_population(rv.Population("A", value, dict(LIF)))


def test_unknown_neuron_parameter_is_named():
    with pytest.raises(rv.ConfigError, match="tau_x"):
        rv.Network().add_population(rv.Population("A", 10, dict(LIF, tau_x=1.0)))


def test_unknown_model_parameter_lists_known_ones():
    with pytest.raises(rv.ConfigError, match=r"unknown parameter\(s\) \['nerons'\].*neurons"):
        rv.models.dpsnn(nerons=100)


def test_delay_below_resolution_is_refused_before_build():
    net = rv.models.dpsnn(neurons=200, synapses_per_neuron=20, delay_min_ms=0.05)
    with pytest.raises(rv.ConfigError, match="'delay_min_ms' = 0.05 ms is not a multiple"):
        rv.Simulation(net, threads=1)


def test_projection_without_a_model_names_its_own_field():
    net = rv.Network()
    net.add_population(rv.Population("A", 10, dict(LIF)))
    net.connect(rv.Projection(source="A", target="A", probability=0.5, weight=0.1, delay_offset_ms=0.25,
                              delay_scale_ms=1.0, delay_cut_ms=2.0))
    with pytest.raises(rv.ConfigError, match="projection A->A: 'delay_offset_ms' = 0.25 ms"):
        rv.Simulation(net, threads=1)


def test_duration_off_the_step_grid_is_refused():
    """Off the step grid: refused. Inside a cycle: runs exactly that long."""
    sim = rv.Simulation(rv.models.dpsnn(neurons=200, synapses_per_neuron=20), threads=1)
    with pytest.raises(rv.ConfigError, match="not a multiple of the resolution"):
        sim.run(1.05)
    assert sim.run(1.5).duration_ms == 1.5


def test_memory_estimate_refuses_before_building():
    net = rv.models.dpsnn(neurons=2048)
    with pytest.raises(rv.ConfigError, match="will not fit in memory"):
        rv.Simulation(net, threads=1, max_memory_bytes=10 * 2**20)


def test_unknown_exchange_and_placement():
    net = rv.models.dpsnn(neurons=200, synapses_per_neuron=20)
    with pytest.raises(rv.ConfigError, match="exchange must be one of"):
        rv.Simulation(net, exchange="smoke-signals")
    with pytest.raises(rv.ConfigError, match="placement must be one of"):
        rv.Simulation(net, placement="scattered")
