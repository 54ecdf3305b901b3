"""PyNN's standard cell types and current sources on Ranvier's models and devices.

Native parameter names are Ranvier's, so a population's native parameters are the Ranvier
population's: IF_curr_alpha -> iaf_psc_alpha, IF_curr_exp -> psc_exp (separate excitatory and
inhibitory time constants), IF_cond_exp -> iaf_cond_exp, IF_cond_alpha ->
iaf_cond_alpha, IF_facets_hardware1 -> iaf_cond_exp (pyNN.nest's fixed C_m, t_ref and E_ex),
IF_cond_exp_gsfa_grr -> iaf_cond_exp_sfa_rr, EIF_cond_exp_isfa_ista ->
aeif_cond_exp, EIF_cond_alpha_isfa_ista -> aeif_cond_alpha, GIF_cond_exp -> gif_cond_exp, HH_cond_exp -> hh_cond_exp_traub,
SpikeSourceArray -> spike_train, SpikeSourcePoisson -> poisson_source, SpikeSourceGamma -> gamma_source,
SpikeSourcePoissonRefractory -> ppd_source. PyNN's units (nF, nA, uS) become Ranvier's (pF, pA,
nS) in the translations.
"""
from __future__ import annotations

from pyNN.standardmodels import build_translations, cells, electrodes, synapses

from ranvier.core.neurons import Izhikevich as IzhikevichModel
from ranvier.core.neurons import (AeifCondAlpha, AeifCondExp, GammaSource, GifCondExp, HhCondExpTraub, IafCondAlpha, IafCondExp,
                                  IafCondExpSfaRr, IafPscAlpha, Lifca, PoissonSource, PpdSource, PscExp, SpikeTrain)

from .simulator import state


class IF_curr_alpha(cells.IF_curr_alpha):
    __doc__ = cells.IF_curr_alpha.__doc__
    ranvier_model = IafPscAlpha.name
    translations = build_translations(
        ('tau_m', 'tau_m_ms'),
        ('cm', 'C_m_pF', 1000.0),
        ('v_rest', 'E_L_mV'),
        ('v_thresh', 'V_th_mV'),
        ('v_reset', 'V_reset_mV'),
        ('tau_refrac', 'tau_arp_ms'),
        ('i_offset', 'I_e_pA', 1000.0),
        ('tau_syn_E', 'tau_syn_ex_ms'),
        ('tau_syn_I', 'tau_syn_in_ms'),
    )
    variable_map = {'v': 'V'}
    scale_factors = {'v': 1.0}


class IF_curr_exp(cells.IF_curr_exp):
    __doc__ = cells.IF_curr_exp.__doc__
    ranvier_model = PscExp.name
    translations = build_translations(
        ('tau_m', 'tau_m_ms'),
        ('cm', 'C_m_pF', 1000.0),
        ('v_rest', 'E_L_mV'),
        ('v_thresh', 'V_th_mV'),
        ('v_reset', 'V_reset_mV'),
        ('tau_refrac', 'tau_arp_ms'),
        ('i_offset', 'I_e_pA', 1000.0),
        ('tau_syn_E', 'tau_syn_ex_ms'),
        ('tau_syn_I', 'tau_syn_in_ms'),
    )
    variable_map = {'v': 'V'}
    scale_factors = {'v': 1.0}


class IF_curr_delta(cells.IF_curr_delta):
    """PyNN's IF_curr_delta on lifca (NEST's iaf_psc_delta relative to rest): native parameters
    NEST's, absolute (E_L_mV, V_th_mV, ...); the build takes them relative to E_L. A weight w
    jumps V by 1000 w mV, as pyNN.nest gives iaf_psc_delta."""
    __doc__ = cells.IF_curr_delta.__doc__
    ranvier_model = Lifca.name
    translations = build_translations(
        ('v_rest', 'E_L_mV'),
        ('v_reset', 'V_reset_mV'),
        ('cm', 'C_m_pF', 1000.0),
        ('tau_m', 'tau_m_ms'),
        ('tau_refrac', 'tau_arp_ms'),
        ('v_thresh', 'V_th_mV'),
        ('i_offset', 'I_e_pA', 1000.0),
    )
    variable_map = {'v': 'V'}
    scale_factors = {'v': 1.0}


