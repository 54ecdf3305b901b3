"""`ranvier run [MODEL | CONFIG.toml] [flags]`: build a model, simulate it (measuring its
energy), print the summary table and write the run archive (--out DIR).

    ranvier run dpsnn --neurons 2048 --duration-ms 500
    ranvier run [MODEL | CONFIG.toml] [--model NAME] [--neurons N] [--threads K] [--out DIR] ...
    mpiexec -n 4 ranvier run examples/dpsnn.toml --exchange alltoallv
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from ..io import checkpoint
from ..io import config as cfgmod
from ..analysis import deadlines, imbalance, theory, updown
from ..runtime import energy, environment, parallel
from ..io import weights as weights_io
from ..errors import ConfigError
from ..io.output import dumps_toml
from . import signals
from .arguments import (assignment, id_list, non_negative_float, positive_float, positive_int, seed,
                        simulated_time_ms)


def add_parser(commands, exchanges, placements) -> None:
    from .. import models

    names = ", ".join(sorted(models.REGISTRY))
    run = commands.add_parser(
        "run", allow_abbrev=False, help="simulate a model (default: dpsnn, 20480 neurons, 10 s)",
        description=f"Simulate a model, named ({names}) or from a run configuration file. Flags "
                    f"override the model's defaults and the file; with neither, the default main job runs "
                    f"(dpsnn, 20480 neurons, 10 s simulated). Examples: 'ranvier run dpsnn --neurons 2048 "
                    f"--duration-ms 500', 'ranvier run examples/dpsnn-small.toml', 'ranvier run --model "
                    f"microcircuit --set scale=0.1'.")
    run.add_argument("config", nargs="?", metavar="MODEL|CONFIG.toml",
                     help=f"a model name ({names}) or a run configuration file (see examples/); a word "
                          f"ending .toml or holding a / is a file (default: dpsnn)")
    run.add_argument("--model", metavar="NAME", help=f"model name ({names}); the same as a MODEL positional, "
                                                     f"or with a CONFIG.toml: that file's settings for this "
                                                     f"model (default: the config's, else dpsnn)")
    run.add_argument("--neurons", type=positive_int, metavar="N", help="network size")
    run.add_argument("--duration-ms", type=positive_float, metavar="T",
                     help="simulated time (ms), a whole number of --resolution-ms steps; the run ends with "
                          "its last whole communication interval (the minimum delay), so a duration between "
                          "two of them simulates to the next, with a note")
    run.add_argument("--threads", type=positive_int, metavar="K",
                     help="threads per rank (default: cores of the node / ranks on it; in one process, less the cores "
                          "other processes keep busy, measured over 0.1 s before the build)")
    run.add_argument("--exchange", choices=exchanges, help="spike-exchange strategy")
    run.add_argument("--placement", choices=placements, help="neuron-to-rank/thread placement")
    run.add_argument("--seed", type=seed, metavar="S", help="network and noise seed")
    run.add_argument("--resolution-ms", type=positive_float, metavar="H", help="time step (ms)")
    run.add_argument("--set", type=assignment, action="append", default=[], metavar="KEY=VALUE",
                     help="any model parameter, value read as TOML (repeat for several)")
    run.add_argument("--no-barrier", action="store_true",
                     help="do not time a barrier before each exchange as 'synchronize'")
    run.add_argument("--global-interval", type=positive_int, metavar="D",
                     help="two-tier: cycles between global exchanges (default: the largest the inter-area "
                          "delays allow)")
    run.add_argument("--tier-exchange", choices=[e for e in exchanges if e != "two-tier"],
                     help="two-tier: the strategy both tiers use (default: allgather)")
    meters = run.add_argument_group("energy (see docs/measuring.md)")
    meters.add_argument("--energy", choices=energy.KINDS, default="auto",
                        help="power meter: auto (RAPL, else NVML), rapl, nvml, none (default: auto)")
    meters.add_argument("--baseline-s", type=non_negative_float, default=0.0, metavar="S",
                        help="idle pause before the simulation, for the baseline power (the DPSNN study used 5)")
    meters.add_argument("--power-trace", metavar="CSV", help="a power trace (time, watts) recorded by an external meter "
                        "during the run; read at the end and aligned with the run's clock")
    meters.add_argument("--clock-offset-s", type=float, metavar="EPOCH",
                        help="the trace's time 0 in epoch seconds, when its times are relative")
    meters.add_argument("--power-model", metavar="SPEC", help="a labelled estimate instead of a measurement: "
                        "'static=W,per_core=W' (watts above the baseline)")
    run.add_argument("--mpi-fit", metavar="FILE", help="mpi_fit.json from 'ranvier bench mpi' on this machine and "
                     "rank count: the summary then shows the predicted exchange time next to the measured one")
    run.add_argument("--pace", action="store_true",
                     help="hold the run to wall-clock time, never faster than biology (closed loops); the "
                          "summary's real-time lines count the cycles that still missed their deadline "
                          "(docs/real-time.md)")
    run.add_argument("--overlap", action="store_true",
                     help="exchange each interval's spikes while the next is computed (intervals of half the "
                          "minimum delay)")
    weights = run.add_argument_group("plastic weights (see docs/plasticity.md)")
    weights.add_argument("--initial-weights", metavar="WEIGHTS.h5",
                         help="start every plastic projection from the weights a run saved (its --out folder's "
                              "weights.h5)")
    weights.add_argument("--record-weights", type=positive_int, metavar="N",
                         help="sample N synapses of every plastic projection every --weight-interval-ms "
                              "(into weights.h5 with --out)")
    weights.add_argument("--weight-interval-ms", type=positive_float, metavar="T",
                         help="the weight recorder's interval, a whole number of communication intervals "
                              "(default 100 ms)")
    recording = run.add_argument_group("recording (see docs/devices.md)")
    recording.add_argument("--record-state", type=id_list, metavar="IDS",
                           help="global ids (0,5,10-19) whose V and synaptic variables are recorded: with --out, "
                                "state.h5 in the SONATA report layout")
    recording.add_argument("--record-state-interval-ms", type=positive_float, metavar="T",
                           help="their sampling interval, a whole number of steps (default: every step)")
    recording.add_argument("--record-spikes-of", type=id_list, metavar="IDS",
                           help="keep (and write) only these neurons' spikes; every neuron's are still counted")
    checkpoints = run.add_argument_group("checkpoints (see docs/checkpoints.md)")
    checkpoints.add_argument("--checkpoint-every", type=simulated_time_ms, metavar="T",
                             help="save a checkpoint every T of simulated time (10s, 500ms) into DIR.checkpoints "
                                  "beside --out DIR (moved into DIR/checkpoints when the run ends); needs --out")
    checkpoints.add_argument("--checkpoint-keep", type=positive_int, default=2, metavar="N",
                             help="keep the newest N checkpoints (default 2)")
    checkpoints.add_argument("--resume", metavar="DIR",
                             help="continue the newest complete checkpoint of a run: its --out folder, its "
                                  "checkpoint folder, or one checkpoint; ranks, --threads, --exchange, "
                                  "--placement may differ, the spikes do not; results go to the run's --out "
                                  "unless --out is given, and checkpoints go on as the run saved them")
    run.add_argument("--quiet", action="store_true", help="print nothing but errors")
    run.add_argument("--out", metavar="DIR", help="write config.toml, summary.json, spikes.h5, timers.h5 (and "
                                                "weights.h5 for plastic networks) here")
    run.add_argument("--force", action="store_true", help="replace a non-empty --out folder")


def resolve_config(args) -> cfgmod.RunConfig:
    from .. import models
    base = cfgmod.from_model_or_file(args.config) if args.config is not None else cfgmod.RunConfig()
    if args.config and args.model and args.config in _model_names() and args.model != args.config:
        raise ConfigError(f"two models named: '{args.config}' and --model {args.model}; give one")
    parameters = dict(args.set)
    if args.neurons is not None:
        parameters["neurons"] = args.neurons
    simulation = {"duration_ms": args.duration_ms, "threads": args.threads, "exchange": args.exchange,
                  "placement": args.placement, "seed": args.seed, "resolution_ms": args.resolution_ms,
                  "barrier": False if args.no_barrier else None, "overlap": True if args.overlap else None,
                  "pace": True if args.pace else None,
                  "global_interval": args.global_interval, "tier_exchange": args.tier_exchange,
                  "initial_weights": args.initial_weights, "record_weights": args.record_weights,
                  "weight_interval_ms": args.weight_interval_ms, "record_state": args.record_state,
                  "record_state_interval_ms": args.record_state_interval_ms,
                  "record_spikes_of": args.record_spikes_of}
    cfg = cfgmod.override(base, model=args.model, parameters=parameters, simulation=simulation)
    if cfg.model == models.SONATA:     # spike times and delays go onto the simulation's grid
        cfg.parameters["dt_ms"] = float(cfg.simulation["resolution_ms"])
    return cfg


def _model_names():
    from .. import models
    return models.REGISTRY


def resolved_dict(cfg: cfgmod.RunConfig, network, sim) -> dict:
    """Everything needed to rerun: model, every model parameter, every simulation setting."""
    from .. import models

    parameters = dict(network.parameters) or {**models.defaults(cfg.model), **cfg.parameters}
    simulation = {**cfg.simulation, "duration_ms": float(cfg.simulation["duration_ms"]),
                  "threads": sim.threads, "exchange": sim.exchange, "placement": sim.placement,
                  "seed": sim.seed, "resolution_ms": sim.resolution_ms, "barrier": sim.barrier,
                  "overlap": sim.overlap, "tier_exchange": sim.tier_exchange}
    if sim.global_interval:
        simulation["global_interval"] = sim.global_interval
    else:
        simulation.pop("global_interval", None)      # TOML has no None: omitted means automatic
    for key in ("record_state", "record_state_interval_ms", "record_spikes_of"):
        if simulation.get(key) is None:
            simulation.pop(key, None)
    if weights_io.edge_population_names(network):  # plastic: the weights' settings, the file made absolute
        if simulation.get("initial_weights") is not None:
            simulation["initial_weights"] = str(Path(simulation["initial_weights"]).resolve())
        else:
            simulation.pop("initial_weights", None)
    else:
        for key in cfgmod.WEIGHT_KEYS:
            simulation.pop(key, None)
    return {"model": cfg.model, "parameters": parameters, "simulation": simulation}


def command(args) -> int:
    from .. import models
    from ..io.output import check_target
    from ..runtime.parallel import launcher_rank, make_comm
    from ..core.simulation import Simulation

    rank = launcher_rank()
    ck = _checkpoint_to_resume(args) if args.resume is not None else None
    if args.checkpoint_every is not None and args.out is None:
        raise ConfigError("--checkpoint-every writes checkpoints beside the results: give --out DIR too")
    cfg = resolve_config(args)
    if cfg.simulation.get("record_spikes_of") is not None and args.out is None:
        raise ConfigError("--record-spikes-of (record_spikes_of) chooses the neurons whose spikes spikes.h5 keeps: "
                          "give --out DIR too (without it a run keeps only spike counts)")
    fit = theory.load_mpi_fit(args.mpi_fit) if args.mpi_fit else None
    if args.out is not None:
        check_target(args.out, args.force)      # on every rank: the same answer, before anything is made
    network = models.build(cfg.model, **cfg.parameters)
    cycle_ms = cfgmod.check_simulation(cfg, network)
    _check_checkpoint_interval(args.checkpoint_every, cycle_ms)
    _check_weight_settings(cfg.simulation, network)
    # on every rank, so that bad options stop all ranks before the build
    meter = energy.choose_meter(args.energy, power_trace=args.power_trace, clock_offset_s=args.clock_offset_s,
                                power_model=args.power_model, cores=args.threads)
    comm = make_comm()
    out = _claim_output(args, comm) if args.out is not None else None
    try:
        # Spikes and timers stream into the claimed folder; without one only the counts are kept.
        settings = cfg.simulation
        n = settings.get("record_weights") or 0
        recorders = [weights_io.WeightRecorder(source=network.projections[j].source,
                                               target=network.projections[j].target, index=j, synapses=n,
                                               interval_ms=float(settings.get("weight_interval_ms", 100.0)))
                     for j in weights_io.edge_population_names(network)] if n else None
        kwargs = cfg.simulation_kwargs()
        if args.out is not None:       # a SONATA config's reports choose the recorded state
            kwargs.update(_sonata_recording(network, cfg))
        if ck is not None:             # refused before the build: another network, seed or resolution
            checkpoint.check_against(ck.meta, network, kwargs.get("seed"), kwargs.get("resolution_ms"))
        sim = Simulation(network, comm=comm, **kwargs,   # its last checks (memory) precede the build
                         record_spikes=True if args.out is not None else "counts",
                         stream_to=out.staging if out is not None else None,
                         initial_weights=settings.get("initial_weights") if ck is None else None,
                         record_weights=recorders)
        signals.raise_if_lost()        # an interrupt dropped during the imports and the build
        if ck is not None:
            checkpoint.restore(sim, ck)
            if args.out is not None and args.checkpoint_every:
                comm.barrier()         # every rank has read the checkpoint: its folder may move
                if comm.rank == 0:     # resumed into the run's own folder: its checkpoints go on beside it
                    checkpoint.carry_over(out.path / "checkpoints", _checkpoint_folder(out))
            if _remaining_ms(sim, cfg) <= 1e-9:
                raise ConfigError(f"the checkpoint '{ck.path}' is at t = {sim.steps_done * sim.resolution_ms:g} ms, "
                                  f"the end of the run's {cfg.simulation['duration_ms']:g} ms: nothing to resume; "
                                  f"give a longer --duration-ms to run on")
        if cfg.simulation.get("record_state") and args.out is None and rank == 0 and not args.quiet:
            print("ranvier: note: --record-state is written to state.h5 with --out DIR; without it the state is "
                  "only in memory", file=sys.stderr)
        if args.out is not None:
            _check_output_space(out, sim, cfg.simulation["duration_ms"])
        return _simulate(args, cfg, network, sim, meter, fit, out, rank)
    except BaseException:
        if out is not None:
            out.abandon()              # nothing half-written stays behind; an earlier folder is untouched
        raise


def _check_checkpoint_interval(every_ms, cycle_ms: float) -> None:
    """Checkpoints are taken between communication intervals: at least one interval apart."""
    if every_ms is not None and every_ms < cycle_ms * (1 - 1e-9):
        raise ConfigError(f"--checkpoint-every {every_ms:g}ms is shorter than the communication interval of "
                          f"{cycle_ms:g} ms, between which checkpoints are taken; give at least {cycle_ms:g}ms")


def _check_weight_settings(settings: dict, network) -> None:
    """The plastic weights' settings do something only with plastic projections, and the
    recorder's interval only with the recorder: set otherwise, they are refused, not ignored."""
    plastic = bool(weights_io.edge_population_names(network))
    interval_set = settings.get("weight_interval_ms", cfgmod.SIMULATION_DEFAULTS["weight_interval_ms"]) \
        != cfgmod.SIMULATION_DEFAULTS["weight_interval_ms"]
    given = [f"{key} ({flag})" for flag, key, is_set in (
        ("--initial-weights", "initial_weights", settings.get("initial_weights") is not None),
        ("--record-weights", "record_weights", bool(settings.get("record_weights"))),
        ("--weight-interval-ms", "weight_interval_ms", interval_set)) if is_set]
    if given and not plastic:
        raise ConfigError(f"{given[0]}: the network has no plastic projection, so it would do nothing (static "
                          f"weights are the seed's, the same at every moment); leave it out, or make a projection "
                          f"plastic (docs/plasticity.md)")
    if interval_set and not settings.get("record_weights"):
        raise ConfigError(f"--weight-interval-ms (weight_interval_ms) is the interval of the weight recorder: give "
                          f"--record-weights N too, or leave it out")


