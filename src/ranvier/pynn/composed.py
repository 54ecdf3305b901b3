"""PyNN's composed cell types (`PointNeuron` of a neuron component and named post-synaptic
receptors) on Ranvier's models with receptors, as pyNN.nest maps them onto NEST's multisynapse
models:

- `LIF` with `CurrExpPostSynapticResponse` receptors -> iaf_psc_exp_multisynapse;
- `AdExp` with `CondAlphaPostSynapticResponse` (`AlphaPSR`) receptors -> aeif_cond_alpha_multisynapse;
- `AdExp` with `CondBetaPostSynapticResponse` (`BetaPSR`) receptors -> aeif_cond_beta_multisynapse.

The receptors are numbered in the order of their sorted names (pyNN.nest's receptor ports 1..R);
a projection's `receptor_type` names one. Each receptor's parameters are the population's (one
value per receptor); its synaptic variable is recordable as "<name>.isyn" or "<name>.gsyn".
Other combinations (`CondExpPostSynapticResponse`, mixed kinds) are refused by name, as pyNN.nest refuses a combination NEST has no model for.
"""
from __future__ import annotations

from collections import defaultdict

from pyNN import errors
from pyNN.parameters import ArrayParameter, LazyArray
from pyNN.standardmodels import build_translations, cells, receptors

from ranvier.core.neurons import AeifCondAlphaMultisynapse, AeifCondBetaMultisynapse, IafPscExpMultisynapse

from .standardmodels import EIF_cond_exp_isfa_ista

# The state recorder's name of receptor r's synaptic variable (1-based).
RECEPTOR_STATE = {1: "c", 2: "c_in"}


def receptor_state(r: int) -> str:
    return RECEPTOR_STATE.get(r, f"c{r}")


class LIF(cells.LIF):
    __doc__ = cells.LIF.__doc__
    translations = build_translations(          # as pyNN.nest's onto iaf_psc_exp_multisynapse
        ('v_rest', 'E_L_mV'),
        ('v_reset', 'V_reset_mV'),
        ('cm', 'C_m_pF', 1000.0),               # nF -> pF
        ('tau_m', 'tau_m_ms'),
        ('tau_refrac', 'tau_arp_ms'),
        ('v_thresh', 'V_th_mV'),
        ('i_offset', 'I_e_pA', 1000.0),         # nA -> pA
    )
    variable_map = {'v': 'V'}
    scale_factors = {'v': 1.0}
    composed_models = {"CurrExpPostSynapticResponse": IafPscExpMultisynapse.name}


class AdExp(cells.AdExp):
    __doc__ = cells.AdExp.__doc__
    # EIF_cond_exp_isfa_ista's membrane and adaptation (pyNN.nest's AdExp onto
    # aeif_cond_alpha_multisynapse): the synaptic parameters are the receptors'
    translations = {k: v for k, v in EIF_cond_exp_isfa_ista.translations.items()
                    if k not in ("e_rev_E", "tau_syn_E", "e_rev_I", "tau_syn_I")}
    variable_map = {'v': 'V', 'w': 'w'}
    scale_factors = {'v': 1.0, 'w': 0.001}      # pA -> nA
    composed_models = {"CondAlphaPostSynapticResponse": AeifCondAlphaMultisynapse.name,
                       "CondBetaPostSynapticResponse": AeifCondBetaMultisynapse.name}


class CurrExpPostSynapticResponse(receptors.CurrExpPostSynapticResponse):
    __doc__ = receptors.CurrExpPostSynapticResponse.__doc__
    translations = build_translations(('locations', 'locations'), ('tau_syn', 'tau_syn_ms'))
    recordable = ["isyn"]
    scale_factors = {"isyn": 0.001}             # pA -> nA


class CondExpPostSynapticResponse(receptors.CondExpPostSynapticResponse):
    __doc__ = receptors.CondExpPostSynapticResponse.__doc__
    translations = build_translations(('locations', 'locations'), ('e_syn', 'E_rev_mV'), ('tau_syn', 'tau_syn_ms'))
    recordable = ["gsyn"]
    scale_factors = {"gsyn": 0.001}             # nS -> uS


class CondAlphaPostSynapticResponse(receptors.CondAlphaPostSynapticResponse):
    __doc__ = receptors.CondAlphaPostSynapticResponse.__doc__
    translations = build_translations(('locations', 'locations'), ('e_syn', 'E_rev_mV'), ('tau_syn', 'tau_syn_ms'))
    recordable = ["gsyn"]
    scale_factors = {"gsyn": 0.001}             # nS -> uS


