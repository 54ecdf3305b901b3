"""Simulation: build a network on every rank, run it, gather a Result.

    net = ranvier.models.dpsnn(neurons=20480)
    sim = ranvier.Simulation(net, threads=2, exchange="alltoallv", seed=1)
    res = sim.run(10_000)          # ms
"""
from __future__ import annotations

import math
import os
import resource
import sys
import time

import numpy as np

from . import _engine, cycle_stats, recording, theory
from . import placement as placements
from . import resources
from .errors import ConfigError
from .network import Network
from .parallel import make_comm

PHASES = tuple(_engine.PHASES)                 # deliver, update, collocate, communicate, synchronize
STRATEGIES = tuple(_engine.EXCHANGES)          # allgather, alltoallv, ...: one exchange among all ranks
TWO_TIER = "two-tier"                          # a strategy inside each area group + one among all ranks
EXCHANGES = STRATEGIES + (TWO_TIER,)
PLACEMENTS = placements.PLACEMENTS             # round-robin, block, by-area, area-groups, balanced
COUNTERS = tuple(_engine.COUNTERS)

# Bytes per synapse at the peak of the build: 8 stored, delay-segment headers and their growth,
# 2 of temporary delay (measured: 11.2 B per synapse of peak RSS at 368.7 million synapses),
# plus a fixed allowance per rank for Python, NumPy and MPI.
BYTES_PER_SYNAPSE_PEAK = 11.0          # 8-byte synapses (measured: 12.4 B/synapse for dpsnn, Python included)
BYTES_PER_SYNAPSE_PEAK_PACKED = 7.0    # 4-byte synapses (measured: 6.3 B/synapse for the full microcircuit)
BASE_BYTES_PER_RANK = 150 * 2**20
# A spike kept in memory: id and step (16 B), joined into one array at the end (16 B more), and
# the temporaries of rates and sorting.
MEMORY_BYTES_PER_RECORDED_SPIKE = 48
ASSUMED_RATE_HZ = 10.0         # for the memory check of recorded spikes, where a model sets no rate


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # Linux reports KiB


# The external drive (Engine::drive, cpp/core/engine.cpp; PoissonTable, cpp/core/distributions.hpp).
DRIVE_CHUNK = 512                      # neurons whose events are listed at once
DRIVE_EVENT_BYTES = 21                 # per listed event: neuron, word, weight, place (4 B each), tail flag, tail index
POISSON_TABLE_MAX_ENTRIES = 2**31 - 1  # the table's CDF is indexed by int
MIN_FRACTION_BITS = 8                  # the coarsest fixed-point scale of synaptic input (_fraction_bits)


def _poisson_table_entries(mean: float) -> int:
    """Entries of the engine's Poisson table for this mean: counts 0 .. mean + 12 sqrt(mean) + 20."""
    if mean <= 0:
        return 1
    return int(mean + 12.0 * math.sqrt(mean) + 20.0) + 1


def _max_abs_weight(pr) -> float:
    """The largest |weight| a projection can draw (the engine's max_abs_weight): |z| < 6.5."""
    m = abs(pr.weight_mean_mV)
    if pr.weight_sd_mV <= 0:
        return m
    return m + 6.5 * pr.weight_sd_mV if pr.weight_clip else 2 * m


def _choose(where: str, value, allowed) -> str:
    if value not in allowed:
        raise ConfigError(f"{where} must be one of {list(allowed)}, got {value!r}")
    return value


