"""pyNN.ranvier: Ranvier as a PyNN 0.13 backend.

    import pyNN.ranvier as sim          # or: import ranvier.pynn as sim
    sim.setup(timestep=0.1, threads=2)

The same script runs under mpiexec: every rank builds the network rank 0 described, and the
spikes are the same for any ranks x threads (docs/pynn.md says what is supported).
"""
from __future__ import annotations

from pyNN import errors, random, space                               # noqa: F401
from pyNN.common.control import DEFAULT_MAX_DELAY, DEFAULT_MIN_DELAY, DEFAULT_TIMESTEP
from pyNN.connectors import *                                        # noqa: F401,F403
from pyNN.network import Network                                     # noqa: F401
from pyNN.parameters import ArrayParameter, ParameterSpace, Sequence  # noqa: F401  (as pyNN.nest exports them)
from pyNN.random import GSLRNG, NumpyRNG, RandomDistribution         # noqa: F401
from pyNN.recording import *                                         # noqa: F401,F403
from pyNN.space import Space                                         # noqa: F401
from pyNN import common
from pyNN.recording import get_io

from . import nestml, simulator                                      # noqa: F401  (sim.nestml, as pyNN.nest's)
from .composed import (AdExp, AlphaPSR, BetaPSR, CondAlphaPostSynapticResponse,  # noqa: F401
                       CondBetaPostSynapticResponse, CondExpPostSynapticResponse, CurrExpPostSynapticResponse,
                       ExpPSR, LIF, PointNeuron)
from .native import native_cell_type                                 # noqa: F401
from .native_rng import NativeRNG                                    # noqa: F401
from .populations import Assembly, Population, PopulationView       # noqa: F401
from .projections import Projection                                  # noqa: F401
from .standardmodels import *                                        # noqa: F401,F403
from .standardmodels import StaticSynapse, list_standard_models    # noqa: F401


def setup(timestep=DEFAULT_TIMESTEP, min_delay=DEFAULT_MIN_DELAY, **extra_params):
    """threads (default 1) and rng_seed (the simulation's seed: Poisson sources, noise) besides
    PyNN's arguments."""
    max_delay = extra_params.get("max_delay", DEFAULT_MAX_DELAY)
    common.setup(timestep, min_delay, **extra_params)
    state = simulator.state
    state.clear()
    state.dt = float(timestep)
    state.min_delay_auto = min_delay == "auto"
    state.min_delay = timestep if state.min_delay_auto else float(min_delay)
    state.max_delay = max_delay
    state.threads = int(extra_params.get("threads", 1))
    state.seed = int(extra_params.get("rng_seed", 1))
    return state.mpi_rank


def end(compatible_output=True):
    """Writes the data that record(..., to_file=...) asked for."""
    for population, variables, filename in simulator.state.write_on_end:
        population.write_data(get_io(filename), variables)
    simulator.state.write_on_end = []


run, run_until = common.build_run(simulator)
run_for = run
reset = common.build_reset(simulator)
initialize = common.initialize
get_current_time, get_time_step, get_min_delay, get_max_delay, num_processes, rank = \
    common.build_state_queries(simulator)

create = common.build_create(Population)
connect = common.build_connect(Projection, FixedProbabilityConnector, StaticSynapse)   # noqa: F405
record = common.build_record(simulator)
set = common.procedural_api.set          # noqa: A001  (PyNN's procedural set(), as pyNN.nest exports it)


def record_v(source, filename):
    return record(["v"], source, filename)


def record_gsyn(source, filename):
    return record(["gsyn_exc", "gsyn_inh"], source, filename)
