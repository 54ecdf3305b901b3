"""Neuron models, one class each: parameters, checks, known rate, and the engine's PopulationSpec.

A population names its model (`Population(..., model="psc_exp")`); `NEURON_MODELS` maps that name
to the class here that knows everything model-specific on the Python side:

- `parameters`: name -> Parameter(unit, description, default, per_neuron). A parameter with a
  default may be left out of a population's params; every other one must be given, and no other
  is accepted. One with per_neuron set may also be an array of one value per neuron or a
  distribution (ranvier.random); the others take one number.
- `initial_states`: the words `Population.initial` accepts; models with a membrane potential
  (`has_potential`) also take an array or a distribution of initial potentials.
- `check(pop, where)`: the checks of the values alone (run when the population is added),
  element-wise for per-neuron values (the message names the first bad neuron).
- `check_resolution(pop, resolution_ms)`: the checks that need the time grid (run when a
  Simulation is made, before anything is built).
- `known_rate_hz(params)`: the rate the model fires at by construction, or None where the rate
  depends on the dynamics (the memory check of recorded spikes then assumes one).
- `to_engine(pop, resolution_ms)`: an `_engine.PopulationSpec` with the model's fields set (the
  fields every population has, name, first id, size and area, are set by ranvier.spec).
- `neuron_values(pop, name, seed)`: the value of a parameter (or "initial") for every neuron of
  the population, as the engine gives them.

Units: potentials in mV, currents in pA, times in ms; each parameter's description says whether
its potential is relative to the resting potential or absolute. Every model's membrane potential
V, in the engine and as recorded (`Simulation(record_state=...)`, Result.state["V"]), is
relative to rest: V - E_L_mV for the models that have an E_L_mV.

Adding a model on the Python side is one class here and one line in NEURON_MODELS
(docs/neuron-models.md walks through it, C++ kernel included).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .checks import finite_number, positive, whole_steps
from .errors import ConfigError
from .random import Distribution, Lognormal, Normal

INITIAL_STATES = ("reset", "uniform")     # lifca: V = H, c = 0; or V ~ U[H, theta)
INITIAL_V = "initial_V_mV"                # the engine's per-neuron name of the initial potential (neuron_model.hpp)
# The engine's step counts: a neuron's refractory counter is 32-bit (ThreadNeurons::refractory);
# times, periods and window bounds are 64-bit steps, kept to 2^62 so that a step plus an
# interval cannot overflow (runs last far fewer steps).
MAX_REFRACTORY_STEPS = 2**31 - 1
MAX_TIME_STEPS = 2**62


@dataclass(frozen=True)
class Parameter:
    unit: str                      # "" for dimensionless
    description: str
    default: float | None = None   # None: the population must set it
    per_neuron: bool = False       # may be an array of one value per neuron or a distribution


def is_per_neuron(value) -> bool:
    """Whether a parameter's value is per neuron (an array or a distribution) rather than one number."""
    return isinstance(value, (np.ndarray, Distribution))


def _per_neuron_array(where: str, key: str, value, size: int):
    """value as given where it is one number or a distribution; an array-like as a read-only float
    array of `size` finite values, refused otherwise."""
    if isinstance(value, Distribution) or isinstance(value, (str, bytes)):
        return value
    if np.ndim(value) == 0:
        return value.item() if isinstance(value, (np.ndarray, np.generic)) else value     # one number
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: '{key}' must be numbers, one per neuron, got {value!r:.60}") from None
    if a.ndim != 1 or a.size != size:
        raise ConfigError(f"{where}: '{key}' has shape {a.shape} for {size} neurons; give one number, one value "
                          f"per neuron or a distribution (ranvier.random)")
    bad = ~np.isfinite(a)
    if bad.any():
        i = int(np.argmax(bad))
        raise ConfigError(f"{where}: '{key}' must be a finite number for every neuron; neuron {i} has {float(a[i])!r}")
    a.flags.writeable = False
    return a


def _positive(where: str, key: str, value, allow_zero: bool = False) -> None:
    """positive() for one number; for an array every value, for a distribution every value it can draw."""
    need = "zero or positive" if allow_zero else "positive"
    if isinstance(value, Distribution):
        lo = value.bounds()[0]
        if lo < 0 or (lo == 0 and not allow_zero):
            raise ConfigError(f"{where}: '{key}' must be {need} for every neuron, but {value!r} draws values down to "
                              f"{lo:.6g}{_reach(value)}")
    elif isinstance(value, np.ndarray):
        bad = value < 0 if allow_zero else value <= 0
        if bad.any():
            i = int(np.argmax(bad))
            raise ConfigError(f"{where}: '{key}' must be {need} for every neuron; neuron {i} has {float(value[i])!r}")
    else:
        positive(where, key, value, allow_zero)


def _reach(d: Distribution) -> str:
    if isinstance(d, (Normal, Lognormal)):
        return " (the engine's normal deviates reach 6.34 sd); narrow it, or choose a bounded distribution"
    return "; narrow it"


def _number(where: str, key: str, value) -> None:
    """finite_number() for one number (arrays are finite once read, distributions by construction)."""
    if not is_per_neuron(value):
        finite_number(where, key, value)


