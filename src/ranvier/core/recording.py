"""Where a run's spikes and cycle timers go, chunk by chunk, on rank 0.

The engine hands over what it recorded after every chunk of cycles (Engine.take_spikes,
Engine.take_cycle_timers) and forgets it, so a long run never holds more than one chunk in
the engine. Rank 0 gathers each chunk and gives it to one of these:

- MemoryRecording: keeps every spike and every cycle's timers (the Python API's default);
- CountRecording: keeps per-population spike counts and the cycle timers, drops the spikes
  (a run whose spikes nobody will read: `ranvier run` without --out);
- FileRecording: appends spikes and timers to files in a folder, chunk by chunk, and turns
  them into spikes.h5 (SONATA layout) and timers.h5 at the end; memory stays flat however
  long the run.

All three keep running per-population counts before and after 1 s (the summary's steady
window) and the seconds per phase summed per rank, so a summary needs no second pass.
"""
from __future__ import annotations

import collections
import os

import numpy as np

from ..io.weights import lexicographic_order

SONATA_SORTING = {"none": 0, "by_id": 1, "by_time": 2}
STEADY_START_MS = 1000.0      # the summary's steady-state window starts here (runs over 1 s)
# Cycle statistics of a streamed or counted run use at most this many of the last cycles (10 MB per rank).
MAX_STATISTICS_CYCLES = 1 << 18
SPIKE_BYTES_IN_FILE = 16      # uint64 node id + float64 timestamp
TIMER_BYTES_PER_CYCLE = 40    # five float64 phases, per rank


def counted_window(start_ms, stop_ms, end_ms) -> bool:
    """Whether the running counts answer [start_ms, stop_ms) without the spikes."""
    return ((start_ms == 0 or start_ms == STEADY_START_MS) and stop_ms == end_ms
            or start_ms == 0 and stop_ms == STEADY_START_MS)


def time_order(ids, steps) -> np.ndarray:
    """The permutation that sorts spikes by step, then id (np.lexsort((ids, steps))): np.lexsort had
    cost 0.5 ms a chunk, 5 % of a 2-thread dpsnn run."""
    return lexicographic_order(steps, ids)


class Recording:
    """Counts and phase sums common to every recording (rank 0)."""

    def __init__(self, names, first_ids, sizes, resolution_ms: float, ranks: int, phases):
        self.names, self.first_ids, self.sizes = list(names), np.asarray(first_ids, np.int64), list(sizes)
        self.resolution_ms = resolution_ms
        self.ranks, self.phases = ranks, tuple(phases)
        self.steady_step = int(round(STEADY_START_MS / resolution_ms))
        self.counts = np.zeros((2, len(self.sizes)), dtype=np.int64)  # [before 1 s / from 1 s, population]
        self.at_end = np.zeros(len(self.sizes), dtype=np.int64)       # of those, stamped at the end of the run
        self.phase_seconds = np.zeros((ranks, len(self.phases)))
        self.cycles = 0
        self.spikes_total = 0
        self.keep = None        # global ids whose spikes are kept (Simulation record_spikes_of); None: all
        self.kept = np.zeros(len(self.sizes), dtype=np.int64)        # their spikes per population

    def population_of(self, ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.first_ids, ids, side="right") - 1

    def add(self, ids: np.ndarray, steps: np.ndarray, timers: np.ndarray, end_step: int) -> None:
        """One chunk: spike ids and steps sorted by (step, id), timers [rank, cycle, phase]; end_step:
        the steps run so far (a spike of the last step is stamped end_step)."""
        pops = self.population_of(ids)
        late = steps >= self.steady_step
        P = len(self.sizes)
        self.counts[0] += np.bincount(pops[~late], minlength=P)
        self.counts[1] += np.bincount(pops[late], minlength=P)
        # Rate windows are [start, stop): spikes stamped at the very end of the run fall outside.
        self.at_end = np.bincount(pops[steps >= end_step], minlength=P)
        self.spikes_total += ids.size
        self.phase_seconds += timers.sum(axis=1)
        self.cycles += timers.shape[1]
        if self.keep is not None:                 # counted above, kept only for the chosen neurons
            mine = np.isin(ids, self.keep)
            ids, steps = ids[mine], steps[mine]
            self.kept += np.bincount(pops[mine], minlength=P)
        self._add(ids, steps, timers)

    def _add(self, ids, steps, timers) -> None:
        raise NotImplementedError

    def population_counts(self, start_ms: float, stop_ms: float, end_ms: float) -> np.ndarray:
        """Spikes per population with start_ms <= t < stop_ms (end_ms: the time recorded so far)."""
        whole = stop_ms == end_ms
        if start_ms == 0 and whole:
            return self.counts.sum(axis=0) - self.at_end
        if start_ms == STEADY_START_MS and whole:
            return self.counts[1] - self.at_end
        if start_ms == 0 and stop_ms == STEADY_START_MS:
            return self.counts[0].copy()
        if self.keep is not None:
            from ..errors import ConfigError
            raise ConfigError(f"rates over [{start_ms:g}, {stop_ms:g}) ms need every neuron's spikes, and "
                              f"record_spikes_of kept only some: the whole run, or 0-1 s and from 1 s, are counted")
        ids, steps = self.spikes()
        t = steps * self.resolution_ms
        pops = self.population_of(ids[(t >= start_ms) & (t < stop_ms)])
        return np.bincount(pops, minlength=len(self.sizes))

    def spikes(self):
        raise NotImplementedError

    def cycle_timers(self):
        raise NotImplementedError

    def close(self) -> None:
        pass