class IF_cond_exp(cells.IF_cond_exp):
    __doc__ = cells.IF_cond_exp.__doc__
    ranvier_model = IafCondExp.name
    translations = build_translations(
        ('tau_m', 'g_L_nS', "cm/tau_m*1000.0", "C_m_pF/g_L_nS"),
        ('cm', 'C_m_pF', 1000.0),
        ('v_rest', 'E_L_mV'),
        ('v_thresh', 'V_th_mV'),
        ('v_reset', 'V_reset_mV'),
        ('tau_refrac', 'tau_arp_ms'),
        ('i_offset', 'I_e_pA', 1000.0),
        ('tau_syn_E', 'tau_syn_ex_ms'),
        ('tau_syn_I', 'tau_syn_in_ms'),
        ('e_rev_E', 'E_ex_mV'),
        ('e_rev_I', 'E_in_mV'),
    )
    variable_map = {'v': 'V', 'gsyn_exc': 'c', 'gsyn_inh': 'c_in'}
    scale_factors = {'v': 1.0, 'gsyn_exc': 0.001, 'gsyn_inh': 0.001}          # nS -> uS


class HH_cond_exp(cells.HH_cond_exp):
    __doc__ = cells.HH_cond_exp.__doc__
    ranvier_model = HhCondExpTraub.name
    translations = build_translations(                      # pyNN.nest's (hh_cond_exp_traub)
        ('gbar_Na', 'g_Na_nS', 1000.0),                      # uS -> nS
        ('gbar_K', 'g_K_nS', 1000.0),
        ('g_leak', 'g_L_nS', 1000.0),
        ('cm', 'C_m_pF', 1000.0),                            # nF -> pF
        ('v_offset', 'V_T_mV'),
        ('e_rev_Na', 'E_Na_mV'),
        ('e_rev_K', 'E_K_mV'),
        ('e_rev_leak', 'E_L_mV'),
        ('e_rev_E', 'E_ex_mV'),
        ('e_rev_I', 'E_in_mV'),
        ('tau_syn_E', 'tau_syn_ex_ms'),
        ('tau_syn_I', 'tau_syn_in_ms'),
        ('i_offset', 'I_e_pA', 1000.0),                      # nA -> pA
    )
    variable_map = {'v': 'V', 'gsyn_exc': 'c', 'gsyn_inh': 'c_in'}
    scale_factors = {'v': 1.0, 'gsyn_exc': 0.001, 'gsyn_inh': 0.001}          # nS -> uS
    # PyNN's initial values of the gates (default m 0, h 1, n 0, as pyNN.nest sets them on NEST's
    # Act_m, Inact_h, Act_n): the model's initial gates, one value for the population.
    initial_parameters = {'m': 'Act_m0', 'h': 'Inact_h0', 'n': 'Act_n0'}

class Izhikevich(cells.Izhikevich):
    __doc__ = cells.Izhikevich.__doc__
    ranvier_model = IzhikevichModel.name
    translations = build_translations(                      # pyNN.nest's (izhikevich)
        ('a', 'a'),
        ('b', 'b'),
        ('c', 'c_mV'),
        ('d', 'd_mV_per_ms'),
        ('i_offset', 'I_e_pA', 1000.0),                      # nA -> NEST's I_e
    )
    variable_map = {'v': 'V', 'u': 'c'}
    scale_factors = {'v': 1.0, 'u': 1.0}
    absolute_v = True                  # the engine holds V itself (the model has no resting potential)
    initial_parameters = {'u': 'U0_mV_per_ms'}   # PyNN's initial u, per cell