def _below(where: str, low_key: str, high_key: str, params: dict, size: int) -> None:
    """params[low_key] < params[high_key] for every neuron (for every draw of a distribution)."""
    low, high = params[low_key], params[high_key]
    if not is_per_neuron(low) and not is_per_neuron(high):
        if float(low) >= float(high):
            raise ConfigError(f"{where}: '{low_key}' ({low}) must be below '{high_key}' ({high})")
        return

    def bound(v, upper):
        if isinstance(v, Distribution):
            return np.full(size, v.bounds()[1 if upper else 0])
        return np.broadcast_to(np.asarray(v, dtype=np.float64), (size,))

    def describe(key, v, i, upper):
        if isinstance(v, Distribution):
            return f"'{key}' = {v!r} {'up' if upper else 'down'} to {v.bounds()[1 if upper else 0]:.6g}"
        return f"'{key}' = {float(np.broadcast_to(v, (size,))[i])!r}"

    bad = bound(low, True) >= bound(high, False)
    if bad.any():
        i = int(np.argmax(bad))
        raise ConfigError(f"{where}: '{low_key}' must be below '{high_key}' for every neuron; neuron {i}: "
                          f"{describe(low_key, low, i, True)}, {describe(high_key, high, i, False)}")


def _whole_steps(pop, key: str, resolution_ms: float) -> None:
    """whole_steps() for one number or every value of an array; a distribution's draws are
    rounded to the nearest step by the engine."""
    value = pop.params[key]
    if isinstance(value, Distribution):
        return
    if isinstance(value, np.ndarray):
        n = value / resolution_ms
        bad = np.abs(n - np.round(n)) > 1e-9 * np.maximum(1.0, np.abs(n))
        if bad.any():
            i = int(np.argmax(bad))
            raise ConfigError(f"population '{pop.name}': '{key}' of neuron {i} = {float(value[i])!r} ms is not a multiple of "
                              f"the resolution {resolution_ms} ms; choose multiples or a finer resolution_ms")
        return
    whole_steps(f"population '{pop.name}'", key, value, pop.origin, resolution_ms)


def steps_beyond(resolution_ms: float) -> str:
    """Why a time beyond MAX_TIME_STEPS is refused, and what fits, for messages."""
    return (f"the engine counts steps in 64 bits: at most {MAX_TIME_STEPS * resolution_ms:.6g} ms at resolution "
            f"{resolution_ms:g} ms")


def _refractory_fits(pop, resolution_ms: float) -> None:
    """tau_arp_ms (one number, every value of an array, every draw of a distribution) in steps
    that the engine's 32-bit refractory counter holds."""
    h, value = resolution_ms, pop.params["tau_arp_ms"]
    label = pop.origin.get("tau_arp_ms", "tau_arp_ms")
    if isinstance(value, Distribution):
        top, what = value.bounds()[1], f"'{label}' = {value!r} draws up to"
    elif isinstance(value, np.ndarray):
        i = int(np.argmax(value))
        top, what = float(value[i]), f"'{label}' of neuron {i} ="
    else:
        top, what = float(value), f"'{label}' ="
    if round(top / h) > MAX_REFRACTORY_STEPS:
        raise ConfigError(f"population '{pop.name}': {what} {top:g} ms, {top / h:.3g} steps of {h:g} ms; the engine "
                          f"counts a refractory period in 32 bits: the largest is {MAX_REFRACTORY_STEPS * h:.6g} ms")


def _times_fit(pop, what: str, times_ms, resolution_ms: float) -> None:
    """Event times (ms) within the engine's 64-bit step counts; `what` names the first beyond."""
    beyond = np.flatnonzero(np.asarray(times_ms, dtype=np.float64) / resolution_ms > MAX_TIME_STEPS)
    if beyond.size:
        t = float(np.asarray(times_ms)[beyond[0]])
        raise ConfigError(f"population '{pop.name}': {what} {t:g} ms, {t / resolution_ms:.3g} steps of "
                          f"{resolution_ms:g} ms; {steps_beyond(resolution_ms)}")


def _engine_values(value, tag: int):
    """An array or a distribution as the engine's NeuronValues."""
    from . import _engine
    v = _engine.NeuronValues()
    if isinstance(value, Distribution):
        v.distribution, (v.a, v.b), v.tag = value.kind, value.engine_arguments(), tag
    else:
        v.values = value.tolist()
    return v


def _mean(value) -> float:
    if isinstance(value, Distribution):
        return float(value.mean)
    if isinstance(value, np.ndarray):
        return float(value.mean())
    return float(value)


