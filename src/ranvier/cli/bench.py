"""`ranvier bench BENCHMARK ...`: each benchmark module of ranvier.bench registers its own
subcommands (add_parser) and runs them (command)."""
from __future__ import annotations

import sys

from ..bench import areas, exchange, imbalance, interconnect, mpi, scaling, structure_aware
from ..bench.runner import WorkerFailed
from .arguments import UsageError

# in the order of `ranvier bench --help`
MODULES = (exchange, mpi, scaling, areas, structure_aware, imbalance, interconnect)
BENCHMARKS = {"exchange": exchange, "mpi": mpi, "strong-scaling": scaling, "weak-scaling": areas,
              "heterogeneity": areas, "cycle-times": areas, "structure-aware": structure_aware,
              "imbalance": imbalance, "interconnect": interconnect}


def add_parser(commands, exchanges) -> None:
    bench = commands.add_parser("bench", allow_abbrev=False,
                                help="benchmarks: spike exchange, scaling, structure-aware simulation",
                                description="Benchmarks of the spike exchange, of strong and weak scaling, and of "
                                            "structure-aware simulation of multi-area models. Each configuration "
                                            "runs as its own process "
                                            "(under mpiexec for several ranks), one at a time.")
    benches = bench.add_subparsers(dest="bench_command", metavar="BENCHMARK")
    for module in MODULES:
        module.add_parser(benches, exchanges)


def command(args) -> int:
    module = BENCHMARKS.get(args.bench_command)
    if module is None:
        raise UsageError("a benchmark is required: 'exchange', 'mpi', 'strong-scaling', 'weak-scaling', "
                         "'heterogeneity', 'cycle-times', 'structure-aware', 'imbalance' or 'interconnect' "
                         "(see 'ranvier bench --help')")
    try:
        module.command(args)
    except WorkerFailed as e:           # not bad input: the run itself failed
        print(f"ranvier: error: {e}", file=sys.stderr)
        return 1
    return 0
