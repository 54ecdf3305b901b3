"""iaf_psc_alpha: NEST's iaf_psc_alpha, alpha-shaped post-synaptic currents, absolute potentials
(cpp/neurons/iaf_psc_alpha.cpp)."""
from __future__ import annotations

from .base import Parameter
from .psc_exp import PscExp


class IafPscAlpha(PscExp):
    """Leaky integrate-and-fire with alpha-shaped post-synaptic currents (NEST's iaf_psc_alpha),
    integrated exactly on the time grid in NEST's order: a spike of weight w (pA) gives the current
    w e / tau t exp(-t / tau); positive weights excite with tau_syn_ex_ms, negative ones inhibit
    with tau_syn_in_ms. Potential parameters absolute (mV, as NEST's); the engine, and what it
    records, hold V - E_L_mV (mV, relative to rest), and c = the excitatory current I_ex (pA).
    Initial V as psc_exp. Defaults: NEST's."""
    name = "iaf_psc_alpha"
    takes_current = True               # injected currents (ranvier.core.devices) add to I_e
    recordables = {"c": ("I_syn_ex", "pA", "excitatory synaptic current"),
                   "c_in": ("I_syn_in", "pA", "inhibitory synaptic current")}
    nest_model = "iaf_psc_alpha"
    parameters = {**{k: v for k, v in PscExp.parameters.items() if k not in PscExp.time_constants},
                  "tau_syn_ex_ms": Parameter("ms", "rise time of the excitatory synaptic current", 2.0,
                                             per_neuron=True),
                  "tau_syn_in_ms": Parameter("ms", "rise time of the inhibitory synaptic current", 2.0,
                                             per_neuron=True)}
    time_constants = ("tau_syn_ex_ms", "tau_syn_in_ms")
