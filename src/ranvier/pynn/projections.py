"""Projection of pyNN.ranvier: PyNN's connectors draw the connections (their default RNG is
seeded, the same on every rank; rank 0's list is the one built), Ranvier holds them as explicit
synapses. Weights in nA become pA; 'inhibitory' connections get negative weights, as NEST's."""
from __future__ import annotations

import numpy as np

from pyNN import common, errors
from pyNN.core import ezip
from pyNN.space import Space

from . import simulator
from .simulator import Connection
from .standardmodels import StaticSynapse

SYNAPSE_TYPES = ("StaticSynapse", "STDPMechanism", "TsodyksMarkramSynapse", "SimpleStochasticSynapse",
                 "MultiQuantalSynapse")


def native_rule(connector, synapse_type, pre, post) -> dict | None:
    """The Ranvier rule that draws what a PyNN connector would, from Ranvier's keyed generator
    (the same network for any ranks and threads, built in parallel), where there is one: fixed
    probability, fixed number pre or post with replacement and self-connections, fixed total
    number with replacement, between whole populations, with one weight and one delay, the
    connector given no RNG or a NativeRNG. Otherwise None: PyNN's connector draws the
    connections (with the script's NumpyRNG, the connections pyNN.nest draws)."""
    from pyNN import connectors
    from pyNN.random import NativeRNG

    from .populations import Population
    if not (isinstance(pre, Population) and isinstance(post, Population)):
        return None
    rng = getattr(connector, "rng", None)
    if rng is not None and not isinstance(rng, NativeRNG) and not _default_rng(rng):
        return None                   # the script's own RNG: PyNN draws with it, as pyNN.nest does
    if type(synapse_type).__name__ != "StaticSynapse":
        return None
    params = synapse_type.native_parameters
    params.shape = (1,)
    values = {}
    for name in ("weight", "delay"):
        larr = params[name]
        if not larr.is_homogeneous or callable(larr.base_value):
            return None
        values[name] = float(np.asarray(larr.evaluate(simplify=True)).ravel()[0])
    kind = type(connector)
    n = getattr(connector, "n", None)
    whole = isinstance(n, (int, np.integer)) and getattr(connector, "with_replacement", False) and \
        getattr(connector, "allow_self_connections", False) is True
    if kind is connectors.FixedProbabilityConnector:
        rule = {"rule": "probability", "value": float(connector.p_connect),
                "autapses": bool(connector.allow_self_connections) and pre is post}
    elif kind is connectors.FixedNumberPreConnector and whole:
        rule = {"rule": "indegree", "value": int(n)}
    elif kind is connectors.FixedNumberPostConnector and whole:
        rule = {"rule": "outdegree", "value": int(n)}
    elif kind is connectors.FixedTotalNumberConnector and whole:
        rule = {"rule": "total_synapses", "value": int(n)}
    else:
        return None
    return {**rule, **values}


def _default_rng(rng) -> bool:
    """Whether `rng` is the one PyNN's connectors make when none is given (pyNN.connectors:
    NumpyRNG(seed=151985012)), not yet drawn from."""
    from pyNN.random import NumpyRNG
    return type(rng) is NumpyRNG and rng.seed == 151985012 and \
        rng.rng.get_state()[2] == NumpyRNG(seed=151985012).rng.get_state()[2]


def _connect_with_columns_1d(connector, projection) -> None:
    """connector.connect(projection), with each column of its connection map at least 1-D.
    PyNN 0.13's connectors take a column of a 1 x 1 map (a one-cell population, e.g. its
    examples/simple_STDP.py) as a 0-d NumPy bool, on which NumPy 2 refuses nonzero(); pyNN.nest
    never meets it, NEST drawing those connections itself."""
    def with_1d_columns(prj, connection_map, distance_map=None):
        def columns(mask=None):
            for column in (connection_map.by_column() if mask is None else connection_map.by_column(mask)):
                yield np.atleast_1d(column) if isinstance(column, (np.ndarray, np.generic)) else column
        connector._standard_connect(prj, columns, distance_map)

    connector._connect_with_map = with_1d_columns
    try:
        connector.connect(projection)
    finally:
        del connector._connect_with_map


