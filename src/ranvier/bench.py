"""Benchmarks of spike exchange: `ranvier bench exchange` and `ranvier bench mpi` (the multi-area
benchmarks weak-scaling, heterogeneity and cycle-times are in ranvier.bench_areas).

    ranvier bench exchange dpsnn --ranks 1,2 --strategies allgather,alltoallv --repeats 3
    ranvier bench mpi --ranks 2 --sizes 1,64,4096 --repeats 200

The command checks all its input first, then runs every configuration as its own process,
one at a time: `mpiexec -n R python -m ranvier.bench worker SPEC.json` (no mpiexec for one
rank). Each rank of the worker builds and runs the same job; rank 0 writes the measurements
as JSON, which the command gathers into tables, a CSV and a plot.
"""
from __future__ import annotations

import csv
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from . import config as cfgmod
from . import theory
from .errors import ConfigError

OVERLAP_SETTINGS = {"off": (False,), "on": (True,), "both": (False, True)}
DEFAULT_DURATION_MS = 1000.0          # per run, when the workload is a model name
DEFAULT_MPI_SIZES = (1, 8, 64, 512, 4096, 32768)
WORD_BYTES = 8                        # mpi_bench sizes are 64-bit words
EXCHANGE_CSV, EXCHANGE_PNG = "exchange_bench.csv", "exchange_bench.png"
MPI_CSV, MPI_FIT, MPI_PNG = "mpi_bench.csv", "mpi_fit.json", "mpi_bench.png"
EXCHANGE_COLUMNS = [
    "ranks", "threads", "strategy", "overlap", "repeat", "duration_ms", "cycles", "cycle_ms",
    "communicate_us_per_cycle", "synchronize_us_per_cycle", "bytes_per_cycle", "messages_per_cycle",
    "spikes_sent_per_cycle", "spikes_received_per_cycle", "real_time_factor", "simulate_seconds",
    "exchange_resizes", "overflow_rounds",
]
# Counters that only some engine builds keep: reported (summed over ranks) where present.
OPTIONAL_COUNTERS = ("exchange_resizes", "overflow_rounds")


class WorkerFailed(RuntimeError):
    """A benchmark process exited with an error; the message ends with its stderr."""


# -- launching one configuration ------------------------------------------------------------
def mpiexec_path() -> str | None:
    """The mpiexec next to this Python (the venv's MPICH wheel), else one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def launch_prefix(ranks: int, threads: int = 1) -> list[str]:
    """What goes before `python ...` to start `ranks` ranks of `threads` threads each."""
    if ranks == 1:
        return []
    mpiexec = mpiexec_path()
    if mpiexec is None:
        raise ConfigError(f"{ranks} ranks need mpiexec, which was not found; install it with: "
                          f"pip install mpich mpi4py")
    prefix = [mpiexec, "-n", str(ranks)]
    if _ranks_bound(ranks, threads):
        prefix += ["-bind-to", f"core:{threads}" if threads > 1 else "core"]
    return prefix


def _ranks_bound(ranks: int, threads: int) -> bool:
    """Whether mpiexec binds each rank to its own cores, as many as it has threads: only when
    there are cores enough; otherwise binding would stack ranks, so the OS places them."""
    return ranks > 1 and ranks * threads <= (os.cpu_count() or 1)


def launch_env(ranks: int, threads: int) -> dict:
    """The environment of a launched job: OMP_NUM_THREADS = threads, and no thread pinning
    inherited from this process (importing ranvier sets OMP_PROC_BIND and OMP_PLACES) where
    mpiexec does not bind: every rank would pin its threads to the same first cores."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if ranks > 1 and not _ranks_bound(ranks, threads):
        env.pop("OMP_PROC_BIND", None)
        env.pop("OMP_PLACES", None)
    return env


def restore_cpus() -> None:
    """For subprocess preexec_fn: a child inherits this thread's CPU mask, which the OpenMP
    runtime narrowed to one core when ranvier loaded; give the child the mask from before."""
    from . import _cpus_at_import

    if _cpus_at_import is not None:
        os.sched_setaffinity(0, _cpus_at_import)


def launch(ranks: int, threads: int, argv: list[str]) -> subprocess.CompletedProcess:
    """Runs the command argv (a Python program) on `ranks` ranks of `threads` threads each; output captured."""
    return subprocess.run([*launch_prefix(ranks, threads), *argv], env=launch_env(ranks, threads),
                          capture_output=True, text=True, check=False, preexec_fn=restore_cpus)


