"""`ranvier bench`: benchmarks of the spike exchange, of scaling and of structure-aware simulation,
one module per benchmark, each registering its own subcommand (add_parser, command):

    exchange.py   ranvier bench exchange        exchange strategies against rank counts
    mpi.py        ranvier bench mpi             MPI primitives: latency and bandwidth fits
    scaling.py    ranvier bench strong-scaling  (and weak-scaling of models without areas):
                                                `ranvier run` over ranks x threads
    areas.py      ranvier bench weak-scaling | heterogeneity | cycle-times of multi-area
                                                models: conventional against structure-aware
    structure_aware.py  ranvier bench structure-aware: one multi-area network, placements x
                                                schemes, the load per area and per rank
    interconnect.py  ranvier bench interconnect: one workload over shared memory, TCP between
                                                emulated hosts and a rate-limited link (netns.py)
    netns.py      emulated hosts: network, UTS, IPC and mount namespaces joined by a veth pair
    common.py     workloads, output folders, name checks, tables, matplotlib
    runner.py     launching jobs under mpiexec (CPU mask, OpenMP settings), WorkerFailed
    worker.py     the worker process: python -m ranvier.bench worker SPEC.json

The modules depend on each other in one direction only: structure_aware -> areas -> scaling -> common, runner.
"""
from .runner import WorkerFailed, launch_env, launch_prefix, mpiexec_path, restore_cpus

__all__ = ["WorkerFailed", "launch_env", "launch_prefix", "mpiexec_path", "restore_cpus"]
