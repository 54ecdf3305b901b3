"""Strong and weak scaling of a workload over ranks x threads, each run a real `ranvier run`:

    ranvier bench strong-scaling dpsnn --ranks 1,2,4 --threads 1,2 --repeats 3
    ranvier bench weak-scaling dpsnn --ranks 1,2,4 --threads 1 --per-core 10240

strong-scaling runs the same network on every configuration of the grid --ranks x --threads;
weak-scaling (for models without areas: `neurons` of dpsnn, `cells` of artificial-cells; the
multi-area models go to ranvier.bench.areas) grows the network with the cores, size =
--per-core x ranks x threads. Like the other benchmarks the command checks all its input
first, then runs every configuration --repeats times, one run at a time, repeats outermost:

    [mpiexec -n R [-bind-to core:T]] python -m ranvier run WORKLOAD --threads T \\
        --duration-ms D [--set K=V ...] --out DIR/runs/r{R}-t{T}-{k} --quiet

so every run leaves a full run archive (config.toml, summary.json, spikes.h5, timers.h5, ...)
that `ranvier report DIR` renders. From the summaries it prints the profiling table of the
DPSNN study (computation = deliver + update + collocate, communication = communicate,
barrier = synchronize, as % of the simulate wall time), the scaling table (real-time factor,
speedup and parallel efficiency against the smallest core count) and the energy figures
where the runs measured energy; it writes <kind>_scaling.csv (one row per run), .json and .png.
"""
from __future__ import annotations

import csv
import json
import math
import os
import statistics
import sys
from pathlib import Path

import numpy as np

from ..io import config as cfgmod
from ..analysis import speedup
from ..cli.arguments import assignment, non_negative_float, positive_float, positive_int, positive_int_list
from ..runtime.energy import KINDS as ENERGY_KINDS
from ..errors import ConfigError
from ..io.output import toml_value
from . import common, runner
from .common import say

STRONG, WEAK = "strong", "weak"
SIZE_PARAMETERS = ("neurons", "cells")          # a model's size: dpsnn, artificial-cells
COMPUTATION_PHASES = ("deliver", "update", "collocate")
PROFILE_PARTS = ("computation", "communication", "barrier")
PROFILE_COLORS = {"computation": "#55a868", "communication": "#dd8452", "barrier": "#c44e52", "other": "#bbbbbb"}
FILES = {STRONG: ("strong_scaling.csv", "strong_scaling.json", "strong_scaling.png"),
         WEAK: ("weak_scaling.csv", "weak_scaling.json", "weak_scaling.png")}
RUNS_FOLDER = "runs"

# One row per run. Percentages are of the simulate wall time (phases: mean over ranks);
# peak RSS: the largest rank's; energy: from the run's summary["energy"] (ranvier.runtime.energy), energy_j
# above the idle baseline where there is one, µJ per recurrent synaptic event (the DPSNN study's metric).
RUN_COLUMNS = [
    "ranks", "threads", "cores", "oversubscribed", "repeat", "model", "neurons", "synapses", "duration_ms",
    "real_time_factor", "simulate_seconds", "build_seconds",
    "deliver_s", "update_s", "collocate_s", "communicate_s", "synchronize_s",
    "computation_pct", "communication_pct", "barrier_pct", "other_pct",
    "peak_rss_mib", "synaptic_events", "energy_source", "energy_seconds", "mean_power_w", "baseline_power_w",
    "energy_j", "uj_per_synaptic_event", "energy_unavailable", "archive",
]


# -- input ----------------------------------------------------------------------------------
def _rank_thread_lists(ranks, threads) -> tuple[list[int], list[int]]:
    """--ranks and --threads: non-empty lists of positive integers; sorted, each once."""
    for flag, values in (("--ranks", ranks), ("--threads", threads)):
        if not values:
            raise ConfigError(f"{flag}: give at least one count, for example 1,2,4")
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{flag} must be a list of positive integers such as 1,2,4, got {v!r}")
    return sorted(set(ranks)), sorted(set(threads))


