"""The neuron-model layer (ranvier.core.neurons): every registered model keeps the same contract, so a
new model is checked here without a line added; the translation of a network (ranvier.core.spec)."""
from __future__ import annotations

import pytest

import ranvier as rv
from ranvier import _engine
from ranvier.core import network, spec
from ranvier.core.neurons import NEURON_MODELS as REGISTRY, NeuronModel, Parameter

# The built-in models: NESTML models that other test files load in the same session join the
# registry (ranvier.nestml) and are no files of the package.
NEURON_MODELS = {n: m for n, m in REGISTRY.items() if not getattr(m, "nestml_file", None)}

# One valid parameter set per model: a new model adds its line here (the contract tests below
# refuse a registered model without one).
VALID = {
    "lifca": dict(tau_m_ms=20.0, theta_mV=20.0, reset_mV=10.0, tau_arp_ms=2.0, alpha_c=1.0, tau_c_ms=100.0,
                  g_c_mV_per_ms=0.01, dc_mV_per_ms=0.0),
    "psc_exp": dict(E_L_mV=-65.0, V_th_mV=-50.0, V_reset_mV=-65.0, C_m_pF=250.0, tau_m_ms=10.0, tau_syn_ms=0.5,
                    tau_arp_ms=2.0, I_e_pA=0.0, V0_mean_mV=-58.0, V0_sd_mV=5.0),
    "ignore_and_fire": dict(rate_hz=2.5),
    "artificial": dict(isi_min_ms=10.0, isi_max_ms=20.0),
    "poisson_source": dict(rate_hz=8.0, start_ms=0.0, stop_ms=1000.0),
    "iaf_psc_alpha": dict(E_L_mV=-65.0, V_th_mV=-50.0, V_reset_mV=-65.0, C_m_pF=250.0, tau_m_ms=10.0,
                          tau_syn_ex_ms=0.5, tau_syn_in_ms=2.0, tau_arp_ms=2.0, I_e_pA=0.0, V0_mean_mV=-58.0,
                          V0_sd_mV=5.0),
    "spike_train": dict(spike_times_ms=[1.0, 2.5, 10.0]),
    "inhomogeneous_poisson": dict(rate_times_ms=[0.0, 50.0], rates_hz=[5.0, 20.0]),
    "iaf_cond_exp": dict(E_L_mV=-65.0, V_th_mV=-50.0, V_reset_mV=-65.0, C_m_pF=250.0, g_L_nS=25.0, E_ex_mV=0.0,
                         E_in_mV=-80.0, tau_syn_ex_ms=0.5, tau_syn_in_ms=2.0, tau_arp_ms=2.0, I_e_pA=0.0,
                         V0_mean_mV=-58.0, V0_sd_mV=5.0),
    "iaf_cond_alpha": dict(E_L_mV=-65.0, V_th_mV=-50.0, V_reset_mV=-65.0, C_m_pF=250.0, g_L_nS=25.0, E_ex_mV=0.0,
                           E_in_mV=-80.0, tau_syn_ex_ms=0.5, tau_syn_in_ms=2.0, tau_arp_ms=2.0, I_e_pA=0.0,
                           V0_mean_mV=-58.0, V0_sd_mV=5.0),
    "iaf_cond_exp_sfa_rr": dict(E_L_mV=-65.0, V_th_mV=-50.0, V_reset_mV=-65.0, C_m_pF=250.0, g_L_nS=25.0,
                                E_ex_mV=0.0, E_in_mV=-80.0, tau_syn_ex_ms=0.5, tau_syn_in_ms=2.0, tau_arp_ms=2.0,
                                I_e_pA=0.0, tau_sfa_ms=100.0, tau_rr_ms=2.0, E_sfa_mV=-75.0, E_rr_mV=-75.0,
                                q_sfa_nS=15.0, q_rr_nS=3000.0, V0_mean_mV=-58.0, V0_sd_mV=5.0),
    "gif_cond_exp": dict(E_L_mV=-70.0, V_reset_mV=-55.0, V_T_star_mV=-35.0, Delta_V_mV=0.5, lambda_0_hz=1.0,
                         C_m_pF=80.0, g_L_nS=4.0, E_ex_mV=0.0, E_in_mV=-85.0, tau_syn_ex_ms=2.0, tau_syn_in_ms=2.0,
                         tau_arp_ms=4.0, I_e_pA=150.0, gsl_error_tol=1e-3, tau_stc_ms=[10.0], q_stc_pA=[5.0],
                         tau_sfa_ms=[50.0], q_sfa_mV=[2.0], V0_mean_mV=-60.0, V0_sd_mV=2.0),
    "iaf_psc_exp_multisynapse": dict(E_L_mV=-70.0, V_th_mV=-55.0, V_reset_mV=-70.0, C_m_pF=250.0, tau_m_ms=10.0,
                                     tau_syn_ms=[0.5, 2.0, 5.0], tau_arp_ms=2.0, I_e_pA=400.0, V0_mean_mV=-65.0,
                                     V0_sd_mV=2.0),
    "aeif_cond_beta_multisynapse": dict(E_L_mV=-70.6, V_th_mV=-50.4, V_reset_mV=-60.0, V_peak_mV=0.0, C_m_pF=281.0,
                                        g_L_nS=30.0, Delta_T_mV=2.0, tau_w_ms=144.0, a_nS=4.0, b_pA=80.5,
                                        tau_rise_ms=[0.2, 1.0], tau_decay_ms=[2.0, 10.0], E_rev_mV=[0.0, -80.0],
                                        tau_arp_ms=0.0, I_e_pA=700.0, gsl_error_tol=1e-6, V0_mean_mV=-65.0,
                                        V0_sd_mV=2.0, w0_pA=0.0),
    "aeif_cond_alpha_multisynapse": dict(E_L_mV=-70.6, V_th_mV=-50.4, V_reset_mV=-60.0, V_peak_mV=0.0, C_m_pF=281.0,
                                         g_L_nS=30.0, Delta_T_mV=2.0, tau_w_ms=144.0, a_nS=4.0, b_pA=80.5,
                                         tau_syn_ms=[0.2, 2.0], E_rev_mV=[0.0, -80.0], tau_arp_ms=0.0,
                                         I_e_pA=700.0, gsl_error_tol=1e-6, V0_mean_mV=-65.0, V0_sd_mV=2.0,
                                         w0_pA=0.0),
    "aeif_cond_exp": dict(E_L_mV=-65.0, V_th_mV=-50.0, V_peak_mV=0.0, V_reset_mV=-60.0, C_m_pF=250.0, g_L_nS=25.0,
                          Delta_T_mV=2.0, tau_w_ms=100.0, a_nS=2.0, b_pA=50.0, E_ex_mV=0.0, E_in_mV=-80.0,
                          tau_syn_ex_ms=0.5, tau_syn_in_ms=2.0, tau_arp_ms=2.0, I_e_pA=0.0, gsl_error_tol=1e-6,
                          V0_mean_mV=-58.0, V0_sd_mV=5.0, w0_pA=10.0),
    "aeif_cond_alpha": dict(E_L_mV=-65.0, V_th_mV=-50.0, V_peak_mV=0.0, V_reset_mV=-60.0, C_m_pF=250.0,
                            g_L_nS=25.0, Delta_T_mV=2.0, tau_w_ms=100.0, a_nS=2.0, b_pA=50.0, E_ex_mV=0.0,
                            E_in_mV=-80.0, tau_syn_ex_ms=0.5, tau_syn_in_ms=2.0, tau_arp_ms=2.0, I_e_pA=0.0,
                            gsl_error_tol=1e-6, V0_mean_mV=-58.0, V0_sd_mV=5.0, w0_pA=10.0),
    "gamma_source": dict(rate_hz=8.0, gamma_shape=3.0, start_ms=0.0, stop_ms=1000.0),
    "ppd_source": dict(rate_hz=8.0, dead_time_ms=2.0, start_ms=0.0, stop_ms=1000.0),
    "izhikevich": dict(a=0.02, b=0.2, c_mV=-65.0, d_mV_per_ms=8.0, I_e_pA=5.0, V_th_mV=30.0, V_min_mV=-100.0,
                       consistent_integration=1.0, V0_mV=-65.0, U0_mV_per_ms=-13.0),
    "hh_cond_exp_traub": dict(g_Na_nS=20000.0, g_K_nS=6000.0, g_L_nS=10.0, C_m_pF=200.0, E_Na_mV=50.0,
                              E_K_mV=-90.0, E_L_mV=-60.0, V_T_mV=-63.0, E_ex_mV=0.0, E_in_mV=-80.0,
                              tau_syn_ex_ms=5.0, tau_syn_in_ms=10.0, tau_arp_ms=2.0, I_e_pA=0.0, Act_m0=0.0,
                              Inact_h0=1.0, Act_n0=0.0, V0_mean_mV=-65.0, V0_sd_mV=0.0),
}
UNITS = {"", "ms", "mV", "mV/ms", "pA", "pF", "nS", "Hz"}


