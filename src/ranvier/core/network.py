"""A validated description of a network: populations, projections, external drive.

This is plain data. Nothing is built here: `Simulation` hands the description to the
engine, which generates on each rank only the synapses whose target lives there.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .checks import positive as _positive, whole_steps
from ..errors import ConfigError
from .neurons import INITIAL_STATES, NEURON_MODELS, NeuronModel  # noqa: F401  (neuron models: ranvier.core.neurons)
from .plasticity import SYNAPSE_KINDS
from .synapses.nestml import NestmlSynapse

DELAY_DISTRIBUTIONS = ("constant", "exponential", "normal")
# The engine stores a synapse's delay in 16 bits (cpp/core/network_build.cpp): at most 65535 steps.
MAX_DELAY_STEPS = 65535


def _uniform_of_word(word: int) -> float:
    """The engine's to_uniform (cpp/base/philox.hpp): (word + 1/2) 2^-32, in (0, 1)."""
    return (word + 0.5) * 2.0 ** -32


def _inverse_normal(p: float) -> float:
    """The engine's inverse normal CDF (Acklam's approximation, cpp/base/distributions.hpp)."""
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
         1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
         6.680131188771972e+01, -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
         -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)
    low = 0.02425
    if low <= p <= 1.0 - low:
        q = p - 0.5
        r = q * q
        return ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
                (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0))
    q = math.sqrt(-2.0 * math.log(p if p < low else 1.0 - p))
    x = ((((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
         ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0))
    return x if p < low else -x


# The largest standard normal deviate the engine can draw: one uniform per deviate, the largest
# uniform (1 - 2^-33) from the largest 32-bit word. About 6.34.
MAX_NORMAL_DEVIATE = _inverse_normal(_uniform_of_word(2**32 - 1))
# The largest exponential deviate (in units of the scale): -log of the smallest uniform, 33 ln 2.
MAX_EXPONENTIAL_DEVIATE = -math.log(_uniform_of_word(0))


def _check_population_name(name) -> None:
    """Refuses names the output cannot hold: spikes.h5 keeps each population's spikes in the HDF5
    group /spikes/<name>, which cannot be empty or '.', and in which '/' nests groups and NUL
    ends the name."""
    if not isinstance(name, str):
        raise ConfigError(f"Population: 'name' must be a string (Population(name, size, params, ...)), got "
                          f"{name!r:.60} ({type(name).__name__})")
    rule = ("is empty" if not name else "is '.'" if name == "." else "contains '/'" if "/" in name else
            "contains NUL" if "\0" in name else None)
    if rule:
        raise ConfigError(f"population {name!r}: the name {rule}; spikes.h5 keeps each population's spikes in an "
                          f"HDF5 group of its name, which cannot be empty or '.', nor hold '/' or NUL: choose another")


def _population_size(name: str, size) -> int:
    """A positive integer (a NumPy integer too, as a Python int), refused otherwise (booleans too)."""
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size <= 0:
        raise ConfigError(f"population '{name}': 'size' must be a positive integer, got {size!r}")
    return int(size)


@dataclass
class Population:
    """`size` neurons of one model (a key of NEURON_MODELS; ranvier.core.neurons lists their
    parameters, units and defaults).

    params: parameter -> value; left out, a parameter takes its model's default. A value is one
    number for every neuron, or, for the parameters the model lets vary per neuron (all membrane
    parameters of lifca, psc_exp and iaf_psc_alpha), an array of one value per neuron or a
    distribution (ranvier.core.random: Normal, Uniform, Lognormal) drawn by the engine per neuron.
    initial: the initial state: "reset" (lifca: V = H; psc_exp, iaf_psc_alpha: V ~
    N(V0_mean_mV, V0_sd_mV)), "uniform" (lifca: V ~ U[H, theta)), or the initial membrane
    potential per neuron, an array or a distribution, in the potentials of the model's parameters
    (lifca: mV relative to rest; psc_exp, iaf_psc_alpha: absolute mV).
    """
    name: str
    size: int
    params: dict = field(default_factory=dict)
    initial: object = "reset"       # "reset", "uniform", or per neuron: an array or a distribution
    excitatory: bool = True
    first_id: int = 0               # assigned by Network.add_population
    origin: dict = field(default_factory=dict)   # parameter -> the model parameter that set it
    model: str = "lifca"            # a key of NEURON_MODELS
    area: str | None = None         # the brain area it belongs to (multi-area models)
    tau_minus_ms: float = 20.0      # STDP: the post-synaptic trace's time constant (NEST's tau_minus)
    tau_minus_triplet_ms: float = 110.0   # triplet STDP: the second one (NEST's tau_minus_triplet)
    # The parameters that validate() filled in from the model's defaults.
    defaulted: set = field(default_factory=set, init=False, repr=False, compare=False)

    def __post_init__(self):
        # A model class (ranvier.nestml.neuron_model's) stands for its name.
        if isinstance(self.model, type) and issubclass(self.model, NeuronModel):
            self.model = self.model.name
        # A wrong positional type (Population(5, 10, params)) is named here, not at the build.
        _check_population_name(self.name)
        self.size = _population_size(self.name, self.size)

    def validate(self) -> None:
        _check_population_name(self.name)
        where = f"population '{self.name}'"
        if self.area is not None and (not isinstance(self.area, str) or not self.area):
            raise ConfigError(f"{where}: 'area' must be a non-empty string or None, got {self.area!r}")
        self.size = _population_size(self.name, self.size)
        if not isinstance(self.excitatory, (bool, np.bool_)):
            raise ConfigError(f"{where}: 'excitatory' must be true or false, got {self.excitatory!r}")
        self.excitatory = bool(self.excitatory)
        if isinstance(self.tau_minus_ms, bool) or not isinstance(self.tau_minus_ms, numbers.Real) or \
                not self.tau_minus_ms > 0 or not math.isfinite(self.tau_minus_ms):
            raise ConfigError(f"{where}: 'tau_minus_ms' (the STDP trace of its spikes) must be a positive number "
                              f"of ms, got {self.tau_minus_ms!r}")
        if isinstance(self.tau_minus_triplet_ms, bool) or not isinstance(self.tau_minus_triplet_ms, numbers.Real) or \
                not self.tau_minus_triplet_ms > 0 or not math.isfinite(self.tau_minus_triplet_ms):
            raise ConfigError(f"{where}: 'tau_minus_triplet_ms' (the triplet STDP trace of its spikes) must be a "
                              f"positive number of ms, got {self.tau_minus_triplet_ms!r}")
        if self.model not in NEURON_MODELS:
            raise ConfigError(f"{where}: 'model' must be one of {sorted(NEURON_MODELS)}, got {self.model!r}")
        if not isinstance(self.params, dict):
            raise ConfigError(f"{where}: 'params' must be a dict of parameter -> value, got {self.params!r:.60}")
        model = NEURON_MODELS[self.model]
        known = model.parameters
        unknown = set(self.params) - set(known)
        if unknown:
            raise ConfigError(f"{where}: unknown {self.model} parameter(s) {sorted(unknown)}; "
                              f"known: {sorted(known)}")
        defaults = {k: v for k, v in model.defaults().items() if k not in self.params}
        if defaults:                    # left out, and the model has a default: a copy with it
            self.params = {**self.params, **defaults}
            self.defaulted = self.defaulted | set(defaults)
        missing = set(known) - set(self.params)
        if missing:
            raise ConfigError(f"{where}: missing {self.model} parameter(s) {sorted(missing)}")
        self.params, self.initial = model.read_values(self, where)   # arrays read; per-neuron values allowed?
        model.check(self, where)

    def neuron_values(self, name: str, seed: int = 1):
        """Parameter `name` of every neuron (NumPy array, population order), as a simulation
        with this seed gives them: the number repeated, the array, or the engine's draws of a
        distribution. "initial": the initial potentials set per neuron."""
        self.validate()
        return NEURON_MODELS[self.model].neuron_values(self, name, seed)


# The connection rules of a Projection: the field (or fields) that choose each.
CONNECTION_RULES = ("probability", "total_synapses", "indegree", "outdegree", "sources/targets")
# The delay fields of the two distributions; none of them combines with a constant delay_ms.
DELAY_LAW_FIELDS = ("delay_offset_ms", "delay_scale_ms", "delay_cut_ms", "delay_step_ms", "delay_mean_ms",
                    "delay_sd_ms", "delay_redraw_below_ms", "delay_redraw_above_ms")
# Engine-side limits: a target's in-degree from one projection is a 32-bit count; a drive's
# synapses per neuron a signed 64-bit one (DriveSpec::n_synapses, cpp/base/spec.hpp).
MAX_DEGREE = 2**32 - 1
MAX_DRIVE_SYNAPSES = 2**63 - 1


def _count(where: str, name: str, value) -> int:
    """A non-negative integer (a NumPy integer too), refused otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ConfigError(f"{where}: '{name}' must be a non-negative integer, got {value!r}")
    return int(value)


def _unit_text(pop) -> str:
    """The unit of weights into a population: 'pA (the input unit of iaf_psc_alpha)'."""
    unit = NEURON_MODELS[pop.model].input_unit
    return f"{unit}, the input unit of {pop.model}" if unit else f"{pop.model} ignores its input"


@dataclass(kw_only=True)
class Projection:
    """Synapses from population `source` onto population `target` (names), by exactly one rule:

    - probability=p: every ordered pair (s in source, t in target, s != t) with probability p
      (pairwise Bernoulli); autapses=True lets s = t be a pair too;
    - total_synapses=S: exactly S synapses, each with a source and a target drawn uniformly
      (multapses and autapses allowed; the rule of the microcircuit);
    - indegree=K: every target exactly K synapses, sources drawn uniformly with replacement
      (NEST's fixed_indegree with autapses and multapses allowed);
    - outdegree=K: every source exactly K synapses, targets drawn uniformly with replacement
      (NEST's fixed_outdegree, likewise);
    - sources=[...], targets=[...]: one synapse per pair of entries, population-local ids;
      weight and delay_ms may then be arrays of the same length. The order of the list is the
      order of a target's synapses.

    weight (with weight_sd, default 0): in the target model's input unit (NEURON_MODELS[model].
    input_unit: mV for lifca, a jump of V; pA for psc_exp and iaf_psc_alpha, a jump of the
    synaptic current). With weight_sd > 0, Gaussian, redrawn until strictly between 0 and
    2 * weight (sign kept); with weight_clip, set to zero where the sign flips instead.

    synapse: None (static synapses) or a plasticity rule, rv.STDP(...) or rv.STDPPowerLaw(...)
    (ranvier.core.plasticity: NEST's stdp_synapse family); the weights above are then the initial ones.

    Delays: delay_ms=d, a constant (the simple case), a whole number of steps. Or a
    delay_distribution: "exponential" (the DPSNN delay law), delay_offset_ms + floor(x /
    delay_step_ms) * delay_step_ms with x exponential of scale delay_scale_ms, redrawn until
    x < delay_cut_ms; "normal": x ~ N(delay_mean_ms, delay_sd_ms) redrawn until x >=
    delay_offset_ms (or >= delay_redraw_below_ms when given) and, with delay_redraw_above_ms,
    until also x <= that (NEST's redraw(normal, min, max)), rounded to the nearest step, at
    least delay_offset_ms. delay_distribution defaults to "constant" when delay_ms is given and
    to "exponential" otherwise.
    """
    source: str
    target: str
    weight: float | Sequence[float]
    probability: float | None = None
    total_synapses: int | None = None
    indegree: int | None = None
    outdegree: int | None = None
    sources: Sequence[int] | None = None
    targets: Sequence[int] | None = None
    weight_sd: float = 0.0
    weight_clip: bool = False
    delay_ms: float | Sequence[float] | None = None
    delay_distribution: str | None = None
    delay_offset_ms: float | None = None
    delay_scale_ms: float | None = None
    delay_cut_ms: float | None = None
    delay_step_ms: float | None = None        # exponential: 1 ms when left out
    delay_mean_ms: float | None = None
    delay_sd_ms: float | None = None
    delay_redraw_below_ms: float | None = None
    delay_redraw_above_ms: float | None = None  # normal only: draws above it are redrawn
    # Static (None) or plastic: a synapse kind of ranvier.core.plasticity (rv.STDP, rv.STDPPowerLaw).
    synapse: object = None
    # With indegree=K: the K sources drawn over a grid of columns by distance (ranvier.core.grid.ColumnGrid).
    grid: object = None
    # probability=p only: whether a neuron may connect to itself where source and target are one
    # population (PyNN's allow_self_connections; NEST's allow_autapses). Left out: no autapses.
    autapses: bool = False
    origin: dict = field(default_factory=dict)   # field -> the model parameter that set it, for errors
    # Onto a model with receptors (NeuronModel.receptors: the *_multisynapse models): the
    # receptor its synapses add into, 1..R (NEST's receptor_type). Left out for the other models,
    # where the weight's sign chooses between excitatory and inhibitory input.
    receptor: int | None = None

    # -- the rule ---------------------------------------------------------------------------
    @property
    def rule(self) -> str:
        """The connection rule's field: probability, total_synapses, indegree, outdegree or
        sources/targets (valid after validate())."""
        return next(r for r in CONNECTION_RULES if self._given(r))

    def _given(self, rule: str) -> bool:
        if rule == "sources/targets":
            return self.sources is not None or self.targets is not None
        return getattr(self, rule) is not None

    @property
    def is_list(self) -> bool:
        return self.sources is not None

    def weight_array(self) -> np.ndarray | None:
        """The weights of a list, one per entry; None where weight is a scalar."""
        return self.weight if isinstance(self.weight, np.ndarray) else None

    def delay_array_ms(self) -> np.ndarray | None:
        """The delays (ms) of a list, one per entry; None where delay_ms is a scalar or absent."""
        return self.delay_ms if isinstance(self.delay_ms, np.ndarray) else None

    def validate(self, source=None, target=None) -> None:
        """Checks of the values alone; source and target are the Populations (Network.connect
        passes them), for the ranges of list ids and the unit of weights in messages."""
        where = f"projection {self.source}->{self.target}"
        given = [r for r in CONNECTION_RULES if self._given(r)]
        if not given:
            raise ConfigError(f"{where}: no connection rule; give exactly one of probability=, total_synapses=, "
                              f"indegree=, outdegree=, or sources= with targets=")
        if len(given) > 1:
            raise ConfigError(f"{where}: give exactly one connection rule, got {' and '.join(given)}")
        rule = given[0]
        if rule == "probability":
            p = _positive(where, "probability", self.probability, allow_zero=True)
            if p > 1.0:
                raise ConfigError(f"{where}: 'probability' must lie in [0, 1], got {self.probability!r}")
        elif rule == "sources/targets":
            self._validate_list(where, source, target)
        else:
            k = _count(where, rule, getattr(self, rule))
            if rule != "total_synapses" and k > MAX_DEGREE:
                raise ConfigError(f"{where}: '{rule}' = {k} exceeds the engine's {MAX_DEGREE} synapses per neuron")
            setattr(self, rule, k)
        self._validate_weight(where, target)
        self._validate_receptor(where, target)
        self._validate_delays(where)
        self._validate_synapse(where)
        self._validate_grid(where, rule, source, target)
        if not isinstance(self.autapses, bool):
            raise ConfigError(f"{where}: 'autapses' must be true or false, got {self.autapses!r}")
        if self.autapses and rule != "probability":
            raise ConfigError(f"{where}: 'autapses' chooses among the pairs of probability=p; the other rules allow "
                              f"autapses already")

    def _validate_receptor(self, where: str, target) -> None:
        r = self.receptor
        if r is not None and (isinstance(r, bool) or not isinstance(r, (int, np.integer))):
            raise ConfigError(f"{where}: 'receptor' must be a whole number (1 for the first receptor), got {r!r:.60}")
        if target is None:
            return
        model = NEURON_MODELS[target.model]
        receptors = model.receptors(target.params)
        if receptors == 0:
            if r is not None:
                raise ConfigError(f"{where}: the target's model '{target.model}' has no receptors (the weight's sign "
                                  f"chooses its input); leave 'receptor' out")
            return
        if r is None or not 1 <= r <= receptors:
            got = "none" if r is None else repr(r)
            raise ConfigError(f"{where}: the target's model '{target.model}' has {receptors} receptor(s); give "
                              f"receptor=1..{receptors} (NEST's receptor_type), got {got}")
        self.receptor = int(r)
        if model.input_unit == "nS":
            w = self.weight_array()
            low = float(w.min()) if w is not None and w.size else float(self.weight)
            if low < 0:
                raise ConfigError(f"{where}: weights onto the conductances of '{target.model}' must be at least 0 "
                                  f"(NEST's rule), got {low:g} nS; the receptor's E_rev_mV makes it inhibitory")

    def _validate_grid(self, where: str, rule: str, source, target) -> None:
        if self.grid is None:
            return
        from .grid import ColumnGrid
        if not isinstance(self.grid, ColumnGrid):
            raise ConfigError(f"{where}: 'grid' must be a rv.ColumnGrid(columns_x, columns_y, ...), got {self.grid!r:.80}")
        if rule != "indegree":
            raise ConfigError(f"{where}: 'grid' draws each target's indegree= sources over the columns; give "
                              f"indegree=K, not {rule}")
        self.grid.validate(where)
        for pop in (source, target):
            if pop is not None and pop.size % self.grid.columns:
                raise ConfigError(f"{where}: population '{pop.name}' has {pop.size} neurons, not a multiple of the "
                                  f"grid's {self.grid.columns} columns ({self.grid.columns_x} x {self.grid.columns_y})")

    def _validate_synapse(self, where: str) -> None:
        if self.synapse is None:
            return
        if not isinstance(self.synapse, (*SYNAPSE_KINDS, NestmlSynapse)):
            raise ConfigError(f"{where}: 'synapse' must be None (static), one of "
                              f"{', '.join('rv.' + k.__name__ for k in SYNAPSE_KINDS)} or a NESTML synapse model's "
                              f"(rv.nestml.synapse_model), got {self.synapse!r:.80}")
        self.synapse.validate(where)
        w = self.weight_array()          # drawn weights keep the sign of their mean
        low, high = (float(w.min()), float(w.max())) if w is not None else (float(self.weight),) * 2
        self.synapse.check_weights(where, low, high)

    def _validate_list(self, where: str, source, target) -> None:
        if self.sources is None or self.targets is None:
            missing = "targets" if self.targets is None else "sources"
            raise ConfigError(f"{where}: an explicit list needs both sources= and targets=; '{missing}' is missing")
        arrays = {}
        for name in ("sources", "targets"):
            a = np.asarray(getattr(self, name))
            if a.ndim != 1:
                raise ConfigError(f"{where}: '{name}' must be a one-dimensional list of ids, got shape {a.shape}")
            if a.size and not np.issubdtype(a.dtype, np.integer):
                raise ConfigError(f"{where}: '{name}' must hold integer ids (population-local), got dtype {a.dtype}")
            arrays[name] = a
        n, m = arrays["sources"].size, arrays["targets"].size
        if n != m:
            raise ConfigError(f"{where}: 'sources' and 'targets' must have the same length, got {n} and {m}")
        for name, pop in (("sources", source), ("targets", target)):
            ids = arrays[name]
            bad = np.flatnonzero((ids < 0) | (ids >= (pop.size if pop is not None else np.iinfo(np.int64).max)))
            if bad.size:
                i = int(bad[0])
                within = f"population '{pop.name}' (ids are population-local, 0 to {pop.size - 1})" \
                    if pop is not None else "[0, 2^63 - 1)"
                raise ConfigError(f"{where}: {name}[{i}] = {ids[i]} is outside {within}")
        # copies: later changes to the caller's lists do not change the network
        self.sources, self.targets = (np.array(arrays[k], dtype=np.int64) for k in ("sources", "targets"))

    def _per_entry(self, where: str, name: str) -> np.ndarray | None:
        """weight or delay_ms as an array of one value per list entry, None for a scalar; arrays
        only with an explicit list, and of its length."""
        value = getattr(self, name)
        if np.ndim(value) == 0:
            return None
        if not self.is_list:
            raise ConfigError(f"{where}: an array of '{name}' needs an explicit list (sources=, targets=); "
                              f"the {self.rule} rule takes one '{name}'")
        try:
            a = np.array(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: '{name}' must be a number or an array of numbers") from None
        if a.ndim != 1 or a.size != self.sources.size:
            raise ConfigError(f"{where}: '{name}' must be a number or an array of one per list entry "
                              f"({self.sources.size}), got shape {a.shape}")
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            raise ConfigError(f"{where}: {name}[{int(bad[0])}] = {a[bad[0]]} is not a finite number")
        return a

    def _validate_weight(self, where: str, target) -> None:
        unit = f" ({_unit_text(target)})" if target is not None else ""
        weights = self._per_entry(where, "weight")
        _positive(where, "weight_sd", self.weight_sd, allow_zero=True)
        if weights is not None:
            if self.weight_sd:
                raise ConfigError(f"{where}: weights given per entry are not drawn: 'weight_sd' must be 0, "
                                  f"got {self.weight_sd!r}")
            self.weight = weights
            return
        if isinstance(self.weight, bool) or not isinstance(self.weight, numbers.Real) or \
                not math.isfinite(self.weight):
            raise ConfigError(f"{where}: 'weight' must be a finite number{unit}, got {self.weight!r}")
        if self.weight == 0 and self.weight_sd:
            raise ConfigError(f"{where}: 'weight' 0 with 'weight_sd' {self.weight_sd!r}: drawn weights keep the "
                              f"mean's sign, and 0 has none; give a non-zero mean{unit} or weight_sd = 0")

    def _validate_delays(self, where: str) -> None:
        law = [name for name in DELAY_LAW_FIELDS if getattr(self, name) is not None]
        if self.delay_distribution is None:
            if self.delay_ms is None and not law:
                raise ConfigError(f"{where}: no delay; give delay_ms= (a constant delay, ms) or a delay_distribution "
                                  f"('exponential' or 'normal') with its fields")
            self.delay_distribution = "constant" if self.delay_ms is not None else "exponential"
        if self.delay_distribution not in DELAY_DISTRIBUTIONS:
            raise ConfigError(f"{where}: 'delay_distribution' must be one of {DELAY_DISTRIBUTIONS}, "
                              f"got {self.delay_distribution!r}")
        if self.delay_distribution == "constant":
            if self.delay_ms is None:
                raise ConfigError(f"{where}: delay_distribution 'constant' needs delay_ms= (ms)")
            if law:
                raise ConfigError(f"{where}: 'delay_ms' is a constant delay and does not combine with "
                                  f"{', '.join(repr(n) for n in law)}; give one or the other")
            delays = self._per_entry(where, "delay_ms")
            if delays is not None:
                if not delays.size:
                    raise ConfigError(f"{where}: 'delay_ms' is an empty array; the list has no entries: give a number")
                bad = np.flatnonzero(delays <= 0)
                if bad.size:
                    i = int(bad[0])
                    raise ConfigError(f"{where}: delay_ms[{i}] must be positive, got {delays[i]!r}")
                self.delay_ms = delays
            else:
                self.delay_ms = _positive(where, "delay_ms", self.delay_ms)
            return
        if self.delay_ms is not None:
            raise ConfigError(f"{where}: 'delay_ms' is a constant delay and does not combine with delay_distribution "
                              f"'{self.delay_distribution}'; leave out one of them")
        if self.delay_redraw_below_ms is not None:
            _positive(where, "delay_redraw_below_ms", self.delay_redraw_below_ms, allow_zero=True)
        _positive(where, "delay_offset_ms", self.delay_offset_ms)
        if self.delay_redraw_above_ms is not None and self.delay_distribution != "normal":
            raise ConfigError(f"{where}: 'delay_redraw_above_ms' bounds normal delays only; the exponential law is "
                              f"cut by delay_cut_ms")
        if self.delay_distribution == "normal":
            mean = float(self.delay_mean_ms if self.delay_mean_ms is not None else math.nan)
            if not math.isfinite(mean):
                raise ConfigError(f"{where}: normal delays need a finite 'delay_mean_ms', got {self.delay_mean_ms!r}")
            sd = _positive(where, "delay_sd_ms", self.delay_sd_ms, allow_zero=True)
            # Redrawn below the minimum: refuse a law that would almost never reach it.
            if mean + 4 * sd < self.delay_offset_ms:
                label = self.origin.get("delay_offset_ms", "delay_offset_ms")
                raise ConfigError(f"{where}: delays N({mean}, {sd}) ms are redrawn below {label} = "
                                  f"{self.delay_offset_ms} ms and would almost never reach it; raise the mean")
            if self.delay_redraw_above_ms is not None:
                top = _positive(where, "delay_redraw_above_ms", self.delay_redraw_above_ms)
                low = max(self.delay_offset_ms, self.delay_redraw_below_ms or 0.0)
                label = self.origin.get("delay_redraw_above_ms", "delay_redraw_above_ms")
                if top < low:
                    raise ConfigError(f"{where}: '{label}' = {top} ms lies below the shortest delay {low} ms; "
                                      f"delays are drawn between the two: raise it")
                if mean - 4 * sd > top:
                    raise ConfigError(f"{where}: delays N({mean}, {sd}) ms are redrawn above '{label}' = {top} ms "
                                      f"and would almost never fall below it; lower the mean")
            return
        if self.delay_step_ms is None:
            self.delay_step_ms = 1.0
        _positive(where, "delay_scale_ms", self.delay_scale_ms)
        _positive(where, "delay_cut_ms", self.delay_cut_ms)
        _positive(where, "delay_step_ms", self.delay_step_ms)

    # -- what the rule and the laws give ------------------------------------------------------
    def expected_synapses(self, source_size: int, target_size: int) -> float:
        """Synapses this projection is expected to make (exact but for the pairwise rule)."""
        if self.is_list:
            return float(self.sources.size)
        if self.total_synapses is not None:
            return float(self.total_synapses)
        if self.indegree is not None:
            inside = self.grid.in_bounds_fraction() if self.grid is not None else 1.0
            return float(self.indegree) * target_size * inside
        if self.outdegree is not None:
            return float(self.outdegree) * source_size
        pairs = source_size * target_size - (min(source_size, target_size) if self.source == self.target else 0)
        return self.probability * pairs

    def largest_indegree(self, source_size: int, target_size: int) -> float:
        """Synapses per target neuron: the largest for a list, the mean for the random rules."""
        if self.is_list:
            return float(np.bincount(self.targets).max()) if self.targets.size else 0.0
        if self.indegree is not None:
            return float(self.indegree)
        if self.outdegree is not None:
            return self.outdegree * source_size / target_size
        if self.total_synapses is not None:
            return self.total_synapses / target_size
        return self.probability * source_size

    def min_delay_ms(self) -> float:
        """The shortest delay this projection can have."""
        if self.delay_distribution == "constant":
            delays = self.delay_array_ms()
            return float(self.delay_ms) if delays is None else float(delays.min())
        return self.delay_offset_ms

    def max_delay_steps(self, resolution_ms: float) -> int:
        """The longest delay, in steps, that the engine can give this projection: its drawing
        code (cpp/core/network_build.cpp) evaluated at the extreme uniform it can use."""
        h = resolution_ms
        if self.delay_distribution == "constant":
            delays = self.delay_array_ms()
            return round((self.delay_ms if delays is None else float(delays.max())) / h)
        offset = round(self.delay_offset_ms / h)
        if self.delay_distribution == "normal":
            y = (self.delay_mean_ms + self.delay_sd_ms * MAX_NORMAL_DEVIATE) / h
            if self.delay_redraw_above_ms is not None:               # draws above it are redrawn
                y = min(y, self.delay_redraw_above_ms / h)
            return max(offset, math.floor(min(y, 1e6) + 0.5))       # llround: halves away from zero
        # offset + floor(x / step_ms) * step_ms, x = -scale log(u) redrawn until x < cut
        x_max = self.delay_scale_ms * MAX_EXPONENTIAL_DEVIATE
        if self.delay_cut_ms <= x_max:
            k = math.ceil(self.delay_cut_ms / self.delay_step_ms) - 1     # x stays below the cut
        else:
            k = math.floor(x_max / self.delay_step_ms)
        return offset + max(0, k) * round(self.delay_step_ms / h)

    def check_delay_steps(self, resolution_ms: float) -> None:
        """Every delay a whole number of steps, at least one (Network.validate)."""
        where = f"projection {self.source}->{self.target}"
        h = resolution_ms
        if self.delay_distribution != "constant":
            whole_steps(where, "delay_offset_ms", self.delay_offset_ms, self.origin, h, minimum=1)
            if self.delay_distribution == "exponential":
                whole_steps(where, "delay_step_ms", self.delay_step_ms, self.origin, h, minimum=1)
            return
        delays = self.delay_array_ms()
        # below one step first: that, not the grid, is what a delay of 0.04 ms at 0.1 ms gets wrong
        if delays is None:
            if self.delay_ms / h < 1 - 1e-9:
                label = f"'{self.origin['delay_ms']}'" if "delay_ms" in self.origin else f"{where}: 'delay_ms'"
                raise ConfigError(f"{label} = {self.delay_ms} ms is below the resolution {h} ms; "
                                  f"delays must be at least one step")
            whole_steps(where, "delay_ms", self.delay_ms, self.origin, h, minimum=1)
            return
        n = delays / h
        short = np.flatnonzero(n < 1 - 1e-9)
        if short.size:
            i = int(short[0])
            raise ConfigError(f"{where}: delay_ms[{i}] = {delays[i]} ms is below the resolution {h} ms; "
                              f"delays must be at least one step")
        bad = np.flatnonzero(np.abs(n - np.round(n)) > 1e-9 * np.maximum(1.0, np.abs(n)))
        if bad.size:
            i = int(bad[0])
            raise ConfigError(f"{where}: delay_ms[{i}] = {delays[i]} ms is not a multiple of the resolution {h} ms; "
                              f"choose a multiple or a finer resolution_ms")


def _delay_law(pr: Projection) -> str:
    """The parameters that set a projection's longest delay, named as the user set them."""
    def named(name):
        label = pr.origin.get(name, name)
        return f"'{label}' = {getattr(pr, name):g} ms"
    if pr.delay_distribution == "constant":
        delays = pr.delay_array_ms()
        label = pr.origin.get("delay_ms", "delay_ms")
        return f"'{label}' = {pr.delay_ms:g} ms" if delays is None else f"'{label}' (largest {delays.max():g} ms)"
    if pr.delay_distribution == "normal" and pr.delay_redraw_above_ms is not None:
        return named("delay_redraw_above_ms")
    if pr.delay_distribution == "normal":
        sd = pr.origin.get("delay_sd_ms", "delay_sd_ms")
        return (f"{named('delay_mean_ms')} and '{sd}' = {pr.delay_sd_ms:g} ms (normal delays reach the mean + "
                f"{MAX_NORMAL_DEVIATE:.2f} sd)")
    return f"{named('delay_offset_ms')} and {named('delay_cut_ms')}"


@dataclass
class PoissonDrive:
    """n_synapses independent Poisson trains at rate_hz into each neuron of a population.

    Each event adds a Gaussian efficacy (weight, weight_sd) in the target model's input unit
    (mV for lifca, pA for psc_exp and iaf_psc_alpha). Drawn on the fly, never stored.
    """
    target: str
    n_synapses: int
    rate_hz: float
    weight: float
    weight_sd: float = 0.0
    origin: dict = field(default_factory=dict)   # field -> the model parameter that set it, for errors

    def validate(self) -> None:
        where = f"external drive of '{self.target}'"
        self.n_synapses = _count(where, "n_synapses", self.n_synapses)
        if self.n_synapses > MAX_DRIVE_SYNAPSES:
            raise ConfigError(f"{where}: 'n_synapses' = {self.n_synapses} is more than the engine's 64-bit count "
                              f"holds: at most {MAX_DRIVE_SYNAPSES}")
        _positive(where, "rate_hz", self.rate_hz, allow_zero=True)
        if isinstance(self.weight, bool) or not isinstance(self.weight, numbers.Real) or \
                not math.isfinite(self.weight):
            raise ConfigError(f"{where}: 'weight' must be a finite number, got {self.weight!r}")
        _positive(where, "weight_sd", self.weight_sd, allow_zero=True)


@dataclass
class Network:
    name: str = "network"
    populations: list[Population] = field(default_factory=list)
    projections: list[Projection] = field(default_factory=list)
    drives: list[PoissonDrive] = field(default_factory=list)
    currents: list = field(default_factory=list)     # current sources (ranvier.core.devices.StepCurrent)
    parameters: dict = field(default_factory=dict)   # the model parameters it was made from
    # Read from a SONATA config (ranvier.io.sonata.SonataInfo): its node ids, the output's names.
    sonata: object = field(default=None, repr=False, compare=False)

    @property
    def size(self) -> int:
        # Whatever else the list holds is refused by check_parts, with its name.
        return sum(p.size for p in self.populations if isinstance(p, Population))

    @property
    def column_grid(self):
        """The grid of columns of its grid projections (ranvier.core.grid.ColumnGrid), or None."""
        grids = {(g.columns_x, g.columns_y) for g in (pr.grid for pr in self.projections) if g is not None}
        if len(grids) > 1:
            raise ConfigError(f"network '{self.name}': its projections lay out different grids of columns {sorted(grids)}")
        return next((pr.grid for pr in self.projections if pr.grid is not None), None)

    def population(self, name: str) -> Population:
        for p in self.populations:
            if p.name == name:
                return p
        raise ConfigError(f"no population named '{name}'; populations: {[p.name for p in self.populations]}")

    def add_population(self, pop: Population) -> Population:
        self._check_population(pop, {p.name for p in self.populations})
        pop.first_id = self.size
        self.populations.append(pop)
        return pop

    def connect(self, proj: Projection) -> Projection:
        self._check_projection(proj)
        self.projections.append(proj)
        return proj

    def drive(self, d: PoissonDrive) -> PoissonDrive:
        self._check_drive(d, {other.target for other in self.drives})
        self.drives.append(d)
        return d

    def inject(self, source):
        """A current source (rv.StepCurrent, rv.DCCurrent, rv.NoiseCurrent, rv.ACCurrent) on a population's
        neurons."""
        self._check_current(source)
        self.currents.append(source)
        return source

    # The checks of add_population, connect, drive and inject; validate() runs them again on
    # what is there at build time.
    @staticmethod
    def _check_population(pop, names_before) -> None:
        if not isinstance(pop, Population):
            raise ConfigError(f"add_population needs a ranvier Population, got {type(pop).__name__}")
        if pop.name in names_before:
            raise ConfigError(f"population '{pop.name}' is defined twice")
        pop.validate()

    def _check_projection(self, proj) -> None:
        if not isinstance(proj, Projection):
            raise ConfigError(f"connect needs a ranvier Projection, got {type(proj).__name__}")
        proj.validate(self.population(proj.source), self.population(proj.target))

    def _check_drive(self, d, targets_before) -> None:
        if not isinstance(d, PoissonDrive):
            raise ConfigError(f"drive needs a ranvier PoissonDrive, got {type(d).__name__}")
        target = self.population(d.target)
        if NEURON_MODELS[target.model].receptors(target.params):
            raise ConfigError(f"external drive of '{d.target}': its model '{target.model}' has receptors and a drive "
                              f"names none; connect a population of poisson_source neurons to a receptor instead")
        if d.target in targets_before:
            raise ConfigError(f"population '{d.target}' already has a Poisson drive; give it one drive "
                              f"with the summed rate (n_synapses * rate_hz)")
        d.validate()

    def _check_current(self, source) -> None:
        from .devices import CURRENT_SOURCES
        if not isinstance(source, CURRENT_SOURCES):
            raise ConfigError(f"inject needs a ranvier StepCurrent, DCCurrent, NoiseCurrent or ACCurrent, got "
                              f"{type(source).__name__}")
        source.validate(self.population(source.target))

    def check_parts(self) -> None:
        """Every population, projection, drive and current source checked again as when it was
        added, so that a field changed since (net.projections[0].probability = 7.0) is refused
        with the same message; global ids are assigned again from the sizes as they are now."""
        first, names = 0, set()
        for p in self.populations:
            self._check_population(p, names)
            names.add(p.name)
            p.first_id, first = first, first + p.size
        for pr in self.projections:
            self._check_projection(pr)
        targets = set()
        for d in self.drives:
            self._check_drive(d, targets)
            targets.add(d.target)
        for c in self.currents:
            self._check_current(c)

    def projection_synapses(self, pr: Projection) -> float:
        """The synapses a projection is expected to make (exact but for the pairwise rule)."""
        return pr.expected_synapses(self.population(pr.source).size, self.population(pr.target).size)

    def expected_synapses(self) -> float:
        return sum(self.projection_synapses(pr) for pr in self.projections)

    def min_delay_ms(self) -> float:
        return min((p.min_delay_ms() for p in self.projections), default=float("inf"))

    @property
    def areas(self) -> list[str]:
        """The areas of the populations, in order of first appearance."""
        return list(dict.fromkeys(p.area for p in self.populations if p.area is not None))

    def is_inter_area(self, proj: Projection) -> bool:
        """A projection between two different areas (False when either has none)."""
        a, b = self.population(proj.source).area, self.population(proj.target).area
        return a is not None and b is not None and a != b

    def min_inter_area_delay_ms(self) -> float:
        return min((p.min_delay_ms() for p in self.projections if self.is_inter_area(p)), default=float("inf"))

    def min_intra_area_delay_ms(self) -> float:
        return min((p.min_delay_ms() for p in self.projections if not self.is_inter_area(p)), default=float("inf"))

    def largest_global_interval(self, resolution_ms: float, steps_per_cycle: int, overlap: bool = False) -> int:
        """The most cycles a spike may wait for the two-tier global exchange: the shortest
        inter-area delay in whole cycles, less one with overlap (the global exchange of a window
        then finishes one cycle after it); 1 without inter-area projections. Records carry
        16-bit step offsets, so at most 65535 steps."""
        inter_ms = self.min_inter_area_delay_ms()
        if not math.isfinite(inter_ms):
            return 1
        cycles = round(inter_ms / resolution_ms) // steps_per_cycle - (1 if overlap else 0)
        return min(cycles, 65535 // steps_per_cycle)

    def expected_spike_rate_hz(self, pop: Population, default_hz: float = 5.0) -> float:
        """The rate a population is expected to fire at (the area placement's cost model): its
        model's rate where the model fixes one, `default_hz` where it depends on the dynamics."""
        return NEURON_MODELS[pop.model].placement_rate_hz(pop.params, default_hz)

    def validate(self, resolution_ms: float) -> None:
        """Every part checked again (check_parts), then the checks that need the time grid: every
        delay and period is a whole number of steps, and fits the engine's fields."""
        if not self.populations:
            raise ConfigError("the network has no populations")
        self.check_parts()

        for pr in self.projections:
            where = f"projection {pr.source}->{pr.target}"
            pr.check_delay_steps(resolution_ms)
            longest = pr.max_delay_steps(resolution_ms)
            if longest > MAX_DELAY_STEPS:
                raise ConfigError(f"{_delay_law(pr)} give delays up to {longest * resolution_ms:g} ms = {longest:.6g} "
                                  f"steps ({where}); the engine stores delays of at most {MAX_DELAY_STEPS} steps, "
                                  f"{MAX_DELAY_STEPS * resolution_ms:g} ms at resolution_ms = {resolution_ms:g}: "
                                  f"use shorter delays or a coarser resolution_ms")
        for p in self.populations:
            NEURON_MODELS[p.model].check_resolution(p, resolution_ms)
