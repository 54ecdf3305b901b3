"""The state of a pyNN.ranvier session: what PyNN's common layer asks a backend for (time, dt,
delays, ranks, recorders), and the Ranvier network the session's populations, projections and
current sources become at the first run.

PyNN builds a network object by object; Ranvier builds a network whole and then simulates. So
the session keeps PyNN's description and builds one rv.Network and one rv.Simulation at the
first run() (and after reset()); run() continues that simulation. A change to the network
after a run and before reset() is refused by name (Ranvier cannot change a built network yet).
"""
from __future__ import annotations

import atexit

import numpy as np

from pyNN import common

from ranvier.core.neurons import NEURON_MODELS

name = "Ranvier"


class ID(int, common.IDMixin):
    """A cell's PyNN id: its Ranvier global id."""

    def __init__(self, n):
        int.__init__(n)
        common.IDMixin.__init__(self)


class Connection(common.Connection):
    """One connection: indices within the pre- and post-synaptic populations and its attributes."""

    def __init__(self, pre, post, **attributes):
        self.presynaptic_index = pre
        self.postsynaptic_index = post
        for name, value in attributes.items():
            setattr(self, name, value)

    def as_tuple(self, *attribute_names):
        return tuple(getattr(self, name) for name in attribute_names)


class State(common.control.BaseState):

    def __init__(self):
        common.control.BaseState.__init__(self)
        self.mpi_rank, self.num_processes = _mpi()
        self.threads = 1
        self.seed = 1
        self.dt = 0.1
        self.min_delay = self.max_delay = None
        self.min_delay_auto = False
        self.builds, self.static_synapses, self.local_synapses = 0, None, None
        self.clear()

    # -- PyNN's interface ----------------------------------------------------------------------
    def run(self, simtime):
        self.run_until(self.t + simtime)

    def run_until(self, tstop):
        sim = self._simulation()
        steps = int(round(tstop / self.dt)) - sim.steps_done
        if steps > 0:
            first = sim.steps_done
            self.result = sim.run(steps * self.dt)
            for source in self.recorded_currents:          # source.record(): the steps just run
                source._record_run(sim, first, sim.steps_done - first)
        self.t = sim.steps_done * self.dt
        self.running = True
        self._read_plastic_weights()

    def native_arrays(self, projection) -> dict:
        """The connections Ranvier drew for a projection with a native rule, as arrays (pre- and
        post-synaptic indices within the populations, PyNN's weight and delay): a collective call,
        every rank asks, rank 0 holds them (the others get empty arrays), as PyNN's gathers expect."""
        sim = self._simulation()
        k = self.native_index[self.projections.index(projection)]
        net_pr = self.network.projections[k]
        if sum(p.source == net_pr.source and p.target == net_pr.target for p in self.network.projections) > 1:
            got = sim.weights(net_pr.source, net_pr.target, index=k)     # refuses, naming the projections
        else:
            if self.static_synapses is None or self.static_synapses[0] != self.builds:   # one gather per build
                self.static_synapses = (self.builds, sim.connections())
            got = self.static_synapses[1]
        if got is None:
            empty = np.zeros(0, np.int64)
            return {"presynaptic_index": empty, "postsynaptic_index": empty, "weight": np.zeros(0), "delay": np.zeros(0)}
        src, tgt = self.network.population(net_pr.source), self.network.population(net_pr.target)
        keep = (got.source >= src.first_id) & (got.source < src.first_id + src.size) & \
            (got.target >= tgt.first_id) & (got.target < tgt.first_id + tgt.size)
        scale = NEURON_MODELS[tgt.model].pynn_weight_scale
        return {"presynaptic_index": got.source[keep] - src.first_id, "postsynaptic_index": got.target[keep] - tgt.first_id,
                "weight": np.abs(got.weight[keep]) / scale, "delay": got.delay_ms[keep]}

    def native_count(self, projection) -> int:
        """How many synapses Ranvier drew for a projection with a native rule on this rank (PyNN's
        size() sums the ranks' counts): counted in the engine's arrays, with no gather or sort."""
        sim = self._simulation()
        net_pr = self.network.projections[self.native_index[self.projections.index(projection)]]
        if sum(p.source == net_pr.source and p.target == net_pr.target for p in self.network.projections) > 1:
            return int(self.native_arrays(projection)["presynaptic_index"].size) if self.mpi_rank == 0 else 0
        if self.local_synapses is None or self.local_synapses[0] != self.builds:
            self.local_synapses = (self.builds, sim.connections(local=True))
        got = self.local_synapses[1]
        src, tgt = self.network.population(net_pr.source), self.network.population(net_pr.target)
        return int(np.count_nonzero((got.source >= src.first_id) & (got.source < src.first_id + src.size) &
                                    (got.target >= tgt.first_id) & (got.target < tgt.first_id + tgt.size)))

    def native_connections(self, projection) -> list:
        """native_arrays as PyNN's Connection objects (for the calls that want them one by one)."""
        a = self.native_arrays(projection)
        return [Connection(s, t, weight=w, delay=d) for s, t, w, d in
                zip(a["presynaptic_index"].tolist(), a["postsynaptic_index"].tolist(), a["weight"].tolist(),
                    a["delay"].tolist())]

    def _read_plastic_weights(self):
        """The plastic projections' weights now, into their PyNN connections (rank 0 holds them):
        matched by (pre, post, delay), in order among equal ones."""
        for j, k in getattr(self, "plastic", []):
            pr = self.projections[j]
            net_pr = self.network.projections[k]
            got = self.simulation.weights(net_pr.source, net_pr.target, index=k)     # collective
            if got is None or not pr.connections:
                continue
            src_pop, tgt_pop = self.network.population(net_pr.source), self.network.population(net_pr.target)
            scale = NEURON_MODELS[tgt_pop.model].pynn_weight_scale
            ours = np.lexsort((np.rint(got.delay_ms / self.dt), got.target, got.source))
            from .build import _roots
            pre = _roots(self, pr.pre, np.array([c.presynaptic_index for c in pr.connections]))[1] + src_pop.first_id
            post = _roots(self, pr.post, np.array([c.postsynaptic_index for c in pr.connections]))[1] + tgt_pop.first_id
            delay = np.rint(np.maximum(np.rint(np.array([c.delay for c in pr.connections]) / self.dt), 1))
            theirs = np.lexsort((np.arange(pre.size), delay, post, pre))
            if ours.size != theirs.size:
                continue
            for c_index, w in zip(theirs, np.abs(got.weight[ours]) / scale):
                pr.connections[c_index].weight = float(w)

    def clear(self):
        self.recorders = set()
        self.populations = []
        self.projections = []
        self.currents = []            # (rv current source factory, cells)
        self.recorded_currents = []   # the current sources whose current is recorded (source.record())
        self.id_counter = 0
        self.segment_counter = -1
        self.write_on_end = []
        self.reset()

    def reset(self):
        """Back to t = 0: the next run builds the network again and starts from its initial state."""
        self.running = False
        self.t = 0.0
        self.t_start = 0.0
        self.segment_counter += 1
        self.simulation = None
        self.result = None
        self.network = None
        self.given_times = {}         # SpikeSourceArray cells: gid -> grid step -> the time given
        for source in getattr(self, "recorded_currents", []):     # recorded again from t = 0
            source.__dict__["_trace"] = {"first_step": 0, "values": [], "next": 0.0}

    # -- building --------------------------------------------------------------------------------
    def running_simulation(self):
        """The simulation, where it has run (changes then go to it), else None."""
        return self.simulation if self.simulation is not None and self.simulation.steps_done > 0 else None

    def update_population(self, population) -> None:
        """A population's parameters changed after a run: the simulation takes them."""
        from ranvier.runtime.parallel import make_comm

        from .build import ranvier_params
        sim = self.running_simulation()
        if sim is not None:
            name = self.population_names[self.populations.index(population)]
            comm = make_comm()
            sim.set_parameters(name, **comm.bcast(ranvier_params(self, population) if comm.rank == 0 else None))

    def update_current(self, source) -> None:
        sim = self.running_simulation()
        if sim is None:
            return
        for index, target, neurons in self.current_index.get(id(source), []):
            (new,) = source.ranvier_sources(target, neurons)
            sim.set_current(index, new)

    def check_not_built(self, what: str) -> None:
        if self.simulation is not None and self.simulation.steps_done == 0:
            self.simulation = self.network = None      # built to list connections: built again at run()
        if self.simulation is not None and self.simulation.steps_done > 0:
            raise NotImplementedError(f"pyNN.ranvier: {what} after run() needs reset() first (Ranvier builds the "
                                      f"network once, at the first run)")

    def _simulation(self):
        if self.simulation is None:
            import ranvier as rv
            from .build import build_network
            self.network, record = build_network(self)
            # only the spikes PyNN records are kept (every neuron's are counted)
            self.simulation = rv.Simulation(self.network, resolution_ms=self.dt, threads=self.threads,
                                            seed=self.seed, record_state=record or None,
                                            record_spikes_of=self.recorded_spike_ids)
            self.recorded_state_ids = np.asarray(record, dtype=np.int64)
            self.builds += 1                  # keys what native_arrays gathered of this build
            if self.min_delay_auto:           # setup(min_delay="auto"): the network's smallest delay
                delays = [float(np.min(pr.delay_ms)) for pr in self.network.projections if np.size(pr.delay_ms)]
                self.min_delay = min(delays) if delays else self.dt
        return self.simulation


    # -- lookups ----------------------------------------------------------------------------------
    def population_of(self, gid: int):
        for p in self.populations:
            if int(p.first_id) <= gid <= int(p.last_id):
                return p
        raise KeyError(gid)

    def celltype_of(self, gid: int):
        return self.population_of(gid).celltype

    def parameter_of(self, gid: int, native: str) -> float:
        p = self.population_of(gid)
        value = p._parameters[native]
        if hasattr(value, "evaluate"):
            value = value.evaluate(simplify=True)
        return float(value[gid - int(p.first_id)] if isinstance(value, np.ndarray) else value)

    def initial_value(self, gid: int, variable: str) -> float:
        p = self.population_of(gid)
        values = p._initial.get(variable)
        if values is not None and not np.isnan(values[gid - int(p.first_id)]):
            return float(values[gid - int(p.first_id)])
        if variable not in p.celltype.default_initial_values:   # a native cell type's V_m: the model's start
            return self.parameter_of(gid, "V0_mean_mV") if "V0_mean_mV" in p._parameters else np.nan
        return float(p.celltype.default_initial_values[variable])

    def on_grid(self, t) -> float:
        """A time rounded to the nearest step."""
        return round(float(t) / self.dt) * self.dt


def _mpi():
    from ranvier.runtime.parallel import make_comm
    comm = make_comm()
    return comm.rank, comm.size


state = State()
# The engine's objects go before the interpreter's teardown (nanobind reports leaks otherwise).
atexit.register(state.reset)