def test_every_model_is_registered_under_its_name_and_has_test_parameters():
    assert network.NEURON_MODELS is REGISTRY               # one registry
    for name, model in NEURON_MODELS.items():
        assert issubclass(model, NeuronModel) and model.name == name
        assert name in VALID, f"add a valid parameter set for '{name}' to VALID"


@pytest.mark.parametrize("name", sorted(NEURON_MODELS))
def test_parameters_carry_units_and_descriptions(name):
    for key, p in NEURON_MODELS[name].parameters.items():
        assert isinstance(p, Parameter) and p.description, key
        assert p.unit in UNITS, (key, p.unit)
        if p.unit and p.unit != "Hz":
            assert key.endswith("_" + p.unit.replace("/", "_per_")), (key, p.unit)   # the name says the unit


@pytest.mark.parametrize("name", sorted(NEURON_MODELS))
def test_a_valid_population_translates_to_a_population_spec(name):
    model = NEURON_MODELS[name]
    net = rv.Network()
    pop = net.add_population(rv.Population("A", 100, dict(VALID[name]), model=name))
    net.validate(0.1)
    s = model.to_engine(pop, 0.1)
    assert isinstance(s, _engine.PopulationSpec)
    rate = model.known_rate_hz(pop.params)
    assert rate is None or rate >= 0


