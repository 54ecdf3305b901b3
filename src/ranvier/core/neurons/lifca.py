"""lifca: LIF with spike-frequency adaptation, potentials relative to rest (cpp/neurons/lifca.cpp)."""
from __future__ import annotations

import numpy as np

from .base import NeuronModel, Parameter, check_below, check_number, check_positive

INITIAL_STATES = ("reset", "uniform")     # V = H, c = 0; or V ~ U[H, theta)


class Lifca(NeuronModel):
    """LIF neuron with spike-frequency adaptation (the DPSNN benchmark's); every potential is
    relative to rest (mV): dV/dt = -V / tau_m - g_c c + dc, c (dimensionless) decays with tau_c
    and jumps by alpha_c at each spike; input jumps V (mV). Recorded: V (mV, relative to rest) and
    c. Population.initial: "reset" (V = H, c = 0), "uniform" (V ~ U[H, theta)), or V per neuron
    (an array or a distribution, mV relative to rest).

    Left out, the adaptation is off (alpha_c = g_c = 0) and the membrane takes NEST's
    iaf_psc_delta defaults relative to E_L, so `Population("E", 100, {})` is NEST's iaf_psc_delta
    (with dc_mV_per_ms = I_e / C_m); input that arrives while refractory is dropped, as NEST's
    default (refractory_input = False)."""
    name = "lifca"
    has_potential = True
    initial_states = INITIAL_STATES
    recordables = {"c": ("c", "dimensionless", "spike-frequency adaptation variable")}
    pynn_weight_scale = 1000.0         # PyNN's IF_curr_delta: 1000 w mV, as pyNN.nest gives iaf_psc_delta
    nest_model = "iaf_psc_delta"       # with alpha_c = g_c = 0, relative to E_L
    parameters = {
        "tau_m_ms": Parameter("ms", "membrane time constant", 10.0, per_neuron=True),
        "theta_mV": Parameter("mV", "firing threshold, relative to rest", 15.0, per_neuron=True),
        "reset_mV": Parameter("mV", "reset potential H, relative to rest (V is held here while refractory)", 0.0,
                              per_neuron=True),
        "tau_arp_ms": Parameter("ms", "absolute refractory period", 2.0, per_neuron=True),
        "alpha_c": Parameter("", "increment of the adaptation variable c at each spike (0: no adaptation)", 0.0,
                             per_neuron=True),
        "tau_c_ms": Parameter("ms", "time constant of c", 1000.0, per_neuron=True),
        "g_c_mV_per_ms": Parameter("mV/ms", "strength of adaptation (dV/dt gets -g_c * c; 0: no adaptation)", 0.0,
                                   per_neuron=True),
        "dc_mV_per_ms": Parameter("mV/ms", "constant drive added to dV/dt (a current I_e gives I_e / C_m)", 0.0,
                                  per_neuron=True),
    }

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("tau_m_ms", "tau_c_ms"):
            check_positive(where, key, q[key])
        for key in ("tau_arp_ms", "alpha_c", "g_c_mV_per_ms"):
            check_positive(where, key, q[key], allow_zero=True)
        for key in ("theta_mV", "reset_mV", "dc_mV_per_ms"):
            check_number(where, key, q[key])
        check_below(where, "reset_mV", "theta_mV", q, pop.size)

    @classmethod
    def from_absolute(cls, params):
        """NEST's iaf_psc_delta parameters (absolute E_L_mV, V_th_mV, V_reset_mV; C_m_pF, I_e_pA)
        relative to rest: theta_mV, reset_mV and dc_mV_per_ms = I_e / C_m (one number where all
        neurons have the same)."""
        q = dict(params)
        e_l = np.asarray(q.pop("E_L_mV"), dtype=float)
        c_m = np.asarray(q.pop("C_m_pF"), dtype=float)
        q["theta_mV"] = np.asarray(q.pop("V_th_mV"), dtype=float) - e_l
        q["reset_mV"] = np.asarray(q.pop("V_reset_mV"), dtype=float) - e_l
        q["dc_mV_per_ms"] = np.asarray(q.pop("I_e_pA"), dtype=float) / c_m
        return {k: (float(np.ravel(v)[0]) if isinstance(v, np.ndarray) and np.all(v == np.ravel(v)[0]) else v)
                for k, v in q.items()}

    @classmethod
    def initial_from_absolute(cls, initial, params, size):
        return np.asarray(initial, dtype=float) - np.broadcast_to(np.asarray(params["E_L_mV"], dtype=float), (size,))