class IF_facets_hardware1(cells.IF_facets_hardware1):
    """PyNN's model of the FACETS hardware neuron, as pyNN.nest runs it: iaf_cond_exp with the
    capacitance, refractory period and excitatory reversal potential fixed (extra_parameters)."""
    ranvier_model = IafCondExp.name
    translations = build_translations(
        ('v_reset', 'V_reset_mV'),
        ('v_rest', 'E_L_mV'),
        ('v_thresh', 'V_th_mV'),
        ('e_rev_I', 'E_in_mV'),
        ('tau_syn_E', 'tau_syn_ex_ms'),
        ('tau_syn_I', 'tau_syn_in_ms'),
        ('g_leak', 'g_L_nS'),
    )
    extra_parameters = {'C_m_pF': 200.0, 'tau_arp_ms': 1.0, 'E_ex_mV': 0.0}
    variable_map = IF_cond_exp.variable_map
    scale_factors = IF_cond_exp.scale_factors


class IF_cond_alpha(cells.IF_cond_alpha):
    __doc__ = cells.IF_cond_alpha.__doc__
    ranvier_model = IafCondAlpha.name
    translations = IF_cond_exp.translations
    variable_map = IF_cond_exp.variable_map
    scale_factors = IF_cond_exp.scale_factors


class IF_cond_exp_gsfa_grr(cells.IF_cond_exp_gsfa_grr):
    __doc__ = cells.IF_cond_exp_gsfa_grr.__doc__
    ranvier_model = IafCondExpSfaRr.name
    translations = {**IF_cond_exp.translations, **build_translations(   # as pyNN.nest's onto iaf_cond_exp_sfa_rr
        ('tau_sfa', 'tau_sfa_ms'),
        ('e_rev_sfa', 'E_sfa_mV'),
        ('q_sfa', 'q_sfa_nS'),                  # nS, as NEST's
        ('tau_rr', 'tau_rr_ms'),
        ('e_rev_rr', 'E_rr_mV'),
        ('q_rr', 'q_rr_nS'),
    )}
    # g_s: the adaptation conductance (the engine's w column, nS, as PyNN's g_s); the relative
    # refractory conductance g_r is not recordable here (PyNN's record() refuses it by name).
    recordable = ['spikes', 'v', 'g_s', 'gsyn_exc', 'gsyn_inh']
    variable_map = {'v': 'V', 'gsyn_exc': 'c', 'gsyn_inh': 'c_in', 'g_s': 'w'}
    scale_factors = {'v': 1.0, 'gsyn_exc': 0.001, 'gsyn_inh': 0.001, 'g_s': 1.0}   # nS -> uS; g_s in nS


class EIF_cond_exp_isfa_ista(cells.EIF_cond_exp_isfa_ista):
    __doc__ = cells.EIF_cond_exp_isfa_ista.__doc__
    ranvier_model = AeifCondExp.name
    translations = build_translations(          # as pyNN.nest's onto aeif_cond_exp
        ('cm', 'C_m_pF', 1000.0),               # nF -> pF
        ('tau_refrac', 'tau_arp_ms'),
        ('v_spike', 'V_peak_mV'),
        ('v_reset', 'V_reset_mV'),
        ('v_rest', 'E_L_mV'),
        ('tau_m', 'g_L_nS', "cm/tau_m*1000.0", "C_m_pF/g_L_nS"),
        ('i_offset', 'I_e_pA', 1000.0),         # nA -> pA
        ('a', 'a_nS'),
        ('b', 'b_pA', 1000.0),                  # nA -> pA
        ('delta_T', 'Delta_T_mV'),
        ('tau_w', 'tau_w_ms'),
        ('v_thresh', 'V_th_mV'),
        ('e_rev_E', 'E_ex_mV'),
        ('tau_syn_E', 'tau_syn_ex_ms'),
        ('e_rev_I', 'E_in_mV'),
        ('tau_syn_I', 'tau_syn_in_ms'),
    )
    variable_map = {'v': 'V', 'gsyn_exc': 'c', 'gsyn_inh': 'c_in', 'w': 'w'}
    scale_factors = {'v': 1.0, 'gsyn_exc': 0.001, 'gsyn_inh': 0.001, 'w': 0.001}   # nS -> uS, pA -> nA


