"""Benchmarks of structure-aware simulation of multi-area models (docs/workloads/mam-benchmark.md):

    ranvier bench weak-scaling mam-benchmark --ranks 1,2,4 --repeats 3
    ranvier bench heterogeneity mam-benchmark --knob rate_sd --values 0,0.5,1 --ranks 2
    ranvier bench cycle-times mam-benchmark --ranks 2

Each compares two schemes on the same network, next to the predictions of theory.md (sections
1 and 2):
  conventional     round-robin placement, one exchange among all ranks every cycle;
  structure-aware  each area on its own rank (placement by-area), an exchange inside the area
                   group every cycle and one among all ranks every D cycles (exchange two-tier).
Like `ranvier bench exchange`, the command checks all its input first, then runs every
configuration as its own process, one at a time (runner.run_worker, worker kind
"areas"); rank 0 of the worker writes its measurements as JSON.
"""
from __future__ import annotations

import csv
import json
import math
import statistics
import tempfile
from pathlib import Path

import numpy as np

from ..io import config as cfgmod
from ..analysis import cycle_stats, theory
from ..cli.arguments import assignment, positive_float, positive_int, positive_int_list
from ..errors import ConfigError
from . import common, scaling
from .common import check_parameters, resolve_workload, say
from .runner import launch_prefix, run_worker

CONVENTIONAL, STRUCTURE_AWARE = "conventional", "structure-aware"
SCHEMES = (CONVENTIONAL, STRUCTURE_AWARE)
SCHEME_COLORS = {CONVENTIONAL: "C0", STRUCTURE_AWARE: "C3"}
KNOBS = ("area_size_sd", "rate_sd", "delay_ratio")
PHASES = cycle_stats.PHASES                 # deliver, update, collocate, communicate, synchronize
PHASE_COLORS = {"deliver": "#4c72b0", "update": "#55a868", "collocate": "#8172b2",
                "communicate": "#dd8452", "synchronize": "#c44e52"}
DEFAULT_DURATION_MS = 2000.0                # per run, when the workload is a model name
DEFAULT_MAX_LAG = 100                       # cycle-times: autocorrelation lags shown

WEAK_CSV, WEAK_JSON, WEAK_PNG = "weak_scaling.csv", "weak_scaling.json", "weak_scaling.png"
HETERO_CSV, HETERO_JSON, HETERO_PNG = "heterogeneity.csv", "heterogeneity.json", "heterogeneity.png"
CYCLES_CSV, CYCLES_NPZ, CYCLES_JSON, CYCLES_PNG = ("cycle_times.csv", "cycle_timers.npz",
                                                   "cycle_statistics.json", "cycle_times.png")
CYCLES_RUNS_CSV = "cycle_times_runs.csv"    # the two runs' summary rows (RUN_COLUMNS)

PHASE_COLUMNS = [f"{phase}_us_per_cycle" for phase in PHASES]
# One row per run. D: cycles between global exchanges (1 for the conventional scheme);
# lumped_D: cycles per lump in the cycle statistics (the structure-aware D for both schemes).
RUN_COLUMNS = [
    "ranks", "threads", "scheme", "exchange", "tier_exchange", "placement", "D", "lumped_D", "repeat",
    "neurons", "synapses", "K", "duration_ms", "cycles", "real_time_factor", "simulate_seconds",
    *PHASE_COLUMNS, "exchange_us_per_cycle", "delivery_ns_per_event", "segments_per_event",
    "segments_per_event_predicted", "synaptic_events",
    "exchanges_global", "exchanges_local", "bytes_per_cycle", "global_bytes_per_cycle",
    "cycle_mean_us", "cycle_cv", "lumped_cv", "cv_ratio", "autocorrelation_lag1", "cycle_wait_us",
]
HETERO_COLUMNS = ["knob", "value", *RUN_COLUMNS]
# Figures of a run that the summary gives as medians over repeats.
MEDIAN_FIELDS = [*PHASE_COLUMNS, "exchange_us_per_cycle", "delivery_ns_per_event", "segments_per_event",
                 "segments_per_event_predicted", "K", "exchanges_global",
                 "exchanges_local", "bytes_per_cycle", "global_bytes_per_cycle", "cycle_mean_us", "cycle_cv",
                 "lumped_cv", "cv_ratio", "autocorrelation_lag1", "cycle_wait_us"]


# -- input checks ---------------------------------------------------------------------------
def parse_knob_values(knob: str, values) -> list:
    """--values as given (a comma-separated string or a list): integers >= 1 for delay_ratio (D),
    numbers >= 0 for the standard deviations; each once, in the order given."""
    if knob not in KNOBS:
        raise ConfigError(f"--knob must be one of {', '.join(KNOBS)}, got {knob!r}")
    items = [v.strip() for v in values.split(",")] if isinstance(values, str) else list(values)
    if not items or any(v == "" for v in items):
        raise ConfigError(f"--values must be a comma-separated list of {knob} values such as "
                          f"{'1,2,5,10' if knob == 'delay_ratio' else '0,0.5,1'}, got {values!r}")
    parsed = []
    for item in items:
        if knob == "delay_ratio":
            try:
                value = int(str(item))
            except ValueError:
                value = 0
            if value < 1 or isinstance(item, bool):
                raise ConfigError(f"--values: delay_ratio (D) values must be integers >= 1 such as 1,2,5,10, "
                                  f"got {item!r}")
        else:
            try:
                value = float(item)
            except (TypeError, ValueError):
                value = -1.0
            if not (value >= 0 and math.isfinite(value)) or isinstance(item, bool):
                raise ConfigError(f"--values: {knob} values must be numbers >= 0 (a standard deviation), "
                                  f"got {item!r}")
        parsed.append(value)
    return list(dict.fromkeys(parsed))


def _check_strategy(flag: str, name: str | None) -> None:
    from ..core.simulation import STRATEGIES

    if name is not None and name not in STRATEGIES:
        raise ConfigError(f"{flag}: unknown strategy '{name}'; available: {', '.join(STRATEGIES)}")


def _base_config(workload: str, parameters: dict | None, reserved: dict, duration_ms, threads) -> cfgmod.RunConfig:
    """The workload with --set on top, checked: a multi-area model with an n_areas parameter,
    known parameter names only, none of those the benchmark sets itself (reserved: name -> why)."""
    from .. import models

    parameters = dict(parameters or {})
    cfg = resolve_workload(workload)
    known = models.defaults(cfg.model)
    if "n_areas" not in known:
        raise ConfigError(f"'{cfg.model}' has no 'n_areas' parameter: these benchmarks vary the number of areas "
                          f"with the ranks; use a multi-area model such as mam-benchmark")
    check_parameters(cfg, parameters, reserved)
    if duration_ms is None and workload in models.REGISTRY:
        duration_ms = DEFAULT_DURATION_MS
    cfg = cfgmod.override(cfg, parameters=parameters,
                          simulation={"duration_ms": duration_ms, "threads": threads or cfg.simulation["threads"] or 1})
    # The synchronize phase is the barrier before each exchange, and the study's schemes do not
    # overlap: both run with the barrier and without overlap, whatever a config file says
    # (bench/two_tier_overlap.py compares two-tier with and without overlap).
    cfg.simulation.update(barrier=True, overlap=False)
    return cfg