class CondBetaPostSynapticResponse(receptors.CondBetaPostSynapticResponse):
    __doc__ = receptors.CondBetaPostSynapticResponse.__doc__
    translations = build_translations(('locations', 'locations'), ('e_syn', 'E_rev_mV'),
                                      ('tau_rise', 'tau_rise_ms'), ('tau_decay', 'tau_decay_ms'))
    recordable = ["gsyn"]
    scale_factors = {"gsyn": 0.001}


ExpPSR = CondExpPostSynapticResponse
AlphaPSR = CondAlphaPostSynapticResponse
BetaPSR = CondBetaPostSynapticResponse


class PointNeuron(cells.PointNeuron):
    __doc__ = cells.PointNeuron.__doc__

    @property
    def ranvier_model(self) -> str:
        kinds = sorted({type(psr).__name__ for psr in self.post_synaptic_receptors.values()})
        models = getattr(self.neuron, "composed_models", {})
        if len(kinds) != 1 or kinds[0] not in models:
            available = ", ".join(f"{type(n).__name__} with {k}" for n in (LIF(), AdExp())
                                  for k in n.composed_models)
            raise errors.NoModelAvailableError(
                f"pyNN.ranvier: PointNeuron of {type(self.neuron).__name__} with {' and '.join(kinds) or 'no receptors'} "
                f"has no Ranvier model (as pyNN.nest, one with a NEST multisynapse model); available: {available}")
        return models[kinds[0]]

    def get_receptor_type(self, name: str) -> int:
        """The receptor's number, 1..R (rv.Projection's receptor; pyNN.nest's port)."""
        return self.receptor_types.index(name) + 1

    @property
    def receptor_numbers(self) -> dict:
        """The receptors by name -> their number 1..R (as a NESTML cell type with several ports)."""
        return {name: self.get_receptor_type(name) for name in self.receptor_types}

    @property
    def variable_map(self) -> dict:
        out = dict(self.neuron.variable_map)
        for name, psr in self.post_synaptic_receptors.items():
            for variable in psr.recordable:
                out[f"{name}.{variable}"] = receptor_state(self.get_receptor_type(name))
        return out

    @property
    def native_parameters(self):
        """The neuron's native parameters and one list per receptor parameter, in the receptors'
        order (Ranvier's model takes them so; one value per receptor, the same for every cell)."""
        translated = self.neuron.native_parameters
        lists = defaultdict(list)
        for name in self.receptor_types:
            for key, value in self.post_synaptic_receptors[name].native_parameters.items():
                if key == "locations":          # a point neuron's receptors have no place
                    continue
                if not value.is_homogeneous:
                    raise errors.InvalidParameterValueError(
                        f"pyNN.ranvier: PointNeuron receptor '{name}': '{key}' must be one value for every cell "
                        f"(Ranvier's {self.ranvier_model} takes one per receptor)")
                value.shape = (1,)
                lists[key].append(float(value.evaluate(simplify=False)[0]))
        for key, values in lists.items():
            translated[key] = LazyArray(ArrayParameter(values), dtype=ArrayParameter)
        return translated

    def receptor_parameter(self, name: str, native_value):
        """A receptor's parameter by PyNN's name ("GABAA.e_syn"): its entry in the population's
        list (native_value(native name) gives the lists, one per cell), in PyNN's units."""
        receptor, parameter = name.split(".", 1)
        if receptor not in self.post_synaptic_receptors:
            raise errors.NonExistentParameterError(name, type(self).__name__, self.get_parameter_names())
        psr = self.post_synaptic_receptors[receptor]
        if parameter not in psr.translations:
            raise errors.NonExistentParameterError(name, type(self).__name__, self.get_parameter_names())
        translation = psr.translations[parameter]
        cells = native_value(translation["translated_name"])
        first = cells.flat[0] if hasattr(cells, "flat") else cells
        values = first.value if isinstance(first, ArrayParameter) else first
        value = float(list(values)[self.receptor_types.index(receptor)])
        return eval(translation["reverse_transform"], {}, {translation["translated_name"]: value})

    def get_native_names(self, *names):
        return self.neuron.get_native_names(*[n for n in names if "." not in n]) + \
            [n for n in names if "." in n]

    def reverse_translate(self, native_parameters):
        return self.neuron.reverse_translate(native_parameters)


COMPOSED = ["LIF", "AdExp", "PointNeuron", "CurrExpPostSynapticResponse", "CondExpPostSynapticResponse",
            "CondAlphaPostSynapticResponse", "CondBetaPostSynapticResponse", "ExpPSR", "AlphaPSR", "BetaPSR"]