def run_worker(ranks: int, threads: int, spec: dict, workdir: Path, label: str) -> dict:
    """Runs one worker job on `ranks` ranks and returns what its rank 0 wrote."""
    spec_path = workdir / "spec.json"
    result_path = workdir / "result.json"
    result_path.unlink(missing_ok=True)
    spec_path.write_text(json.dumps({**spec, "result": str(result_path)}))
    done = launch(ranks, threads, [sys.executable, "-m", "ranvier.bench", "worker", str(spec_path)])
    if done.returncode != 0 or not result_path.exists():
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-20:])
        raise WorkerFailed(f"{label} failed with status {done.returncode}: {' '.join(done.args)}\n{tail}")
    return json.loads(result_path.read_text())


def _output_folder(out, kind: str, own_file: str) -> Path:
    """--out, or bench-results/<kind>-<timestamp>; refused if it already holds this benchmark's results."""
    path = Path(out) if out else Path("bench-results") / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out '{path}' exists and is not a folder; choose another path")
    if (path / own_file).exists():
        raise ConfigError(f"--out '{path}' already holds {own_file} from an earlier benchmark; choose a new folder")
    return path


def _check_names(flag: str, kind: str, names, valid) -> list[str]:
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise ConfigError(f"{flag}: unknown {kind} '{unknown[0]}'; available: {', '.join(valid)}")
    return list(dict.fromkeys(names))        # in the order given, once each


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    """Columns of words aligned left, columns of numbers aligned right."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    numeric = [all(r[i][:1].isdigit() or r[i][:1] in "-." or r[i] == "inf" for r in rows)
               for i in range(len(header))]

    def line(cells):
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)).rstrip()
    return "\n".join([line(header), *(line(r) for r in rows)])


def _pyplot():
    """matplotlib with the file-only backend, or None when it is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- ranvier bench exchange -----------------------------------------------------------------
def resolve_workload(workload: str, parameters: dict | None = None) -> cfgmod.RunConfig:
    """A model name or a config file, as `ranvier run` reads it, with parameter overrides on top."""
    from . import models

    if workload in models.REGISTRY:
        base = cfgmod.RunConfig(model=workload)
        base.simulation["duration_ms"] = DEFAULT_DURATION_MS
    elif workload.endswith(".toml") or Path(workload).is_file():
        base = cfgmod.load(workload)
    else:
        raise ConfigError(f"unknown workload '{workload}': give a model name ({', '.join(sorted(models.REGISTRY))}) "
                          f"or the path of a .toml config (see examples/)")
    return cfgmod.override(base, parameters=parameters)


def check_parameters(cfg: cfgmod.RunConfig, parameters: dict, reserved: dict | None = None) -> None:
    """--set: known parameter names of the workload's model only, none that the benchmark sets
    itself (reserved: name -> why)."""
    from . import models

    known = models.defaults(cfg.model)
    for key in parameters:
        if key not in known:
            raise ConfigError(f"--set {key}: '{cfg.model}' has no such parameter; known parameters: "
                              f"{', '.join(sorted(known))}")
        if key in (reserved or {}):
            raise ConfigError(f"--set {key}: {reserved[key]}")


def exchange_measurements(result) -> dict:
    """The per-cycle exchange figures of one run, from its Result on rank 0."""
    from .simulation import PHASES

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