def _plan_point(cfg: cfgmod.RunConfig, overrides: dict, ranks: int, global_interval: int | None,
                where: str) -> dict:
    """One point of a benchmark (a rank count, a knob value): its network is built here (cheap: the
    engine draws the synapses later) to check everything the runs would only find out later."""
    from .. import models
    from ..core import placement as placements

    parameters = {**cfg.parameters, **overrides}
    threads, resolution = cfg.simulation["threads"], cfg.simulation["resolution_ms"]
    try:
        network = models.build(cfg.model, **parameters)
        bounds, owners = placements.segments(network, "by-area", ranks, resolution)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    cfgmod.check_simulation(cfg, network)          # the duration a whole number of steps, and so on
    fewest = min(sum(bounds[i + 1] - bounds[i] for i, o in enumerate(owners) if o == r) for r in range(ranks))
    if fewest < threads:
        raise ConfigError(f"{where}: the smallest area has {fewest} neuron(s) for {threads} threads; "
                          f"use fewer --threads or raise area_size")
    largest = max(1, network.largest_global_interval(resolution, round(network.min_delay_ms() / resolution)))
    # Without inter-area projections (one area) two-tier exchanges every cycle whatever is asked.
    inter_area = math.isfinite(network.min_inter_area_delay_ms())
    if global_interval is not None and inter_area and global_interval > largest:
        raise ConfigError(f"--global-interval {global_interval} is too long: with {where} the shortest inter-area "
                          f"delay is {network.min_inter_area_delay_ms():g} ms = {largest} cycle(s), and a spike held "
                          f"for the global exchange must still arrive in time; choose at most {largest}")
    D = global_interval if inter_area else None
    return {"ranks": ranks, "parameters": parameters, "global_interval": D, "lump_cycles": D or largest,
            "neurons": network.size, "cycle_ms": network.min_delay_ms()}


def _scheme_settings(scheme: str, conventional_exchange: str, tier_exchange: str | None, global_interval) -> dict:
    if scheme == CONVENTIONAL:
        return {"exchange": conventional_exchange, "placement": "round-robin", "global_interval": None}
    settings = {"exchange": "two-tier", "placement": "by-area", "global_interval": global_interval}
    if tier_exchange is not None:
        settings["tier_exchange"] = tier_exchange
    return settings


def _check_launch(rank_counts, threads: int):
    for r in rank_counts:
        launch_prefix(r, threads)                 # mpiexec is there for every rank count
    plt = common.pyplot()
    if plt is None:
        say("bench: matplotlib is not installed (pip install matplotlib): no plot will be drawn")
    return plt


# -- running --------------------------------------------------------------------------------
def _run_points(cfg, points: list[dict], repeats: int, conventional_exchange: str, tier_exchange,
                csv_path: Path, columns: list[str], timers_dir: Path | None = None) -> list[dict]:
    """Runs both schemes at every point `repeats` times, one process at a time; one CSV row per
    run, written as it finishes (finished runs survive a later failure)."""
    threads = cfg.simulation["threads"]
    base = {"kind": "areas", "model": cfg.model, "simulation": cfg.simulation_kwargs(),
            "duration_ms": float(cfg.simulation["duration_ms"])}
    runs = []
    with tempfile.TemporaryDirectory(prefix="ranvier-bench-") as tmp, open(csv_path, "w", newline="") as f:
        rows = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        rows.writeheader()
        # Repeats outermost, as in `bench exchange`: a slow drift of the machine spreads over all
        # configurations instead of favouring the ones measured first.
        for repeat in range(1, repeats + 1):
            for point in points:
                for scheme in SCHEMES:
                    settings = _scheme_settings(scheme, conventional_exchange, tier_exchange, point["global_interval"])
                    spec = {**base, "parameters": point["parameters"], "scheme": scheme,
                            "simulation": {**base["simulation"], **settings},
                            # a chosen D lumps the conventional run's cycles too (automatic: the same)
                            "lump_cycles": point["global_interval"]}
                    if timers_dir is not None:
                        spec["timers"] = str(timers_dir / f"{scheme}-{point['ranks']}-{repeat}.npy")
                    label = f"{point['label']}, {scheme}, repeat {repeat}/{repeats}"
                    run = {**run_worker(point["ranks"], threads, spec, Path(tmp), label), **point["extra"],
                           "repeat": repeat}
                    rows.writerow(run)
                    f.flush()
                    runs.append(run)
                    say(f"bench: {label}: real-time factor {run['real_time_factor']:.3f}, synchronize "
                         f"{run['synchronize_us_per_cycle']:.2f} µs/cycle")
    return runs


