"""The interface every neuron model implements (NeuronModel, described in ranvier.core.neurons) and
the checks the models share: per-neuron values, positive and finite numbers, whole steps."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..checks import finite_number, positive, whole_steps
from ...errors import ConfigError
from ..random import Distribution, Lognormal, Normal

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
                          f"per neuron or a distribution (ranvier.core.random)")
    bad = ~np.isfinite(a)
    if bad.any():
        i = int(np.argmax(bad))
        raise ConfigError(f"{where}: '{key}' must be a finite number for every neuron; neuron {i} has {float(a[i])!r}")
    a.flags.writeable = False
    return a


def _list_of_numbers(where: str, key: str, value) -> tuple:
    """A list parameter (NeuronModel.list_parameters) as a tuple of finite floats."""
    try:
        values = tuple(np.asarray(value, dtype=np.float64).ravel().tolist())
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: '{key}' must be a list of numbers, got {value!r:.60}") from None
    if not all(np.isfinite(values)):
        raise ConfigError(f"{where}: '{key}' must hold finite numbers")
    return values


def check_receptor_lists(where: str, params: dict, most: int, time_constants: str = "tau_syn_ms",
                         others: tuple = ()) -> None:
    """The list parameters of a model with receptors: `time_constants` (one positive entry per
    receptor, 1 to `most` of them) and `others`, each of the same length."""
    tau = params[time_constants]
    if not 1 <= len(tau) <= most:
        raise ConfigError(f"{where}: '{time_constants}' must have 1 to {most} entries (one per receptor), got "
                          f"{len(tau)}")
    for key in others:
        if len(params[key]) != len(tau):
            raise ConfigError(f"{where}: '{time_constants}' ({len(tau)} values) and '{key}' ({len(params[key])}) must "
                              f"have the same length, one entry per receptor")
    if any(t <= 0 for t in tau):
        raise ConfigError(f"{where}: every time constant of '{time_constants}' must be positive")


def source_values(where: str, model: str, params: dict, keys, size: int) -> dict:
    """The spike sources' parameters (gamma_source, ppd_source): each a float array of `size`
    (one number repeated); a distribution refused."""
    out = {}
    for k in keys:
        if isinstance(params[k], Distribution):
            raise ConfigError(f"{where}: '{k}' can vary per neuron in model '{model}' as an array of one value per "
                              f"neuron, not as a distribution")
        try:
            out[k] = np.broadcast_to(np.asarray(params[k], dtype=np.float64), (size,))
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: '{k}' must be a number or one number per neuron, got {params[k]!r:.60}") \
                from None
    return out


def first_bad(bad: np.ndarray) -> str:
    """Which neuron a check found first (`bad`, one flag per neuron), for messages."""
    i = int(np.argmax(bad))
    return f"neuron {i}" if bad.size > 1 else "the population"


def check_positive(where: str, key: str, value, allow_zero: bool = False) -> None:
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


def check_number(where: str, key: str, value) -> None:
    """finite_number() for one number (arrays are finite once read, distributions by construction)."""
    if not is_per_neuron(value):
        finite_number(where, key, value)


def check_one_initial_potential(where: str, pop, params: dict) -> None:
    """Refuses a per-neuron `initial` given together with V0_mean_mV or V0_sd_mV: both would set
    the initial potential."""
    both = sorted((set(params) - pop.defaulted) & {"V0_mean_mV", "V0_sd_mV"})
    if is_per_neuron(pop.initial) and both:
        raise ConfigError(f"{where}: 'initial' sets the initial potential per neuron, and so do {both}; "
                          f"give one of the two")


def check_below(where: str, low_key: str, high_key: str, params: dict, size: int, strict: bool = True) -> None:
    """params[low_key] < params[high_key] for every neuron (for every draw of a distribution);
    <= where not `strict`."""
    low, high = params[low_key], params[high_key]
    relation = "below" if strict else "at most"

    def fails(a, b):
        return a >= b if strict else a > b

    if not is_per_neuron(low) and not is_per_neuron(high):
        if fails(float(low), float(high)):
            raise ConfigError(f"{where}: '{low_key}' ({low}) must be {relation} '{high_key}' ({high})")
        return

    def bound(v, upper):
        if isinstance(v, Distribution):
            return np.full(size, v.bounds()[1 if upper else 0])
        return np.broadcast_to(np.asarray(v, dtype=np.float64), (size,))

    def describe(key, v, i, upper):
        if isinstance(v, Distribution):
            return f"'{key}' = {v!r} {'up' if upper else 'down'} to {v.bounds()[1 if upper else 0]:.6g}"
        return f"'{key}' = {float(np.broadcast_to(v, (size,))[i])!r}"

    bad = fails(bound(low, True), bound(high, False))
    if bad.any():
        i = int(np.argmax(bad))
        raise ConfigError(f"{where}: '{low_key}' must be {relation} '{high_key}' for every neuron; neuron {i}: "
                          f"{describe(low_key, low, i, True)}, {describe(high_key, high, i, False)}")


def check_whole_steps(pop, key: str, resolution_ms: float) -> None:
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


def check_refractory_fits(pop, resolution_ms: float) -> None:
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


def check_times_fit(pop, what: str, times_ms, resolution_ms: float) -> None:
    """Event times (ms) within the engine's 64-bit step counts; `what` names the first beyond."""
    beyond = np.flatnonzero(np.asarray(times_ms, dtype=np.float64) / resolution_ms > MAX_TIME_STEPS)
    if beyond.size:
        t = float(np.asarray(times_ms)[beyond[0]])
        raise ConfigError(f"population '{pop.name}': {what} {t:g} ms, {t / resolution_ms:.3g} steps of "
                          f"{resolution_ms:g} ms; {steps_beyond(resolution_ms)}")