class NeuronModel:
    """The interface of a neuron model (see the module's docstring). Not a model itself."""
    name: ClassVar[str]
    parameters: ClassVar[dict[str, Parameter]]
    input_unit: ClassVar[str | None] = "mV"   # unit of synaptic weights into it; None: input ignored
    has_potential: ClassVar[bool] = False     # a membrane potential: Population.initial may set it per neuron
    initial_states: ClassVar[tuple[str, ...]] = ("reset",)   # the words Population.initial accepts

    @classmethod
    def defaults(cls) -> dict:
        return {k: p.default for k, p in cls.parameters.items() if p.default is not None}

    @classmethod
    def per_neuron_parameters(cls) -> list[str]:
        return [k for k, p in cls.parameters.items() if p.per_neuron]

    @classmethod
    def read_values(cls, pop, where: str) -> tuple[dict, object]:
        """(params, initial) with arrays read (float, one finite value per neuron); refuses a
        per-neuron value for a parameter that takes one number, and an initial state the model
        does not have."""
        params = dict(pop.params)
        for key, value in pop.params.items():
            value = _per_neuron_array(where, key, value, pop.size)
            if is_per_neuron(value) and not cls.parameters[key].per_neuron:
                can = cls.per_neuron_parameters()
                raise ConfigError(f"{where}: '{key}' cannot vary per neuron in model '{cls.name}'; give one number"
                                  + (f" (per neuron: {', '.join(can)})" if can else ""))
            params[key] = value
        initial = pop.initial
        if not cls.has_potential:
            if not (isinstance(initial, str) and initial == "reset"):
                raise ConfigError(f"{where}: model '{cls.name}' has no membrane potential; leave 'initial' at "
                                  f"'reset', got {initial!r:.60}")
            return params, initial
        if not isinstance(initial, str):
            initial = _per_neuron_array(where, "initial", initial, pop.size)
        if not is_per_neuron(initial) and initial not in cls.initial_states:
            raise ConfigError(f"{where}: 'initial' must be one of {cls.initial_states}, an array of one potential "
                              f"(mV) per neuron or a distribution (ranvier.random), got {initial!r}")
        return params, initial

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

    # -- per-neuron values -------------------------------------------------------------------------
    @classmethod
    def _tag(cls, name: str) -> int:
        """Keys a parameter's draws (Purpose::parameter): 0 for the initial V, else 1 + its place in
        `parameters` (so a new parameter goes at the end, and old draws stay)."""
        return 0 if name == "initial" else 1 + list(cls.parameters).index(name)

    @classmethod
    def _value_tag(cls, pop, name: str) -> int:
        """The tag of a parameter's draws in this population: its own (`_tag`), or, for a parameter
        that takes another one's value where left out (psc_exp's tau_syn_ex_ms), that one's, so
        the two draw the same values."""
        return cls._tag(name)

    @classmethod
    def _per_neuron_spec(cls, pop, s, params=None) -> dict:
        """Sets s.parameters (every parameter by name; the mean of one that varies) and
        s.per_neuron (the arrays and distributions, and the initial V where it is per neuron),
        from `params` (the population's by default). Returns s.parameters, for the model's fields."""
        params = pop.params if params is None else params
        per = {k: _engine_values(v, cls._value_tag(pop, k)) for k, v in params.items() if is_per_neuron(v)}
        if is_per_neuron(pop.initial):
            per[INITIAL_V] = _engine_values(pop.initial, cls._tag("initial"))
        scalars = {k: _mean(v) for k, v in params.items()}
        s.parameters, s.per_neuron = scalars, per
        return scalars

    @classmethod
    def neuron_values(cls, pop, name: str, seed: int) -> np.ndarray:
        """Parameter `name` ("initial": the initial potential, where set per neuron) of every
        neuron of the population, in the population's order, as the engine gives them to a
        simulation with this seed. A distributed tau_arp_ms is returned as drawn; the engine
        rounds it to the nearest step."""
        if name == "initial":
            value = pop.initial
            if not is_per_neuron(value):
                raise ConfigError(f"population '{pop.name}': 'initial' is {value!r}, not set per neuron")
        elif name in pop.params:
            value = pop.params[name]
        else:
            raise ConfigError(f"population '{pop.name}': no parameter '{name}'; parameters: {sorted(pop.params)}")
        if isinstance(value, Distribution):
            from . import _engine
            return _engine.neuron_values(_engine_values(value, cls._value_tag(pop, name)), pop.first_id, pop.size,
                                         seed)
        if isinstance(value, np.ndarray):
            return value.copy()
        return np.full(pop.size, float(value))