def size_parameter(model: str) -> str:
    """The parameter that sets a model's size (neurons, cells); ConfigError for models without one."""
    from .. import models

    known = models.defaults(model)
    for name in SIZE_PARAMETERS:
        if name in known:
            return name
    raise ConfigError(f"'{model}' has no size parameter ({' or '.join(SIZE_PARAMETERS)}): weak scaling "
                      f"cannot grow it with the cores")


def _check_pass_through(energy, baseline_s) -> None:
    from ..runtime.energy import KINDS

    if energy is not None and energy not in KINDS:
        raise ConfigError(f"--energy must be one of {', '.join(KINDS)}, got {energy!r}")
    if baseline_s is not None:
        if isinstance(baseline_s, bool) or not isinstance(baseline_s, (int, float)) \
                or not (baseline_s >= 0 and math.isfinite(baseline_s)):
            raise ConfigError(f"--baseline-s must be a number of seconds >= 0, got {baseline_s!r}")


def _check_point(cfg: cfgmod.RunConfig, overrides: dict, ranks: int, threads: int, where: str) -> dict:
    """One configuration: its network is built here (cheap: the engine draws the synapses only in
    a run) to refuse before anything runs what the run would only find out later."""
    from .. import models
    from ..core import placement as placements
    from ..core.simulation import TWO_TIER

    parameters = {**cfg.parameters, **overrides}
    try:
        network = models.build(cfg.model, **parameters)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    try:
        cfgmod.check_simulation(cfg, network)     # the duration a whole number of steps, and so on
    except ConfigError as e:
        raise ConfigError(f"--duration-ms: {e}" if "'duration_ms'" in str(e) else str(e)) from None
    sim = cfg.simulation
    if network.size < ranks * threads:
        raise ConfigError(f"{where}: {network.size} neurons for {ranks} rank(s) x {threads} thread(s); every thread "
                          f"needs at least one: use fewer --ranks or --threads, or a larger network")
    if sim["exchange"] == TWO_TIER and any(p.area is None for p in network.populations):
        raise ConfigError(f"--exchange {TWO_TIER}: '{cfg.model}' has populations without an area; two-tier is for "
                          f"multi-area models")
    if sim["placement"] in placements.SEGMENT_PLACEMENTS:
        try:
            bounds, owners = placements.segments(network, sim["placement"], ranks, sim["resolution_ms"])
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
        fewest = min(sum(bounds[i + 1] - bounds[i] for i, o in enumerate(owners) if o == r) for r in range(ranks))
        if fewest < threads:
            raise ConfigError(f"{where}: placement '{sim['placement']}' leaves a rank with {fewest} neuron(s) for "
                              f"{threads} thread(s); use fewer --threads or --ranks")
    return {"ranks": ranks, "threads": threads, "cores": ranks * threads, "overrides": overrides,
            "neurons": network.size}


def _base_config(workload: str, parameters: dict, reserved: dict, duration_ms, exchange) -> cfgmod.RunConfig:
    from ..core.simulation import EXCHANGES

    if exchange is not None and exchange not in EXCHANGES:
        raise ConfigError(f"--exchange: unknown strategy '{exchange}'; available: {', '.join(EXCHANGES)}")
    cfg = common.resolve_workload(workload)       # unknown workloads refused here; model names: 1000 ms
    common.check_parameters(cfg, parameters, reserved)
    return cfgmod.override(cfg, parameters=parameters, simulation={"duration_ms": duration_ms, "exchange": exchange})


def _workload_args(workload: str) -> list[str]:
    from .. import models

    return ["--model", workload] if workload in models.REGISTRY else [str(Path(workload).absolute())]


def run_argv(workload_args: list[str], overrides: dict, threads: int, duration_ms: float, out: Path,
             exchange: str | None = None, energy: str | None = None, baseline_s: float | None = None) -> list[str]:
    """The `ranvier run` command of one run (mpiexec and its ranks go before it)."""
    argv = [sys.executable, "-m", "ranvier", "run", *workload_args, "--threads", str(threads),
            "--duration-ms", repr(float(duration_ms))]
    for key, value in overrides.items():
        argv += ["--set", f"{key}={toml_value(value)}"]
    if exchange is not None:
        argv += ["--exchange", exchange]
    if energy is not None:
        argv += ["--energy", energy]
    if baseline_s is not None:
        argv += ["--baseline-s", repr(float(baseline_s))]
    return [*argv, "--out", str(out), "--quiet"]


