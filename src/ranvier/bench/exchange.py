"""`ranvier bench exchange`: the exchange strategies (and overlap settings) against rank counts.

    ranvier bench exchange dpsnn --ranks 1,2 --strategies allgather,alltoallv --repeats 3

The command checks all its input first, then runs every configuration as its own process,
one at a time (runner.run_worker, worker kind "exchange"); rank 0 of each worker writes the
measurements as JSON, which the command gathers into tables, exchange_bench.csv and
exchange_bench.png.
"""
from __future__ import annotations

import csv
import json
import statistics
import tempfile
from pathlib import Path

import numpy as np

from ..io import config as cfgmod
from ..analysis import theory
from ..cli.arguments import assignment, name_list, positive_float, positive_int, positive_int_list
from ..errors import ConfigError
from . import common, runner
from .common import say

TWO_TIER = "two-tier"            # ranvier.core.spec.TWO_TIER, named here so that the parser needs no engine

OVERLAP_SETTINGS = {"off": (False,), "on": (True,), "both": (False, True)}
EXCHANGE_CSV, EXCHANGE_PNG = "exchange_bench.csv", "exchange_bench.png"
EXCHANGE_COLUMNS = [
    "ranks", "threads", "strategy", "overlap", "repeat", "duration_ms", "cycles", "cycle_ms",
    "communicate_us_per_cycle", "synchronize_us_per_cycle", "bytes_per_cycle", "messages_per_cycle",
    "spikes_sent_per_cycle", "spikes_received_per_cycle", "real_time_factor", "simulate_seconds",
    "exchange_resizes", "overflow_rounds", "persistent_reinits",
]
# Counters that only some engine builds keep: reported (summed over ranks) where present.
OPTIONAL_COUNTERS = ("exchange_resizes", "overflow_rounds", "persistent_reinits")


def add_parser(benches, exchanges) -> None:
    """Registers `ranvier bench exchange` on the bench subparsers."""
    exchange = benches.add_parser(
        "exchange", allow_abbrev=False, help="exchange strategies against rank counts: table, CSV, plot",
        description="Run a workload with each exchange strategy (and overlap setting) on each rank count, "
                    "several times; print one table per rank count and write exchange_bench.csv (one row "
                    "per run) and exchange_bench.png.")
    exchange.add_argument("workload", metavar="WORKLOAD", help="a model name (dpsnn, ...) or a config .toml")
    exchange.add_argument("--ranks", type=positive_int_list, required=True, metavar="R1,R2,...",
                          help="rank counts to run, for example 1,2,4")
    exchange.add_argument("--strategies", type=name_list, metavar="S1,S2,...",
                          help=f"exchange strategies (default: all that fit the workload: {','.join(exchanges)}; "
                               f"two-tier is left out for a network without areas; asked for explicitly there, "
                               f"it is refused)")
    exchange.add_argument("--overlap", choices=("off", "on", "both"), default="off",
                          help="exchange overlapped with computation, or not, or both (default: off)")
    exchange.add_argument("--duration-ms", type=positive_float, metavar="T",
                          help="simulated time per run (default: the config's, or 1000 ms for a model name)")
    exchange.add_argument("--threads", type=positive_int, metavar="K",
                          help="threads per rank (default: the config's, else 1)")
    exchange.add_argument("--repeats", type=positive_int, default=3, metavar="N",
                          help="runs of each configuration; tables give min and median (default: 3)")
    exchange.add_argument("--set", type=assignment, action="append", default=[], metavar="KEY=VALUE",
                          help="any model parameter, value read as TOML (repeat for several)")
    exchange.add_argument("--neurons", type=positive_int, metavar="N", help="network size")
    exchange.add_argument("--mpi-fit", metavar="FILE", help="mpi_fit.json from 'ranvier bench mpi' on the same "
                          "rank count: adds the predicted exchange time per cycle (theory.md, section 3)")
    exchange.add_argument("--out", metavar="DIR", help="folder for the CSV and the plot "
                                                       "(default: bench-results/exchange-<timestamp>)")


def command(args) -> None:
    parameters = dict(args.set)
    if args.neurons is not None:
        parameters["neurons"] = args.neurons
    exchange_bench(args.workload, args.ranks, strategies=args.strategies, overlap=args.overlap,
                   duration_ms=args.duration_ms, threads=args.threads, repeats=args.repeats,
                   parameters=parameters, out=args.out, mpi_fit=args.mpi_fit)


