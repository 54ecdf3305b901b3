"""Population, PopulationView and Assembly of pyNN.ranvier: PyNN's common classes holding their
native (Ranvier) parameters and initial values as arrays until the network is built."""
from __future__ import annotations

import numpy as np

from pyNN import common, errors
from pyNN.parameters import ParameterSpace, simplify
from pyNN.standardmodels import StandardCellType

from ranvier.core.neurons import SpikeTrain

from . import simulator
from .build import spike_trains
from .recording import Recorder
from .standardmodels import list_standard_models


class Assembly(common.Assembly):
    _simulator = simulator


class PopulationView(common.PopulationView):
    _assembly_class = Assembly
    _simulator = simulator

    def _get_parameters(self, *names):
        local = self.parent._mask_local[self.mask] if isinstance(self.mask, np.ndarray) and self.mask.dtype == bool \
            else self.parent._mask_local[np.arange(self.parent.size)[self.mask]]
        return _parameters(self, names, lambda name: self.parent._parameters[name][self.mask][local]
                           if isinstance(self.parent._parameters[name], np.ndarray) else
                           self.parent._parameters[name], int(np.count_nonzero(local)))

    def _set_parameters(self, parameter_space):
        for name, value in parameter_space.items():
            self.parent._ensure_array(name)
            try:
                self.parent._parameters[name][self.mask] = value.evaluate(simplify=True)
            except ValueError:
                raise errors.InvalidParameterValueError(f"{name} should not be of type {type(value)}")
        simulator.state.update_population(self.grandparent)

    def _set_initial_value_array(self, variable, initial_values):
        simulator.state.check_not_built("initializing")
        values = initial_values.evaluate(simplify=True) if hasattr(initial_values, "evaluate") else initial_values
        current = self.parent._initial.setdefault(variable, np.full(self.parent.size, np.nan))
        current[self.mask] = values

    def _get_view(self, selector, label=None):
        return PopulationView(self, selector, label)


class Population(common.Population):
    __doc__ = common.Population.__doc__
    _simulator = simulator
    _recorder_class = Recorder
    _assembly_class = Assembly

    def _create_cells(self):
        state = simulator.state
        state.check_not_built("creating a population")
        if not isinstance(self.celltype, StandardCellType) or not hasattr(self.celltype, "ranvier_model"):
            raise errors.NoModelAvailableError(f"pyNN.ranvier: cell type {type(self.celltype).__name__} is not available; "
                                               f"available: {list_standard_models()}")
        first = state.id_counter
        self.all_cells = np.array([simulator.ID(i) for i in range(first, first + self.size)], dtype=simulator.ID)
        # Rank 0 holds the description that is built (every rank builds it); to PyNN's gathers the
        # cells are rank 0's, so nothing is counted twice.
        self._mask_local = np.full(self.size, state.mpi_rank == 0)
        parameter_space = self.celltype.native_parameters
        parameter_space.shape = (self.size,)
        parameter_space.evaluate(simplify=False)
        self._parameters = parameter_space.as_dict()
        if self.celltype.ranvier_model == SpikeTrain.name:
            for k, train in enumerate(spike_trains(self._parameters["spike_times_ms"], self.size)):
                if np.any(np.diff(train) < 0):
                    raise errors.InvalidParameterValueError(f"SpikeSourceArray: the spike times of cell {k} are not "
                                                            f"in increasing order")
        self._initial = {}
        for cell in self.all_cells:
            cell.parent = self
        state.id_counter += self.size
        state.populations.append(self)

    def _ensure_array(self, name):
        value = self._parameters[name]
        if not isinstance(value, np.ndarray) or value.dtype == object and value.shape != (self.size,):
            self._parameters[name] = np.array([value] * self.size if not isinstance(value, np.ndarray) else value)

    def _set_initial_value_array(self, variable, initial_values):
        simulator.state.check_not_built("initializing")
        values = initial_values.evaluate(simplify=True) if hasattr(initial_values, "evaluate") else initial_values
        self._initial[variable] = np.broadcast_to(np.asarray(values, dtype=float), (self.size,)).copy()

    def _get_view(self, selector, label=None):
        return PopulationView(self, selector, label)

    def _get_parameters(self, *names):
        return _parameters(self, names, self._local_value, self.local_size)

    def _local_value(self, name):
        value = self._parameters[name]
        return value[self._mask_local] if isinstance(value, np.ndarray) else value

    def _get_native_parameters(self, *names):
        return ParameterSpace({name: simplify(self._local_value(name)) for name in names}, shape=(self.local_size,))

    def _set_parameters(self, parameter_space):
        parameter_space.evaluate(simplify=False)
        for name, value in parameter_space.items():
            self._parameters[name] = value
        simulator.state.update_population(self)


def _parameters(obj, names, native_value, size):
    celltype = obj.celltype
    receptor_names = [n for n in names if "." in n]      # a PointNeuron's "<receptor>.<parameter>"
    names = [n for n in names if "." not in n]
    if any(name in celltype.computed_parameters() for name in names):
        native_names = celltype.get_native_names()
    else:
        native_names = celltype.get_native_names(*names)
    native = ParameterSpace({name: simplify(native_value(name)) for name in native_names if "." not in name},
                            shape=(size,))
    standard = celltype.reverse_translate(native)
    if not receptor_names:
        return standard
    values = dict(standard.items())
    values.update({name: celltype.receptor_parameter(name, native_value) for name in receptor_names})
    return ParameterSpace(values, shape=(size,))