def area_measurements(result, scheme: str) -> dict:
    """The figures of one run from its Result on rank 0: per-phase time per cycle (mean over ranks
    and cycles), exchange counts and traffic, delivery cost, cycle-time statistics."""
    timers = result.cycle_timers                      # [rank, cycle, phase], seconds
    cycles = timers.shape[1]
    counters, ranks = result.counters, result.ranks
    neurons = result.network.size
    per_cycle = {f"{phase}_us_per_cycle": float(timers[:, :, i].mean() * 1e6) for i, phase in enumerate(PHASES)}
    # Delay segments read per synaptic event: each starts an irregular access (Result.theory)
    segments = (result.theory() or {}).get("delay_segments") or {}
    out = {
        "ranks": ranks, "threads": result.threads, "scheme": scheme, "exchange": result.exchange,
        "tier_exchange": result.tier_exchange if result.global_interval else "", "placement": result.placement,
        "D": result.global_interval or 1, "lumped_D": result.lump_cycles,
        "neurons": neurons, "synapses": result.synapses, "K": result.synapses / neurons if neurons else 0.0,
        "duration_ms": result.duration_ms, "cycles": cycles, "cycle_ms": result.duration_ms / cycles,
        "real_time_factor": result.real_time_factor, "simulate_seconds": result.simulate_seconds,
        **per_cycle,
        "exchange_us_per_cycle": per_cycle["communicate_us_per_cycle"] + per_cycle["synchronize_us_per_cycle"],
        "delivery_ns_per_event": result.delivery_ns_per_event(),
        "segments_per_event": segments.get("measured_per_event"),
        "segments_per_event_predicted": segments.get("predicted_per_event"),
        "synaptic_events": counters["synaptic_events_recurrent"],
        # the engine counts exchanges on every rank
        "exchanges_global": counters["exchanges_global"] // ranks,
        "exchanges_local": counters["exchanges_local"] // ranks,
        "bytes_per_cycle": counters["bytes_sent"] / cycles,
        "global_bytes_per_cycle": counters["global_bytes_sent"] / cycles,
    }
    # Where the load sits: per rank (compute per cycle, spikes, events) and per population (spikes)
    per_rank = result.counters_per_rank
    compute = timers[:, :, [PHASES.index(p) for p in ("deliver", "update", "collocate")]].sum(axis=2)
    # spikes per population: every spike of the run (stamped (0, T], which rates()' [0, T) would cut at T)
    ids = result.spike_ids if result.record_spikes is True else None
    counts = (np.bincount(result.recording.population_of(ids), minlength=len(result.population_sizes))
              if ids is not None else None)
    out.update({
        "rank_compute_us": (compute.mean(axis=1) * 1e6).tolist(),
        "rank_spikes": [int(x) for x in per_rank["spikes_emitted"]],
        "rank_events": [int(x) for x in per_rank["synaptic_events_recurrent"]],
        "population_spikes": dict(zip(result.population_names, counts.tolist())) if counts is not None else None,
    })
    stats = result.cycle_statistics()                 # None when the run is too short
    if stats is None:
        return {**out, **{key: None for key in ("cycle_mean_us", "cycle_cv", "lumped_cv", "cv_ratio",
                                                "autocorrelation_lag1", "cycle_wait_us", "autocorrelation",
                                                "histogram")}, "transient_cycles": 0}
    pooled, acf = stats["pooled"], stats["autocorrelation"]
    return {**out, "cycle_mean_us": pooled["mean_s"] * 1e6, "cycle_cv": pooled["cv"],
            "lumped_cv": pooled["lumped_cv"], "cv_ratio": pooled["cv_ratio"],
            "autocorrelation_lag1": acf[0] if acf else None, "autocorrelation": acf,
            "cycle_wait_us": stats["measured"]["cycle_wait_s"] * 1e6 if ranks > 1 else None,
            "transient_cycles": stats["transient_cycles"],
            "histogram": {kind: {"edges_s": h["edges_s"], "counts": h["counts"]}
                          for kind, h in stats["histogram"].items()}}


def worker(spec: dict) -> None:
    """One run of the worker process (ranvier.bench WORKERS['areas'])."""
    from .. import models
    from ..core.simulation import Simulation

    network = models.build(spec["model"], **spec["parameters"])
    sim = Simulation(network, **spec["simulation"])
    result = sim.run(spec["duration_ms"])
    if sim.rank != 0:
        return
    if spec.get("lump_cycles"):
        # lump both schemes' cycles by the D of the structure-aware run, so that their
        # statistics compare like with like
        result.lump_cycles = spec["lump_cycles"]
    if spec.get("timers"):
        np.save(spec["timers"], result.cycle_timers)
    Path(spec["result"]).write_text(json.dumps(area_measurements(result, spec["scheme"])))


# -- summaries ------------------------------------------------------------------------------
def _median(group: list[dict], key: str):
    values = [run[key] for run in group if run.get(key) is not None]
    return statistics.median(values) if values else None


