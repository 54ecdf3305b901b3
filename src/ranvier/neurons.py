"""Neuron models, one class each: parameters, checks, known rate, and the engine's PopulationSpec.

A population names its model (`Population(..., model="psc_exp")`); `NEURON_MODELS` maps that name
to the class here that knows everything model-specific on the Python side:

- `parameters`: name -> Parameter(unit, description, default). A parameter with a default may be
  left out of a population's params; every other one must be given, and no other is accepted.
- `check(pop, where)`: the checks of the values alone (run when the population is added).
- `check_resolution(pop, resolution_ms)`: the checks that need the time grid (run when a
  Simulation is made, before anything is built).
- `known_rate_hz(params)`: the rate the model fires at by construction, or None where the rate
  depends on the dynamics (the memory check of recorded spikes then assumes one).
- `to_engine(pop, resolution_ms)`: an `_engine.PopulationSpec` with the model's fields set (the
  fields every population has, name, first id, size and area, are set by ranvier.spec).

Adding a model on the Python side is one class here and one line in NEURON_MODELS
(docs/neuron-models.md walks through it, C++ kernel included).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .checks import finite_number, positive, whole_steps
from .errors import ConfigError

INITIAL_STATES = ("reset", "uniform")     # lifca: V = H, c = 0; or V ~ U[H, theta)


@dataclass(frozen=True)
class Parameter:
    unit: str                      # "" for dimensionless
    description: str
    default: float | None = None   # None: the population must set it


class NeuronModel:
    """The interface of a neuron model (see the module's docstring). Not a model itself."""
    name: ClassVar[str]
    parameters: ClassVar[dict[str, Parameter]]
    input_unit: ClassVar[str | None] = "mV"   # unit of synaptic weights into it; None: input ignored

    @classmethod
    def defaults(cls) -> dict:
        return {k: p.default for k, p in cls.parameters.items() if p.default is not None}

    @classmethod
    def check(cls, pop, where: str) -> None:
        """Checks of the parameter values; every parameter is present (Population.validate)."""

    @classmethod
    def check_resolution(cls, pop, resolution_ms: float) -> None:
        """Checks that need the time grid: periods and intervals in whole steps."""

    @classmethod
    def known_rate_hz(cls, params: dict) -> float | None:
        return None

    @classmethod
    def placement_rate_hz(cls, params: dict, default_hz: float) -> float:
        """The rate the area placement's cost model assumes (ranvier.placement.area_costs)."""
        rate = cls.known_rate_hz(params)
        return default_hz if rate is None else rate

    @classmethod
    def to_engine(cls, pop, resolution_ms: float):
        raise NotImplementedError

    @classmethod
    def _spec(cls):
        from . import _engine          # loaded on first use: importing a model loads no engine
        s = _engine.PopulationSpec()
        s.model = cls.name             # the engine's model of the same name (cpp/neurons/registry.cpp)
        return s


class Lifca(NeuronModel):
    """LIF neuron with spike-frequency adaptation (the DPSNN benchmark's): V relative to rest,
    dV/dt = -V / tau_m - g_c c + dc, c decays with tau_c and jumps by alpha_c at each spike; input
    jumps V (mV). Population.initial: "reset" (V = H, c = 0) or "uniform" (V ~ U[H, theta))."""
    name = "lifca"
    parameters = {
        "tau_m_ms": Parameter("ms", "membrane time constant"),
        "theta_mV": Parameter("mV", "firing threshold"),
        "reset_mV": Parameter("mV", "reset potential H (V is held here while refractory)"),
        "tau_arp_ms": Parameter("ms", "absolute refractory period"),
        "alpha_c": Parameter("", "increment of the adaptation variable c at each spike"),
        "tau_c_ms": Parameter("ms", "time constant of c"),
        "g_c_mV_per_ms": Parameter("mV/ms", "strength of adaptation (dV/dt gets -g_c * c)"),
        "dc_mV_per_ms": Parameter("mV/ms", "constant drive added to dV/dt", 0.0),
    }

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("tau_m_ms", "tau_c_ms"):
            positive(where, key, q[key])
        for key in ("tau_arp_ms", "alpha_c", "g_c_mV_per_ms"):
            positive(where, key, q[key], allow_zero=True)
        if float(q["reset_mV"]) >= float(q["theta_mV"]):
            raise ConfigError(f"{where}: 'reset_mV' ({q['reset_mV']}) must be below 'theta_mV' ({q['theta_mV']})")
        if pop.initial not in INITIAL_STATES:
            raise ConfigError(f"{where}: 'initial' must be one of {INITIAL_STATES}, got {pop.initial!r}")

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        whole_steps(f"population '{pop.name}'", "tau_arp_ms", pop.params["tau_arp_ms"], pop.origin, resolution_ms)

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        q, s = pop.params, cls._spec()
        s.tau_m_ms, s.theta_mV, s.reset_mV = q["tau_m_ms"], q["theta_mV"], q["reset_mV"]
        s.refractory_steps = round(q["tau_arp_ms"] / resolution_ms)
        s.alpha_c, s.tau_c_ms = q["alpha_c"], q["tau_c_ms"]
        s.g_c, s.dc = q["g_c_mV_per_ms"], q["dc_mV_per_ms"]
        s.initial_uniform = pop.initial == "uniform"
        return s


class PscExp(NeuronModel):
    """Leaky integrate-and-fire with exponential post-synaptic currents (NEST's iaf_psc_exp),
    integrated exactly on the time grid: synaptic input (pA) jumps the current I, which decays
    with tau_syn_ms. Absolute potentials here (relative to E_L in the engine); the initial V is
    drawn from N(V0_mean_mV, V0_sd_mV) per neuron. Defaults: NEST's (V starts at E_L)."""
    name = "psc_exp"
    input_unit = "pA"
    parameters = {
        "E_L_mV": Parameter("mV", "resting potential", -70.0),
        "V_th_mV": Parameter("mV", "firing threshold", -55.0),
        "V_reset_mV": Parameter("mV", "reset potential (V is held here while refractory)", -70.0),
        "C_m_pF": Parameter("pF", "membrane capacitance", 250.0),
        "tau_m_ms": Parameter("ms", "membrane time constant", 10.0),
        "tau_syn_ms": Parameter("ms", "time constant of the synaptic current (excitatory and inhibitory)", 2.0),
        "tau_arp_ms": Parameter("ms", "absolute refractory period", 2.0),
        "I_e_pA": Parameter("pA", "constant input current", 0.0),
        "V0_mean_mV": Parameter("mV", "mean of the initial membrane potential", -70.0),
        "V0_sd_mV": Parameter("mV", "standard deviation of the initial membrane potential", 0.0),
    }
    time_constants = ("tau_syn_ms",)

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("C_m_pF", "tau_m_ms", *cls.time_constants):
            positive(where, key, q[key])
        for key in ("tau_arp_ms", "V0_sd_mV"):
            positive(where, key, q[key], allow_zero=True)
        for key in ("E_L_mV", "V_th_mV", "V_reset_mV", "I_e_pA", "V0_mean_mV"):
            finite_number(where, key, q[key])
        if float(q["V_reset_mV"]) >= float(q["V_th_mV"]):
            raise ConfigError(f"{where}: 'V_reset_mV' ({q['V_reset_mV']}) must be below "
                              f"'V_th_mV' ({q['V_th_mV']})")

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        whole_steps(f"population '{pop.name}'", "tau_arp_ms", pop.params["tau_arp_ms"], pop.origin, resolution_ms)

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        q, s = pop.params, cls._spec()      # potentials relative to rest in the engine
        s.tau_m_ms, s.tau_syn_ms, s.c_m_pF, s.i_e_pA = q["tau_m_ms"], q["tau_syn_ms"], q["C_m_pF"], q["I_e_pA"]
        s.theta_mV, s.reset_mV = q["V_th_mV"] - q["E_L_mV"], q["V_reset_mV"] - q["E_L_mV"]
        s.refractory_steps = round(q["tau_arp_ms"] / resolution_ms)
        s.initial_normal = True
        s.v0_mean_mV, s.v0_sd_mV = q["V0_mean_mV"] - q["E_L_mV"], q["V0_sd_mV"]
        return s


class IgnoreAndFire(NeuronModel):
    """Ignore-and-fire (the multi-area benchmark): fires at a fixed rate with a phase drawn per
    neuron at build time; receives and buffers input like any neuron but ignores it, so its
    traffic is fixed by design. The period is rounded to whole steps."""
    name = "ignore_and_fire"
    input_unit = None
    parameters = {
        "rate_hz": Parameter("Hz", "firing rate (the period 1000 / rate_hz ms is rounded to whole steps)"),
    }

    @classmethod
    def check(cls, pop, where):
        positive(where, "rate_hz", pop.params["rate_hz"])

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        period = 1000.0 / float(pop.params["rate_hz"]) / resolution_ms
        if round(period) < 1:
            raise ConfigError(f"population '{pop.name}': 'rate_hz' = {pop.params['rate_hz']} gives a period "
                              f"below one step of {resolution_ms} ms")

    @classmethod
    def known_rate_hz(cls, params):
        return float(params["rate_hz"])

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec()                 # an artificial cell with one fixed interval
        s.isi_min_steps = s.isi_max_steps = max(1, round(1000.0 / pop.params["rate_hz"] / resolution_ms))
        return s


class Artificial(NeuronModel):
    """Artificial cells (the spike-exchange benchmark): no membrane, input ignored; each fires after
    intervals drawn uniformly from [isi_min_ms, isi_max_ms], the first spike at a uniform phase in
    [0, isi_max_ms)."""
    name = "artificial"
    input_unit = None
    parameters = {
        "isi_min_ms": Parameter("ms", "shortest interval between two spikes of a cell"),
        "isi_max_ms": Parameter("ms", "longest interval between two spikes of a cell"),
    }

    @classmethod
    def check(cls, pop, where):
        lo = positive(where, "isi_min_ms", pop.params["isi_min_ms"])
        hi = positive(where, "isi_max_ms", pop.params["isi_max_ms"])
        if hi < lo:
            raise ConfigError(f"{where}: 'isi_max_ms' ({hi}) must not be below 'isi_min_ms' ({lo})")

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        for key in cls.parameters:
            whole_steps(f"population '{pop.name}'", key, pop.params[key], pop.origin, resolution_ms, minimum=1)

    @classmethod
    def known_rate_hz(cls, params):
        return 2000.0 / (float(params["isi_min_ms"]) + float(params["isi_max_ms"]))

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec()
        s.isi_min_steps = round(pop.params["isi_min_ms"] / resolution_ms)
        s.isi_max_steps = round(pop.params["isi_max_ms"] / resolution_ms)
        return s


class PoissonSource(NeuronModel):
    """Poisson sources (thalamic input): fire as independent Poisson processes at rate_hz during
    [start_ms, stop_ms), silent otherwise; input is ignored."""
    name = "poisson_source"
    input_unit = None
    parameters = {
        "rate_hz": Parameter("Hz", "firing rate inside the window"),
        "start_ms": Parameter("ms", "start of the firing window", 0.0),
        "stop_ms": Parameter("ms", "end of the firing window"),
    }

    @classmethod
    def check(cls, pop, where):
        positive(where, "rate_hz", pop.params["rate_hz"], allow_zero=True)
        start = positive(where, "start_ms", pop.params["start_ms"], allow_zero=True)
        stop = positive(where, "stop_ms", pop.params["stop_ms"], allow_zero=True)
        if stop < start:
            raise ConfigError(f"{where}: 'stop_ms' ({stop}) must not be below 'start_ms' ({start})")

    @classmethod
    def known_rate_hz(cls, params):
        return float(params["rate_hz"])         # inside the window: an upper bound over any run

    @classmethod
    def placement_rate_hz(cls, params, default_hz):
        return 0.0                              # the area placement's cost model counts no source events

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        q, s = pop.params, cls._spec()
        s.source_rate_hz = q["rate_hz"]
        s.start_step, s.stop_step = round(q["start_ms"] / resolution_ms), round(q["stop_ms"] / resolution_ms)
        return s


class IafPscAlpha(PscExp):
    """Leaky integrate-and-fire with alpha-shaped post-synaptic currents (NEST's iaf_psc_alpha),
    integrated exactly on the time grid in NEST's order: a spike of weight w (pA) gives the current
    w e / tau t exp(-t / tau); positive weights excite with tau_syn_ex_ms, negative ones inhibit
    with tau_syn_in_ms. Absolute potentials here (relative to E_L in the engine). Defaults: NEST's."""
    name = "iaf_psc_alpha"
    parameters = {**{k: v for k, v in PscExp.parameters.items() if k != "tau_syn_ms"},
                  "tau_syn_ex_ms": Parameter("ms", "rise time of the excitatory synaptic current", 2.0),
                  "tau_syn_in_ms": Parameter("ms", "rise time of the inhibitory synaptic current", 2.0)}
    time_constants = ("tau_syn_ex_ms", "tau_syn_in_ms")

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        q, s = pop.params, cls._spec()      # potentials relative to rest in the engine
        s.tau_m_ms, s.c_m_pF, s.i_e_pA = q["tau_m_ms"], q["C_m_pF"], q["I_e_pA"]
        s.parameters = {"tau_syn_ex_ms": q["tau_syn_ex_ms"], "tau_syn_in_ms": q["tau_syn_in_ms"]}
        s.theta_mV, s.reset_mV = q["V_th_mV"] - q["E_L_mV"], q["V_reset_mV"] - q["E_L_mV"]
        s.refractory_steps = round(q["tau_arp_ms"] / resolution_ms)
        s.initial_normal = True
        s.v0_mean_mV, s.v0_sd_mV = q["V0_mean_mV"] - q["E_L_mV"], q["V0_sd_mV"]
        return s


NEURON_MODELS: dict[str, type[NeuronModel]] = {
    m.name: m for m in (Lifca, Artificial, IgnoreAndFire, PscExp, PoissonSource, IafPscAlpha)
}