def _composed_target(post) -> bool:
    """Whether the projection's target has receptors by name (PointNeuron, NESTML receptor ports)."""
    cells = post.populations if hasattr(post, "populations") else [post]
    return all(getattr(getattr(p, "celltype", None), "receptor_numbers", None) is not None for p in cells)


class Projection(common.Projection):
    __doc__ = common.Projection.__doc__
    _simulator = simulator
    _static_synapse_class = StaticSynapse

    def __init__(self, presynaptic_population, postsynaptic_population, connector, synapse_type=None,
                 source=None, receptor_type=None, space=Space(), label=None):
        simulator.state.check_not_built("creating a projection")
        common.Projection.__init__(self, presynaptic_population, postsynaptic_population, connector, synapse_type,
                                   source, receptor_type, space, label)
        composed = _composed_target(postsynaptic_population)
        if self.receptor_type not in ("excitatory", "inhibitory") and not composed:
            raise NotImplementedError(f"pyNN.ranvier: receptor type {self.receptor_type!r}; "
                                      f"'excitatory' or 'inhibitory'")
        if type(self.synapse_type).__name__ not in SYNAPSE_TYPES and \
                getattr(self.synapse_type, "ranvier_nestml_kind", None) is None:
            raise errors.NoModelAvailableError(f"pyNN.ranvier: synapse type {type(self.synapse_type).__name__} is not "
                                               f"available yet; {', '.join(SYNAPSE_TYPES)} and NESTML's "
                                               f"(sim.nestml.nestml_synapse_type)")
        self.connections = []
        self._native_columns = None
        self.native = native_rule(connector, self.synapse_type, presynaptic_population, postsynaptic_population)
        if self.native is None:
            _connect_with_columns_1d(connector, self)   # PyNN's connector draws the connections
        else:
            self._connections = None           # Ranvier draws them, keyed: read back once built
        simulator.state.projections.append(self)

    @property
    def connections(self):
        if self._connections is None:
            self._connections = simulator.state.native_connections(self)
        return self._connections

    @connections.setter
    def connections(self, value):
        self._connections = value
        self._native_columns = None

    def _columns(self, names) -> list[np.ndarray]:
        """The connections' values of `names` (presynaptic_index, postsynaptic_index, weight,
        delay, a synapse parameter), one array each: read from the engine's arrays where Ranvier
        drew the connections, without a Connection object per synapse."""
        if self.native is not None and self._connections is None:
            if getattr(self, "_native_columns", None) is None:
                self._native_columns = simulator.state.native_arrays(self)
            return [self._native_columns[n] for n in names]
        conns = self.connections
        out = []
        for n in names:
            kind = np.int64 if n.endswith("synaptic_index") else float
            out.append(np.fromiter((getattr(c, n) for c in conns), dtype=kind, count=len(conns)))
        return out

    def __len__(self):
        """The connections on this rank (PyNN's size() sums the ranks): where Ranvier drew them and
        none was asked for one by one, counted in the engine without a gather."""
        if self.native is not None and self._connections is None:
            return simulator.state.native_count(self)
        return len(self.connections)

    def _get_attributes_as_list(self, names):
        return list(zip(*(column.tolist() for column in self._columns(names)))) if len(names) else []

    def _get_attributes_as_arrays(self, names, multiple_synapses="sum"):
        """PyNN's (pre x post) arrays, NaN where no connection, several synapses between one pair
        combined by `multiple_synapses` ('sum', 'min', 'max', 'first', 'last'), in one pass."""
        names = [n[:-1] if n.endswith("s") else n for n in names]    # weights -> weight, delays -> delay
        pre, post, *columns = self._columns(["presynaptic_index", "postsynaptic_index"] + names)
        shape = (self.pre.size, self.post.size)
        flat = pre * shape[1] + post
        out = []
        for values in columns:
            a = np.full(shape[0] * shape[1], np.nan)
            if multiple_synapses == "first":
                _, at = np.unique(flat, return_index=True)
                a[flat[at]] = values[at]
            elif multiple_synapses == "last":
                _, at = np.unique(flat[::-1], return_index=True)
                at = flat.size - 1 - at
                a[flat[at]] = values[at]
            else:
                combine = {"sum": np.add, "min": np.minimum, "max": np.maximum}[multiple_synapses]
                seen = np.zeros(a.size, bool)
                seen[flat] = True
                a[seen] = {"sum": 0.0, "min": np.inf, "max": -np.inf}[multiple_synapses]
                combine.at(a, flat, values)
            out.append(a.reshape(shape))
        return out

    def set(self, **attributes):
        """Numbers and RandomDistributions: one value per connection, drawn in connection order;
        (pre x post) arrays, lists and functions of distance as PyNN's Projection.set takes them
        (a list: one value per connected pair, pairs in (pre, post) order; native names and units
        through the synapse type's translations). A list for a projection with multapses, which
        PyNN's Projection.set refuses: one value per connection, in connection order."""
        simulator.state.check_not_built("setting connection attributes")
        if not all(np.isscalar(v) or hasattr(v, "next") or (np.ndim(v) == 1 and self._multapses())
                   for v in attributes.values()):
            return common.Projection.set(self, **attributes)
        n = len(self.connections)
        for name, value in attributes.items():
            if hasattr(value, "next"):                                 # a RandomDistribution
                values = np.asarray(value.next(n), dtype=float)
            else:
                values = np.broadcast_to(np.asarray(value, dtype=float), (n,))
            for c, v in zip(self.connections, values):
                setattr(c, name, float(v))

    # Synapse state a script may set with Projection.initialize, per synapse type: PyNN's name ->
    # the connection attribute the build reads (NEST's initial a and u of quantal_stp_synapse).
    _INITIAL = {"MultiQuantalSynapse": {"a": "a0", "u": "u0"}}

    def _set_initial_value_array(self, variable, value):
        """Projection.initialize: one value per connection, in connection order (as pyNN.nest sets them)."""
        simulator.state.check_not_built("initializing synapse state")
        kind = type(self.synapse_type).__name__
        names = self._INITIAL.get(kind, {})
        if variable not in names:
            raise NotImplementedError(f"pyNN.ranvier: {kind} has no initial value {variable!r} to set"
                                      + (f"; it has {sorted(names)}" if names else ""))
        values = np.broadcast_to(np.asarray(value.evaluate(simplify=True), dtype=float), (len(self.connections),))
        for c, v in zip(self.connections, values.tolist()):
            setattr(c, names[variable], v)

    def _multapses(self) -> bool:
        pairs = {(c.presynaptic_index, c.postsynaptic_index) for c in self.connections}
        return len(pairs) < len(self.connections)

    def _set_attributes(self, parameter_space):
        """PyNN's Projection.set: the (pre x post) arrays of native values, read at each connection."""
        parameter_space.evaluate(simplify=False)
        pre = np.array([c.presynaptic_index for c in self.connections], dtype=np.int64)
        post = np.array([c.postsynaptic_index for c in self.connections], dtype=np.int64)
        for name, value in parameter_space.items():
            values = np.asarray(value, dtype=float)[pre, post] if np.ndim(value) == 2 else \
                np.broadcast_to(np.asarray(value, dtype=float), pre.shape)
            for c, v in zip(self.connections, values.tolist()):
                setattr(c, name, v)

    def _convergent_connect(self, presynaptic_indices, postsynaptic_index, location_selector=None,
                            **connection_parameters):
        if location_selector is not None:
            raise NotImplementedError("pyNN.ranvier has point neurons only")
        for name, value in connection_parameters.items():
            if np.isscalar(value):
                connection_parameters[name] = np.full(len(presynaptic_indices), value)
        for pre, values in ezip(presynaptic_indices, *connection_parameters.values()):
            self.connections.append(Connection(int(pre), int(postsynaptic_index),
                                               **dict(zip(connection_parameters.keys(), values))))
