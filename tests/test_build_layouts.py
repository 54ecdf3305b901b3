"""The two ways the engine builds a thread's synapse store give the same store.

Direct (the default where the (source, delay) table is small): every synapse is drawn twice,
counted in its (source, delay) cell, then written at its final place. Grouped (the fallback for
large networks x long delay ranges, forced here by RANVIER_BUILD_GROUPED=1): synapses are placed
in their source rows with their delays kept beside them, and each row is grouped by delay after.
Both must produce the same synapses in the same storage order (local=True returns that order),
so the choice never changes a spike. The networks cover every connection rule and delay law,
weights with rejection and clipping, split (inhibitory) input, and a plastic projection.
"""
import numpy as np
import pytest

import ranvier as rv
from mpi_runner import heterogeneous_network, plastic_network, rules_network

LIF = {"tau_m_ms": 20.0, "theta_mV": 20.0, "reset_mV": 10.0, "tau_arp_ms": 2.0, "alpha_c": 0.0,
       "tau_c_ms": 100.0, "g_c_mV_per_ms": 0.0, "dc_mV_per_ms": 0.0}


def rejecting_network():
    """Weight laws wide enough for the ratio test to reject draws, a clipped one, and Gaussian
    delays that are redrawn below the offset."""
    net = rv.Network(name="rejects")
    net.add_population(rv.Population("A", 300, dict(LIF)))
    net.add_population(rv.Population("B", 200, dict(LIF), excitatory=False))
    net.connect(rv.Projection(source="A", target="A", indegree=40, weight=0.2, weight_sd=0.15,
                              delay_distribution="normal", delay_offset_ms=0.5, delay_mean_ms=1.0, delay_sd_ms=0.6))
    net.connect(rv.Projection(source="B", target="A", indegree=20, weight=-0.6, weight_sd=0.5, delay_ms=1.0))
    net.connect(rv.Projection(source="A", target="B", indegree=30, weight=0.3, weight_sd=0.3, weight_clip=True,
                              delay_offset_ms=0.5, delay_scale_ms=3.0, delay_cut_ms=9.0, delay_step_ms=0.1))
    for tgt in ("A", "B"):
        net.drive(rv.PoissonDrive(tgt, 400, 6.0, weight=0.9, weight_sd=0.1))
    return net


def redrawn_delays_network():
    """Gaussian delays only (so the direct layout builds it), most of them redrawn: below the
    offset or above a bound, often three times in a row (the slow path). Pass 2 takes those
    delays back from pass 1 where the weight cannot reject (a narrow law, a clipped one) and
    draws weight and delay together again where it can."""
    net = rv.Network(name="redrawn")
    net.add_population(rv.Population("A", 300, dict(LIF)))
    net.add_population(rv.Population("B", 200, dict(LIF), excitatory=False))
    net.connect(rv.Projection(source="A", target="A", indegree=200, weight=0.02, weight_sd=0.015,
                              delay_distribution="normal", delay_offset_ms=0.5, delay_mean_ms=1.0, delay_sd_ms=0.6))
    net.connect(rv.Projection(source="B", target="A", indegree=100, weight=-0.06, weight_sd=0.005,
                              delay_distribution="normal", delay_offset_ms=0.2, delay_mean_ms=1.0, delay_sd_ms=0.8,
                              delay_redraw_above_ms=1.2))
    net.connect(rv.Projection(source="A", target="B", indegree=200, weight=0.03, weight_sd=0.03, weight_clip=True,
                              delay_distribution="normal", delay_offset_ms=0.5, delay_mean_ms=0.6, delay_sd_ms=0.6))
    net.connect(rv.Projection(source="B", target="B", indegree=50, weight=-0.04, delay_distribution="normal",
                              delay_offset_ms=0.1, delay_mean_ms=1.0, delay_sd_ms=0.3))
    for tgt in ("A", "B"):
        net.drive(rv.PoissonDrive(tgt, 400, 6.0, weight=0.9, weight_sd=0.1))
    return net


def convergent_network():
    """One source onto 70,000 targets, five synapses each at one delay: one (source, delay) cell,
    and so one segment, of 350,000 synapses (175,000 per thread on two): pass 1's 8-bit counter
    wraps hundreds of times."""
    net = rv.Network(name="convergent")
    net.add_population(rv.Population("S", 1, dict(LIF)))
    net.add_population(rv.Population("T", 70000, dict(LIF)))
    net.connect(rv.Projection(source="S", target="T", indegree=5, weight=5.0, delay_ms=1.0))
    net.drive(rv.PoissonDrive("S", 100, 20.0, weight=2.0))
    return net


NETWORKS = {
    "rules": lambda: rules_network(500, 20),
    "heterogeneous": lambda: heterogeneous_network(400, 0.05),
    "plastic": lambda: plastic_network(300, 15),
    "rejects": rejecting_network,
    "redrawn": redrawn_delays_network,
    "convergent": convergent_network,
    "dpsnn": lambda: rv.models.dpsnn(neurons=1024, synapses_per_neuron=200),
    "microcircuit": lambda: rv.models.build("microcircuit", scale=0.02, k_scale=0.02),
}


def store_and_spikes(make, threads):
    sim = rv.Simulation(make(), threads=threads, seed=5)
    local = sim.connections(local=True)
    result = sim.run(100.0)
    return local, sim, result


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_direct_and_grouped_builds_give_the_same_store(name, threads, monkeypatch):
    monkeypatch.delenv("RANVIER_BUILD_GROUPED", raising=False)
    direct, sim_d, res_d = store_and_spikes(NETWORKS[name], threads)
    monkeypatch.setenv("RANVIER_BUILD_GROUPED", "1")
    grouped, sim_g, res_g = store_and_spikes(NETWORKS[name], threads)
    assert direct.source.size > 1000
    for field in ("source", "target", "weight", "delay_ms"):
        assert np.array_equal(getattr(direct, field), getattr(grouped, field)), field
    assert np.array_equal(res_d.spike_ids, res_g.spike_ids) and np.array_equal(res_d.spike_steps, res_g.spike_steps)
    assert res_d.spike_ids.size > 0
    if name == "plastic":
        for proj in sim_d.network.projections:
            if getattr(proj, "synapse", None) is not None:
                wd = sim_d.weights(proj.source, proj.target)
                wg = sim_g.weights(proj.source, proj.target)
                assert np.array_equal(wd.weight, wg.weight)