class Lifca(NeuronModel):
    """LIF neuron with spike-frequency adaptation (the DPSNN benchmark's); every potential is
    relative to rest (mV): dV/dt = -V / tau_m - g_c c + dc, c (dimensionless) decays with tau_c
    and jumps by alpha_c at each spike; input jumps V (mV). Recorded: V (mV, relative to rest) and
    c. Population.initial: "reset" (V = H, c = 0), "uniform" (V ~ U[H, theta)), or V per neuron
    (an array or a distribution, mV relative to rest).

    Left out, the adaptation is off (alpha_c = g_c = 0) and the membrane takes NEST's
    iaf_psc_delta defaults relative to E_L, so `Population("E", 100, {})` is NEST's iaf_psc_delta
    (with dc_mV_per_ms = I_e / C_m); input that arrives while refractory is dropped, as NEST's
    default (refractory_input = False)."""
    name = "lifca"
    has_potential = True
    initial_states = INITIAL_STATES
    parameters = {
        "tau_m_ms": Parameter("ms", "membrane time constant", 10.0, per_neuron=True),
        "theta_mV": Parameter("mV", "firing threshold, relative to rest", 15.0, per_neuron=True),
        "reset_mV": Parameter("mV", "reset potential H, relative to rest (V is held here while refractory)", 0.0,
                              per_neuron=True),
        "tau_arp_ms": Parameter("ms", "absolute refractory period", 2.0, per_neuron=True),
        "alpha_c": Parameter("", "increment of the adaptation variable c at each spike (0: no adaptation)", 0.0,
                             per_neuron=True),
        "tau_c_ms": Parameter("ms", "time constant of c", 1000.0, per_neuron=True),
        "g_c_mV_per_ms": Parameter("mV/ms", "strength of adaptation (dV/dt gets -g_c * c; 0: no adaptation)", 0.0,
                                   per_neuron=True),
        "dc_mV_per_ms": Parameter("mV/ms", "constant drive added to dV/dt (a current I_e gives I_e / C_m)", 0.0,
                                  per_neuron=True),
    }

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("tau_m_ms", "tau_c_ms"):
            _positive(where, key, q[key])
        for key in ("tau_arp_ms", "alpha_c", "g_c_mV_per_ms"):
            _positive(where, key, q[key], allow_zero=True)
        for key in ("theta_mV", "reset_mV", "dc_mV_per_ms"):
            _number(where, key, q[key])
        _below(where, "reset_mV", "theta_mV", q, pop.size)

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        _whole_steps(pop, "tau_arp_ms", resolution_ms)
        _refractory_fits(pop, resolution_ms)

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec()
        q = cls._per_neuron_spec(pop, s)    # the means of parameters that vary per neuron
        s.tau_m_ms, s.theta_mV, s.reset_mV = q["tau_m_ms"], q["theta_mV"], q["reset_mV"]
        s.refractory_steps = round(q["tau_arp_ms"] / resolution_ms)
        s.alpha_c, s.tau_c_ms = q["alpha_c"], q["tau_c_ms"]
        s.g_c, s.dc = q["g_c_mV_per_ms"], q["dc_mV_per_ms"]
        s.initial_uniform = isinstance(pop.initial, str) and pop.initial == "uniform"
        return s


