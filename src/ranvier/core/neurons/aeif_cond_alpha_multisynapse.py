"""aeif_cond_alpha_multisynapse: NEST's aeif_cond_alpha_multisynapse, adaptive exponential
integrate-and-fire with one alpha-shaped conductance per receptor
(cpp/neurons/aeif_cond_alpha_multisynapse.cpp)."""
from __future__ import annotations

from .aeif_cond_exp import AeifCondExp
from .base import Parameter, check_receptor_lists

MAX_RECEPTORS = 7          # the engine's state columns: 5 + 2 (R - 2) of at most 16


class AeifCondAlphaMultisynapse(AeifCondExp):
    """Adaptive exponential integrate-and-fire (the membrane and adaptation of aeif_cond_exp) with
    R receptors, one per entry of tau_syn_ms and E_rev_mV: a spike of weight w (nS, at least 0, as
    NEST requires) onto receptor r gives g_r(t) = w e / tau_r t exp(-t / tau_r), peak w at
    t = tau_r, and the current g_r (E_rev_r - V). Each projection onto it names its receptor,
    `rv.Projection(..., receptor=r)` with r in 1..R (NEST's receptor_type). Integrated as NEST
    integrates it (Runge-Kutta-Fehlberg 4(5) at gsl_error_tol, per neuron; the first trial step
    min(0.01 ms, h)). Potential parameters absolute (mV); the engine, and what it records, hold
    V - E_L_mV, c = g of receptor 1, c_in = g of receptor 2, c3, c4, ... those of receptors 3, 4, ...
    (nS), w (pA). Parameters are the
    population's (one value each). Defaults: NEST's (one receptor, tau_syn 2 ms, E_rev 0 mV)."""
    name = "aeif_cond_alpha_multisynapse"
    nest_model = "aeif_cond_alpha_multisynapse"
    nest_parameters = None              # receptor lists and ports: not read from SONATA yet
    recordables = {"c": ("g_1", "nS", "conductance of receptor 1"),
                   "c_in": ("g_2", "nS", "conductance of receptor 2"),
                   "w": ("w", "pA", "adaptation current"),
                   **{f"c{r}": (f"g_{r}", "nS", f"conductance of receptor {r}") for r in range(3, MAX_RECEPTORS + 1)}}
    list_parameters = ("tau_syn_ms", "E_rev_mV")
    synaptic_time_constants = ()        # the lists, checked by read_values
    synaptic_potentials = ()
    parameters = {k: Parameter(p.unit, p.description, p.default)
                  for k, p in AeifCondExp.parameters.items()
                  if k not in ("E_ex_mV", "E_in_mV", "tau_syn_ex_ms", "tau_syn_in_ms")}
    parameters["gsl_error_tol"] = Parameter("", AeifCondExp.parameters["gsl_error_tol"].description, 1e-6)
    parameters["tau_syn_ms"] = Parameter("ms", "rise time of each receptor's conductance (its peak; a list, one per "
                                         "receptor)", (2.0,))
    parameters["E_rev_mV"] = Parameter("mV", "reversal potential of each receptor (absolute; a list, one per "
                                       "receptor)", (0.0,))

    @classmethod
    def receptors(cls, params):
        return len(params["E_rev_mV"])

    @classmethod
    def read_values(cls, pop, where):
        params, initial = super().read_values(pop, where)
        check_receptor_lists(where, params, MAX_RECEPTORS, others=("E_rev_mV",))
        return params, initial
