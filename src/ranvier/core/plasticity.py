"""Synapse kinds of a projection beyond static: spike-timing-dependent plasticity (STDP),
short-term plasticity (rv.TsodyksMarkram, NEST's tsodyks_synapse) and stochastic transmission
(rv.Bernoulli, NEST's bernoulli_synapse): docs/plasticity.md.

A projection is plastic when it is given `synapse=` one of these; its weights then change at
every delivered pre-synaptic spike, computed the way NEST 3.10 computes them, so the same
network gives the same weights in both simulators (tests/test_stdp_nest.py):

    rv.Projection(source="E", target="E", indegree=100, weight=0.5, delay_ms=1.5,
                  synapse=rv.STDP(lambda_=0.01, w_max=1.0, mu_plus=0, mu_minus=0))

- STDP: NEST's stdp_synapse (pairing="all-to-all") and its nearest-neighbour variants
  stdp_nn_symm_synapse ("nearest-symmetric"), stdp_nn_pre_centered_synapse
  ("nearest-presynaptic-centered") and stdp_nn_restr_synapse ("nearest-restricted"). Weights in
  units of w_max: facilitation w/w_max += lambda_ (1 - w/w_max)^mu_plus K+, depression w/w_max -=
  alpha lambda_ (w/w_max)^mu_minus K-, clipped to [0, w_max]. mu 0 is additive, 1 multiplicative.
- STDPPowerLaw: NEST's stdp_pl_synapse_hom (van Rossum, Gütig, Morrison): w += lambda_ w^mu K+,
  w -= lambda_ alpha w K-, w >= 0.

K+ decays with tau_plus_ms (the synapse's); K- with the target population's tau_minus_ms
(rv.Population(..., tau_minus_ms=20.0): NEST's tau_minus of the post-synaptic neuron). As in NEST,
the whole delay is dendritic: a post-synaptic spike at t reaches the synapse at t + delay, and a
weight changes only when a pre-synaptic spike is delivered. Simulation.weights() reads the weights
as NEST's GetStatus does (as of each synapse's last pre-synaptic spike), or brought up to date.
"""
from __future__ import annotations

# Each kind is a file of ranvier.core.synapses; this module keeps their public names.
from .synapses import KINDS as SYNAPSE_KINDS
from .synapses import (NEST_MODELS, STDP, Bernoulli, QuantalSTP, STDPPowerLaw, STDPTriplet, TsodyksMarkram,
                       VogelsSprekeler, describe, plasticity_spec)
from .synapses.stdp import PAIRINGS

__all__ = ["Bernoulli", "NEST_MODELS", "PAIRINGS", "QuantalSTP", "STDP", "STDPPowerLaw", "STDPTriplet", "SYNAPSE_KINDS", "TsodyksMarkram",
           "VogelsSprekeler", "describe",
           "plasticity_spec"]