class PscExp(NeuronModel):
    """Leaky integrate-and-fire with exponential post-synaptic currents (NEST's iaf_psc_exp),
    integrated exactly on the time grid: synaptic input (pA) jumps a current that decays
    exponentially; positive weights the excitatory current I_ex (time constant tau_syn_ex_ms),
    negative ones the inhibitory I_in (tau_syn_in_ms). Each of the two, left out, is tau_syn_ms,
    so a population that sets tau_syn_ms alone has one time constant for both (one current in the
    engine, as before the two were separate). The potential parameters are absolute (mV, as
    NEST's: E_L_mV is the resting potential); the engine, and what it records, hold V - E_L_mV
    (mV, relative to rest), and c = the synaptic current (pA): I_ex + I_in with one time constant,
    I_ex with two. The initial V is drawn from N(V0_mean_mV, V0_sd_mV) per neuron, or set per
    neuron by Population.initial (an array or a distribution, absolute mV).
    Defaults: NEST's (V starts at E_L)."""
    name = "psc_exp"
    input_unit = "pA"
    takes_current = True               # injected currents (ranvier.devices): NEST's two-current step
    has_potential = True
    initial_states = ("reset",)        # "reset": V from V0_mean_mV and V0_sd_mV
    parameters = {
        "E_L_mV": Parameter("mV", "resting potential (absolute)", -70.0, per_neuron=True),
        "V_th_mV": Parameter("mV", "firing threshold (absolute)", -55.0, per_neuron=True),
        "V_reset_mV": Parameter("mV", "reset potential (absolute; V is held here while refractory)", -70.0,
                                per_neuron=True),
        "C_m_pF": Parameter("pF", "membrane capacitance", 250.0, per_neuron=True),
        "tau_m_ms": Parameter("ms", "membrane time constant", 10.0, per_neuron=True),
        "tau_syn_ms": Parameter("ms", "time constant of the synaptic currents where tau_syn_ex_ms or tau_syn_in_ms is "
                                "left out", 2.0, per_neuron=True),
        "tau_arp_ms": Parameter("ms", "absolute refractory period", 2.0, per_neuron=True),
        "I_e_pA": Parameter("pA", "constant input current", 0.0, per_neuron=True),
        "V0_mean_mV": Parameter("mV", "mean of the initial membrane potential (absolute)", -70.0),
        "V0_sd_mV": Parameter("mV", "standard deviation of the initial membrane potential", 0.0),
        # at the end: the tags of per-neuron draws follow the order (NeuronModel._tag)
        "tau_syn_ex_ms": Parameter("ms", "time constant of the excitatory synaptic current (positive weights); left "
                                   "out: tau_syn_ms", 2.0, per_neuron=True),
        "tau_syn_in_ms": Parameter("ms", "time constant of the inhibitory synaptic current (negative weights); left "
                                   "out: tau_syn_ms", 2.0, per_neuron=True),
    }
    time_constants = ("tau_syn_ms", "tau_syn_ex_ms", "tau_syn_in_ms")
    ALIASES = {"tau_syn_ex_ms": "tau_syn_ms", "tau_syn_in_ms": "tau_syn_ms"}   # left out: takes that one's value

    @classmethod
    def _aliased(cls, pop, name: str) -> bool:
        """Whether `name` was left out of the population and takes its alias's value."""
        return name in cls.ALIASES and cls.ALIASES[name] in cls.parameters and name in pop.defaulted

    @classmethod
    def read_values(cls, pop, where):
        params, initial = super().read_values(pop, where)
        for name, source in cls.ALIASES.items():
            if cls._aliased(pop, name):
                params[name] = params[source]           # the same value (object: an array or a distribution)
        return params, initial

    @classmethod
    def _value_tag(cls, pop, name):
        return cls._tag(cls.ALIASES[name] if cls._aliased(pop, name) else name)

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("C_m_pF", "tau_m_ms", *cls.time_constants):
            _positive(where, key, q[key])
        for key in ("tau_arp_ms", "V0_sd_mV"):
            _positive(where, key, q[key], allow_zero=True)
        for key in ("E_L_mV", "V_th_mV", "V_reset_mV", "I_e_pA", "V0_mean_mV"):
            _number(where, key, q[key])
        _below(where, "V_reset_mV", "V_th_mV", q, pop.size)
        given = set(q) - pop.defaulted
        if is_per_neuron(pop.initial) and given & {"V0_mean_mV", "V0_sd_mV"}:
            raise ConfigError(f"{where}: 'initial' sets the initial potential per neuron, and so do "
                              f"{sorted(given & {'V0_mean_mV', 'V0_sd_mV'})}; give one of the two")

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        _whole_steps(pop, "tau_arp_ms", resolution_ms)
        _refractory_fits(pop, resolution_ms)

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec()
        q = cls._per_neuron_spec(pop, s)    # the means of parameters that vary per neuron
        # tau_syn_ms is resolved here: the engine reads tau_syn_ex_ms and tau_syn_in_ms (one current
        # where the two are the same for every neuron, cpp/neurons/psc_exp.hpp: splits).
        s.parameters = {k: v for k, v in s.parameters.items() if k != "tau_syn_ms"}
        s.per_neuron = {k: v for k, v in s.per_neuron.items() if k != "tau_syn_ms"}
        # Potentials relative to rest in the engine.
        s.tau_m_ms, s.tau_syn_ms, s.c_m_pF, s.i_e_pA = q["tau_m_ms"], q["tau_syn_ex_ms"], q["C_m_pF"], q["I_e_pA"]
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
        if not period <= MAX_TIME_STEPS:          # infinite too: the rate 1e-310 Hz
            raise ConfigError(f"population '{pop.name}': 'rate_hz' = {pop.params['rate_hz']:g} Hz gives a period of "
                              f"{period:.3g} steps of {resolution_ms:g} ms; the engine counts steps in 64 bits: the "
                              f"smallest rate is {1000.0 / (MAX_TIME_STEPS * resolution_ms):.3g} Hz")

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
        where, h = f"population '{pop.name}'", resolution_ms
        for key in cls.parameters:
            whole_steps(where, key, pop.params[key], pop.origin, h, minimum=1)
        shortest, longest = (float(pop.params[k]) for k in ("isi_min_ms", "isi_max_ms"))
        low, high = round(shortest / h), round(longest / h)
        if high > MAX_TIME_STEPS:
            raise ConfigError(f"{where}: 'isi_max_ms' = {longest:g} ms is {high:.3g} steps of {h:g} ms; "
                              f"{steps_beyond(h)}")
        if high - low >= 2**32:                   # the interval is drawn from one 32-bit word
            raise ConfigError(f"{where}: 'isi_max_ms' - 'isi_min_ms' = {longest - shortest:g} ms spans "
                              f"{high - low + 1:.3g} steps of {h:g} ms; the engine draws an interval over at most "
                              f"2^32 steps: a difference of at most {(2**32 - 1) * h:.6g} ms")

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
        "rate_hz": Parameter("Hz", "firing rate inside the window", per_neuron=True),
        "start_ms": Parameter("ms", "start of the firing window", 0.0, per_neuron=True),
        "stop_ms": Parameter("ms", "end of the firing window", per_neuron=True),
    }

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        if any(is_per_neuron(q[k]) for k in cls.parameters):        # one value per neuron (PyNN's per-cell rates)
            for k in cls.parameters:
                if isinstance(q[k], Distribution):
                    raise ConfigError(f"{where}: '{k}' can vary per neuron in model 'poisson_source' as an array of "
                                      f"one value per neuron, not as a distribution")
                v = np.asarray(q[k] if isinstance(q[k], np.ndarray) else [q[k]], dtype=float)
                if not np.all(np.isfinite(v) & (v >= 0)):
                    raise ConfigError(f"{where}: per neuron, '{k}' must be finite numbers >= 0")
            if np.any(np.asarray(q["stop_ms"]) < np.asarray(q["start_ms"])):
                raise ConfigError(f"{where}: 'stop_ms' must not be below 'start_ms'")
            return
        positive(where, "rate_hz", q["rate_hz"], allow_zero=True)
        start = positive(where, "start_ms", q["start_ms"], allow_zero=True)
        stop = positive(where, "stop_ms", q["stop_ms"], allow_zero=True)
        if stop < start:
            raise ConfigError(f"{where}: 'stop_ms' ({stop}) must not be below 'start_ms' ({start})")

    @classmethod
    def known_rate_hz(cls, params):
        return float(np.max(params["rate_hz"]))   # inside the window: an upper bound over any run

    @classmethod
    def placement_rate_hz(cls, params, default_hz):
        return 0.0                              # the area placement's cost model counts no source events

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        # A window bound beyond the engine's step counts lies beyond any run: held at the last
        # step it counts, where it is never reached either.
        latest = MAX_TIME_STEPS * resolution_ms
        q = {k: np.minimum(v, latest) if k in ("start_ms", "stop_ms") else v for k, v in pop.params.items()}
        s = cls._spec()
        if any(is_per_neuron(q[k]) for k in cls.parameters):
            cls._per_neuron_spec(pop, s, q)
            q = s.parameters
        s.source_rate_hz = q["rate_hz"]
        s.start_step, s.stop_step = (round(float(q[k]) / resolution_ms) for k in ("start_ms", "stop_ms"))
        return s