def _ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def summarize_runs(runs: list[dict], key: str = "ranks") -> list[dict]:
    """One entry per (key, scheme): medians over repeats, the minimum real-time factor, the mean
    autocorrelation over repeats, and the histograms of the run closest to the median."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((run[key], run["scheme"]), []).append(run)
    summary = []
    for (value, scheme), group in groups.items():
        rtf = [run["real_time_factor"] for run in group]
        entry = {key: value, "scheme": scheme, "ranks": group[0]["ranks"], "threads": group[0]["threads"],
                 "D": group[0]["D"], "lumped_D": group[0]["lumped_D"], "repeats": len(group),
                 "rtf_min": min(rtf), "rtf_median": statistics.median(rtf),
                 **{name: _median(group, name) for name in MEDIAN_FIELDS}}
        series = [run["autocorrelation"] for run in group if run.get("autocorrelation")]
        if series:
            lags = min(map(len, series))
            entry["autocorrelation"] = np.mean([s[:lags] for s in series], axis=0).tolist()
        else:
            entry["autocorrelation"] = None
        typical = min(group, key=lambda run: abs(run["real_time_factor"] - entry["rtf_median"]))
        entry["histogram"] = typical.get("histogram")
        summary.append(entry)
    summary.sort(key=lambda s: (s[key], SCHEMES.index(s["scheme"])))
    return summary


def compare_schemes(summary: list[dict], key: str = "ranks") -> list[dict]:
    """Per value of key with both schemes on several ranks: structure-aware against conventional,
    measured next to theory.md. Synchronisation (section 1): predicted ratio 1/sqrt(D), and with
    the conventional run's serial correlation (lags 1..D-1). Delivery (section 2): the fraction
    of irregular accesses f_conv and f_sa for K = synapses / neurons, M ranks, T threads."""
    out = []
    for value in dict.fromkeys(s[key] for s in summary):
        by_scheme = {s["scheme"]: s for s in summary if s[key] == value}
        conv, sa = by_scheme.get(CONVENTIONAL), by_scheme.get(STRUCTURE_AWARE)
        if conv is None or sa is None or sa["ranks"] < 2:
            continue
        D = sa["D"]
        rho = conv["autocorrelation"]
        correlated = theory.correlated_sync_ratio(D, rho[:D - 1]) if rho is not None and len(rho) >= D - 1 else None
        K = conv["K"]
        access = theory.irregular_access(K, sa["ranks"], sa["threads"]) if K else {"f_conv": None, "f_sa": None}
        out.append({
            key: value, "ranks": sa["ranks"], "threads": sa["threads"], "D": D, "K": K,
            "sync_conv_us": conv["synchronize_us_per_cycle"], "sync_sa_us": sa["synchronize_us_per_cycle"],
            "sync_ratio": _ratio(sa["synchronize_us_per_cycle"], conv["synchronize_us_per_cycle"]),
            "sync_ratio_predicted": 1.0 / math.sqrt(D), "sync_ratio_predicted_correlated": correlated,
            "exchange_conv_us": conv["exchange_us_per_cycle"], "exchange_sa_us": sa["exchange_us_per_cycle"],
            "exchange_ratio": _ratio(sa["exchange_us_per_cycle"], conv["exchange_us_per_cycle"]),
            "delivery_conv_ns": conv["delivery_ns_per_event"], "delivery_sa_ns": sa["delivery_ns_per_event"],
            "delivery_ratio": _ratio(sa["delivery_ns_per_event"], conv["delivery_ns_per_event"]),
            "segments_conv": conv["segments_per_event"], "segments_sa": sa["segments_per_event"],
            "segments_conv_predicted": conv["segments_per_event_predicted"],
            "segments_sa_predicted": sa["segments_per_event_predicted"],
            "f_conv": access["f_conv"], "f_sa": access["f_sa"],
            "f_ratio": _ratio(access["f_sa"], access["f_conv"]),
            "rtf_conv": conv["rtf_median"], "rtf_sa": sa["rtf_median"],
            "speedup": _ratio(conv["rtf_median"], sa["rtf_median"]),
        })
    return out


# -- text tables ----------------------------------------------------------------------------
def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _label(value) -> str:
    """A table's first column: a number (ranks, a knob's value) or a name (a configuration)."""
    return value if isinstance(value, str) else format(value, "g")


def format_phase_table(summary: list[dict], key: str = "ranks", label: str | None = None) -> str:
    """Real-time factor and time per cycle of each phase (µs), per configuration."""
    return common.text_table(*phase_table(summary, key, label))


def phase_table(summary: list[dict], key: str = "ranks", label: str | None = None) -> tuple[list, list]:
    header = [label or key, "scheme", "RTF min", "RTF median", "deliver", "update", "collocate", "communicate",
              "synchronize", "comm+sync", "deliver ns/event"]
    rows = [[_label(s[key]), s["scheme"], f"{s['rtf_min']:.3f}", f"{s['rtf_median']:.3f}",
             *(_fmt(s[column], ".2f") for column in PHASE_COLUMNS), _fmt(s["exchange_us_per_cycle"], ".2f"),
             _fmt(s["delivery_ns_per_event"], ".2f")] for s in summary]
    return header, rows


def format_cycle_table(summary: list[dict], key: str = "ranks", label: str | None = None) -> str:
    """Exchanges per rank and the statistics of the cycle times (deliver + update + collocate)."""
    return common.text_table(*cycle_table(summary, key, label))


def cycle_table(summary: list[dict], key: str = "ranks", label: str | None = None) -> tuple[list, list]:
    header = [label or key, "scheme", "D", "global exch.", "local exch.", "cycle mean µs", "CV",
              "lumped CV", "CV ratio", "acf lag 1", "wait µs/cycle"]
    rows = [[_label(s[key]), s["scheme"], f"{s['D']}", _fmt(s["exchanges_global"], ".0f"),
             _fmt(s["exchanges_local"], ".0f"), _fmt(s["cycle_mean_us"], ".2f"), _fmt(s["cycle_cv"], ".3f"),
             _fmt(s["lumped_cv"], ".3f"), _fmt(s["cv_ratio"], ".3f"), _fmt(s["autocorrelation_lag1"], "+.3f"),
             _fmt(s["cycle_wait_us"], ".2f")] for s in summary]
    return header, rows


def format_comparison_table(comparison: list[dict], key: str = "ranks", label: str | None = None) -> str:
    """Structure-aware / conventional: synchronisation and exchange, measured next to predicted."""
    header = [label or key, "D", "sync conv µs", "sync SA µs", "sync ratio", "1/sqrt(D)", "with acf",
              "comm+sync ratio", "RTF conv/SA"]
    rows = [[_label(c[key]), f"{c['D']}", _fmt(c["sync_conv_us"], ".2f"), _fmt(c["sync_sa_us"], ".2f"),
             _fmt(c["sync_ratio"], ".3f"), f"{c['sync_ratio_predicted']:.3f}",
             _fmt(c["sync_ratio_predicted_correlated"], ".3f"), _fmt(c["exchange_ratio"], ".3f"),
             _fmt(c["speedup"], ".3f")] for c in comparison]
    return common.text_table(header, rows)


def format_delivery_table(comparison: list[dict], key: str = "ranks", label: str | None = None) -> str:
    """Spike delivery of both schemes next to the irregular-access model: the fractions f of
    theory.md 2, and Ranvier's own count of delay segments per event, measured (predicted)."""
    header = [label or key, "deliver ns conv", "deliver ns SA", "ratio", "f_conv", "f_sa", "f_sa/f_conv",
              "segments/event conv", "segments/event SA"]

    def measured_predicted(measured, predicted):
        return _fmt(measured, ".4f") + ("" if predicted is None else f" ({predicted:.4f})")
    rows = [[_label(c[key]), _fmt(c["delivery_conv_ns"], ".2f"), _fmt(c["delivery_sa_ns"], ".2f"),
             _fmt(c["delivery_ratio"], ".3f"), _fmt(c["f_conv"], ".4f"), _fmt(c["f_sa"], ".4f"),
             _fmt(c["f_ratio"], ".3f"), measured_predicted(c["segments_conv"], c["segments_conv_predicted"]),
             measured_predicted(c["segments_sa"], c["segments_sa_predicted"])] for c in comparison]
    return common.text_table(header, rows)


def _print_comparison(comparison: list[dict], key: str = "ranks", label: str | None = None) -> None:
    if not comparison:
        return
    print("\nstructure-aware (SA) against conventional (conv): synchronize per cycle and ratios SA / conv; "
          "predicted 1/sqrt(D) for independent cycle times, 'with acf' with the conventional run's measured "
          "autocorrelation at lags 1..D-1 (theory.md 1)")
    print(format_comparison_table(comparison, key, label))
    print("\nspike delivery: ns per synaptic event; f = predicted fraction of irregular accesses for "
          "K = synapses / neurons (theory.md 2); delay segments read per event, measured (predicted)")
    print(format_delivery_table(comparison, key, label))


# -- plots ----------------------------------------------------------------------------------
def _histogram_panel(ax, entries: list[tuple[str, dict | None]], xlabel: str, title: str) -> None:
    """Density step histograms (each scheme on its own bins), times in µs. Log scale: the slow
    tail is what the slowest rank of a cycle is drawn from."""
    for scheme, hist in entries:
        if not hist:
            continue
        edges = np.asarray(hist["edges_s"]) * 1e6
        counts = np.asarray(hist["counts"], dtype=float)
        density = counts / max(counts.sum(), 1.0) / np.diff(edges)
        ax.stairs(np.where(density > 0, density, np.nan), edges, color=SCHEME_COLORS[scheme], label=scheme,
                  linewidth=1.5)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density (1/µs, log scale)")
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="small")