def _output(out, kind: str) -> Path:
    csv_name = FILES[kind][0]
    path = common.output_folder(out, f"{kind}-scaling", csv_name)
    runs = path / RUNS_FOLDER
    if runs.exists() and (not runs.is_dir() or any(runs.iterdir())):
        raise ConfigError(f"--out '{path}' already holds run archives in {runs}; choose a new folder")
    return path


# -- running --------------------------------------------------------------------------------
def launch_run(ranks: int, threads: int, argv: list[str]):
    """Starts one `ranvier run` on ranks x threads (mpiexec for several ranks, as runner.launch_prefix binds)."""
    return runner.launch(ranks, threads, argv)


def _run_grid(points: list[dict], repeats: int, argv_of, out: Path, csv_path: Path) -> list[dict]:
    """Every point `repeats` times, one run at a time, repeats outermost (a slow drift of the
    machine spreads over all configurations); one CSV row per run, written as it finishes."""
    runs = []
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=RUN_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for repeat in range(1, repeats + 1):
            for p in points:
                archive = out / RUNS_FOLDER / f"r{p['ranks']}-t{p['threads']}-{repeat}"
                label = f"{p['ranks']} rank(s) x {p['threads']} thread(s), repeat {repeat}/{repeats}"
                argv = argv_of(p, archive)
                done = launch_run(p["ranks"], p["threads"], argv)
                summary_path = archive / "summary.json"
                if done.returncode != 0 or not summary_path.exists():
                    tail = "\n".join((done.stderr or done.stdout or "").strip().splitlines()[-20:])
                    raise runner.WorkerFailed(f"{label} failed with status {done.returncode}: "
                                             f"{' '.join(map(str, done.args))}\n{tail}")
                row = run_row(json.loads(summary_path.read_text()), repeat=repeat, archive=archive)
                writer.writerow(row)
                f.flush()
                runs.append(row)
                say(f"bench: {label}: real-time factor {row['real_time_factor']:.3f}")
    return runs


