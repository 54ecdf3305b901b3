"""`ranvier report`: one HTML page and one Markdown file from run archives (`ranvier run --out`).

    ranvier report results/dpsnn                      # one run -> results/dpsnn/report/
    ranvier report results/scaling --out report       # every run archive under the folder

The report follows the DPSNN real-time study (Simula et al., "Real-time cortical simulations:
energy and interconnect scaling on distributed systems"): run parameters, rates and a raster,
the profiling table (computation / communication / barrier as % of wall time), strong scaling,
phases per rank, cycle-time distributions, time / power / energy to solution, J per synaptic
event next to the study's Table IV, and theory next to measurement.

Repeats of one configuration (same model, neurons, ranks, threads, exchange, placement,
overlap) are grouped; tables give min and median. report.html is self-contained (every plot
a base64 PNG, inline CSS, one tiny optional script); report.md mirrors it with the PNGs in
figures/. Only numbers found in the archives are shown: a missing value is a dash or
"unavailable: <reason>", never an estimate made here.
"""
from __future__ import annotations

import argparse
import base64
import html
import io
import json
import math
import os
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import speedup
from ..errors import ConfigError
from ..core.recording import STEADY_START_MS

PHASES = ("deliver", "update", "collocate", "communicate", "synchronize")
COMPUTE_PHASES = ("deliver", "update", "collocate")
PHASE_COLOURS = {"deliver": "#4c72b0", "update": "#55a868", "collocate": "#8172b2",
                 "communicate": "#dd8452", "synchronize": "#c44e52"}
RASTER_MAX_SPIKES = 50_000     # keeps the PNG small and the dots readable
PHASE_FIGURE_CONFIGS = 4       # per-rank phase bars: the configurations with the most cores
DASH = "—"

# -- the literature (Table IV of the study; the 4-core rows of its Tables II and III) --------
# Cited by author, not by number: the page's numbered notes are its own ("see note 1").
STUDY_REF, COMPASS_REF = "[Simula et al.]", "[Preissl et al.]"
STUDY = ('F. Simula, E. Pastorelli, P. S. Paolucci et al., "Real-time cortical simulations: energy and '
         'interconnect scaling on distributed systems"')
COMPASS = ('R. Preissl et al., "Compass: A scalable simulator for an architecture for cognitive computing," '
           "in SC '12: Proceedings of the International Conference on High Performance Computing, Networking, "
           "Storage and Analysis, pp. 1-11, Nov 2012 (reference 23 of the study)")
LITERATURE = (
    # simulator, platform, network, uJ per synaptic event, 4-core time s, power W, energy J, source
    # (figures as printed there)
    ("DPSNN", "ARM (NVIDIA Jetson TX1 boards)", "~20480 neurons, 10 s simulated", "1.1",
     "185.0", "6.0", "1110.0", f"{STUDY_REF} Table IV; time, power, energy: Table III, 4 cores"),
    ("DPSNN", "Intel x86 (Xeon X5660 / E5620 servers)", "~20480 neurons, 10 s simulated", "3.4",
     "37.4", "92", "3440.8", f"{STUDY_REF} Table IV; time, power, energy: Table II, 4 cores"),
    ("Compass (TrueNorth simulator)", "Intel Core i7 950 @ 3.07 GHz, 4 cores, 8 threads", DASH, "5.7",
     DASH, DASH, DASH, f"{STUDY_REF} Table IV, citing {COMPASS_REF}"),
)


# -- run archives ----------------------------------------------------------------------------
@dataclass
class Run:
    path: Path
    summary: dict
    environment: dict | None

    @property
    def rtf(self) -> float:
        return float(self.summary["real_time_factor"])

    @property
    def cores(self) -> int:
        return int(self.summary["ranks"]) * int(self.summary["threads"])

    @property
    def oversubscribed(self) -> bool:
        """More threads than cores on its node, as environment.json says (unknown without it: no)."""
        env = self.environment or {}
        ranks_on_node = int(env.get("ranks_per_node") or self.summary["ranks"])
        return speedup.is_oversubscribed(ranks_on_node, int(self.summary["threads"]), env.get("cores_logical"))

    @property
    def key(self) -> tuple:
        """What makes two runs repeats of one configuration."""
        s = self.summary
        return (s["model"], s["neurons"], s["ranks"], s["threads"], s["exchange"], s.get("placement"),
                bool(s.get("overlap")))