class MemoryRecording(Recording):
    """Every spike and every cycle's timers, in memory."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._ids, self._steps, self._timers = [], [], []

    def _add(self, ids, steps, timers):
        # kept as parts and joined when read: joining on every chunk would copy the history each time
        self._ids.append(ids)
        self._steps.append(steps)
        self._timers.append(timers)

    def spikes(self):
        ids = np.concatenate(self._ids) if self._ids else np.zeros(0, np.int64)
        steps = np.concatenate(self._steps) if self._steps else np.zeros(0, np.int64)
        self._ids, self._steps = [ids], [steps]
        return ids, steps

    def cycle_timers(self):
        if not self._timers:
            return np.zeros((self.ranks, 0, len(self.phases)))
        timers = np.concatenate(self._timers, axis=1)
        self._timers = [timers]
        return timers


class CountRecording(Recording):
    """Per-population counts and the last MAX_STATISTICS_CYCLES cycles' timers: memory stays flat."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._timers, self._kept = collections.deque(), 0

    def _add(self, ids, steps, timers):
        self._timers.append(timers)
        self._kept += timers.shape[1]
        while self._kept - self._timers[0].shape[1] >= MAX_STATISTICS_CYCLES:
            self._kept -= self._timers.popleft().shape[1]

    def population_counts(self, start_ms, stop_ms, end_ms):
        if not counted_window(start_ms, stop_ms, end_ms):
            raise ValueError(f"this run kept spike counts for [0, {STEADY_START_MS:g}) ms and from "
                             f"{STEADY_START_MS:g} ms on, not its spikes; record them to count other windows")
        return super().population_counts(start_ms, stop_ms, end_ms)

    def spikes(self):
        return None

    def cycle_timers(self):
        if not self._timers:
            return np.zeros((self.ranks, 0, len(self.phases)))
        timers = np.concatenate(list(self._timers), axis=1)
        return timers[:, max(0, timers.shape[1] - MAX_STATISTICS_CYCLES):, :]


