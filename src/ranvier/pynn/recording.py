"""Recording for pyNN.ranvier: PyNN's Recorder builds the Neo objects; these hooks read the
Ranvier result (spikes of every neuron, the state of the recorded ones at every step). Rank 0
holds the whole run's data; the other ranks return none, so PyNN's gather adds nothing twice."""
from __future__ import annotations

import numpy as np

from pyNN import recording

from . import simulator


class Recorder(recording.Recorder):
    _simulator = simulator

    def _record(self, variable, new_ids, sampling_interval=None):
        simulator.state.check_not_built("recording")
        if sampling_interval is not None:
            self.sampling_interval = sampling_interval

    def _spikes(self):
        result = simulator.state.result
        if result is None or result.spikes is None:
            return np.zeros(0, np.int64), np.zeros(0)
        return result.spikes

    def _get_spiketimes(self, ids, clear=False):
        """(ids, times) of the spikes of `ids` since the recording started, as arrays: PyNN then
        builds the Neo spike trains in one call (SpikeTrainList.from_spike_time_array) rather
        than one SpikeTrain at a time."""
        state = simulator.state
        if not len(ids):
            return {}      # PyNN's array path cannot take a rank with no recorded cells
        gids, times = self._spikes()
        wanted = np.fromiter((int(i) for i in ids), dtype=np.int64)
        mine = np.isin(gids, wanted) & (times >= float(self._recording_start_time))
        gids, times = gids[mine].astype(np.int64), np.array(times[mine], dtype=float)
        # A SpikeSourceArray fires at its given times (its spikes act at the next step, as NEST's
        # precise times at a grid-based neuron): those are the times recorded, as NEST's.
        given = state.given_times
        if given:
            for k in np.flatnonzero(np.isin(gids, np.fromiter(given.keys(), dtype=np.int64))):
                times[k] = given[int(gids[k])].get(int(round(times[k] / state.dt)), times[k])
        return gids, times

    def _get_all_signals(self, variable, ids, clear=False):
        state = simulator.state
        result = state.result
        ids = [int(i) for i in ids]
        if result is None or result.state is None or not ids:
            return np.zeros((0, 0)), None
        every = int(round(self.sampling_interval / state.dt))
        rows = np.searchsorted(result.state["ids"], ids)
        pop = self.population
        celltype = pop.celltype if not hasattr(pop, "parent") else pop.parent.celltype
        key = celltype.variable_map[variable.name]
        trace = np.asarray(result.state[key])[rows]                     # [neuron, step]
        initial = np.array([state.initial_value(i, variable.name) for i in ids])
        if key == "V" and not getattr(celltype, "absolute_v", False):   # the engine holds V - E_L
            rest = np.array([state.parameter_of(i, "E_L_mV") for i in ids])
            trace = trace + rest[:, None]
        trace = trace * celltype.scale_factors[variable.name]
        signals = np.hstack([initial[:, None], trace])[:, ::every]      # t = 0, then every interval
        start = int(round(float(self._recording_start_time) / state.dt))
        return signals[:, (start + every - 1) // every:].T, None

    def _local_count(self, variable, filter_ids=None):
        if simulator.state.mpi_rank != 0:     # rank 0 holds every count; PyNN's gather merges the dicts
            return {}
        gids, _ = self._spikes()
        counts = np.bincount(gids, minlength=simulator.state.id_counter)
        return {int(i): int(counts[int(i)]) for i in self.filter_recorded(variable, filter_ids)}

    def _clear_simulator(self):
        pass

    def _reset(self):
        pass
