"""aeif_cond_beta_multisynapse: NEST's aeif_cond_beta_multisynapse, adaptive exponential
integrate-and-fire with one beta-shaped conductance per receptor
(cpp/neurons/aeif_cond_beta_multisynapse.cpp)."""
from __future__ import annotations

from ...errors import ConfigError
from .aeif_cond_alpha_multisynapse import MAX_RECEPTORS, AeifCondAlphaMultisynapse
from .base import Parameter, check_receptor_lists


class AeifCondBetaMultisynapse(AeifCondAlphaMultisynapse):
    """Adaptive exponential integrate-and-fire (the membrane and adaptation of aeif_cond_exp) with
    R receptors, one per entry of tau_rise_ms, tau_decay_ms and E_rev_mV: a spike of weight w (nS,
    at least 0) onto receptor r gives a conductance proportional to exp(-t / tau_decay) -
    exp(-t / tau_rise), normalised to peak at w (NEST's beta_normalization_factor), and the
    current g_r (E_rev_r - V). Each projection names its receptor, `receptor=r`, r in 1..R.
    Integrated as aeif_cond_alpha_multisynapse; recorded likewise (c, c_in, c3, ... the receptors'
    conductances, w). Defaults: NEST's (one receptor, rise 2 ms, decay 20 ms, E_rev 0 mV)."""
    name = "aeif_cond_beta_multisynapse"
    nest_model = "aeif_cond_beta_multisynapse"
    list_parameters = ("tau_rise_ms", "tau_decay_ms", "E_rev_mV")
    parameters = {k: p for k, p in AeifCondAlphaMultisynapse.parameters.items() if k != "tau_syn_ms"}
    parameters["tau_rise_ms"] = Parameter("ms", "rise time of each receptor's conductance (a list, one per receptor)",
                                          (2.0,))
    parameters["tau_decay_ms"] = Parameter("ms", "decay time of each receptor's conductance (a list, one per receptor; "
                                           "at least its rise time)", (20.0,))

    @classmethod
    def receptors(cls, params):
        return len(params["E_rev_mV"])

    @classmethod
    def read_values(cls, pop, where):
        params, initial = super(AeifCondAlphaMultisynapse, cls).read_values(pop, where)
        check_receptor_lists(where, params, MAX_RECEPTORS, "tau_rise_ms", others=("tau_decay_ms", "E_rev_mV"))
        check_receptor_lists(where, params, MAX_RECEPTORS, "tau_decay_ms")
        if any(d < r for r, d in zip(params["tau_rise_ms"], params["tau_decay_ms"])):
            raise ConfigError(f"{where}: every receptor's 'tau_rise_ms' must be at most its 'tau_decay_ms'")
        return params, initial
