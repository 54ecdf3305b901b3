"""psc_exp: NEST's iaf_psc_exp, exponential post-synaptic currents, absolute potentials
(cpp/neurons/psc_exp.cpp)."""
from __future__ import annotations

from .base import NeuronModel, Parameter, check_below, check_number, check_one_initial_potential, check_positive


class PscExp(NeuronModel):
    """Leaky integrate-and-fire with exponential post-synaptic currents (NEST's iaf_psc_exp),
    integrated exactly on the time grid: synaptic input (pA) jumps a current that decays
    exponentially; positive weights the excitatory current I_ex (time constant tau_syn_ex_ms),
    negative ones the inhibitory I_in (tau_syn_in_ms). Each of the two, left out, is tau_syn_ms,
    so a population that sets tau_syn_ms alone has one time constant for both (one current in the
    engine, as before the two were separate). The potential parameters are absolute (mV, as
    NEST's: E_L_mV is the resting potential); the engine, and what it records, hold V - E_L_mV
    (mV, relative to rest), and c = the synaptic current (pA): I_ex + I_in with one time constant,
    I_ex with two. The initial V is drawn from N(V0_mean_mV, V0_sd_mV) per neuron, or set per
    neuron by Population.initial (an array or a distribution, absolute mV).
    Defaults: NEST's (V starts at E_L)."""
    name = "psc_exp"
    input_unit = "pA"
    takes_current = True               # injected currents (ranvier.core.devices): NEST's two-current step
    has_potential = True
    initial_states = ("reset",)        # "reset": V from V0_mean_mV and V0_sd_mV
    recordables = {"c": ("I_syn", "pA", "synaptic current"),
                   "c_in": ("I_syn_in", "pA", "inhibitory synaptic current (two time constants only)")}
    pynn_weight_scale = 1000.0         # PyNN's nA -> pA
    nest_model = "iaf_psc_exp"
    nest_parameters = {"E_L": "E_L_mV", "V_th": "V_th_mV", "V_reset": "V_reset_mV", "C_m": "C_m_pF", "tau_m": "tau_m_ms",
                       "t_ref": "tau_arp_ms", "I_e": "I_e_pA", "tau_syn_ex": "tau_syn_ex_ms",
                       "tau_syn_in": "tau_syn_in_ms", "V_m": "V0_mean_mV"}
    parameters = {
        "E_L_mV": Parameter("mV", "resting potential (absolute)", -70.0, per_neuron=True),
        "V_th_mV": Parameter("mV", "firing threshold (absolute)", -55.0, per_neuron=True),
        "V_reset_mV": Parameter("mV", "reset potential (absolute; V is held here while refractory)", -70.0,
                                per_neuron=True),
        "C_m_pF": Parameter("pF", "membrane capacitance", 250.0, per_neuron=True),
        "tau_m_ms": Parameter("ms", "membrane time constant", 10.0, per_neuron=True),
        "tau_syn_ms": Parameter("ms", "time constant of the synaptic currents where tau_syn_ex_ms or tau_syn_in_ms is "
                                "left out", 2.0, per_neuron=True),
        "tau_arp_ms": Parameter("ms", "absolute refractory period", 2.0, per_neuron=True),
        "I_e_pA": Parameter("pA", "constant input current", 0.0, per_neuron=True),
        "V0_mean_mV": Parameter("mV", "mean of the initial membrane potential (absolute)", -70.0),
        "V0_sd_mV": Parameter("mV", "standard deviation of the initial membrane potential", 0.0),
        # at the end: the tags of per-neuron draws follow the order (NeuronModel._tag)
        "tau_syn_ex_ms": Parameter("ms", "time constant of the excitatory synaptic current (positive weights); left "
                                   "out: tau_syn_ms", 2.0, per_neuron=True),
        "tau_syn_in_ms": Parameter("ms", "time constant of the inhibitory synaptic current (negative weights); left "
                                   "out: tau_syn_ms", 2.0, per_neuron=True),
    }
    time_constants = ("tau_syn_ms", "tau_syn_ex_ms", "tau_syn_in_ms")
    ALIASES = {"tau_syn_ex_ms": "tau_syn_ms", "tau_syn_in_ms": "tau_syn_ms"}   # left out: takes that one's value

    @classmethod
    def _aliased(cls, pop, name: str) -> bool:
        """Whether `name` was left out of the population and takes its alias's value."""
        return name in cls.ALIASES and cls.ALIASES[name] in cls.parameters and name in pop.defaulted

    @classmethod
    def read_values(cls, pop, where):
        params, initial = super().read_values(pop, where)
        for name, source in cls.ALIASES.items():
            if cls._aliased(pop, name):
                params[name] = params[source]           # the same value (object: an array or a distribution)
        return params, initial

    @classmethod
    def _value_tag(cls, pop, name):
        return cls._tag(cls.ALIASES[name] if cls._aliased(pop, name) else name)

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("C_m_pF", "tau_m_ms", *cls.time_constants):
            check_positive(where, key, q[key])
        for key in ("tau_arp_ms", "V0_sd_mV"):
            check_positive(where, key, q[key], allow_zero=True)
        for key in ("E_L_mV", "V_th_mV", "V_reset_mV", "I_e_pA", "V0_mean_mV"):
            check_number(where, key, q[key])
        check_below(where, "V_reset_mV", "V_th_mV", q, pop.size)
        check_one_initial_potential(where, pop, q)

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec(pop)
        cls._per_neuron_spec(pop, s)        # every parameter by name; the means of those that vary
        # tau_syn_ms is resolved here: the engine reads tau_syn_ex_ms and tau_syn_in_ms (one current
        # where the two are the same for every neuron, cpp/neurons/psc_exp.hpp: splits).
        s.parameters = {k: v for k, v in s.parameters.items() if k != "tau_syn_ms"}
        s.per_neuron = {k: v for k, v in s.per_neuron.items() if k != "tau_syn_ms"}
        return s
