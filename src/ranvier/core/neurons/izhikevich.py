"""izhikevich: Izhikevich's simple spiking model, as NEST's izhikevich (cpp/neurons/izhikevich.cpp)."""
from __future__ import annotations

from ...errors import ConfigError
from .base import NeuronModel, Parameter, check_number


class Izhikevich(NeuronModel):
    """Izhikevich's simple model (Izhikevich 2003; NEST's izhikevich, PyNN's Izhikevich):
    dV/dt = 0.04 V^2 + 5 V + 140 - U + I_e + I, dU/dt = a (b V - U); where V reaches V_th_mV,
    V = c_mV and U += d_mV_per_ms. V in mV, absolute (the model has no resting potential: the engine, and
    what it records, hold V itself); U and the currents in the units of dV/dt (NEST's I_e in "pA"
    is added to dV/dt as is). Input jumps V (mV). Integrated per step as NEST does: forward Euler
    (consistent_integration 1, NEST's default) or the published scheme (0). Initial state: V0_mV
    and U0_mV_per_ms (NEST's -65 mV and b V0 = -13), or V per neuron through Population.initial.
    a, b, c_mV, d_mV_per_ms, I_e_pA and U0_mV_per_ms may vary per neuron."""
    name = "izhikevich"
    takes_current = True
    input_unit = "mV"
    has_potential = True
    initial_states = ("reset",)        # "reset": V0_mV, U0_mV_per_ms
    recordables = {"c": ("U_m", "mV/ms", "recovery variable U")}
    pynn_weight_scale = 1.0            # PyNN's weight is the jump of V in mV, as pyNN.nest gives izhikevich
    nest_model = "izhikevich"
    nest_parameters = {"a": "a", "b": "b", "c": "c_mV", "d": "d_mV_per_ms", "I_e": "I_e_pA", "V_th": "V_th_mV",
                       "V_min": "V_min_mV", "V_m": "V0_mV", "U_m": "U0_mV_per_ms"}
    parameters = {
        "a": Parameter("", "time scale of the recovery variable U (1/ms)", 0.02, per_neuron=True),
        "b": Parameter("", "sensitivity of U to V", 0.2, per_neuron=True),
        "c_mV": Parameter("mV", "reset of V after a spike (absolute)", -65.0, per_neuron=True),
        "d_mV_per_ms": Parameter("mV/ms", "increment of U at a spike", 8.0, per_neuron=True),
        "I_e_pA": Parameter("pA", "constant input current, added to dV/dt as NEST's I_e", 0.0, per_neuron=True),
        "V_th_mV": Parameter("mV", "spike threshold (absolute)", 30.0),
        "V_min_mV": Parameter("mV", "lower bound of V (absolute)", -1.7976931348623157e308),
        "consistent_integration": Parameter("", "1: forward Euler (NEST's default); 0: the published scheme", 1.0),
        "V0_mV": Parameter("mV", "initial V (absolute)", -65.0),
        "U0_mV_per_ms": Parameter("mV/ms", "initial U", -13.0, per_neuron=True),
    }

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("a", "b", "c_mV", "d_mV_per_ms", "I_e_pA", "V_th_mV", "V_min_mV", "V0_mV", "U0_mV_per_ms"):
            check_number(where, key, q[key])
        if q["consistent_integration"] not in (0, 1, 0.0, 1.0, True, False):
            raise ConfigError(f"{where}: 'consistent_integration' must be 1 (forward Euler) or 0 (the published "
                              f"scheme), got {q['consistent_integration']!r}")
        if not float(q["V_min_mV"]) < float(q["V_th_mV"]):
            raise ConfigError(f"{where}: 'V_min_mV' = {q['V_min_mV']:g} must lie below 'V_th_mV' = {q['V_th_mV']:g}")

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec(pop)
        q = dict(pop.params)
        q["consistent_integration"] = float(bool(q["consistent_integration"]))
        cls._per_neuron_spec(pop, s, q)     # every parameter by name; the arrays and draws of those that vary
        return s