def _save(plt, fig, path: Path, title: str) -> None:
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_weak_scaling(plt, summary: list[dict], path: Path, title: str) -> None:
    """(a) real-time factor against ranks, both schemes, the real-time line at 1; (b) phases per
    cycle stacked, conventional and structure-aware (hatched) side by side for each rank count;
    (c, d) histograms of cycle and lumped cycle times at the largest rank count."""
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    (rtf_ax, phase_ax), (cycle_ax, lumped_ax) = axes
    rank_counts = sorted({s["ranks"] for s in summary})
    entry = {(s["ranks"], s["scheme"]): s for s in summary}
    for scheme in SCHEMES:
        mine = [entry[(r, scheme)] for r in rank_counts if (r, scheme) in entry]
        x = [s["ranks"] for s in mine]
        rtf_ax.plot(x, [s["rtf_median"] for s in mine], "o-", color=SCHEME_COLORS[scheme], label=f"{scheme} (median)")
        rtf_ax.plot(x, [s["rtf_min"] for s in mine], "_", color=SCHEME_COLORS[scheme], markersize=14)
    rtf_ax.axhline(1.0, color="gray", linestyle="--", linewidth=1, label="real time")
    rtf_ax.set_xticks(rank_counts)
    rtf_ax.set_ylim(bottom=0)
    rtf_ax.set_xlabel("ranks (= areas)")
    rtf_ax.set_ylabel("real-time factor (wall s per simulated s)")
    rtf_ax.set_title("(a) weak scaling", fontsize="medium")
    rtf_ax.legend(fontsize="small")

    width = 0.38
    for i, r in enumerate(rank_counts):
        for j, scheme in enumerate(SCHEMES):
            s = entry.get((r, scheme))
            if s is None:
                continue
            bottom = 0.0
            for phase, column in zip(PHASES, PHASE_COLUMNS):
                phase_ax.bar(i + (j - 0.5) * width, s[column], width * 0.95, bottom=bottom, color=PHASE_COLORS[phase],
                             hatch="//" if scheme == STRUCTURE_AWARE else None, edgecolor="white", linewidth=0.5)
                bottom += s[column]
    phase_ax.set_xticks(range(len(rank_counts)), [str(r) for r in rank_counts])
    phase_ax.set_xlabel("ranks (left bar conventional, right bar structure-aware)")
    phase_ax.set_ylabel("µs per cycle (mean over ranks, median over repeats)")
    phase_ax.set_title("(b) phases per cycle", fontsize="medium")
    handles = [Patch(color=PHASE_COLORS[p], label=p) for p in reversed(PHASES)]
    handles.append(Patch(facecolor="white", edgecolor="gray", hatch="//", label=STRUCTURE_AWARE))
    phase_ax.legend(handles=handles, fontsize="small")

    largest = rank_counts[-1]
    pair = [(scheme, entry[(largest, scheme)]) for scheme in SCHEMES if (largest, scheme) in entry]
    D = max(s["lumped_D"] for _, s in pair)
    _histogram_panel(cycle_ax, [(scheme, (s["histogram"] or {}).get("cycle")) for scheme, s in pair],
                     "cycle time (deliver + update + collocate), µs", f"(c) cycle times, {largest} rank(s)")
    _histogram_panel(lumped_ax, [(scheme, (s["histogram"] or {}).get("lumped")) for scheme, s in pair],
                     f"lumped cycle time (sum of D = {D} cycles), µs", f"(d) lumped cycle times, {largest} rank(s)")
    _save(plt, fig, path, title)


def plot_heterogeneity(plt, summary: list[dict], comparison: list[dict], knob: str, path: Path, title: str) -> None:
    """Against the knob value, both schemes: (a) synchronize per cycle, (b) communicate +
    synchronize per cycle, (c) real-time factor; (d) the synchronisation ratio, measured and
    predicted."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5))
    panels = [("synchronize_us_per_cycle", "synchronize, µs per cycle", "(a) synchronisation"),
              ("exchange_us_per_cycle", "communicate + synchronize, µs per cycle", "(b) communication"),
              ("rtf_median", "real-time factor (median)", "(c) real-time factor")]
    for ax, (column, ylabel, panel_title) in zip(axes.flat, panels):
        for scheme in SCHEMES:
            mine = [s for s in summary if s["scheme"] == scheme]
            ax.plot([s["value"] for s in mine], [s[column] for s in mine], "o-", color=SCHEME_COLORS[scheme],
                    label=scheme)
        ax.set_ylabel(ylabel)
        ax.set_title(panel_title, fontsize="medium")
        ax.set_ylim(bottom=0)
    axes[1][0].axhline(1.0, color="gray", linestyle="--", linewidth=1, label="real time")
    ratio_ax = axes[1][1]
    x = [c["value"] for c in comparison]
    ratio_ax.plot(x, [c["sync_ratio"] for c in comparison], "o-", color="k", label="measured")
    ratio_ax.plot(x, [c["sync_ratio_predicted"] for c in comparison], "s--", color="gray", label="predicted 1/sqrt(D)")
    ratio_ax.plot(x, [c["sync_ratio_predicted_correlated"] for c in comparison], "^:", color="gray",
                  label="predicted, measured autocorrelation")
    ratio_ax.set_ylabel("synchronize: structure-aware / conventional")
    ratio_ax.set_title("(d) synchronisation ratio", fontsize="medium")
    ratio_ax.set_ylim(bottom=0)
    values = [s["value"] for s in summary]
    for ax in axes.flat:
        ax.set_xlabel(f"{knob} (D)" if knob == "delay_ratio" else knob)
        if knob == "delay_ratio" and max(values) >= 10 * min(values):     # D in 1, 2, 5, 10, 20, ...
            ax.set_xscale("log")
            ax.set_xticks(sorted(set(values)), [f"{v:g}" for v in sorted(set(values))])
            ax.minorticks_off()
        ax.legend(fontsize="small")
    _save(plt, fig, path, title)


def _log_histogram_panel(ax, samples: dict, xlabel: str, title: str) -> None:
    """Fractions of samples (µs) in shared log-spaced bins, both axes logarithmic: the body of the
    distribution and its slow tail in one view, the schemes on the same bins."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    values = np.concatenate([np.ravel(v) for v in samples.values()]) * 1e6
    positive = values[values > 0]
    low, high = (positive.min(), positive.max()) if positive.size else (1e-3, 1.0)
    edges = np.geomspace(low, high * (1 + 1e-9) if high > low else low * 2, 101)
    for scheme, v in samples.items():
        counts = np.histogram(np.ravel(v) * 1e6, bins=edges)[0].astype(float)
        fraction = counts / max(np.ravel(v).size, 1)
        ax.stairs(np.where(fraction > 0, fraction, np.nan), edges, color=SCHEME_COLORS[scheme], label=scheme,
                  linewidth=1.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))   # 10, 20, 50, 100 µs: also on narrow ranges
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of cycles per bin")
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="small")


