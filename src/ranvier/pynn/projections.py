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


def native_rule(connector, synapse_type, pre, post) -> dict | None:
    """The Ranvier rule that draws what a PyNN connector would, from Ranvier's keyed generator
    (the same network for any ranks and threads, built in parallel), where there is one: fixed
    probability, fixed number pre or post with replacement and self-connections, fixed total
    number with replacement, between whole populations, with one weight and one delay.
    Otherwise None: PyNN's connector draws the connections."""
    from pyNN import connectors

    from .populations import Population
    if not (isinstance(pre, Population) and isinstance(post, Population)):
        return None
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


class Projection(common.Projection):
    __doc__ = common.Projection.__doc__
    _simulator = simulator
    _static_synapse_class = StaticSynapse

    def __init__(self, presynaptic_population, postsynaptic_population, connector, synapse_type=None,
                 source=None, receptor_type=None, space=Space(), label=None):
        simulator.state.check_not_built("creating a projection")
        common.Projection.__init__(self, presynaptic_population, postsynaptic_population, connector, synapse_type,
                                   source, receptor_type, space, label)
        if self.receptor_type not in ("excitatory", "inhibitory"):
            raise errors.NotAvailableError(f"pyNN.ranvier: receptor type {self.receptor_type!r}; "
                                           f"'excitatory' or 'inhibitory'")
        if type(self.synapse_type).__name__ not in ("StaticSynapse", "STDPMechanism"):
            raise errors.NotAvailableError(f"pyNN.ranvier: synapse type {type(self.synapse_type).__name__} is not "
                                           f"available yet; StaticSynapse and STDPMechanism")
        self.connections = []
        self.native = native_rule(connector, self.synapse_type, presynaptic_population, postsynaptic_population)
        if self.native is None:
            connector.connect(self)            # PyNN's connector draws the connections
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

    def __len__(self):
        return len(self.connections)

    def set(self, **attributes):
        simulator.state.check_not_built("setting connection attributes")
        n = len(self.connections)
        for name, value in attributes.items():
            if hasattr(value, "next"):                                 # a RandomDistribution
                values = np.asarray(value.next(n), dtype=float)
            else:
                values = np.broadcast_to(np.asarray(value, dtype=float), (n,))
            for c, v in zip(self.connections, values):
                setattr(c, name, float(v))

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