class InhomogeneousPoisson(NeuronModel):
    """Poisson sources with a piecewise-constant rate (NEST's inhomogeneous_poisson_generator
    feeding parrot neurons, PyNN's SpikeSourceInhomogeneousPoisson): every neuron fires as an
    independent Poisson process at rates_hz[i] from rate_times_ms[i] until rate_times_ms[i + 1]
    (the last rate until the end of the run), silent before rate_times_ms[0]; at most one spike
    per step (probability rate x h per step, as poisson_source); input is ignored. Times are
    whole numbers of steps, increasing."""
    name = "inhomogeneous_poisson"
    input_unit = None
    parameters = {
        "rate_times_ms": Parameter("ms", "the times the rate changes, increasing"),
        "rates_hz": Parameter("Hz", "the rate from each time on"),
    }

    @classmethod
    def read_values(cls, pop, where):
        params = dict(pop.params)
        lists = {}
        for key in ("rate_times_ms", "rates_hz"):
            value = params[key]
            try:
                lists[key] = np.asarray(value, dtype=np.float64).ravel()
            except (TypeError, ValueError):
                raise ConfigError(f"{where}: '{key}' must be a list of numbers, got {value!r:.60}") from None
            if lists[key].size == 0 or not np.all(np.isfinite(lists[key])):
                raise ConfigError(f"{where}: '{key}' must be a non-empty list of finite numbers")
        times, rates = lists["rate_times_ms"], lists["rates_hz"]
        if times.size != rates.size:
            raise ConfigError(f"{where}: 'rate_times_ms' ({times.size}) and 'rates_hz' ({rates.size}) must have the "
                              f"same length")
        if np.any(times < 0) or np.any(np.diff(times) <= 0):
            raise ConfigError(f"{where}: 'rate_times_ms' must be >= 0 and strictly increasing")
        if np.any(rates < 0):
            raise ConfigError(f"{where}: 'rates_hz' must be >= 0, got {rates.min():g}")
        if not (isinstance(pop.initial, str) and pop.initial == "reset"):
            raise ConfigError(f"{where}: model 'inhomogeneous_poisson' has no membrane potential; leave 'initial' "
                              f"at 'reset'")
        params["rate_times_ms"], params["rates_hz"] = tuple(times.tolist()), tuple(rates.tolist())
        return params, pop.initial

    @classmethod
    def known_rate_hz(cls, params):
        return float(max(params["rates_hz"]))      # an upper bound over any run

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        steps = np.asarray(pop.params["rate_times_ms"]) / resolution_ms
        off = np.flatnonzero(np.abs(steps - np.rint(steps)) > 1e-9 * np.maximum(1.0, steps))
        if off.size:
            raise ConfigError(f"population '{pop.name}': rate time {pop.params['rate_times_ms'][off[0]]:g} ms is not "
                              f"a whole number of steps of {resolution_ms} ms; round it or change resolution_ms")
        _times_fit(pop, "rate time", pop.params["rate_times_ms"], resolution_ms)

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec()
        s.rate_steps = np.rint(np.asarray(pop.params["rate_times_ms"]) / resolution_ms).astype(np.int64).tolist()
        s.rates_hz = list(pop.params["rates_hz"])
        return s


class IafPscAlpha(PscExp):
    """Leaky integrate-and-fire with alpha-shaped post-synaptic currents (NEST's iaf_psc_alpha),
    integrated exactly on the time grid in NEST's order: a spike of weight w (pA) gives the current
    w e / tau t exp(-t / tau); positive weights excite with tau_syn_ex_ms, negative ones inhibit
    with tau_syn_in_ms. Potential parameters absolute (mV, as NEST's); the engine, and what it
    records, hold V - E_L_mV (mV, relative to rest), and c = the excitatory current I_ex (pA).
    Initial V as psc_exp. Defaults: NEST's."""
    name = "iaf_psc_alpha"
    takes_current = True               # injected currents (ranvier.devices) add to I_e
    parameters = {**{k: v for k, v in PscExp.parameters.items() if k not in PscExp.time_constants},
                  "tau_syn_ex_ms": Parameter("ms", "rise time of the excitatory synaptic current", 2.0,
                                             per_neuron=True),
                  "tau_syn_in_ms": Parameter("ms", "rise time of the inhibitory synaptic current", 2.0,
                                             per_neuron=True)}
    time_constants = ("tau_syn_ex_ms", "tau_syn_in_ms")

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec()
        q = cls._per_neuron_spec(pop, s)    # every parameter by name (tau_syn_ex_ms, tau_syn_in_ms read so)
        s.tau_m_ms, s.c_m_pF, s.i_e_pA = q["tau_m_ms"], q["C_m_pF"], q["I_e_pA"]
        s.theta_mV, s.reset_mV = q["V_th_mV"] - q["E_L_mV"], q["V_reset_mV"] - q["E_L_mV"]
        s.refractory_steps = round(q["tau_arp_ms"] / resolution_ms)
        s.initial_normal = True
        s.v0_mean_mV, s.v0_sd_mV = q["V0_mean_mV"] - q["E_L_mV"], q["V0_sd_mV"]
        return s


