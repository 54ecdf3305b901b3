"""iaf_cond_alpha: NEST's iaf_cond_alpha, alpha-shaped synaptic conductances, absolute potentials
(cpp/neurons/iaf_cond_alpha.cpp)."""
from __future__ import annotations

from .base import Parameter
from .iaf_cond_exp import IafCondExp


class IafCondAlpha(IafCondExp):
    """Leaky integrate-and-fire with alpha-shaped synaptic conductances (NEST's iaf_cond_alpha):
    C_m dV/dt = -g_L (V - E_L) + I_e - g_ex (V - E_ex) - g_in (V - E_in); a spike of weight w (nS)
    gives g_ex(t) = w e / tau t exp(-t / tau) (tau = tau_syn_ex_ms; peak w at t = tau) where w > 0,
    g_in likewise with -w and tau_syn_in_ms where w < 0. Integrated as NEST integrates it
    (Runge-Kutta-Fehlberg 4(5) with NEST's adaptive step control, per neuron, as iaf_cond_exp;
    docs/neuron-models.md). Potential parameters absolute (mV, as NEST's); the engine, and what
    it records, hold V - E_L_mV (mV, relative to rest), and c = g_ex (nS). Checks, initial V and
    the engine's spec as iaf_cond_exp's. Defaults: NEST's."""
    name = "iaf_cond_alpha"
    nest_model = "iaf_cond_alpha"
    parameters = {**IafCondExp.parameters,
                  "tau_syn_ex_ms": Parameter("ms", "rise time of the excitatory conductance (its peak)", 0.2,
                                             per_neuron=True),
                  "tau_syn_in_ms": Parameter("ms", "rise time of the inhibitory conductance (its peak)", 2.0,
                                             per_neuron=True)}