def plot_cycle_times(plt, times: dict, stats: dict, path: Path, title: str) -> None:
    """Histograms of cycle times and of lumped cycle times, conventional against structure-aware,
    and each scheme's autocorrelation against lag. times: scheme -> [ranks, cycles] compute times
    (s) after the transient; stats: scheme -> cycle_stats.summarize of the same cycles."""
    fig, (cycle_ax, lumped_ax, acf_ax) = plt.subplots(1, 3, figsize=(16, 4.8))
    D = max(s["D"] for s in stats.values())
    _log_histogram_panel(cycle_ax, times, "cycle time (deliver + update + collocate), µs", "(a) cycle times")
    _log_histogram_panel(lumped_ax, {scheme: cycle_stats.lumped(t, D) for scheme, t in times.items()},
                         f"lumped cycle time (sum of D = {D} cycles), µs", "(b) lumped cycle times")
    for scheme, s in stats.items():
        acf = s["autocorrelation"]
        acf_ax.plot(range(1, len(acf) + 1), acf, color=SCHEME_COLORS[scheme], label=scheme)
    acf_ax.axhline(0.0, color="gray", linewidth=1)
    if D > 1:
        acf_ax.axvline(D - 1, color="gray", linestyle=":", linewidth=1, label=f"lag D - 1 = {D - 1}")
    acf_ax.set_xlabel("lag (cycles)")
    acf_ax.set_ylabel("autocorrelation (mean over ranks)")
    acf_ax.set_title("(c) serial correlation of cycle times", fontsize="medium")
    acf_ax.legend(fontsize="small")
    _save(plt, fig, path, title)


# -- the commands ---------------------------------------------------------------------------
def _describe(cfg, what: str) -> str:
    return (f"{cfg.model}, {what}, {cfg.simulation['threads']} thread(s) per rank, "
            f"{float(cfg.simulation['duration_ms']):g} ms simulated per run")


def _finish(plt, out: Path, written: list[str], draw) -> None:
    if plt is not None:
        draw(plt)
    print(f"\nresults written to {', '.join(str(out / name) for name in written if (out / name).exists())}")


def weak_scaling_bench(workload: str, ranks: list[int], threads: int | list[int] | None = None, duration_ms=None,
                       repeats: int = 3, parameters: dict | None = None, conventional_exchange: str | None = None,
                       tier_exchange: str | None = None, global_interval: int | None = None, out=None,
                       **generic) -> Path:
    """One area per rank (n_areas = ranks, area_size fixed): both schemes at each rank count,
    `repeats` times; prints tables; writes CSV, JSON and plot into out.

    A workload whose model has no n_areas goes to the generic weak scaling of
    ranvier.bench.scaling (size = per_core x ranks x threads); generic: its own settings
    (per_core, exchange, energy, baseline_s), refused here for multi-area models."""
    from .. import models

    if "n_areas" not in models.defaults(resolve_workload(workload).model):
        for flag, value in (("--conventional-exchange", conventional_exchange), ("--tier-exchange", tier_exchange),
                            ("--global-interval", global_interval)):
            if value is not None:
                raise ConfigError(f"{flag} applies to multi-area models (with n_areas) only; "
                                  f"'{workload}' runs the generic weak scaling")
        if duration_ms is None and workload in models.REGISTRY:
            duration_ms = DEFAULT_DURATION_MS        # as for the multi-area models (--duration-ms help)
        return scaling.weak_scaling_bench(
            workload, ranks, threads=[threads] if isinstance(threads, int) else threads, duration_ms=duration_ms,
            repeats=repeats, parameters=parameters, out=out, **generic)
    for name, value in generic.items():
        if value is not None:
            raise ConfigError(f"--{name.replace('_', '-')} applies to the generic weak scaling of models without "
                              f"n_areas; '{workload}' runs one area per rank")
    if isinstance(threads, (list, tuple)):
        if len(threads) > 1:
            raise ConfigError(f"--threads: the multi-area weak scaling takes one thread count per rank, "
                              f"got {','.join(map(str, threads))}")
        threads = threads[0] if threads else None
    conventional_exchange = conventional_exchange or "allgather"
    _check_strategy("--conventional-exchange", conventional_exchange)
    _check_strategy("--tier-exchange", tier_exchange)
    if not ranks:
        raise ConfigError("--ranks: give at least one rank count, for example 1,2,4")
    cfg = _base_config(workload, parameters, {"n_areas": "weak scaling sets n_areas = ranks (one area per rank); "
                                                         "leave it out and choose --ranks"}, duration_ms, threads)
    rank_counts = sorted(set(ranks))
    points = [{**_plan_point(cfg, {"n_areas": r}, r, global_interval, f"--ranks {r}"),
               "label": f"{r} rank(s)", "extra": {}} for r in rank_counts]
    plt = _check_launch(rank_counts, cfg.simulation["threads"])
    out = common.output_folder(out, "weak-scaling", WEAK_CSV)

    area = f"{points[0]['neurons'] // rank_counts[0]:,} neurons per area"
    say(f"bench: {_describe(cfg, area)}; {len(points) * len(SCHEMES)} configuration(s) x {repeats} repeat(s)")
    out.mkdir(parents=True, exist_ok=True)
    runs = _run_points(cfg, points, repeats, conventional_exchange, tier_exchange, out / WEAK_CSV, RUN_COLUMNS)
    summary = summarize_runs(runs, "ranks")
    comparison = compare_schemes(summary, "ranks")

    print(f"{_describe(cfg, area)}, one area per rank, {repeats} repeat(s)")
    _print_tables(summary, comparison)
    settings = {"workload": workload, "model": cfg.model, "parameters": cfg.parameters, "simulation": cfg.simulation,
                "ranks": rank_counts, "repeats": repeats, "conventional_exchange": conventional_exchange,
                "tier_exchange": tier_exchange, "global_interval": global_interval}
    (out / WEAK_JSON).write_text(json.dumps({"settings": settings, "runs": runs, "summary": summary,
                                             "comparison": comparison}, indent=1) + "\n")
    _finish(plt, out, [WEAK_CSV, WEAK_JSON, WEAK_PNG], lambda plt: plot_weak_scaling(
        plt, summary, out / WEAK_PNG, f"{cfg.model}: weak scaling, one area per rank"))
    return out