class GIF_cond_exp(cells.GIF_cond_exp):
    __doc__ = cells.GIF_cond_exp.__doc__
    ranvier_model = GifCondExp.name
    translations = build_translations(          # as pyNN.nest's onto gif_cond_exp
        ('v_rest', 'E_L_mV'),
        ('cm', 'C_m_pF', 1000.0),               # nF -> pF
        ('tau_m', 'g_L_nS', "cm/tau_m*1000.0", "C_m_pF/g_L_nS"),
        ('tau_refrac', 'tau_arp_ms'),
        ('tau_syn_E', 'tau_syn_ex_ms'),
        ('tau_syn_I', 'tau_syn_in_ms'),
        ('e_rev_E', 'E_ex_mV'),
        ('e_rev_I', 'E_in_mV'),
        ('v_reset', 'V_reset_mV'),
        ('i_offset', 'I_e_pA', 1000.0),         # nA -> pA
        ('delta_v', 'Delta_V_mV'),
        ('v_t_star', 'V_T_star_mV'),
        ('lambda0', 'lambda_0_hz'),          # Hz, NEST's lambda_0 (1/s)
        ('tau_eta', 'tau_stc_ms'),
        ('tau_gamma', 'tau_sfa_ms'),
        ('a_eta', 'q_stc_pA', 1000.0),          # nA -> pA
        ('a_gamma', 'q_sfa_mV'),
    )
    # i_eta, the spike-triggered current, is the engine's w; v_t, the moving threshold, is in the
    # engine's state but not among the variables its state recorder keeps: record() refuses it.
    recordable = ['spikes', 'v', 'gsyn_exc', 'gsyn_inh', 'i_eta']
    variable_map = {'v': 'V', 'gsyn_exc': 'c', 'gsyn_inh': 'c_in', 'i_eta': 'w'}
    scale_factors = {'v': 1.0, 'gsyn_exc': 0.001, 'gsyn_inh': 0.001, 'i_eta': 0.001}   # nS -> uS, pA -> nA


class EIF_cond_alpha_isfa_ista(cells.EIF_cond_alpha_isfa_ista):
    __doc__ = cells.EIF_cond_alpha_isfa_ista.__doc__
    ranvier_model = AeifCondAlpha.name
    translations = EIF_cond_exp_isfa_ista.translations
    variable_map = EIF_cond_exp_isfa_ista.variable_map
    scale_factors = EIF_cond_exp_isfa_ista.scale_factors


class SpikeSourceArray(cells.SpikeSourceArray):
    __doc__ = cells.SpikeSourceArray.__doc__
    ranvier_model = SpikeTrain.name
    translations = build_translations(('spike_times', 'spike_times_ms'))


class SpikeSourcePoisson(cells.SpikeSourcePoisson):
    __doc__ = cells.SpikeSourcePoisson.__doc__
    ranvier_model = PoissonSource.name
    translations = build_translations(
        ('rate', 'rate_hz'),
        ('start', 'start_ms'),
        ('duration', 'stop_ms', "start + duration", "stop_ms - start_ms"),
    )


class SpikeSourceGamma(cells.SpikeSourceGamma):
    # pyNN.nest's translation (gamma_sup_generator): order alpha, mean rate beta / alpha.
    __doc__ = cells.SpikeSourceGamma.__doc__
    ranvier_model = GammaSource.name
    translations = build_translations(
        ('alpha', 'gamma_shape'),
        ('beta', 'rate_hz', "beta / alpha", "gamma_shape * rate_hz"),
        ('start', 'start_ms'),
        ('duration', 'stop_ms', "start + duration", "stop_ms - start_ms"),
    )


