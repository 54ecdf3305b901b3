"""native_cell_type: one of Ranvier's own neuron models as a PyNN cell type, as pyNN.nest's
native_cell_type gives a NEST model. Parameters go by the model's own names and units
(docs/neuron-models.md: `E_L_mV`, `C_m_pF`, ...), with its defaults; `V_m` (mV, as the model's
potential parameters: absolute where the model has `E_L_mV`, else its own scale) and the model's
other state variables (NEST's names: `I_syn`, `g_ex`, ...) are recordable; `initialize(V_m=...)`
sets the initial potential. Without it the model starts as it does in Ranvier (V0_mean_mV and
V0_sd_mV where it has them).
"""
from __future__ import annotations

from pyNN import errors
from pyNN.standardmodels import StandardCellType, build_translations

from ranvier.core.neurons import NEURON_MODELS

POTENTIAL = "V_m"


def native_cell_type(model_name: str) -> type:
    """A cell type class for Ranvier's neuron model `model_name` (ranvier.core.neurons)."""
    model = NEURON_MODELS.get(model_name) if isinstance(model_name, str) else None
    neurons = sorted(name for name, m in NEURON_MODELS.items() if m.has_potential)
    if model is None or not model.has_potential:
        raise errors.NoModelAvailableError(
            f"pyNN.ranvier: native_cell_type({model_name!r}): not one of Ranvier's neuron models {neurons} (spike "
            f"sources are PyNN's SpikeSourceArray, SpikeSourcePoisson, SpikeSourceGamma, ...)")
    defaults = {name: p.default for name, p in model.parameters.items()}
    recordables = {nest_name: (key, unit) for key, (nest_name, unit, _) in model.recordables.items()}
    return type(model_name, (StandardCellType,), {
        "__doc__": model.__doc__,
        "ranvier_model": model.name,
        "native": True,                    # parameters and V_m as the model takes them (pynn/build.py)
        "default_parameters": defaults,
        "translations": build_translations(*[(name, name) for name in defaults]),
        # the model's own initial state unless initialize(V_m=...); its other variables start at 0
        "default_initial_values": {name: 0.0 for name in recordables},
        "recordable": ["spikes", POTENTIAL, *recordables],
        "units": {POTENTIAL: "mV", **{name: unit for name, (_, unit) in recordables.items()}},
        "variable_map": {POTENTIAL: "V", **{name: key for name, (key, _) in recordables.items()}},
        "scale_factors": {POTENTIAL: 1.0, **{name: 1.0 for name in recordables}},
        # the engine holds V - E_L where the model has a resting potential (pynn/recording.py)
        "absolute_v": "E_L_mV" not in model.parameters,
        "receptor_types": ("excitatory", "inhibitory"),
        "conductance_based": model.input_unit == "nS",
        "injectable": bool(getattr(model, "takes_current", False)),
    })
