"""A validated description of a network: populations, projections, external drive.

This is plain data. Nothing is built here: `Simulation` hands the description to the
engine, which generates on each rank only the synapses whose target lives there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .checks import positive as _positive, whole_steps
from .errors import ConfigError
from .neurons import INITIAL_STATES, NEURON_MODELS  # noqa: F401  (neuron models: ranvier.neurons)

DELAY_DISTRIBUTIONS = ("exponential", "normal")
# The engine stores a synapse's delay in 16 bits (cpp/core/network_build.cpp): at most 65535 steps.
MAX_DELAY_STEPS = 65535


def _uniform_of_word(word: int) -> float:
    """The engine's to_uniform (cpp/core/philox.hpp): (word + 1/2) 2^-32, in (0, 1)."""
    return (word + 0.5) * 2.0 ** -32


def _inverse_normal(p: float) -> float:
    """The engine's inverse normal CDF (Acklam's approximation, cpp/core/distributions.hpp)."""
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


@dataclass
class Population:
    """`size` neurons of one model (a key of NEURON_MODELS; ranvier.neurons lists their
    parameters, units and defaults).

    params: parameter -> value; left out, a parameter takes its model's default. A value is one
    number for every neuron, or, for the parameters the model lets vary per neuron (all membrane
    parameters of lifca, psc_exp and iaf_psc_alpha), an array of one value per neuron or a
    distribution (ranvier.random: Normal, Uniform, Lognormal) drawn by the engine per neuron.
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
    # The parameters that validate() filled in from the model's defaults.
    defaulted: set = field(default_factory=set, init=False, repr=False, compare=False)

    def validate(self) -> None:
        where = f"population '{self.name}'"
        if self.area is not None and (not isinstance(self.area, str) or not self.area):
            raise ConfigError(f"{where}: 'area' must be a non-empty string or None, got {self.area!r}")
        if not isinstance(self.size, int) or isinstance(self.size, bool) or self.size <= 0:
            raise ConfigError(f"{where}: 'size' must be a positive integer, got {self.size!r}")
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


@dataclass
class Projection:
    """All ordered pairs (s in source, t in target, s != t) connected with probability p; or, with
    total_synapses set, exactly that many synapses, each with a source and a target drawn
    uniformly (multapses and autapses allowed; the rule of the microcircuit).

    weight: Gaussian (mean_mV, sd_mV) in the target's input unit (mV for lifca, pA for psc_exp),
    redrawn until strictly between 0 and 2 * mean (sign kept); with weight_clip, set to zero
    where the sign flips instead. delay, "exponential" (the DPSNN delay law): offset_ms + floor(x / step_ms) *
    step_ms with x exponential of scale scale_ms, redrawn until x < cut_ms. "normal": x ~
    N(delay_mean_ms, delay_sd_ms) redrawn until x >= delay_offset_ms (or >= delay_redraw_below_ms
    when given), rounded to the nearest step, at least delay_offset_ms.
    """
    source: str
    target: str
    probability: float
    weight_mean_mV: float
    weight_sd_mV: float
    delay_offset_ms: float
    delay_scale_ms: float | None = None
    delay_cut_ms: float | None = None
    delay_step_ms: float = 1.0
    origin: dict = field(default_factory=dict)   # field -> the model parameter that set it, for errors
    delay_distribution: str = "exponential"
    delay_mean_ms: float | None = None
    delay_sd_ms: float | None = None
    total_synapses: int | None = None
    weight_clip: bool = False
    delay_redraw_below_ms: float | None = None

    def validate(self) -> None:
        where = f"projection {self.source}->{self.target}"
        p = float(self.probability)
        if not (0.0 <= p <= 1.0):
            raise ConfigError(f"{where}: 'probability' must lie in [0, 1], got {self.probability!r}")
        if self.total_synapses is not None and (not isinstance(self.total_synapses, int)
                                                or isinstance(self.total_synapses, bool) or self.total_synapses < 0):
            raise ConfigError(f"{where}: 'total_synapses' must be a non-negative integer, got {self.total_synapses!r}")
        if self.delay_redraw_below_ms is not None:
            _positive(where, "delay_redraw_below_ms", self.delay_redraw_below_ms, allow_zero=True)
        if self.weight_mean_mV == 0:
            raise ConfigError(f"{where}: 'weight_mean_mV' must be non-zero (its sign says excitatory or inhibitory)")
        _positive(where, "weight_sd_mV", self.weight_sd_mV, allow_zero=True)
        _positive(where, "delay_offset_ms", self.delay_offset_ms)
        if self.delay_distribution not in DELAY_DISTRIBUTIONS:
            raise ConfigError(f"{where}: 'delay_distribution' must be one of {DELAY_DISTRIBUTIONS}, "
                              f"got {self.delay_distribution!r}")
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
            return
        _positive(where, "delay_scale_ms", self.delay_scale_ms)
        _positive(where, "delay_cut_ms", self.delay_cut_ms)
        _positive(where, "delay_step_ms", self.delay_step_ms)

    def max_delay_steps(self, resolution_ms: float) -> int:
        """The longest delay, in steps, that the engine can draw for this projection: its drawing
        code (cpp/core/network_build.cpp) evaluated at the extreme uniform it can use."""
        h = resolution_ms
        offset = round(self.delay_offset_ms / h)
        if self.delay_distribution == "normal":
            y = (self.delay_mean_ms + self.delay_sd_ms * MAX_NORMAL_DEVIATE) / h
            return max(offset, math.floor(min(y, 1e6) + 0.5))       # llround: halves away from zero
        # offset + floor(x / step_ms) * step_steps, x = -scale log(u) redrawn until x < cut
        x_max = self.delay_scale_ms * MAX_EXPONENTIAL_DEVIATE
        if self.delay_cut_ms <= x_max:
            k = math.ceil(self.delay_cut_ms / self.delay_step_ms) - 1     # x stays below the cut
        else:
            k = math.floor(x_max / self.delay_step_ms)
        return offset + max(0, k) * round(self.delay_step_ms / h)


def _delay_law(pr: Projection) -> str:
    """The parameters that set a projection's longest delay, named as the user set them."""
    def named(name):
        label = pr.origin.get(name, name)
        return f"'{label}' = {getattr(pr, name):g} ms"
    if pr.delay_distribution == "normal":
        sd = pr.origin.get("delay_sd_ms", "delay_sd_ms")
        return (f"{named('delay_mean_ms')} and '{sd}' = {pr.delay_sd_ms:g} ms (normal delays reach the mean + "
                f"{MAX_NORMAL_DEVIATE:.2f} sd)")
    return f"{named('delay_offset_ms')} and {named('delay_cut_ms')}"