class SpikeSourcePoissonRefractory(cells.SpikeSourcePoissonRefractory):
    # pyNN.nest's translation (ppd_sup_generator): tau_refrac is the dead time.
    __doc__ = cells.SpikeSourcePoissonRefractory.__doc__
    ranvier_model = PpdSource.name
    translations = build_translations(
        ('rate', 'rate_hz'),
        ('tau_refrac', 'dead_time_ms'),
        ('start', 'start_ms'),
        ('duration', 'stop_ms', "start + duration", "stop_ms - start_ms"),
    )


def list_standard_models():
    """The StandardCellType classes this backend has."""
    return [name for name, obj in globals().items()
            if isinstance(obj, type) and issubclass(obj, cells.StandardCellType) and hasattr(obj, "ranvier_model")]


class StaticSynapse(synapses.StaticSynapse):
    __doc__ = synapses.StaticSynapse.__doc__
    translations = build_translations(('weight', 'weight'), ('delay', 'delay'))

    def _get_minimum_delay(self):
        return state.min_delay


def _alpha_forwards(**parameters):
    """NEST's alpha = A_minus / A_plus; with A_plus = 0 (no change at all) A_minus kept as is."""
    A_plus, A_minus = parameters["A_plus"], parameters["A_minus"]
    return A_minus if A_plus == 0 else A_minus / A_plus


def _alpha_reverse(**parameters):
    return parameters["alpha"] if parameters["lambda_"] == 0 else parameters["alpha"] * parameters["lambda_"]


class STDPMechanism(synapses.STDPMechanism):
    """PyNN's STDP on Ranvier's pair-based STDP (NEST's stdp_synapse: rv.STDP); all-to-all pairing."""
    __doc__ = synapses.STDPMechanism.__doc__
    base_translations = build_translations(
        ('weight', 'weight'),
        ('delay', 'delay'),
        ('dendritic_delay_fraction', 'dendritic_delay_fraction'),
    )

    def __init__(self, timing_dependence=None, weight_dependence=None, voltage_dependence=None,
                 dendritic_delay_fraction=1.0, weight=0.0, delay=None):
        if dendritic_delay_fraction != 1:
            raise ValueError("pyNN.ranvier: STDP delays are dendritic (dendritic_delay_fraction = 1), as NEST's")
        super().__init__(timing_dependence, weight_dependence, voltage_dependence, dendritic_delay_fraction,
                         weight, delay)

    def _get_minimum_delay(self):
        return state.min_delay


class TsodyksMarkramSynapse(synapses.TsodyksMarkramSynapse):
    """PyNN's short-term plasticity on rv.TsodyksMarkram (NEST's tsodyks_synapse, as pyNN.nest
    maps it): U, tau_rec and tau_facil per connection; tau_psc is the target cell's tau_syn_E or
    tau_syn_I by receptor type, as pyNN.nest sets it; each synapse starts at u = 0 (PyNN's
    initial value), x = 1, y = 0."""
    __doc__ = synapses.TsodyksMarkramSynapse.__doc__
    translations = build_translations(
        ('weight', 'weight'),
        ('delay', 'delay'),
        ('U', 'U'),
        ('tau_rec', 'tau_rec_ms'),
        ('tau_facil', 'tau_fac_ms'),
    )

    def _get_minimum_delay(self):
        return state.min_delay


class SimpleStochasticSynapse(synapses.SimpleStochasticSynapse):
    """PyNN's stochastic synapse on rv.Bernoulli (NEST's bernoulli_synapse, as pyNN.nest maps it):
    each spike transmitted with probability p (NEST's p_transmit), per connection."""
    __doc__ = synapses.SimpleStochasticSynapse.__doc__
    translations = build_translations(
        ('weight', 'weight'),
        ('delay', 'delay'),
        ('p', 'p_transmit'),
    )

    def _get_minimum_delay(self):
        return state.min_delay


class MultiQuantalSynapse(synapses.MultiQuantalSynapse):
    """PyNN's quantal release on rv.QuantalSTP (NEST's quantal_stp_synapse, as pyNN.nest maps
    it): U, n, tau_rec and tau_facil per connection; each synapse starts with one site available
    and u = 0.5 (NEST's a and u, which pyNN.nest leaves as they are)."""
    __doc__ = synapses.MultiQuantalSynapse.__doc__
    translations = build_translations(
        ('weight', 'weight'),
        ('delay', 'delay'),
        ('U', 'U'),
        ('n', 'n'),
        ('tau_rec', 'tau_rec_ms'),
        ('tau_facil', 'tau_fac_ms'),
    )

    def _get_minimum_delay(self):
        return state.min_delay


