"""Simulation: build a network on every rank, run it, gather a Result.

    net = ranvier.models.dpsnn(neurons=20480)
    sim = ranvier.Simulation(net, threads=2, exchange="alltoallv", seed=1)
    res = sim.run(10_000)          # ms
"""
from __future__ import annotations

import copy
import functools
import math
import sys
import time
from typing import NamedTuple

import numpy as np

from .. import _engine
from ..analysis import cycle_stats, deadlines, imbalance, theory, updown
from . import recording
from ..io import weights as weights_io
from . import placement as placements
from ..runtime import resources
from ..errors import ConfigError
from .network import Network
from .neurons import NEURON_MODELS
from ..runtime.parallel import make_comm
from .options import EXCHANGES, PLACEMENTS, STRATEGIES, check_options  # noqa: F401 -- the names, here too
from .spec import TWO_TIER, EngineSpec

PHASES = tuple(_engine.PHASES)                 # deliver, update, collocate, communicate, synchronize
COUNTERS = tuple(_engine.COUNTERS)

# A spike kept in memory: id and step (16 B), joined into one array at the end (16 B more), and
# the temporaries of rates and sorting.
MEMORY_BYTES_PER_RECORDED_SPIKE = 48
ASSUMED_RATE_HZ = 10.0         # for the memory check of recorded spikes, where a model sets no rate


class _From:
    """A read-only attribute of Simulation kept by one of its parts (its options or its spec)."""

    def __init__(self, part: str):
        self.part = part

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, sim, owner=None):
        return self if sim is None else getattr(getattr(sim, self.part), self.name)


CHUNK_MS = 100.0           # a run's default chunk (simulated ms): spikes and timers leave the engine
LONGEST_CHUNK_MS = 1000.0  # ... grown up to this while a chunk takes less than FAST_CHUNK_S of wall time
FAST_CHUNK_S = 0.1


