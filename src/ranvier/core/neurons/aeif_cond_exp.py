"""aeif_cond_exp: NEST's aeif_cond_exp, adaptive exponential integrate-and-fire with exponential
synaptic conductances, absolute potentials (cpp/neurons/aeif_cond_exp.cpp)."""
from __future__ import annotations

import math

import numpy as np

from ...errors import ConfigError
from ..random import Distribution
from .base import NeuronModel, Parameter, check_below, check_number, check_one_initial_potential, check_positive

# NEST's bound on (V_peak - V_th) / Delta_T: exp() of it, with a margin of 1e20, stays finite.
MAX_EXP_ARGUMENT = math.log(np.finfo(np.float64).max / 1e20)


def _bound(value, size: int, upper: bool):
    """Every neuron's value of a number or an array; a distribution's largest (`upper`) or least
    draw for every neuron."""
    if isinstance(value, Distribution):
        return np.full(size, value.bounds()[1 if upper else 0])
    return np.broadcast_to(np.asarray(value, dtype=np.float64), (size,))


class AeifCondExp(NeuronModel):
    """Adaptive exponential integrate-and-fire with exponential synaptic conductances (NEST's
    aeif_cond_exp; Brette and Gerstner 2005): C_m dV/dt = -g_L (V - E_L) + g_L Delta_T
    exp((V - V_th) / Delta_T) - g_ex (V - E_ex) - g_in (V - E_in) - w + I_e, tau_w dw/dt =
    a (V - E_L) - w; a spike at V >= V_peak (V_th where Delta_T is 0) resets V to V_reset and adds
    b to w. A spike of weight w (nS) jumps g_ex by w where w > 0, g_in by -w where w < 0.
    Integrated as NEST integrates it (Runge-Kutta-Fehlberg 4(5) with GSL's step control at
    gsl_error_tol, per neuron; docs/neuron-models.md). Potential parameters absolute (mV, as
    NEST's); the engine, and what it records, hold V - E_L_mV (mV, relative to rest), c = g_ex and
    c_in = g_in (nS), w (pA). Initial V as psc_exp, w = w0_pA. Defaults: NEST's."""
    name = "aeif_cond_exp"
    takes_current = True               # injected currents (ranvier.core.devices) add to I_e
    input_unit = "nS"
    has_potential = True
    initial_states = ("reset",)        # "reset": V from V0_mean_mV and V0_sd_mV
    recordables = {"c": ("gsyn_exc", "nS", "excitatory synaptic conductance"),
                   "c_in": ("gsyn_inh", "nS", "inhibitory synaptic conductance"),
                   "w": ("w", "pA", "adaptation current")}
    pynn_weight_scale = 1000.0         # PyNN's uS -> nS
    nest_model = "aeif_cond_exp"
    nest_parameters = {"E_L": "E_L_mV", "V_th": "V_th_mV", "V_peak": "V_peak_mV", "V_reset": "V_reset_mV",
                       "C_m": "C_m_pF", "g_L": "g_L_nS", "Delta_T": "Delta_T_mV", "tau_w": "tau_w_ms", "a": "a_nS",
                       "b": "b_pA", "E_ex": "E_ex_mV", "E_in": "E_in_mV", "tau_syn_ex": "tau_syn_ex_ms",
                       "tau_syn_in": "tau_syn_in_ms", "t_ref": "tau_arp_ms", "I_e": "I_e_pA",
                       "gsl_error_tol": "gsl_error_tol", "V_m": "V0_mean_mV", "w": "w0_pA"}
    parameters = {
        "E_L_mV": Parameter("mV", "leak reversal potential (absolute)", -70.6, per_neuron=True),
        "V_th_mV": Parameter("mV", "spike initiation threshold of the exponential term (absolute)", -50.4,
                             per_neuron=True),
        "V_peak_mV": Parameter("mV", "spike detection threshold (absolute; V_th_mV where Delta_T_mV is 0)", 0.0,
                               per_neuron=True),
        "V_reset_mV": Parameter("mV", "reset potential (absolute; V is held here while refractory)", -60.0,
                                per_neuron=True),
        "C_m_pF": Parameter("pF", "membrane capacitance", 281.0, per_neuron=True),
        "g_L_nS": Parameter("nS", "leak conductance", 30.0, per_neuron=True),
        "Delta_T_mV": Parameter("mV", "slope factor of the exponential term (0: none, integrate-and-fire)", 2.0,
                                per_neuron=True),
        "tau_w_ms": Parameter("ms", "time constant of the adaptation current w", 144.0, per_neuron=True),
        "a_nS": Parameter("nS", "subthreshold adaptation", 4.0, per_neuron=True),
        "b_pA": Parameter("pA", "spike-triggered adaptation: the jump of w at a spike", 80.5, per_neuron=True),
        "E_ex_mV": Parameter("mV", "excitatory reversal potential (absolute)", 0.0, per_neuron=True),
        "E_in_mV": Parameter("mV", "inhibitory reversal potential (absolute)", -85.0, per_neuron=True),
        "tau_syn_ex_ms": Parameter("ms", "time constant of the excitatory conductance", 0.2, per_neuron=True),
        "tau_syn_in_ms": Parameter("ms", "time constant of the inhibitory conductance", 2.0, per_neuron=True),
        "tau_arp_ms": Parameter("ms", "absolute refractory period (NEST's t_ref)", 0.0, per_neuron=True),
        "I_e_pA": Parameter("pA", "constant input current", 0.0, per_neuron=True),
        "gsl_error_tol": Parameter("", "the integrator's error tolerance (NEST's gsl_error_tol: absolute, and "
                                   "relative to the step times the derivative)", 1e-6, per_neuron=True),
        "V0_mean_mV": Parameter("mV", "mean of the initial membrane potential (absolute)", -70.6),
        "V0_sd_mV": Parameter("mV", "standard deviation of the initial membrane potential", 0.0),
        "w0_pA": Parameter("pA", "initial adaptation current w (NEST's w at the start)", 0.0, per_neuron=True),
    }

    # The synaptic parameters check() reads besides the membrane's (the multisynapse model has lists).
    synaptic_time_constants = ("tau_syn_ex_ms", "tau_syn_in_ms")
    synaptic_potentials = ("E_ex_mV", "E_in_mV")

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("C_m_pF", "g_L_nS", *cls.synaptic_time_constants, "tau_w_ms", "gsl_error_tol"):
            check_positive(where, key, q[key])
        for key in ("tau_arp_ms", "V0_sd_mV", "Delta_T_mV"):
            check_positive(where, key, q[key], allow_zero=True)
        for key in ("E_L_mV", "V_th_mV", "V_peak_mV", "V_reset_mV", *cls.synaptic_potentials, "a_nS", "b_pA",
                    "I_e_pA", "V0_mean_mV", "w0_pA"):
            check_number(where, key, q[key])
        check_below(where, "V_reset_mV", "V_peak_mV", q, pop.size)
        check_below(where, "V_th_mV", "V_peak_mV", q, pop.size, strict=False)
        # NEST's check: the exponential term at V_peak must not overflow (for every neuron, every draw).
        peak, theta = _bound(q["V_peak_mV"], pop.size, True), _bound(q["V_th_mV"], pop.size, False)
        delta = _bound(q["Delta_T_mV"], pop.size, False)
        with np.errstate(divide="ignore", invalid="ignore"):
            argument = np.where(delta > 0, (peak - theta) / np.where(delta > 0, delta, 1.0), 0.0)
        if (argument >= MAX_EXP_ARGUMENT).any():
            i = int(np.argmax(argument >= MAX_EXP_ARGUMENT))
            raise ConfigError(f"{where}: ('V_peak_mV' - 'V_th_mV') / 'Delta_T_mV' is {float(argument[i]):.6g}"
                              f"{'' if pop.size == 1 else f' for neuron {i}'}, where exp() overflows at a spike "
                              f"(NEST's bound: {MAX_EXP_ARGUMENT:.6g}); raise 'Delta_T_mV' or lower 'V_peak_mV'")
        check_one_initial_potential(where, pop, q)