class SpikePairRule(synapses.SpikePairRule):
    __doc__ = synapses.SpikePairRule.__doc__
    translations = build_translations(
        ('tau_plus', 'tau_plus_ms'),
        ('tau_minus', 'tau_minus_ms'),            # the post-synaptic population's trace
        ('A_plus', 'lambda_'),
        ('A_minus', 'alpha', _alpha_forwards, _alpha_reverse),
    )
    possible_models = {"stdp"}


class Vogels2011Rule(synapses.Vogels2011Rule):
    """Vogels et al. (2011)'s inhibitory STDP on rv.VogelsSprekeler (NEST's vogels_sprekeler_synapse):
    NEST's alpha = 2 rho tau (rho the target rate, Hz; tau in s); eta in PyNN's weight units
    (nA or uS), scaled with the weights; the target's trace keeps its own tau_minus (20 ms, as a
    NEST neuron's). w_max from the weight dependence (AdditiveWeightDependence)."""
    __doc__ = synapses.Vogels2011Rule.__doc__
    translations = build_translations(
        ('tau', 'tau_ms'),
        ('eta', 'eta'),
        ('rho', 'alpha', "2*rho*tau/1000.0", "alpha*1000.0/(2*tau_ms)"),
    )
    possible_models = {"stdp"}


def _zero_w_min(w_min) -> None:
    """The weight dependences' one bound: NEST's stdp_synapse has no lower bound but 0."""
    if w_min != 0:
        raise ValueError("pyNN.ranvier: w_min must be 0 (NEST's stdp_synapse has no lower bound but 0)")


class AdditiveWeightDependence(synapses.AdditiveWeightDependence):
    __doc__ = synapses.AdditiveWeightDependence.__doc__
    translations = build_translations(('w_max', 'w_max'), ('w_min', 'w_min'))
    possible_models = {"stdp"}
    mu = (0.0, 0.0)                               # NEST's mu_plus, mu_minus

    def __init__(self, w_min=0.0, w_max=1.0):
        _zero_w_min(w_min)
        super().__init__(w_min, w_max)


class MultiplicativeWeightDependence(synapses.MultiplicativeWeightDependence):
    __doc__ = synapses.MultiplicativeWeightDependence.__doc__
    translations = build_translations(('w_max', 'w_max'), ('w_min', 'w_min'))
    possible_models = {"stdp"}
    mu = (1.0, 1.0)

    def __init__(self, w_min=0.0, w_max=1.0):
        _zero_w_min(w_min)
        super().__init__(w_min, w_max)


class AdditivePotentiationMultiplicativeDepression(synapses.AdditivePotentiationMultiplicativeDepression):
    __doc__ = synapses.AdditivePotentiationMultiplicativeDepression.__doc__
    translations = build_translations(('w_max', 'w_max'), ('w_min', 'w_min'))
    possible_models = {"stdp"}
    mu = (0.0, 1.0)

    def __init__(self, w_min=0.0, w_max=1.0):
        _zero_w_min(w_min)
        super().__init__(w_min, w_max)


class GutigWeightDependence(synapses.GutigWeightDependence):
    """Gütig's weight dependence on NEST's stdp_synapse (mu_plus, mu_minus), per projection.
    (pyNN.nest 0.13 passes only w_min and w_max on to PyNN, so NEST runs it with mu_plus =
    mu_minus = 0.5 whatever the script gives; Ranvier takes the script's.)"""
    __doc__ = synapses.GutigWeightDependence.__doc__
    translations = build_translations(('w_max', 'w_max'), ('w_min', 'w_min'), ('mu_plus', 'mu_plus'),
                                      ('mu_minus', 'mu_minus'))
    possible_models = {"stdp"}

    def __init__(self, w_min=0.0, w_max=1.0, mu_plus=0.5, mu_minus=0.5):
        _zero_w_min(w_min)
        super().__init__(w_min, w_max, mu_plus, mu_minus)


