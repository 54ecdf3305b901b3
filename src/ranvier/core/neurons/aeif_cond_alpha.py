"""aeif_cond_alpha: NEST's aeif_cond_alpha, adaptive exponential integrate-and-fire with
alpha-shaped synaptic conductances, absolute potentials (cpp/neurons/aeif_cond_alpha.cpp)."""
from __future__ import annotations

from .aeif_cond_exp import AeifCondExp
from .base import Parameter


class AeifCondAlpha(AeifCondExp):
    """Adaptive exponential integrate-and-fire with alpha-shaped synaptic conductances (NEST's
    aeif_cond_alpha): the membrane and adaptation of aeif_cond_exp; a spike of weight w (nS) gives
    g_ex(t) = w e / tau t exp(-t / tau) (tau = tau_syn_ex_ms; peak w at t = tau) where w > 0,
    g_in likewise with -w and tau_syn_in_ms where w < 0. Integrated as NEST integrates it (as
    aeif_cond_exp; docs/neuron-models.md). Potential parameters absolute (mV, as NEST's); the
    engine, and what it records, hold V - E_L_mV (mV, relative to rest), c = g_ex and c_in = g_in
    (nS), w (pA). Checks, initial V and the engine's spec as aeif_cond_exp's. Defaults: NEST's."""
    name = "aeif_cond_alpha"
    nest_model = "aeif_cond_alpha"
    parameters = {**AeifCondExp.parameters,
                  "tau_syn_ex_ms": Parameter("ms", "rise time of the excitatory conductance (its peak)", 0.2,
                                             per_neuron=True),
                  "tau_syn_in_ms": Parameter("ms", "rise time of the inhibitory conductance (its peak)", 2.0,
                                             per_neuron=True)}
