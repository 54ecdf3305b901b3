"""From a Network to the engine's specification, in one place.

`EngineSpec(network, resolution_ms=..., ...)` reads the network once and decides everything the
engine needs from it before anything is built:

- the checks that need the resolution (Network.validate, and each neuron model's), and the
  network's size;
- the communication interval (the minimum delay, halved with overlap), the drive window, and the
  two-tier global interval D with the cycles that cycle-time statistics lump;
- the external drive's limits (Poisson table, 32-bit input sums);
- the fixed-point scale of synaptic input and whether synapses fit in 4 bytes;
- the memory estimate per rank, and its refusal against the tightest memory limit;
- the engine's population, projection and drive specifications (each population's from its
  neuron model, ranvier.core.neurons).

`engine_config(...)` then adds what belongs to the decomposition (threads, exchange, placement,
seed, recording, communicator) and returns the `_engine.EngineConfig`. `Simulation` makes one
EngineSpec and builds the engine from its configuration.

The arithmetic is also here as plain functions of the network (fraction_bits, packs,
drive_bytes, check_drives, ...), so that it can be checked without building anything.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _engine
from ..runtime import resources
from ..errors import ConfigError
from .network import MAX_NORMAL_DEVIATE
from .neurons import NEURON_MODELS
from .plasticity import plasticity_spec

# Bytes per synapse at the peak of the build: 8 stored, delay-segment headers and their growth,
# 2 of temporary delay (measured: 11.2 B per synapse of peak RSS at 368.7 million synapses),
# plus a fixed allowance per rank for Python, NumPy and MPI.
BYTES_PER_SYNAPSE_PEAK = 11.0          # 8-byte synapses (measured: 12.4 B/synapse for dpsnn, Python included)
BYTES_PER_SYNAPSE_PEAK_PACKED = 7.0    # 4-byte synapses (measured: 6.3 B/synapse for the full microcircuit)
# Plastic synapses (cpp/core/plasticity.hpp) are drawn as wide ones with their weights in double
# precision (8 + 2 + 8 B), then turned into a 4-byte target and an 8-byte weight while both exist.
BYTES_PER_PLASTIC_SYNAPSE_PEAK = 30.0
BASE_BYTES_PER_RANK = 150 * 2**20

# The external drive (Engine::drive, cpp/core/engine.cpp; PoissonTable, cpp/base/distributions.hpp).
DRIVE_CHUNK = 512                      # neurons whose events are listed at once
DRIVE_EVENT_BYTES = 21                 # per listed event: neuron, word, weight, place (4 B each), tail flag, tail index
POISSON_TABLE_MAX_ENTRIES = 2**31 - 1  # the table's CDF is indexed by int
MIN_FRACTION_BITS = 8                  # the coarsest fixed-point scale of synaptic input (fraction_bits)
# A synapse's weight, a drive event's efficacy and a neuron's input sum per step are signed 32-bit
# words in units of 2^-fraction_bits of the target's input unit (cpp/core/local_network.hpp).
INPUT_WORD_MAX = 2**31 - 1
MAX_NEURONS = 2**40
TWO_TIER = "two-tier"                  # the structure-aware exchange (ranvier.core.simulation)


# -- the fixed-point scale and the synapse layout ------------------------------------------------
def max_abs_weight(pr) -> float:
    """The largest |weight| a projection can give (the engine's max_abs_weight): |z| < 6.5."""
    weights = pr.weight_array()
    if weights is not None:
        return float(np.abs(weights).max()) if weights.size else 0.0
    m = abs(pr.weight)
    if pr.weight_sd > 0:
        m = m + 6.5 * pr.weight_sd if pr.weight_clip else 2 * m
    return max(m, plastic_weight_bound(pr))


def plastic_weight_bound(pr) -> float:
    """The largest |weight| plasticity can reach: |w_max| for STDP; none beyond the initial
    weights for kinds whose weights never change and whose efficacy is the weight (weight_fixed:
    rv.Bernoulli, so that p_transmit = 1 is a static synapse's fixed point too); efficacy_factor
    times the largest initial weight where a kind gives it (rv.QuantalSTP: n sites); the power law
    has no bound, and ten times the largest initial weight is taken (the engine saturates the
    fixed point)."""
    if pr.synapse is None or getattr(pr.synapse, "weight_fixed", False):
        return 0.0
    if hasattr(pr.synapse, "w_max"):
        return abs(pr.synapse.w_max)
    weights = pr.weight_array()
    initial = float(np.abs(weights).max()) if weights is not None and weights.size else abs(pr.weight) * (
        2 if pr.weight_sd > 0 else 1)
    return getattr(pr.synapse, "efficacy_factor", 10) * initial


def typical_abs_weight(pr) -> float | None:
    """The smallest |weight| the fixed-point scale must resolve: the mean, or for weights given per
    entry the smallest non-zero one (None when all are zero)."""
    weights = pr.weight_array()
    if weights is None:
        return abs(pr.weight) or None     # weight 0: a silent projection (NEST's and PyNN's choice)
    nonzero = np.abs(weights[weights != 0])
    return float(nonzero.min()) if nonzero.size else None


def max_weights(network) -> tuple[float, float]:
    """The largest |weight| of any synapse, and of any synapse or external event."""
    synapse = max((max_abs_weight(pr) for pr in network.projections), default=0.0)
    event = max((abs(d.weight) + 10 * d.weight_sd for d in network.drives), default=0.0)
    return synapse, max(synapse, event)


def packs(network, bits: int) -> bool:
    """Whether the engine stores 4-byte synapses at this scale even with the whole network on
    one thread (it checks each thread; fewer neurons per thread only leave more room)."""
    target_bits = max(1, math.ceil(math.log2(max(network.size, 2))))
    if target_bits >= 31:          # no bit left for a weight beside the neuron index
        return False
    return round(max_weights(network)[0] * 2.0 ** bits) < 2.0 ** (31 - target_bits) - 1


def input_bound(network, min_delay_ms: float) -> float:
    """The largest input per step fraction_bits plans for: every synapse of the largest plausible
    in-degree arriving in one step at the largest weight, with the largest drive's events of a
    drive window."""
    net = network
    _, max_weight = max_weights(net)
    in_degree = 0.0
    for p in net.populations:
        k = sum(pr.largest_indegree(net.population(pr.source).size, p.size)
                for pr in net.projections if pr.target == p.name)
        in_degree = max(in_degree, k + 8 * math.sqrt(k + 1))
    external = max((d.n_synapses * d.rate_hz * 1e-3 * min_delay_ms for d in net.drives), default=0.0)
    return max(max_weight, 1e-9) * (in_degree + external + 16 * math.sqrt(external + 1) + 16)


def fraction_bits(network, min_delay_ms: float) -> int:
    """Fixed-point scale 2^-bits for synaptic input, so that no sum can overflow int32.

    Bound: input_bound. Where a coarser scale still resolves the smallest mean weight to 1/1024
    of itself, the scale is lowered until every weight fits beside a neuron index in 32
    bits, so the engine can store synapses in 4 bytes instead of 8. The choice depends on
    the network alone, never on the decomposition. Where even the coarsest scale
    (MIN_FRACTION_BITS) cannot hold the bound, check_fixed_point decides what is refused.
    """
    net = network
    max_synapse, _ = max_weights(net)
    overflow_bits = math.floor(math.log2(INPUT_WORD_MAX / input_bound(net, min_delay_ms)))
    fallback = int(max(MIN_FRACTION_BITS, min(24, overflow_bits)))
    target_bits = max(1, math.ceil(math.log2(max(net.size, 2))))
    if target_bits >= 31:          # 2^31 neurons or more: no 4-byte synapse can hold the index
        return fallback
    packed_bits = math.floor(math.log2((2 ** (31 - target_bits) - 1) / max(max_synapse, 1e-9)))
    weights = [w for w in (typical_abs_weight(pr) for pr in net.projections) if w is not None] + \
              [abs(d.weight) for d in net.drives if d.n_synapses and d.rate_hz]
    smallest = min(weights, default=0.0)
    if packed_bits < overflow_bits and smallest * 2.0 ** packed_bits >= 1024:
        return packed_bits
    return fallback


# -- what the fixed point holds (refused before the build: a word that overflows wraps silently) --
def _in_unit(value: float, unit: str) -> str:
    return f"{value:g} {unit}" if unit else f"{value:g}"


def _weight_reach(pr, unit: str) -> list[tuple[str, float]]:
    """(what the user gave, the largest |weight| it gives a synapse) for a projection: its weights
    as drawn (in (0, 2 weight), or weight + 6.5 sd where clipped: the engine's max_abs_weight),
    and the bound of its plastic weights (STDP's w_max; the power law's saturate, as documented)."""
    label = pr.origin.get("weight", "weight")
    weights = pr.weight_array()
    if weights is not None:
        if not weights.size:
            return []
        i = int(np.argmax(np.abs(weights)))
        out = [(f"'{label}[{i}]' = {_in_unit(weights[i], unit)}", abs(float(weights[i])))]
    elif pr.weight_sd > 0:
        reach = abs(pr.weight) + 6.5 * pr.weight_sd if pr.weight_clip else 2 * abs(pr.weight)
        law = "weight + 6.5 sd, clipped" if pr.weight_clip else "2 x weight"
        out = [(f"'{label}' = {_in_unit(pr.weight, unit)} with '{pr.origin.get('weight_sd', 'weight_sd')}' = "
                f"{_in_unit(pr.weight_sd, unit)} (drawn weights reach {law}: {_in_unit(reach, unit)})", reach)]
    else:
        out = [(f"'{label}' = {_in_unit(pr.weight, unit)}", abs(float(pr.weight)))]
    if pr.synapse is not None and hasattr(pr.synapse, "w_max"):
        out.append((f"'w_max' = {_in_unit(pr.synapse.w_max, unit)}", abs(pr.synapse.w_max)))
    return out


def _most_synapses(pr, source_size: int, target_size: int) -> float:
    """The most synapses of a projection onto one neuron: exact where the rule fixes it (in-degree,
    lists), else the mean and 8 standard deviations (at most every source, for pairs)."""
    k = pr.largest_indegree(source_size, target_size)
    if pr.indegree is not None or pr.is_list:
        return k
    most = k + 8 * math.sqrt(k + 1)
    return min(most, source_size) if pr.probability is not None else most


def check_fixed_point(network, bits: int, min_delay_ms: float, resolution_ms: float) -> None:
    """Refuses what the engine's fixed point of synaptic input cannot hold at this network's
    scale, 2^-bits of each target's input unit (fraction_bits: chosen per network from its
    weights and in-degrees; coarser than 2^-MIN_FRACTION_BITS only where every weight then fits
    a 4-byte synapse): a weight (as drawn, or as plasticity can make it) or a drive event beyond
    a signed 32-bit word, which would wrap (1e9 mV became -8388608 mV); a non-zero weight that
    rounds to 0 (lost); and, where the scale cannot hold fraction_bits' bound, a neuron whose
    input in one step can overflow its 32-bit sum. Plastic weights are kept in double precision
    and rounded when delivered, so their initial values may be small."""
    step = 2.0 ** -bits
    largest = INPUT_WORD_MAX * step
    scale_text = (f"in steps of 2^-{bits} {{unit}} at this network's scale, which is chosen per network from its "
                  f"largest weights and in-degrees")

    def fits(value: float) -> bool:
        return np.rint(abs(value) / step) <= INPUT_WORD_MAX

    def lost(value) -> np.ndarray:
        value = np.asarray(value, dtype=np.float64)
        return (value != 0) & (np.rint(np.abs(value) / step) == 0)

    def too_large(where: str, what: str, unit: str):
        return ConfigError(f"{where}: {what} does not fit the engine's synaptic input, signed 32-bit words "
                           f"{scale_text.format(unit=unit)}: the largest |weight| is {_in_unit(largest, unit)}; "
                           f"lower it")

    def rounds_to_zero(where: str, what: str, unit: str):
        return ConfigError(f"{where}: {what} to 0 in the engine's synaptic input, signed 32-bit words "
                           f"{scale_text.format(unit=unit)}: the smallest |weight| it keeps is just above "
                           f"{_in_unit(step / 2, unit)}; raise it, or lower the network's largest weights")

    net = network
    units = {p.name: NEURON_MODELS[p.model].input_unit or "" for p in net.populations}
    for pr in net.projections:
        where, unit = f"projection {pr.source}->{pr.target}", units[pr.target]
        for what, reach in _weight_reach(pr, unit):
            if not fits(reach):
                raise too_large(where, what, unit)
        if pr.synapse is not None:
            continue
        label, weights = pr.origin.get("weight", "weight"), pr.weight_array()
        if weights is None and lost(pr.weight):
            raise rounds_to_zero(where, f"'{label}' = {_in_unit(pr.weight, unit)} rounds", unit)
        if weights is not None and lost(weights).any():
            at = np.flatnonzero(lost(weights))
            more = f" and {at.size - 1} more non-zero weight(s) round" if at.size > 1 else " rounds"
            raise rounds_to_zero(where, f"'{label}[{at[0]}]' = {_in_unit(weights[at[0]], unit)}{more}", unit)
    for d in net.drives:
        if not d.n_synapses or d.rate_hz <= 0:
            continue
        where, unit = f"external drive of '{d.target}'", units[d.target]
        label, sd_label = d.origin.get("weight", "weight"), d.origin.get("weight_sd", "weight_sd")
        reach = abs(d.weight) + MAX_NORMAL_DEVIATE * d.weight_sd
        what = f"'{label}' = {_in_unit(d.weight, unit)}" + (
            f" with '{sd_label}' = {_in_unit(d.weight_sd, unit)} (events reach {reach:.6g} {unit})"
            if d.weight_sd > 0 else "")
        if not fits(reach):
            raise too_large(where, what, unit)
        if lost(d.weight):
            raise rounds_to_zero(where, f"'{label}' = {_in_unit(d.weight, unit)} rounds", unit)
    if input_bound(net, min_delay_ms) / step <= INPUT_WORD_MAX:
        return
    # fraction_bits' bound overflows even at this scale: each population's own input decides.
    for p in net.populations:
        parts = []
        for pr in net.projections:
            if pr.target == p.name:
                k = _most_synapses(pr, net.population(pr.source).size, p.size)
                what = _weight_reach(pr, units[p.name])[0][0]
                parts.append((k * max_abs_weight(pr),
                              f"projection {pr.source}->{p.name}: {what}, up to {k:.6g} synapses per neuron"))
        for d in net.drives:     # events per step: their efficacies add up around the mean
            if d.target == p.name and d.n_synapses and d.rate_hz > 0:
                e = d.n_synapses * d.rate_hz * 1e-3 * resolution_ms
                events = e + 8 * math.sqrt(e + 1) + 16
                parts.append((events * abs(d.weight) + 8 * math.sqrt(events) * d.weight_sd,
                              f"external drive of '{p.name}': {drive_text(d)} of '{d.origin.get('weight', 'weight')}' "
                              f"= {_in_unit(d.weight, units[p.name])}, up to {events:.3g} events per neuron"))
        total = sum(x for x, _ in parts)
        if total / step > INPUT_WORD_MAX:
            unit = units[p.name]
            most = max(parts)[1]
            raise ConfigError(f"population '{p.name}' can receive {_in_unit(total, unit)} of input in one step (most "
                              f"of it from {most}), more than the engine's 32-bit input sums hold at the coarsest "
                              f"scale these weights allow, 2^-{bits} {unit}: {_in_unit(largest, unit)}; lower the "
                              f"weights or the in-degrees")


def bytes_per_synapse_peak(network, bits: int) -> float:
    """Peak build memory per synapse: 4-byte or 8-byte synapses, with the delays and the
    counts held while they are sorted into rows."""
    return BYTES_PER_SYNAPSE_PEAK_PACKED if packs(network, bits) else BYTES_PER_SYNAPSE_PEAK


# -- what the connection rules hold during the build (ConnectivityPlan, cpp/core/local_network.hpp) --
def rule_bytes(network, threads: int, ranks: int) -> float:
    """Bytes per rank that the connection rules hold while the synapses are built, beyond the
    synapses themselves. Fixed total: a 4-byte in-degree per target neuron, on every rank. Fixed
    out-degree: the sources of the local targets, 8 B per local synapse, an 8-byte offset per
    local target, and a count per local target and thread. Explicit lists: every rank holds the
    whole list twice (the Projection's arrays, 16 B per entry and 8 more per weight or delay, and
    the engine's copy, 16 B, 8 per weight and 2 per delay), and the local entries' indices (8 B
    each) with an offset per local target."""
    total = 0.0
    for pr in network.projections:
        target = network.population(pr.target).size
        local_targets = target / ranks
        local_synapses = network.projection_synapses(pr) / ranks
        if pr.total_synapses is not None:
            total += 4.0 * target
        elif pr.outdegree is not None:
            total += 8.0 * local_synapses + 8.0 * local_targets * (1 + threads)
        elif pr.is_list:
            entries = pr.sources.size
            weights, delays = pr.weight_array() is not None, pr.delay_array_ms() is not None
            total += entries * (16 + 16 + 16 * weights + 10 * delays) + 8.0 * (local_synapses + local_targets)
    return total


# -- counts the engine keeps in 32 (or 24) bits ----------------------------------------------------
MAX_SYNAPSES_PER_THREAD = 2**32 - 1          # a thread's store is indexed by uint32 (SynapseStore)
MAX_PLASTIC_PER_PROJECTION_THREAD = 2**31    # a plastic synapse's weight index (network_build.cpp)
MAX_PLASTIC_INCOMING = 2**24 - 1             # a target spike's reads (PostSpike::reads, plasticity.hpp)


def check_counts(network, ranks: int, threads: int) -> None:
    """Refuses, before the build, what the engine would refuse after pass 1: more synapses on one
    thread than its 32-bit store holds, more plastic synapses of one projection on a thread
    than their 31-bit weight index, or more incoming plastic synapses per neuron than the 24 bits
    that count a target spike's reads. The fullest thread holds at least the mean share,
    and some neuron at least the mean in-degree, so nothing the engine can build is refused."""
    net, share = network, ranks * threads
    per_thread = net.expected_synapses() / share
    if per_thread > MAX_SYNAPSES_PER_THREAD:
        raise ConfigError(f"the network's {net.expected_synapses():.3g} synapses give {per_thread:.3g} per thread on "
                          f"{ranks} rank(s) x {threads} thread(s); a thread holds at most 2^32 - 1: use more threads "
                          f"or ranks (at least {math.ceil(net.expected_synapses() / MAX_SYNAPSES_PER_THREAD)} in all)")
    plastic_in: dict = {}
    for pr in net.projections:
        if pr.synapse is None:
            continue
        synapses = net.projection_synapses(pr)
        if synapses / share > MAX_PLASTIC_PER_PROJECTION_THREAD:
            raise ConfigError(f"projection {pr.source}->{pr.target}: {synapses:.3g} plastic synapses give "
                              f"{synapses / share:.3g} per thread on {ranks} rank(s) x {threads} thread(s); a thread "
                              f"holds at most 2^31 of one plastic projection: use more threads or ranks")
        plastic_in[pr.target] = plastic_in.get(pr.target, 0.0) + synapses / net.population(pr.target).size
    for name, k in plastic_in.items():
        if k > MAX_PLASTIC_INCOMING:
            raise ConfigError(f"population '{name}': {k:.10g} incoming plastic synapses per neuron; the engine counts "
                              f"them in 24 bits, at most 2^24 - 1 = {MAX_PLASTIC_INCOMING}: lower the plastic "
                              f"in-degree")


# -- the external drive (Engine::drive in cpp/core/engine.cpp) ---------------------------------
def poisson_table_entries(mean: float) -> int:
    """Entries of the engine's Poisson table for this mean: counts 0 .. mean + 12 sqrt(mean) + 20."""
    if mean <= 0:
        return 1
    return int(mean + 12.0 * math.sqrt(mean) + 20.0) + 1


def drive_events_per_window(d, resolution_ms: float, drive_steps: int) -> float:
    """Expected external events per neuron in one drive window (drive_steps steps)."""
    return d.n_synapses * d.rate_hz * 1e-3 * resolution_ms * drive_steps


def drive_text(d) -> str:
    """A drive's size as the user set it: 'external_synapses' = 400 x 'external_rate_exc_hz' = 3 Hz."""
    n, rate = d.origin.get("n_synapses", "n_synapses"), d.origin.get("rate_hz", "rate_hz")
    return f"'{n}' = {d.n_synapses} x '{rate}' = {d.rate_hz:g} Hz"


def drive_bytes(network, resolution_ms: float, drive_steps: int, threads: int, ranks: int) -> float:
    """Memory of the external drive on one rank. Per population, the Poisson table holds the
    CDF up to mean + 12 sqrt(mean) + 20 counts (8 B each, in a vector grown by doubling).
    Per thread, the events of DRIVE_CHUNK neurons are listed at once, DRIVE_EVENT_BYTES each,
    in buffers that grow to twice what they hold; one-step windows of fixed efficacy (the
    microcircuit's) list no events but keep 4 words per local neuron."""
    tables = largest_table = events = fixed = 0.0
    for d in network.drives:
        if not d.n_synapses or d.rate_hz <= 0:
            continue
        mean = drive_events_per_window(d, resolution_ms, drive_steps)
        entries = poisson_table_entries(mean)
        tables += 16.0 * entries
        largest_table = max(largest_table, 8.0 * entries)     # old and new storage while it grows
        size = network.population(d.target).size
        if drive_steps == 1 and d.weight_sd == 0:
            fixed += 16.0 * size / ranks
            continue
        m = min(DRIVE_CHUNK, size)
        listed = m * (mean + 3) + 10 * math.sqrt(m * mean) + 32
        events = max(events, 2 * DRIVE_EVENT_BYTES * listed)
    return tables + largest_table + events * threads + fixed


def check_drives(network, resolution_ms: float, drive_steps: int) -> None:
    """Refuses drives the engine cannot draw or sum: more expected events per neuron and window
    than its Poisson table can count (the table is indexed by int: mean + 12 sqrt(mean) + 20
    must stay below 2^31), or an expected input per step beyond the 32-bit fixed-point sums
    at their coarsest scale (2^-MIN_FRACTION_BITS)."""
    h = resolution_ms
    for d in network.drives:
        if not d.n_synapses or d.rate_hz <= 0:
            continue
        where = f"external drive of '{d.target}'"
        mean = drive_events_per_window(d, h, drive_steps)
        per_step = mean / drive_steps
        if mean + 12 * math.sqrt(mean) + 20 >= POISSON_TABLE_MAX_ENTRIES:
            raise ConfigError(f"{where}: {drive_text(d)} gives {mean:.3g} expected events per neuron in "
                              f"each window of {drive_steps * h:g} ms; the engine's Poisson table counts "
                              f"at most about {POISSON_TABLE_MAX_ENTRIES:.3g}: lower the rate or the synapses")
        weight = d.origin.get("weight", "weight")
        unit = NEURON_MODELS[network.population(d.target).model].input_unit or ""
        per_step_input = per_step * abs(d.weight)
        most = (2**31 - 1) / 2.0 ** MIN_FRACTION_BITS
        if per_step_input >= most:
            raise ConfigError(f"{where}: {drive_text(d)} gives {per_step:.3g} expected events per neuron "
                              f"and step of {h:g} ms, each of '{weight}' = {d.weight:g} {unit}: "
                              f"{per_step_input:.3g} {unit} per step, more than the engine's 32-bit input sums hold "
                              f"({most:.3g} at their coarsest scale); lower the rate or the synapses (a neuron "
                              f"of the cortex receives some thousands of external events per second)")


# -- the engine's specification of a network -----------------------------------------------------
class EngineSpec:
    """A network translated for the engine, with every check that needs the resolution, the
    timing choices or the decomposition's size done (see the module's docstring).

    resolution_ms: the time step. overlap: exchange every half minimum delay, overlapped with
    computation. exchange: the Simulation's; for "two-tier" (the structure-aware exchange),
    `global_interval` cycles between global exchanges (None: the largest the inter-area delays
    allow). ranks, threads: the
    decomposition, for the memory estimate. comm: the communicator (ranvier.runtime.parallel) on which
    the ranks decide the memory check together; max_memory_bytes: a limit instead of the
    machine's. Raises ConfigError with the reason for anything the engine cannot run.
    """

    def __init__(self, network, *, resolution_ms: float, overlap: bool = False, exchange: str = "allgather",
                 global_interval: int | None = None, comm, threads: int, max_memory_bytes: int | None = None):
        self.network, self.resolution_ms = network, resolution_ms
        self.ranks, self.threads = comm.size, threads
        network.validate(resolution_ms)
        n = network.size
        if n >= MAX_NEURONS:
            raise ConfigError(f"the network has {n} neurons; at most 2^40 are supported")

        # The communication interval is the minimum delay (half of it, rounded down, with
        # overlap: each interval's exchange runs while the next is computed); with no
        # projections, one step.
        min_delay_steps = round(network.min_delay_ms() / resolution_ms) if network.projections else 1
        self.min_delay_ms = min_delay_steps * resolution_ms
        if overlap and min_delay_steps % 2:
            raise ConfigError(f"overlap needs a minimum delay of an even number of steps (it runs intervals of "
                              f"half of it); it is {self.min_delay_ms:g} ms = {min_delay_steps} step(s) at "
                              f"resolution {resolution_ms:g} ms: use a resolution_ms that divides half the "
                              f"minimum delay, or overlap = false")
        self.overlap = overlap
        self.drive_steps = min_delay_steps
        self.steps_per_cycle = min_delay_steps // 2 if overlap else min_delay_steps
        self.cycle_ms = self.steps_per_cycle * resolution_ms
        self.global_interval = self._global_interval(exchange, global_interval)
        # The D of the structure-aware scheme for this network (cycle-time statistics lump this
        # many cycles, so conventional and two-tier runs are compared on the same terms).
        self.lump_cycles = self.global_interval or max(1, network.largest_global_interval(
            resolution_ms, self.steps_per_cycle, overlap=overlap))

        check_drives(network, resolution_ms, self.drive_steps)
        self.fraction_bits = fraction_bits(network, self.min_delay_ms)
        check_fixed_point(network, self.fraction_bits, self.min_delay_ms, resolution_ms)
        self.packed = packs(network, self.fraction_bits)
        self.bytes_per_synapse_peak = BYTES_PER_SYNAPSE_PEAK_PACKED if self.packed else BYTES_PER_SYNAPSE_PEAK
        self.memory_parts = self._memory_parts()
        self.memory_estimate_bytes = int(sum(self.memory_parts.values()))
        self._check_memory(comm, max_memory_bytes)
        check_counts(network, self.ranks, threads)

        self.populations, self.projections, self.drives = self._engine_specs()
        targeted = {c.target for c in network.currents}
        for pop, spec in zip(network.populations, self.populations):
            spec.injected_current = pop.name in targeted

    # -- the two-tier global interval ---------------------------------------------------------
    def _global_interval(self, exchange: str, requested) -> int:
        """D, the cycles between global exchanges (two-tier), checked against the delays: every
        inter-area delay must last at least D cycles (D + 1 with overlap, whose global exchange
        finishes one cycle after its window), or a spike held back for the global exchange would
        arrive late. 0 for the conventional exchange."""
        if exchange != TWO_TIER:
            if requested is not None:
                raise ConfigError(f"global_interval applies to exchange '{TWO_TIER}' only; exchange is "
                                  f"'{exchange}'")
            return 0
        net, h = self.network, self.resolution_ms
        missing = [p.name for p in net.populations if p.area is None]
        if missing:
            raise ConfigError(f"exchange '{TWO_TIER}' needs every population in an area; {missing} have none: "
                              f"Population(..., area=\"V1\")")
        largest = net.largest_global_interval(h, self.steps_per_cycle, overlap=self.overlap)
        inter_ms = net.min_inter_area_delay_ms()
        if requested is None:
            return max(1, largest)
        if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
            raise ConfigError(f"global_interval must be a positive integer (cycles of {self.cycle_ms:g} ms), "
                              f"got {requested!r}")
        if requested > largest:
            why = (f"the shortest inter-area delay is {inter_ms:g} ms = "
                   f"{round(inter_ms / h) // self.steps_per_cycle} cycle(s) of {self.cycle_ms:g} ms"
                   if math.isfinite(inter_ms) else "there are no inter-area projections")
            if self.overlap and math.isfinite(inter_ms):
                why += (", and with overlap the global exchange of a window finishes one cycle after it, so a "
                        "spike may wait D + 1 cycles")
            raise ConfigError(f"global_interval = {requested} cycles is too long: {why}; a spike held for the "
                              f"global exchange must still arrive in time: choose global_interval <= {largest}")
        return requested

    # -- memory ---------------------------------------------------------------------------------
    def _memory_parts(self) -> dict:
        """Bytes per rank at the peak of the build, part by part: base, synapses, neurons (state
        and per-thread buffers), drive (the external drive's Poisson tables and event buffers),
        rules (what the connection rules hold during the build: rule_bytes)."""
        net, ranks, threads = self.network, self.ranks, self.threads
        plastic = sum(net.projection_synapses(pr) for pr in net.projections if pr.synapse is not None) / ranks
        synapses = net.expected_synapses() / ranks - plastic
        neurons = net.size / ranks
        per_thread = net.size * 4 * 2 + self.drive_steps * neurons / threads * 4
        return {"base": BASE_BYTES_PER_RANK,
                "synapses": synapses * self.bytes_per_synapse_peak + plastic * BYTES_PER_PLASTIC_SYNAPSE_PEAK,
                "neurons": neurons * 64 + per_thread * threads,
                "drive": drive_bytes(net, self.resolution_ms, self.drive_steps, threads, ranks),
                "rules": rule_bytes(net, threads, ranks)}

    def _check_memory(self, comm, max_memory_bytes: int | None) -> None:
        """Refuses a network whose estimate exceeds what any limit leaves: available memory,
        ulimit -v (per rank), cgroup limits (shared by the node's ranks), or max_memory_bytes."""
        per_rank = self.memory_estimate_bytes
        ranks = comm.ranks_on_node
        if max_memory_bytes is not None:
            limits = [resources.MemoryLimit(int(max_memory_bytes),
                                            f"max_memory_bytes allows {resources.gib(max_memory_bytes)}", False)]
        else:
            limits = resources.memory_limits()
        ratio, limit = resources.tightest_memory_limit(per_rank, ranks, limits)
        # Decided together: limits are read per rank, and a rank that refused alone would leave
        # the others waiting in the build.
        if comm.allreduce_max(ratio) <= 1.0:
            return
        per_process = limit is not None and limit.per_process
        need = per_rank if per_process else per_rank * ranks
        parts = self.memory_parts
        detail = (f"{self.network.expected_synapses():.3g} synapses at {self.bytes_per_synapse_peak} B each, "
                  f"{ranks} rank(s) on this node")
        fix = "use fewer neurons or synapses, or more nodes"
        if parts["drive"] > 0.1 * per_rank:
            h, steps = self.resolution_ms, self.drive_steps
            biggest = max((d for d in self.network.drives if d.n_synapses and d.rate_hz > 0),
                          key=lambda d: drive_events_per_window(d, h, steps))
            detail += (f"; {parts['drive'] * (1 if per_process else ranks) / 2**30:.3g} GiB of it for the external "
                       f"drive's Poisson tables and event buffers: {drive_text(biggest)} into "
                       f"'{biggest.target}' gives {drive_events_per_window(biggest, h, steps):.3g} expected events "
                       f"per neuron every {steps * h:g} ms")
            fix = "lower the external drive (rate or synapses), or " + fix
        if per_process:
            fix = "raise ulimit -v, or " + fix
        what = limit.what if limit is not None else "another rank's limit is lower"
        raise ConfigError(f"the network will not fit in memory: estimated {resources.gib(need)} "
                          f"{'per rank' if per_process else 'on this node'} ({detail}), {what}; {fix}")

    # -- the engine's specifications --------------------------------------------------------------
    def _engine_specs(self):
        net, h = self.network, self.resolution_ms
        index = {p.name: i for i, p in enumerate(net.populations)}
        pops = []
        for p in net.populations:
            s = NEURON_MODELS[p.model].to_engine(p, h)
            s.name, s.first, s.size = p.name, p.first_id, p.size
            s.tau_minus_ms = p.tau_minus_ms
            s.tau_minus_triplet_ms = p.tau_minus_triplet_ms
            if p.area is not None:
                s.area = net.areas.index(p.area)
            pops.append(s)
        projs = []
        for pr in net.projections:
            s = _engine.ProjectionSpec()
            s.source, s.target = index[pr.source], index[pr.target]
            rule = pr.rule
            if rule == "probability":
                s.rule, s.probability, s.autapses = "pairwise", pr.probability, pr.autapses
            elif rule == "total_synapses":
                s.rule, s.total_synapses = "fixed_total", pr.total_synapses
            elif rule == "indegree" and pr.grid is not None:
                g = pr.grid
                dx, dy, prob = g.offsets()
                s.rule, s.degree = "grid", pr.indegree
                s.set_grid(g.columns_x, g.columns_y, g.boundary == "periodic", dx.astype(np.int64),
                           dy.astype(np.int64), g.thresholds(prob).astype(np.int64))
            elif rule in ("indegree", "outdegree"):
                s.rule, s.degree = f"fixed_{rule}", getattr(pr, rule)
            else:
                s.rule = "list"
            weights, delays = pr.weight_array(), pr.delay_array_ms()
            if weights is None:
                s.weight_mean, s.weight_sd = pr.weight, pr.weight_sd
            s.weight_clip = pr.weight_clip
            if pr.is_list:
                s.set_list(pr.sources, pr.targets, np.ascontiguousarray(weights if weights is not None else [],
                                                                        dtype=np.float64),
                           np.rint(delays / h).astype(np.int64) if delays is not None else np.zeros(0, np.int64))
            # the shortest delay, in steps, for every law
            s.delay_offset_steps = round(pr.min_delay_ms() / h)
            if pr.delay_redraw_below_ms is not None:
                s.delay_redraw_below_ms = pr.delay_redraw_below_ms
            if pr.delay_redraw_above_ms is not None:
                s.delay_redraw_above_ms = pr.delay_redraw_above_ms
            if pr.delay_distribution == "constant":
                s.delay_constant = True
            elif pr.delay_distribution == "normal":
                s.delay_normal, s.delay_mean_ms, s.delay_sd_ms = True, pr.delay_mean_ms, pr.delay_sd_ms
            else:
                s.delay_step_steps = round(pr.delay_step_ms / h)
                s.delay_scale_ms, s.delay_cut_ms, s.delay_step_ms = pr.delay_scale_ms, pr.delay_cut_ms, pr.delay_step_ms
            if pr.receptor is not None:
                s.receptor = pr.receptor - 1           # the engine counts receptors from 0
            if pr.synapse is not None:
                w = pr.weight_array()
                s.plasticity = plasticity_spec(pr.synapse, _engine,
                                               bool(w.min() < 0) if w is not None and w.size else pr.weight < 0)
            projs.append(s)
        drives = []
        for d in net.drives:
            s = _engine.DriveSpec()
            s.target = index[d.target]
            s.n_synapses, s.rate_hz, s.weight_mean, s.weight_sd = d.n_synapses, d.rate_hz, d.weight, d.weight_sd
            drives.append(s)
        return pops, projs, drives

    def _current_specs(self) -> list:
        net, h = self.network, self.resolution_ms
        out = []
        for c in net.currents:
            s = _engine.CurrentSourceSpec()
            c.engine_spec(net.population(c.target), h, s)
            out.append(s)
        return out

    def engine_config(self, *, exchange: str, placement: str, placement_segments=None, seed: int,
                      barrier: bool, record_spikes: bool, record_state: list[int], comm,
                      record_state_interval: int = 1, settings=None):
        """The engine's configuration: this specification with the decomposition's settings.
        exchange: the engine's strategy (for two-tier, the one used inside groups and among all
        ranks); placement_segments: (bounds, ranks) of an area placement, else None; settings:
        the options.EngineSettings (default: none of the environment's)."""
        cfg = _engine.EngineConfig()
        cfg.populations, cfg.projections, cfg.drives = self.populations, self.projections, self.drives
        cfg.current_sources = self._current_specs()
        cfg.resolution_ms = self.resolution_ms
        cfg.steps_per_cycle = self.steps_per_cycle
        cfg.threads = self.threads
        cfg.exchange = exchange
        cfg.global_interval = self.global_interval
        if placement_segments is not None:
            cfg.placement = "segments"
            cfg.placement_bounds, cfg.placement_ranks = placement_segments
        else:
            cfg.placement = placement
        cfg.seed, cfg.barrier, cfg.record_spikes = seed, barrier, record_spikes
        cfg.overlap, cfg.drive_steps = self.overlap, self.drive_steps
        cfg.record_state = record_state
        cfg.record_state_interval = int(record_state_interval)
        cfg.use_mpi = comm.handle is not None
        cfg.comm_handle = comm.handle or 0
        cfg.fraction_bits = self.fraction_bits
        if settings is not None:
            cfg.simd, cfg.ranks_per_node, cfg.grouped_build = settings.simd, settings.ranks_per_node, settings.grouped_build
        return cfg