def exchange_measurements(result) -> dict:
    """The per-cycle exchange figures of one run, from its Result on rank 0."""
    from ..core.simulation import PHASES

    timers = result.cycle_timers                      # [rank, cycle, phase], seconds
    cycles = timers.shape[1]
    totals = {name: int(per_rank.sum()) for name, per_rank in result.counters_per_rank.items()}

    def microseconds_per_cycle(phase: str) -> float:
        # every rank runs the same cycles, so the mean over all entries is the mean over ranks
        # of each rank's per-cycle mean
        return float(timers[:, :, PHASES.index(phase)].mean() * 1e6)

    return {
        "ranks": result.ranks, "threads": result.threads, "strategy": result.exchange,
        "duration_ms": result.duration_ms, "cycles": cycles, "cycle_ms": result.duration_ms / cycles,
        "communicate_us_per_cycle": microseconds_per_cycle("communicate"),
        "synchronize_us_per_cycle": microseconds_per_cycle("synchronize"),
        "bytes_per_cycle": totals["bytes_sent"] / cycles,
        "messages_per_cycle": totals["messages_sent"] / cycles,
        "spikes_sent_per_cycle": totals["spikes_sent"] / cycles,
        "spikes_received_per_cycle": totals["spikes_received"] / cycles,
        "real_time_factor": result.real_time_factor,
        "simulate_seconds": result.simulate_seconds,
        **{name: totals.get(name, "") for name in OPTIONAL_COUNTERS},
    }


def plan_exchange(workload: str, strategies: list[str] | None = None, overlap: str = "off",
                  duration_ms: float | None = None, threads: int | None = None,
                  parameters: dict | None = None) -> dict:
    """Every check of the benchmark's input that needs no process launched, and what follows from
    it: cfg (the workload with the flags on top), network, threads, strategies (the default list
    fitted to the workload), left_out (a line per strategy left out, and why) and simulated (the
    simulated time per run, as text)."""
    from .. import models
    from ..core.simulation import EXCHANGES

    explicit = strategies is not None
    strategies = common.check_names("--strategies", "strategy", strategies or EXCHANGES, EXCHANGES)
    if overlap not in OVERLAP_SETTINGS:
        raise ConfigError(f"--overlap must be one of {list(OVERLAP_SETTINGS)}, got {overlap!r}")
    cfg = common.resolve_workload(workload, parameters)
    # Threads are fixed for the whole benchmark (the flag, else the config's, else 1) so that
    # rank counts compare like with like.
    threads = threads or cfg.simulation["threads"] or 1
    cfg = cfgmod.override(cfg, simulation={"duration_ms": duration_ms, "threads": threads})
    network = models.build(cfg.model, **cfg.parameters)
    for overlapped in OVERLAP_SETTINGS[overlap]:     # the duration, overlap's half interval, and so on
        try:
            cfgmod.check_simulation(cfgmod.override(cfg, simulation={"overlap": overlapped}), network)
        except ConfigError as e:
            raise ConfigError(f"--overlap {overlap}: {e}" if "'overlap'" in str(e) else str(e)) from None
    strategies, left_out = fitting_strategies(strategies, explicit, network, cfg.model, overlap)
    return {"cfg": cfg, "network": network, "threads": threads, "strategies": strategies, "left_out": left_out,
            "simulated": _simulated_ms(cfg)}