def _print_tables(summary, comparison, *key) -> None:
    """The phase, cycle-time and comparison tables; key: (summary key, its column label)."""
    print("\nphases: µs per cycle, mean over ranks, median over repeats")
    print(format_phase_table(summary, *key))
    print("\nexchanges per rank; cycle times (deliver + update + collocate) pooled over ranks, lumped over D cycles")
    print(format_cycle_table(summary, *key))
    _print_comparison(comparison, *key)


def heterogeneity_bench(workload: str, knob: str, values, ranks: int = 2, threads: int | None = None,
                        duration_ms=None, repeats: int = 3, parameters: dict | None = None,
                        conventional_exchange: str = "allgather", tier_exchange: str | None = None, out=None) -> Path:
    """n_areas = ranks; both schemes at each value of one heterogeneity knob (for delay_ratio the
    value is D, which also sets the two-tier global interval); prints tables; writes CSV, JSON, plot."""
    from .. import models

    values = parse_knob_values(knob, values)
    _check_strategy("--conventional-exchange", conventional_exchange)
    _check_strategy("--tier-exchange", tier_exchange)
    if ranks < 2:
        raise ConfigError(f"--ranks must be at least 2 (got {ranks}): synchronisation needs several ranks")
    cfg = _base_config(workload, parameters,
                       {"n_areas": f"this benchmark sets n_areas = --ranks ({ranks}); leave it out",
                        knob: f"it is the knob varied (--knob {knob}); give its values with --values"},
                       duration_ms, threads)
    if knob not in models.defaults(cfg.model):
        raise ConfigError(f"--knob {knob}: '{cfg.model}' has no such parameter")
    points = [{**_plan_point(cfg, {"n_areas": ranks, knob: v}, ranks, None, f"--values {v:g} ({knob})"),
               "label": f"{knob} = {v:g}", "extra": {"knob": knob, "value": v}} for v in values]
    plt = _check_launch([ranks], cfg.simulation["threads"])
    out = common.output_folder(out, "heterogeneity", HETERO_CSV)

    layout = f"{ranks} areas on {ranks} ranks"
    say(f"bench: {_describe(cfg, layout)}; {knob} in {values}; "
         f"{len(points) * len(SCHEMES)} configuration(s) x {repeats} repeat(s)")
    out.mkdir(parents=True, exist_ok=True)
    runs = _run_points(cfg, points, repeats, conventional_exchange, tier_exchange, out / HETERO_CSV, HETERO_COLUMNS)
    summary = summarize_runs(runs, "value")
    comparison = compare_schemes(summary, "value")

    print(f"{_describe(cfg, layout)}, {repeats} repeat(s); knob {knob}")
    _print_tables(summary, comparison, "value", knob)
    settings = {"workload": workload, "model": cfg.model, "parameters": cfg.parameters, "simulation": cfg.simulation,
                "knob": knob, "values": values, "ranks": ranks, "repeats": repeats,
                "conventional_exchange": conventional_exchange, "tier_exchange": tier_exchange}
    (out / HETERO_JSON).write_text(json.dumps({"settings": settings, "runs": runs, "summary": summary,
                                               "comparison": comparison}, indent=1) + "\n")
    _finish(plt, out, [HETERO_CSV, HETERO_JSON, HETERO_PNG], lambda plt: plot_heterogeneity(
        plt, summary, comparison, knob, out / HETERO_PNG, f"{cfg.model}: heterogeneity ({knob}), {ranks} ranks"))
    return out