class Simulation:
    """A network built on this process's share of the ranks, ready to run.

    threads: OpenMP threads per rank (default: the cores available divided by the ranks on
    this node). exchange: spike-exchange strategy. placement: how neurons map to ranks and
    threads. seed: the network instance and all its noise derive from it alone.
    comm: an mpi4py communicator; by default COMM_WORLD under mpiexec, none otherwise.
    barrier: time a barrier before each exchange as 'synchronize' (separates waiting from
    transfer, as the DPSNN study does). record_state: global ids whose V and c are recorded
    at every step.

    Spikes and per-cycle timers leave the engine after every chunk of a run (100 ms simulated)
    and are gathered on rank 0 (ranvier.recording). record_spikes: True keeps them in memory
    (Result.spikes), "counts" keeps only the spike counts per population before and after 1 s
    (enough for the summary, flat memory however long the run), False records none.
    stream_to: a folder; spikes and timers are appended there (spikes.h5, SONATA layout, and
    timers.h5) chunk by chunk instead of kept in memory, so memory stays flat; the files are
    complete after close() (or at the end of a `with Simulation(...) as sim:` block).

    exchange="two-tier" (structure-aware simulation of multi-area models): spikes reach the ranks
    of their own area group through `tier_exchange` every cycle (the minimum delay), and all
    other ranks through `tier_exchange` among all ranks every `global_interval` cycles (D; by
    default the largest the inter-area delays allow). Pair it with an area placement (by-area,
    area-groups, balanced) so that groups are small.
    """

    def __init__(self, network: Network, *, threads: int | None = None, exchange: str = "allgather",
                 placement: str = "round-robin", seed: int = 1, resolution_ms: float = 0.1,
                 comm=None, barrier: bool = True, overlap: bool = False, record_spikes: bool | str = True,
                 stream_to=None,
                 record_state: list[int] | None = None, max_memory_bytes: int | None = None,
                 global_interval: int | None = None, tier_exchange: str = "allgather"):
        if not isinstance(network, Network):
            raise ConfigError(f"Simulation needs a ranvier Network, got {type(network).__name__}")
        self.network = network
        self.exchange = _choose("exchange", exchange, EXCHANGES)
        self.tier_exchange = _choose("tier_exchange", tier_exchange, STRATEGIES)
        self.placement = _choose("placement", placement, PLACEMENTS)
        if not isinstance(seed, int) or isinstance(seed, bool) or not (0 <= seed < 2**64):
            raise ConfigError(f"seed must be an integer in [0, 2^64), got {seed!r}")
        self.seed = seed
        try:
            self.resolution_ms = float(resolution_ms)
        except (TypeError, ValueError):
            raise ConfigError(f"resolution_ms must be a positive number, got {resolution_ms!r}") from None
        if not (self.resolution_ms > 0 and math.isfinite(self.resolution_ms)):
            raise ConfigError(f"resolution_ms must be a positive number, got {resolution_ms!r}")
        network.validate(self.resolution_ms)
        self.comm = make_comm(comm)
        if threads is None:
            threads = max(1, (os.cpu_count() or 1) // self.comm.ranks_on_node)
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise ConfigError(f"threads must be a positive integer, got {threads!r}")
        # Far more threads than cores only slows a run down (and hints at a typo): refused, on
        # every rank at once (nodes may differ), against the node with the fewest cores.
        cores = -self.comm.allreduce_max(-resources.cores())
        if threads > resources.MAX_THREADS_PER_CORE * cores:
            node = "this node" if self.comm.size == self.comm.ranks_on_node else "the smallest node"
            raise ConfigError(f"threads = {threads} per rank is more than {resources.MAX_THREADS_PER_CORE} x the "
                              f"{cores} cores of {node}; use at most {resources.MAX_THREADS_PER_CORE * cores} (the "
                              f"default, cores / ranks on the node, is {max(1, cores // self.comm.ranks_on_node)})")
        self.threads = threads
        n = network.size
        if n >= 2**40:
            raise ConfigError(f"the network has {n} neurons; at most 2^40 are supported")
        if self.placement == "block" and n < self.comm.size * threads:
            raise ConfigError(f"placement 'block' needs at least one neuron per thread: {n} neurons "
                              f"for {self.comm.size} ranks x {threads} threads")
        self.barrier = bool(barrier)
        self.record_state = [int(g) for g in (record_state or [])]
        for g in self.record_state:
            if not 0 <= g < n:
                raise ConfigError(f"record_state: neuron id {g} is outside [0, {n})")
        # The communication interval is the minimum delay (half of it, rounded down, with
        # overlap: each interval's exchange runs while the next is computed); with no
        # projections, one step.
        if not isinstance(overlap, bool):
            raise ConfigError(f"overlap must be true or false, got {overlap!r}")
        self.overlap = overlap
        min_delay_steps = round(network.min_delay_ms() / self.resolution_ms) if network.projections else 1
        self.min_delay_ms = min_delay_steps * self.resolution_ms
        if overlap and min_delay_steps % 2:
            raise ConfigError(f"overlap needs a minimum delay of an even number of steps (it runs intervals of "
                              f"half of it); it is {self.min_delay_ms:g} ms = {min_delay_steps} step(s) at "
                              f"resolution {self.resolution_ms:g} ms: use a resolution_ms that divides half the "
                              f"minimum delay, or overlap = false")
        self.drive_steps = min_delay_steps
        self.steps_per_cycle = min_delay_steps // 2 if overlap else min_delay_steps
        self.cycle_ms = self.steps_per_cycle * self.resolution_ms
        self.global_interval = self._global_interval(global_interval)
        # The D of the structure-aware scheme for this network (cycle-time statistics lump this
        # many cycles, so conventional and two-tier runs are compared on the same terms).
        self.lump_cycles = self.global_interval or max(1, network.largest_global_interval(self.resolution_ms,
                                                                                          self.steps_per_cycle))
        self.placement_segments = None
        if self.placement in placements.AREA_PLACEMENTS:
            bounds, owners = placements.segments(network, self.placement, self.comm.size, self.resolution_ms)
            fewest = min(sum(bounds[i + 1] - bounds[i] for i, o in enumerate(owners) if o == r)
                         for r in range(self.comm.size))
            if fewest < threads:
                raise ConfigError(f"placement '{self.placement}' leaves a rank with {fewest} neuron(s) for "
                                  f"{threads} threads; use fewer threads or ranks")
            self.placement_segments = (bounds, owners)

        self._check_drives()
        self.memory_estimate_bytes = self.estimate_memory()
        self._check_memory(max_memory_bytes)

        if record_spikes not in (True, False, "counts"):
            raise ConfigError(f"record_spikes must be true, false or \"counts\", got {record_spikes!r}")
        if stream_to is not None and record_spikes is not True:
            raise ConfigError("stream_to writes the spikes to files: it needs record_spikes = true")
        self.record_spikes, self.stream_to = record_spikes, stream_to
        self.recording = None            # made on rank 0 at the first run (ranvier.recording)
        self.closed = False
        self._warn_oversubscription()
        config = self._engine_config(bool(record_spikes))
        t0 = time.perf_counter()
        try:
            self._engine = _engine.Engine(config)
            self._engine.build()
        except MemoryError as e:
            raise self._out_of_memory() from e
        except RuntimeError as e:      # the build's threads pass std::bad_alloc on as its text
            if "bad_alloc" not in str(e):
                raise
            raise self._out_of_memory() from e
        self.build_seconds = self.comm.allreduce_max(time.perf_counter() - t0)
        self.simulate_seconds = 0.0
        self.steps_done = 0

    # -- set-up -------------------------------------------------------------------------
    def _global_interval(self, requested) -> int:
        """D, the cycles between global exchanges (two-tier), checked against the delays: every
        inter-area delay must last at least D cycles, or a spike held back for the global
        exchange would arrive late. 0 for the conventional exchange."""
        if self.exchange != TWO_TIER:
            if requested is not None:
                raise ConfigError(f"global_interval applies to exchange '{TWO_TIER}' only; exchange is "
                                  f"'{self.exchange}'")
            return 0
        net = self.network
        if self.overlap:
            raise ConfigError(f"exchange '{TWO_TIER}' does not combine with overlap; set overlap = false")
        missing = [p.name for p in net.populations if p.area is None]
        if missing:
            raise ConfigError(f"exchange '{TWO_TIER}' needs every population in an area; {missing} have none: "
                              f"Population(..., area=\"V1\")")
        largest = net.largest_global_interval(self.resolution_ms, self.steps_per_cycle)
        inter_ms = net.min_inter_area_delay_ms()
        if requested is None:
            return max(1, largest)
        if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
            raise ConfigError(f"global_interval must be a positive integer (cycles of {self.cycle_ms:g} ms), "
                              f"got {requested!r}")
        if requested > largest:
            why = (f"the shortest inter-area delay is {inter_ms:g} ms = "
                   f"{round(inter_ms / self.resolution_ms) // self.steps_per_cycle} cycle(s) of {self.cycle_ms:g} ms"
                   if math.isfinite(inter_ms) else "there are no inter-area projections")
            raise ConfigError(f"global_interval = {requested} cycles is too long: {why}, and a spike held for "
                              f"the global exchange must still arrive in time; choose global_interval <= {largest}")
        return requested

    def estimate_memory(self) -> int:
        """Bytes this rank will need at the peak of the build, computed before anything is built."""
        return int(sum(self.memory_parts().values()))

    def memory_parts(self) -> dict:
        """estimate_memory, part by part (bytes on this rank): base, synapses, neurons (state and
        per-thread buffers), drive (the external drive's Poisson tables and event buffers)."""
        net = self.network
        synapses = net.expected_synapses() / self.comm.size
        neurons = net.size / self.comm.size
        per_thread = net.size * 4 * 2 + self.drive_steps * neurons / self.threads * 4
        return {"base": BASE_BYTES_PER_RANK, "synapses": synapses * self.bytes_per_synapse_peak(),
                "neurons": neurons * 64 + per_thread * self.threads, "drive": self._drive_bytes()}

    # -- the external drive (Engine::drive in cpp/core/engine.cpp) ---------------------------
    def _drive_events_per_window(self, d) -> float:
        """Expected external events per neuron in one drive window (drive_steps steps)."""
        return d.n_synapses * d.rate_hz * 1e-3 * self.resolution_ms * self.drive_steps

    def _drive_bytes(self) -> float:
        """Memory of the external drive on this rank. Per population, the Poisson table holds the
        CDF up to mean + 12 sqrt(mean) + 20 counts (8 B each, in a vector grown by doubling).
        Per thread, the events of DRIVE_CHUNK neurons are listed at once, DRIVE_EVENT_BYTES each,
        in buffers that grow to twice what they hold; one-step windows of fixed efficacy (the
        microcircuit's) list no events but keep 4 words per local neuron."""
        tables = largest_table = events = fixed = 0.0
        for d in self.network.drives:
            if not d.n_synapses or d.rate_hz <= 0:
                continue
            mean = self._drive_events_per_window(d)
            entries = _poisson_table_entries(mean)
            tables += 16.0 * entries
            largest_table = max(largest_table, 8.0 * entries)     # old and new storage while it grows
            size = self.network.population(d.target).size
            if self.drive_steps == 1 and d.weight_sd_mV == 0:
                fixed += 16.0 * size / self.comm.size
                continue
            m = min(DRIVE_CHUNK, size)
            listed = m * (mean + 3) + 10 * math.sqrt(m * mean) + 32
            events = max(events, 2 * DRIVE_EVENT_BYTES * listed)
        return tables + largest_table + events * self.threads + fixed

    def _drive_text(self, d) -> str:
        """A drive's size as the user set it: 'external_synapses' = 400 x 'external_rate_exc_hz' = 3 Hz."""
        n, rate = d.origin.get("n_synapses", "n_synapses"), d.origin.get("rate_hz", "rate_hz")
        return f"'{n}' = {d.n_synapses} x '{rate}' = {d.rate_hz:g} Hz"

    def _check_drives(self) -> None:
        """Refuses drives the engine cannot draw or sum: more expected events per neuron and window
        than its Poisson table can count (the table is indexed by int: mean + 12 sqrt(mean) + 20
        must stay below 2^31), or an expected input per step beyond the 32-bit fixed-point sums
        at their coarsest scale (2^-MIN_FRACTION_BITS)."""
        h = self.resolution_ms
        for d in self.network.drives:
            if not d.n_synapses or d.rate_hz <= 0:
                continue
            where = f"external drive of '{d.target}'"
            mean = self._drive_events_per_window(d)
            per_step = mean / self.drive_steps
            if mean + 12 * math.sqrt(mean) + 20 >= POISSON_TABLE_MAX_ENTRIES:
                raise ConfigError(f"{where}: {self._drive_text(d)} gives {mean:.3g} expected events per neuron in "
                                  f"each window of {self.drive_steps * h:g} ms; the engine's Poisson table counts "
                                  f"at most about {POISSON_TABLE_MAX_ENTRIES:.3g}: lower the rate or the synapses")
            weight = d.origin.get("weight_mean_mV", "weight_mean_mV")
            per_step_input = per_step * abs(d.weight_mean_mV)
            most = (2**31 - 1) / 2.0 ** MIN_FRACTION_BITS
            if per_step_input >= most:
                raise ConfigError(f"{where}: {self._drive_text(d)} gives {per_step:.3g} expected events per neuron "
                                  f"and step of {h:g} ms, each of '{weight}' = {d.weight_mean_mV:g}: "
                                  f"{per_step_input:.3g} per step, more than the engine's 32-bit input sums hold "
                                  f"({most:.3g} at their coarsest scale); lower the rate or the synapses (a neuron "
                                  f"of the cortex receives some thousands of external events per second)")

    def _check_memory(self, max_memory_bytes: int | None) -> None:
        """Refuses a network whose estimate exceeds what any limit leaves: available memory,
        ulimit -v (per rank), cgroup limits (shared by the node's ranks), or max_memory_bytes."""
        per_rank = self.memory_estimate_bytes
        ranks = self.comm.ranks_on_node
        if max_memory_bytes is not None:
            limits = [resources.MemoryLimit(int(max_memory_bytes),
                                            f"max_memory_bytes allows {max_memory_bytes / 2**30:.1f} GiB", False)]
        else:
            limits = resources.memory_limits()
        ratio, limit = resources.tightest_memory_limit(per_rank, ranks, limits)
        # Decided together: limits are read per rank, and a rank that refused alone would leave
        # the others waiting in the build.
        if self.comm.allreduce_max(ratio) <= 1.0:
            return
        per_process = limit is not None and limit.per_process
        need = per_rank if per_process else per_rank * ranks
        parts = self.memory_parts()
        detail = (f"{self.network.expected_synapses():.3g} synapses at {self.bytes_per_synapse_peak()} B each, "
                  f"{ranks} rank(s) on this node")
        fix = "use fewer neurons or synapses, or more nodes"
        if parts["drive"] > 0.1 * per_rank:
            biggest = max((d for d in self.network.drives if d.n_synapses and d.rate_hz > 0),
                          key=self._drive_events_per_window)
            detail += (f"; {parts['drive'] * (1 if per_process else ranks) / 2**30:.3g} GiB of it for the external "
                       f"drive's Poisson tables and event buffers: {self._drive_text(biggest)} into "
                       f"'{biggest.target}' gives {self._drive_events_per_window(biggest):.3g} expected events per "
                       f"neuron every {self.drive_steps * self.resolution_ms:g} ms")
            fix = "lower the external drive (rate or synapses), or " + fix
        if per_process:
            fix = "raise ulimit -v, or " + fix
        what = limit.what if limit is not None else "another rank's limit is lower"
        raise ConfigError(f"the network will not fit in memory: estimated {need / 2**30:.1f} GiB "
                          f"{'per rank' if per_process else 'on this node'} ({detail}), {what}; {fix}")

    def _out_of_memory(self) -> MemoryError:
        """The build ran out of memory although the estimate passed: a MemoryError in one line."""
        return MemoryError(f"the build ran out of memory (std::bad_alloc) on rank {self.comm.rank}: estimated "
                           f"{self.memory_estimate_bytes / 2**30:.1f} GiB per rank, but the memory left under "
                           f"the tightest limit was smaller or was taken by other processes; use fewer neurons "
                           f"or synapses, or more nodes")

    def _warn_oversubscription(self) -> None:
        """Rank 0 warns, in one line, when the ranks of its node run more threads than it has cores."""
        if self.comm.rank != 0:
            return
        line = resources.oversubscription_warning(self.comm.ranks_on_node, self.threads)
        if line:
            print(line, file=sys.stderr, flush=True)

    def bytes_per_synapse_peak(self) -> float:
        """Peak build memory per synapse: 4-byte or 8-byte synapses, with the delays and the
        counts held while they are sorted into rows."""
        return BYTES_PER_SYNAPSE_PEAK_PACKED if self._packs(self._fraction_bits()) else BYTES_PER_SYNAPSE_PEAK

    def _engine_config(self, record_spikes: bool):
        net, h = self.network, self.resolution_ms
        cfg = _engine.EngineConfig()
        index = {p.name: i for i, p in enumerate(net.populations)}
        pops = []
        for p in net.populations:
            s = _engine.PopulationSpec()
            s.name, s.first, s.size = p.name, p.first_id, p.size
            if p.area is not None:
                s.area = net.areas.index(p.area)
            if p.model == "ignore_and_fire":   # an artificial cell with one fixed interval
                s.artificial = True
                s.isi_min_steps = s.isi_max_steps = max(1, round(1000.0 / p.params["rate_hz"] / h))
                pops.append(s)
                continue
            if p.model == "artificial":
                s.artificial = True
                s.isi_min_steps = round(p.params["isi_min_ms"] / h)
                s.isi_max_steps = round(p.params["isi_max_ms"] / h)
                pops.append(s)
                continue
            if p.model == "poisson_source":
                s.poisson_source, s.source_rate_hz = True, p.params["rate_hz"]
                s.start_step, s.stop_step = round(p.params["start_ms"] / h), round(p.params["stop_ms"] / h)
                pops.append(s)
                continue
            if p.model == "psc_exp":   # potentials relative to rest in the engine
                q = p.params
                s.psc_exp = True
                s.tau_m_ms, s.tau_syn_ms, s.c_m_pF, s.i_e_pA = q["tau_m_ms"], q["tau_syn_ms"], q["C_m_pF"], q["I_e_pA"]
                s.theta_mV, s.reset_mV = q["V_th_mV"] - q["E_L_mV"], q["V_reset_mV"] - q["E_L_mV"]
                s.refractory_steps = round(q["tau_arp_ms"] / h)
                s.initial_normal = True
                s.v0_mean_mV, s.v0_sd_mV = q["V0_mean_mV"] - q["E_L_mV"], q["V0_sd_mV"]
                pops.append(s)
                continue
            s.tau_m_ms, s.theta_mV, s.reset_mV = p.params["tau_m_ms"], p.params["theta_mV"], p.params["reset_mV"]
            s.refractory_steps = round(p.params["tau_arp_ms"] / h)
            s.alpha_c, s.tau_c_ms = p.params["alpha_c"], p.params["tau_c_ms"]
            s.g_c, s.dc = p.params["g_c_mV_per_ms"], p.params["dc_mV_per_ms"]
            s.initial_uniform = p.initial == "uniform"
            pops.append(s)
        projs = []
        for pr in net.projections:
            s = _engine.ProjectionSpec()
            s.source, s.target = index[pr.source], index[pr.target]
            s.probability, s.weight_mean, s.weight_sd = pr.probability, pr.weight_mean_mV, pr.weight_sd_mV
            if pr.total_synapses is not None:
                s.fixed_total, s.total_synapses = True, pr.total_synapses
            s.weight_clip = pr.weight_clip
            if pr.delay_redraw_below_ms is not None:
                s.delay_redraw_below_ms = pr.delay_redraw_below_ms
            s.delay_offset_steps = round(pr.delay_offset_ms / h)
            s.delay_step_steps = round(pr.delay_step_ms / h)
            if pr.delay_distribution == "normal":
                s.delay_normal, s.delay_mean_ms, s.delay_sd_ms = True, pr.delay_mean_ms, pr.delay_sd_ms
            else:
                s.delay_scale_ms, s.delay_cut_ms, s.delay_step_ms = pr.delay_scale_ms, pr.delay_cut_ms, pr.delay_step_ms
            projs.append(s)
        drives = []
        for d in net.drives:
            s = _engine.DriveSpec()
            s.target = index[d.target]
            s.n_synapses, s.rate_hz, s.weight_mean, s.weight_sd = d.n_synapses, d.rate_hz, d.weight_mean_mV, d.weight_sd_mV
            drives.append(s)
        cfg.populations, cfg.projections, cfg.drives = pops, projs, drives
        cfg.resolution_ms = h
        cfg.steps_per_cycle = self.steps_per_cycle
        cfg.threads = self.threads
        cfg.exchange = self.tier_exchange if self.exchange == TWO_TIER else self.exchange
        cfg.global_interval = self.global_interval
        if self.placement_segments is not None:
            cfg.placement = "segments"
            cfg.placement_bounds, cfg.placement_ranks = self.placement_segments
        else:
            cfg.placement = self.placement
        cfg.seed, cfg.barrier, cfg.record_spikes = self.seed, self.barrier, record_spikes
        cfg.overlap, cfg.drive_steps = self.overlap, self.drive_steps
        cfg.record_state = self.record_state
        cfg.use_mpi = self.comm.handle is not None
        cfg.comm_handle = self.comm.handle or 0
        cfg.fraction_bits = self._fraction_bits()
        return cfg

    def _max_weights(self) -> tuple[float, float]:
        """The largest |weight| of any synapse, and of any synapse or external event."""
        net = self.network
        synapse = max((_max_abs_weight(pr) for pr in net.projections), default=0.0)
        event = max((abs(d.weight_mean_mV) + 10 * d.weight_sd_mV for d in net.drives), default=0.0)
        return synapse, max(synapse, event)

    def _packs(self, bits: int) -> bool:
        """Whether the engine stores 4-byte synapses at this scale even with the whole network on
        one thread (it checks each thread; fewer neurons per thread only leave more room)."""
        target_bits = max(1, math.ceil(math.log2(max(self.network.size, 2))))
        if target_bits >= 31:          # no bit left for a weight beside the neuron index
            return False
        return round(self._max_weights()[0] * 2.0 ** bits) < 2.0 ** (31 - target_bits) - 1

    def _fraction_bits(self) -> int:
        """Fixed-point scale 2^-bits for synaptic input, so that no sum can overflow int32.

        Bound: every synapse of the largest plausible in-degree arriving in one step at the
        largest weight. Where a coarser scale still resolves the smallest mean weight to 1/1024
        of itself, the scale is lowered until every weight fits beside a neuron index in 32
        bits, so the engine can store synapses in 4 bytes instead of 8. The choice depends on
        the network alone, never on the decomposition.
        """
        net = self.network
        max_synapse, max_weight = self._max_weights()
        in_degree = 0.0
        for p in net.populations:
            k = sum(pr.total_synapses / p.size if pr.total_synapses is not None
                    else pr.probability * net.population(pr.source).size
                    for pr in net.projections if pr.target == p.name)
            in_degree = max(in_degree, k + 8 * math.sqrt(k + 1))
        external = max((d.n_synapses * d.rate_hz * 1e-3 * self.min_delay_ms for d in net.drives), default=0.0)
        bound = max(max_weight, 1e-9) * (in_degree + external + 16 * math.sqrt(external + 1) + 16)
        overflow_bits = math.floor(math.log2((2**31 - 1) / bound))
        fallback = int(max(MIN_FRACTION_BITS, min(24, overflow_bits)))
        target_bits = max(1, math.ceil(math.log2(max(net.size, 2))))
        if target_bits >= 31:          # 2^31 neurons or more: no 4-byte synapse can hold the index
            return fallback
        packed_bits = math.floor(math.log2((2 ** (31 - target_bits) - 1) / max(max_synapse, 1e-9)))
        weights = [abs(pr.weight_mean_mV) for pr in net.projections] + \
                  [abs(d.weight_mean_mV) for d in net.drives if d.n_synapses and d.rate_hz]
        smallest = min(weights, default=0.0)
        if packed_bits < overflow_bits and smallest * 2.0 ** packed_bits >= 1024:
            return packed_bits
        return fallback

    # -- running ------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return self.comm.rank

    @property
    def size(self) -> int:
        return self.comm.size

    def run(self, duration_ms: float, progress=None, chunk_ms: float | None = None, energy=None) -> Result:
        """Advance by duration_ms (a multiple of the minimum delay). progress(done_ms, total_ms, wall_s)
        is called on rank 0 between chunks. energy: measure the run's energy with this meter ("auto",
        "rapl", "nvml", "none", a meter or an energy.Measurement from ranvier.energy); the Result then
        carries the report (Result.energy, and "energy" in its summary()); None: no measurement."""
        if energy is not None:
            from . import energy as energy_meters
            return energy_meters.measure(self, energy, lambda: self.run(duration_ms, progress, chunk_ms))
        if self.closed:
            raise ConfigError("this simulation was closed (its streamed files are final); make a new Simulation "
                              "to run further")
        try:
            duration = float(duration_ms)
        except (TypeError, ValueError):
            raise ConfigError(f"duration_ms must be a number, got {duration_ms!r}") from None
        if not (duration > 0 and math.isfinite(duration)):
            raise ConfigError(f"duration_ms must be positive, got {duration_ms!r}")
        steps = duration / self.resolution_ms
        if abs(steps - round(steps)) > 1e-9 * max(1.0, steps):
            raise ConfigError(f"duration_ms = {duration_ms} is not a multiple of the resolution "
                              f"{self.resolution_ms} ms")
        steps = round(steps)
        if steps % self.steps_per_cycle:
            what = "half the minimum delay, with overlap" if self.overlap else "the minimum delay"
            raise ConfigError(f"duration_ms = {duration_ms} is not a multiple of the communication interval "
                              f"{self.cycle_ms:g} ms ({what})")
        cycles = steps // self.steps_per_cycle
        cycle_ms = self.steps_per_cycle * self.resolution_ms
        if chunk_ms is None:
            chunk_ms = 100.0
        chunk = max(1, int(round(chunk_ms / cycle_ms)))
        if self.global_interval > 1:   # whole windows of D cycles: no global exchange off its schedule
            chunk = max(1, chunk // self.global_interval) * self.global_interval
        from .config import MAX_CYCLES
        if self._engine.cycles_done + cycles > MAX_CYCLES:
            raise ConfigError(f"duration_ms = {duration_ms:g} would take this simulation past {MAX_CYCLES} cycles "
                              f"({MAX_CYCLES * cycle_ms:.6g} ms at {cycle_ms:g} ms per cycle), the engine's limit; "
                              f"run shorter")
        self._check_recording_memory(cycles, duration)
        if self.rank == 0 and self.recording is None:
            self.recording = self._make_recording()
        t0 = time.perf_counter()
        done = 0
        while done < cycles:
            n = min(chunk, cycles - done)
            self._engine.run_cycles(n)
            self._collect()
            done += n
            if progress is not None and self.rank == 0:
                progress(done * cycle_ms, cycles * cycle_ms, time.perf_counter() - t0)
        wall = time.perf_counter() - t0
        self.simulate_seconds += self.comm.allreduce_max(wall)
        self.steps_done += steps
        return Result(self)

    def _check_recording_memory(self, cycles: int, duration_ms: float) -> None:
        """Spikes and timers kept in memory (the default) grow with the run: refuse a run whose record
        would not fit (rank 0 holds it), before it starts. Streamed and counted runs keep one chunk.
        Rank 0 alone knows where it records (stream_to may be given there only): it decides."""
        if self.record_spikes is not True:           # the same on every rank
            return
        refusal = None
        if self.rank == 0 and self.stream_to is None:
            timers = (self.steps_done // self.steps_per_cycle + cycles) * self.size * recording.TIMER_BYTES_PER_CYCLE
            spikes = self._expected_spikes(self.steps_done * self.resolution_ms + duration_ms)
            need = timers + spikes * MEMORY_BYTES_PER_RECORDED_SPIKE
            ratio, limit = resources.tightest_memory_limit(need, 1, resources.memory_limits())
            if ratio > 1.0:
                refusal = (f"keeping the spikes and timers of {duration_ms:g} ms in memory needs about "
                           f"{need / 2**30:.1f} GiB on rank 0 (rates of {ASSUMED_RATE_HZ:g} Hz assumed for neuron "
                           f"models), {limit.what if limit else 'more than is left'}; stream them to files with "
                           f"Simulation(..., stream_to=FOLDER), keep counts only with record_spikes=\"counts\", or "
                           f"run shorter pieces")
        refusal = self.comm.bcast(refusal)
        if refusal is not None:
            raise ConfigError(refusal)

    def _expected_spikes(self, duration_ms: float) -> float:
        """Spikes a run of duration_ms will record: exact for cells that fire at set rates, an
        assumed ASSUMED_RATE_HZ for neuron models."""
        total = 0.0
        for p in self.network.populations:
            q = p.params
            if p.model == "artificial":
                rate = 2000.0 / (q["isi_min_ms"] + q["isi_max_ms"])
            elif p.model in ("ignore_and_fire", "poisson_source"):
                rate = q["rate_hz"]
            else:
                rate = ASSUMED_RATE_HZ
            total += rate * p.size * duration_ms * 1e-3
        return total

    def close(self) -> None:
        """Ends the recording: with stream_to, writes spikes.h5 and timers.h5 from the streamed chunks
        (rank 0). A write that failed (a full disk) leaves `recording.error` set and no files. Also
        called on leaving a `with Simulation(...) as sim:` block."""
        if not self.closed and self.recording is not None:
            self.recording.close()
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _make_recording(self):
        net = self.network
        args = ([p.name for p in net.populations], [p.first_id for p in net.populations],
                [p.size for p in net.populations], self.resolution_ms, self.comm.size, PHASES)
        if self.stream_to is not None:
            rec = recording.FileRecording(self.stream_to, *args)
            rec.set_cycle_ms(self.cycle_ms)
            return rec
        if self.record_spikes == "counts":
            return recording.CountRecording(*args)
        return recording.MemoryRecording(*args)

    def _collect(self) -> None:
        """Takes the chunk's spikes and timers out of the engine on every rank; rank 0 records them."""
        ids, steps = self._engine.take_spikes()
        timers = self._engine.take_cycle_timers()
        parts = self.comm.gather((ids, steps, timers))
        if self.rank != 0:
            return
        ids = np.concatenate([p[0] for p in parts]).astype(np.int64)
        steps = np.concatenate([p[1] for p in parts]).astype(np.int64)
        order = np.lexsort((ids, steps))            # canonical order: by time, then id
        self.recording.add(ids[order], steps[order], np.stack([p[2] for p in parts]),
                           end_step=self._engine.cycles_done * self.steps_per_cycle)

    def connections(self):
        """This rank's synapses: (source, target, weight_mV, delay_ms) NumPy arrays."""
        src, tgt, w, d = self._engine.connections()
        return src, tgt, w, d * self.resolution_ms


class Result:
    """What a run produced. Gathered quantities are complete on rank 0 (None on other ranks)."""

    def __init__(self, sim: Simulation):
        eng, comm = sim._engine, sim.comm
        self.rank, self.ranks, self.threads = comm.rank, comm.size, sim.threads
        self.exchange, self.placement, self.seed = sim.exchange, sim.placement, sim.seed
        self.overlap = sim.overlap
        self.resolution_ms = sim.resolution_ms
        self.duration_ms = sim.steps_done * sim.resolution_ms
        self.build_seconds, self.simulate_seconds = sim.build_seconds, sim.simulate_seconds
        self.real_time_factor = self.simulate_seconds / (self.duration_ms * 1e-3)
        self.network = sim.network
        self.population_names = [p.name for p in sim.network.populations]
        self.population_sizes = [p.size for p in sim.network.populations]
        self.population_first_ids = [p.first_id for p in sim.network.populations]
        self.memory_estimate_bytes = sim.memory_estimate_bytes
        self.steps_per_cycle = sim.steps_per_cycle
        self.global_interval, self.tier_exchange = sim.global_interval, sim.tier_exchange
        self.lump_cycles = sim.lump_cycles
        self.energy = None                             # rank 0 of a run measured with energy= (ranvier.energy)

        counters = eng.counters()
        local = dict(counters=counters, rss=_peak_rss_bytes(),
                     synapses=eng.synapse_count(), store_bytes=eng.synapse_bytes())
        if sim.record_state:
            local["state"] = eng.state_trace()
        gathered = comm.gather(local)
        self.recording = sim.recording                 # rank 0: spikes and timers (ranvier.recording)
        self._spikes = self._timers = None
        self.cycles = self.phase_seconds = self.spikes_total = None
        self.counters = self.counters_per_rank = self.peak_rss_bytes = self.state = self.synapses = self.synapse_store_bytes = None
        if comm.rank == 0:
            rec = self.recording
            self.cycles = rec.cycles
            self.phase_seconds = rec.phase_seconds.copy()          # [rank, phase], summed over every cycle
            self.spikes_total = rec.spikes_total
            if isinstance(rec, recording.MemoryRecording):       # a snapshot: later runs do not change it
                self._spikes, self._timers = rec.spikes(), rec.cycle_timers()
            self.counters_per_rank = {k: np.array([g["counters"][k] for g in gathered], dtype=np.int64)
                                      for k in COUNTERS}
            self.counters = {k: int(v.sum()) for k, v in self.counters_per_rank.items()}
            self.peak_rss_bytes = [int(g["rss"]) for g in gathered]
            self.synapses = int(sum(g["synapses"] for g in gathered))
            self.synapse_store_bytes = int(sum(g["store_bytes"] for g in gathered))
            if sim.record_state:
                self.state = _merge_state([g["state"] for g in gathered])
            self.check_conservation()

    # -- what was recorded (rank 0) -------------------------------------------------------
    def _recorded_spikes(self):
        if self.counters is None:
            return None
        return self._spikes if self._spikes is not None else self.recording.spikes()

    @property
    def spike_ids(self):
        """Global ids of every spike, sorted by time then id; None off rank 0 or when spikes were not kept."""
        spikes = self._recorded_spikes()
        return None if spikes is None else spikes[0]

    @property
    def spike_steps(self):
        spikes = self._recorded_spikes()
        return None if spikes is None else spikes[1]

    @property
    def cycle_timers(self):
        """Seconds per phase of every cycle, [rank, cycle, phase] (a run streamed to files: its last
        recording.MAX_STATISTICS_CYCLES cycles); None off rank 0."""
        if self.counters is None:
            return None
        return self._timers if self._timers is not None else self.recording.cycle_timers()

    # -- spikes and rates ---------------------------------------------------------------
    @property
    def spikes(self):
        """(neuron ids, spike times in ms), sorted by time then id; None off rank 0."""
        spikes = self._recorded_spikes()
        if spikes is None:
            return None
        return spikes[0], spikes[1] * self.resolution_ms

    def rates(self, start_ms: float = 0.0, stop_ms: float | None = None) -> dict:
        """Mean firing rate per population (Hz) over [start_ms, stop_ms)."""
        if self.counters is None:
            return None
        stop_ms = self.duration_ms if stop_ms is None else stop_ms
        span_s = (stop_ms - start_ms) * 1e-3
        if span_s <= 0:
            raise ConfigError(f"rates: empty window [{start_ms}, {stop_ms}) ms")
        if self._spikes is not None:
            t = self.spike_steps * self.resolution_ms
            counts = self.recording.population_of(self.spike_ids[(t >= start_ms) & (t < stop_ms)])
            counts = np.bincount(counts, minlength=len(self.population_sizes))
        else:
            try:
                counts = self.recording.population_counts(start_ms, stop_ms, self.duration_ms)
            except ValueError as e:
                raise ConfigError(f"rates: {e}") from None
        return {name: int(c) / size / span_s for name, size, c in zip(self.population_names, self.population_sizes,
                                                                         counts)}

    def rates_by_type(self, start_ms: float = 0.0, stop_ms: float | None = None) -> dict:
        """Mean rate of all excitatory and of all inhibitory neurons (Hz) over [start_ms, stop_ms)."""
        per_pop = self.rates(start_ms, stop_ms)
        if per_pop is None:
            return None
        out = {}
        for kind, excitatory in (("excitatory", True), ("inhibitory", False)):
            pops = [p for p in self.network.populations if p.excitatory == excitatory]
            size = sum(p.size for p in pops)
            if size:
                out[kind] = sum(per_pop[p.name] * p.size for p in pops) / size
        return out

    # -- timing -------------------------------------------------------------------------
    def phase_times(self) -> dict:
        """Seconds spent in each phase over the run, mean over ranks."""
        if self.counters is None:
            return None
        return {ph: float(self.phase_seconds[:, i].mean()) for i, ph in enumerate(PHASES)}

    def phase_times_per_rank(self) -> dict:
        if self.counters is None:
            return None
        return {ph: self.phase_seconds[:, i].tolist() for i, ph in enumerate(PHASES)}

    def cycle_statistics(self, transient_ms: float | None = None) -> dict | None:
        """Per-rank cycle times (deliver + update + collocate) and their lumps of D cycles: mean,
        CV, per-cycle maxima, histograms, autocorrelation, with the synchronisation model
        (ranvier.cycle_stats.summarize). D is the two-tier global interval, or for a conventional
        run the one two-tier would use. transient_ms: skipped at the start (default: 10 % of the
        run, at most 100 ms). None off rank 0 or when the run is too short."""
        timers = self.cycle_timers
        if timers is None:
            return None
        cycle_ms = self.steps_per_cycle * self.resolution_ms
        if transient_ms is None:
            transient_ms = min(100.0, 0.1 * self.duration_ms)
        # a long streamed run keeps only its last cycles here: the transient may lie before them
        skip = max(0, int(round(transient_ms / cycle_ms)) - (self.cycles - timers.shape[1]))
        if timers.shape[1] - skip < 2 * self.lump_cycles + 8:
            return None
        return cycle_stats.summarize(timers, D=self.lump_cycles, transient_cycles=skip)

    def delivery_ns_per_event(self) -> float | None:
        """Deliver time per recurrent synaptic event, nanoseconds: the delivery cost the
        irregular-access model explains (summed over ranks, as the events are)."""
        if self.counters is None or not self.counters["synaptic_events_recurrent"]:
            return None
        deliver = float(self.phase_seconds[:, PHASES.index("deliver")].sum())
        return deliver / self.counters["synaptic_events_recurrent"] * 1e9

    def communication_theory(self, mpi_fit: dict) -> dict | None:
        """theory.md section 3: the exchange time per cycle predicted from an MPI fit
        (`ranvier bench mpi` on the same machine and rank count: theory.load_mpi_fit), next to
        the measured communicate time. Two-tier: the global exchange of D cycles' spikes at
        once against D separate exchanges of a cycle's share each; exchanges inside groups of
        one rank cost nothing in the model (a copy)."""
        if self.counters is None or self.ranks < 2:
            return None
        c, P = self.counters, self.ranks
        cycles = self.cycles
        measured = float(self.phase_seconds[:, PHASES.index("communicate")].sum() / (P * max(1, cycles)))
        out = {"fit_ranks": mpi_fit.get("ranks"), "measured_s_per_cycle": measured}
        if self.exchange != TWO_TIER:
            per_cycle = c["bytes_sent"] / P / cycles
            out["predicted_s_per_cycle"] = theory.exchange_seconds(self.exchange, P, per_cycle, mpi_fit)
            return out
        D, glob = self.global_interval, max(1, c["exchanges_global"] // P)
        per_exchange = c["global_bytes_sent"] / P / glob
        one = theory.exchange_seconds(self.tier_exchange, P, per_exchange, mpi_fit)
        separate = theory.exchange_seconds(self.tier_exchange, P, per_exchange / D, mpi_fit)
        local_bytes = c["bytes_sent"] - c["global_bytes_sent"]
        out.update({"predicted_global_s_per_exchange": one,
                    "predicted_global_s_per_cycle": None if one is None else one / D,
                    "predicted_D_separate_s_per_cycle": separate,
                    "group_bytes_per_cycle": local_bytes / P / cycles,
                    "predicted_s_per_cycle": None if one is None or local_bytes else one / D})
        return out

    def theory(self, mpi_fit: dict | None = None) -> dict | None:
        """Predictions of theory.md for this run's parameters, next to what was measured;
        with mpi_fit (theory.load_mpi_fit), the communication model too."""
        if self.counters is None:
            return None
        out = {}
        if mpi_fit is not None:
            out["communication"] = self.communication_theory(mpi_fit)
        n = self.network.size
        K = self.synapses / n if n else 0.0
        if K > 0:
            fractions = theory.irregular_access(K, self.ranks, self.threads)
            out["irregular_access"] = {"K": K, "M": self.ranks, "T": self.threads, **fractions,
                                       "placement": self.placement,
                                       "predicted_fraction": fractions["f_sa" if self.placement in
                                                                       placements.AREA_PLACEMENTS else "f_conv"],
                                       "delivery_ns_per_event": self.delivery_ns_per_event()}
            events = self.counters["synaptic_events_recurrent"]
            out["delay_segments"] = {
                "measured_per_event": self.counters["delivery_segments"] / events if events else None,
                "predicted_per_event": self._predicted_segment_fraction()}
        stats = self.cycle_statistics()
        if stats is not None:
            out["synchronization"] = {
                "D": stats["D"], "ranks": stats["ranks"], "cycles": stats["cycles"],
                "k_P": stats["predicted"]["k_P"],
                "cycle_mean_s": stats["pooled"]["mean_s"], "cycle_sd_s": stats["pooled"]["sd_s"],
                "cv_ratio_measured": stats["pooled"]["cv_ratio"],
                "cv_ratio_predicted": stats["pooled"]["cv_ratio_predicted"],
                "cv_ratio_predicted_correlated": stats["pooled"]["cv_ratio_predicted_correlated"],
                "sync_ratio_predicted": stats["predicted"]["sync_ratio"],
                "sync_ratio_predicted_correlated": stats["predicted_correlated"]["sync_ratio"],
                "sync_ratio_from_cycle_times": stats["measured"]["sync_ratio"],
                "autocorrelation_lag1": stats["autocorrelation"][0] if stats["autocorrelation"] else None,
                "top_fraction_measured": stats["top_fraction"]["measured"],
                "top_fraction_predicted": stats["top_fraction"]["predicted"],
            }
        return out

    def _predicted_segment_fraction(self) -> float | None:
        """Delay segments per synaptic event predicted for mam-benchmark with one area per rank
        (theory.segment_fraction_mam); None for other networks and placements."""
        p = self.network.parameters
        if self.network.name != "mam-benchmark" or p["n_areas"] != self.ranks or p["area_size_sd"] > 0:
            return None
        if self.placement not in ("round-robin", "by-area", "area-groups", "balanced"):
            return None
        h = self.resolution_ms
        intra = theory.truncated_normal_steps(p["intra_delay_mean_ms"], p["intra_delay_sd_ms"], p["d_min_ms"], h)
        inter = theory.truncated_normal_steps(p["inter_delay_mean_ms"], p["inter_delay_sd_ms"],
                                              p["delay_ratio"] * p["d_min_ms"], h)
        return theory.segment_fraction_mam(p["K"], p["frac_intra"], self.ranks, self.threads, intra, inter,
                                           by_area=self.placement != "round-robin")

    @property
    def synaptic_events(self) -> dict:
        return {"recurrent": self.counters["synaptic_events_recurrent"],
                "external": self.counters["synaptic_events_external"]}

    def check_conservation(self) -> None:
        """No spike lost or duplicated: raises RuntimeError if the counters disagree."""
        c = self.counters
        problems = []
        if c["spikes_sent"] != c["spikes_received"]:
            problems.append(f"spike records sent {c['spikes_sent']} != received {c['spikes_received']}")
        if c["events_scheduled"] != c["events_expected"]:
            problems.append(f"synaptic events scheduled {c['events_scheduled']} != expected from "
                            f"out-degrees {c['events_expected']}")
        if c["events_scheduled"] != c["synaptic_events_recurrent"] + c["events_pending"]:
            problems.append("synaptic events scheduled != delivered + pending")
        if problems:
            raise RuntimeError("spike conservation violated: " + "; ".join(problems))

    def summary(self, mpi_fit: dict | None = None) -> dict:
        """The content of summary.json (rank 0). mpi_fit: adds the communication model."""
        if self.counters is None:
            return None
        from . import __version__
        steady = 1000.0 if self.duration_ms > 1000.0 else 0.0
        return {
            "version": __version__,
            "model": self.network.name,
            "neurons": self.network.size,
            "synapses": self.synapses,
            "duration_ms": self.duration_ms,
            "resolution_ms": self.resolution_ms,
            "real_time_factor": self.real_time_factor,
            "build_seconds": self.build_seconds,
            "simulate_seconds": self.simulate_seconds,
            "rates_hz": self.rates(),
            "rates_window_ms": [steady, self.duration_ms],
            "rates_steady_hz": self.rates(start_ms=steady),
            "rates_steady_by_type_hz": self.rates_by_type(start_ms=steady),
            "spikes_total": int(self.spikes_total),
            "synaptic_events": self.synaptic_events,
            "synaptic_events_per_second": (self.counters["synaptic_events_recurrent"]
                                           + self.counters["synaptic_events_external"]) / self.simulate_seconds
                                          if self.simulate_seconds > 0 else None,
            "phase_seconds": self.phase_times(),
            "phase_seconds_per_rank": self.phase_times_per_rank(),
            "counters": self.counters,
            "peak_rss_bytes": self.peak_rss_bytes,
            "memory_estimate_bytes": self.memory_estimate_bytes,
            "synapse_store_bytes": self.synapse_store_bytes,   # synapses, segment headers, row index
            "ranks": self.ranks,
            "threads": self.threads,
            "exchange": self.exchange,
            "overlap": self.overlap,
            "communication_interval_ms": self.steps_per_cycle * self.resolution_ms,
            "placement": self.placement,
            "seed": self.seed,
            "global_interval": self.global_interval,
            "tier_exchange": self.tier_exchange if self.exchange == TWO_TIER else None,
            "exchanges": {"local": self.counters["exchanges_local"] // max(1, self.ranks),
                          "global": self.counters["exchanges_global"] // max(1, self.ranks)},
            "areas": self.network.areas,
            "cycle_statistics": self.cycle_statistics(),
            "theory": self.theory(mpi_fit),
            **({"energy": self.energy} if self.energy is not None else {}),
        }


def _merge_state(parts):
    parts = [p for p in parts if len(p[0])]      # ranks that hold none of the recorded neurons
    ids = np.concatenate([p[0] for p in parts])
    order = np.argsort(ids)
    v = np.concatenate([p[1] for p in parts], axis=0)[order]
    c = np.concatenate([p[2] for p in parts], axis=0)[order]
    return {"ids": ids[order], "V": v, "c": c}
