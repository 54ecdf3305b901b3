"""What Simulation(...) takes besides the network, checked once into one object (Options).

    options = check_options(network, comm, threads=2, exchange="alltoallv", seed=1)

Every value is refused here, before anything is built, with one ConfigError line naming it;
the checks that depend on the machine or on another rank (the cores of the smallest node, a
folder only rank 0 writes, a weights file rank 0 reads) are decided together, so every rank
raises the same error. Simulation keeps the Options and reads its settings from them.
"""
from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _engine
from . import placement as placements
from ..runtime import resources
from ..errors import ConfigError
from .spec import TWO_TIER

STRATEGIES = tuple(_engine.EXCHANGES)          # allgather, alltoallv, ...: one exchange among all ranks
EXCHANGES = STRATEGIES + (TWO_TIER,)           # two-tier: a strategy inside each area group + one among all ranks
PLACEMENTS = placements.PLACEMENTS             # round-robin, block, by-area, area-groups, balanced


@dataclass(frozen=True)
class EngineSettings:
    """The engine's settings that come from the environment, read here and nowhere else:

    RANVIER_SIMD             simd: the kernels, avx2 or scalar (or avx512); unset: the best the CPU
                             runs. Every level gives the same spikes (docs/architecture.md).
    RANVIER_RANKS_PER_NODE   ranks_per_node: the hierarchical exchange's nodes are groups of k
                             consecutive ranks (to emulate several nodes on one); unset: the ranks
                             that share memory.
    RANVIER_BUILD_GROUPED    grouped_build: 1 builds every synapse table in the grouped layout
                             (the tests compare it with the direct one); unset or 0: chosen per thread.
    """
    simd: str = "best"
    ranks_per_node: int = 0
    grouped_build: bool = False


SIMD_LEVELS = ("avx512", "avx2", "scalar")


def engine_settings(environ=None) -> EngineSettings:
    """The EngineSettings of `environ` (default os.environ); a ConfigError names a bad variable."""
    env = os.environ if environ is None else environ
    simd = env.get("RANVIER_SIMD", "").strip() or "best"
    if simd != "best":
        if simd not in SIMD_LEVELS:
            raise ConfigError(f"RANVIER_SIMD={simd!r}: one of {', '.join(SIMD_LEVELS)}, or unset for the best the CPU runs")
        best = _engine.best_simd()
        if SIMD_LEVELS.index(simd) < SIMD_LEVELS.index(best):
            raise ConfigError(f"RANVIER_SIMD={simd}: this CPU and build run at most {best}; unset it or choose "
                              f"{', '.join(SIMD_LEVELS[SIMD_LEVELS.index(best):])}")
    per_node = env.get("RANVIER_RANKS_PER_NODE", "").strip()
    if per_node and not (per_node.isdigit() and int(per_node) > 0):
        raise ConfigError(f"RANVIER_RANKS_PER_NODE={per_node!r}: a positive whole number of ranks, or unset "
                          f"for the ranks that share memory")
    grouped = env.get("RANVIER_BUILD_GROUPED", "").strip()
    if grouped not in ("", "0", "1"):
        raise ConfigError(f"RANVIER_BUILD_GROUPED={grouped!r}: 1 (the grouped layout everywhere), or 0 or unset")
    return EngineSettings(simd=simd, ranks_per_node=int(per_node or 0), grouped_build=grouped == "1")


@dataclass(frozen=True)
class Options:
    """A Simulation's settings, checked (check_options). See Simulation for what each means."""
    threads: int
    exchange: str
    tier_exchange: str
    placement: str
    seed: int
    resolution_ms: float
    barrier: bool
    overlap: bool
    pace: bool
    record_spikes: bool | str
    stream_to: object
    record_spikes_of: np.ndarray | None
    record_state: list
    record_state_steps: int
    global_interval: int | None
    max_memory_bytes: int | None
    initial_weights: object
    record_weights: object
    threads_note: str | None          # why fewer threads than cores run (busy cores), or None
    engine_settings: EngineSettings   # from the environment (RANVIER_SIMD, ...)

    @property
    def record_state_interval_ms(self) -> float:
        return self.record_state_steps * self.resolution_ms

    @property
    def strategy(self) -> str:
        """The engine's exchange strategy: for two-tier, the one both tiers use."""
        return self.tier_exchange if self.exchange == TWO_TIER else self.exchange