# -- one run's figures ----------------------------------------------------------------------
def _number(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def energy_figures(summary: dict) -> dict | str:
    """The energy of one run from its summary["energy"] (the report of ranvier.runtime.energy):
    {source, seconds, watts, baseline_w, joules, uj_per_event}, or why there is none (a string).
    joules: energy to solution, above the idle baseline where the run measured one (--baseline-s);
    watts: mean power during the simulation; µJ per recurrent synaptic event (the DPSNN study's
    J per synaptic event: neurons x synapses x rate x time)."""
    if "energy" not in summary:
        return "the run summaries hold no energy report (this ranvier's `run` does not measure energy)"
    e = summary["energy"]
    if e is None:
        return "the runs measured no energy"
    if not isinstance(e, dict):
        return f"unreadable energy entry {e!r}"
    joules = _number(e.get("energy_j"))
    if not e.get("available") or joules is None:
        return str(e.get("reason") or "the energy report holds no energy in joules")
    seconds = _number(e.get("simulation_s"))
    if seconds is None:
        seconds = _number(summary.get("simulate_seconds"))
    watts = _number(e.get("mean_power_w"))
    if watts is None:                    # an estimate from a power model knows the power above idle only
        watts = _number(e.get("mean_power_above_baseline_w"))
    per_event = e.get("j_per_synaptic_event")
    per_event = _number(per_event.get("recurrent")) if isinstance(per_event, dict) else _number(per_event)
    if per_event is None:
        events = (summary.get("synaptic_events") or {}).get("recurrent")
        per_event = joules / events if events else None
    source = str(e.get("meter") or "") + (" (estimate)" if e.get("estimate") else "")
    return {"source": source, "seconds": seconds, "watts": watts, "baseline_w": _number(e.get("baseline_power_w")),
            "joules": joules, "uj_per_event": per_event * 1e6 if per_event is not None else None}


def run_row(summary: dict, repeat: int = 1, archive="") -> dict:
    """One CSV row from a run's summary.json."""
    ranks, threads = int(summary["ranks"]), int(summary["threads"])
    phases = summary["phase_seconds"]
    wall = float(summary["simulate_seconds"])

    def pct(seconds):
        return 100.0 * seconds / wall if wall > 0 else None
    parts = {"computation": sum(phases[p] for p in COMPUTATION_PHASES), "communication": phases["communicate"],
             "barrier": phases["synchronize"]}
    percent = {f"{name}_pct": pct(seconds) for name, seconds in parts.items()}
    percent["other_pct"] = (100.0 - sum(percent.values())) if wall > 0 else None
    rss = summary.get("peak_rss_bytes") or []
    events = summary.get("synaptic_events") or {}
    energy = energy_figures(summary)
    has_energy = isinstance(energy, dict)
    return {
        "ranks": ranks, "threads": threads, "cores": ranks * threads,
        "oversubscribed": int(speedup.is_oversubscribed(ranks, threads, os.cpu_count())), "repeat": repeat,
        "model": summary.get("model", ""), "neurons": summary.get("neurons"), "synapses": summary.get("synapses"),
        "duration_ms": summary.get("duration_ms"), "real_time_factor": float(summary["real_time_factor"]),
        "simulate_seconds": wall, "build_seconds": float(summary.get("build_seconds") or 0.0),
        **{f"{p}_s": float(phases[p]) for p in (*COMPUTATION_PHASES, "communicate", "synchronize")},
        **percent,
        "peak_rss_mib": max(rss) / 2**20 if rss else None,
        "synaptic_events": events.get("recurrent"),
        "energy_source": energy["source"] if has_energy else "",
        "energy_seconds": energy["seconds"] if has_energy else None,
        "mean_power_w": energy["watts"] if has_energy else None,
        "baseline_power_w": energy["baseline_w"] if has_energy else None,
        "energy_j": energy["joules"] if has_energy else None,
        "uj_per_synaptic_event": energy["uj_per_event"] if has_energy else None,
        "energy_unavailable": "" if has_energy else energy,
        "archive": str(archive),
    }


# -- summaries ------------------------------------------------------------------------------
def _median(group, key):
    values = [r[key] for r in group if r.get(key) is not None and r.get(key) != ""]
    return statistics.median(values) if values else None


def summarize(runs: list[dict], mode: str = STRONG) -> list[dict]:
    """One entry per (ranks, threads), sorted by cores: medians over repeats, the minimum
    real-time factor, and the speed-up and efficiency against the configuration with the fewest
    cores (ranvier.analysis.speedup; weak scaling: the efficiency only; none where oversubscribed).
    Energy figures only when every repeat of the configuration measured energy."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((run["ranks"], run["threads"]), []).append(run)
    summary = []
    for (ranks, threads), group in groups.items():
        rtf = [r["real_time_factor"] for r in group]
        entry = {"ranks": ranks, "threads": threads, "cores": ranks * threads, "repeats": len(group),
                 "oversubscribed": bool(group[0]["oversubscribed"]), "neurons": group[0]["neurons"],
                 "rtf_min": min(rtf), "rtf_median": statistics.median(rtf)}
        for key in ("simulate_seconds", "build_seconds", "peak_rss_mib", "computation_pct", "communication_pct",
                    "barrier_pct", "other_pct"):
            entry[key] = _median(group, key)
        measured = all(r.get("energy_j") is not None for r in group)
        for key in ("energy_seconds", "mean_power_w", "baseline_power_w", "energy_j", "uj_per_synaptic_event"):
            entry[key] = _median(group, key) if measured else None
        entry["energy_unavailable"] = "" if measured else next(r["energy_unavailable"] for r in group
                                                               if r.get("energy_j") is None)
        entry["energy_source"] = group[0]["energy_source"] if measured else ""
        summary.append(entry)
    summary.sort(key=lambda s: (s["cores"], s["ranks"]))
    if summary:
        base = min(summary, key=lambda s: (s["cores"], s["ranks"]))
        for s in summary:
            figures = speedup.scaling(s["rtf_median"], s["cores"], base["rtf_median"], base["cores"], weak=mode == WEAK,
                                      oversubscribed=s["oversubscribed"], base_oversubscribed=base["oversubscribed"])
            s["speedup"] = figures.speedup if mode == STRONG else None
            s["efficiency"] = figures.efficiency
            s["base_cores"] = base["cores"]
    return summary


# -- tables ---------------------------------------------------------------------------------
def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_profile_table(summary: list[dict]) -> str:
    """The DPSNN study's profiling table: wall-clock time and its parts, per configuration."""
    header = ["ranks", "threads", "cores", "wall s", "computation %", "communication %", "barrier %", "other %"]
    rows = [[str(s["ranks"]), str(s["threads"]), str(s["cores"]), _fmt(s["simulate_seconds"], ".3f"),
             _fmt(s["computation_pct"], ".1f"), _fmt(s["communication_pct"], ".1f"), _fmt(s["barrier_pct"], ".1f"),
             _fmt(s["other_pct"], ".1f")] for s in summary]
    return common.text_table(header, rows)


def format_scaling_table(summary: list[dict], mode: str = STRONG) -> str:
    header = ["ranks", "threads", "cores", "neurons", "RTF min", "RTF median", "speedup", "efficiency", "build s",
              "peak RSS MiB", "note"]
    if mode == WEAK:
        header.remove("speedup")
    rows = []
    for s in summary:
        row = [str(s["ranks"]), str(s["threads"]), str(s["cores"]), f"{s['neurons']:,}" if s["neurons"] else "-",
               f"{s['rtf_min']:.3f}", f"{s['rtf_median']:.3f}", _fmt(s["speedup"], ".2f"),
               _fmt(s["efficiency"], ".2f"), _fmt(s["build_seconds"], ".2f"), _fmt(s["peak_rss_mib"], ".0f"),
               "oversubscribed" if s["oversubscribed"] else ""]
        if mode == WEAK:
            del row[6]
        rows.append(row)
    return common.text_table(header, rows)


def format_energy(summary: list[dict]) -> str:
    """The energy table (the DPSNN study's time, power and energy to solution, µJ per synaptic
    event), or one line that says why there is none."""
    if not summary or any(s["energy_j"] is None for s in summary):
        reason = next((s["energy_unavailable"] for s in summary if s["energy_j"] is None), "no runs")
        return f"energy: unavailable: {reason}"
    header = ["ranks", "threads", "cores", "time s", "mean power W", "baseline W", "energy J",
              "µJ/synaptic event", "meter"]
    rows = [[str(s["ranks"]), str(s["threads"]), str(s["cores"]), _fmt(s["energy_seconds"], ".3f"),
             _fmt(s["mean_power_w"], ".1f"), _fmt(s["baseline_power_w"], ".1f"), _fmt(s["energy_j"], ".2f"),
             _fmt(s["uj_per_synaptic_event"], ".3f"), s["energy_source"] or "-"] for s in summary]
    return common.text_table(header, rows)


def print_tables(summary: list[dict], mode: str, repeats: int) -> None:
    print(f"\nprofiling: % of the simulate wall time (phases mean over ranks), median over {repeats} repeat(s); "
          f"computation = deliver + update + collocate, communication = communicate, barrier = synchronize")
    print(format_profile_table(summary))
    base = summary[0]["base_cores"] if summary else 1
    what = speedup.definition(f"{base} core(s)", weak=mode == WEAK)
    print(f"\n{mode} scaling: real-time factor (wall s per simulated s); {what}; peak RSS of the largest rank")
    print(format_scaling_table(summary, mode))
    energy = format_energy(summary)
    if energy.startswith("energy: unavailable"):
        print(f"\n{energy}")
    else:
        print("\nenergy (median over repeats): simulation time, mean power during it, the idle baseline power "
              "(--baseline-s), energy to solution (above the baseline where there is one), µJ per recurrent "
              "synaptic event")
        print(energy)


# -- plot -----------------------------------------------------------------------------------
def plot_scaling(plt, summary: list[dict], path: Path, title: str, mode: str = STRONG) -> None:
    """(a) real-time factor against cores, one line per threads per rank (median, minimum marked),
    the real-time line at 1 and the ideal scaling from the fewest cores; (b) the profile of
    each configuration as stacked % of the simulate wall time."""
    fig, (rtf_ax, bar_ax) = plt.subplots(1, 2, figsize=(13, 5))
    cores = sorted({s["cores"] for s in summary})
    for i, threads in enumerate(sorted({s["threads"] for s in summary})):
        mine = sorted((s for s in summary if s["threads"] == threads), key=lambda s: s["cores"])
        x = [s["cores"] for s in mine]
        rtf_ax.plot(x, [s["rtf_median"] for s in mine], "o-", color=f"C{i}",
                    label=f"{threads} thread(s) per rank (median)")
        rtf_ax.plot(x, [s["rtf_min"] for s in mine], "_", color=f"C{i}", markersize=14)
    crowded = [s for s in summary if s["oversubscribed"]]
    if crowded:
        rtf_ax.plot([s["cores"] for s in crowded], [s["rtf_median"] for s in crowded], "o", markersize=11,
                    markerfacecolor="none", markeredgecolor="k", label="oversubscribed (more cores than the machine)")
    base = min(summary, key=lambda s: (s["cores"], s["ranks"]))
    grid = np.array(cores, dtype=float)
    ideal = base["rtf_median"] * base["cores"] / grid if mode == STRONG else np.full_like(grid, base["rtf_median"])
    rtf_ax.plot(grid, ideal, ":", color="gray", label="ideal")
    rtf_ax.axhline(1.0, color="red", linestyle="--", linewidth=1, label="real time")
    if cores[-1] >= 4 * cores[0]:
        rtf_ax.set_xscale("log", base=2)
    values = [s["rtf_median"] for s in summary] + [s["rtf_min"] for s in summary] + [1.0]
    if max(values) >= 20 * min(v for v in values if v > 0):
        rtf_ax.set_yscale("log")
    else:
        rtf_ax.set_ylim(bottom=0)
    rtf_ax.set_xticks(cores, [str(c) for c in cores])
    rtf_ax.minorticks_off()
    rtf_ax.set_xlabel("cores (ranks x threads)")
    rtf_ax.set_ylabel("real-time factor (wall s per simulated s)")
    rtf_ax.set_title(f"(a) {mode} scaling", fontsize="medium")
    rtf_ax.legend(fontsize="small")

    labels = [f"{s['ranks']}x{s['threads']}" for s in summary]
    bottom = np.zeros(len(summary))
    for part in (*PROFILE_PARTS, "other"):
        heights = np.array([max(0.0, s[f"{part}_pct"] or 0.0) for s in summary])
        bar_ax.bar(range(len(summary)), heights, 0.7, bottom=bottom, color=PROFILE_COLORS[part], label=part)
        bottom += heights
    bar_ax.set_xticks(range(len(summary)), labels)
    bar_ax.set_xlabel("ranks x threads")
    bar_ax.set_ylabel("% of simulate wall time (median over repeats)")
    bar_ax.set_ylim(0, 1.15 * max(100.0, float(bottom.max()) if len(bottom) else 100.0))
    bar_ax.set_title("(b) profile: computation, communication, barrier", fontsize="medium")
    bar_ax.legend(fontsize="small", loc="upper center", ncol=4)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- the commands ---------------------------------------------------------------------------
def _warn_oversubscribed(points: list[dict]) -> None:
    available = os.cpu_count() or 1
    for p in points:
        if p["cores"] > available:
            say(f"bench: warning: {p['ranks']} rank(s) x {p['threads']} thread(s) = {p['cores']} cores on a "
                 f"machine with {available}: oversubscribed, its times do not measure scaling")


def _run_bench(kind: str, cfg, workload: str, points: list[dict], repeats: int, out, describe: str, title: str,
               settings: dict, exchange, energy, baseline_s) -> Path:
    """The part both commands share, after their checks: launcher, folder, runs, tables, files."""
    for r in sorted({p["ranks"] for p in points}):
        try:
            runner.launch_prefix(r, 1)                # mpiexec is there for every rank count
        except ConfigError as e:
            raise ConfigError(f"--ranks {r}: {e}") from None
    out = _output(out, kind)
    csv_name, json_name, png_name = FILES[kind]
    plt = common.pyplot()
    if plt is None:
        say("bench: matplotlib is not installed (pip install matplotlib): no plot will be drawn")

    duration = float(cfg.simulation["duration_ms"])
    workload_args = _workload_args(workload)
    say(f"bench: {describe}, {duration:g} ms simulated per run; {len(points)} configuration(s) x {repeats} "
         f"repeat(s); run archives in {out / RUNS_FOLDER}")
    _warn_oversubscribed(points)
    (out / RUNS_FOLDER).mkdir(parents=True, exist_ok=True)

    def argv_of(point, archive):
        return run_argv(workload_args, point["overrides"], point["threads"], duration, archive,
                        exchange=exchange, energy=energy, baseline_s=baseline_s)
    runs = _run_grid(points, repeats, argv_of, out, out / csv_name)
    summary = summarize(runs, kind)

    print(f"{describe}, {duration:g} ms simulated per run, {repeats} repeat(s)")
    print_tables(summary, kind, repeats)
    (out / json_name).write_text(json.dumps({"settings": settings, "runs": runs, "summary": summary},
                                            indent=1) + "\n")
    written = [out / csv_name, out / json_name]
    if plt is not None:
        plot_scaling(plt, summary, out / png_name, title, kind)
        written.append(out / png_name)
    print(f"\nresults written to {', '.join(map(str, written))}")
    print(f"run archives ({len(runs)}) in {out / RUNS_FOLDER}/; render them with: ranvier report {out}")
    return out


def strong_scaling_bench(workload: str, ranks: list[int], threads: list[int] | None = None, duration_ms=None,
                         repeats: int = 3, parameters: dict | None = None, exchange: str | None = None,
                         energy: str | None = None, baseline_s: float | None = None, out=None) -> Path:
    """The same network on every ranks x threads configuration, `repeats` times each; prints the
    profiling, scaling and energy tables; writes strong_scaling.csv/.json/.png and the run archives."""
    parameters = dict(parameters or {})
    if not isinstance(repeats, int) or repeats < 1:
        raise ConfigError(f"--repeats must be a positive integer, got {repeats!r}")
    cfg = _base_config(workload, parameters, {}, duration_ms, exchange)
    threads = threads or [cfg.simulation["threads"] or 1]
    rank_counts, thread_counts = _rank_thread_lists(ranks, threads)
    _check_pass_through(energy, baseline_s)
    points = [_check_point(cfg, parameters, r, t, f"--ranks {r} x --threads {t}")
              for r in rank_counts for t in thread_counts]
    neurons = points[0]["neurons"]
    describe = f"{cfg.model}, {neurons:,} neurons, strong scaling over ranks {rank_counts} x threads {thread_counts}"
    settings = {"workload": workload, "model": cfg.model, "parameters": cfg.parameters, "simulation": cfg.simulation,
                "ranks": rank_counts, "threads": thread_counts, "repeats": repeats, "exchange": exchange,
                "energy": energy, "baseline_s": baseline_s}
    return _run_bench(STRONG, cfg, workload, points, repeats, out, describe,
                      f"{cfg.model}, {neurons:,} neurons: strong scaling", settings, exchange, energy, baseline_s)


def weak_scaling_bench(workload: str, ranks: list[int], threads: list[int] | None = None, per_core: int | None = None,
                       duration_ms=None, repeats: int = 3, parameters: dict | None = None,
                       exchange: str | None = None, energy: str | None = None, baseline_s: float | None = None,
                       out=None) -> Path:
    """Generic weak scaling (models without areas): size = per_core x ranks x threads on every
    configuration, `repeats` times each; default per_core: the workload's size / 2. Prints the
    tables of strong scaling (efficiency = RTF at the fewest cores / RTF); writes
    weak_scaling.csv/.json/.png and the run archives."""
    from .. import models

    parameters = dict(parameters or {})
    if not isinstance(repeats, int) or repeats < 1:
        raise ConfigError(f"--repeats must be a positive integer, got {repeats!r}")
    cfg = common.resolve_workload(workload)
    size = size_parameter(cfg.model)
    cfg = _base_config(workload, parameters, {size: f"weak scaling sets {size} = --per-core x ranks x threads; "
                                                    f"leave it out and choose --per-core"}, duration_ms, exchange)
    workload_size = cfg.parameters.get(size, models.defaults(cfg.model)[size])
    if per_core is None:
        per_core = max(1, int(workload_size) // 2)
    elif isinstance(per_core, bool) or not isinstance(per_core, int) or per_core < 1:
        raise ConfigError(f"--per-core must be a positive integer ({size} per core), got {per_core!r}")
    threads = threads or [cfg.simulation["threads"] or 1]
    rank_counts, thread_counts = _rank_thread_lists(ranks, threads)
    _check_pass_through(energy, baseline_s)
    points = [_check_point(cfg, {**parameters, size: per_core * r * t}, r, t,
                           f"--per-core {per_core} at --ranks {r} x --threads {t} ({size} = {per_core * r * t})")
              for r in rank_counts for t in thread_counts]
    describe = (f"{cfg.model}, {per_core:,} {size} per core, weak scaling over ranks {rank_counts} x "
                f"threads {thread_counts}")
    settings = {"workload": workload, "model": cfg.model, "parameters": cfg.parameters, "simulation": cfg.simulation,
                "size_parameter": size, "per_core": per_core, "ranks": rank_counts, "threads": thread_counts,
                "repeats": repeats, "exchange": exchange, "energy": energy, "baseline_s": baseline_s}
    return _run_bench(WEAK, cfg, workload, points, repeats, out, describe,
                      f"{cfg.model}, {per_core:,} {size} per core: weak scaling", settings, exchange, energy,
                      baseline_s)


# -- the command line -----------------------------------------------------------------------
def add_scaling_flags(parser, exchanges) -> None:
    """The flags strong-scaling shares with the generic weak-scaling (models without n_areas)."""
    parser.add_argument("--exchange", choices=exchanges, help="spike-exchange strategy of every run "
                        "(default: the config's, else allgather)")
    parser.add_argument("--energy", choices=ENERGY_KINDS, help="passed to each `ranvier run`: its power meter "
                        "(default: not passed, the run's own default)")
    parser.add_argument("--baseline-s", type=non_negative_float, metavar="S", help="passed to each `ranvier run`: "
                        "idle seconds before the simulation, for the baseline power")


def add_parser(benches, exchanges) -> None:
    """Registers `ranvier bench strong-scaling` (weak-scaling is registered by areas.py, which
    sends models without areas here)."""
    strong = benches.add_parser(
        "strong-scaling", allow_abbrev=False, help="one network over ranks x threads: profile, speedup, energy",
        description="Run the same network on every configuration of --ranks x --threads, --repeats times each, "
                    "one run at a time, each a real `ranvier run` (mpiexec -n R for several ranks) that leaves its "
                    "run archive in DIR/runs/r{R}-t{T}-{k}. Prints the profile (computation, communication, "
                    "barrier as % of the wall time), the real-time factor with speedup and parallel efficiency "
                    "against the fewest cores (docs/measuring.md), and the energy where the runs measured it; writes "
                    "strong_scaling.csv (one row per run), strong_scaling.json and strong_scaling.png.")
    strong.add_argument("workload", metavar="WORKLOAD", help="a model name (dpsnn, ...) or a config .toml")
    strong.add_argument("--ranks", type=positive_int_list, required=True, metavar="R1,R2,...",
                        help="rank counts, for example 1,2,4")
    strong.add_argument("--threads", type=positive_int_list, metavar="K1,K2,...",
                        help="threads per rank, for example 1,2 (default: the config's, else 1)")
    strong.add_argument("--duration-ms", type=positive_float, metavar="T",
                        help="simulated time per run (default: the config's, or 1000 ms for a model name)")
    strong.add_argument("--repeats", type=positive_int, default=3, metavar="N",
                        help="runs of each configuration; tables give min and median (default: 3)")
    strong.add_argument("--set", type=assignment, action="append", default=[], metavar="KEY=VALUE",
                        help="any model parameter, value read as TOML (repeat for several)")
    add_scaling_flags(strong, exchanges)
    strong.add_argument("--out", metavar="DIR",
                        help="folder for the results and the run archives (default: "
                             "bench-results/strong-scaling-<timestamp>)")


def command(args) -> None:
    strong_scaling_bench(args.workload, args.ranks, threads=args.threads, duration_ms=args.duration_ms,
                         repeats=args.repeats, parameters=dict(args.set), exchange=args.exchange, energy=args.energy,
                         baseline_s=args.baseline_s, out=args.out)
