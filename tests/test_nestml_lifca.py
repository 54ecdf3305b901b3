"""The DPSNN release's neuron, NESTML's iaf_lifca (examples/nestml/iaf_lifca_neuron.nestml, its
port to NESTML 9: docs/nestml.md), generated and compiled by ranvier.nestml, drives the dpsnn
network with the built-in lifca's spikes, step for step and neuron for neuron."""
from pathlib import Path

import numpy as np
import pytest

import ranvier as rv

pytest.importorskip("pynestml")

MODEL = Path(__file__).resolve().parent.parent / "examples" / "nestml" / "iaf_lifca_neuron.nestml"
NAMES = {"tau_m_ms": "Tau", "theta_mV": "V_th", "reset_mV": "V_reset", "tau_arp_ms": "t_ref", "alpha_c": "AlphaC",
         "tau_c_ms": "tau_w", "g_c_mV_per_ms": "g_w"}


def dpsnn(neuron=None):
    net = rv.models.dpsnn(neurons=2048)
    if neuron is not None:
        for i, p in enumerate(net.populations):
            assert p.model == "lifca" and p.params["dc_mV_per_ms"] == 0.0 and p.initial == "reset"
            params = {NAMES[k]: v for k, v in p.params.items() if k in NAMES}
            net.populations[i] = rv.Population(p.name, p.size, params, model=neuron, excitatory=p.excitatory)
    return net


def test_the_release_neuron_gives_the_built_in_lifcas_spikes():
    lifca = rv.nestml.neuron_model(MODEL)
    built_in = rv.Simulation(dpsnn(), threads=2, seed=5).run(1000.0)
    generated = rv.Simulation(dpsnn(lifca), threads=2, seed=5).run(1000.0)
    assert built_in.spikes[0].size > 2000
    np.testing.assert_array_equal(built_in.spikes[0], generated.spikes[0])
    np.testing.assert_array_equal(built_in.spikes[1], generated.spikes[1])
