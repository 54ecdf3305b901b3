"""Projection of pyNN.ranvier: PyNN's connectors draw the connections (their default RNG is
seeded, the same on every rank; rank 0's list is the one built), Ranvier holds them as explicit
synapses. Weights in nA become pA; 'inhibitory' connections get negative weights, as NEST's."""
from __future__ import annotations

import numpy as np

from pyNN import common, errors
from pyNN.core import ezip
from pyNN.space import Space

from . import simulator
from .standardmodels import StaticSynapse


class Connection(common.Connection):
    """One connection: indices within the pre- and post-synaptic populations and its attributes."""

    def __init__(self, pre, post, **attributes):
        self.presynaptic_index = pre
        self.postsynaptic_index = post
        for name, value in attributes.items():
            setattr(self, name, value)

    def as_tuple(self, *attribute_names):
        return tuple(getattr(self, name) for name in attribute_names)


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
        connector.connect(self)
        simulator.state.projections.append(self)

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