def _checkpoint_to_resume(args):
    """--resume: the newest complete checkpoint; its config.toml becomes the run's configuration and
    its --out the default destination (every rank reads the same folder, before anything is built)."""
    if args.config is not None:
        raise ConfigError(f"give either {args.config!r} or --resume: a resumed run takes its configuration from "
                          f"the checkpoint (flags such as --threads, --exchange, --duration-ms still apply)")
    ck = checkpoint.Checkpoint(checkpoint.find_for_resume(args.resume))
    cli = ck.meta.get("cli")
    if not cli or not (ck.path / "config.toml").is_file():
        raise ConfigError(f"checkpoint '{ck.path}' was saved from Python (Simulation.save), not by 'ranvier run': "
                          f"resume it with ranvier.Simulation.resume")
    args.config = str(ck.path / "config.toml")
    if args.out is None:
        args.out = cli["out"]
        args.force = args.force or Path(cli["out"]).exists()   # its own results: replaced when the resumed run ends
    if args.checkpoint_every is None and cli.get("checkpoint_every_ms"):
        args.checkpoint_every = float(cli["checkpoint_every_ms"])      # it goes on saving as it did
        if args.checkpoint_keep == 2 and cli.get("checkpoint_keep"):
            args.checkpoint_keep = int(cli["checkpoint_keep"])
    return ck


