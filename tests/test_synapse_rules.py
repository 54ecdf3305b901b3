"""The synapse-rule registry (cpp/synapses/registry.cpp, ranvier.core.synapses): every Python kind's
rules are the engine's by name, and an unknown name is refused naming the known ones."""
import pytest

import ranvier as rv
from ranvier import _engine
from ranvier.core import plasticity, synapses


def test_every_kind_names_engine_rules():
    names = set()
    for kind in synapses.KINDS:
        for rule in kind.nest_models:
            spec = _engine.PlasticitySpec()
            spec.rule = rule
            assert spec.rule == rule
            names.add(rule)
    assert names == set(synapses.NEST_MODELS)
    assert _engine.PlasticitySpec().rule == "static"


def test_unknown_rule_names_the_known_ones():
    spec = _engine.PlasticitySpec()
    with pytest.raises(ValueError, match=r"unknown synapse rule 'stdp_quadruplet'; known: static, stdp, .*"
                                         r"stdp_power_law, stdp_triplet, tsodyks, bernoulli, quantal_stp, vogels_sprekeler$"):
        spec.rule = "stdp_quadruplet"


def test_engine_parameters_reach_the_spec():
    syn = rv.STDP(lambda_=0.02, w_max=3.0, pairing="nearest-restricted")
    spec = plasticity.plasticity_spec(syn, _engine)
    assert spec.rule == "stdp_nn_restricted"
    assert spec.parameters == {"tau_plus_ms": 20.0, "lambda": 0.02, "alpha": 1.0, "mu_plus": 1.0,
                               "mu_minus": 1.0, "w_max": 3.0}
    assert plasticity.describe(syn).endswith("= NEST stdp_nn_restr_synapse")
    assert plasticity.describe(rv.STDPPowerLaw()).endswith("= NEST stdp_pl_synapse_hom")
    assert plasticity.plasticity_spec(rv.STDPTriplet(), _engine).parameters == {
        "tau_plus_ms": 16.8, "tau_plus_triplet_ms": 101.0, "Aplus": 5e-10, "Aminus": 7e-3,
        "Aplus_triplet": 6.2e-3, "Aminus_triplet": 2.3e-4, "w_max": 100.0}


def test_public_names_stay():
    assert rv.STDP is plasticity.STDP is synapses.STDP
    assert rv.STDPPowerLaw is plasticity.STDPPowerLaw
    assert plasticity.PAIRINGS["all-to-all"] == "stdp"
    assert plasticity.NEST_MODELS["stdp_nn_symmetric"] == "stdp_nn_symm_synapse"
    assert rv.STDPTriplet is plasticity.STDPTriplet is synapses.STDPTriplet
    assert plasticity.NEST_MODELS["stdp_triplet"] == "stdp_triplet_synapse"
    assert plasticity.SYNAPSE_KINDS == (rv.STDP, rv.STDPPowerLaw, rv.STDPTriplet, rv.TsodyksMarkram, rv.Bernoulli,
                                        rv.QuantalSTP, rv.VogelsSprekeler)
    assert rv.VogelsSprekeler is plasticity.VogelsSprekeler is synapses.VogelsSprekeler
    assert plasticity.NEST_MODELS["vogels_sprekeler"] == "vogels_sprekeler_synapse"
    assert rv.Bernoulli is plasticity.Bernoulli is synapses.Bernoulli
    assert rv.QuantalSTP is plasticity.QuantalSTP is synapses.QuantalSTP
    assert plasticity.NEST_MODELS["bernoulli"] == "bernoulli_synapse"
    assert plasticity.NEST_MODELS["quantal_stp"] == "quantal_stp_synapse"
    assert rv.TsodyksMarkram is plasticity.TsodyksMarkram is synapses.TsodyksMarkram
    assert plasticity.NEST_MODELS["tsodyks"] == "tsodyks_synapse"