def cycle_times_bench(workload: str, ranks: int = 2, threads: int | None = None, duration_ms=None,
                      parameters: dict | None = None, conventional_exchange: str = "allgather",
                      tier_exchange: str | None = None, global_interval: int | None = None,
                      max_lag: int | None = None, out=None) -> Path:
    """One run of each scheme (n_areas = ranks); writes every rank's per-cycle times (CSV of compute
    times, NPZ of all phases), their statistics (JSON) and a figure; prints cycle_stats tables."""
    _check_strategy("--conventional-exchange", conventional_exchange)
    _check_strategy("--tier-exchange", tier_exchange)
    cfg = _base_config(workload, parameters, {"n_areas": f"this benchmark sets n_areas = --ranks ({ranks}); "
                                                         f"leave it out"}, duration_ms, threads)
    point = {**_plan_point(cfg, {"n_areas": ranks}, ranks, global_interval, f"--ranks {ranks}"),
             "label": f"{ranks} rank(s)", "extra": {}}
    # cycle_stats needs 2 D + 8 cycles after the transient (Result.cycle_statistics skips at most 10 %)
    cycles = round(float(cfg.simulation["duration_ms"]) / point["cycle_ms"])
    needed = math.ceil((2 * point["lump_cycles"] + 8) / 0.9)
    if cycles < needed:
        raise ConfigError(f"--duration-ms {float(cfg.simulation['duration_ms']):g} gives {cycles} cycles, too few for "
                          f"cycle statistics with D = {point['lump_cycles']}; use at least "
                          f"{needed * point['cycle_ms']:g} ms")
    plt = _check_launch([ranks], cfg.simulation["threads"])
    out = common.output_folder(out, "cycle-times", CYCLES_CSV)

    layout = f"{ranks} areas on {ranks} ranks"
    say(f"bench: {_describe(cfg, layout)}; one run of each scheme")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ranvier-timers-") as tmp:
        runs = _run_points(cfg, [point], 1, conventional_exchange, tier_exchange, out / CYCLES_RUNS_CSV, RUN_COLUMNS,
                           timers_dir=Path(tmp))
        timers = {run["scheme"]: np.load(Path(tmp) / f"{run['scheme']}-{ranks}-1.npy") for run in runs}
    D = next(run["lumped_D"] for run in runs if run["scheme"] == STRUCTURE_AWARE)
    transient = max(run["transient_cycles"] for run in runs)
    cycles_left = min(t.shape[1] for t in timers.values()) - transient
    lags = max_lag if max_lag is not None else max(D - 1, min(DEFAULT_MAX_LAG, cycles_left // 4))
    stats = {scheme: cycle_stats.summarize(t, D=D, transient_cycles=transient, max_lag=min(lags, cycles_left - 1))
             for scheme, t in timers.items()}

    write_cycle_times_csv(out / CYCLES_CSV, timers)
    np.savez_compressed(out / CYCLES_NPZ, phases=np.array(PHASES), D=D, transient_cycles=transient,
                        cycle_ms=runs[0]["cycle_ms"], **{scheme.replace("-", "_"): t for scheme, t in timers.items()})
    (out / CYCLES_JSON).write_text(json.dumps({"runs": runs, "statistics": stats}, indent=1) + "\n")

    print(f"{_describe(cfg, layout)}; cycle times skip the first {transient} cycles")
    for scheme in SCHEMES:
        print(f"\n{scheme}")
        print(cycle_stats.format_table(stats[scheme]))
    summary = summarize_runs(runs, "ranks")
    print("\nphases: µs per cycle, mean over ranks")
    print(format_phase_table(summary))
    _print_comparison(compare_schemes(summary, "ranks"))
    compute = {scheme: cycle_stats.cycle_times(t)[:, transient:] for scheme, t in timers.items()}
    _finish(plt, out, [CYCLES_CSV, CYCLES_NPZ, CYCLES_JSON, CYCLES_RUNS_CSV, CYCLES_PNG], lambda plt: plot_cycle_times(
        plt, compute, stats, out / CYCLES_PNG, f"{cfg.model}: cycle times on {ranks} rank(s), D = {D}"))
    return out


def write_cycle_times_csv(path: Path, timers: dict) -> None:
    """One row per scheme, rank and cycle: the compute time (deliver + update + collocate), µs."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["scheme", "rank", "cycle", "compute_us"])
        for scheme, t in timers.items():
            times = cycle_stats.cycle_times(t) * 1e6
            for rank, row in enumerate(times):
                writer.writerows((scheme, rank, cycle, f"{value:.4f}") for cycle, value in enumerate(row))


# -- the command line -----------------------------------------------------------------------
SCHEMES_TEXT = ("Conventional: round-robin placement, one exchange among all ranks every cycle. Structure-aware: "
                "each area on its own rank (by-area), exchange two-tier (inside the area every cycle, among all "
                "ranks every D cycles).")


def add_parser(benches, exchanges) -> None:
    """Registers `ranvier bench weak-scaling`, `heterogeneity` and `cycle-times`."""
    strategies = [e for e in exchanges if e != "two-tier"]

    def area_bench(name, summary, description, out_name, ranks_flag, repeats=True, global_interval=True,
                   workload_help="a multi-area model name (mam-benchmark) or a config .toml", threads_flag=None):
        parser = benches.add_parser(name, allow_abbrev=False, help=summary,
                                    description=f"{description} {SCHEMES_TEXT}")
        parser.add_argument("workload", metavar="WORKLOAD", help=workload_help)
        ranks_flag(parser)
        if threads_flag is not None:
            threads_flag(parser)
        else:
            parser.add_argument("--threads", type=positive_int, metavar="K",
                                help="threads per rank (default: the config's, else 1)")
        parser.add_argument("--duration-ms", type=positive_float, metavar="T",
                            help="simulated time per run (default: the config's, or 2000 ms for a model name)")
        if repeats:
            parser.add_argument("--repeats", type=positive_int, default=3, metavar="N",
                                help="runs of each configuration; tables give medians (default: 3)")
        parser.add_argument("--set", type=assignment, action="append", default=[], metavar="KEY=VALUE",
                            help="any model parameter but n_areas, value read as TOML (repeat for several)")
        parser.add_argument("--conventional-exchange", choices=strategies, default="allgather",
                            help="exchange strategy of the conventional scheme (default: allgather)")
        parser.add_argument("--tier-exchange", choices=strategies,
                            help="structure-aware: the strategy of both tiers (default: the config's, else allgather)")
        if global_interval:
            parser.add_argument("--global-interval", type=positive_int, metavar="D",
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
        lambda p: p.add_argument("--ranks", type=positive_int_list, required=True, metavar="R1,R2,...",
                                 help="rank counts (multi-area: = areas), for example 1,2,4"),
        workload_help="a model name (dpsnn, artificial-cells, mam-benchmark) or a config .toml",
        threads_flag=lambda p: p.add_argument("--threads", type=positive_int_list, metavar="K1,K2,...",
                                              help="threads per rank; several (1,2) only without areas (default: "
                                                   "the config's, else 1)"))
    weak.add_argument("--per-core", type=positive_int, metavar="N",
                      help="without areas: the size (neurons, cells) per core (default: half the workload's size)")
    scaling.add_scaling_flags(weak, exchanges)
    # multi-area only: None tells weak_scaling_bench that it was not given (then allgather)
    weak.set_defaults(conventional_exchange=None)
    heterogeneity = area_bench(
        "heterogeneity", "synchronisation against a heterogeneity knob, both schemes",
        "Vary one heterogeneity knob of a multi-area model (as many areas as ranks) and run both schemes at "
        "each value; writes heterogeneity.csv, heterogeneity.json and heterogeneity.png.", "heterogeneity",
        lambda p: p.add_argument("--ranks", type=positive_int, default=2, metavar="R",
                                 help="ranks (= areas), at least 2 (default: 2)"),
        global_interval=False)
    heterogeneity.add_argument("--knob", choices=KNOBS, required=True,
                               help="the parameter varied; delay_ratio is D, also the two-tier global interval")
    heterogeneity.add_argument("--values", required=True, metavar="V1,V2,...",
                               help="its values: integers >= 1 for delay_ratio (1,2,5,10), numbers >= 0 for the "
                                    "standard deviations")
    cycles = area_bench(
        "cycle-times", "per-rank cycle times of both schemes: distributions and serial correlation",
        "Run each scheme once and keep every rank's time of every cycle (deliver + update + collocate); print "
        "their statistics against the synchronisation model; write cycle_times.csv (one row per scheme, rank "
        "and cycle), cycle_timers.npz (all phases), cycle_statistics.json and cycle_times.png.", "cycle-times",
        lambda p: p.add_argument("--ranks", type=positive_int, default=2, metavar="R",
                                 help="ranks (= areas) (default: 2)"),
        repeats=False)
    cycles.add_argument("--max-lag", type=positive_int, metavar="L",
                        help="autocorrelation lags computed and plotted (default: 100, at least D - 1)")


def command(args) -> None:
    common_settings = dict(threads=args.threads, duration_ms=args.duration_ms, parameters=dict(args.set),
                           conventional_exchange=args.conventional_exchange, tier_exchange=args.tier_exchange,
                           out=args.out)
    if args.bench_command == "weak-scaling":
        # a model without n_areas goes to the generic weak scaling (scaling.py)
        weak_scaling_bench(args.workload, args.ranks, repeats=args.repeats, global_interval=args.global_interval,
                           per_core=args.per_core, exchange=args.exchange, energy=args.energy,
                           baseline_s=args.baseline_s, **common_settings)
    elif args.bench_command == "heterogeneity":
        heterogeneity_bench(args.workload, args.knob, args.values, ranks=args.ranks, repeats=args.repeats,
                            **common_settings)
    else:
        cycle_times_bench(args.workload, ranks=args.ranks, global_interval=args.global_interval,
                          max_lag=args.max_lag, **common_settings)