# -- current sources ---------------------------------------------------------------------------
class _CurrentSource:
    """A PyNN current source: its native parameters kept here (amplitudes in pA); inject_into
    names the cells, which get a Ranvier current source each at the first run."""

    def __init__(self, **parameters):
        super().__init__(**parameters)
        self.set_native_parameters(self.translate(self.parameter_space))

    def set_native_parameters(self, parameters):
        import numpy as np
        parameters.shape = (1,)
        parameters.evaluate(simplify=True)
        store = self.__dict__.setdefault("_store", {})
        for key, value in parameters.items():
            value = getattr(value, "value", value)                  # a Sequence
            if isinstance(value, np.ndarray) and value.dtype == object:
                value = getattr(value.flat[0], "value", value.flat[0])
            store[key] = value
        self._check()
        state.update_current(self)

    def get_native_parameters(self):
        from pyNN.parameters import ParameterSpace
        return ParameterSpace(dict(self._store))

    def _check(self):
        pass

    def inject_into(self, cells):
        from pyNN.common import Assembly, Population, PopulationView
        state.check_not_built("injecting a current")
        if isinstance(cells, (Population, PopulationView, Assembly)):
            ids = [int(i) for i in cells.all_cells]
        else:
            ids = sorted(int(i) for i in cells)
        for i in ids:
            if not state.celltype_of(i).injectable:
                raise TypeError("Can't inject current into a spike source.")
        state.currents.append((self, ids))

    def ranvier_sources(self, target: str, neurons: list):
        raise NotImplementedError

    def _native(self) -> dict:
        return dict(self._store)

    # -- recording the injected current (PyNN's source.record() and source.get_data()) -----------
    def record(self):
        """Records the current this source injects, from the next step run on: at every step,
        the current the engine puts into the step that starts then (Simulation.current_values:
        the same for every target, or for a noisy source the average over its targets)."""
        if self not in state.recorded_currents:
            state.recorded_currents.append(self)
            sim = state.running_simulation()
            first = sim.steps_done if sim is not None else 0
            self.__dict__["_trace"] = {"first_step": first, "values": [], "next": 0.0}
            if sim is not None:                   # after a run: the trace starts with the step now
                self._record_run(sim, first, 0)

    def _record_run(self, sim, first_step: int, n_steps: int) -> None:
        """The values of steps first_step .. first_step + n_steps - 1 appended, and the one of the
        step after them kept as the trace's last point."""
        import numpy as np
        entries = state.current_index.get(id(self), [])
        if not entries:
            return
        from ranvier.core.devices import NoiseCurrent
        total, weight = np.zeros(n_steps + 1), 0
        for index, _, neurons in entries:
            values = sim.current_values(index, first_step, n_steps + 1)
            if not isinstance(sim.network.currents[index], NoiseCurrent):
                total, weight = values, 1
                break
            total, weight = total + values * len(neurons), weight + len(neurons)
        values = total / weight
        self._trace["values"].append(values[:-1])
        self._trace["next"] = float(values[-1])

    def _get_data(self):
        """(times in ms, currents in nA): one point a step from when record() was called, the
        last at the current time (the current of the step that starts then)."""
        import numpy as np
        trace = self.__dict__.get("_trace")
        if trace is None:
            raise ValueError(f"{type(self).__name__}: get_data() needs record() before the run")
        if state.running and not getattr(state, "current_index", {}).get(id(self)):
            raise ValueError(f"{type(self).__name__}: get_data() needs the source injected into cells "
                             f"(inject_into) before the run")
        values = np.concatenate(trace["values"] + [np.array([trace["next"]])])
        times = (trace["first_step"] + np.arange(values.size)) * state.dt
        return times, values / 1000.0


