"""The Python side of the communication layer: the only module that imports mpi4py.

A single-process run needs no MPI at all. Under `mpiexec` (detected from the launcher's
environment) or when a communicator is passed in, mpi4py provides it.
"""
from __future__ import annotations

import os

from .errors import ConfigError

_LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE")


def launched_with_mpi() -> bool:
    for var in _LAUNCHER_SIZE_VARS:
        try:
            if int(os.environ.get(var, "1")) > 1:
                return True
        except ValueError:
            pass
    return False


class SerialComm:
    """Stands in for a communicator of one rank."""
    rank = 0
    size = 1
    handle = None          # no MPI
    ranks_on_node = 1
    node_rank = 0          # rank within the node

    def gather(self, obj):
        return [obj]

    def bcast(self, obj):
        return obj

    def allreduce_max(self, x):
        return x

    def barrier(self):
        pass


class MPIComm:
    """Wraps an mpi4py communicator for the few collective calls Python makes."""

    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.handle = comm.py2f()          # Fortran handle: portable across MPI libraries
        from mpi4py import MPI
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.ranks_on_node = node.Get_size()
        self.node_rank = node.Get_rank()
        node.Free()

    def gather(self, obj):
        return self.comm.gather(obj, root=0)

    def bcast(self, obj):
        return self.comm.bcast(obj, root=0)

    def allreduce_max(self, x):
        from mpi4py import MPI
        return self.comm.allreduce(x, op=MPI.MAX)

    def barrier(self):
        self.comm.Barrier()


def make_comm(comm=None):
    """The communicator to use: the one given, MPI.COMM_WORLD under mpiexec, else serial."""
    if comm is None and not launched_with_mpi():
        return SerialComm()
    try:
        from mpi4py import MPI
    except ImportError:
        raise ConfigError("this run was started under mpiexec (or given a communicator) but mpi4py is "
                          "not installed; install it with: pip install mpich mpi4py, then reinstall ranvier") from None
    if comm is None:
        comm = MPI.COMM_WORLD
    return MPIComm(comm)


def mpi_library_version() -> str | None:
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI.Get_library_version().splitlines()[0].strip()


def abort_world(code: int = 1) -> None:
    """Ends every rank of the job after a failure on this one (under mpiexec); does nothing in a
    single process. Not collective: the other ranks may be waiting anywhere."""
    if launched_with_mpi():
        from mpi4py import MPI
        MPI.COMM_WORLD.Abort(code)