class Simulation:
    """A network built on this process's share of the ranks, ready to run.

    threads: OpenMP threads per rank (default: the cores available divided by the ranks on
    this node; in one process, less the cores other processes keep busy, measured over 0.1 s:
    threads sharing a core with other work make every cycle wait for them, and a note says so).
    exchange: spike-exchange strategy. placement: how neurons map to ranks and
    threads. seed: the network instance and all its noise derive from it alone.
    comm: an mpi4py communicator; by default COMM_WORLD under mpiexec, none otherwise.
    barrier: time a barrier before each exchange as 'synchronize' (separates waiting from
    transfer, as the DPSNN study does). record_state: global ids whose V and c are recorded
    at every step (V in mV relative to rest, for every model; c the model's second variable:
    lifca's adaptation, psc_exp's synaptic current in pA, iaf_psc_alpha's excitatory one), or
    every record_state_interval_ms (a whole number of steps: the state at its multiples, as
    NEST's multimeter interval).

    Spikes and per-cycle timers leave the engine after every chunk of a run (100 ms simulated,
    longer, up to 1 s, where a chunk takes under 0.1 s of wall time) and are gathered on rank 0
    (ranvier.core.recording). record_spikes: True keeps them in memory (Result.spikes), "counts"
    keeps only the spike counts per population before and after 1 s (enough for the summary,
    flat memory however long the run), False records none.
    record_spikes_of: global ids; only their spikes are kept or streamed (every neuron's are
    still counted: the summary's rates and counts stay whole), as NEST's spike recorder connected
    to some neurons. Rates over other windows than the summary's then need those neurons alone
    (Result.rates refuses a window that would need the others).
    stream_to: a folder; spikes and timers are appended there (spikes.h5, SONATA layout, and
    timers.h5) chunk by chunk instead of kept in memory, so memory stays flat; the files are
    complete after close() (or at the end of a `with Simulation(...) as sim:` block).
    Plastic networks: save_weights(path) writes the weights (weights.h5) for initial_weights.

    initial_weights: a weights.h5 (save_weights, ranvier run --out) to set every plastic
    synapse's weight from, after the build; the file must describe this network's synapses.
    record_weights: a ranvier.WeightRecorder, or a list of them (one per plastic projection):
    chosen synapses' weights sampled at whole intervals, in Result.weight_traces.

    exchange="two-tier" (structure-aware simulation of multi-area models): spikes reach the ranks
    of their own area group through `tier_exchange` every cycle (the minimum delay), and all
    other ranks through `tier_exchange` among all ranks every `global_interval` cycles (D; by
    default the largest the inter-area delays allow). Pair it with an area placement (by-area,
    area-groups, balanced) so that groups are small.
    """

    def __init__(self, network: Network, *, threads: int | None = None, exchange: str = "allgather",
                 placement: str = "round-robin", seed: int = 1, resolution_ms: float = 0.1,
                 comm=None, barrier: bool = True, overlap: bool = False, record_spikes: bool | str = True,
                 stream_to=None, record_spikes_of=None,
                 record_state: list[int] | None = None, record_state_interval_ms: float | None = None,
                 max_memory_bytes: int | None = None,
                 global_interval: int | None = None, tier_exchange: str = "allgather",
                 initial_weights=None, record_weights=None, pace: bool = False):
        if not isinstance(network, Network):
            raise ConfigError(f"Simulation needs a ranvier Network, got {type(network).__name__}")
        self.network = network
        self.comm = make_comm(comm)
        # Every setting checked once (ranvier.core.options), then the network translated for the engine
        # once (ranvier.core.spec: the checks that need the resolution, the communication and global
        # intervals, the fixed-point scale, the memory estimate and its refusal).
        self.options = opts = check_options(
            network, self.comm, threads=threads, exchange=exchange, placement=placement, seed=seed,
            resolution_ms=resolution_ms, barrier=barrier, overlap=overlap, record_spikes=record_spikes,
            stream_to=stream_to, record_spikes_of=record_spikes_of, record_state=record_state,
            record_state_interval_ms=record_state_interval_ms, max_memory_bytes=max_memory_bytes,
            global_interval=global_interval, tier_exchange=tier_exchange, initial_weights=initial_weights,
            record_weights=record_weights, pace=pace)
        self.spec = EngineSpec(network, resolution_ms=opts.resolution_ms, overlap=opts.overlap, exchange=opts.exchange,
                               global_interval=opts.global_interval, comm=self.comm, threads=opts.threads,
                               max_memory_bytes=opts.max_memory_bytes)
        self.placement_segments = self._placement_segments()
        self.recording = None            # made on rank 0 at the first run (ranvier.core.recording)
        self.closed = False
        self._warn_oversubscription()
        self._engine = self._build()
        if opts.threads_note is not None:   # said once the network is built (a refusal says nothing else)
            print(f"ranvier: note: {opts.threads_note}", file=sys.stderr, flush=True)
        self.simulate_seconds = 0.0
        self.steps_done = 0              # steps simulated: the run() calls' durations, added up
        self.deadline_log = deadlines.DeadlineLog(self.cycle_ms) if self.rank == 0 else None
        self.imbalance_log = imbalance.ImbalanceLog(self.size) if self.rank == 0 else None
        # rank 0: the whole network's spikes per bin of about updown.BIN_MS (up/down states)
        self.rate_bin_steps = max(1, int(round(updown.BIN_MS / self.resolution_ms)))
        self._rates = np.zeros(0, dtype=np.int32)      # sized once per run() call (4 bytes per 5 ms)
        self._rate_bins = 0
        self._run_clock = None           # this rank's (wall-clock origin, first cycle) of the current run
        # A resumed simulation (ranvier.io.checkpoint): the counters of the run before the checkpoint,
        # added to rank 0's in every Result, and where it came from.
        self.counters_before: dict = {}
        self.resumed_from: dict | None = None
        self._synapse_digest = None      # the static synapses' digest, once asked for (synapse_digest)
        # Plastic weights: from a saved file (ranvier.io.weights), and a sampled record of some.
        if opts.initial_weights is not None:
            weights_io.apply_initial_weights(self, opts.initial_weights)
        self.weight_samplers = weights_io.samplers_of(self, opts.record_weights) \
            if opts.record_weights is not None else []
        for sampler in self.weight_samplers:
            if sampler.interval_steps % self.steps_per_cycle:
                raise ConfigError(f"record_weights: interval_ms must be a whole number of communication intervals "
                                  f"({self.cycle_ms:g} ms here)")
            sampler.sample(self, 0)

    # The settings (ranvier.core.options) and the engine's translation of the network (ranvier.core.spec),
    # read where they are kept.
    threads = _From("options")
    exchange = _From("options")
    tier_exchange = _From("options")
    placement = _From("options")
    seed = _From("options")
    resolution_ms = _From("options")
    barrier = _From("options")
    overlap = _From("options")
    pace = _From("options")              # hold every cycle to wall-clock time (ranvier.analysis.deadlines)
    record_spikes = _From("options")
    stream_to = _From("options")
    record_spikes_of = _From("options")
    record_state = _From("options")
    record_state_steps = _From("options")
    record_state_interval_ms = _From("options")
    min_delay_ms = _From("spec")
    drive_steps = _From("spec")
    steps_per_cycle = _From("spec")
    cycle_ms = _From("spec")
    global_interval = _From("spec")
    lump_cycles = _From("spec")
    fraction_bits = _From("spec")
    memory_estimate_bytes = _From("spec")

    def _placement_segments(self):
        """(bounds, ranks) of an area placement (by-area, area-groups, balanced), else None."""
        if self.placement not in placements.SEGMENT_PLACEMENTS:
            return None
        bounds, owners = placements.segments(self.network, self.placement, self.comm.size, self.resolution_ms)
        fewest = min(sum(bounds[i + 1] - bounds[i] for i, o in enumerate(owners) if o == r)
                     for r in range(self.comm.size))
        if fewest < self.threads:
            raise ConfigError(f"placement '{self.placement}' leaves a rank with {fewest} neuron(s) for "
                              f"{self.threads} threads; use fewer threads or ranks")
        return bounds, owners

    def _build(self):
        """The engine, built: this rank's neurons and the synapses onto them."""
        t0 = time.perf_counter()
        try:
            engine = _engine.Engine(self._engine_config(bool(self.record_spikes)))
            engine.build()
        except MemoryError as e:
            raise self._out_of_memory() from e
        except RuntimeError as e:      # the build's threads pass std::bad_alloc on as its text
            if "bad_alloc" not in str(e):
                raise
            raise self._out_of_memory() from e
        self.build_seconds = self.comm.allreduce_max(time.perf_counter() - t0)
        return engine

    # -- set-up -------------------------------------------------------------------------
    def estimate_memory(self) -> int:
        """Bytes this rank will need at the peak of the build, computed before anything is built."""
        return self.spec.memory_estimate_bytes

    def memory_parts(self) -> dict:
        """estimate_memory, part by part (bytes on this rank): base, synapses, neurons (state and
        per-thread buffers), drive (the external drive's Poisson tables and event buffers)."""
        return dict(self.spec.memory_parts)

    def bytes_per_synapse_peak(self) -> float:
        """Peak build memory per synapse: 4-byte or 8-byte synapses (ranvier.core.spec)."""
        return self.spec.bytes_per_synapse_peak

    def _engine_config(self, record_spikes: bool):
        """The engine's configuration: the network's specification with this decomposition."""
        return self.spec.engine_config(
            exchange=self.options.strategy,
            placement=self.placement, placement_segments=self.placement_segments, seed=self.seed,
            barrier=self.barrier, record_spikes=record_spikes, record_state=self.record_state,
            record_state_interval=self.record_state_steps, comm=self.comm, settings=self.options.engine_settings)

    def _out_of_memory(self) -> MemoryError:
        """The build ran out of memory although the estimate passed: a MemoryError in one line."""
        return MemoryError(f"the build ran out of memory (std::bad_alloc) on rank {self.comm.rank}: estimated "
                           f"{resources.gib(self.memory_estimate_bytes)} per rank, but the memory left under "
                           f"the tightest limit was smaller or was taken by other processes; use fewer neurons "
                           f"or synapses, or more nodes")

    def _warn_oversubscription(self) -> None:
        """Rank 0 warns, in one line, when the ranks of its node run more threads than it has cores."""
        if self.comm.rank != 0:
            return
        line = resources.oversubscription_warning(self.comm.ranks_on_node, self.threads)
        if line:
            print(line, file=sys.stderr, flush=True)

    # -- running ------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return self.comm.rank

    @property
    def size(self) -> int:
        return self.comm.size

    def run(self, duration_ms: float, progress=None, chunk_ms: float | None = None, energy=None) -> Result:
        """Advance by duration_ms, a whole number of steps (resolution_ms). progress(done_ms, total_ms,
        wall_s) is called on rank 0 between chunks. energy: measure the run's energy with this meter
        ("auto", "rapl", "nvml", "none", a meter or an energy.Measurement from ranvier.runtime.energy); the
        Result then carries the report (Result.energy, and "energy" in its summary()); None: no
        measurement.

        The run stops at exactly the time asked for, also inside a communication interval
        (cycle_ms: the minimum delay, or half of it with overlap): the spikes of that interval's
        first steps are exchanged when a later run() completes it, as NEST does, and none can be
        due before then. Runs continue one another exactly, and the spikes do not depend on how
        the time is split into run() calls, nor on ranks, threads, exchange or placement.
        Checkpoints are taken at the end of a communication interval."""
        if energy is not None:
            from ..runtime import energy as energy_meters
            return energy_meters.measure(self, energy, lambda: self.run(duration_ms, progress, chunk_ms))
        if self.closed:
            raise ConfigError("this simulation was closed (its streamed files are final); make a new Simulation "
                              "to run further")
        steps = self._steps(duration_ms)
        target = self.steps_done + steps
        L = self.steps_per_cycle
        cycle_ms = self.cycle_ms
        # Chunks of 100 ms simulated by default, doubled (up to 1 s) while one takes under 0.1 s
        # of wall time: a chunk's gathering and recording cost about 1 ms, 5 % of a 100 ms dpsnn
        # chunk on two threads. The slowest rank's time decides, so every rank cuts alike. Chunks
        # end at cycle boundaries (the last one where the run ends).
        adaptive = chunk_ms is None and not self.pace
        if chunk_ms is None:
            chunk_ms = CHUNK_MS
        chunk = max(1, int(round(chunk_ms / cycle_ms)))
        longest = int(round(LONGEST_CHUNK_MS / cycle_ms))
        if self.global_interval > 1:   # whole windows of D cycles: no global exchange off its schedule
            chunk = max(1, chunk // self.global_interval) * self.global_interval
            longest = longest // self.global_interval * self.global_interval
        longest = max(chunk, longest)
        from ..io.config import MAX_CYCLES
        if -(-target // L) > MAX_CYCLES:
            raise ConfigError(f"duration_ms = {duration_ms:g} would take this simulation past {MAX_CYCLES} cycles "
                              f"({MAX_CYCLES * cycle_ms:.6g} ms at {cycle_ms:g} ms per cycle), the engine's limit; "
                              f"run shorter")
        self._check_recording_memory(-(-steps // L), steps * self.resolution_ms)
        if self.rank == 0 and self.recording is None:
            self.recording = self.new_recording()
        t0 = time.perf_counter()
        if self.rank == 0:
            self._reserve_rates(-(-target // self.rate_bin_steps))
        if self.pace:
            self.comm.barrier()          # every rank starts its clock together: no rank waits for another's hold
        origin = _engine.wall_time()     # this run's deadlines count from here, on each rank
        self._run_clock = (origin, self._engine.cycles_done)
        self._engine.set_pace(self.pace, origin, self._engine.steps_done)
        start = now = self.steps_done
        while now < target:
            stop = min(target, (now // L + chunk) * L)
            for sampler in self.weight_samplers:      # stop at the next sample's time
                every = sampler.interval_steps
                stop = min(stop, (now // every + 1) * every)
            started = time.perf_counter()
            self._engine.run_steps(stop - now)
            n = stop - now
            now = self.steps_done = stop
            self._collect()
            if adaptive and n == chunk * L and chunk < longest and \
                    self.comm.allreduce_max(time.perf_counter() - started) < FAST_CHUNK_S:
                chunk = min(2 * chunk, longest)
            for sampler in self.weight_samplers:
                if sampler.due(now):
                    sampler.sample(self, now)
            if progress is not None and self.rank == 0:
                progress((now - start) * self.resolution_ms, steps * self.resolution_ms, time.perf_counter() - t0)
        wall = time.perf_counter() - t0
        self.simulate_seconds += self.comm.allreduce_max(wall)
        return Result(self)

    def _steps(self, duration_ms) -> int:
        """duration_ms in whole steps, else a one-line ConfigError."""
        try:
            duration = float(duration_ms)
        except (TypeError, ValueError):
            raise ConfigError(f"duration_ms must be a number, got {duration_ms!r}") from None
        if not (duration > 0 and math.isfinite(duration)):
            raise ConfigError(f"duration_ms must be positive, got {duration_ms!r}")
        steps = duration / self.resolution_ms
        if round(steps) < 1:
            raise ConfigError(f"duration_ms = {duration_ms!r} is shorter than one step of {self.resolution_ms:g} ms "
                              f"(resolution_ms); run at least {self.resolution_ms:g} ms")
        if abs(steps - round(steps)) > 1e-9 * max(1.0, steps):
            raise ConfigError(f"duration_ms = {duration_ms} is not a multiple of the resolution "
                              f"{self.resolution_ms} ms")
        return round(steps)

    def stop_ms(self, duration_ms: float) -> float:
        """The simulated time at which run(duration_ms) would stop (ms since the start)."""
        return (self.steps_done + self._steps(duration_ms)) * self.resolution_ms

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
                           f"{resources.gib(need)} on rank 0 (rates of {ASSUMED_RATE_HZ:g} Hz assumed for neuron "
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
            rate = NEURON_MODELS[p.model].known_rate_hz(p.params)
            total += (ASSUMED_RATE_HZ if rate is None else rate) * p.size * duration_ms * 1e-3
        return total

    def set_parameters(self, population: str, **params) -> None:
        """New values for some of a population's parameters from the next run() call on (PyNN's
        set() between runs; NEST's SetStatus). Its neurons keep their state (V, currents,
        adaptation); a spike_train population goes on with each new train's first spike at or
        after the current time. The same model, size and (psc_exp) number of synaptic currents:
        what needs a different layout is refused. Call it on every rank, with the same values:
        the simulation stays the same for any decomposition. The network's Population takes the
        new values too."""
        import dataclasses

        pop = self.network.population(population)
        if not params:
            return
        unknown = sorted(set(params) - set(NEURON_MODELS[pop.model].parameters))
        if unknown:
            raise ConfigError(f"population '{population}' ({pop.model}): unknown parameter(s) {unknown}; known: "
                              f"{sorted(NEURON_MODELS[pop.model].parameters)}")
        new = dataclasses.replace(pop, params={**{k: v for k, v in pop.params.items()
                                                  if k not in pop.defaulted or k in params}, **params})
        new.first_id = pop.first_id
        new.validate()
        NEURON_MODELS[new.model].check_resolution(new, self.resolution_ms)
        index = self.network.populations.index(pop)
        spec = NEURON_MODELS[new.model].to_engine(new, self.resolution_ms)
        old = self.spec.populations[index]
        spec.name, spec.first, spec.size, spec.tau_minus_ms = old.name, old.first, old.size, old.tau_minus_ms
        spec.area, spec.injected_current = old.area, old.injected_current
        spec.tau_minus_triplet_ms = old.tau_minus_triplet_ms
        try:
            self._engine.set_population(index, spec)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        self.spec.populations[index] = spec
        pop.params, pop.defaulted = new.params, new.defaulted

    def set_current(self, index: int, source) -> None:
        """A new schedule for the network's current source number `index` (in the order of
        Network.inject) from the next step on: the same kind of source on the same neurons
        (PyNN's set_parameters on a current source between runs). Times before the current time
        collapse to the amplitude in force now. Call it on every rank."""
        old = self.network.currents[index]
        if type(source) is not type(old) or source.target != old.target or \
                list(np.atleast_1d(source.neurons if source.neurons is not None else [])) != \
                list(np.atleast_1d(old.neurons if old.neurons is not None else [])):
            raise ConfigError(f"set_current: source {index} needs the same kind of source on the same neurons "
                              f"({type(old).__name__} on '{old.target}')")
        pop = self.network.population(source.target)
        source.validate(pop)
        spec = _engine.CurrentSourceSpec()
        source.engine_spec(pop, self.resolution_ms, spec)
        self._engine.set_current_source(index, spec)
        self.network.currents[index] = source

    def current_values(self, index: int, first_step: int, n_steps: int) -> np.ndarray:
        """The current (pA) the network's current source number `index` (in the order of
        Network.inject) puts into steps first_step .. first_step + n_steps - 1, as the engine
        computes it from the source as it is now (after set_current: the new schedule): one
        target's, or for a noise current the average over its targets. Computed here from the
        source alone, on any rank (no gather)."""
        from .devices import current_values
        if not 0 <= index < len(self.network.currents):
            raise ConfigError(f"current_values: the network has {len(self.network.currents)} current sources, "
                              f"no number {index}")
        source = self.network.currents[index]
        return current_values(source, index, self.network.population(source.target), self.resolution_ms,
                              self.seed, first_step, n_steps)

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

    def new_recording(self):
        """rank 0's record of spikes and timers, as this simulation's settings ask (ranvier.core.recording)."""
        net = self.network
        args = ([p.name for p in net.populations], [p.first_id for p in net.populations],
                [p.size for p in net.populations], self.resolution_ms, self.comm.size, PHASES)
        if self.stream_to is not None:
            rec = recording.FileRecording(self.stream_to, *args)
            rec.set_cycle_ms(self.cycle_ms)
        elif self.record_spikes == "counts":
            rec = recording.CountRecording(*args)
        else:
            rec = recording.MemoryRecording(*args)
        rec.keep = self.record_spikes_of
        return rec

    def _collect(self) -> None:
        """Takes the chunk's spikes and timers out of the engine on every rank; rank 0 records them."""
        ids, steps = self._engine.take_spikes()
        timers = self._engine.take_cycle_timers()
        ends = self._engine.take_cycle_ends()
        loads = self._engine.take_cycle_loads()
        origin, run_first = self._run_clock
        first = self._engine.cycles_done - ends.size
        lag = deadlines.rank_lags(ends, origin, first, run_first, self.cycle_ms)
        parts = self.comm.gather((ids, steps, timers, lag, loads))
        if self.rank != 0:
            return
        self.imbalance_log.add(np.stack([p[4] for p in parts]))
        self.deadline_log.add(np.max([p[3] for p in parts], axis=0),       # the slowest rank's, per cycle
                              np.max([p[2].sum(axis=1) for p in parts], axis=0),
                              (first + 1 + np.arange(ends.size)) * self.cycle_ms)
        ids = np.concatenate([p[0] for p in parts]).astype(np.int64)
        steps = np.concatenate([p[1] for p in parts]).astype(np.int64)
        order = recording.time_order(ids, steps)    # canonical order: by time, then id
        ids, steps = ids[order], steps[order]
        end_step = self._engine.steps_done
        self._count_rates(steps, -(-end_step // self.rate_bin_steps))
        self.recording.add(ids, steps, np.stack([p[2] for p in parts]), end_step=end_step)

    @property
    def rate_counts(self) -> np.ndarray:
        """Rank 0: the whole network's spikes in consecutive bins of rate_bin_steps steps."""
        return self._rates[:self._rate_bins]

    # -- what checkpoints and the plastic weights read and restore (ranvier.io.checkpoint, ranvier.io.weights)
    def synapse_digest(self) -> int:
        """The static network's digest: every rank's order-independent sum, added (mod 2^64); a
        collective call. Computed once (a pass over every synapse: seconds for 10^8 of them): the
        static synapses never change after the build; plastic weights are not part of it."""
        if self._synapse_digest is None:
            parts = self.comm.gather(int(self._engine.network_digest()))
            self._synapse_digest = self.comm.bcast(sum(parts) % 2**64 if self.rank == 0 else None)
        return self._synapse_digest

    def local_report(self) -> dict:
        """What this rank hands over for a Result: counters, peak memory, time held for pacing,
        communication partners, synapses and their bytes, the recorded state."""
        eng = self._engine
        local = dict(counters=eng.counters(), rss=resources.peak_rss_bytes(), pace_wait=eng.pace_wait_seconds,
                     partners=len(eng.partner_ranks()), synapses=eng.synapse_count(), store_bytes=eng.synapse_bytes())
        if self.record_state:
            local["state"] = eng.state_trace()
        return local

    def local_counters(self) -> dict:
        """This rank's counters (spikes sent, received, delivered, events, ...), this simulation's part."""
        return self._engine.counters()

    def engine_state(self) -> dict:
        """This rank's engine state as named columns keyed by global ids (cpp/core/checkpoint.cpp)."""
        return self._engine.checkpoint_state()

    def restore_engine_state(self, ints: dict, reals: dict, step: int) -> None:
        """Takes up the columns of every rank's engine_state at `step` (each rank keeps its own)."""
        self._engine.restore_state(ints, reals, step)

    def restore_rate_counts(self, counts) -> None:
        """rank 0: the whole network's spikes per bin of the run so far (a checkpoint's)."""
        self._reserve_rates(len(counts))
        self._rates[:len(counts)] = counts
        self._rate_bins = len(counts)

    def local_plastic_synapses(self, j: int, up_to_date: bool = False):
        """Projection j's plastic synapses on this rank, in storage order: (source, target,
        weight, delay steps); up_to_date: the weights as of now (else as of their last spike)."""
        return self._engine.plastic_weights(j, up_to_date)

    def set_plastic_weights(self, j: int, weights) -> None:
        """Projection j's plastic weights on this rank, in local_plastic_synapses' order."""
        self._engine.set_plastic_weights(j, np.ascontiguousarray(weights, dtype=np.float64))

    def plastic_weights_at(self, j: int, places) -> np.ndarray:
        """Projection j's plastic weights on this rank at these places of its storage order."""
        return np.asarray(self._engine.plastic_weights_at(j, places))

    def _reserve_rates(self, bins: int) -> None:
        if bins > self._rates.size:
            grown = np.zeros(bins, dtype=np.int32)
            grown[:self._rate_bins] = self._rates[:self._rate_bins]
            self._rates = grown

    def _count_rates(self, steps: np.ndarray, bins: int) -> None:
        self._reserve_rates(bins)
        self._rate_bins = max(self._rate_bins, bins)
        if steps.size:
            # a spike of step s (1-based: the step that ends at s h) falls in bin (s - 1) // width
            first = (int(steps[0]) - 1) // self.rate_bin_steps     # steps are sorted: the chunk's bins only
            counts = np.bincount((steps - 1) // self.rate_bin_steps - first)
            self._rates[first:first + counts.size] += counts

    def neuron_values(self, population: str, name: str):
        """Parameter `name` of every neuron of a population (NumPy array, population order) as
        this simulation gives them, on any rank: per-neuron arrays, the draws of distributions
        (from this seed), or the one number repeated. "initial": per-neuron initial potentials."""
        return self.network.population(population).neuron_values(name, self.seed)

    def connections(self, local: bool = False) -> Connections | None:
        """The synapses the engine built: Connections(source, target, weight, delay_ms), NumPy
        arrays of global source and target ids, weights in the target model's input unit (mV for
        lifca, pA for psc_exp and iaf_psc_alpha; as stored, in the fixed point of synaptic input)
        and delays in ms. A collective call: every rank takes part; rank 0 gets every synapse of
        every rank, sorted by (source, target, delay, weight), the same for any decomposition;
        the other ranks get None. local=True: this rank's synapses only, in the engine's storage
        order, on every rank (no communication)."""
        src, tgt, w, d = self._engine.connections()
        mine = Connections(np.asarray(src, dtype=np.int64), np.asarray(tgt, dtype=np.int64),
                           np.asarray(w, dtype=np.float64), np.asarray(d, dtype=np.int64) * self.resolution_ms)
        if local:
            return mine
        parts = self.comm.gather(mine)
        if self.rank != 0:
            return None
        return _sorted_connections(parts)

    def weights(self, source: str, target: str, *, index: int | None = None, up_to_date: bool = False,
                local: bool = False) -> Connections | None:
        """The synapses of the projection from population `source` onto `target` (names) with
        their weights now: Connections(source, target, weight, delay_ms), global ids, sorted as
        connections() sorts them. For a plastic projection the weights are float64, as NEST's
        GetStatus gives them: each as of its synapse's last delivered pre-synaptic spike;
        up_to_date=True applies the facilitation by target spikes since then too (NEST applies it
        at the next pre-synaptic spike), without changing the simulation. index: the projection's
        position in network.projections, where several join the same populations. A collective
        call like connections(): rank 0 gets them all, other ranks None; local=True: this rank's."""
        j = self.projection_index(source, target, index)
        pr = self.network.projections[j]
        if pr.synapse is None and sum(p.source == source and p.target == target for p in self.network.projections) > 1:
            raise ConfigError(f"weights: several projections join {source!r} and {target!r}, and the engine keeps "
                              f"static synapses together: read them all with connections()")
        if pr.synapse is not None:
            src, tgt, w, d = self.local_plastic_synapses(j, up_to_date)
            mine = Connections(np.asarray(src, dtype=np.int64), np.asarray(tgt, dtype=np.int64),
                               np.asarray(w, dtype=np.float64), np.asarray(d, dtype=np.int64) * self.resolution_ms)
        else:
            mine = self.connections(local=True)
            s_pop, t_pop = self.network.population(pr.source), self.network.population(pr.target)
            keep = ((mine.source >= s_pop.first_id) & (mine.source < s_pop.first_id + s_pop.size) &
                    (mine.target >= t_pop.first_id) & (mine.target < t_pop.first_id + t_pop.size))
            mine = Connections(*(a[keep] for a in mine))
        if local:
            return mine
        parts = self.comm.gather(mine)
        return _sorted_connections(parts) if self.rank == 0 else None

    def synapse_state(self, source: str, target: str, *, index: int | None = None, local: bool = False) -> dict | None:
        """The per-synapse state of a plastic projection's rule (for rv.TsodyksMarkram: u, x, y, as
        NEST's GetConnections(...).get(["u", "x", "y"]) gives them), as of each synapse's last
        delivered pre-synaptic spike: {"source", "target", "weight", "delay_ms", and one array per
        state variable (the kind's state_names)}, rows sorted as weights() sorts them. A
        collective call like weights(): rank 0 gets them all, other ranks None; local=True: this
        rank's, in storage order."""
        j = self.projection_index(source, target, index)
        pr = self.network.projections[j]
        names = getattr(pr.synapse, "state_names", None)
        if not names:
            kind = "static" if pr.synapse is None else type(pr.synapse).__name__
            raise ConfigError(f"synapse_state: the projection {source}->{target} ({kind}) keeps no per-synapse "
                              f"state to read; rv.TsodyksMarkram does")
        src, tgt, w, d = self.local_plastic_synapses(j)
        values, doubles = self._engine.plastic_state(j)
        state = np.asarray(values, dtype=np.float64).reshape(-1, doubles)
        mine = (np.asarray(src, dtype=np.int64), np.asarray(tgt, dtype=np.int64), np.asarray(w, dtype=np.float64),
                np.asarray(d, dtype=np.int64) * self.resolution_ms, state)
        if not local:
            parts = self.comm.gather(mine)
            if self.rank != 0:
                return None
            mine = tuple(np.concatenate([p[i] for p in parts]) for i in range(5))
            order = np.lexsort((mine[2], mine[3], mine[1], mine[0]))
            mine = tuple(a[order] for a in mine)
        out = dict(zip(("source", "target", "weight", "delay_ms"), mine[:4]))
        out.update({name: mine[4][:, i].copy() for i, name in enumerate(names)})
        return out

    def save_weights(self, path):
        """Writes every plastic projection's weights now (and the weight recorders' samples so far)
        to `path`: the weights.h5 that `ranvier run --out` writes (SONATA edges, in an order that
        does not depend on the decomposition; ranvier.io.weights) and that
        Simulation(initial_weights=path) starts from. A collective call: every rank hands its
        synapses to rank 0, which writes the file whole or not at all (beside it, then renamed).
        Returns the path on rank 0, None elsewhere. Only the weights: neuron state and the
        synapses' spike traces start afresh in a simulation started from the file."""
        return weights_io.save(self, path)

    def save(self, path):
        """Writes a checkpoint of this simulation at its current time to the folder `path`
        (ranvier.io.checkpoint): every neuron's state, the spikes in flight, plastic weights and
        traces, the spikes recorded so far. A collective call; rank 0 writes the folder whole or
        not at all. Simulation.resume(path, ...) continues it on any ranks, threads, placement or
        exchange with the spikes of an uninterrupted run. Returns the path on rank 0."""
        from ..io import checkpoint
        return checkpoint.save(self, path)

    @classmethod
    def resume(cls, path, network: Network | None = None, **kwargs) -> "Simulation":
        """A simulation continued from the checkpoint folder `path` (Simulation.save, or the
        newest complete one of a `ranvier run --checkpoint-every` run's folder). network: by
        default the saved one; one given must be the same network. kwargs: as Simulation's
        (threads, exchange, placement, comm, ...); the seed and resolution are the checkpoint's.
        The resumed run's spikes, rates and counters cover the whole run from t = 0; its
        timings, the part after the resume."""
        from ..io import checkpoint
        ck = checkpoint.Checkpoint(checkpoint.newest(path))
        checkpoint.check_against(ck.meta, network, kwargs.get("seed"), kwargs.get("resolution_ms"))
        kwargs["seed"], kwargs["resolution_ms"] = ck.meta["seed"], ck.meta["resolution_ms"]
        sim = cls(network if network is not None else ck.network(), **kwargs)
        checkpoint.restore(sim, ck)
        return sim

    def projection_index(self, source: str, target: str, index: int | None) -> int:
        joining = [j for j, pr in enumerate(self.network.projections) if pr.source == source and pr.target == target]
        if index is not None:
            if index not in joining:
                raise ConfigError(f"weights({source!r}, {target!r}, index={index!r}): projection {index!r} does not "
                                  f"join them; those that do: {joining}")
            return index
        if not joining:
            names = [f"{pr.source}->{pr.target}" for pr in self.network.projections]
            raise ConfigError(f"weights: no projection from {source!r} onto {target!r}; the projections are {names}")
        if len(joining) > 1:
            raise ConfigError(f"weights: {len(joining)} projections join {source!r} and {target!r} "
                              f"(network.projections {joining}): choose one with index=")
        return joining[0]


def _sorted_connections(parts) -> Connections:
    """The ranks' synapses joined and sorted by (source, target, delay, weight)."""
    joined = [np.concatenate([p[i] for p in parts]) for i in range(4)]
    order = np.lexsort((joined[2], joined[3], joined[1], joined[0]))
    return Connections(*(a[order] for a in joined))


class Connections(NamedTuple):
    """Synapses as arrays (Simulation.connections): global ids, weights in the target model's
    input unit, delays in ms."""
    source: np.ndarray
    target: np.ndarray
    weight: np.ndarray
    delay_ms: np.ndarray


class Result:
    """What a run produced. Gathered quantities are complete on rank 0 (None on other ranks)."""

    def __init__(self, sim: Simulation):
        comm = sim.comm
        self.rank, self.ranks, self.threads = comm.rank, comm.size, sim.threads
        self.exchange, self.placement, self.seed = sim.exchange, sim.placement, sim.seed
        self.overlap = sim.overlap
        self.record_spikes, self.stream_to = sim.record_spikes, sim.stream_to
        self.resolution_ms = sim.resolution_ms
        self.duration_ms = sim.steps_done * sim.resolution_ms              # simulated
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
        # the weight recorders' samples so far, by edge population (ranvier.io.weights.WeightSampler.trace),
        # on rank 0: {name: {times_ms, source, target, delay_ms, weights [synapse, sample]}}
        self.weight_traces = ({w.name: w.trace() for w in sim.weight_samplers} if comm.rank == 0 else None)
        self.energy = None                             # rank 0 of a run measured with energy= (ranvier.runtime.energy)
        self.resumed_from = sim.resumed_from           # a resumed run: its checkpoint (ranvier.io.checkpoint)

        gathered = comm.gather(sim.local_report())
        self.recording = sim.recording                 # rank 0: spikes and timers (ranvier.core.recording)
        self._spikes = self._timers = None
        self.cycles = self.phase_seconds = self.spikes_total = None
        self.communication_partners = None             # rank 0: partners per rank, bytes per partner
        # rank 0: what the analyses read (deadlines, imbalance, up_down: computed when asked for)
        self._deadline_log = self._imbalance_log = self._rate_counts = None
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
            for k, v in sim.counters_before.items():      # a resumed run: the part before its checkpoint
                self.counters_per_rank[k][0] += v
            self.counters = {k: int(v.sum()) for k, v in self.counters_per_rank.items()}
            self.peak_rss_bytes = [int(g["rss"]) for g in gathered]
            self.synapses = int(sum(g["synapses"] for g in gathered))
            self.synapse_store_bytes = int(sum(g["store_bytes"] for g in gathered))
            if sim.record_state:
                self.state = _merge_state([g["state"] for g in gathered])
                self.state["interval_ms"] = sim.record_state_interval_ms   # sample k: the state at (k + 1) x interval
            self.check_conservation()
            # as they are now: later runs of the simulation go on adding to its logs
            self._deadline_log, self._imbalance_log = copy.deepcopy(sim.deadline_log), copy.deepcopy(sim.imbalance_log)
            self._pace = (sim.pace, max(g["pace_wait"] for g in gathered))
            self._rate_counts, self._rate_bin_ms = sim.rate_counts, sim.rate_bin_steps * sim.resolution_ms
            partners = [int(g["partners"]) for g in gathered]
            sent = [int(v) for v in self.counters_per_rank["bytes_sent"]]
            self.communication_partners = {
                "per_rank": partners,       # other ranks holding synapses of the rank's neurons
                "bytes_sent_per_rank": sent,
                # bytes each rank sent per partner it needs (allgather sends to all ranks - 1 regardless)
                "bytes_per_partner": [b / p if p else None for b, p in zip(sent, partners)],
                "mean_partners": sum(partners) / len(partners)}

    # -- analyses of what was gathered (rank 0; None elsewhere), computed when first asked for ----
    @functools.cached_property
    def deadlines(self) -> dict | None:
        """Real-time deadlines: cycles on time, lags, cycle-time percentiles (ranvier.analysis.deadlines)."""
        if self._deadline_log is None:
            return None
        paced, pace_wait = self._pace
        return deadlines.summarize(self._deadline_log, real_time_factor=self.real_time_factor, paced=paced,
                                   pace_wait_seconds=pace_wait)

    @functools.cached_property
    def imbalance(self) -> dict | None:
        """Spikes per rank and interval: max over mean, CV (ranvier.analysis.imbalance)."""
        return None if self._imbalance_log is None else imbalance.summarize(self._imbalance_log)

    @functools.cached_property
    def up_down(self) -> dict | None:
        """Up and down states of the whole network's rate, with the rate trace (ranvier.analysis.updown)."""
        if self._rate_counts is None:
            return None
        found = updown.detect_counts(self._rate_counts, self._rate_bin_ms, self.network.size)
        found["rate_trace"] = updown.rate_trace(self._rate_counts, self._rate_bin_ms, self.network.size)
        return found

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
        """(neuron ids, spike times in ms), sorted by time then id; None off rank 0.

        The ids are global: population p holds first_id .. first_id + size - 1 (populations(),
        "populations" in summary.json), so global id = first_id + local id. spikes.h5 (SONATA)
        stores the local node_ids of each population; population_of(ids) maps back."""
        spikes = self._recorded_spikes()
        if spikes is None:
            return None
        return spikes[0], spikes[1] * self.resolution_ms

    def to_neo(self, populations=None):
        """The run as a neo.Block, laid out as PyNN's get_data() (ranvier.io.neo): one Segment; one
        SpikeTrain per neuron (ms, t_start 0, t_stop duration_ms; annotations source_population,
        source_id = global id, source_index = index in the population, model); per population an
        AnalogSignal "v" (mV; absolute where the model's potentials are, with E_L added back) and
        one of the model's second variable for the neurons of record_state; a neo.Group per
        population. populations: names to restrict it to. Needs the neo extra
        (pip install "ranvier[neo]"). Spikes in memory or streamed (stream_to) both work;
        record_spikes="counts" is refused, record_spikes=False gives no spike trains. None off
        rank 0."""
        from ..io import neo as neo_io
        return neo_io.to_neo(self, populations)

    def populations(self) -> list[dict]:
        """The population table, in id order: name, size, first_id (its first global id), model,
        area (None outside multi-area models), excitatory. Neurons that never fired are the ids
        of these ranges missing from the spikes."""
        return [{"name": p.name, "size": p.size, "first_id": p.first_id, "model": p.model, "area": p.area,
                 "excitatory": p.excitatory} for p in self.network.populations]

    def population_of(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """Global ids -> (population index into populations(), local id within it). Raises
        ConfigError for an id outside [0, neurons)."""
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.network.size):
            bad = ids[(ids < 0) | (ids >= self.network.size)][0]
            raise ConfigError(f"population_of: neuron id {bad} is outside [0, {self.network.size})")
        first = np.asarray(self.population_first_ids, dtype=np.int64)
        index = np.searchsorted(first, ids, side="right") - 1
        return index, ids - first[index]

    def rates(self, start_ms: float = 0.0, stop_ms: float | None = None) -> dict:
        """Mean firing rate per population (Hz) over [start_ms, stop_ms); every population, the
        silent ones at 0."""
        if self.counters is None:
            return None
        stop_ms = self.duration_ms if stop_ms is None else stop_ms
        span_s = (stop_ms - start_ms) * 1e-3
        if span_s <= 0:
            raise ConfigError(f"rates: empty window [{start_ms}, {stop_ms}) ms")
        if self._spikes is not None and self.recording.keep is None:   # every spike in memory: any window
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
        (ranvier.analysis.cycle_stats.summarize). D is the two-tier global interval, or for a conventional
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
        """No spike lost or duplicated: raises RuntimeError if the counters disagree. A resumed run's
        counters hold those of its checkpoint too, checked the same way: what the resume took up
        must balance with what the run did after it."""
        c = self.counters
        before = self.resumed_from or {}
        problems = []
        if c["spikes_sent"] != c["spikes_received"]:
            problems.append(f"spike records sent {c['spikes_sent']} != received {c['spikes_received']}")
        if c["events_scheduled"] != c["events_expected"]:
            problems.append(f"synaptic events scheduled {c['events_scheduled']} != expected from "
                            f"out-degrees {c['events_expected']}")
        if c["events_scheduled"] != c["synaptic_events_recurrent"] + c["events_pending"]:
            problems.append("synaptic events scheduled != delivered + pending")
        # spikes_delivered: received spikes with a synapse on the rank, so each at most once a rank
        ranks = max(self.ranks, int(before.get("counted_on_ranks", self.ranks)))
        if c["spikes_delivered"] > c["spikes_received"]:
            problems.append(f"spikes delivered {c['spikes_delivered']} > records received {c['spikes_received']}")
        if c["spikes_delivered"] > c["spikes_emitted"] * ranks:
            problems.append(f"spikes delivered {c['spikes_delivered']} > emitted {c['spikes_emitted']} x {ranks} "
                            f"rank(s)")
        # the recording counts every spike emitted, unless some part of the run did not record them
        # (spikes of a communication interval the run ended inside are recorded, and emitted when
        # a later run completes the interval)
        emitted = c["spikes_emitted"] + c["spikes_unsent"]
        if self.record_spikes and before.get("every_spike_recorded", True) and emitted != self.spikes_total:
            problems.append(f"spikes emitted {c['spikes_emitted']} + unsent {c['spikes_unsent']} != recorded "
                            f"{self.spikes_total}")
        if problems:
            raise RuntimeError("spike conservation violated: " + "; ".join(problems))

    def summary(self, mpi_fit: dict | None = None) -> dict:
        """The content of summary.json (rank 0). mpi_fit: adds the communication model."""
        if self.counters is None:
            return None
        from ..version import ranvier_version
        steady = 1000.0 if self.duration_ms > 1000.0 else 0.0
        return {
            "version": ranvier_version(),
            "model": self.network.name,
            "neurons": self.network.size,
            "synapses": self.synapses,
            "duration_ms": self.duration_ms,              # simulated
            "resolution_ms": self.resolution_ms,
            "populations": self.populations(),          # global id = first_id + SONATA node_id
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
            "deadlines": self.deadlines,
            "imbalance": self.imbalance,
            "communication_partners": self.communication_partners,
            "up_down": self.up_down,
            "theory": self.theory(mpi_fit),
            **({"energy": self.energy} if self.energy is not None else {}),
            **({"resumed_from": self.resumed_from} if self.resumed_from is not None else {}),
        }


def _merge_state(parts):
    parts = [p for p in parts if len(p[0])]      # ranks that hold none of the recorded neurons
    ids = np.concatenate([p[0] for p in parts])
    order = np.argsort(ids)
    v = np.concatenate([p[1] for p in parts], axis=0)[order]
    c = np.concatenate([p[2] for p in parts], axis=0)[order]
    c_in = np.concatenate([p[3] for p in parts], axis=0)[order]
    w = np.concatenate([p[4] for p in parts], axis=0)[order]
    state = {"ids": ids[order], "V": v, "c": c, "c_in": c_in, "w": w}
    # receptors 3, 4, ... of the models with receptors (c3, c4, ...): [neuron][receptor * steps + step]
    receptors, steps = max(p[6] for p in parts), v.shape[1]
    if receptors:
        rows = [p[5].reshape(len(p[0]), p[6], steps) if p[6] else np.full((len(p[0]), 0, steps), np.nan)
                for p in parts]
        rows = [np.concatenate([r, np.full((r.shape[0], receptors - r.shape[1], steps), np.nan)], axis=1)
                for r in rows]
        stacked = np.concatenate(rows, axis=0)[order]
        for j in range(receptors):
            state[f"c{j + 3}"] = stacked[:, j, :]
    return state