def exchange_bench(workload: str, ranks: list[int], strategies: list[str] | None = None, overlap: str = "off",
                   duration_ms: float | None = None, threads: int | None = None, repeats: int = 3,
                   parameters: dict | None = None, out=None, mpi_fit=None) -> Path:
    """Runs every (ranks, strategy, overlap) `repeats` times; prints tables; writes CSV and plot into out."""
    fit = theory.load_mpi_fit(mpi_fit) if mpi_fit else None
    plan = plan_exchange(workload, strategies, overlap, duration_ms, threads, parameters)
    cfg, network, threads = plan["cfg"], plan["network"], plan["threads"]
    strategies, left_out, simulated = plan["strategies"], plan["left_out"], plan["simulated"]
    for r in ranks:
        runner.launch_prefix(r, threads)                  # mpiexec is there for every rank count
    out = common.output_folder(out, "exchange", EXCHANGE_CSV)
    plt = common.pyplot()
    if plt is None:
        say("bench: matplotlib is not installed (pip install matplotlib): no plot will be drawn")

    duration = float(cfg.simulation["duration_ms"])
    base_spec = {"kind": "exchange", "model": cfg.model, "parameters": cfg.parameters,
                 "simulation": cfg.simulation_kwargs(), "duration_ms": duration}
    configurations = [(r, s, o) for r in ranks for s in strategies for o in OVERLAP_SETTINGS[overlap]]
    say(f"bench: {cfg.model}, {network.size:,} neurons, {simulated} ms simulated per run, "
         f"{len(configurations)} configuration(s) x {repeats} repeat(s)" + "".join(f"; {note}" for note in left_out))
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    with tempfile.TemporaryDirectory(prefix="ranvier-bench-") as tmp, \
            open(out / EXCHANGE_CSV, "w", newline="") as csv_file:
        rows = csv.DictWriter(csv_file, fieldnames=EXCHANGE_COLUMNS)
        rows.writeheader()
        # Repeats are the outer loop so that a slow drift of the machine spreads over all
        # configurations instead of favouring the ones measured first.
        for repeat in range(1, repeats + 1):
            for r, strategy, overlapped in configurations:
                on_off = "on" if overlapped else "off"
                settings = {**base_spec["simulation"], "exchange": strategy}
                if strategy != TWO_TIER:                  # the config's D is two-tier's alone
                    settings.pop("global_interval", None)
                spec = {**base_spec, "simulation": settings, "overlap": overlapped}
                label = f"{r} rank(s), {strategy}, overlap {on_off}, repeat {repeat}/{repeats}"
                run = {**runner.run_worker(r, threads, spec, Path(tmp), label), "overlap": on_off, "repeat": repeat}
                rows.writerow(run)
                csv_file.flush()                   # finished runs survive a later failure
                runs.append(run)
                say(f"bench: {label}: real-time factor {run['real_time_factor']:.3f}")

    summary = summarize_exchange(runs)
    if fit is not None:          # theory.md section 3: predicted next to measured
        for s in summary:
            seconds = theory.exchange_seconds(s["strategy"], s["ranks"], s["bytes"] / s["ranks"], fit)
            s["model_us"] = seconds * 1e6 if seconds is not None else None
    print(f"{cfg.model}, {network.size:,} neurons, {threads} thread(s) per rank, {simulated} ms simulated, "
          f"{repeats} repeat(s); exchange times are medians over repeats, per cycle, mean over ranks")
    for note in left_out:
        print(note)
    for r in ranks:
        print(f"\n{r} rank(s)")
        print(format_exchange_table([s for s in summary if s["ranks"] == r]))
    written = [out / EXCHANGE_CSV]
    if plt is not None:
        plot_exchange(plt, summary, out / EXCHANGE_PNG, title=f"{cfg.model}, {network.size:,} neurons")
        written.append(out / EXCHANGE_PNG)
    print(f"\nresults written to {', '.join(map(str, written))}")
    return out


def fitting_strategies(strategies: list[str], explicit: bool, network, model: str,
                       overlap: str) -> tuple[list[str], list[str]]:
    """The strategies that can run this workload, and a line for each left out of the default list.
    two-tier needs every population in an area (it overlaps like the others): asked for by name
    where it cannot run, it is refused in one line before anything runs."""
    if TWO_TIER not in strategies:
        return strategies, []
    why = None
    if not network.areas:
        why = f"{model} has no areas"
    elif any(p.area is None for p in network.populations):
        why = f"{model} has populations without an area"
    if why is None:
        return strategies, []
    if explicit:
        raise ConfigError(f"--strategies {TWO_TIER}: {why}; it is for multi-area models (mam-benchmark): "
                          f"leave it out")
    rest = [name for name in strategies if name != TWO_TIER]
    return rest, [f"{TWO_TIER} left out: {why}"]


def _simulated_ms(cfg) -> str:
    """The simulated time per run, as text."""
    return f"{float(cfg.simulation['duration_ms']):g}"