class IafCondExp(NeuronModel):
    """Leaky integrate-and-fire with exponential synaptic conductances (NEST's iaf_cond_exp):
    C_m dV/dt = -g_L (V - E_L) + I_e - g_ex (V - E_ex) - g_in (V - E_in), each conductance
    decaying with its time constant; a spike of weight w (nS) jumps g_ex by w where w > 0, g_in by
    -w where w < 0. Integrated as NEST integrates it (Runge-Kutta-Fehlberg 4(5) with NEST's
    adaptive step control, per neuron; docs/neuron-models.md). Potential parameters absolute (mV,
    as NEST's); the engine, and what it records, hold V - E_L_mV (mV, relative to rest), and c =
    g_ex (nS). Initial V as psc_exp. Defaults: NEST's."""
    takes_current = True               # injected currents (ranvier.devices) add to I_e
    name = "iaf_cond_exp"
    input_unit = "nS"
    has_potential = True
    initial_states = ("reset",)        # "reset": V from V0_mean_mV and V0_sd_mV
    parameters = {
        "E_L_mV": Parameter("mV", "leak reversal potential (absolute)", -70.0, per_neuron=True),
        "V_th_mV": Parameter("mV", "firing threshold (absolute)", -55.0, per_neuron=True),
        "V_reset_mV": Parameter("mV", "reset potential (absolute; V is held here while refractory)", -60.0,
                                per_neuron=True),
        "C_m_pF": Parameter("pF", "membrane capacitance", 250.0, per_neuron=True),
        "g_L_nS": Parameter("nS", "leak conductance", 16.6667, per_neuron=True),
        "E_ex_mV": Parameter("mV", "excitatory reversal potential (absolute)", 0.0, per_neuron=True),
        "E_in_mV": Parameter("mV", "inhibitory reversal potential (absolute)", -85.0, per_neuron=True),
        "tau_syn_ex_ms": Parameter("ms", "time constant of the excitatory conductance", 0.2, per_neuron=True),
        "tau_syn_in_ms": Parameter("ms", "time constant of the inhibitory conductance", 2.0, per_neuron=True),
        "tau_arp_ms": Parameter("ms", "absolute refractory period", 2.0, per_neuron=True),
        "I_e_pA": Parameter("pA", "constant input current", 0.0, per_neuron=True),
        "V0_mean_mV": Parameter("mV", "mean of the initial membrane potential (absolute)", -70.0),
        "V0_sd_mV": Parameter("mV", "standard deviation of the initial membrane potential", 0.0),
    }

    @classmethod
    def check(cls, pop, where):
        q = pop.params
        for key in ("C_m_pF", "g_L_nS", "tau_syn_ex_ms", "tau_syn_in_ms"):
            _positive(where, key, q[key])
        for key in ("tau_arp_ms", "V0_sd_mV"):
            _positive(where, key, q[key], allow_zero=True)
        for key in ("E_L_mV", "V_th_mV", "V_reset_mV", "E_ex_mV", "E_in_mV", "I_e_pA", "V0_mean_mV"):
            _number(where, key, q[key])
        _below(where, "V_reset_mV", "V_th_mV", q, pop.size)
        given = set(q) - pop.defaulted
        if is_per_neuron(pop.initial) and given & {"V0_mean_mV", "V0_sd_mV"}:
            raise ConfigError(f"{where}: 'initial' sets the initial potential per neuron, and so do "
                              f"{sorted(given & {'V0_mean_mV', 'V0_sd_mV'})}; give one of the two")

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        _whole_steps(pop, "tau_arp_ms", resolution_ms)
        _refractory_fits(pop, resolution_ms)

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec()
        q = cls._per_neuron_spec(pop, s)    # every parameter by name (g_L_nS, E_ex_mV, ... read so)
        s.c_m_pF, s.i_e_pA = q["C_m_pF"], q["I_e_pA"]
        s.theta_mV, s.reset_mV = q["V_th_mV"] - q["E_L_mV"], q["V_reset_mV"] - q["E_L_mV"]
        s.refractory_steps = round(q["tau_arp_ms"] / resolution_ms)
        s.initial_normal = True
        s.v0_mean_mV, s.v0_sd_mV = q["V0_mean_mV"] - q["E_L_mV"], q["V0_sd_mV"]
        return s


