"""iaf_psc_exp_multisynapse: NEST's iaf_psc_exp_multisynapse, leaky integrate-and-fire with one
exponential post-synaptic current per receptor (cpp/neurons/iaf_psc_exp_multisynapse.cpp)."""
from __future__ import annotations

from .base import (NeuronModel, Parameter, check_below, check_number, check_one_initial_potential, check_positive,
                   check_receptor_lists)

MAX_RECEPTORS = 8          # the engine's input columns per neuron (kMaxReceptors)


class IafPscExpMultisynapse(NeuronModel):
    """Leaky integrate-and-fire with R exponential post-synaptic currents (NEST's
    iaf_psc_exp_multisynapse), one per entry of tau_syn_ms, integrated exactly on the time grid
    in NEST's order: a spike of weight w (pA, either sign) onto receptor r jumps its current I_r,
    which decays with tau_syn_ms[r - 1]. Each projection onto it names its receptor,
    `rv.Projection(..., receptor=r)` with r in 1..R (NEST's receptor_type). Potential parameters
    absolute (mV); the engine, and what it records, hold V - E_L_mV, c = I of receptor 1,
    c_in = I of receptor 2 and c3, c4, ... those of receptors 3, 4, ... (pA). Parameters are the population's (one value each). Defaults:
    NEST's (one receptor of 2 ms)."""
    name = "iaf_psc_exp_multisynapse"
    input_unit = "pA"
    takes_current = True
    has_potential = True
    initial_states = ("reset",)        # "reset": V from V0_mean_mV and V0_sd_mV
    recordables = {"c": ("I_syn_1", "pA", "synaptic current of receptor 1"),
                   "c_in": ("I_syn_2", "pA", "synaptic current of receptor 2"),
                   **{f"c{r}": (f"I_syn_{r}", "pA", f"synaptic current of receptor {r}")
                      for r in range(3, MAX_RECEPTORS + 1)}}
    pynn_weight_scale = 1000.0         # PyNN's nA -> pA
    nest_model = "iaf_psc_exp_multisynapse"
    list_parameters = ("tau_syn_ms",)
    parameters = {
        "E_L_mV": Parameter("mV", "resting potential (absolute)", -70.0),
        "V_th_mV": Parameter("mV", "firing threshold (absolute)", -55.0),
        "V_reset_mV": Parameter("mV", "reset potential (absolute; V is held here while refractory)", -70.0),
        "C_m_pF": Parameter("pF", "membrane capacitance", 250.0),
        "tau_m_ms": Parameter("ms", "membrane time constant", 10.0),
        "tau_syn_ms": Parameter("ms", "time constant of each receptor's current (a list, one per receptor)", (2.0,)),
        "tau_arp_ms": Parameter("ms", "absolute refractory period", 2.0),
        "I_e_pA": Parameter("pA", "constant input current", 0.0),
        "V0_mean_mV": Parameter("mV", "mean of the initial membrane potential (absolute)", -70.0),
        "V0_sd_mV": Parameter("mV", "standard deviation of the initial membrane potential", 0.0),
    }

    @classmethod
    def receptors(cls, params):
        return len(params["tau_syn_ms"])

    @classmethod
    def read_values(cls, pop, where):
        params, initial = super().read_values(pop, where)
        check_receptor_lists(where, params, MAX_RECEPTORS)
        return params, initial

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("C_m_pF", "tau_m_ms"):
            check_positive(where, key, q[key])
        for key in ("tau_arp_ms", "V0_sd_mV"):
            check_positive(where, key, q[key], allow_zero=True)
        for key in ("E_L_mV", "V_th_mV", "V_reset_mV", "I_e_pA", "V0_mean_mV"):
            check_number(where, key, q[key])
        check_below(where, "V_reset_mV", "V_th_mV", q, pop.size)
        check_one_initial_potential(where, pop, q)