@pytest.mark.parametrize("name", sorted(NEURON_MODELS))
def test_unknown_and_missing_parameters_are_refused(name):
    params = dict(VALID[name], bogus_ms=1.0)
    with pytest.raises(rv.ConfigError, match=f"population 'A': unknown {name} parameter\\(s\\) \\['bogus_ms'\\]"):
        rv.Population("A", 10, params, model=name).validate()
    required = [k for k, p in NEURON_MODELS[name].parameters.items() if p.default is None]
    if required:
        params = {k: v for k, v in VALID[name].items() if k != required[0]}
        with pytest.raises(rv.ConfigError, match=f"missing {name} parameter\\(s\\) \\['{required[0]}'\\]"):
            rv.Population("A", 10, params, model=name).validate()


def test_defaults_fill_what_is_left_out():
    pop = rv.Population("TH", 10, dict(rate_hz=8.0, stop_ms=100.0), model="poisson_source")
    pop.validate()
    assert pop.params["start_ms"] == 0.0
    pop = rv.Population("E", 10, {}, model="psc_exp")            # NEST's iaf_psc_exp defaults
    pop.validate()
    assert pop.params["V_th_mV"] == -55.0 and pop.params["C_m_pF"] == 250.0
    explicit = dict(VALID["lifca"], dc_mV_per_ms=0.5)
    pop = rv.Population("L", 10, explicit)
    pop.validate()
    assert pop.params["dc_mV_per_ms"] == 0.5