@dataclass
class PoissonDrive:
    """n_synapses independent Poisson trains at rate_hz into each neuron of a population.

    Each event adds a Gaussian efficacy (mean_mV, sd_mV). Drawn on the fly, never stored.
    """
    target: str
    n_synapses: int
    rate_hz: float
    weight_mean_mV: float
    weight_sd_mV: float
    origin: dict = field(default_factory=dict)   # field -> the model parameter that set it, for errors

    def validate(self) -> None:
        where = f"external drive of '{self.target}'"
        if not isinstance(self.n_synapses, int) or self.n_synapses < 0:
            raise ConfigError(f"{where}: 'n_synapses' must be a non-negative integer, got {self.n_synapses!r}")
        _positive(where, "rate_hz", self.rate_hz, allow_zero=True)
        _positive(where, "weight_sd_mV", self.weight_sd_mV, allow_zero=True)


@dataclass
class Network:
    name: str = "network"
    populations: list[Population] = field(default_factory=list)
    projections: list[Projection] = field(default_factory=list)
    drives: list[PoissonDrive] = field(default_factory=list)
    parameters: dict = field(default_factory=dict)   # the model parameters it was made from

    @property
    def size(self) -> int:
        return sum(p.size for p in self.populations)

    def population(self, name: str) -> Population:
        for p in self.populations:
            if p.name == name:
                return p
        raise ConfigError(f"no population named '{name}'; populations: {[p.name for p in self.populations]}")

    def add_population(self, pop: Population) -> Population:
        if any(p.name == pop.name for p in self.populations):
            raise ConfigError(f"population '{pop.name}' is defined twice")
        pop.first_id = self.size
        pop.validate()
        self.populations.append(pop)
        return pop

    def connect(self, proj: Projection) -> Projection:
        self.population(proj.source), self.population(proj.target)
        proj.validate()
        self.projections.append(proj)
        return proj

    def drive(self, d: PoissonDrive) -> PoissonDrive:
        self.population(d.target)
        if any(other.target == d.target for other in self.drives):
            raise ConfigError(f"population '{d.target}' already has a Poisson drive; give it one drive "
                              f"with the summed rate (n_synapses * rate_hz)")
        d.validate()
        self.drives.append(d)
        return d

    def expected_synapses(self) -> float:
        total = 0.0
        for pr in self.projections:
            if pr.total_synapses is not None:
                total += pr.total_synapses
                continue
            ns, nt = self.population(pr.source).size, self.population(pr.target).size
            pairs = ns * nt - (min(ns, nt) if pr.source == pr.target else 0)
            total += pr.probability * pairs
        return total

    def min_delay_ms(self) -> float:
        return min((p.delay_offset_ms for p in self.projections), default=float("inf"))

    @property
    def areas(self) -> list[str]:
        """The areas of the populations, in order of first appearance."""
        return list(dict.fromkeys(p.area for p in self.populations if p.area is not None))

    def is_inter_area(self, proj: Projection) -> bool:
        """A projection between two different areas (False when either has none)."""
        a, b = self.population(proj.source).area, self.population(proj.target).area
        return a is not None and b is not None and a != b

    def min_inter_area_delay_ms(self) -> float:
        return min((p.delay_offset_ms for p in self.projections if self.is_inter_area(p)), default=float("inf"))

    def min_intra_area_delay_ms(self) -> float:
        return min((p.delay_offset_ms for p in self.projections if not self.is_inter_area(p)), default=float("inf"))

    def largest_global_interval(self, resolution_ms: float, steps_per_cycle: int) -> int:
        """The most cycles a spike may wait for the two-tier global exchange: the shortest
        inter-area delay in whole cycles (1 without inter-area projections); records carry
        16-bit step offsets, so at most 65535 steps."""
        inter_ms = self.min_inter_area_delay_ms()
        if not math.isfinite(inter_ms):
            return 1
        return min(round(inter_ms / resolution_ms) // steps_per_cycle, 65535 // steps_per_cycle)

    def expected_spike_rate_hz(self, pop: Population, default_hz: float = 5.0) -> float:
        """The rate a population is expected to fire at (the area placement's cost model): its
        model's rate where the model fixes one, `default_hz` where it depends on the dynamics."""
        return NEURON_MODELS[pop.model].placement_rate_hz(pop.params, default_hz)

    def validate(self, resolution_ms: float) -> None:
        """Checks that need the time grid: every delay and period is a whole number of steps."""
        if not self.populations:
            raise ConfigError("the network has no populations")

        def steps(where, name, value, origin, minimum=0):
            return whole_steps(where, name, value, origin, resolution_ms, minimum)

        for pr in self.projections:
            where = f"projection {pr.source}->{pr.target}"
            steps(where, "delay_offset_ms", pr.delay_offset_ms, pr.origin, minimum=1)
            if pr.delay_distribution == "exponential":
                steps(where, "delay_step_ms", pr.delay_step_ms, pr.origin, minimum=1)
            longest = pr.max_delay_steps(resolution_ms)
            if longest > MAX_DELAY_STEPS:
                raise ConfigError(f"{_delay_law(pr)} give delays up to {longest * resolution_ms:g} ms = {longest} "
                                  f"steps ({where}); the engine stores delays of at most {MAX_DELAY_STEPS} steps, "
                                  f"{MAX_DELAY_STEPS * resolution_ms:g} ms at resolution_ms = {resolution_ms:g}: "
                                  f"use shorter delays or a coarser resolution_ms")
        for p in self.populations:
            NEURON_MODELS[p.model].check_resolution(p, resolution_ms)