def exchange_bench(workload: str, ranks: list[int], strategies: list[str] | None = None, overlap: str = "off",
                   duration_ms: float | None = None, threads: int | None = None, repeats: int = 3,
                   parameters: dict | None = None, out=None, mpi_fit=None) -> Path:
    """Runs every (ranks, strategy, overlap) `repeats` times; prints tables; writes CSV and plot into out."""
    from . import models
    from .simulation import EXCHANGES

    strategies = _check_names("--strategies", "strategy", strategies or EXCHANGES, EXCHANGES)
    if overlap not in OVERLAP_SETTINGS:
        raise ConfigError(f"--overlap must be one of {list(OVERLAP_SETTINGS)}, got {overlap!r}")
    fit = theory.load_mpi_fit(mpi_fit) if mpi_fit else None
    cfg = resolve_workload(workload, parameters)
    # Threads are fixed for the whole benchmark (the flag, else the config's, else 1) so that
    # rank counts compare like with like.
    threads = threads or cfg.simulation["threads"] or 1
    cfg = cfgmod.override(cfg, simulation={"duration_ms": duration_ms, "threads": threads})
    network = models.build(cfg.model, **cfg.parameters)
    cfgmod.check_simulation(cfg, network)          # duration a whole number of cycles, and so on
    for r in ranks:
        launch_prefix(r, threads)                  # mpiexec is there for every rank count
    out = _output_folder(out, "exchange", EXCHANGE_CSV)
    plt = _pyplot()
    if plt is None:
        _say("bench: matplotlib is not installed (pip install matplotlib): no plot will be drawn")

    duration = float(cfg.simulation["duration_ms"])
    base_spec = {"kind": "exchange", "model": cfg.model, "parameters": cfg.parameters,
                 "simulation": cfg.simulation_kwargs(), "duration_ms": duration}
    configurations = [(r, s, o) for r in ranks for s in strategies for o in OVERLAP_SETTINGS[overlap]]
    _say(f"bench: {cfg.model}, {network.size:,} neurons, {duration:g} ms simulated per run, "
         f"{len(configurations)} configuration(s) x {repeats} repeat(s)")
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
                spec = {**base_spec, "simulation": {**base_spec["simulation"], "exchange": strategy},
                        "overlap": overlapped}
                label = f"{r} rank(s), {strategy}, overlap {on_off}, repeat {repeat}/{repeats}"
                run = {**run_worker(r, threads, spec, Path(tmp), label), "overlap": on_off, "repeat": repeat}
                rows.writerow(run)
                csv_file.flush()                   # finished runs survive a later failure
                runs.append(run)
                _say(f"bench: {label}: real-time factor {run['real_time_factor']:.3f}")

    summary = summarize_exchange(runs)
    if fit is not None:          # theory.md section 3: predicted next to measured
        for s in summary:
            seconds = theory.exchange_seconds(s["strategy"], s["ranks"], s["bytes"] / s["ranks"], fit)
            s["model_us"] = seconds * 1e6 if seconds is not None else None
    print(f"{cfg.model}, {network.size:,} neurons, {threads} thread(s) per rank, {duration:g} ms simulated, "
          f"{repeats} repeat(s); exchange times are medians over repeats, per cycle, mean over ranks")
    for r in ranks:
        print(f"\n{r} rank(s)")
        print(format_exchange_table([s for s in summary if s["ranks"] == r]))
    written = [out / EXCHANGE_CSV]
    if plt is not None:
        plot_exchange(plt, summary, out / EXCHANGE_PNG, title=f"{cfg.model}, {network.size:,} neurons")
        written.append(out / EXCHANGE_PNG)
    print(f"\nresults written to {', '.join(map(str, written))}")
    return out


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
    return _text_table(header, rows)


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


def _exchange_worker(spec: dict) -> None:
    from . import models
    from .simulation import Simulation

    network = models.build(spec["model"], **spec["parameters"])
    settings = dict(spec["simulation"])
    if spec["overlap"]:              # off is the default, so builds without overlap run it too
        settings["overlap"] = True
    sim = Simulation(network, **settings)
    result = sim.run(spec["duration_ms"])
    if sim.rank == 0:
        Path(spec["result"]).write_text(json.dumps(exchange_measurements(result)))


# -- ranvier bench mpi ----------------------------------------------------------------------
def fit_latency_bandwidth(message_bytes, seconds) -> tuple[float, float]:
    """Least squares t = latency + bytes / bandwidth: (latency in s, bandwidth in bytes/s).

    The bandwidth is infinite when the time does not grow with the size (ibarrier)."""
    x, y = np.asarray(message_bytes, dtype=float), np.asarray(seconds, dtype=float)
    slope, intercept = np.polyfit(x, y, 1)
    # A slope that changes the largest message's time by less than rounding is no slope (NumPy's
    # least squares leaves about 1e-16 relative noise where the times are equal).
    flat = slope * x.max() <= 1e-9 * max(abs(y).max(), 1e-300)
    return float(intercept), (math.inf if flat else 1.0 / slope)