def choose(where: str, value, allowed) -> str:
    if value not in allowed:
        raise ConfigError(f"{where} must be one of {list(allowed)}, got {value!r}")
    return value


def _integer(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_options(network, comm, *, threads=None, exchange="allgather", placement="round-robin", seed=1,
                  resolution_ms=0.1, barrier=True, overlap=False, record_spikes=True, stream_to=None,
                  record_spikes_of=None, record_state=None, record_state_interval_ms=None,
                  max_memory_bytes=None, global_interval=None, tier_exchange="allgather", initial_weights=None,
                  record_weights=None, pace=False) -> Options:
    """Simulation's keyword arguments checked against the network and the communicator `comm`
    (ranvier.runtime.parallel): collective, every rank calls it and gets the same answer."""
    settings = engine_settings()
    exchange = choose("exchange", exchange, EXCHANGES)
    tier_exchange = choose("tier_exchange", tier_exchange, STRATEGIES)
    placement = choose("placement", placement, PLACEMENTS)
    if not _integer(seed) or not (0 <= seed < 2**64):
        raise ConfigError(f"seed must be an integer in [0, 2^64), got {seed!r}")
    resolution = _resolution(resolution_ms)
    threads, threads_note = _threads(threads, comm)
    strategy = tier_exchange if exchange == TWO_TIER else exchange
    if strategy.startswith("persistent-") and comm.size > 1 and not _engine.build_info().get("mpi_persistent"):
        raise ConfigError(f"exchange '{strategy}' needs MPI-4 persistent collectives, which the MPI library "
                          f"loaded lacks ({' '.join(str(_engine.build_info().get('mpi_library')).split())}); "
                          f"choose another exchange, or an MPI-4 library (MPICH 4.0 or later)")
    n = network.size
    if placement == "block" and n < comm.size * threads:
        raise ConfigError(f"placement 'block' needs at least one neuron per thread: {n} neurons "
                          f"for {comm.size} ranks x {threads} threads")
    state = [int(g) for g in (record_state or [])]
    for g in state:
        if not 0 <= g < n:
            raise ConfigError(f"record_state: neuron id {g} is outside [0, {n})")
    for name, value in (("overlap", overlap), ("pace", pace)):
        if not isinstance(value, bool):
            raise ConfigError(f"{name} must be true or false, got {value!r}")
    if record_spikes not in (True, False, "counts"):
        raise ConfigError(f"record_spikes must be true, false or \"counts\", got {record_spikes!r}")
    if stream_to is not None and record_spikes is not True:
        raise ConfigError("stream_to writes the spikes to files: it needs record_spikes = true")
    # rank 0 records, and reads the weights file first: it decides (stream_to may be given there alone)
    _decided_on_rank_0(comm, lambda: stream_to is not None and _check_stream_folder(stream_to))
    if initial_weights is not None:
        from ..io import weights as weights_io
        _decided_on_rank_0(comm, lambda: weights_io.check_file(initial_weights, network))
    return Options(threads=threads, exchange=exchange, tier_exchange=tier_exchange, placement=placement,
                   seed=int(seed), resolution_ms=resolution, barrier=bool(barrier), overlap=overlap, pace=pace,
                   record_spikes=record_spikes, stream_to=stream_to,
                   record_spikes_of=_spike_ids(record_spikes_of, record_spikes, n),
                   record_state=state, record_state_steps=_state_steps(record_state_interval_ms, resolution),
                   global_interval=global_interval, max_memory_bytes=max_memory_bytes,
                   initial_weights=initial_weights, record_weights=record_weights, threads_note=threads_note,
                   engine_settings=settings)


def _resolution(resolution_ms) -> float:
    try:
        h = float(resolution_ms)
    except (TypeError, ValueError):
        raise ConfigError(f"resolution_ms must be a positive number, got {resolution_ms!r}") from None
    if not (h > 0 and math.isfinite(h)):
        raise ConfigError(f"resolution_ms must be a positive number, got {resolution_ms!r}")
    return h


def _threads(threads, comm) -> tuple[int, str | None]:
    """The threads per rank, and a note where busy cores made the default fewer."""
    note = None
    if threads is None:          # the node's cores shared by its ranks, less those other work keeps busy
        from .. import _cpus_at_import
        threads, note = resources.default_threads(comm.ranks_on_node, _cpus_at_import)
    if not _integer(threads) or threads < 1:
        raise ConfigError(f"threads must be a positive integer, got {threads!r}")
    # Far more threads than cores only slows a run down (and hints at a typo): refused, on every
    # rank at once (nodes may differ), against the node with the fewest cores.
    cores = -comm.allreduce_max(-resources.cores())
    if threads > resources.MAX_THREADS_PER_CORE * cores:
        node = "this node" if comm.size == comm.ranks_on_node else "the smallest node"
        raise ConfigError(f"threads = {threads} per rank is more than {resources.MAX_THREADS_PER_CORE} x the "
                          f"{cores} cores of {node}; use at most {resources.MAX_THREADS_PER_CORE * cores} (the "
                          f"default, cores / ranks on the node, is {max(1, cores // comm.ranks_on_node)})")
    return int(threads), note


def _state_steps(interval_ms, resolution: float) -> int:
    """V and c sampled every interval_ms: a whole number of steps (default: every step)."""
    every = resolution if interval_ms is None else interval_ms
    steps = every / resolution if isinstance(every, numbers.Real) and not isinstance(every, bool) else -1
    if not (steps >= 1 - 1e-9 and abs(steps - round(steps)) <= 1e-9 * max(1.0, steps)):
        raise ConfigError(f"record_state_interval_ms must be a whole number (>= 1) of steps of "
                          f"{resolution} ms, got {interval_ms!r}")
    return int(round(steps))


def _spike_ids(ids, record_spikes, n: int) -> np.ndarray | None:
    """record_spikes_of as sorted unique global ids."""
    if ids is None:
        return None
    if record_spikes is not True:
        raise ConfigError("record_spikes_of chooses the neurons whose spikes are kept: it needs record_spikes = true")
    given = np.asarray(ids)
    if given.ndim != 1 or (given.size and given.dtype.kind not in "iu"):
        raise ConfigError(f"record_spikes_of must be a list of global neuron ids, got {ids!r:.60}")
    if given.size and (given.min() < 0 or given.max() >= n):
        raise ConfigError(f"record_spikes_of: neuron ids must be in [0, {n}), got "
                          f"{int(given.min())}..{int(given.max())}")
    return np.unique(given.astype(np.int64))


def _decided_on_rank_0(comm, check) -> None:
    """check() on rank 0; its ConfigError raised on every rank, so no rank goes on alone."""
    refusal = None
    if comm.rank == 0:
        try:
            check()
        except ConfigError as e:
            refusal = str(e)
    refusal = comm.bcast(refusal)
    if refusal is not None:
        raise ConfigError(refusal)


def _check_stream_folder(folder) -> None:
    """stream_to must be a folder this process can write: made now (before the build), or a
    one-line ConfigError naming what is in the way."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"stream_to = '{folder}' is a file, not a folder; give a folder for spikes.h5 and timers.h5")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".ranvier-write-check"
        probe.touch()
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"stream_to = '{folder}': cannot write there ({e.strerror or e}); give a folder on a "
                          f"writable disk") from None