def summarize_exchange(runs: list[dict]) -> list[dict]:
    """One entry per (ranks, strategy, overlap): medians over repeats, and the minimum real-time factor."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((run["ranks"], run["strategy"], run["overlap"]), []).append(run)
    summary = []
    for (ranks, strategy, overlap), group in groups.items():
        def median(key, group=group):
            return statistics.median(run[key] for run in group)
        rtf = [run["real_time_factor"] for run in group]
        summary.append({"ranks": ranks, "strategy": strategy, "overlap": overlap,
                        "communicate_us": median("communicate_us_per_cycle"),
                        "synchronize_us": median("synchronize_us_per_cycle"),
                        "bytes": median("bytes_per_cycle"), "messages": median("messages_per_cycle"),
                        "rtf_min": min(rtf), "rtf_median": statistics.median(rtf)})
    return summary


def format_exchange_table(summary: list[dict]) -> str:
    header = ["strategy", "overlap", "communicate µs/cycle", "synchronize µs/cycle", "bytes/cycle",
              "messages/cycle", "RTF min", "RTF median"]
    modelled = any("model_us" in s for s in summary)
    if modelled:
        header.insert(3, "model µs/cycle")
    rows = []
    for s in summary:
        row = [s["strategy"], s["overlap"], f"{s['communicate_us']:.1f}", f"{s['synchronize_us']:.1f}",
               f"{s['bytes']:,.0f}", f"{s['messages']:.1f}", f"{s['rtf_min']:.3f}", f"{s['rtf_median']:.3f}"]
        if modelled:
            row.insert(3, f"{s['model_us']:.1f}" if s.get("model_us") is not None else "-")
        rows.append(row)
    return common.text_table(header, rows)


def plot_exchange(plt, summary: list[dict], path: Path, title: str) -> None:
    """Top: communicate + synchronize per cycle, bars per strategy (side by side for overlap off/on),
    one panel per rank count. Bottom: real-time factor, median bars with the minimum marked."""
    rank_counts = list(dict.fromkeys(s["ranks"] for s in summary))
    strategies = list(dict.fromkeys(s["strategy"] for s in summary))
    overlaps = list(dict.fromkeys(s["overlap"] for s in summary))
    width = 0.8 / len(overlaps)
    fig, axes = plt.subplots(2, len(rank_counts), figsize=(1.2 + 3.2 * len(rank_counts), 7),
                             squeeze=False, sharey="row")
    for col, ranks in enumerate(rank_counts):
        top, bottom = axes[0][col], axes[1][col]
        for j, overlap in enumerate(overlaps):
            entries = {s["strategy"]: s for s in summary if s["ranks"] == ranks and s["overlap"] == overlap}
            x = np.arange(len(strategies)) + (j - (len(overlaps) - 1) / 2) * width

            def value(key, entries=entries):
                return [entries[name][key] if name in entries else np.nan for name in strategies]
            hatch = "//" if overlap == "on" else None
            suffix = f" (overlap {overlap})" if len(overlaps) > 1 else ""
            top.bar(x, value("communicate_us"), width, color="C0", hatch=hatch, label="communicate" + suffix)
            top.bar(x, value("synchronize_us"), width, bottom=value("communicate_us"), color="C1", hatch=hatch,
                    label="synchronize" + suffix)
            bottom.bar(x, value("rtf_median"), width, color="C2", hatch=hatch, label="median" + suffix)
            bottom.plot(x, value("rtf_min"), "k_", markersize=12, label="min" if j == 0 else None)
        top.set_title(f"{ranks} rank(s)")
        for ax in (top, bottom):
            ax.set_xticks(np.arange(len(strategies)), strategies, rotation=30, ha="right")
    axes[0][0].set_ylabel("exchange µs per cycle (median)")
    axes[1][0].set_ylabel("real-time factor")
    axes[0][-1].legend(fontsize="small")
    axes[1][-1].legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def worker(spec: dict) -> None:
    from .. import models
    from ..core.simulation import Simulation

    network = models.build(spec["model"], **spec["parameters"])
    settings = dict(spec["simulation"])
    if spec["overlap"]:              # off is the default, so builds without overlap run it too
        settings["overlap"] = True
    sim = Simulation(network, **settings)
    result = sim.run(spec["duration_ms"])
    if sim.rank == 0:
        Path(spec["result"]).write_text(json.dumps(exchange_measurements(result)))
