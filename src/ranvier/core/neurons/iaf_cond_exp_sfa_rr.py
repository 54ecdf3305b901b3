"""iaf_cond_exp_sfa_rr: NEST's iaf_cond_exp_sfa_rr, exponential synaptic conductances with
spike-frequency adaptation and relative refractory conductances, absolute potentials
(cpp/neurons/iaf_cond_exp_sfa_rr.cpp)."""
from __future__ import annotations

from .base import NeuronModel, Parameter, check_below, check_number, check_one_initial_potential, check_positive
from .iaf_cond_exp import IafCondExp


class IafCondExpSfaRr(NeuronModel):
    """Leaky integrate-and-fire with exponential synaptic conductances and two spike-triggered
    conductances (NEST's iaf_cond_exp_sfa_rr):
    C_m dV/dt = -g_L (V - E_L) + I_e - g_ex (V - E_ex) - g_in (V - E_in) - g_sfa (V - E_sfa)
    - g_rr (V - E_rr), each conductance decaying with its time constant; a spike of the neuron
    jumps g_sfa by q_sfa and g_rr by q_rr. A spike of weight w (nS) jumps g_ex by w where w > 0,
    g_in by -w where w < 0. Integrated as NEST integrates it (Runge-Kutta-Fehlberg 4(5) with
    NEST's adaptive step control, per neuron; docs/neuron-models.md). Potential parameters
    absolute (mV, as NEST's); the engine, and what it records, hold V - E_L_mV (mV, relative to
    rest), c = g_ex, c_in = g_in and w = g_sfa (nS). Initial V as psc_exp, the conductances 0.
    Defaults: NEST's."""
    name = "iaf_cond_exp_sfa_rr"
    takes_current = True               # injected currents (ranvier.core.devices) add to I_e
    input_unit = "nS"
    has_potential = True
    initial_states = ("reset",)        # "reset": V from V0_mean_mV and V0_sd_mV
    recordables = {"c": ("gsyn_exc", "nS", "excitatory synaptic conductance"),
                   "c_in": ("gsyn_inh", "nS", "inhibitory synaptic conductance"),
                   "w": ("g_sfa", "nS", "spike-frequency adaptation conductance")}
    pynn_weight_scale = 1000.0         # PyNN's uS -> nS
    nest_model = "iaf_cond_exp_sfa_rr"
    nest_parameters = {**IafCondExp.nest_parameters, "tau_sfa": "tau_sfa_ms", "tau_rr": "tau_rr_ms",
                       "E_sfa": "E_sfa_mV", "E_rr": "E_rr_mV", "q_sfa": "q_sfa_nS", "q_rr": "q_rr_nS"}
    parameters = {
        "E_L_mV": Parameter("mV", "leak reversal potential (absolute)", -70.0, per_neuron=True),
        "V_th_mV": Parameter("mV", "firing threshold (absolute)", -57.0, per_neuron=True),
        "V_reset_mV": Parameter("mV", "reset potential (absolute; V is held here while refractory)", -70.0,
                                per_neuron=True),
        "C_m_pF": Parameter("pF", "membrane capacitance", 289.5, per_neuron=True),
        "g_L_nS": Parameter("nS", "leak conductance", 28.95, per_neuron=True),
        "E_ex_mV": Parameter("mV", "excitatory reversal potential (absolute)", 0.0, per_neuron=True),
        "E_in_mV": Parameter("mV", "inhibitory reversal potential (absolute)", -75.0, per_neuron=True),
        "tau_syn_ex_ms": Parameter("ms", "time constant of the excitatory conductance", 1.5, per_neuron=True),
        "tau_syn_in_ms": Parameter("ms", "time constant of the inhibitory conductance", 10.0, per_neuron=True),
        "tau_arp_ms": Parameter("ms", "absolute refractory period", 0.5, per_neuron=True),
        "I_e_pA": Parameter("pA", "constant input current", 0.0, per_neuron=True),
        "tau_sfa_ms": Parameter("ms", "time constant of the spike-frequency adaptation conductance", 110.0,
                                per_neuron=True),
        "tau_rr_ms": Parameter("ms", "time constant of the relative refractory conductance", 1.97, per_neuron=True),
        "E_sfa_mV": Parameter("mV", "reversal potential of the adaptation conductance (absolute)", -70.0,
                              per_neuron=True),
        "E_rr_mV": Parameter("mV", "reversal potential of the relative refractory conductance (absolute)", -70.0,
                             per_neuron=True),
        "q_sfa_nS": Parameter("nS", "jump of the adaptation conductance at each spike", 14.48, per_neuron=True),
        "q_rr_nS": Parameter("nS", "jump of the relative refractory conductance at each spike", 3214.0,
                             per_neuron=True),
        "V0_mean_mV": Parameter("mV", "mean of the initial membrane potential (absolute)", -70.0),
        "V0_sd_mV": Parameter("mV", "standard deviation of the initial membrane potential", 0.0),
    }

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("C_m_pF", "g_L_nS", "tau_syn_ex_ms", "tau_syn_in_ms", "tau_sfa_ms", "tau_rr_ms"):
            check_positive(where, key, q[key])
        for key in ("tau_arp_ms", "V0_sd_mV"):
            check_positive(where, key, q[key], allow_zero=True)
        for key in ("E_L_mV", "V_th_mV", "V_reset_mV", "E_ex_mV", "E_in_mV", "I_e_pA", "E_sfa_mV", "E_rr_mV",
                    "q_sfa_nS", "q_rr_nS", "V0_mean_mV"):
            check_number(where, key, q[key])
        check_below(where, "V_reset_mV", "V_th_mV", q, pop.size)
        check_one_initial_potential(where, pop, q)