def mpi_bench(ranks: int = 2, primitives: list[str] | None = None, sizes=DEFAULT_MPI_SIZES, repeats: int = 200,
              out=None) -> Path:
    """Times each primitive at each size on `ranks` ranks; prints the table and the fits; writes CSV, JSON, plot."""
    from . import _engine

    valid = tuple(_engine.MPI_PRIMITIVES)
    primitives = _check_names("--primitives", "primitive", primitives or valid, valid)
    sizes = sorted(set(sizes))
    if len(sizes) < 2:
        raise ConfigError(f"--sizes needs at least two different sizes to fit latency and bandwidth, got {sizes}")
    launch_prefix(ranks)
    out = _output_folder(out, "mpi", MPI_CSV)
    plt = _pyplot()
    if plt is None:
        _say("bench: matplotlib is not installed (pip install matplotlib): no plot will be drawn")

    _say(f"bench: {len(primitives)} MPI primitive(s) x {len(sizes)} size(s) on {ranks} rank(s), "
         f"{repeats} repetitions each")
    spec = {"kind": "mpi", "primitives": primitives, "sizes": sizes, "repeats": repeats}
    with tempfile.TemporaryDirectory(prefix="ranvier-bench-") as tmp:
        rows = run_worker(ranks, 1, spec, Path(tmp), f"MPI micro-benchmark on {ranks} rank(s)")["rows"]

    fits = {}
    for primitive in primitives:
        mine = [row for row in rows if row["primitive"] == primitive]
        latency, bandwidth = fit_latency_bandwidth([row["bytes"] for row in mine], [row["median_s"] for row in mine])
        fits[primitive] = {
            "latency_s": latency, "latency_us": latency * 1e6,
            "bandwidth_bytes_per_s": bandwidth if math.isfinite(bandwidth) else None,
            "bandwidth_GB_per_s": bandwidth / 1e9 if math.isfinite(bandwidth) else None,
            "bytes": [row["bytes"] for row in mine], "median_s": [row["median_s"] for row in mine],
            "min_s": [row["min_s"] for row in mine],
        }

    table = [[row["primitive"], f"{row['words']}", f"{row['bytes']}", f"{row['median_s'] * 1e6:.2f}",
              f"{row['min_s'] * 1e6:.2f}"] for row in rows]
    print(f"{ranks} rank(s), {repeats} repetitions; time of one call = max over ranks of the per-rank "
          f"median (min: of the per-rank minimum); size in 64-bit words per rank or rank pair")
    print(_text_table(["primitive", "words", "bytes", "median µs", "min µs"], table))
    print("\nfit t = latency + bytes / bandwidth (least squares over sizes, median times)")
    print(_text_table(["primitive", "latency µs", "bandwidth GB/s"],
                      [[p, f"{f['latency_us']:.2f}",
                        f"{f['bandwidth_GB_per_s']:.3f}" if f["bandwidth_GB_per_s"] is not None else "inf"]
                       for p, f in fits.items()]))

    out.mkdir(parents=True, exist_ok=True)
    with open(out / MPI_CSV, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["ranks", "primitive", "words", "bytes", "repeats", "median_s", "min_s"])
        writer.writeheader()
        writer.writerows({"ranks": ranks, "repeats": repeats, **row} for row in rows)
    (out / MPI_FIT).write_text(json.dumps({
        "model": "time of one call = latency + bytes / bandwidth; bytes per rank (or per rank pair); "
                 "least squares over message sizes of the median time (max over ranks)",
        "ranks": ranks, "repeats": repeats, "host": platform.node(), "cpu_cores": os.cpu_count(),
        "mpi_library": " ".join(str(_engine.build_info().get("mpi_library", "")).split()) or None,
        "primitives": fits,
    }, indent=2) + "\n")
    written = [out / MPI_CSV, out / MPI_FIT]
    if plt is not None:
        plot_mpi(plt, fits, out / MPI_PNG, title=f"MPI primitives on {ranks} rank(s)")
        written.append(out / MPI_PNG)
    print(f"\nresults written to {', '.join(map(str, written))}")
    return out


def plot_mpi(plt, fits: dict, path: Path, title: str) -> None:
    """Median time of one call against message size, log-log, one line per primitive."""
    fig, ax = plt.subplots(figsize=(7, 5))
    for primitive, fit in fits.items():
        ax.loglog(fit["bytes"], np.asarray(fit["median_s"]) * 1e6, "o-", label=primitive)
    ax.set_xlabel("bytes per rank (or per rank pair)")
    ax.set_ylabel("time of one call, µs (median, slowest rank)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _mpi_worker(spec: dict) -> None:
    from . import _engine
    from .parallel import make_comm

    comm = make_comm()
    use_mpi = comm.handle is not None
    rows = []
    for primitive in spec["primitives"]:
        for words in spec["sizes"]:
            seconds = np.asarray(_engine.mpi_bench(use_mpi, comm.handle or 0, primitive, words, spec["repeats"]))
            per_rank = comm.gather((float(np.median(seconds)), float(seconds.min())))
            if comm.rank == 0:
                # a call is over only when the slowest rank is done
                rows.append({"primitive": primitive, "words": words, "bytes": words * WORD_BYTES,
                             "median_s": max(median for median, _ in per_rank),
                             "min_s": max(fastest for _, fastest in per_rank)})
    if comm.rank == 0:
        Path(spec["result"]).write_text(json.dumps({"rows": rows}))


# -- the worker process ---------------------------------------------------------------------
def _areas_worker(spec: dict) -> None:
    # the multi-area benchmarks (weak-scaling, heterogeneity, cycle-times) live in bench_areas,
    # which imports this module: imported here, when a worker needs it
    from .bench_areas import areas_worker

    areas_worker(spec)


WORKERS = {"exchange": _exchange_worker, "mpi": _mpi_worker, "areas": _areas_worker}


def _worker_main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "worker":
        print("usage: python -m ranvier.bench worker SPEC.json (started by 'ranvier bench')", file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[1]).read_text())
    from .parallel import abort_world

    try:
        WORKERS[spec["kind"]](spec)
    except ConfigError as e:         # input only a built simulation could check: its message is enough
        print(f"ConfigError: {e}", file=sys.stderr, flush=True)
        abort_world(1)               # never leave the other ranks waiting in a collective
        return 1
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        abort_world(1)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