class FileRecording(Recording):
    """Spikes and timers streamed to `folder` during the run, spikes.h5 and timers.h5 at close().

    During the run each chunk is appended to plain binary files (global ids, steps, and timers
    [cycle, rank, phase]) with ordinary writes, so a full disk or a quota is an OSError like any
    other: it is kept in `error`, the files are dropped, and the run goes on counting. close()
    first reserves the space the HDF5 files need (posix_fallocate: a full disk or quota says so
    before HDF5 writes anything), then writes spikes.h5 in the SONATA layout
    (/spikes/<population>/{node_ids, timestamps}, node ids population-local, sorted by time:
    chunks arrive in time order, each sorted by step and id) and timers.h5
    (cycle_seconds[rank, cycle, phase]), in blocks, and removes the binary files.
    """

    RAW = {"ids": ".spike-ids.raw", "steps": ".spike-steps.raw", "timers": ".cycle-timers.raw"}
    BLOCK = 1 << 18                     # records per block when reading back: memory stays flat

    def __init__(self, folder, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from pathlib import Path

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.spikes_path, self.timers_path = self.folder / "spikes.h5", self.folder / "timers.h5"
        self.error: OSError | None = None
        self.cycle_ms = None
        self.closed = False
        self._raw = {key: open(self.folder / name, "wb") for key, name in self.RAW.items()}

    def set_cycle_ms(self, cycle_ms: float) -> None:
        self.cycle_ms = cycle_ms

    def _add(self, ids, steps, timers):
        if self.error is not None:
            return
        try:
            self._raw["ids"].write(ids.astype(np.int64).tobytes())
            self._raw["steps"].write(steps.astype(np.int64).tobytes())
            self._raw["timers"].write(np.ascontiguousarray(timers.transpose(1, 0, 2), dtype=np.float64).tobytes())
            for f in self._raw.values():
                f.flush()
        except OSError as e:            # a full disk, a quota: the run goes on, counting
            self._fail(e)

    def _fail(self, error: OSError) -> None:
        self.error = error
        self._drop_raw()

    def _drop_raw(self) -> None:
        for key, f in list(self._raw.items()):
            try:
                f.close()
            except OSError:
                pass
            try:
                os.unlink(self.folder / self.RAW[key])
            except OSError:
                pass
        self._raw = {}

    def bytes_needed(self) -> int:
        """What the two files need for everything recorded (the counts go on after a failed write)."""
        overhead = 4096 * (2 * len(self.names) + 8)
        return self.spikes_total * SPIKE_BYTES_IN_FILE + self.cycles * self.ranks * TIMER_BYTES_PER_CYCLE + overhead

    # -- reading back (during the run: the binary files) -----------------------------------
    # Read with plain reads, a block at a time, never mapped: pages of a mapped file count in the
    # process's memory (RSS, and a cgroup's limit) until it ends, so mapping the whole record to
    # write spikes.h5 made the end of a run need memory in proportion to its length.
    def _length(self, key, dtype=np.int64) -> int:
        return (self.folder / self.RAW[key]).stat().st_size // np.dtype(dtype).itemsize

    def _read(self, key, first: int, count: int, dtype=np.int64) -> np.ndarray:
        item = np.dtype(dtype).itemsize
        return np.fromfile(self.folder / self.RAW[key], dtype=dtype, count=count, offset=first * item)

    def _spike_blocks(self):
        """(ids, steps) of every recorded spike, BLOCK at a time, in the order recorded."""
        n = self._length("ids")
        for lo in range(0, n, self.BLOCK):
            count = min(self.BLOCK, n - lo)
            yield self._read("ids", lo, count), self._read("steps", lo, count)

    def _timer_rows(self, first: int, count: int) -> np.ndarray:
        """Cycles [first, first + count) of the timers: [cycle, rank, phase]."""
        per_cycle = self.ranks * len(self.phases)
        flat = self._read("timers", first * per_cycle, count * per_cycle, np.float64)
        return flat.reshape(-1, self.ranks, len(self.phases))

    def spikes(self):
        if self.error is not None:
            return None
        if self.closed:
            return read_spike_file(self.spikes_path, self.names, self.first_ids, self.resolution_ms)
        n = self._length("ids")
        return self._read("ids", 0, n), self._read("steps", 0, n)

    def population_counts(self, start_ms, stop_ms, end_ms):
        if counted_window(start_ms, stop_ms, end_ms):
            return super().population_counts(start_ms, stop_ms, end_ms)
        if self.error is not None:
            raise ValueError(f"the spike files could not be written ({self.error}); only the counts for "
                             f"[0, {STEADY_START_MS:g}) ms and from {STEADY_START_MS:g} ms on were kept")
        if self.closed:
            return super().population_counts(start_ms, stop_ms, end_ms)
        out = np.zeros(len(self.names), dtype=np.int64)
        for ids, steps in self._spike_blocks():
            t = steps * self.resolution_ms
            keep = (t >= start_ms) & (t < stop_ms)
            out += np.bincount(self.population_of(ids[keep]), minlength=len(self.names))
        return out

    def cycle_timers(self):
        """The last MAX_STATISTICS_CYCLES cycles' timers (all of them for runs up to that long)."""
        if self.error is not None:
            return None
        if self.closed:
            import h5py
            with h5py.File(self.timers_path, "r") as f:
                ds = f["cycle_seconds"]
                return ds[:, max(0, ds.shape[1] - MAX_STATISTICS_CYCLES):, :]
        cycles = self._length("timers", np.float64) // (self.ranks * len(self.phases))
        first = max(0, cycles - MAX_STATISTICS_CYCLES)
        return np.ascontiguousarray(self._timer_rows(first, cycles - first).transpose(1, 0, 2))

    # -- the files ---------------------------------------------------------------------
    def close(self) -> None:
        """Writes spikes.h5 and timers.h5 and removes the binary files; a failure is kept in `error`."""
        if self.closed or self.error is not None:
            self.closed = True
            return
        try:
            for f in self._raw.values():
                f.close()
            self._reserve(self.bytes_needed())
            self._write_spike_file()
            self._write_timer_file()
        except OSError as e:
            for path in (self.spikes_path, self.timers_path):
                try:
                    os.unlink(path)
                except OSError:
                    pass
            self._fail(e)
            return
        self._drop_raw()
        self.closed = True

    def _reserve(self, nbytes: int) -> None:
        """Claims the disk space (and quota) the HDF5 files need, then gives it back to them."""
        probe = self.folder / ".reserve"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.posix_fallocate(fd, 0, max(1, nbytes))
        finally:
            os.close(fd)
            os.unlink(probe)

    def _write_spike_file(self) -> None:
        import h5py

        totals = self.counts.sum(axis=0) if self.keep is None else self.kept
        sorting = h5py.enum_dtype(SONATA_SORTING, basetype="i1")
        with h5py.File(self.spikes_path, "w") as f:
            group = f.create_group("spikes")
            group.attrs["sorting"] = "by_time"
            node_ids, stamps = [], []
            for name, n in zip(self.names, totals):
                pop = group.create_group(name)
                # SONATA (and libsonata) read the population's sorting as an HDF5 enum
                pop.attrs.create("sorting", SONATA_SORTING["by_time"], dtype=sorting)
                node_ids.append(pop.create_dataset("node_ids", shape=(int(n),), dtype=np.uint64))
                stamps.append(pop.create_dataset("timestamps", shape=(int(n),), dtype=np.float64))
                stamps[-1].attrs["units"] = "ms"
            at = np.zeros(len(self.names), dtype=np.int64)
            for block_ids, block_steps in self._spike_blocks():
                pops = self.population_of(block_ids)
                for p in np.unique(pops):
                    mine = pops == p
                    n = int(np.count_nonzero(mine))
                    node_ids[p][at[p]:at[p] + n] = (block_ids[mine] - self.first_ids[p]).astype(np.uint64)
                    stamps[p][at[p]:at[p] + n] = block_steps[mine] * self.resolution_ms
                    at[p] += n

    def _write_timer_file(self) -> None:
        import h5py

        cycles = self._length("timers", np.float64) // (self.ranks * len(self.phases))
        with h5py.File(self.timers_path, "w") as f:
            ds = f.create_dataset("cycle_seconds", shape=(self.ranks, cycles, len(self.phases)), dtype=np.float64)
            ds.attrs["phases"] = np.array(self.phases, dtype=h5py.string_dtype())
            if self.cycle_ms is not None:
                ds.attrs["cycle_ms"] = self.cycle_ms
            block = max(1, self.BLOCK // self.ranks)
            for lo in range(0, cycles, block):
                rows = self._timer_rows(lo, min(block, cycles - lo))
                ds[:, lo:lo + rows.shape[0], :] = rows.transpose(1, 0, 2)

    def moved_to(self, folder) -> None:
        """The folder was renamed (published): read from its new place."""
        from pathlib import Path
        self.folder = Path(folder)
        self.spikes_path, self.timers_path = self.folder / "spikes.h5", self.folder / "timers.h5"


def read_spike_file(path, names, first_ids, resolution_ms):
    """(global ids, steps) of a SONATA spike file written by Ranvier, sorted by time then id."""
    import h5py

    parts_ids, parts_steps = [], []
    with h5py.File(path, "r") as f:
        for name, first in zip(names, first_ids):
            parts_ids.append(f[f"spikes/{name}/node_ids"][:].astype(np.int64) + first)
            parts_steps.append(np.rint(f[f"spikes/{name}/timestamps"][:] / resolution_ms).astype(np.int64))
    ids, steps = np.concatenate(parts_ids), np.concatenate(parts_steps)
    order = time_order(ids, steps)
    return ids[order], steps[order]