@dataclass
class Config:
    """The repeats of one configuration, fastest first."""
    runs: list[Run]
    label: str = ""

    @property
    def summary(self) -> dict:
        return self.runs[0].summary

    @property
    def median_run(self) -> Run:
        """The run whose real-time factor is the median (the lower one of an even count)."""
        return self.runs[(len(self.runs) - 1) // 2]

    @property
    def cores(self) -> int:
        return self.runs[0].cores

    @property
    def oversubscribed(self) -> bool:
        return any(r.oversubscribed for r in self.runs)

    def rtfs(self) -> list[float]:
        return [r.rtf for r in self.runs]


REQUIRED_KEYS = ("model", "neurons", "ranks", "threads", "exchange", "real_time_factor", "simulate_seconds",
                 "duration_ms")


def _natural(path: Path) -> list:
    """Sort key that puts r2-t1-9 before r2-t1-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def _path_list(paths) -> list[Path]:
    return [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]


def _folders_holding(path: Path, name: str) -> list[Path]:
    """path itself if it holds the file `name`, else every folder below it that does, in natural
    order; hidden folders are skipped (the temporary ones of runs still being written)."""
    if (path / name).is_file():
        return [path]
    return sorted((p.parent for p in path.rglob(name)
                   if not any(part.startswith(".") for part in p.relative_to(path).parts)), key=_natural)


def find_structure_aware(paths) -> list[Path]:
    """Folders written by `ranvier bench structure-aware` (holding structure_aware.json): each
    path is one, or a folder searched recursively."""
    found: dict[Path, Path] = {}
    for path in _path_list(paths):
        if path.is_file() and path.name == STRUCTURE_AWARE_JSON:
            path = path.parent
        for hit in _folders_holding(path, STRUCTURE_AWARE_JSON) if path.is_dir() else []:
            found.setdefault(hit.resolve(), hit)
    return list(found.values())


def find_runs(paths, required: bool = True) -> list[Path]:
    """Run folders (holding summary.json): each path is one, or a folder searched recursively.
    required=False: a folder without runs gives none instead of an error (it holds bench results)."""
    found: dict[Path, Path] = {}          # resolved -> as given: a run named twice is one run
    for path in _path_list(paths):
        if path.is_file() and path.name == "summary.json":
            path = path.parent
        if not path.exists():
            raise ConfigError(f"report: '{path}' does not exist; give a run folder (ranvier run --out DIR) "
                              f"or a folder that holds run folders")
        if not (path / "summary.json").is_file() and not path.is_dir():
            raise ConfigError(f"report: '{path}' is not a folder; give a run folder (ranvier run --out DIR)")
        runs = _folders_holding(path, "summary.json")
        if not runs and required:
            raise ConfigError(f"report: no run archive (a folder with summary.json, written by 'ranvier run "
                              f"--out DIR') or bench result (structure_aware.json, written by 'ranvier bench "
                              f"structure-aware') in '{path}'")
        for run in runs:
            found.setdefault(run.resolve(), run)
    return list(found.values())


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"report: cannot read '{path}': {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"report: '{path}' does not hold a JSON object")
    return data


def load_run(path: Path) -> Run:
    summary = _read_json(path / "summary.json")
    missing = [key for key in REQUIRED_KEYS if key not in summary]
    if missing:
        raise ConfigError(f"report: '{path / 'summary.json'}' lacks {', '.join(missing)}; is it a summary "
                          f"written by 'ranvier run --out'?")
    env_path = path / "environment.json"
    return Run(path, summary, _read_json(env_path) if env_path.is_file() else None)


def group(runs: list[Run]) -> list[Config]:
    """Configurations in a stable order (problem, then scheme, then cores), repeats fastest first."""
    by_key: dict[tuple, list[Run]] = {}
    for run in runs:
        by_key.setdefault(run.key, []).append(run)
    configs = [Config(sorted(rs, key=lambda r: r.rtf)) for rs in by_key.values()]
    configs.sort(key=lambda c: (str(c.summary["model"]), c.summary["neurons"], c.summary["exchange"],
                                str(c.summary.get("placement")), bool(c.summary.get("overlap")), c.cores,
                                c.summary["threads"]))
    # Labels name only what differs between the configurations; the rest is said once.
    varying = _varying(configs)
    for c in configs:
        c.label = _config_label(c.summary, varying)
    return configs


def _scheme(s: dict) -> str:
    return s["exchange"] + (" + overlap" if s.get("overlap") else "")


LABEL_FIELDS = {"model": lambda s: str(s["model"]), "neurons": lambda s: f"{s['neurons']:,} neurons",
                "scheme": _scheme, "placement": lambda s: str(s.get("placement"))}


def _varying(configs: list[Config]) -> list[str]:
    return [name for name, get in LABEL_FIELDS.items() if len({get(c.summary) for c in configs}) > 1]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 101st, 111th."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _ranks_threads(s: dict) -> str:
    return f"{_plural(s['ranks'], 'rank')} × {_plural(s['threads'], 'thread')}"


def _config_label(s: dict, varying: list[str]) -> str:
    return ", ".join([LABEL_FIELDS[name](s) for name in varying if name != "scheme"]
                     + [_ranks_threads(s)] + ([_scheme(s)] if "scheme" in varying else []))


# -- numbers as text -------------------------------------------------------------------------
def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def sig(x, digits: int = 3) -> str:
    """x to `digits` significant digits without exponents (0.0883, 12.3, 1,234); a dash if missing."""
    if _missing(x):
        return DASH
    x = float(x)
    if x == 0.0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:,.{decimals}f}"


def _fixed(x, decimals: int = 1) -> str:
    return DASH if _missing(x) else f"{float(x):,.{decimals}f}"


def _median(values):
    values = [float(v) for v in values if not _missing(v)]
    return statistics.median(values) if values else None


# -- the document: sections of paragraphs, tables and figures, rendered twice ----------------
@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class Figure:
    name: str          # file name in figures/
    png: bytes
    caption: str


@dataclass
class Section:
    title: str
    how: str           # one sentence: how the numbers were obtained
    blocks: list = field(default_factory=list)    # str (a paragraph), Table or Figure


def _matplotlib_figure():
    """A matplotlib Figure class (no pyplot: no global backend or state is touched), or None."""
    try:
        from matplotlib.figure import Figure as MplFigure
    except ImportError:
        return None
    return MplFigure


def figure(name: str, caption: str, draw, size=(9.0, 4.0)):
    """Draws with draw(fig) and returns the PNG as a Figure block; a paragraph without matplotlib."""
    mpl_figure = _matplotlib_figure()
    if mpl_figure is None:
        return f"({caption}: not drawn, matplotlib is not installed: pip install matplotlib)"
    fig = mpl_figure(figsize=size, layout="constrained")
    draw(fig)
    buffer = io.BytesIO()
    # no Software tag: the PNG carries nothing but the picture
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return Figure(name, buffer.getvalue(), caption)


# -- section 1: parameters -------------------------------------------------------------------
def _flatten(data: dict, prefix: str = "") -> dict:
    """{"ranvier": {"version": ..}} -> {"ranvier.version": ..}"""
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _env_text(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {_env_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "; ".join(_env_text(v) for v in value)
    return DASH if value is None else " ".join(str(value).split())


def _cores(env: dict) -> str:
    parts = [f"{env[k]} {word}" for k, word in (("cores_physical", "physical"), ("cores_logical", "logical"))
             if env.get(k) is not None]
    return ", ".join(parts) or _env_text(env.get("cores"))


def _memory(env: dict) -> str:
    value = env.get("memory_bytes")
    return DASH if _missing(value) else f"{value / 2**30:.1f} GiB"


def _joined(*keys):
    """The values of the keys the file has, in this order, joined."""
    def text(env):
        return ", ".join(dict.fromkeys(_env_text(env[k]) for k in keys if env.get(k) not in (None, "")))
    return text


def _mpi_library(text) -> str:
    """The library's name and version: MPI_Get_library_version's first words up to the first
    version number ("MPICH Version: 5.0.2", "Open MPI v4.1.5"); the rest (release date, configure
    flags) stays in environment.json."""
    text = " ".join(str(text).split())
    match = re.match(r".*?\d+(?:\.\d+)+", text)
    return match.group(0) if match else text


def _mpi(env: dict) -> str:
    library = env.get("mpi.library") or env.get("mpi_library")
    if library is None and isinstance(env.get("mpi"), str):
        library = env["mpi"]
    if library is None:
        # environment.json writes "mpi": null when the run never initialised MPI (one rank, no mpiexec)
        return "not initialised" if "mpi" in env and env["mpi"] is None else DASH
    standard = env.get("mpi.standard") or env.get("mpi_version")
    return _mpi_library(library) + (f" (MPI {standard})" if standard else "")


def _transport(env: dict) -> str:
    """How the ranks reached each other (environment.json's "transport", parallel.transport)."""
    nodes, hosts = env.get("transport.nodes"), env.get("transport.hosts") or []
    if env.get("transport.ranks") == 1:
        return "one process"
    paths = [env[k] for k in ("transport.within_node", "transport.between_nodes") if env.get(k)]
    where = f"{nodes} node(s) ({', '.join(map(str, hosts))})" if nodes is not None else DASH
    return f"{where}: {'; '.join(map(str, paths))}" if paths else where


# What environment.json says about the machine and the build, under plain names (keys flattened:
# "ranvier.version"); each row is shown when the file has one of its keys. The hardware rows
# identify a machine: runs that agree on them ran on one machine, whatever else differs.
ENV_FIELDS = (
    ("host", ("host", "hostname"), _joined("host", "hostname")),
    ("architecture", ("machine",), _joined("machine")),
    ("CPU", ("cpu_model", "cpu"), _joined("cpu_model", "cpu")),
    ("cores", ("cores_physical", "cores_logical", "cores"), _cores),
    ("memory", ("memory_bytes",), _memory),
    ("OS", ("os",), _joined("os")),
    ("MPI", ("mpi", "mpi.library", "mpi.standard", "mpi_library", "mpi_version"), _mpi),
    ("engine MPI backend", ("ranvier.mpi_backend",), _joined("ranvier.mpi_backend")),
    ("transport", ("transport", "transport.ranks", "transport.nodes", "transport.hosts", "transport.within_node",
                   "transport.between_nodes"), _transport),
    ("compiler", ("ranvier.compiler", "compiler"), _joined("ranvier.compiler", "compiler")),
    ("build", ("ranvier.build_type", "ranvier.simd"), _joined("ranvier.build_type", "ranvier.simd")),
    ("ranvier version", ("ranvier.version", "ranvier_version", "version"),
     _joined("ranvier.version", "ranvier_version", "version")),
    ("commit", ("ranvier.git_commit", "git_commit", "commit"), _joined("ranvier.git_commit", "git_commit", "commit")),
    ("Python, NumPy", ("python", "numpy"), _joined("python", "numpy")),
)
HARDWARE_FIELDS = ("host", "architecture", "CPU", "cores", "memory")
ENV_DATE_KEYS = ("date_utc", "date")
# Facts of one run that the parameters table already gives, or that say nothing about the
# environment: left out.
ENV_PER_RUN = ("date_utc", "date", "command", "ranks", "ranks_per_node", "nodes", "threads_per_rank",
               "cores_available", "mpi.mpi4py", "ranvier.engine_version", "ranvier.native")
ENV_VARIABLES = "omp."       # environment.json's "omp": the OpenMP variables the run saw


def machine_rows(environment: dict) -> list[tuple[str, str]]:
    """(name, value) of the machine, the build and the run's settings; keys this report does not
    know are shown as they are, the OpenMP variables as "env NAME"."""
    env = _flatten(environment)
    rows, used = [], set()
    for name, keys, text in ENV_FIELDS:
        present = (lambda k: k in env) if name == "MPI" else (lambda k: env.get(k) is not None)
        if any(present(k) for k in keys):
            rows.append((name, text(env)))
        used.update(keys)
    for k, v in env.items():
        if k in used or any(k == p or (p.endswith(".") and k.startswith(p)) for p in ENV_PER_RUN):
            continue
        if v == {}:           # "omp": {} - no variable set; the rows of those set say the rest
            continue
        name = f"env {k[len(ENV_VARIABLES):]}" if k.startswith(ENV_VARIABLES) else k
        rows.append((name, _env_text(v)))
    return rows


def _absent(name: str) -> str:
    return "not set" if name.startswith("env ") else DASH


def _date(run: Run) -> str | None:
    return next((str(run.environment[k]) for k in ENV_DATE_KEYS if run.environment.get(k)), None)


PER_RUN = "differs between runs: see the table below"


def environment_tables(runs: list[Run], name) -> list[Table]:
    """The machines (one column per distinct hardware: host, architecture, CPU, cores, memory) with
    what all their runs share, and, where runs on one machine differ in anything else (MPI
    library, environment variables, build), a table of those differences per run. name(run):
    the run's name in the report."""
    described = [r for r in runs if r.environment is not None]
    if not described:
        return []
    rows_of = {id(r): dict(machine_rows(r.environment)) for r in described}
    machines: dict[tuple, list[Run]] = {}
    for r in described:
        rows = rows_of[id(r)]
        machines.setdefault(tuple(rows.get(k, DASH) for k in HARDWARE_FIELDS), []).append(r)
    names = list(dict.fromkeys(k for r in described for k in rows_of[id(r)]))
    columns, differing = [], []
    for rs in machines.values():
        column = {}
        for key in names:
            values = {rows_of[id(r)].get(key, _absent(key)) for r in rs}
            if len(values) == 1:
                column[key] = values.pop()
            else:
                column[key] = PER_RUN
                differing.append(key)
        dates = sorted(d for d in map(_date, rs) if d)
        if dates:
            column["date"] = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        column["runs"] = str(len(rs))
        columns.append(column)
    header = ["environment"] + (["value"] if len(columns) == 1 else [f"machine {i + 1}" for i in range(len(columns))])
    tables = [Table(header, [[key] + [column.get(key, _absent(key)) for column in columns]
                             for key in names + ["date", "runs"]])]
    differing = [key for key in names if key in differing]
    if differing:
        machine_of = {id(r): i for i, rs in enumerate(machines.values()) for r in rs}
        several = len(columns) > 1
        tables.append(Table(["run"] + (["machine"] if several else []) + differing,
                            [[name(r)] + ([str(machine_of[id(r)] + 1)] if several else [])
                             + [rows_of[id(r)].get(key, _absent(key)) for key in differing] for r in described]))
    return tables


def section_parameters(ctx) -> Section:
    sec = Section("1. Run parameters", "Read from each archive's summary.json, and from its environment.json "
                                       "where the archive has one.")
    common = [name for name in LABEL_FIELDS if name not in _varying(ctx.configs)]
    s0 = ctx.configs[0].summary
    if common:
        sec.blocks.append("Common to all runs: " + ", ".join(LABEL_FIELDS[name](s0) for name in common) + ".")
    rows = []
    for c in ctx.configs:
        for r in sorted(c.runs, key=lambda r: _natural(r.path)):
            s = r.summary
            rows.append([ctx.name(r), str(s["model"]), f"{s['neurons']:,}", f"{s.get('synapses', 0):,}",
                         sig(s["duration_ms"] / 1000), _ranks_threads(s), _scheme(s), str(s.get("placement", DASH)),
                         str(s.get("seed", DASH)), sig(r.rtf)])
    sec.blocks.append(Table(["run", "model", "neurons", "synapses", "simulated (s)",
                             "ranks × threads", "exchange", "placement", "seed", "real-time factor"], rows))
    tables = environment_tables(ctx.runs, ctx.name)
    if not tables:
        versions = sorted({str(r.summary.get("version", DASH)) for r in ctx.runs})
        sec.blocks.append(f"Environment: no environment.json in the archives; ranvier version from summary.json: "
                          f"{', '.join(versions)}.")
        return sec
    sec.blocks.append(tables[0])
    if len(tables) > 1:
        sec.blocks.append("Runs on one machine (same host, architecture, CPU, cores and memory) that differ in "
                          "anything else:")
        sec.blocks.append(tables[1])
    without = sum(r.environment is None for r in ctx.runs)
    if without:
        sec.blocks.append(f"{_plural(without, 'run')} without environment.json.")
    return sec


# -- section 2: rates and raster -------------------------------------------------------------
def read_spikes(path: Path, order=()) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{population: (node_ids, timestamps_ms)} from a SONATA spike file, populations in the given
    order first (HDF5 lists them alphabetically)."""
    import h5py

    with h5py.File(path, "r") as f:
        groups = f["spikes"]
        names = [n for n in order if n in groups] + [n for n in groups if n not in order]
        return {name: (np.asarray(groups[name]["node_ids"][()], dtype=np.int64),
                       np.asarray(groups[name]["timestamps"][()])) for name in names}


def _population_sizes(spikes: dict, s: dict) -> dict[str, int]:
    """Sizes recovered from rate = spikes / (size x duration), exact up to rounding; the largest id
    seen where the rate is zero or missing."""
    rates, seconds = s.get("rates_hz") or {}, s["duration_ms"] / 1000
    sizes = {}
    for name, (ids, _) in spikes.items():
        rate = rates.get(name)
        seen = int(ids.max()) + 1 if ids.size else 0
        sizes[name] = max(seen, round(ids.size / (rate * seconds))) if rate and seconds > 0 else seen
    return sizes


def _plain_log_labels(*axes):
    """Tick labels of log axes as 0.05, 2, 40 rather than powers of ten: they are read as values.
    Spans of up to 3 decades also get 2 and 5 labelled, so that a narrow range has labels at all."""
    from matplotlib.ticker import FuncFormatter

    def minor(axis):
        def label(value, _):
            lo, hi = sorted(axis.get_view_interval())
            mantissa = round(value / 10 ** math.floor(math.log10(value)), 6) if value > 0 else 0
            return f"{value:g}" if lo > 0 and hi / lo <= 1e3 and mantissa in (2, 5) else ""
        return FuncFormatter(label)

    for axis in axes:
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_minor_formatter(minor(axis))


def _draw_raster(fig, spikes: dict, sizes: dict, s: dict, stride: int):
    shown = sum(int(np.count_nonzero(ids % stride == 0)) for ids, _ in spikes.values())
    dot = float(np.clip(20_000 / max(shown, 1), 1.0, 6.0))     # few spikes: bigger dots
    raster, rate = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    bin_ms = max(5.0, s["duration_ms"] / 200)
    edges = np.arange(0.0, s["duration_ms"] + bin_ms, bin_ms)
    offset, ticks, peak = 0, [], 0.0
    for i, (name, (ids, times)) in enumerate(spikes.items()):
        colour = f"C{i % 10}"
        keep = ids % stride == 0
        raster.scatter(times[keep], offset + ids[keep], s=dot, marker=".", linewidths=0, color=colour,
                       rasterized=True)
        ticks.append(offset + sizes[name] / 2)
        offset += sizes[name]
        if sizes[name]:
            hz = np.histogram(times, bins=edges)[0] / (sizes[name] * bin_ms / 1000)
            rate.stairs(hz, edges, color=colour, label=name)      # the last bin drawn to its end too
            peak = max(peak, float(hz.max(initial=0.0)))
    raster.set_yticks(ticks, list(spikes))
    raster.set_ylim(0, max(offset, 1))
    raster.set_ylabel("neuron" + (f" (every {ordinal(stride)})" if stride > 1 else ""))
    rate.set_xlabel("time (ms)")
    rate.set_ylabel(f"rate (Hz, {bin_ms:g} ms bins)")
    rate.set_xlim(0, s["duration_ms"])
    rate.set_ylim(0, 1.4 * peak or 1.0)       # headroom for the legend
    rate.legend(loc="upper right", fontsize="small", ncols=len(spikes))


def rate_window(s: dict) -> tuple[str, dict, dict]:
    """(the window in words, rates per population, rates per neuron type) of a summary: its
    steady-state rates over rates_window_ms, or, where that window is missing or empty (a run no
    longer than the transient, from a ranvier that cut it anyway), the whole run's rates_hz."""
    duration = float(s["duration_ms"])
    window = s.get("rates_window_ms")
    steady = s.get("rates_steady_hz")
    if window and len(window) == 2 and float(window[1]) > float(window[0]) and steady:
        lo, hi = map(float, window)
        by_type = s.get("rates_steady_by_type_hz") or {}
    else:
        lo, hi = 0.0, duration
        steady, by_type = s.get("rates_hz") or {}, {}     # no whole-run rates per type in summary.json
    span = f"{lo / 1000:g}–{hi / 1000:g}"
    if lo == 0 and hi == duration:
        words = f"{span} (whole run, onset included)"
    elif lo > 0:
        words = f"{span} (after a {lo / 1000:g} s transient)"
    else:
        words = span
    return words, steady, by_type


def section_rates(ctx) -> Section:
    run = ctx.raster_run
    sec = Section("2. Firing rates and activity",
                  f"Rates are summary.json's means over the window of each row (rates_steady_hz over "
                  f"rates_window_ms): from {STEADY_START_MS / 1000:g} s to the end for runs longer than "
                  f"{STEADY_START_MS / 1000:g} s, the whole run, onset transient included, for shorter ones. The raster "
                  f"and the population rates over time are drawn from spikes.h5 of run {ctx.name(run)}.")
    windows = {c.label: rate_window(c.median_run.summary) for c in ctx.configs}
    pops = list(dict.fromkeys(p for _, steady, _ in windows.values() for p in steady))
    types = list(dict.fromkeys(t for _, _, by_type in windows.values() for t in by_type))
    rows = []
    for c in ctx.configs:
        words, steady, by_type = windows[c.label]
        rows.append([c.label, words, *(_fixed(steady.get(p), 2) for p in pops),
                     *(_fixed(by_type.get(t), 2) for t in types), f"{c.median_run.summary.get('spikes_total', 0):,}"])
    sec.blocks.append(Table(["configuration", "window (s)", *(f"{p} (Hz)" for p in pops),
                             *(f"{t} (Hz)" for t in types), "spikes"], rows))
    _raster(ctx, run, sec)
    _up_down(ctx, sec)
    _plastic_weights(ctx, sec)
    return sec


def _draw_up_down(fig, runs: dict):
    axes = fig.subplots(len(runs), 1, squeeze=False)[:, 0]
    for ax, (label, d) in zip(axes, runs.items()):
        trace = d["rate_trace"]
        t = (np.arange(len(trace["hz"])) + 0.5) * trace["bin_ms"] / 1000
        for a, b in d.get("up_intervals_ms", []):
            ax.axvspan(a / 1000, b / 1000, color="C1", alpha=0.25, lw=0)
        ax.plot(t, trace["hz"], lw=0.8, color="C0")
        ax.axhline(d["up_threshold_hz"], color="k", lw=0.6, ls="--")
        ax.axhline(d["down_threshold_hz"], color="k", lw=0.6, ls=":")
        ax.set_ylabel("rate (Hz)")
        ax.set_title(f"{label}: {d['frequency_hz']:.2f} Hz slow oscillation, up {d['up_duration']['mean_ms']:.0f} ms, "
                     f"{100 * d['fraction_up']:.0f} % up", fontsize="small")
    axes[-1].set_xlabel("time (s)")


def _up_down(ctx, sec) -> None:
    """Up and down states (ranvier.analysis.updown): a table for every configuration, a plot where any has them."""
    rows, shown = [], {}
    for c in ctx.configs:
        d = c.median_run.summary.get("up_down")
        if not d:
            continue
        if d.get("has_up_down"):
            up, down = d["up_duration"], d["down_duration"]
            rows.append([c.label, "yes", f"{d['up_states']}", sig(d["frequency_hz"]), sig(up["mean_ms"]), sig(up["cv"]),
                         sig(down["mean_ms"]), sig(down["cv"]), sig(d["rate_up_hz"]), sig(d["rate_down_hz"])])
            if d.get("rate_trace", {}).get("hz"):
                shown[c.label] = d
        else:
            rows.append([c.label, "no", "0", *[DASH] * 7])
    if not rows:
        return
    sec.blocks.append("Up and down states (docs/dpsnn.md, \"Up/down analysis\"): the population rate in 5 ms bins, "
                      "smoothed (Gaussian, 20 ms), thresholds with hysteresis between its low and high levels (percentiles 10 and 98); "
                      "the first 0.5 s left out.")
    sec.blocks.append(Table(["configuration", "up/down", "up states", "slow oscillation (Hz)", "up (ms)", "up CV",
                             "down (ms)", "down CV", "rate up (Hz)", "rate down (Hz)"], rows))
    if shown:
        sec.blocks.append(figure("up_down.png", "Population rate (Hz per neuron) with the up states shaded; dashed: "
                                                "the up threshold, dotted: the down threshold.",
                                 lambda f: _draw_up_down(f, shown), size=(10, 1.2 + 2.0 * len(shown))))


def _raster(ctx, run, sec) -> None:
    spike_file = run.path / "spikes.h5"
    if not spike_file.is_file():
        sec.blocks.append(f"No raster: {ctx.name(run)} has no spikes.h5.")
        return
    try:
        spikes = read_spikes(spike_file, order=list(run.summary.get("rates_hz") or {}))
    except (OSError, KeyError) as e:
        sec.blocks.append(f"No raster: {spike_file} cannot be read ({e}).")
        return
    sizes = _population_sizes(spikes, run.summary)
    total = sum(ids.size for ids, _ in spikes.values())
    stride = max(1, math.ceil(total / RASTER_MAX_SPIKES))   # every stride-th neuron: whole spike trains
    caption = (f"Spikes of {ctx.name(run)} ({total:,} in all"
               + (f"; every {ordinal(stride)} neuron shown, at most about {RASTER_MAX_SPIKES:,} spikes" if stride > 1 else "")
               + "), populations in colour; below, each population's rate over time.")
    fig = figure("raster.png", caption, lambda f: _draw_raster(f, spikes, sizes, run.summary, stride), size=(10, 5.5))
    sec.blocks.append(fig)


def read_weight_traces(path: Path) -> dict:
    """weights.h5's /weight_trace: {edge population: (times_ms, weights [synapse, sample])}."""
    import h5py
    if not path.is_file():
        return {}
    with h5py.File(path, "r") as f:
        if "weight_trace" not in f:
            return {}
        return {name: (g["times_ms"][()], g["weights"][()]) for name, g in f["weight_trace"].items()}


def _draw_weights(fig, plasticity: dict, traces: dict):
    names = list(plasticity)
    axes = fig.subplots(2 if traces else 1, len(names), squeeze=False)
    for k, name in enumerate(names):
        ax = axes[0][k]
        for when, colour in (("initial", "0.6"), ("final", "C0")):
            d = plasticity[name][when]
            low, high = d["histogram_range"]
            counts = np.asarray(d["histogram"])
            edges = np.linspace(low, high, counts.size + 1)
            ax.stairs(counts, edges, color=colour, label=f"{when}: mean {d['mean']:.4g}, sd {d['sd']:.3g}",
                      fill=when == "initial", alpha=0.6 if when == "initial" else 1.0)
        ax.set_title(name.replace("_to_", " -> "))
        ax.set_xlabel("weight")
        ax.legend(fontsize=7)
        if traces:
            ax2 = axes[1][k]
            if name in traces:
                times, w = traces[name]
                for row in w:
                    ax2.plot(times / 1000.0, row, lw=0.8)
            ax2.set_xlabel("time (s)")
            ax2.set_ylabel("weight")
    axes[0][0].set_ylabel("synapses")


def _plastic_weights(ctx, sec) -> None:
    """Plastic runs: each projection's weight distribution, initial and final (summary.json), and
    the weight recorder's traces (weights.h5) when present; of the raster's run when it is
    plastic, else of the first plastic run."""
    plastic = [r for r in ctx.runs if r.summary.get("plasticity")]
    if not plastic:
        return
    run = ctx.raster_run if any(r is ctx.raster_run for r in plastic) else plastic[0]
    plasticity = run.summary["plasticity"]
    try:
        traces = read_weight_traces(run.path / "weights.h5")
    except (OSError, KeyError):
        traces = {}
    rows = [[name.replace("_to_", " -> "), f"{d['final']['synapses']:,}",
             f"{sig(d['initial']['mean'], 4)} / {sig(d['final']['mean'], 4)}",
             f"{sig(d['initial']['sd'], 3)} / {sig(d['final']['sd'], 3)}", d.get("synapse", "")]
            for name, d in plasticity.items()]
    sec.blocks.append(Table(["plastic projection", "synapses", "mean weight, initial / final",
                             "sd, initial / final", "rule"], rows))
    caption = (f"Weights of {ctx.name(run)}'s plastic projections: the distribution at the start (grey) and the "
               f"end (blue)" + ("; below, the weight recorder's synapses over time." if traces else "."))
    width = max(6.0, 3.2 * len(plasticity))
    sec.blocks.append(figure("weights.png", caption, lambda f: _draw_weights(f, plasticity, traces),
                             size=(width, 6.0 if traces else 3.5)))


# -- section 3: profiling (the study's Table I) ----------------------------------------------
def phase_shares(s: dict) -> dict[str, float | None]:
    """Computation, communication, barrier (and the rest) as % of the simulate wall time."""
    wall, p = s["simulate_seconds"], s.get("phase_seconds") or {}
    if not wall or not p:
        return dict.fromkeys(("computation", "communication", "barrier", "other"))
    compute = sum(p.get(k, 0.0) for k in COMPUTE_PHASES)
    shares = {"computation": compute, "communication": p.get("communicate", 0.0),
              "barrier": p.get("synchronize", 0.0)}
    shares["other"] = wall - sum(shares.values())
    return {k: 100.0 * v / wall for k, v in shares.items()}


def section_profiling(ctx) -> Section:
    sec = Section("3. Profiling: computation, communication, barrier",
                  "Phase seconds (mean over ranks, summary.json phase_seconds) as % of the same run's simulate wall "
                  "time, median over repeats: computation = deliver + update + collocate, communication = "
                  "communicate, barrier = synchronize, other = the rest of the wall time; real-time factor = wall "
                  "seconds per simulated second.")
    rows = []
    for c in ctx.configs:
        shares = [phase_shares(r.summary) for r in c.runs]
        wall = _median(r.summary["simulate_seconds"] for r in c.runs)
        rows.append([c.label, str(c.cores), str(len(c.runs)), sig(wall),
                     *(_fixed(_median(sh[k] for sh in shares)) for k in ("computation", "communication", "barrier",
                                                                         "other")),
                     sig(min(c.rtfs())), sig(_median(c.rtfs()))])
    sec.blocks.append(Table(["configuration", "cores", "runs", "wall (s, median)", "computation %", "communication %",
                             "barrier %", "other %", "real-time factor (min)", "real-time factor (median)"], rows))
    return sec


# -- section 4: strong scaling ---------------------------------------------------------------
def scaling_series(configs: list[Config]) -> dict[str, list[Config]]:
    """Lines of the scaling plot: one per problem and scheme; split by threads per rank when two
    configurations of a line would share a core count (1 rank x 2 threads and 2 ranks x 1)."""
    def problem(c):
        s = c.summary
        return (s["model"], s["neurons"], _scheme(s), s.get("placement"))

    lines: dict[tuple, list[Config]] = {}
    for c in configs:
        lines.setdefault(problem(c), []).append(c)
    split_threads = any(len({c.cores for c in cs}) < len(cs) for cs in lines.values())
    varying = _varying(configs)
    series: dict[str, list[Config]] = {}
    for cs in lines.values():
        for c in cs:
            s = c.summary
            parts = [LABEL_FIELDS[name](s) for name in varying]
            if split_threads:
                parts.append(f"{_plural(s['threads'], 'thread')} per rank")
            series.setdefault(", ".join(parts) or "all runs", []).append(c)
    return {name: sorted(cs, key=lambda c: c.cores) for name, cs in series.items()}


def _draw_scaling(fig, series: dict[str, list[Config]]):
    ax = fig.subplots()
    cores = [c.cores for cs in series.values() for c in cs]
    rtfs = [r for cs in series.values() for c in cs for r in c.rtfs()] + [1.0]
    for i, (name, cs) in enumerate(series.items()):
        x = np.array([c.cores for c in cs], dtype=float)
        med = np.array([_median(c.rtfs()) for c in cs])
        lo, hi = med - [min(c.rtfs()) for c in cs], [max(c.rtfs()) for c in cs] - med
        ax.errorbar(x, med, yerr=[lo, hi], marker="o", capsize=3, color=f"C{i % 10}", label=name)
        ax.plot(x, med[0] * x[0] / x, ls=":", color=f"C{i % 10}")      # ideal strong scaling
    ax.axhline(1.0, color="red", ls="--", lw=1, label="real time")
    ax.plot([], [], ls=":", color="grey", label="ideal scaling")
    if max(cores) / min(cores) >= 8:      # wide ranges read better on log axes
        ax.set_xscale("log", base=2)
    if max(rtfs) / min(rtfs) >= 10:
        ax.set_yscale("log")
        _plain_log_labels(ax.yaxis)
    ax.set_xticks(sorted(set(cores)), [str(c) for c in sorted(set(cores))])
    ax.set_xlabel("cores (ranks × threads)")
    ax.set_ylabel("real-time factor (wall s per simulated s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")


def section_scaling(ctx) -> Section:
    sec = Section("4. Strong scaling",
                  "Real-time factor per configuration (line: median over repeats, bars: min to max) against total "
                  f"cores; {speedup.definition('the smallest core count of the line')}.")
    if len({c.cores for c in ctx.configs}) < 2:
        sec.blocks.append("All runs use the same number of cores: no scaling to show.")
        return sec
    series = scaling_series(ctx.configs)
    sec.blocks.append(figure("scaling.png", "Real-time factor against cores; dashed red: real time (factor 1); dotted: "
                                            "ideal scaling from the smallest core count of each line.",
                             lambda f: _draw_scaling(f, series), size=(8, 4.8)))
    rows = []
    for name, cs in series.items():
        base = cs[0]
        for c in cs:
            figures = speedup.scaling(_median(c.rtfs()), c.cores, _median(base.rtfs()), base.cores,
                                      oversubscribed=c.oversubscribed, base_oversubscribed=base.oversubscribed)
            efficiency = (figures.note or DASH) if figures.efficiency is None else _fixed(100 * figures.efficiency)
            rows.append([name, c.label, str(c.cores), sig(min(c.rtfs())), sig(_median(c.rtfs())),
                         sig(figures.speedup), efficiency])
    sec.blocks.append(Table(["line", "configuration", "cores", "real-time factor (min)", "real-time factor (median)",
                             "speedup", "parallel efficiency %"], rows))
    return sec


# -- section 5: phases per rank --------------------------------------------------------------
def _draw_phases(fig, configs: list[Config]):
    # Each panel its own y scale: configurations differ in wall time by their core counts, and a
    # shared scale flattens the small ones; a panel compares the ranks of one run.
    axes = fig.subplots(1, len(configs), squeeze=False)[0]
    for ax, c in zip(axes, configs):
        per_rank = c.median_run.summary.get("phase_seconds_per_rank") or {}
        ranks = np.arange(c.summary["ranks"])
        bottom = np.zeros(ranks.size)
        for phase in PHASES:
            values = np.asarray(per_rank.get(phase, np.zeros(ranks.size)), dtype=float)
            ax.bar(ranks, values, bottom=bottom, color=PHASE_COLOURS[phase], label=phase, width=0.8)
            bottom += values
        ax.set_title(c.label, fontsize="small")
        ax.set_xlabel("rank")
        ax.set_xticks(ranks if ranks.size <= 10 else ranks[::math.ceil(ranks.size / 8)])
        ax.set_ylabel("seconds")
    # beside the last panel, not over its bars
    axes[-1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def section_phases(ctx) -> Section:
    measured = [c for c in ctx.configs if c.median_run.summary.get("phase_seconds_per_rank")]
    shown = sorted(measured, key=lambda c: (-c.cores, c.label))[:PHASE_FIGURE_CONFIGS]
    shown = [c for c in measured if c in shown]
    sec = Section("5. Phases per rank",
                  "summary.json's phase_seconds_per_rank of the median run of each configuration"
                  + (f" (the {len(shown)} with the most cores)." if len(shown) < len(measured) else "."))
    if not shown:
        sec.blocks.append("No phase_seconds_per_rank in the summaries: nothing to draw.")
        return sec
    width = min(16.0, 3.0 + 3.0 * len(shown))
    caption = "Seconds per phase on each rank (stacked)" + (
        "; each panel has its own y scale (compare ranks within a panel, configurations in section 3's table)."
        if len(shown) > 1 else ".")
    sec.blocks.append(figure("phases.png", caption, lambda f: _draw_phases(f, shown), size=(width, 3.8)))
    missing = [c.label for c in ctx.configs if c not in measured]
    if missing:
        sec.blocks.append(f"No phase_seconds_per_rank in the median run of {', '.join(missing)}.")
    return sec


# -- section 6: cycle times ------------------------------------------------------------------
def read_cycle_times(path: Path) -> np.ndarray:
    """deliver + update + collocate of every cycle on every rank [ranks, cycles] (seconds)."""
    import h5py

    from .cycle_stats import cycle_times

    with h5py.File(path, "r") as f:
        ds = f["cycle_seconds"]
        phases = [p.decode() if isinstance(p, bytes) else str(p) for p in ds.attrs.get("phases", PHASES)]
        return cycle_times(ds[()], phases)


def _draw_cycle_times(fig, times: dict[str, np.ndarray]):
    ax = fig.subplots()
    positive = np.concatenate([t[t > 0] for t in times.values()]) * 1e6
    edges = np.geomspace(positive.min(), positive.max() * 1.0001, 61) if positive.size else 60
    for i, (label, t) in enumerate(times.items()):
        ax.hist(t[t > 0].ravel() * 1e6, bins=edges, histtype="step", lw=1.5, color=f"C{i % 10}", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_labels(ax.xaxis, ax.yaxis)
    ax.set_xlabel("cycle time: deliver + update + collocate (µs)")
    ax.set_ylabel("cycles (all ranks)")
    ax.legend(fontsize="small")


def section_cycle_times(ctx) -> Section:
    sec = Section("6. Cycle-time distributions",
                  "deliver + update + collocate of every cycle on every rank, from timers.h5 of the median run of "
                  "each configuration; the statistics are summary.json's cycle_statistics (pooled over ranks, after "
                  "its transient cycles).")
    times, missing = {}, []
    for c in ctx.configs:
        path = c.median_run.path / "timers.h5"
        try:
            times[c.label] = read_cycle_times(path)
        except (OSError, KeyError, ConfigError) as e:
            missing.append(f"{ctx.name(c.median_run)} ({e})" if path.is_file() else ctx.name(c.median_run))
    for c in ctx.configs:                  # log axes: positive times only
        if c.label in times and not np.any(times[c.label] > 0):
            del times[c.label]
            missing.append(f"{ctx.name(c.median_run)} (no cycle time above zero)")
    if times:
        sec.blocks.append(figure("cycle_times.png", "Histogram of cycle times per configuration (log-log), every cycle, the "
                                                    "transient included.",
                                 lambda f: _draw_cycle_times(f, times), size=(8, 4.2)))
    if missing:
        sec.blocks.append(f"No cycle times from timers.h5 of {', '.join(missing)}.")
    rows = []
    for c in ctx.configs:
        stats = c.median_run.summary.get("cycle_statistics")
        if not stats:
            rows.append([c.label, *[DASH] * 6])
            continue
        p, acf = stats["pooled"], stats.get("autocorrelation") or []
        skipped = stats.get("transient_cycles")
        rows.append([c.label, f"{stats['cycles']:,}" + (f" ({skipped:,} skipped)" if skipped is not None else ""),
                     str(stats["D"]), sig(p["mean_s"] * 1e6), sig(p.get("cv")),
                     sig(p.get("lumped_cv")), sig(acf[0]) if acf else DASH])
    sec.blocks.append(Table(["configuration", "cycles (transient skipped)", "D (cycles lumped)", "mean (µs)", "CV", "lumped CV (over D cycles)",
                             "autocorrelation, lag 1"], rows))
    _deadlines(ctx, sec)
    return sec


def _draw_lags(fig, traces: dict):
    ax = fig.subplots()
    for i, (label, d) in enumerate(traces.items()):
        ax.plot(d["lag_trace"]["t_s"], d["lag_trace"]["lag_ms"], lw=1.2, color=f"C{i % 10}", label=label)
    ax.axhline(0.0, color="k", lw=0.8, ls="--")
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("lag behind biology (ms, largest per stretch)")
    ax.legend(fontsize="small")


def _deadlines(ctx, sec) -> None:
    """Hard and soft real time (docs/real-time.md), from summary.json's deadlines."""
    rows, traces = [], {}
    for c in ctx.configs:
        d = c.median_run.summary.get("deadlines")
        if not d:
            continue
        r = d["cycle_time_ratio"]
        rows.append([c.label, "yes" if d.get("paced") else "no", f"{100 * d['cycles_on_time_fraction']:.2f}",
                     "yes" if d["soft_real_time"] else "no", sig(d["worst_lag_ms"]), sig(r["p50"]), sig(r["p99"]),
                     sig(r["max"]), f"{100 * d['cycles_over_budget_fraction']:.2f}"])
        if d.get("lag_trace", {}).get("t_s"):
            traces[c.label] = d
    if not rows:
        return
    sec.blocks.append("Real time (docs/real-time.md): a cycle is on time when its work ended by the run's start plus "
                      "the simulated time at its end (hard real time); soft real time: the run's last cycle on time. "
                      "Cycle time ratio: a cycle's work over its simulated length.")
    sec.blocks.append(Table(["configuration", "paced", "cycles on time %", "soft real time", "worst lag (ms)",
                             "cycle time ratio p50", "p99", "max", "over budget %"], rows))
    if traces:
        sec.blocks.append(figure("deadline_lag.png", "Lag of wall time behind simulated time over the median run of "
                                                      "each configuration (negative: ahead of biology).",
                                 lambda f: _draw_lags(f, traces), size=(8, 3.6)))


# -- section 7: energy (the study's Tables II and III) ---------------------------------------
NO_ENERGY = {"available": False, "recorded": False,
             "reason": "no energy record in summary.json (written by a ranvier without energy measurement)"}


def energy_of(run: Run) -> dict:
    e = run.summary.get("energy")
    if not isinstance(e, dict):
        return NO_ENERGY
    if not e.get("available"):
        return {**e, "reason": e.get("reason") or "no reason given"}
    return e


def _uj(e: dict, kind: str):
    per_event = (e.get("j_per_synaptic_event") or {}).get(kind)
    return None if _missing(per_event) else 1e6 * per_event


def _short_reason(e: dict) -> str:
    """A few words for a table cell; the full reason goes into a note."""
    if e.get("recorded") is False:
        return "not recorded"
    if "switched off" in e["reason"]:
        return "switched off"
    return "no meter" if not e.get("meter") else f"{_env_text(e['meter'])}: no reading"


def config_energy(c: Config) -> dict:
    """Medians over the repeats that measured energy, or the reason none did."""
    measured = [energy_of(r) for r in c.runs if energy_of(r).get("available")]
    if not measured:
        e = energy_of(c.runs[0])
        return {"available": False, "reason": e["reason"], "short": _short_reason(e)}

    def median(get):
        return _median(get(e) for e in measured)

    meters = dict.fromkeys(_env_text(e.get("meter")) + (f" ({_env_text(e['describes'])})" if e.get("describes") else "")
                           for e in measured)
    rates = dict.fromkeys(f"{e['rate_hz']:g} Hz" for e in measured if not _missing(e.get("rate_hz")))
    notes = dict.fromkeys(_env_text(e["notes"]) for e in measured if e.get("notes"))
    return {"available": True, "runs": len(measured),
            "time_s": median(lambda e: e.get("simulation_s")),
            "power_w": median(lambda e: e.get("mean_power_w")),
            "baseline_w": median(lambda e: e.get("baseline_power_w")),
            "above_w": median(lambda e: e.get("mean_power_above_baseline_w")),
            "energy_j": median(lambda e: e.get("energy_j")),
            "total_j": median(lambda e: e.get("energy_total_j")),
            "uj_all": median(lambda e: _uj(e, "all")), "uj_recurrent": median(lambda e: _uj(e, "recurrent")),
            "meter": "; ".join(m for m in meters if m) or DASH, "rate": ", ".join(rates),
            "estimate": any(bool(e.get("estimate")) for e in measured), "notes": "; ".join(notes)}


def section_energy(ctx) -> Section:
    sec = Section("7. Time, power and energy to solution",
                  "The energy record of each summary.json as the run measured it (nothing is computed or estimated "
                  "here), median over the repeats that measured it: energy to solution is the energy above the idle "
                  "baseline over the simulation (energy_j), as in the study; the total includes the baseline; µJ per "
                  "synaptic event is energy to solution / all (recurrent + external) or recurrent events.")
    rows, notes, numbers = [], {}, []
    for c in ctx.configs:
        e = ctx.energy[c.label]
        wall = sig(_median(r.summary["simulate_seconds"] for r in c.runs))
        if not e["available"]:
            # each distinct reason is stated once, in a note under the table; rows refer to it
            number, new = ctx.note(e["reason"])
            numbers += [number] if new else []
            rows.append([c.label, str(c.cores), wall, DASH, DASH, DASH, f"{e['short']}: see note {number}", DASH,
                         DASH, DASH, DASH])
            continue
        time_s = e["time_s"] if e["time_s"] is not None else _median(r.summary["simulate_seconds"] for r in c.runs)
        rows.append([c.label, str(c.cores), sig(time_s), sig(e["power_w"]), sig(e["baseline_w"]), sig(e["above_w"]),
                     sig(e["energy_j"]), sig(e["total_j"]), f"{sig(e['uj_all'])} / {sig(e['uj_recurrent'])}",
                     e["meter"] + (f" at {e['rate']}" if e["rate"] else ""), "yes" if e["estimate"] else "no"])
        if e["notes"]:
            notes.setdefault(e["notes"], []).append(c.label)
    sec.blocks.append(Table(["configuration", "cores", "time (s)", "mean power (W)", "baseline (W)",
                             "above baseline (W)", "energy to solution (J)", "total with baseline (J)",
                             "µJ per synaptic event (all / recurrent)", "meter", "estimate"], rows))
    sec.blocks += [ctx.note_text(number) for number in numbers]
    for note, labels in notes.items():       # once per distinct note, not once per configuration
        where = "all configurations" if len(labels) == len(ctx.configs) else ", ".join(labels)
        sec.blocks.append(f"The meter's note ({where}): {note}")
    return sec


# -- section 8: the literature (the study's Table IV) ----------------------------------------
def _network(s: dict) -> str:
    return f"{s['model']}, {s['neurons']:,} neurons, {sig(s['duration_ms'] / 1000)} s simulated"


def section_literature(ctx) -> Section:
    sec = Section("8. Energy per synaptic event against the literature",
                  f"The reference figures are copied from Table IV of {STUDY_REF} (all excluding the baseline power; time, "
                  "power and energy from the 4-core rows of its Tables II and III); this machine's are section 7's.")
    rows = [list(row) for row in LITERATURE]
    cpus = [dict(machine_rows(r.environment)).get("CPU") for r in ctx.runs if r.environment]
    cpu = ", ".join(dict.fromkeys(c for c in cpus if c)) or "this machine"
    unavailable: dict[tuple[str, str], list[Config]] = {}
    for c in ctx.configs:
        e = ctx.energy[c.label]
        if not e["available"]:
            unavailable.setdefault((e["short"], e["reason"]), []).append(c)
            continue
        uj = f"{sig(e['uj_all'])} (all), {sig(e['uj_recurrent'])} (recurrent)"
        uj += " (estimate)" if e["estimate"] else ""
        rows.append([f"Ranvier, {c.label}", cpu, _network(c.summary), uj, sig(e["time_s"]), sig(e["above_w"]),
                     sig(e["energy_j"]), "this report, section 7"])
    numbers = []
    for (short, reason), cs in unavailable.items():      # one row per reason, not one per configuration
        who = cs[0].label if len(cs) == 1 else f"{len(cs)} configurations"
        networks = ", ".join(dict.fromkeys(_network(c.summary) for c in cs))
        number, new = ctx.note(reason)      # section 7 stated it already: the same number
        numbers += [number] if new else []
        rows.append([f"Ranvier, {who}", cpu, networks, f"{short}: see note {number}", DASH, DASH, DASH,
                     "this report, section 7"])
    sec.blocks.append(Table(["simulator", "platform", "network", "µJ per synaptic event", "time (s)",
                             "power above baseline (W)", "energy (J)", "source"], rows))
    sec.blocks += [ctx.note_text(number) for number in numbers]
    sec.blocks.append(f"The study {STUDY_REF} counts synaptic events as neurons × synapses per neuron × mean rate × simulated "
                      f"time, that is recurrent events: compare its figures with the recurrent column.")
    sec.blocks.append(f"{STUDY_REF} {STUDY}.")
    sec.blocks.append(f"{COMPASS_REF} {COMPASS}.")
    return sec


# -- section 9: theory -----------------------------------------------------------------------
def theory_rows(s: dict) -> list[list[str]]:
    """(quantity, measured, predicted, model) from summary['theory'], whatever part of it is there."""
    th = s.get("theory") or {}
    rows = []
    sync = th.get("synchronization")
    # one rank and D = 1: nobody waits, every ratio is 1 by definition
    if sync and (sync.get("ranks", 1) > 1 or sync.get("D", 1) > 1):
        D = sync.get("D", 1)
        def both(key):
            return f"{sig(sync.get(key))} (independent), {sig(sync.get(key + '_correlated'))} (measured correlation)"

        rows.append(["CV of cycle times lumped over D / CV per cycle", sig(sync.get("cv_ratio_measured")),
                     both("cv_ratio_predicted"), f"1/√D, D = {D}"])
        rows.append(["synchronization ratio", sig(sync.get("sync_ratio_from_cycle_times")),
                     both("sync_ratio_predicted"),
                     f"waiting for the slowest of {_plural(sync.get('ranks', 1), 'rank')}"])
        rows.append(["slowest rank in the top fraction of cycle times", sig(sync.get("top_fraction_measured")),
                     sig(sync.get("top_fraction_predicted")), "independent ranks"])
    access = th.get("irregular_access")
    if access:
        layout = (f"K = {sig(access.get('K'))}, {_plural(access.get('M', 1), 'rank')} × "
                  f"{_plural(access.get('T', 1), 'thread')}, {access.get('placement')}")
        rows.append(["irregular-access fraction of deliveries", DASH, sig(access.get("predicted_fraction")), layout])
        rows.append(["delivery time per synaptic event (ns)", sig(access.get("delivery_ns_per_event")), DASH,
                     "measured deliver time / recurrent events"])
    segments = th.get("delay_segments")
    if segments:
        rows.append(["delay segments per synaptic event", sig(segments.get("measured_per_event")),
                     sig(segments.get("predicted_per_event")), "each segment one irregular access"])
    comm = th.get("communication")
    if comm:
        def us(key):
            return None if _missing(comm.get(key)) else comm[key] * 1e6

        rows.append(["communicate per cycle (µs)", sig(us("measured_s_per_cycle")), sig(us("predicted_s_per_cycle")),
                     f"latency + bytes / bandwidth, MPI fit on {comm.get('fit_ranks')} ranks"])
    return rows


def section_theory(ctx) -> Section:
    sec = Section("9. Theory next to measurement",
                  "summary.json's theory of the median run of each configuration: the models of docs/theory.md evaluated "
                  "for the run's parameters, next to the measured quantity (a dash where a side has no value).")
    rows = [[c.label, *row] for c in ctx.configs for row in theory_rows(c.median_run.summary)]
    if rows:
        sec.blocks.append(Table(["configuration", "quantity", "measured", "predicted", "model"], rows))
    else:
        sec.blocks.append("No theory in the summaries.")
    return sec


# -- bench results: the structure-aware study (ranvier bench structure-aware) ------------------
STRUCTURE_AWARE_JSON = "structure_aware.json"


def section_structure_aware(folder: Path, name: str, index: int) -> Section:
    from ..bench import areas, structure_aware as sa
    data = _read_json(folder / STRUCTURE_AWARE_JSON)
    missing = [key for key in ("workload", "ranks", "D", "runs", "summary", "comparison", "area_load")
               if key not in data]
    if missing:
        raise ConfigError(f"report: '{folder / STRUCTURE_AWARE_JSON}' lacks {', '.join(missing)}; is it written by "
                          f"'ranvier bench structure-aware'?")
    summary, comparison, load = data["summary"], data["comparison"], data["area_load"]
    runs = data["runs"]
    threads = runs[0].get("threads", "?") if runs else "?"
    repeats = max((r.get("repeat", 1) for r in runs), default=0)
    duration = runs[0].get("duration_ms") if runs else None
    sec = Section(f"Structure-aware study: {data['workload']} on {data['ranks']} rank(s) ({name})",
                  f"ranvier bench structure-aware: the same network under each placement and scheme, "
                  f"{repeats} repeat(s) each{'' if duration is None else f' of {duration:g} ms'}, "
                  f"{threads} thread(s) per rank, global exchange every D = {data['D']} cycles for two-tier; "
                  f"medians over repeats; synchronisation predicted by theory.md 1.")
    for caption, (header, rows) in (
            ("Real-time factor and phases, µs per cycle (mean over ranks)", areas.phase_table(summary, "config")),
            ("Cycle times (deliver + update + collocate), lumped by D", areas.cycle_table(summary, "config")),
            ("Against the conventional scheme (round-robin): synchronisation per cycle, measured and predicted",
             sa.comparison_table(comparison)),
            ("Load per rank (the slowest rank sets every cycle)", sa.rank_table(summary)),
            ("Load per area (spikes of the conventional run; rate / mean shows the hotspot)", sa.area_table(load))):
        sec.blocks += [caption, Table(header, rows)]
    sec.blocks.append(figure(f"structure_aware_{index}.png",
                             "Load per area, phases per configuration, compute per rank",
                             lambda fig: sa.draw(fig, summary, load, f"{data['workload']}: {data['ranks']} rank(s), "
                                                                     f"D = {data['D']}"), size=(17.0, 5.0)))
    return sec


SECTIONS = (section_parameters, section_rates, section_profiling, section_scaling, section_phases,
            section_cycle_times, section_energy, section_literature, section_theory)


# -- the report ------------------------------------------------------------------------------
@dataclass
class Context:
    runs: list[Run]
    configs: list[Config]
    raster_run: Run
    root: Path
    benches: list = field(default_factory=list)     # folders of structure-aware bench results
    energy: dict = field(default_factory=dict)      # configuration label -> config_energy
    notes: dict = field(default_factory=dict)       # note text -> its number, unique on the page

    def note(self, text: str) -> tuple[int, bool]:
        """The page-wide number of a note, and whether this is its first mention (then the caller
        states it under its table; later mentions only refer to the number)."""
        new = text not in self.notes
        number = self.notes.setdefault(text, len(self.notes) + 1)
        return number, new

    def note_text(self, number: int) -> str:
        text = next(t for t, n in self.notes.items() if n == number)
        return f"Note {number}: {text}"

    def name(self, run: Run) -> str:
        """A run's folder relative to the folder all runs share."""
        rel = os.path.relpath(run.path.resolve(), self.root)
        return run.path.name if rel == "." else rel


def build(paths, raster: Path | None = None) -> tuple[Context, list[Section]]:
    """The sections of run archives (when there are any), then one per structure-aware bench
    result among the paths."""
    benches = find_structure_aware(paths)
    runs = [load_run(p) for p in find_runs(paths, required=not benches)]
    configs = group(runs)
    resolved = [r.path.resolve() for r in runs] + [b.resolve() for b in benches]
    root = Path(os.path.commonpath(resolved)) if len(resolved) > 1 else resolved[0].parent
    raster_run = configs[0].median_run if configs else None
    if raster is not None:
        matches = [r for r in runs if r.path.resolve() == Path(raster).resolve()]
        if not matches:
            raise ConfigError(f"report: --raster '{raster}' is not one of the runs of the report")
        raster_run = matches[0]
    ctx = Context(runs, configs, raster_run, root, benches=benches)
    ctx.energy = {c.label: config_energy(c) for c in configs}
    sections = [make(ctx) for make in SECTIONS] if runs else []
    for i, folder in enumerate(benches, 1):
        rel = os.path.relpath(folder.resolve(), root)
        sections.append(section_structure_aware(folder, folder.name if rel == "." else rel, i))
    return ctx, sections


def default_title(ctx: Context) -> str:
    models = ", ".join(dict.fromkeys(f"{c.summary['model']} ({c.summary['neurons']:,} neurons)" for c in ctx.configs))
    if not ctx.runs:
        return f"Ranvier report: structure-aware study ({_plural(len(ctx.benches), 'bench result')})"
    return f"Ranvier report: {models}"


def _intro(ctx: Context) -> str:
    if not ctx.runs:
        return (f"{_plural(len(ctx.benches), 'structure-aware bench result')} under {ctx.root}; generated "
                f"{time.strftime('%Y-%m-%d %H:%M:%S %z')}. Real-time factor = wall seconds per simulated second.")
    return (f"{_plural(len(ctx.runs), 'run')} in {_plural(len(ctx.configs), 'configuration')} under {ctx.root}; "
            f"generated {time.strftime('%Y-%m-%d %H:%M:%S %z')}. Real-time factor = wall seconds per simulated "
            f"second (below 1: faster than real time).")


CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
p.how { color: #555; font-style: italic; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } tr:nth-child(even) td { background: #fafafa; }
td:first-child { white-space: nowrap; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: 0.9em; }
"""

# Optional: lets a headless browser report how many plots decoded (data-images-ok on <body>).
SCRIPT = """window.addEventListener("load", function () {
  var ok = 0;
  for (var i = 0; i < document.images.length; i++) {
    var img = document.images[i];
    if (img.complete && img.naturalWidth > 0) ok++;
  }
  document.body.dataset.imagesOk = String(ok);
});"""


def render_html(title: str, intro: str, sections: list[Section]) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{e(title)}</title><style>{CSS}</style></head><body>", f"<h1>{e(title)}</h1>", f"<p>{e(intro)}</p>"]
    for sec in sections:
        out += [f"<section><h2>{e(sec.title)}</h2>", f'<p class="how">{e(sec.how)}</p>']
        for block in sec.blocks:
            if isinstance(block, Table):
                out.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in block.header)
                           + "</tr></thead><tbody>")
                out += ["<tr>" + "".join(f"<td>{e(cell)}</td>" for cell in row) + "</tr>" for row in block.rows]
                out.append("</tbody></table>")
            elif isinstance(block, Figure):
                data = base64.b64encode(block.png).decode("ascii")
                out.append(f'<figure><img src="data:image/png;base64,{data}" alt="{e(block.caption)}">'
                           f"<figcaption>{e(block.caption)}</figcaption></figure>")
            else:
                out.append(f"<p>{e(block)}</p>")
        out.append("</section>")
    out += [f"<script>{SCRIPT}</script>", "</body></html>"]
    return "\n".join(out) + "\n"


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(title: str, intro: str, sections: list[Section]) -> str:
    out = [f"# {title}", "", intro, ""]
    for sec in sections:
        out += [f"## {sec.title}", "", f"*{sec.how}*", ""]
        for block in sec.blocks:
            if isinstance(block, Table):
                out.append("| " + " | ".join(map(_md_cell, block.header)) + " |")
                out.append("|" + "---|" * len(block.header))
                out += ["| " + " | ".join(map(_md_cell, row)) + " |" for row in block.rows]
            elif isinstance(block, Figure):
                out += [f"![{_md_cell(block.caption)}](figures/{block.name})", "", f"*{block.caption}*"]
            else:
                out.append(block)
            out.append("")
    return "\n".join(out)


FIGURE_NAMES = ("raster.png", "scaling.png", "phases.png", "cycle_times.png", "weights.png", "deadline_lag.png",
                "up_down.png")


class Written(NamedTuple):
    html: Path
    markdown: Path
    figures: list[Path]          # the PNGs of report.md, in out/figures/; none where none was drawn


def write_report(paths, out, title: str | None = None, raster: Path | None = None) -> Written:
    """Writes out/report.html (self-contained) and out/report.md (figures in out/figures/, a folder
    made only when there are figures)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"report: --out '{out}' exists and is not a folder; choose another path")
    ctx, sections = build(paths, raster)
    title = title or default_title(ctx)
    intro = _intro(ctx)
    figures = [b for sec in sections for b in sec.blocks if isinstance(b, Figure)]
    html_path, md_path, folder = out / "report.html", out / "report.md", out / "figures"
    try:
        out.mkdir(parents=True, exist_ok=True)
        if figures:
            folder.mkdir(exist_ok=True)
        for fig in figures:
            (folder / fig.name).write_bytes(fig.png)
        stale = set(FIGURE_NAMES) | {p.name for p in folder.glob("structure_aware_*.png")}
        for name in stale - {fig.name for fig in figures}:    # left by an earlier report
            (folder / name).unlink(missing_ok=True)
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        html_path.write_text(render_html(title, intro, sections), encoding="utf-8")
        md_path.write_text(render_markdown(title, intro, sections), encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"report: cannot write '{e.filename or out}': {e.strerror}; choose another --out") from None
    return Written(html_path, md_path, [folder / fig.name for fig in figures])


# -- the command line ------------------------------------------------------------------------
def add_parser(commands) -> argparse.ArgumentParser:
    """`ranvier report DIR [DIR ...] [--out OUT] [--title TEXT] [--raster RUN]` on a subparsers object."""
    parser = commands.add_parser(
        "report", allow_abbrev=False,
        help="HTML and Markdown report of run archives (ranvier run --out) and structure-aware bench results",
        description="Write report.html (self-contained, plots inline) and report.md (plots in figures/) from run "
                    "archives: parameters, rates and raster, profiling, strong scaling, phases per rank, cycle "
                    "times, energy to solution and J per synaptic event next to the literature, theory; and from "
                    "'ranvier bench structure-aware' results: phases, synchronisation against theory, load per "
                    "rank and per area.")
    parser.add_argument("dirs", nargs="+", metavar="DIR",
                        help="a run folder (ranvier run --out DIR), a folder of 'ranvier bench structure-aware', or a "
                             "folder searched for them")
    parser.add_argument("--out", metavar="OUT",
                        help="folder for the report (default: DIR/report for one DIR, else report-<timestamp>)")
    parser.add_argument("--title", metavar="TEXT", help="the report's title")
    parser.add_argument("--raster", metavar="RUN", help="the run folder whose spikes are drawn (default: the median "
                                                        "run of the first configuration)")
    return parser


def default_out(dirs) -> Path:
    if len(dirs) == 1:
        first = Path(dirs[0])
        return (first.parent if first.is_file() else first) / "report"
    return Path(f"report-{time.strftime('%Y%m%d-%H%M%S')}")


def command(args) -> int:
    out = Path(args.out) if args.out else default_out(args.dirs)
    written = write_report(args.dirs, out, title=args.title, raster=args.raster)
    print(f"report written: {written.html}")
    figures = f" ({_plural(len(written.figures), 'figure')} in {written.figures[0].parent})" if written.figures else ""
    print(f"                {written.markdown}{figures}")
    return 0