class IafCondAlpha(IafCondExp):
    """Leaky integrate-and-fire with alpha-shaped synaptic conductances (NEST's iaf_cond_alpha):
    C_m dV/dt = -g_L (V - E_L) + I_e - g_ex (V - E_ex) - g_in (V - E_in); a spike of weight w (nS)
    gives g_ex(t) = w e / tau t exp(-t / tau) (tau = tau_syn_ex_ms; peak w at t = tau) where w > 0,
    g_in likewise with -w and tau_syn_in_ms where w < 0. Integrated as NEST integrates it
    (Runge-Kutta-Fehlberg 4(5) with NEST's adaptive step control, per neuron, as iaf_cond_exp;
    docs/neuron-models.md). Potential parameters absolute (mV, as NEST's); the engine, and what
    it records, hold V - E_L_mV (mV, relative to rest), and c = g_ex (nS). Checks, initial V and
    the engine's spec as iaf_cond_exp's. Defaults: NEST's."""
    name = "iaf_cond_alpha"
    parameters = {**IafCondExp.parameters,
                  "tau_syn_ex_ms": Parameter("ms", "rise time of the excitatory conductance (its peak)", 0.2,
                                             per_neuron=True),
                  "tau_syn_in_ms": Parameter("ms", "rise time of the inhibitory conductance (its peak)", 2.0,
                                             per_neuron=True)}


class SpikeTrain(NeuronModel):
    """Spike trains given in advance (NEST's spike_generator feeding a parrot_neuron): each neuron
    fires at the times of its train (ms, each a whole number of steps and > 0), ignores all input
    and has no membrane. spike_times_ms: one list of times per neuron, or one flat list that every
    neuron of the population fires at. Times are sorted on the way in; a time twice in a train
    is refused (a neuron fires at most once per step)."""
    name = "spike_train"
    input_unit = None
    parameters = {
        "spike_times_ms": Parameter("ms", "the times each neuron fires at: one list per neuron, or one list for all"),
    }

    @classmethod
    def read_values(cls, pop, where):
        value = pop.params["spike_times_ms"]
        if isinstance(value, tuple) and all(isinstance(t, np.ndarray) for t in value):
            return dict(pop.params), pop.initial              # read already (validate runs again)
        if isinstance(value, (str, bytes, numbers.Number)) or not hasattr(value, "__len__"):
            raise ConfigError(f"{where}: 'spike_times_ms' must be a list of times (ms) or one list per neuron, "
                              f"got {value!r:.60}")
        flat = all(np.ndim(t) == 0 for t in value)
        if not flat and len(value) != pop.size:
            raise ConfigError(f"{where}: 'spike_times_ms' gives {len(value)} trains for {pop.size} neurons; give "
                              f"one list per neuron, or one flat list of times for all of them")
        trains = []
        for x, train in enumerate([value] if flat else value):
            try:
                t = np.sort(np.asarray(train, dtype=np.float64).ravel())
            except (TypeError, ValueError):
                raise ConfigError(f"{where}: 'spike_times_ms' of neuron {x} must be numbers (ms), "
                                  f"got {train!r:.60}") from None
            bad = t[~(np.isfinite(t) & (t > 0))]
            if bad.size:
                raise ConfigError(f"{where}: neuron {x} fires at {bad[0]!r} ms: spike times must be finite and > 0 ms")
            same = np.flatnonzero(np.diff(t) == 0)
            if same.size:
                raise ConfigError(f"{where}: neuron {x} fires twice at {t[same[0]]:g} ms; a neuron fires at most "
                                  f"once per time step")
            trains.append(t)
        if not pop.initial == "reset":
            raise ConfigError(f"{where}: model 'spike_train' has no membrane potential; leave 'initial' at 'reset'")
        params = dict(pop.params)
        params["spike_times_ms"] = tuple(trains if not flat else trains * pop.size)
        return params, pop.initial

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        for x, t in enumerate(pop.params["spike_times_ms"]):
            steps = t / resolution_ms
            off = np.flatnonzero(np.abs(steps - np.rint(steps)) > 1e-9 * np.maximum(1.0, steps))
            if off.size:
                raise ConfigError(f"population '{pop.name}': neuron {x} fires at {t[off[0]]:g} ms, not a whole "
                                  f"number of steps of {resolution_ms} ms; round the time or change resolution_ms")
            _times_fit(pop, f"neuron {x} fires at", t, resolution_ms)

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        s = cls._spec()
        trains = pop.params["spike_times_ms"]
        s.train_begin = np.concatenate([[0], np.cumsum([t.size for t in trains])]).astype(np.uint64).tolist()
        # a spike found while integrating step s has time (s + 1) h
        steps = [np.rint(t / resolution_ms).astype(np.int64) - 1 for t in trains]
        s.train_steps = (np.concatenate(steps) if steps else np.zeros(0, np.int64)).tolist()
        return s


NEURON_MODELS: dict[str, type[NeuronModel]] = {
    m.name: m for m in (Lifca, Artificial, IgnoreAndFire, PscExp, PoissonSource, IafPscAlpha, SpikeTrain, IafCondExp,
                        InhomogeneousPoisson, IafCondAlpha)
}