@pytest.mark.parametrize("name, change, message", [
    ("lifca", dict(reset_mV=30.0), "'reset_mV' \\(30.0\\) must be below 'theta_mV' \\(20.0\\)"),
    ("psc_exp", dict(tau_syn_ms=0.0), "'tau_syn_ms' must be positive"),
    ("psc_exp", dict(I_e_pA=True), "'I_e_pA' must be a number"),
    ("artificial", dict(isi_max_ms=5.0), "'isi_max_ms' \\(5.0\\) must not be below 'isi_min_ms' \\(10.0\\)"),
    ("poisson_source", dict(stop_ms=-1.0), "'stop_ms' must be zero or positive"),
    ("ignore_and_fire", dict(rate_hz=0), "'rate_hz' must be positive"),
])
def test_model_checks(name, change, message):
    with pytest.raises(rv.ConfigError, match=message):
        rv.Population("A", 10, dict(VALID[name], **change), model=name).validate()


@pytest.mark.parametrize("name, change, message", [
    ("lifca", dict(tau_arp_ms=0.25), "'tau_arp_ms' = 0.25 ms is not a multiple of the resolution"),
    ("artificial", dict(isi_min_ms=10.05), "population 'A': 'isi_min_ms' = 10.05 ms is not a multiple"),
    ("ignore_and_fire", dict(rate_hz=20000.0), "gives a period below one step"),
])
def test_model_checks_on_the_time_grid(name, change, message):
    net = rv.Network()
    net.add_population(rv.Population("A", 10, dict(VALID[name], **change), model=name))
    with pytest.raises(rv.ConfigError, match=message):
        net.validate(0.1)


def test_known_rates():
    assert NEURON_MODELS["artificial"].known_rate_hz(VALID["artificial"]) == pytest.approx(2000.0 / 30.0)
    assert NEURON_MODELS["ignore_and_fire"].known_rate_hz(VALID["ignore_and_fire"]) == 2.5
    assert NEURON_MODELS["poisson_source"].known_rate_hz(VALID["poisson_source"]) == 8.0
    assert NEURON_MODELS["lifca"].known_rate_hz(VALID["lifca"]) is None


def test_engine_spec_reads_the_network_once():
    """The translation holds the timing, the scale, the memory estimate and the engine's specs."""
    net = rv.models.dpsnn(neurons=300, synapses_per_neuron=10)
    sim = rv.Simulation(net, threads=1)
    s = sim.spec
    assert (s.steps_per_cycle, s.drive_steps, s.global_interval, s.lump_cycles) == (10, 10, 0, 1)
    assert s.fraction_bits == sim.fraction_bits == spec.fraction_bits(net, s.min_delay_ms)
    assert s.memory_estimate_bytes == sim.memory_estimate_bytes == int(sum(sim.memory_parts().values()))
    assert [p.name for p in s.populations] == ["F", "B", "I"]
    cfg = sim._engine_config(True)
    assert cfg.fraction_bits == s.fraction_bits and cfg.steps_per_cycle == 10 and cfg.threads == 1
    assert [p.first for p in cfg.populations] == [p.first_id for p in net.populations]


def test_every_nest_parameter_map_names_the_models_own_parameters():
    """NeuronModel.nest_parameters (SONATA's nest:<model> dynamics_params by NEST's names): every
    Ranvier name it gives is one of the model's parameters, and the NEST names are NEST's own
    (checked against NEST 3.10's defaults where the nest extra is installed)."""
    mapped = {name: m for name, m in NEURON_MODELS.items() if m.nest_parameters}
    assert {"psc_exp", "iaf_cond_exp", "aeif_cond_exp", "hh_cond_exp_traub", "izhikevich", "gif_cond_exp"} <= set(mapped)
    for name, m in mapped.items():
        assert m.nest_model, name
        assert set(m.nest_parameters.values()) <= set(m.parameters), (name, set(m.nest_parameters.values()) -
                                                                      set(m.parameters))
    try:
        import nest
    except ImportError:
        return
    for name, m in mapped.items():
        defaults = nest.GetDefaults(m.nest_model)
        assert set(m.nest_parameters) <= set(defaults), (name, set(m.nest_parameters) - set(defaults))
