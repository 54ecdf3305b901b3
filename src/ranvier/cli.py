"""The `ranvier` command line.

    ranvier run [CONFIG.toml] [--neurons N] [--threads K] [--out DIR] ...
    mpiexec -n 4 ranvier run examples/dpsnn.toml --exchange alltoallv
    ranvier info
    ranvier bench exchange dpsnn --ranks 1,2 [--strategies allgather,alltoallv] [--overlap both]
    ranvier bench mpi --ranks 2 [--primitives allgather,alltoallv] [--sizes 1,64,4096]

Bad input exits with status 2 and one line `ranvier: error: ...` on stderr, before
anything is built or written. Under mpiexec only rank 0 prints and writes. A failure or an
interrupt is one line too (status 1 or 130), and under mpiexec it stops every rank: see main().
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

from . import config as cfgmod
from . import environment, report, theory
from .energy import KINDS as ENERGY_KINDS
from .errors import ConfigError

EXIT_BAD_INPUT = 2


def _launcher_rank() -> int:
    """This process's rank as the MPI launcher announced it (0 outside mpiexec), known before MPI starts."""
    from .parallel import launcher_rank
    return launcher_rank()


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line (raised, so main() decides who prints)."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:         # name the subcommand whose help lists the valid flags
            words = [getattr(parsed, name, None) for name in ("command", "bench_command")]
            where = " ".join([self.prog, *(word for word in words if word)])
            raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see '{where} --help')")
        return parsed


# -- argument types: one-line messages that name the flag's rule ---------------------------
def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2^64), got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value >= 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected zero or a positive number, got {text!r}")
    return value


def _positive_int_list(text: str) -> list[int]:
    """'1,2,4' -> [1, 2, 4], each once, in the order given."""
    values = []
    for item in text.split(","):
        try:
            values.append(_positive_int(item.strip()))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"must be a comma-separated list of positive integers "
                                             f"such as 1,2,4, got {text!r}") from None
    return list(dict.fromkeys(values))


