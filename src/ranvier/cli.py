"""The `ranvier` command line.

    ranvier run [CONFIG.toml] [--neurons N] [--threads K] [--out DIR] ...
    mpiexec -n 4 ranvier run examples/dpsnn.toml --exchange alltoallv
    ranvier info

Bad input exits with status 2 and one line `ranvier: error: ...` on stderr, before
anything is built or written. Under mpiexec only rank 0 prints and writes.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys

from . import config as cfgmod
from .errors import ConfigError

EXIT_BAD_INPUT = 2
_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def _launcher_rank() -> int:
    """This process's rank as the MPI launcher announced it (0 outside mpiexec), known before MPI starts."""
    for var in _RANK_VARS:
        try:
            return int(os.environ[var])
        except (KeyError, ValueError):
            pass
    return 0


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line (raised, so main() decides who prints)."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:         # name the subcommand whose help lists the valid flags
            where = f"{self.prog} {parsed.command}" if getattr(parsed, "command", None) else self.prog
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
    run.add_argument("--quiet", action="store_true", help="print nothing but errors")
    run.add_argument("--out", metavar="DIR", help="write config.toml, summary.json, spikes.h5, timers.h5 here")
    run.add_argument("--force", action="store_true", help="replace a non-empty --out folder")
    commands.add_parser("info", allow_abbrev=False, help="version, build features, MPI, cores")
    return parser


# -- ranvier run ---------------------------------------------------------------------------
def resolve_config(args) -> cfgmod.RunConfig:
    base = cfgmod.load(args.config) if args.config else cfgmod.RunConfig()
    parameters = dict(args.set)
    if args.neurons is not None:
        parameters["neurons"] = args.neurons
    simulation = {"duration_ms": args.duration_ms, "threads": args.threads, "exchange": args.exchange,
                  "placement": args.placement, "seed": args.seed, "resolution_ms": args.resolution_ms,
                  "barrier": False if args.no_barrier else None}
    return cfgmod.override(base, model=args.model, parameters=parameters, simulation=simulation)


def resolved_dict(cfg: cfgmod.RunConfig, network, sim) -> dict:
    """Everything needed to rerun: model, every model parameter, every simulation setting."""
    from . import models

    parameters = dict(network.parameters) or {**models.defaults(cfg.model), **cfg.parameters}
    simulation = {**cfg.simulation, "duration_ms": float(cfg.simulation["duration_ms"]),
                  "threads": sim.threads, "exchange": sim.exchange, "placement": sim.placement,
                  "seed": sim.seed, "resolution_ms": sim.resolution_ms, "barrier": sim.barrier}
    return {"model": cfg.model, "parameters": parameters, "simulation": simulation}


def command_run(args, rank: int) -> int:
    from . import models
    from .output import check_target, write_result
    from .progress import ProgressBar
    from .simulation import Simulation

    cfg = resolve_config(args)
    out = check_target(args.out, args.force) if args.out else None
    network = models.build(cfg.model, **cfg.parameters)
    cfgmod.check_simulation(cfg, network)
    sim = Simulation(network, **cfg.simulation_kwargs())    # its last checks (memory) come before the build
    talk = rank == 0 and not args.quiet
    bar = ProgressBar() if talk else None
    if talk:
        print(f"ranvier: built {cfg.model} ({network.size:,} neurons) in {sim.build_seconds:.2f} s on "
              f"{sim.size} rank(s) x {sim.threads} thread(s); simulating {cfg.simulation['duration_ms'] / 1000:g} s",
              file=sys.stderr, flush=True)
    try:
        result = sim.run(cfg.simulation["duration_ms"], progress=bar)
    finally:
        if bar:
            bar.close()
    if sim.rank != 0:
        return 0
    summary = result.summary()
    if out is not None:
        write_result(out, resolved_dict(cfg, network, sim), result, summary)
    if not args.quiet:
        print(format_summary(summary))
        if out is not None:
            print(f"results written to {out}/")
    return 0


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
        ("exchange", s["exchange"]),
        ("placement", s["placement"]),
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
    rows.append(("phases", "seconds (% of simulate), mean over ranks"))
    for phase, seconds in s["phase_seconds"].items():
        share = f" ({100 * seconds / sim_s:.1f} %)" if sim_s > 0 else ""
        rows.append((f"  {phase}", f"{seconds:.3f} s{share}"))
    rss = s["peak_rss_bytes"]
    rows.append(("peak RSS per rank", f"{max(rss) / 2**20:.0f} MiB (max over {len(rss)} rank(s))"))
    if s["synapses"]:
        rows.append(("bytes per synapse", f"{sum(rss) / s['synapses']:.1f} (peak RSS of all ranks / synapses); "
                                          f"synapse store {s['synapse_store_bytes'] / s['synapses']:.1f}"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


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


# -- entry point ---------------------------------------------------------------------------
def main(argv=None) -> int:
    rank = _launcher_rank()
    try:
        from .simulation import EXCHANGES, PLACEMENTS
        args = make_parser(EXCHANGES, PLACEMENTS).parse_args(argv)
        if args.command == "run":
            return command_run(args, rank)
        if args.command == "info":
            return command_info()
        raise UsageError("a command is required: 'run' or 'info' (see 'ranvier --help')")
    except (UsageError, ConfigError) as e:
        if rank == 0:
            message = " ".join(str(e).split())       # one line, whatever the message holds
            print(f"ranvier: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        if rank == 0:
            print("\nranvier: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
