"""gif_cond_exp: NEST's gif_cond_exp, the generalised integrate-and-fire neuron with a
spike-triggered current, a moving threshold and stochastic spiking (cpp/neurons/gif_cond_exp.cpp)."""
from __future__ import annotations

from ...errors import ConfigError
from .base import NeuronModel, Parameter, check_number, check_one_initial_potential, check_positive

SEQUENCES = ("tau_stc_ms", "q_stc_pA", "tau_sfa_ms", "q_sfa_mV")
MAX_ELEMENTS = 12          # tau_stc_ms and tau_sfa_ms together: the engine's state columns


class GifCondExp(NeuronModel):
    """The generalised integrate-and-fire neuron (NEST's gif_cond_exp; Mensi et al. 2012): a leaky
    membrane with exponential synaptic conductances (weights in nS, positive to g_ex, negative to
    g_in), a spike-triggered current I_stc and a moving threshold E_sfa, each a sum of
    exponentials (time constants tau_stc_ms, tau_sfa_ms) that every spike jumps by q_stc_pA and
    q_sfa_mV, and stochastic spiking: out of its refractory period a neuron spikes in a step with
    probability 1 - exp(-lambda h), lambda = lambda_0 exp((V - E_sfa) / Delta_V), E_sfa =
    V_T_star plus the threshold's elements. Integrated as NEST integrates it (Runge-Kutta-Fehlberg
    4(5) under gsl_error_tol, per neuron), its steps in NEST's order; each neuron draws from its
    own random stream keyed by the seed, its id and the step, so spikes are the same for any
    ranks and threads (NEST's draws are other numbers of the same law). Potentials absolute (mV,
    as NEST's); the engine and what it records hold V - E_L_mV, c = g_ex, c_in = g_in (nS) and
    w = I_stc (pA).
    Defaults: NEST's (no adaptation element)."""
    name = "gif_cond_exp"
    takes_current = True
    input_unit = "nS"
    has_potential = True
    initial_states = ("reset",)
    recordables = {"c": ("gsyn_exc", "nS", "excitatory synaptic conductance"),
                   "c_in": ("gsyn_inh", "nS", "inhibitory synaptic conductance"),
                   "w": ("i_eta", "pA", "spike-triggered current I_stc")}
    pynn_weight_scale = 1000.0         # PyNN's uS -> nS
    nest_model = "gif_cond_exp"
    nest_parameters = {"E_L": "E_L_mV", "V_reset": "V_reset_mV", "V_T_star": "V_T_star_mV", "Delta_V": "Delta_V_mV",
                       "lambda_0": "lambda_0_hz", "C_m": "C_m_pF", "g_L": "g_L_nS", "E_ex": "E_ex_mV",
                       "E_in": "E_in_mV", "tau_syn_ex": "tau_syn_ex_ms", "tau_syn_in": "tau_syn_in_ms",
                       "t_ref": "tau_arp_ms", "I_e": "I_e_pA", "gsl_error_tol": "gsl_error_tol",
                       "V_m": "V0_mean_mV"}
    parameters = {
        "E_L_mV": Parameter("mV", "leak reversal potential (absolute)", -70.0, per_neuron=True),
        "V_reset_mV": Parameter("mV", "reset potential (absolute; V is held here while refractory)", -55.0,
                                per_neuron=True),
        "V_T_star_mV": Parameter("mV", "the threshold's baseline (absolute)", -35.0, per_neuron=True),
        "Delta_V_mV": Parameter("mV", "the sharpness of the stochastic threshold", 0.5, per_neuron=True),
        "lambda_0_hz": Parameter("Hz", "firing intensity at the threshold (NEST's lambda_0, 1/s)", 1.0, per_neuron=True),
        "C_m_pF": Parameter("pF", "membrane capacitance", 80.0, per_neuron=True),
        "g_L_nS": Parameter("nS", "leak conductance", 4.0, per_neuron=True),
        "E_ex_mV": Parameter("mV", "excitatory reversal potential (absolute)", 0.0, per_neuron=True),
        "E_in_mV": Parameter("mV", "inhibitory reversal potential (absolute)", -85.0, per_neuron=True),
        "tau_syn_ex_ms": Parameter("ms", "time constant of the excitatory conductance", 2.0, per_neuron=True),
        "tau_syn_in_ms": Parameter("ms", "time constant of the inhibitory conductance", 2.0, per_neuron=True),
        "tau_arp_ms": Parameter("ms", "absolute refractory period (NEST's t_ref)", 4.0, per_neuron=True),
        "I_e_pA": Parameter("pA", "constant input current", 0.0, per_neuron=True),
        "gsl_error_tol": Parameter("", "the integrator's absolute error tolerance (mV, nS)", 1e-3, per_neuron=True),
        "tau_stc_ms": Parameter("ms", "time constants of the spike-triggered current's elements (a list)", ()),
        "q_stc_pA": Parameter("pA", "the jump of each spike-triggered current element at a spike (a list)", ()),
        "tau_sfa_ms": Parameter("ms", "time constants of the moving threshold's elements (a list)", ()),
        "q_sfa_mV": Parameter("mV", "the jump of each threshold element at a spike (a list)", ()),
        "V0_mean_mV": Parameter("mV", "mean of the initial membrane potential (absolute)", -70.0),
        "V0_sd_mV": Parameter("mV", "standard deviation of the initial membrane potential", 0.0),
    }

    list_parameters = SEQUENCES

    @classmethod
    def read_values(cls, pop, where):
        params, initial = super().read_values(pop, where)
        for tau, q in (("tau_stc_ms", "q_stc_pA"), ("tau_sfa_ms", "q_sfa_mV")):
            if len(params[tau]) != len(params[q]):
                raise ConfigError(f"{where}: '{tau}' ({len(params[tau])} values) and '{q}' ({len(params[q])}) must "
                                  f"have the same length")
            if any(t <= 0 for t in params[tau]):
                raise ConfigError(f"{where}: every time constant of '{tau}' must be positive")
        if len(params["tau_stc_ms"]) + len(params["tau_sfa_ms"]) > MAX_ELEMENTS:
            raise ConfigError(f"{where}: at most {MAX_ELEMENTS} time constants in tau_stc_ms and tau_sfa_ms together")
        return params, initial

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("C_m_pF", "g_L_nS", "tau_syn_ex_ms", "tau_syn_in_ms", "Delta_V_mV", "gsl_error_tol"):
            check_positive(where, key, q[key])
        for key in ("tau_arp_ms", "V0_sd_mV", "lambda_0_hz"):
            check_positive(where, key, q[key], allow_zero=True)
        for key in ("E_L_mV", "V_reset_mV", "V_T_star_mV", "E_ex_mV", "E_in_mV", "I_e_pA", "V0_mean_mV"):
            check_number(where, key, q[key])
        check_one_initial_potential(where, pop, q)
