"""hh_cond_exp_traub: NEST's Hodgkin-Huxley neuron of Traub and Miles, exponential synaptic
conductances, absolute potentials (cpp/neurons/hh_cond_exp_traub.cpp)."""
from __future__ import annotations

import math

from .base import NeuronModel, Parameter, check_number, check_one_initial_potential, check_positive


def _nest_initial_gates(v: float = -60.0) -> tuple[float, float, float]:
    """NEST's initial m, h, n: the steady state of its rate functions taken at v = -60 mV (its
    default E_L) itself, not at v - V_T, as NEST's State_ constructor takes them."""
    alpha_n = 0.032 * (15. - v) / (math.exp((15. - v) / 5.) - 1.)
    beta_n = 0.5 * math.exp((10. - v) / 40.)
    alpha_m = 0.32 * (13. - v) / (math.exp((13. - v) / 4.) - 1.)
    beta_m = 0.28 * (v - 40.) / (math.exp((v - 40.) / 5.) - 1.)
    alpha_h = 0.128 * math.exp((17. - v) / 18.)
    beta_h = 4. / (1. + math.exp((40. - v) / 5.))
    return alpha_m / (alpha_m + beta_m), alpha_h / (alpha_h + beta_h), alpha_n / (alpha_n + beta_n)


_M0, _H0, _N0 = _nest_initial_gates()


class HhCondExpTraub(NeuronModel):
    """Hodgkin-Huxley neuron of Traub and Miles with exponential synaptic conductances (NEST's
    hh_cond_exp_traub, PyNN's HH_cond_exp): sodium (m^3 h), potassium (n^4) and leak currents,
    conductances g_ex, g_in decaying with their time constants; a spike of weight w (nS) jumps
    g_ex by w where w > 0, g_in by -w where w < 0. A neuron spikes where V >= V_T + 30 mV and V
    fell during the step (past its maximum), outside its refractory period; V is not reset.
    Integrated as NEST integrates it (Runge-Kutta-Fehlberg 4(5) with NEST's adaptive step
    control, per neuron). Potential parameters absolute (mV, as NEST's); the engine, and what it
    records, hold V - E_L_mV, and c = g_ex (nS). Defaults: NEST's, the initial gates included
    (Act_m0, Inact_h0, Act_n0). Parameters are the population's; only the initial V may vary per
    neuron."""
    name = "hh_cond_exp_traub"
    nest_model = "hh_cond_exp_traub"
    nest_parameters = {"g_Na": "g_Na_nS", "g_K": "g_K_nS", "g_L": "g_L_nS", "C_m": "C_m_pF", "E_Na": "E_Na_mV",
                       "E_K": "E_K_mV", "E_L": "E_L_mV", "V_T": "V_T_mV", "E_ex": "E_ex_mV", "E_in": "E_in_mV",
                       "tau_syn_ex": "tau_syn_ex_ms", "tau_syn_in": "tau_syn_in_ms", "t_ref": "tau_arp_ms",
                       "I_e": "I_e_pA", "Act_m": "Act_m0", "Inact_h": "Inact_h0", "Act_n": "Act_n0",
                       "V_m": "V0_mean_mV"}
    takes_current = True
    input_unit = "nS"
    has_potential = True
    initial_states = ("reset",)        # "reset": V from V0_mean_mV and V0_sd_mV
    recordables = {"c": ("gsyn_exc", "nS", "excitatory synaptic conductance"),
                   "c_in": ("gsyn_inh", "nS", "inhibitory synaptic conductance")}
    pynn_weight_scale = 1000.0         # PyNN's uS -> nS
    parameters = {
        "g_Na_nS": Parameter("nS", "sodium peak conductance", 20000.0),
        "g_K_nS": Parameter("nS", "potassium peak conductance", 6000.0),
        "g_L_nS": Parameter("nS", "leak conductance", 10.0),
        "C_m_pF": Parameter("pF", "membrane capacitance", 200.0),
        "E_Na_mV": Parameter("mV", "sodium reversal potential (absolute)", 50.0),
        "E_K_mV": Parameter("mV", "potassium reversal potential (absolute)", -90.0),
        "E_L_mV": Parameter("mV", "leak reversal potential (absolute)", -60.0),
        "V_T_mV": Parameter("mV", "voltage offset of the rate functions (absolute); spikes at V >= V_T + 30 mV",
                            -63.0),
        "E_ex_mV": Parameter("mV", "excitatory reversal potential (absolute)", 0.0),
        "E_in_mV": Parameter("mV", "inhibitory reversal potential (absolute)", -80.0),
        "tau_syn_ex_ms": Parameter("ms", "time constant of the excitatory conductance", 5.0),
        "tau_syn_in_ms": Parameter("ms", "time constant of the inhibitory conductance", 10.0),
        "tau_arp_ms": Parameter("ms", "refractory period of the spike detection (NEST's t_ref)", 2.0),
        "I_e_pA": Parameter("pA", "constant input current", 0.0),
        "Act_m0": Parameter("", "initial sodium activation m", _M0),
        "Inact_h0": Parameter("", "initial sodium inactivation h", _H0),
        "Act_n0": Parameter("", "initial potassium activation n", _N0),
        "V0_mean_mV": Parameter("mV", "mean of the initial membrane potential (absolute)", -60.0),
        "V0_sd_mV": Parameter("mV", "standard deviation of the initial membrane potential", 0.0),
    }

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("C_m_pF", "tau_syn_ex_ms", "tau_syn_in_ms"):
            check_positive(where, key, q[key])
        for key in ("g_Na_nS", "g_K_nS", "g_L_nS", "tau_arp_ms", "V0_sd_mV", "Act_m0", "Inact_h0", "Act_n0"):
            check_positive(where, key, q[key], allow_zero=True)
        for key in ("E_Na_mV", "E_K_mV", "E_L_mV", "V_T_mV", "E_ex_mV", "E_in_mV", "I_e_pA", "V0_mean_mV"):
            check_number(where, key, q[key])
        check_one_initial_potential(where, pop, q)