def _remaining_ms(sim, cfg) -> float:
    """Simulated time still to run to the configured duration (a resumed run starts part-way)."""
    return float(cfg.simulation["duration_ms"]) - sim.steps_done * sim.resolution_ms


def _claim_output(args, comm):
    """Rank 0 claims the destination (lock and staging folder); every rank learns whether it could."""
    from ..io.output import OutputFolder
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
    from ..core.recording import TIMER_BYTES_PER_CYCLE
    refusal = None
    if sim.rank == 0 and out is not None:
        cycles = int(round(sim.stop_ms(duration_ms) / sim.cycle_ms))
        try:
            out.check_space(cycles * sim.size * TIMER_BYTES_PER_CYCLE, f"the per-cycle timers of {cycles:,} cycles")
        except ConfigError as e:
            refusal = str(e)
    refusal = sim.comm.bcast(refusal)
    if refusal is not None:
        raise ConfigError(refusal)


def _simulate(args, cfg, network, sim, meter, fit, out, rank) -> int:
    from ..io.output import OutputError
    from ..runtime.progress import ProgressBar

    talk = rank == 0 and not args.quiet
    bar = ProgressBar() if talk else None
    start_ms = sim.steps_done * sim.resolution_ms          # > 0 for a resumed run
    duration_ms = _remaining_ms(sim, cfg)
    if talk:
        what = (f"resuming the checkpoint at t = {start_ms / 1000:g} s ({sim.resumed_from['checkpoint']}) to "
                f"t = {sim.stop_ms(duration_ms) / 1000:g} s" if sim.resumed_from
                else f"simulating {sim.stop_ms(duration_ms) / 1000:g} s")
        print(f"ranvier: built {cfg.model} ({network.size:,} neurons) in {sim.build_seconds:.2f} s on "
              f"{sim.size} rank(s) x {sim.threads} thread(s); " + what +(f" after a {args.baseline_s:g} s idle baseline" if args.baseline_s else ""),
              file=sys.stderr, flush=True)
        for note in (network.sonata.notes if network.sonata is not None else []):
            print(f"ranvier: note: {note}", file=sys.stderr, flush=True)
    # The energy session of Simulation.run(energy=...) (ranvier.runtime.energy.measure): the idle
    # baseline, then the simulation; the report is in the Result, and in its summary.
    plastic = bool(weights_io.edge_population_names(network))
    initial = weights_io.distributions(sim) if plastic else None       # collective, before the run
    try:
        saver = _CheckpointSaver(args, cfg, network, sim, out, talk) if args.checkpoint_every else None
        result = energy.measure(sim, energy.Measurement(meter, baseline_s=args.baseline_s),
                                lambda: _run(sim, duration_ms, bar, saver))
    finally:
        if bar:
            bar.close()
    # collective: every rank hands its plastic synapses over before rank 0 goes on alone. The
    # condition must be the same on every rank: `out` is rank 0's alone, `args.out` everyone's.
    final = weights_io.distributions(sim) if plastic else None
    gathered = weights_io.gather_plastic(sim) if plastic and args.out is not None else None
    if sim.rank != 0:
        return 0
    summary = result.summary(fit)
    _note_peak_memory(summary)         # the summary's own statistics included
    if plastic:                        # the weight distributions, initial and final (the report draws them)
        summary["plasticity"] = {name: {"initial": initial[name], "final": final[name],
                                        "synapse": repr(network.projections[j].synapse)}
                                 for j, name in weights_io.edge_population_names(network).items()}
    if not args.quiet:                 # the summary first: it survives whatever happens to the files
        print(format_summary(summary), flush=True)
    if out is None:
        return 0
    sim.close()                        # spikes.h5 and timers.h5 from the streamed chunks
    rec = sim.recording
    try:
        if rec.error is not None:
            from ..io.output import write_failure
            raise OutputError(write_failure(out.shown, rec.error, rec.bytes_needed()))
        if network.sonata is not None:  # sonata/<spikes_file>, its reports: the network's own node ids
            _write_sonata_output(out.staging, sim, network, result)
        elif result.state is not None:  # state.h5: the recorded state in the SONATA report layout
            from ..io import sonata
            sonata.write_report(out.staging / "state.h5", result.state, network, sonata.native_info(network), sim.seed)
        if gathered is not None:       # weights.h5: SONATA edges, and the recorders' samples
            weights_io.write_weights(out.staging / "weights.h5", sim, gathered, result.weight_traces)
        _note_peak_memory(summary)     # summary.json's: the writing of the results included
        env = environment.collect(sim.size, sim.comm.ranks_on_node, sim.threads, transport=parallel.transport(sim.comm))
        signals.raise_if_lost()        # not published after an interrupt
        written = out.publish(resolved_dict(cfg, network, sim), summary, env)
        rec.moved_to(out.path)
        if args.checkpoint_every:      # the run's checkpoints join its results
            checkpoint.move_into(_checkpoint_folder(out), out.path / "checkpoints")
    except OutputError as e:
        out.abandon()
        print(f"ranvier: error: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"results written to {written}/")
    return 0


def _note_peak_memory(summary: dict) -> None:
    """Rank 0's peak memory in the summary, now: after the run, rank 0 alone makes the summary and
    writes the results, and the peak of a long run can come then."""
    from ..runtime.resources import peak_rss_bytes
    summary["peak_rss_bytes"][0] = max(summary["peak_rss_bytes"][0], peak_rss_bytes())


def _checkpoint_folder(out) -> Path:
    """Where a run's checkpoints go while it runs: beside its --out folder, which exists only at the end."""
    return out.checkpoints


def _run(sim, duration_ms, bar, saver):
    """sim.run(duration_ms), stopping for a checkpoint at the end of the communication interval in
    which each whole multiple of the checkpoint interval falls (checkpoints are taken there)."""
    if saver is None:
        return sim.run(duration_ms, progress=signals.checked(bar))
    h, L = sim.resolution_ms, sim.steps_per_cycle
    first = sim.steps_done
    end = first + int(round(duration_ms / h))
    every = saver.every_ms / h                      # in steps, maybe fractional
    t0 = time.perf_counter()
    result = None
    while sim.steps_done < end:
        now = sim.steps_done
        due = math.ceil((math.floor(now / every + 1e-9) + 1) * every - 1e-6)   # the next multiple, in steps
        stop = min(end, -(-due // L) * L)
        shown = (lambda done, total, wall, base=(now - first) * h:
                 bar(base + done, duration_ms, time.perf_counter() - t0)) if bar else None
        result = sim.run((stop - now) * h, progress=signals.checked(shown))
        if stop < end or (stop % L == 0 and stop >= due):
            saver.save()
    return result


class _CheckpointSaver:
    """Saves `ranvier run --checkpoint-every` checkpoints: config.toml with each, the newest N kept."""

    def __init__(self, args, cfg, network, sim, out, talk):
        self.every_ms, self.keep = float(args.checkpoint_every), args.checkpoint_keep
        self.sim, self.talk = sim, talk
        self.folder = _checkpoint_folder(out) if out is not None else None
        self.folder = sim.comm.bcast(self.folder)
        self.config = dumps_toml(resolved_dict(cfg, network, sim)).encode()
        self.cli = {"out": str(out.path) if out is not None else None, "checkpoint_every_ms": self.every_ms,
                    "checkpoint_keep": self.keep}
        self.cli = sim.comm.bcast(self.cli)

    def save(self) -> None:
        from ..io.output import OutputError, write_checkpoint_failure
        t0 = time.perf_counter()
        path = self.folder / f"{checkpoint.PREFIX}{self.sim.steps_done:012d}"
        try:
            checkpoint.save(self.sim, path, extra_files={"config.toml": self.config}, cli=self.cli,
                            spike_segments=True)
        except OSError as e:           # rank 0 (a full disk): one line; the earlier checkpoints stay
            raise OutputError(write_checkpoint_failure(path, self.sim.steps_done * self.sim.resolution_ms, e)) from None
        if self.sim.rank != 0:
            return
        checkpoint.prune(self.folder, self.keep)
        if self.talk:
            size = sum(f.stat().st_size for f in path.iterdir())
            print(f"\nranvier: checkpoint at t = {self.sim.steps_done * self.sim.resolution_ms / 1000:g} s: {path} "
                  f"({size / 1e6:.1f} MB, {time.perf_counter() - t0:.2f} s)", file=sys.stderr, flush=True)


def _sonata_recording(network, cfg) -> dict:
    """The state a SONATA config's reports need: every reported neuron, at the finest interval."""
    info = network.sonata
    if info is None or not info.reports:
        return {}
    if cfg.simulation.get("record_state"):
        raise ConfigError("--record-state: this SONATA config's reports choose the recorded neurons; leave "
                          "--record-state out")
    h = float(cfg.simulation["resolution_ms"])
    base = min(interval for _, _, interval, _ in info.reports)
    for name, _, interval, _ in info.reports:
        k = interval / base
        if abs(k - round(k)) > 1e-9 * k or abs(base / h - round(base / h)) > 1e-9 * base / h:
            raise ConfigError(f"SONATA report '{name}': dt {interval:g} ms must be a whole number of steps of "
                              f"{h:g} ms and a multiple of the other reports' dt ({base:g} ms)")
    ids = sorted({g for _, gids, _, _ in info.reports for g in gids})
    return {"record_state": ids, "record_state_interval_ms": base}


def _write_sonata_output(folder, sim, network, result) -> None:
    import numpy as np

    from ..io import sonata
    from ..core.recording import read_spike_file

    info = network.sonata
    ids, steps = read_spike_file(folder / "spikes.h5", [p.name for p in network.populations],
                                 [p.first_id for p in network.populations], sim.resolution_ms)
    (folder / "sonata").mkdir()
    sonata.write_spikes(folder / "sonata" / info.spikes_file, ids, steps * sim.resolution_ms, network, info)
    for name, gids, interval, file_name in info.reports:
        state = result.state
        rows = np.searchsorted(state["ids"], gids)
        k = int(round(interval / state["interval_ms"]))
        part = {"ids": np.asarray(gids), "V": np.asarray(state["V"])[rows, k - 1::k],
                "interval_ms": state["interval_ms"] * k}
        sonata.write_report(folder / "sonata" / file_name, part, network, info, sim.seed)


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
    rows.append((f"rates {lo / 1000:g}-{hi / 1000:g} s (Hz)", _rates_text(s["rates_steady_hz"])))
    by_type = s.get("rates_steady_by_type_hz") or {}
    if by_type:
        rows.append(("", _rates_text(by_type)))
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
    if c.get("persistent_reinits"):
        traffic += f", {c['persistent_reinits']} persistent re-initialisations"
    rows.append(("exchange traffic", traffic))
    partners = s.get("communication_partners")
    if partners and s["ranks"] > 1:
        per = [b for b in partners["bytes_per_partner"] if b is not None]
        rows.append(("partners", f"{partners['mean_partners']:.1f} of {s['ranks'] - 1} other ranks hold a rank's "
                                 f"synapses (mean); " + (f"{_si(sum(per) / len(per) / cycles)} bytes per partner "
                                                         f"per interval" if per else "no bytes sent")))
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
    rows.extend(deadlines.format_rows(s.get("deadlines")))
    rows.extend(imbalance.format_rows(s.get("imbalance")))
    rows.extend(updown.format_rows(s.get("up_down")))
    if s.get("energy"):
        rows.extend(energy.format_lines(s["energy"]))
    rss = s["peak_rss_bytes"]
    rows.append(("peak RSS per rank", f"{max(rss) / 2**20:.0f} MiB (max over {len(rss)} rank(s))"))
    if s["synapses"]:
        rows.append(("bytes per synapse", f"{sum(rss) / s['synapses']:.1f} (peak RSS of all ranks / synapses); "
                                          f"synapse store {s['synapse_store_bytes'] / s['synapses']:.1f}"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _rates_text(rates: dict) -> str:
    """Every population's rate; one without a spike in the window says so ('silent'), one whose
    rate rounds to 0.00 keeps its digits, so neither is mistaken for the other."""
    def one(hz: float) -> str:
        if hz == 0:
            return "silent"
        return f"{hz:.2f}" if hz >= 0.005 else f"{hz:.2g}"
    return "  ".join(f"{name} {one(hz)}" for name, hz in rates.items())


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