class DCSource(_CurrentSource, electrodes.DCSource):
    __doc__ = electrodes.DCSource.__doc__
    translations = build_translations(('amplitude', 'amplitude', 1000.0), ('start', 'start'), ('stop', 'stop'))

    def ranvier_sources(self, target, neurons):
        import ranvier as rv
        p = self._native()
        start, stop = state.on_grid(p["start"]), state.on_grid(p["stop"])
        return [rv.DCCurrent(target, float(p["amplitude"]), start_ms=start, stop_ms=stop if stop < 1e11 else None,
                             neurons=neurons)]


class ACSource(_CurrentSource, electrodes.ACSource):
    """PyNN's ACSource on rv.ACCurrent (NEST's ac_generator): offset + amplitude
    sin(2 pi frequency (t - start) / 1000 + phase) in the step that starts at t, start <= t <
    stop; the phase holds at the start, as PyNN asks of every backend (pyNN.nest shifts
    ac_generator's phase by the start likewise)."""
    translations = build_translations(('amplitude', 'amplitude', 1000.0), ('start', 'start'), ('stop', 'stop'),
                                      ('frequency', 'frequency'), ('offset', 'offset', 1000.0), ('phase', 'phase'))

    def ranvier_sources(self, target, neurons):
        import ranvier as rv
        p = self._native()
        start, stop, freq = state.on_grid(p["start"]), state.on_grid(p["stop"]), float(p["frequency"])
        return [rv.ACCurrent(target, float(p["amplitude"]), freq, phase_deg=float(p["phase"]) - 360.0 * freq * start
                             / 1000.0, offset_pA=float(p["offset"]), start_ms=start,
                             stop_ms=stop if stop < 1e11 else None, neurons=neurons)]


class StepCurrentSource(_CurrentSource, electrodes.StepCurrentSource):
    __doc__ = electrodes.StepCurrentSource.__doc__
    translations = build_translations(('amplitudes', 'amplitudes', 1000.0), ('times', 'times'))

    def _check(self):
        """PyNN's rules: times >= 0 and increasing; each mapped to the nearest step, of two times
        on one step the later amplitude kept."""
        import numpy as np
        times = np.asarray(self._store.get("times", []), dtype=float).ravel()
        amps = np.asarray(self._store.get("amplitudes", []), dtype=float).ravel()
        if times.size and times.min() < 0:
            raise ValueError("Step current cannot accept negative timestamps.")
        if times.size > 1 and np.min(np.diff(times)) <= 0:
            raise ValueError("Step current timestamps should be monotonically increasing.")
        steps = np.rint(times / state.dt)
        last = np.append(steps[1:] != steps[:-1], True) if steps.size else np.zeros(0, bool)
        self._store["times"], self._store["amplitudes"] = steps[last] * state.dt, amps[last]

    def ranvier_sources(self, target, neurons):
        import numpy as np

        import ranvier as rv
        p = self._native()
        times = [state.on_grid(t) for t in np.asarray(p["times"], dtype=float).ravel()]
        amps = np.asarray(p["amplitudes"], dtype=float).ravel().tolist()
        if not times:
            return []
        return [rv.StepCurrent(target, times, amps, neurons=neurons)]


class NoisyCurrentSource(_CurrentSource, electrodes.NoisyCurrentSource):
    __doc__ = electrodes.NoisyCurrentSource.__doc__
    translations = build_translations(('mean', 'mean', 1000.0), ('stdev', 'stdev', 1000.0), ('dt', 'dt'),
                                      ('start', 'start'), ('stop', 'stop'))

    def ranvier_sources(self, target, neurons):
        import ranvier as rv
        p = self._native()
        dt = float(p["dt"]) if p["dt"] else state.dt
        stop = float(p["stop"])
        return [rv.NoiseCurrent(target, float(p["mean"]), float(p["stdev"]), dt, start_ms=state.on_grid(p["start"]),
                                stop_ms=state.on_grid(stop) if stop < 1e11 else None, neurons=neurons)]