def _engine_values(value, tag: int):
    """An array or a distribution as the engine's NeuronValues."""
    from ... import _engine
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
    takes_current: ClassVar[bool] = False     # injected currents (ranvier.core.devices) reach it
    # What Simulation(record_state=...) records besides V, by the engine's state names ("c",
    # "c_in", "w"; "c3", "c4", ... for receptors 3, 4, ... of models with receptors) -> (name,
    # unit, description) as ranvier.io.neo names the signal.
    recordables: ClassVar[dict[str, tuple[str, str, str]]] = {}
    # PyNN's weight units (nA, uS) in the model's input unit, for pyNN.ranvier (1: input ignored).
    pynn_weight_scale: ClassVar[float] = 1.0
    # NEST's model of the same dynamics, for SONATA's model_template "nest:<name>" (None: none maps).
    nest_model: ClassVar[str | None] = None
    # NEST's parameter name -> this model's, for the parameters of nest_model in NEST's names and
    # units (SONATA's dynamics_params); "V_m", NEST's initial potential, names the initial one.
    # None: NEST's parameters do not map one to one (SONATA then refuses "nest:<nest_model>").
    nest_parameters: ClassVar[dict[str, str] | None] = None
    # Parameters that are lists of numbers, one list per population (gif_cond_exp's time
    # constants, the multisynapse models' one entry per receptor): read as tuples of floats,
    # handed to the engine as PopulationSpec.sequences.
    list_parameters: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def receptors(cls, params: dict) -> int:
        """How many receptors a population with these parameters has: 0 for a model whose
        synapses choose their input by the weight's sign; R for one whose projections name
        `receptor` 1..R (NEST's receptor ports)."""
        return 0

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
            if key in cls.list_parameters:
                params[key] = _list_of_numbers(where, key, value)
                continue
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
                              f"(mV) per neuron or a distribution (ranvier.core.random), got {initial!r}")
        return params, initial

    @classmethod
    def check(cls, pop, where: str) -> None:
        """Checks of the parameter values; every parameter is present (Population.validate)."""

    @classmethod
    def check_resolution(cls, pop, resolution_ms: float) -> None:
        """Checks that need the time grid: periods and intervals in whole steps. By default a
        model's absolute refractory period, where it has one (tau_arp_ms): whole steps, and within
        the engine's 32-bit counter."""
        if "tau_arp_ms" in cls.parameters:
            check_whole_steps(pop, "tau_arp_ms", resolution_ms)
            check_refractory_fits(pop, resolution_ms)

    @classmethod
    def known_rate_hz(cls, params: dict) -> float | None:
        return None

    @classmethod
    def placement_rate_hz(cls, params: dict, default_hz: float) -> float:
        """The rate the area placement's cost model assumes (ranvier.core.placement.area_costs)."""
        rate = cls.known_rate_hz(params)
        return default_hz if rate is None else rate

    @classmethod
    def to_engine(cls, pop, resolution_ms: float):
        """The engine's PopulationSpec: by default every parameter by name (the mean of one that
        varies, its values or draws per neuron), the list parameters as sequences, and the
        initial state word. Models that hand the engine something else override it."""
        s = cls._spec(pop)
        cls._per_neuron_spec(pop, s)
        return s

    @classmethod
    def from_absolute(cls, params: dict) -> dict:
        """Parameters given with absolute potentials by NEST's names (E_L_mV, V_th_mV, V_reset_mV,
        C_m_pF, I_e_pA, ...: PyNN's IF_curr_delta) as this model takes them; the same for the
        models that take them so."""
        return dict(params)

    @classmethod
    def initial_from_absolute(cls, initial, params: dict, size: int):
        """An absolute initial potential per neuron (mV) as this model's Population.initial, given
        `params` as from_absolute takes them."""
        return initial

    @classmethod
    def _spec(cls, pop=None, parameters=None):
        """A PopulationSpec of this model, with `parameters` (name -> number, the engine's model
        reads them by these names) and the population's initial state word where it has one."""
        from ... import _engine         # loaded on first use: importing a model loads no engine
        s = _engine.PopulationSpec()
        s.model = cls.name             # the engine's model of the same name (cpp/neurons/<name>.cpp)
        if parameters is not None:
            s.parameters = {k: float(v) for k, v in parameters.items()}
        if pop is not None and isinstance(pop.initial, str):
            s.initial = pop.initial
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
        from `params` (the population's by default), and s.sequences (the list parameters).
        Returns s.parameters, for the model's fields."""
        params = pop.params if params is None else params
        if cls.list_parameters:
            s.sequences = {k: [float(x) for x in pop.params[k]] for k in cls.list_parameters}
            params = {k: v for k, v in params.items() if k not in cls.list_parameters}
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
            from ... import _engine
            return _engine.neuron_values(_engine_values(value, cls._value_tag(pop, name)), pop.first_id, pop.size,
                                         seed)
        if isinstance(value, np.ndarray):
            return value.copy()
        return np.full(pop.size, float(value))