def _name_list(text: str) -> list[str]:
    names = [item.strip() for item in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of names, got {text!r}")
    return names


def _assignment(text: str):
    try:
        return cfgmod.parse_assignment(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def make_parser(exchanges, placements) -> Parser:
    parser = Parser(prog="ranvier", allow_abbrev=False,
                    description="Ranvier: fast, decomposition-invariant spiking network simulation.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser(
        "run", allow_abbrev=False, help="simulate a model (default: dpsnn, 20480 neurons, 10 s)",
        description="Simulate a model. Flags override the config file; with neither, the default "
                    "main job runs (dpsnn, 20480 neurons, 10 s simulated).")
    run.add_argument("config", nargs="?", metavar="CONFIG.toml", help="run configuration (see examples/)")
    run.add_argument("--model", help="model name (default: the config's, else dpsnn)")
    run.add_argument("--neurons", type=_positive_int, metavar="N", help="network size")
    run.add_argument("--duration-ms", type=_positive_float, metavar="T", help="simulated time (ms)")
    run.add_argument("--threads", type=_positive_int, metavar="K",
                     help="threads per rank (default: cores of the node / ranks on it)")
    run.add_argument("--exchange", choices=exchanges, help="spike-exchange strategy")
    run.add_argument("--placement", choices=placements, help="neuron-to-rank/thread placement")
    run.add_argument("--seed", type=_seed, metavar="S", help="network and noise seed")
    run.add_argument("--resolution-ms", type=_positive_float, metavar="H", help="time step (ms)")
    run.add_argument("--set", type=_assignment, action="append", default=[], metavar="KEY=VALUE",
                     help="any model parameter, value read as TOML (repeat for several)")
    run.add_argument("--no-barrier", action="store_true",
                     help="do not time a barrier before each exchange as 'synchronize'")
    run.add_argument("--global-interval", type=_positive_int, metavar="D",
                     help="two-tier: cycles between global exchanges (default: the largest the inter-area "
                          "delays allow)")
    run.add_argument("--tier-exchange", choices=[e for e in exchanges if e != "two-tier"],
                     help="two-tier: the strategy both tiers use (default: allgather)")
    energy = run.add_argument_group("energy (see docs/measuring.md)")
    energy.add_argument("--energy", choices=ENERGY_KINDS, default="auto",
                        help="power meter: auto (RAPL, else NVML), rapl, nvml, none (default: auto)")
    energy.add_argument("--baseline-s", type=_non_negative_float, default=0.0, metavar="S",
                        help="idle pause before the simulation, for the baseline power (the DPSNN study used 5)")
    energy.add_argument("--power-trace", metavar="CSV", help="a power trace (time, watts) recorded by an external meter "
                        "during the run; read at the end and aligned with the run's clock")
    energy.add_argument("--clock-offset-s", type=float, metavar="EPOCH",
                        help="the trace's time 0 in epoch seconds, when its times are relative")
    energy.add_argument("--power-model", metavar="SPEC", help="a labelled estimate instead of a measurement: "
                        "'static=W,per_core=W' (watts above the baseline)")
    run.add_argument("--mpi-fit", metavar="FILE", help="mpi_fit.json from 'ranvier bench mpi' on this machine and "
                     "rank count: the summary then shows the predicted exchange time next to the measured one")
    run.add_argument("--overlap", action="store_true",
                     help="exchange each interval's spikes while the next is computed (intervals of half the "
                          "minimum delay)")
    run.add_argument("--quiet", action="store_true", help="print nothing but errors")
    run.add_argument("--out", metavar="DIR", help="write config.toml, summary.json, spikes.h5, timers.h5 here")
    run.add_argument("--force", action="store_true", help="replace a non-empty --out folder")
    commands.add_parser("info", allow_abbrev=False, help="version, build features, MPI, cores")
    report.add_parser(commands)
    energy = commands.add_parser(
        "energy", allow_abbrev=False, help="energy of a finished run from an external power trace",
        description="Apply a power trace recorded by an external meter (CSV of time and watts) to a run "
                    "archive written by 'ranvier run --out DIR': the energy is integrated over the run's "
                    "simulation phase, above its baseline, and stored in DIR/summary.json.")
    energy.add_argument("run_dir", metavar="DIR", help="a run archive (ranvier run --out DIR)")
    energy.add_argument("--power-trace", required=True, metavar="CSV", help="time and watts, as from a wall meter")
    energy.add_argument("--clock-offset-s", type=float, metavar="EPOCH",
                        help="the trace's time 0 in epoch seconds, when its times are relative")
    add_bench_parser(commands, exchanges)
    return parser


def add_bench_parser(commands, exchanges) -> None:
    from .bench import DEFAULT_MPI_SIZES

    bench = commands.add_parser("bench", allow_abbrev=False,
                                help="benchmarks: spike exchange, scaling, structure-aware simulation",
                                description="Benchmarks of the spike exchange, of strong and weak scaling, and of "
                                            "structure-aware simulation of multi-area models. Each configuration "
                                            "runs as its own process "
                                            "(under mpiexec for several ranks), one at a time.")
    benches = bench.add_subparsers(dest="bench_command", metavar="BENCHMARK")
    exchange = benches.add_parser(
        "exchange", allow_abbrev=False, help="exchange strategies against rank counts: table, CSV, plot",
        description="Run a workload with each exchange strategy (and overlap setting) on each rank count, "
                    "several times; print one table per rank count and write exchange_bench.csv (one row "
                    "per run) and exchange_bench.png.")
    exchange.add_argument("workload", metavar="WORKLOAD", help="a model name (dpsnn, ...) or a config .toml")
    exchange.add_argument("--ranks", type=_positive_int_list, required=True, metavar="R1,R2,...",
                          help="rank counts to run, for example 1,2,4")
    exchange.add_argument("--strategies", type=_name_list, metavar="S1,S2,...",
                          help=f"exchange strategies (default: all: {','.join(exchanges)})")
    exchange.add_argument("--overlap", choices=("off", "on", "both"), default="off",
                          help="exchange overlapped with computation, or not, or both (default: off)")
    exchange.add_argument("--duration-ms", type=_positive_float, metavar="T",
                          help="simulated time per run (default: the config's, or 1000 ms for a model name)")
    exchange.add_argument("--threads", type=_positive_int, metavar="K",
                          help="threads per rank (default: the config's, else 1)")
    exchange.add_argument("--repeats", type=_positive_int, default=3, metavar="N",
                          help="runs of each configuration; tables give min and median (default: 3)")
    exchange.add_argument("--set", type=_assignment, action="append", default=[], metavar="KEY=VALUE",
                          help="any model parameter, value read as TOML (repeat for several)")
    exchange.add_argument("--neurons", type=_positive_int, metavar="N", help="network size")
    exchange.add_argument("--mpi-fit", metavar="FILE", help="mpi_fit.json from 'ranvier bench mpi' on the same "
                          "rank count: adds the predicted exchange time per cycle (theory.md, section 3)")
    exchange.add_argument("--out", metavar="DIR", help="folder for the CSV and the plot "
                                                       "(default: bench-results/exchange-<timestamp>)")
    mpi = benches.add_parser(
        "mpi", allow_abbrev=False, help="MPI primitives against message size: latency and bandwidth fits",
        description="Time the MPI primitives the exchange strategies use, through the engine's own "
                    "communicator layer, against message size; fit t = latency + bytes / bandwidth per "
                    "primitive; write mpi_bench.csv, mpi_fit.json and mpi_bench.png.")
    mpi.add_argument("--ranks", type=_positive_int, default=2, metavar="R", help="ranks (default: 2)")
    mpi.add_argument("--primitives", type=_name_list, metavar="P1,P2,...", help="primitives (default: all)")
    mpi.add_argument("--sizes", type=_positive_int_list, default=list(DEFAULT_MPI_SIZES), metavar="W1,W2,...",
                     help=f"message sizes in 64-bit words per rank or rank pair "
                          f"(default: {','.join(map(str, DEFAULT_MPI_SIZES))})")
    mpi.add_argument("--repeats", type=_positive_int, default=200, metavar="N",
                     help="timed calls per primitive and size, after a warm-up (default: 200)")
    mpi.add_argument("--out", metavar="DIR", help="folder for the results (default: bench-results/mpi-<timestamp>)")

    # Scaling over ranks x threads, each run a real `ranvier run` (ranvier.bench_scaling).
    def scaling_flags(parser):
        """The flags strong-scaling shares with the generic weak-scaling (models without n_areas)."""
        parser.add_argument("--exchange", choices=exchanges, help="spike-exchange strategy of every run "
                            "(default: the config's, else allgather)")
        parser.add_argument("--energy", choices=ENERGY_KINDS, help="passed to each `ranvier run`: its power meter "
                            "(default: not passed, the run's own default)")
        parser.add_argument("--baseline-s", type=_non_negative_float, metavar="S", help="passed to each `ranvier run`: "
                            "idle seconds before the simulation, for the baseline power")

    strong = benches.add_parser(
        "strong-scaling", allow_abbrev=False, help="one network over ranks x threads: profile, speedup, energy",
        description="Run the same network on every configuration of --ranks x --threads, --repeats times each, "
                    "one run at a time, each a real `ranvier run` (mpiexec -n R for several ranks) that leaves its "
                    "run archive in DIR/runs/r{R}-t{T}-{k}. Prints the profile (computation, communication, "
                    "barrier as % of the wall time), the real-time factor with speedup and parallel efficiency "
                    "against the fewest cores, and the energy where the runs measured it; writes "
                    "strong_scaling.csv (one row per run), strong_scaling.json and strong_scaling.png.")
    strong.add_argument("workload", metavar="WORKLOAD", help="a model name (dpsnn, ...) or a config .toml")
    strong.add_argument("--ranks", type=_positive_int_list, required=True, metavar="R1,R2,...",
                        help="rank counts, for example 1,2,4")
    strong.add_argument("--threads", type=_positive_int_list, metavar="K1,K2,...",
                        help="threads per rank, for example 1,2 (default: the config's, else 1)")
    strong.add_argument("--duration-ms", type=_positive_float, metavar="T",
                        help="simulated time per run (default: the config's, or 1000 ms for a model name)")
    strong.add_argument("--repeats", type=_positive_int, default=3, metavar="N",
                        help="runs of each configuration; tables give min and median (default: 3)")
    strong.add_argument("--set", type=_assignment, action="append", default=[], metavar="KEY=VALUE",
                        help="any model parameter, value read as TOML (repeat for several)")
    scaling_flags(strong)
    strong.add_argument("--out", metavar="DIR",
                        help="folder for the results and the run archives (default: "
                             "bench-results/strong-scaling-<timestamp>)")

    # The multi-area benchmarks (ranvier.bench_areas): conventional against structure-aware.
    strategies = [e for e in exchanges if e != "two-tier"]
    schemes = ("Conventional: round-robin placement, one exchange among all ranks every cycle. Structure-aware: "
               "each area on its own rank (by-area), exchange two-tier (inside the area every cycle, among all "
               "ranks every D cycles).")

    def area_bench(name, summary, description, out_name, ranks_flag, repeats=True, global_interval=True,
                   workload_help="a multi-area model name (mam-benchmark) or a config .toml", threads_flag=None):
        parser = benches.add_parser(name, allow_abbrev=False, help=summary, description=f"{description} {schemes}")
        parser.add_argument("workload", metavar="WORKLOAD", help=workload_help)
        ranks_flag(parser)
        if threads_flag is not None:
            threads_flag(parser)
        else:
            parser.add_argument("--threads", type=_positive_int, metavar="K",
                                help="threads per rank (default: the config's, else 1)")
        parser.add_argument("--duration-ms", type=_positive_float, metavar="T",
                            help="simulated time per run (default: the config's, or 2000 ms for a model name)")
        if repeats:
            parser.add_argument("--repeats", type=_positive_int, default=3, metavar="N",
                                help="runs of each configuration; tables give medians (default: 3)")
        parser.add_argument("--set", type=_assignment, action="append", default=[], metavar="KEY=VALUE",
                            help="any model parameter but n_areas, value read as TOML (repeat for several)")
        parser.add_argument("--conventional-exchange", choices=strategies, default="allgather",
                            help="exchange strategy of the conventional scheme (default: allgather)")
        parser.add_argument("--tier-exchange", choices=strategies,
                            help="structure-aware: the strategy of both tiers (default: the config's, else allgather)")
        if global_interval:
            parser.add_argument("--global-interval", type=_positive_int, metavar="D",
                                help="structure-aware: cycles between global exchanges (default: the largest the "
                                     "inter-area delays allow, the model's delay_ratio)")
        parser.add_argument("--out", metavar="DIR",
                            help=f"folder for the results (default: bench-results/{out_name}-<timestamp>)")
        return parser

    weak = area_bench(
        "weak-scaling", "the network grows with the ranks: one area per rank, or size per core",
        "Weak scaling. A model without areas (dpsnn, artificial-cells) grows with the cores: its size (neurons, "
        "cells) = --per-core x ranks x threads on every configuration of --ranks x --threads, each run --repeats "
        "times as a real `ranvier run` that leaves its run archive in DIR/runs/r{R}-t{T}-{k}; prints the profile, "
        "the real-time factor and the weak-scaling efficiency (RTF at the fewest cores / RTF). A multi-area model "
        "(with n_areas) runs as many areas as ranks, area size fixed, both schemes at each rank count; prints "
        "the phases per cycle, the cycle-time statistics and the ratios of the schemes next to theory. Both "
        "write weak_scaling.csv (one row per run), weak_scaling.json and weak_scaling.png.", "weak-scaling",
        lambda p: p.add_argument("--ranks", type=_positive_int_list, required=True, metavar="R1,R2,...",
                                 help="rank counts (multi-area: = areas), for example 1,2,4"),
        workload_help="a model name (dpsnn, artificial-cells, mam-benchmark) or a config .toml",
        threads_flag=lambda p: p.add_argument("--threads", type=_positive_int_list, metavar="K1,K2,...",
                                              help="threads per rank; several (1,2) only without areas (default: "
                                                   "the config's, else 1)"))
    weak.add_argument("--per-core", type=_positive_int, metavar="N",
                      help="without areas: the size (neurons, cells) per core (default: half the workload's size)")
    scaling_flags(weak)
    # multi-area only: None tells bench_areas that it was not given (then allgather)
    weak.set_defaults(conventional_exchange=None)
    heterogeneity = area_bench(
        "heterogeneity", "synchronisation against a heterogeneity knob, both schemes",
        "Vary one heterogeneity knob of a multi-area model (as many areas as ranks) and run both schemes at "
        "each value; writes heterogeneity.csv, heterogeneity.json and heterogeneity.png.", "heterogeneity",
        lambda p: p.add_argument("--ranks", type=_positive_int, default=2, metavar="R",
                                 help="ranks (= areas), at least 2 (default: 2)"),
        global_interval=False)
    heterogeneity.add_argument("--knob", choices=("area_size_sd", "rate_sd", "delay_ratio"), required=True,
                               help="the parameter varied; delay_ratio is D, also the two-tier global interval")
    heterogeneity.add_argument("--values", required=True, metavar="V1,V2,...",
                               help="its values: integers >= 1 for delay_ratio (1,2,5,10), numbers >= 0 for the "
                                    "standard deviations")
    cycles = area_bench(
        "cycle-times", "per-rank cycle times of both schemes: distributions and serial correlation",
        "Run each scheme once and keep every rank's time of every cycle (deliver + update + collocate); print "
        "their statistics against the synchronisation model; write cycle_times.csv (one row per scheme, rank "
        "and cycle), cycle_timers.npz (all phases), cycle_statistics.json and cycle_times.png.", "cycle-times",
        lambda p: p.add_argument("--ranks", type=_positive_int, default=2, metavar="R",
                                 help="ranks (= areas) (default: 2)"),
        repeats=False)
    cycles.add_argument("--max-lag", type=_positive_int, metavar="L",
                        help="autocorrelation lags computed and plotted (default: 100, at least D - 1)")


# -- ranvier run ---------------------------------------------------------------------------
def resolve_config(args) -> cfgmod.RunConfig:
    base = cfgmod.load(args.config) if args.config else cfgmod.RunConfig()
    parameters = dict(args.set)
    if args.neurons is not None:
        parameters["neurons"] = args.neurons
    simulation = {"duration_ms": args.duration_ms, "threads": args.threads, "exchange": args.exchange,
                  "placement": args.placement, "seed": args.seed, "resolution_ms": args.resolution_ms,
                  "barrier": False if args.no_barrier else None, "overlap": True if args.overlap else None,
                  "global_interval": args.global_interval, "tier_exchange": args.tier_exchange}
    return cfgmod.override(base, model=args.model, parameters=parameters, simulation=simulation)


def resolved_dict(cfg: cfgmod.RunConfig, network, sim) -> dict:
    """Everything needed to rerun: model, every model parameter, every simulation setting."""
    from . import models

    parameters = dict(network.parameters) or {**models.defaults(cfg.model), **cfg.parameters}
    simulation = {**cfg.simulation, "duration_ms": float(cfg.simulation["duration_ms"]),
                  "threads": sim.threads, "exchange": sim.exchange, "placement": sim.placement,
                  "seed": sim.seed, "resolution_ms": sim.resolution_ms, "barrier": sim.barrier,
                  "overlap": sim.overlap, "tier_exchange": sim.tier_exchange}
    if sim.global_interval:
        simulation["global_interval"] = sim.global_interval
    else:
        simulation.pop("global_interval", None)      # TOML has no None: omitted means automatic
    return {"model": cfg.model, "parameters": parameters, "simulation": simulation}


def command_run(args, rank: int) -> int:
    from . import models
    from .output import check_target
    from .parallel import make_comm
    from .simulation import Simulation

    cfg = resolve_config(args)
    fit = theory.load_mpi_fit(args.mpi_fit) if args.mpi_fit else None
    if args.out is not None:
        check_target(args.out, args.force)      # on every rank: the same answer, before anything is made
    network = models.build(cfg.model, **cfg.parameters)
    cfgmod.check_simulation(cfg, network)
    meter = _choose_meter(args)        # on every rank, so bad options stop all ranks before the build
    comm = make_comm()
    out = _claim_output(args, comm) if args.out is not None else None
    try:
        # Spikes and timers stream into the claimed folder; without one only the counts are kept.
        sim = Simulation(network, comm=comm, **cfg.simulation_kwargs(),   # its last checks (memory) precede the build
                         record_spikes=True if args.out is not None else "counts",
                         stream_to=out.staging if out is not None else None)
        if args.out is not None:
            _check_output_space(out, sim, cfg.simulation["duration_ms"])
        return _simulate(args, cfg, network, sim, meter, fit, out, rank)
    except BaseException:
        if out is not None:
            out.abandon()              # nothing half-written stays behind; an earlier folder is untouched
        raise


def _claim_output(args, comm):
    """Rank 0 claims the destination (lock and staging folder); every rank learns whether it could."""
    from .output import OutputFolder
    out, refusal = None, None
    if comm.rank == 0:
        try:
            out = OutputFolder(args.out, args.force)
        except ConfigError as e:
            refusal = str(e)
    refusal = comm.bcast(refusal)
    if refusal is not None:
        raise ConfigError(refusal)
    return out


def _check_output_space(out, sim, duration_ms) -> None:
    """The timers alone need 40 bytes per cycle and rank: refuse a run whose output cannot fit."""
    from .recording import TIMER_BYTES_PER_CYCLE
    refusal = None
    if sim.rank == 0 and out is not None:
        cycles = int(round(float(duration_ms) / sim.cycle_ms))
        try:
            out.check_space(cycles * sim.size * TIMER_BYTES_PER_CYCLE, f"the per-cycle timers of {cycles:,} cycles")
        except ConfigError as e:
            refusal = str(e)
    refusal = sim.comm.bcast(refusal)
    if refusal is not None:
        raise ConfigError(refusal)


def _simulate(args, cfg, network, sim, meter, fit, out, rank) -> int:
    from .output import OutputError
    from .progress import ProgressBar
    talk = rank == 0 and not args.quiet
    bar = ProgressBar() if talk else None
    if talk:
        print(f"ranvier: built {cfg.model} ({network.size:,} neurons) in {sim.build_seconds:.2f} s on "
              f"{sim.size} rank(s) x {sim.threads} thread(s); simulating {cfg.simulation['duration_ms'] / 1000:g} s"
              + (f" after a {args.baseline_s:g} s idle baseline" if args.baseline_s else ""),
              file=sys.stderr, flush=True)
    # Live meters (RAPL, NVML) see one node: the first rank of each node measures it, in a
    # background thread, around an idle baseline and the simulation. A trace or a model
    # covers the whole run: rank 0 alone. Every rank idles through the baseline.
    session = _energy_session(meter, sim, args) if _measures(meter, sim) else None
    if session:
        session.start()
        session.mark("baseline_start")
    if args.baseline_s:
        time.sleep(args.baseline_s)
    sim.comm.barrier()
    if session:
        session.mark("baseline_end")
        session.mark("simulation_start")
    try:
        result = sim.run(cfg.simulation["duration_ms"], progress=bar)
    finally:
        if session:
            session.mark("simulation_end")
            session.stop()
        if bar:
            bar.close()
    events = {"recurrent": result.counters["synaptic_events_recurrent"],
              "external": result.counters["synaptic_events_external"]} if sim.rank == 0 else None
    events = sim.comm.bcast(events)
    reports = sim.comm.gather(session.report(events=events) if session else None)
    if sim.rank != 0:
        return 0
    summary = result.summary(fit)
    from . import energy
    summary["energy"] = energy.combine_node_reports([r for r in reports if r is not None], events)
    if not args.quiet:                 # the summary first: it survives whatever happens to the files
        print(format_summary(summary), flush=True)
    if out is None:
        return 0
    sim.close()                        # spikes.h5 and timers.h5 from the streamed chunks
    rec = sim.recording
    try:
        if rec.error is not None:
            from .output import write_failure
            raise OutputError(write_failure(out.shown, rec.error, rec.bytes_needed()))
        env = environment.collect(sim.size, sim.comm.ranks_on_node, sim.threads)
        written = out.publish(resolved_dict(cfg, network, sim), summary, env)
        rec.moved_to(out.path)
    except OutputError as e:
        out.abandon()
        print(f"ranvier: error: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"results written to {written}/")
    return 0


def _choose_meter(args):
    """The power meter for this run, or the reason there is none (energy.Unavailable)."""
    from . import energy
    try:
        return energy.select_meter(args.energy, power_trace=args.power_trace, clock_offset_s=args.clock_offset_s,
                                   power_model=args.power_model, cores=args.threads or os.cpu_count() or 1)
    except energy.Unavailable as e:
        return e


def _measures(meter, sim) -> bool:
    """Whether this rank runs an energy session: node leaders for live meters, rank 0 else."""
    from . import energy
    live = getattr(meter, "live", False) and not isinstance(meter, energy.Unavailable)
    return sim.comm.node_rank == 0 if live else sim.rank == 0


def _energy_session(meter, sim, args):
    from . import energy
    if isinstance(meter, energy.Unavailable):
        return energy.EnergySession(None, unavailable_reason=str(meter))
    if isinstance(meter, energy.PowerModel):     # the cores this node runs on are known only now
        meter = energy.PowerModel.from_spec(args.power_model, cores=sim.comm.ranks_on_node * sim.threads)
    return energy.EnergySession(meter)


def _si(x: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.3g}"


def format_summary(s: dict) -> str:
    """The end-of-run table, computed from Result.summary() alone."""
    sim_s = s["simulate_seconds"]
    events = s["synaptic_events"]
    rows = [
        ("model", s["model"]),
        ("neurons", f"{s['neurons']:,}"),
        ("synapses", f"{s['synapses']:,}"),
        ("ranks x threads", f"{s['ranks']} x {s['threads']}"),
        ("exchange", f"{s['exchange']}, {'overlapped, ' if s.get('overlap') else ''}every "
                     f"{s['communication_interval_ms']:g} ms"),
        ("placement", s["placement"] + (f" ({len(s['areas'])} areas)" if s.get("areas") else "")),
        ("simulated", f"{s['duration_ms'] / 1000:g} s at {s['resolution_ms']:g} ms steps"),
        ("build", f"{s['build_seconds']:.2f} s"),
        ("simulate", f"{sim_s:.2f} s"),
        ("real-time factor", f"{s['real_time_factor']:.3f} (wall s per simulated s)"),
    ]
    lo, hi = s["rates_window_ms"]
    rates = "  ".join(f"{name} {hz:.2f}" for name, hz in s["rates_steady_hz"].items())
    rows.append((f"rates {lo / 1000:g}-{hi / 1000:g} s (Hz)", rates))
    by_type = s.get("rates_steady_by_type_hz") or {}
    if by_type:
        rows.append(("", "  ".join(f"{kind} {hz:.2f}" for kind, hz in by_type.items())))
    rows.append(("spikes", f"{s['spikes_total']:,}"))
    rows.append(("synaptic events", f"recurrent {events['recurrent']:,}  external {events['external']:,}"))
    if s.get("synaptic_events_per_second"):
        rows.append(("synaptic events / s", f"{_si(s['synaptic_events_per_second'])} events per wall second"))
    c = s["counters"]
    cycles = s["duration_ms"] / s["communication_interval_ms"]
    traffic = (f"{_si(c['bytes_sent'] / cycles)} bytes and {c['messages_sent'] / cycles:.1f} messages per interval "
               f"(all ranks)")
    if c.get("overflow_rounds") or c.get("exchange_resizes"):
        traffic += f"; {c['overflow_rounds']} overflow rounds, {c['exchange_resizes']} resizes"
    rows.append(("exchange traffic", traffic))
    if s.get("global_interval"):
        n = s["exchanges"]
        rows.append(("two-tier", f"{s['tier_exchange']} in each area group every {s['communication_interval_ms']:g} ms "
                                 f"({n['local']:,} exchanges), among all ranks every "
                                 f"{s['global_interval'] * s['communication_interval_ms']:g} ms ({n['global']:,}); "
                                 f"global traffic {_si(c['global_bytes_sent'])} bytes"))
    rows.append(("phases", "seconds (% of simulate), mean over ranks"))
    for phase, seconds in s["phase_seconds"].items():
        share = f" ({100 * seconds / sim_s:.1f} %)" if sim_s > 0 else ""
        rows.append((f"  {phase}", f"{seconds:.3f} s{share}"))
    rows.extend(_theory_rows(s))
    if s.get("energy"):
        from . import energy
        rows.extend(energy.format_lines(s["energy"]))
    rss = s["peak_rss_bytes"]
    rows.append(("peak RSS per rank", f"{max(rss) / 2**20:.0f} MiB (max over {len(rss)} rank(s))"))
    if s["synapses"]:
        rows.append(("bytes per synapse", f"{sum(rss) / s['synapses']:.1f} (peak RSS of all ranks / synapses); "
                                          f"synapse store {s['synapse_store_bytes'] / s['synapses']:.1f}"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _theory_rows(s: dict) -> list[tuple[str, str]]:
    """Cycle-time statistics and the models of theory.md, measured next to predicted."""
    rows = []
    stats, th = s.get("cycle_statistics"), s.get("theory") or {}
    if stats:
        p, D = stats["pooled"], stats["D"]
        acf = stats["autocorrelation"]
        lumps = f"; lumped over D={D}: CV {p['lumped_cv']:.3f}" if D > 1 else ""
        rows.append(("cycle time", f"mean {p['mean_s'] * 1e6:.1f} us, CV {p['cv']:.3f}{lumps}"
                                   + (f"; autocorrelation lag 1 {acf[0]:+.2f}" if acf else "")))
        if D > 1:
            rows.append(("  CV ratio", f"measured {p['cv_ratio']:.3f}, predicted 1/sqrt(D) "
                                       f"{p['cv_ratio_predicted']:.3f}, with measured correlation "
                                       f"{p['cv_ratio_predicted_correlated']:.3f}"))
        if stats["ranks"] > 1:
            m, pr = stats["measured"], stats["predicted"]
            rows.append(("  wait per cycle", f"slowest rank minus mean {m['cycle_wait_s'] * 1e6:.2f} us, "
                                             f"model k_P sigma {pr['sync_conv_s'] / stats['cycles'] * 1e6:.2f} us, "
                                             f"{p['wait_predicted_robust_s'] * 1e6:.2f} us with sigma from the "
                                             f"interquartile range"))
    ia = th.get("irregular_access")
    if ia and ia.get("delivery_ns_per_event") is not None:
        both = f" (conventional {ia['f_conv']:.4f}, structure-aware {ia['f_sa']:.4f})" if s.get("areas") else ""
        rows.append(("delivery", f"{ia['delivery_ns_per_event']:.2f} ns per synaptic event; irregular-access "
                                 f"fraction predicted {ia['predicted_fraction']:.4f}{both}"))
    comm = th.get("communication")
    if comm:
        predicted = comm.get("predicted_s_per_cycle")
        if predicted is not None:
            text = f"{predicted * 1e6:.2f} us"
        elif comm["fit_ranks"] != s["ranks"]:
            text = f"n/a (the fit was measured on {comm['fit_ranks']} ranks, this run has {s['ranks']})"
        else:
            text = "n/a (exchanges inside groups of several ranks, or a primitive missing from the fit)"
        line = f"measured {comm['measured_s_per_cycle'] * 1e6:.2f} us per cycle, predicted {text}"
        if comm.get("predicted_global_s_per_exchange") is not None:
            line += (f"; one global exchange of D cycles {comm['predicted_global_s_per_exchange'] * 1e6:.2f} us "
                     f"against {comm['predicted_D_separate_s_per_cycle'] * 1e6:.2f} us for each of D separate ones")
        rows.append(("communication", line))
    seg = th.get("delay_segments") or {}
    if seg.get("measured_per_event") is not None:
        predicted = seg.get("predicted_per_event")
        rows.append(("  delay segments", f"{seg['measured_per_event']:.4f} per event (each an irregular access)"
                                         + (f", predicted {predicted:.4f}" if predicted is not None else "")))
    return rows


# -- ranvier bench -------------------------------------------------------------------------
def command_bench(args) -> int:
    from . import bench

    try:
        if args.bench_command == "exchange":
            parameters = dict(args.set)
            if args.neurons is not None:
                parameters["neurons"] = args.neurons
            bench.exchange_bench(args.workload, args.ranks, strategies=args.strategies, overlap=args.overlap,
                                 duration_ms=args.duration_ms, threads=args.threads, repeats=args.repeats,
                                 parameters=parameters, out=args.out, mpi_fit=args.mpi_fit)
        elif args.bench_command == "mpi":
            bench.mpi_bench(args.ranks, primitives=args.primitives, sizes=args.sizes, repeats=args.repeats,
                            out=args.out)
        elif args.bench_command == "strong-scaling":
            from . import bench_scaling

            bench_scaling.strong_scaling_bench(args.workload, args.ranks, threads=args.threads,
                                               duration_ms=args.duration_ms, repeats=args.repeats,
                                               parameters=dict(args.set), exchange=args.exchange, energy=args.energy,
                                               baseline_s=args.baseline_s, out=args.out)
        elif args.bench_command in ("weak-scaling", "heterogeneity", "cycle-times"):
            from . import bench_areas

            common = dict(threads=args.threads, duration_ms=args.duration_ms, parameters=dict(args.set),
                          conventional_exchange=args.conventional_exchange, tier_exchange=args.tier_exchange,
                          out=args.out)
            if args.bench_command == "weak-scaling":
                # a model without n_areas goes to the generic weak scaling (ranvier.bench_scaling)
                bench_areas.weak_scaling_bench(args.workload, args.ranks, repeats=args.repeats,
                                               global_interval=args.global_interval, per_core=args.per_core,
                                               exchange=args.exchange, energy=args.energy,
                                               baseline_s=args.baseline_s, **common)
            elif args.bench_command == "heterogeneity":
                bench_areas.heterogeneity_bench(args.workload, args.knob, args.values, ranks=args.ranks,
                                                repeats=args.repeats, **common)
            else:
                bench_areas.cycle_times_bench(args.workload, ranks=args.ranks, global_interval=args.global_interval,
                                              max_lag=args.max_lag, **common)
        else:
            raise UsageError("a benchmark is required: 'exchange', 'mpi', 'strong-scaling', 'weak-scaling', "
                             "'heterogeneity' or 'cycle-times' (see 'ranvier bench --help')")
    except bench.WorkerFailed as e:           # not bad input: the run itself failed
        print(f"ranvier: error: {e}", file=sys.stderr)
        return 1
    return 0


# -- ranvier info --------------------------------------------------------------------------
def command_info() -> int:
    from . import __version__, _engine
    from .parallel import mpi_library_version
    from .simulation import EXCHANGES, PLACEMENTS

    info = _engine.build_info()
    yes = {True: "yes", False: "no"}
    tidy = lambda text: " ".join(str(text).split())      # MPI version strings pad with spaces
    print(f"ranvier {__version__}")
    print(f"engine              {info.get('version', '?')}, built with {info.get('compiler', '?')}")
    mpi = yes[bool(info.get("mpi"))] + (f" ({tidy(info['mpi_library'])})" if info.get("mpi_library") else "")
    print(f"MPI backend         {mpi}")
    print(f"OpenMP              {yes[bool(info.get('openmp'))]}, max threads {info.get('openmp_max_threads', '?')}")
    print(f"CUDA                {yes[bool(info.get('cuda'))]}")
    print(f"native CPU tuning   {yes[bool(info.get('native'))]}")
    if "simd" in info:
        print(f"SIMD                {info['simd']}")
    print(f"exchanges           {', '.join(EXCHANGES)}")
    print(f"placements          {', '.join(PLACEMENTS)}")
    try:
        import mpi4py
        print(f"mpi4py              {mpi4py.__version__}, {tidy(mpi_library_version())}")
    except ImportError:
        print("mpi4py              not installed (pip install mpich mpi4py for multi-rank runs)")
    print(f"python              {platform.python_version()} ({sys.executable})")
    print(f"cpu cores           {os.cpu_count()}")
    return 0


def command_energy(args) -> int:
    """Recomputes a run's energy from an external power trace and updates its summary.json."""
    import json
    from pathlib import Path

    from . import energy
    from .output import write_summary

    path = Path(args.run_dir) / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"'{args.run_dir}' is not a run archive with a readable summary.json "
                          f"(write one with ranvier run --out DIR): {e}") from None
    marks = (summary.get("energy") or {}).get("marks") or {}
    if "simulation_start" not in marks or "simulation_end" not in marks:
        raise ConfigError(f"{path} records no simulation start and end times; rerun with this version of ranvier")
    meter = energy.select_meter(power_trace=args.power_trace, clock_offset_s=args.clock_offset_s)
    meter.load()                      # a bad file: one line naming the file, the line and the fix
    summary["energy"] = energy.report_from_marks(meter, marks, summary["synaptic_events"])
    tmp = path.with_suffix(".json.tmp")
    write_summary(tmp, summary)
    os.replace(tmp, path)
    for key, value in energy.format_lines(summary["energy"]):
        print(f"{key:<22}{value}")
    print(f"updated {path}")
    return 0 if summary["energy"]["available"] else 1


# -- entry point ---------------------------------------------------------------------------
def _check_path_flags(args) -> None:
    """Paths checked on every rank before anything is built or written: an empty --out, and the
    files that are read later (--power-trace only after the run, --mpi-fit) but must be readable
    regular files now; a FIFO or a device would block or never end."""
    out = getattr(args, "out", None)
    if out is not None and not out.strip():
        raise UsageError(f"--out must name a folder, got {out!r} (leave the flag out to write no files)")
    if getattr(args, "power_trace", None) is not None:
        cfgmod.check_input_file(args.power_trace, "--power-trace",
                                "; record it with the meter's logger first, or fix the path")
    if getattr(args, "mpi_fit", None) is not None:
        cfgmod.check_input_file(args.mpi_fit, "--mpi-fit", "; write one with 'ranvier bench mpi'")


def _dispatch(argv, rank: int) -> int:
    from .simulation import EXCHANGES, PLACEMENTS
    args = make_parser(EXCHANGES, PLACEMENTS).parse_args(argv)
    if args.command is not None:
        _check_path_flags(args)
    if args.command == "run":
        return command_run(args, rank)
    if args.command == "info":
        return command_info()
    if args.command == "bench":
        return command_bench(args)
    if args.command == "energy":
        return command_energy(args)
    if args.command == "report":
        return report.command(args)
    raise UsageError("a command is required: 'run', 'bench', 'energy', 'report' or 'info' (see 'ranvier --help')")


class _ClosedPipeTolerant:
    """sys.stdout during main(): when the reader of a pipe goes away (`ranvier info | head -n 2`),
    later output goes to /dev/null instead of raising BrokenPipeError, so that the command
    finishes its work (a run still writes its --out folder) and ends quietly. Python ignores
    SIGPIPE, so a closed pipe shows as this error (see the signal module's note on SIGPIPE)."""

    def __init__(self, stream):
        self._stream = stream

    def _to_devnull(self) -> None:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()
            try:
                self._stream.flush()          # what was buffered now goes to /dev/null
            except OSError:
                pass

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _say(line: str) -> None:
    """One line on stderr, even with no memory left for the usual route."""
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:
        try:
            os.write(2, (line + "\n").encode("utf-8", "replace"))
        except OSError:
            pass


def _failed(exc: BaseException) -> int:
    """Ctrl-C or an unexpected exception: one line and the status (see main)."""
    from .parallel import describe_failure, exit_code, stop_every_rank, world_rank_size

    _, size = world_rank_size()
    if size > 1:                   # the other ranks must not wait for this one forever
        if _traceback_wanted():
            import traceback
            traceback.print_exception(exc)
        stop_every_rank(exc)       # ends the job (MPI_Abort); returns only without mpi4py
        return exit_code(exc)
    # What the failed call still holds (a MemoryError's partial allocations, in its frames) is
    # released with the traceback before anything is printed.
    exc.__traceback__ = exc.__context__ = exc.__cause__ = None
    if isinstance(exc, KeyboardInterrupt):
        _say("\nranvier: interrupted")
    else:
        _say(f"ranvier: error: {describe_failure(exc)}")
    return exit_code(exc)


def _traceback_wanted() -> bool:
    return os.environ.get("RANVIER_TRACEBACK", "").strip() not in ("", "0")


def main(argv=None) -> int:
    """The `ranvier` command; returns its exit status.

    - Bad input (UsageError, ConfigError, raised on every rank before anything is built):
      one line `ranvier: error: ...` (from rank 0 under mpiexec), status 2.
    - Ctrl-C: `ranvier: interrupted`, status 130.
    - Any other failure (RuntimeError, MemoryError, OSError, ...): one line
      `ranvier: error: TYPE: message`, status 1, no traceback.
    - Under mpiexec with several ranks, an interrupt or a failure on one rank prints one line
      naming that rank, `ranvier: error: rank 2 of 4: interrupted; stopping every rank`, and
      ends every rank with MPI_Abort (status 130 after an interrupt, 1 otherwise): no rank is
      left waiting for it.
    - Output cut short by a closed pipe (`ranvier info | head -n 2`) is normal use: the rest
      of the output is dropped, the command still finishes, nothing is printed on stderr.

    Environment: RANVIER_TRACEBACK=1 shows the Python traceback of an unexpected failure, for
    debugging: in one process the exception is re-raised; with several ranks the traceback is
    printed before the one line and the abort.
    """
    rank = _launcher_rank()
    stdout = sys.stdout
    if stdout is not None and not isinstance(stdout, _ClosedPipeTolerant):
        sys.stdout = _ClosedPipeTolerant(stdout)
    try:
        return _dispatch(argv, rank)
    except (UsageError, ConfigError) as e:
        if rank == 0:
            message = " ".join(str(e).split())       # one line, whatever the message holds
            _say(f"ranvier: error: {message}")
        return EXIT_BAD_INPUT
    except (Exception, KeyboardInterrupt) as e:
        if _traceback_wanted() and _single_process():
            raise
        return _failed(e)
    finally:
        if isinstance(sys.stdout, _ClosedPipeTolerant):
            sys.stdout.flush()                       # a pipe closed early shows here, not at exit
            if sys.stdout._stream is stdout:
                sys.stdout = stdout


def _single_process() -> bool:
    from .parallel import world_rank_size
    return world_rank_size()[1] <= 1


if __name__ == "__main__":
    sys.exit(main())
