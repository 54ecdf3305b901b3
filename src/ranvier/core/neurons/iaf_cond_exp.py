"""iaf_cond_exp: NEST's iaf_cond_exp, exponential synaptic conductances, absolute potentials
(cpp/neurons/iaf_cond_exp.cpp)."""
from __future__ import annotations

from .base import NeuronModel, Parameter, check_below, check_number, check_one_initial_potential, check_positive


class IafCondExp(NeuronModel):
    """Leaky integrate-and-fire with exponential synaptic conductances (NEST's iaf_cond_exp):
    C_m dV/dt = -g_L (V - E_L) + I_e - g_ex (V - E_ex) - g_in (V - E_in), each conductance
    decaying with its time constant; a spike of weight w (nS) jumps g_ex by w where w > 0, g_in by
    -w where w < 0. Integrated as NEST integrates it (Runge-Kutta-Fehlberg 4(5) with NEST's
    adaptive step control, per neuron; docs/neuron-models.md). Potential parameters absolute (mV,
    as NEST's); the engine, and what it records, hold V - E_L_mV (mV, relative to rest), and c =
    g_ex (nS). Initial V as psc_exp. Defaults: NEST's."""
    name = "iaf_cond_exp"
    takes_current = True               # injected currents (ranvier.core.devices) add to I_e
    input_unit = "nS"
    has_potential = True
    initial_states = ("reset",)        # "reset": V from V0_mean_mV and V0_sd_mV
    recordables = {"c": ("gsyn_exc", "nS", "excitatory synaptic conductance"),
                   "c_in": ("gsyn_inh", "nS", "inhibitory synaptic conductance")}
    pynn_weight_scale = 1000.0         # PyNN's uS -> nS
    nest_model = "iaf_cond_exp"
    nest_parameters = {"E_L": "E_L_mV", "V_th": "V_th_mV", "V_reset": "V_reset_mV", "C_m": "C_m_pF", "g_L": "g_L_nS",
                       "t_ref": "tau_arp_ms", "I_e": "I_e_pA", "E_ex": "E_ex_mV", "E_in": "E_in_mV",
                       "tau_syn_ex": "tau_syn_ex_ms", "tau_syn_in": "tau_syn_in_ms", "V_m": "V0_mean_mV"}
    parameters = {
        "E_L_mV": Parameter("mV", "leak reversal potential (absolute)", -70.0, per_neuron=True),
        "V_th_mV": Parameter("mV", "firing threshold (absolute)", -55.0, per_neuron=True),
        "V_reset_mV": Parameter("mV", "reset potential (absolute; V is held here while refractory)", -60.0,
                                per_neuron=True),
        "C_m_pF": Parameter("pF", "membrane capacitance", 250.0, per_neuron=True),
        "g_L_nS": Parameter("nS", "leak conductance", 16.6667, per_neuron=True),
        "E_ex_mV": Parameter("mV", "excitatory reversal potential (absolute)", 0.0, per_neuron=True),
        "E_in_mV": Parameter("mV", "inhibitory reversal potential (absolute)", -85.0, per_neuron=True),
        "tau_syn_ex_ms": Parameter("ms", "time constant of the excitatory conductance", 0.2, per_neuron=True),
        "tau_syn_in_ms": Parameter("ms", "time constant of the inhibitory conductance", 2.0, per_neuron=True),
        "tau_arp_ms": Parameter("ms", "absolute refractory period", 2.0, per_neuron=True),
        "I_e_pA": Parameter("pA", "constant input current", 0.0, per_neuron=True),
        "V0_mean_mV": Parameter("mV", "mean of the initial membrane potential (absolute)", -70.0),
        "V0_sd_mV": Parameter("mV", "standard deviation of the initial membrane potential", 0.0),
    }

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("C_m_pF", "g_L_nS", "tau_syn_ex_ms", "tau_syn_in_ms"):
            check_positive(where, key, q[key])
        for key in ("tau_arp_ms", "V0_sd_mV"):
            check_positive(where, key, q[key], allow_zero=True)
        for key in ("E_L_mV", "V_th_mV", "V_reset_mV", "E_ex_mV", "E_in_mV", "I_e_pA", "V0_mean_mV"):
            check_number(where, key, q[key])
        check_below(where, "V_reset_mV", "V_th_mV", q, pop.size)
        check_one_initial_potential(where, pop, q)
