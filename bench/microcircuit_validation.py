#!/usr/bin/env python3
"""Validate the microcircuit (Potjans & Diesmann 2014) against its reference rates, over seeds.

    python bench/microcircuit_validation.py --scale 1 --seeds 1,2,3 --duration-ms 10500 \\
        --transient-ms 500 --threads 2 --out DIR [--set KEY=VALUE ...]
    python bench/microcircuit_validation.py --from DIR          # recompute from DIR/seed-*/

For each seed, one after the other (a full-scale run needs ~2.5 GB; one process per seed
frees it in between):

    ranvier run --model microcircuit --set scale=S [--set ...] --threads T --duration-ms D
                --seed SEED --out DIR/seed-SEED --force --quiet

then reads DIR/seed-SEED/spikes.h5 and summary.json, computes per population the mean rate,
the CV of inter-spike intervals and the synchrony over [transient, duration) (definitions in
ranvier.validation and docs/microcircuit.md), compares the mean rate over seeds with the
reference (10 % for excitatory, 15 % for inhibitory populations), prints a table and writes
DIR/validation.json, DIR/validation.csv and DIR/rates.png.

Exit status: 0 every reference population within tolerance; 1 some population outside it;
2 bad arguments (one line on stderr); 3 a run failed or its results could not be read.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

PROG = "microcircuit_validation"
MODEL = "microcircuit"
DEFAULT_SEEDS = (1, 2, 3)
DEFAULT_DURATION_MS = 10500.0
DEFAULT_TRANSIENT_MS = 500.0
SEED_FOLDER = "seed-{}"
POPULATIONS_FILE = "populations.json"     # written next to a run's results: [[name, first_id, size], ...]
JSON_FILE, CSV_FILE, PNG_FILE = "validation.json", "validation.csv", "rates.png"
EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_RUN_FAILED = 0, 1, 2, 3
CSV_COLUMNS = ["population", "seeds", "rate_mean_hz", "rate_sd_hz", "reference_hz", "deviation_pct",
               "tolerance_pct", "passed", "cv_isi_mean", "cv_isi_sd", "cv_neurons_mean",
               "synchrony_mean", "synchrony_sd", "synchrony_neurons"]


class BadInput(Exception):
    """Bad arguments: one line on stderr, exit status 2."""


class RunFailed(Exception):
    """A run failed or its results are unreadable: exit status 3."""


# -- arguments ------------------------------------------------------------------------------
class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise BadInput(f"{message} (see '{self.prog} --help')")


def _seeds(text: str) -> list[int]:
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(re.fullmatch(r"\d+", p) for p in parts):
        raise argparse.ArgumentTypeError(f"must be comma-separated non-negative integers such as 1,2,3; got {text!r}")
    seeds = [int(p) for p in parts]
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"repeats a seed: {text!r}")
    if any(s >= 2**64 for s in seeds):
        raise argparse.ArgumentTypeError(f"seeds must be below 2^64; got {text!r}")
    return seeds


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()) or int(text) == 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(text)


def _assignment(text: str) -> str:
    match = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=(.+)", text)
    if not match or not match.group(2).strip():
        raise argparse.ArgumentTypeError(f"must be KEY=VALUE, got {text!r}")
    if match.group(1) == "scale":
        raise argparse.ArgumentTypeError("set the scale with --scale, not --set scale=...")
    return text.strip()


def make_parser() -> Parser:
    parser = Parser(prog=PROG, allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter,
                    description=__doc__.split("\n\n")[0], epilog="Exit status: 0 pass, 1 some population "
                    "outside its tolerance, 2 bad arguments, 3 a run failed.")
    parser.add_argument("--scale", metavar="S", type=_positive_float,
                        help="neuron-number scaling of the model (passed as --set scale=S; default 1)")
    parser.add_argument("--seeds", metavar="S1,S2,...", type=_seeds,
                        help="seeds, run one after the other (default 1,2,3; with --from: the seed-* "
                             "folders found)")
    parser.add_argument("--duration-ms", metavar="T", type=_positive_float,
                        help=f"simulated time per run (default {DEFAULT_DURATION_MS:g})")
    parser.add_argument("--transient-ms", metavar="T", type=_non_negative_float, default=DEFAULT_TRANSIENT_MS,
                        help=f"start of the analysis window; the statistics cover [T, duration) "
                             f"(default {DEFAULT_TRANSIENT_MS:g})")
    parser.add_argument("--threads", metavar="K", type=_positive_int,
                        help="threads of each run (default: ranvier's)")
    parser.add_argument("--set", metavar="KEY=VALUE", type=_assignment, action="append", default=[],
                        help="a model parameter, passed to ranvier run (repeatable), e.g. --set k_scale=0.1")
    parser.add_argument("--out", metavar="DIR", help="folder for the runs (DIR/seed-S) and the results")
    parser.add_argument("--from", dest="from_dir", metavar="DIR",
                        help="recompute from the runs in DIR/seed-*/ without rerunning; results go to "
                             "--out if given, else DIR")
    return parser


def parse_args(argv) -> argparse.Namespace:
    args = make_parser().parse_args(argv)
    if args.from_dir is not None:
        given = [flag for flag, value in (("--scale", args.scale), ("--duration-ms", args.duration_ms),
                                          ("--threads", args.threads), ("--set", args.set or None))
                 if value is not None]
        if given:
            raise BadInput(f"{', '.join(given)} only apply to new runs, not to --from (which reads "
                           f"the runs' own settings)")
        source = Path(args.from_dir)
        if not source.is_dir():
            raise BadInput(f"--from '{source}': no such folder")
        args.out = Path(args.out) if args.out else source
        args.seed_dirs = find_seed_dirs(source, args.seeds)
    else:
        if args.out is None:
            raise BadInput("--out DIR is required (or --from DIR to recompute from earlier runs)")
        args.out = Path(args.out)
        if args.out.exists() and not args.out.is_dir():
            raise BadInput(f"--out '{args.out}' exists and is not a folder")
        args.seeds = args.seeds or list(DEFAULT_SEEDS)
        args.scale = 1.0 if args.scale is None else args.scale
        args.duration_ms = DEFAULT_DURATION_MS if args.duration_ms is None else args.duration_ms
        if args.transient_ms >= args.duration_ms:
            raise BadInput(f"--transient-ms {args.transient_ms:g} must be below --duration-ms {args.duration_ms:g}")
        args.seed_dirs = {seed: args.out / SEED_FOLDER.format(seed) for seed in args.seeds}
    return args


def find_seed_dirs(source: Path, seeds: list[int] | None) -> dict[int, Path]:
    """{seed: folder} of the runs under source: the ones asked for, else every seed-<N> there."""
    if seeds is not None:
        missing = [str(source / SEED_FOLDER.format(s)) for s in seeds if not (source / SEED_FOLDER.format(s)).is_dir()]
        if missing:
            raise BadInput(f"--from '{source}': no run folder {', '.join(missing)}")
        return {s: source / SEED_FOLDER.format(s) for s in seeds}
    found = {}
    for child in source.iterdir():
        match = re.fullmatch(r"seed-(\d+)", child.name)
        if match and child.is_dir():
            found[int(match.group(1))] = child
    if not found:
        raise BadInput(f"--from '{source}': no seed-<N> run folders in it")
    return dict(sorted(found.items()))


# -- running --------------------------------------------------------------------------------
def run_command(args, seed: int, out: Path) -> list[str]:
    command = [sys.executable, "-m", "ranvier", "run", "--model", MODEL, "--set", f"scale={args.scale!r}"]
    for assignment in args.set:
        command += ["--set", assignment]
    if args.threads is not None:
        command += ["--threads", str(args.threads)]
    command += ["--duration-ms", f"{args.duration_ms:g}", "--seed", str(seed), "--out", str(out),
                "--force", "--quiet"]
    return command


def run_seed(args, seed: int, out: Path) -> float:
    """Runs one seed into out; returns the wall seconds of the process."""
    # importing ranvier pinned this thread to one core: the run gets the CPUs back
    from ranvier.bench import restore_cpus

    command = run_command(args, seed, out)
    env = dict(os.environ)
    if args.threads is not None:
        env["OMP_NUM_THREADS"] = str(args.threads)
    print(f"seed {seed}: {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, preexec_fn=restore_cpus)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-20:])
        raise RunFailed(f"seed {seed}: ranvier run failed with status {done.returncode}:\n{tail}")
    print(f"seed {seed}: done in {wall:.1f} s", flush=True)
    (out / POPULATIONS_FILE).write_text(json.dumps(populations_from_config(out)) + "\n")
    return wall


# -- reading a run --------------------------------------------------------------------------
def populations_from_config(run_dir: Path) -> list[list]:
    """[[name, first_id, size], ...] of the network that config.toml describes, as ranvier builds it."""
    from ranvier import ConfigError, models

    path = run_dir / "config.toml"
    try:
        config = tomllib.loads(path.read_text())
        network = models.build(config["model"], **config.get("parameters", {}))
    except (OSError, tomllib.TOMLDecodeError, KeyError, ConfigError) as e:
        raise RunFailed(f"{path}: cannot rebuild the populations of this run: {e}") from None
    return [[p.name, int(p.first_id), int(p.size)] for p in network.populations]


def populations_of(run_dir: Path) -> list[list]:
    """The run's populations: populations.json (written after the run), else from config.toml."""
    path = run_dir / POPULATIONS_FILE
    if path.exists():
        try:
            return [[str(n), int(f), int(s)] for n, f, s in json.loads(path.read_text())]
        except (ValueError, TypeError) as e:
            raise RunFailed(f"{path}: unreadable ({e})") from None
    return populations_from_config(run_dir)


def analyse_seed(seed: int, run_dir: Path, transient_ms: float, wall_s: float | None = None) -> dict:
    from ranvier.analysis import activity

    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError) as e:
        raise RunFailed(f"{run_dir / 'summary.json'}: unreadable ({e})") from None
    populations = populations_of(run_dir)
    total = sum(size for _, _, size in populations)
    if summary.get("neurons") is not None and int(summary["neurons"]) != total:
        raise RunFailed(f"{run_dir}: summary.json has {summary['neurons']} neurons, the populations "
                        f"{total}; they do not describe the same run")
    duration = summary.get("duration_ms")
    if duration is None:
        raise RunFailed(f"{run_dir / 'summary.json'}: no duration_ms")
    if transient_ms >= float(duration):
        raise BadInput(f"--transient-ms {transient_ms:g} must be below the run's duration "
                       f"{float(duration):g} ms ({run_dir})")
    try:
        ids, times = activity.read_spikes(run_dir / "spikes.h5", populations)
    except (OSError, ValueError) as e:
        raise RunFailed(f"{run_dir / 'spikes.h5'}: {e}") from None
    stats = activity.population_statistics(ids, times, populations, transient_ms, float(duration))
    rss = summary.get("peak_rss_bytes")
    if isinstance(rss, list):
        rss = max(rss) if rss else None
    return {"seed": seed, "run_dir": str(run_dir), "window_ms": [transient_ms, float(duration)],
            "model": summary.get("model"), "neurons": summary.get("neurons"), "synapses": summary.get("synapses"),
            "threads": summary.get("threads"), "ranks": summary.get("ranks"),
            "real_time_factor": summary.get("real_time_factor"), "build_seconds": summary.get("build_seconds"),
            "simulate_seconds": summary.get("simulate_seconds"), "peak_rss_bytes": rss,
            "wall_seconds": wall_s, "spikes_in_window": int(sum(s["spikes"] for s in stats.values())),
            "populations": stats}


# -- the report -----------------------------------------------------------------------------
def summarise(seed_results: list[dict], settings: dict) -> dict:
    from ranvier.analysis import activity

    aggregate = activity.aggregate_seeds([r["populations"] for r in seed_results])
    comparison = activity.compare_rates({name: a["rate_hz"]["mean"] for name, a in aggregate.items()})
    performance = activity.aggregate_seeds([{"run": {k: r[k] for k in
                                                       ("real_time_factor", "build_seconds", "simulate_seconds",
                                                        "peak_rss_bytes", "wall_seconds") if r[k] is not None}}
                                              for r in seed_results]).get("run", {})
    return {"model": MODEL, "settings": settings, "seeds": [r["seed"] for r in seed_results],
            "definitions": {"rate": "spikes in [start, stop) / (population size x (stop - start))",
                            "cv_isi": f"mean over neurons with >= {activity.CV_MIN_SPIKES} spikes in the window "
                                      "of sd/mean (ddof 0) of their inter-spike intervals",
                            "synchrony": f"variance/mean (ddof 0) of the spike-count histogram, "
                                         f"{activity.SYNCHRONY_BIN_MS:g} ms bins from start, of the first "
                                         f"{activity.SYNCHRONY_MAX_NEURONS} ids of the population",
                            "across_seeds": "mean and sample sd (ddof 1) of the per-seed values",
                            "deviation_pct": "100 (mean rate over seeds - reference) / reference",
                            "tolerances_pct": activity.DEFAULT_TOLERANCES_PCT},
            "passed": all(c["passed"] for c in comparison.values()),
            "comparison": comparison, "aggregate": aggregate, "performance": performance,
            "per_seed": seed_results}


def _f(x, spec: str = ".3f", dash: str = "–") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return dash
    return format(x, spec)


def _pm(stat: dict | None, spec: str = ".3f") -> str:
    if not stat or stat["n"] == 0:
        return "–"
    sd = stat["sd"]
    return f"{_f(stat['mean'], spec)} ± {_f(sd, spec)}" if math.isfinite(sd) else _f(stat["mean"], spec)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]

    def line(cells):
        return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def format_report(report: dict) -> str:
    comparison, aggregate = report["comparison"], report["aggregate"]
    names = list(comparison) + [n for n in aggregate if n not in comparison]
    rows = []
    for name in names:
        a, c = aggregate.get(name, {}), comparison.get(name)
        rows.append([name, _pm(a.get("rate_hz")),
                     _f(c["reference_hz"]) if c else "–",
                     _f(None if c is None or c["deviation_pct"] is None else round(c["deviation_pct"], 1) + 0.0, "+.1f"),
                     f"{c['tolerance_pct']:g}" if c else "–",
                     ("pass" if c["passed"] else "FAIL") if c else "(not compared)",
                     _pm(a.get("cv_isi")), _f(a.get("cv_neurons", {}).get("mean"), ".0f"),
                     _pm(a.get("synchrony"), ".2f")])
    seeds = report["seeds"]
    title = f"{MODEL}: {len(seeds)} seed(s) {','.join(map(str, seeds))}; window {_window_text(report['per_seed'])}"
    out = [title,
           _table(["population", "rate (Hz, mean ± sd)", "reference", "deviation %", "tolerance %", "result",
                   "CV ISI", "CV neurons", "synchrony"], rows), ""]
    per_seed = [[str(r["seed"]), _f(r["real_time_factor"], ".3f"), _f(r["build_seconds"], ".1f"),
                 _f(None if r["peak_rss_bytes"] is None else r["peak_rss_bytes"] / 2**20, ".0f"),
                 _f(r["wall_seconds"], ".1f"), f"{r['spikes_in_window']:,}"] for r in report["per_seed"]]
    out.append(_table(["seed", "real-time factor", "build s", "peak RSS MiB", "wall s", "spikes in window"],
                      per_seed))
    failed = [n for n, c in comparison.items() if not c["passed"]]
    out += ["", "PASS: every population within its tolerance" if not failed else
            f"FAIL: {', '.join(failed)} outside tolerance"]
    return "\n".join(out)


def _window_text(per_seed: list[dict]) -> str:
    windows = {tuple(r["window_ms"]) for r in per_seed}
    return "; ".join(f"[{a:g}, {b:g}) ms" for a, b in sorted(windows))


def _clean(x):
    """JSON-safe: NaN and inf become null."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_json(report: dict, path: Path) -> None:
    path.write_text(json.dumps(_clean(report), indent=2) + "\n")


def write_csv(report: dict, path: Path) -> None:
    comparison, aggregate = report["comparison"], report["aggregate"]
    names = list(comparison) + [n for n in aggregate if n not in comparison]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for name in names:
            a, c = aggregate.get(name, {}), comparison.get(name) or {}

            def get(key, part, a=a):
                return a.get(key, {}).get(part)

            row = [name, get("rate_hz", "n"), get("rate_hz", "mean"), get("rate_hz", "sd"),
                   c.get("reference_hz"), c.get("deviation_pct"), c.get("tolerance_pct"),
                   c.get("passed") if c else None, get("cv_isi", "mean"), get("cv_isi", "sd"),
                   get("cv_neurons", "mean"), get("synchrony", "mean"), get("synchrony", "sd"),
                   get("synchrony_neurons", "mean")]
            writer.writerow(["" if v is None or (isinstance(v, float) and not math.isfinite(v)) else v
                             for v in row])


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    comparison, aggregate = report["comparison"], report["aggregate"]
    names = list(comparison) + [n for n in aggregate if n not in comparison]
    x = np.arange(len(names))

    def stat(name, key, part):
        value = aggregate.get(name, {}).get(key, {}).get(part)
        return math.nan if value is None else value

    fig, (ax_rate, ax_cv, ax_sync) = plt.subplots(1, 3, figsize=(15, 4.5))
    w = 0.38
    mean = [stat(n, "rate_hz", "mean") for n in names]
    sd = [0.0 if not math.isfinite(stat(n, "rate_hz", "sd")) else stat(n, "rate_hz", "sd") for n in names]
    reference = [comparison[n]["reference_hz"] if n in comparison else math.nan for n in names]
    colours = ["#55a868" if comparison.get(n, {}).get("passed") else
               ("#c44e52" if n in comparison else "#8c8c8c") for n in names]
    ax_rate.bar(x - w / 2, mean, w, yerr=sd, capsize=3, color=colours, label="Ranvier (mean ± sd over seeds)")
    ax_rate.bar(x + w / 2, reference, w, color="#4c72b0", alpha=0.6, label="reference (NEST)")
    for i, n in enumerate(names):
        if n in comparison:
            tol = comparison[n]["tolerance_pct"] / 100.0
            for bound in (1 - tol, 1 + tol):      # the tolerance band, over the reference bar
                ax_rate.plot([x[i], x[i] + w], [reference[i] * bound] * 2, "k:", lw=1)
    ax_rate.set_ylabel("firing rate (Hz)")
    ax_rate.set_title("rates (green: within tolerance, red: outside; dotted: tolerance band)", fontsize=9)
    ax_rate.legend(fontsize=8, loc="upper left")
    for ax, key, label in ((ax_cv, "cv_isi", "CV of ISI"), (ax_sync, "synchrony", "synchrony (var / mean, 3 ms bins)")):
        values = [stat(n, key, "mean") for n in names]
        errors = [0.0 if not math.isfinite(stat(n, key, "sd")) else stat(n, key, "sd") for n in names]
        ax.bar(x, values, 0.6, yerr=errors, capsize=3, color="#8172b2")
        ax.axhline(1.0, color="k", lw=0.8, ls="--")      # Poisson
        ax.set_ylabel(label)
        ax.set_title(f"{label} (dashed: Poisson)", fontsize=9)
    for ax in (ax_rate, ax_cv, ax_sync):
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=45)
    seeds = report["seeds"]
    fig.suptitle(f"{MODEL}, scale {report['settings'].get('scale') or '?'}, {len(seeds)} seed(s), "
                 f"window {_window_text(report['per_seed'])}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- main -----------------------------------------------------------------------------------
def main(argv=None) -> int:
    try:
        args = parse_args(argv)
        if args.from_dir is None:
            args.out.mkdir(parents=True, exist_ok=True)
            walls = {seed: run_seed(args, seed, folder) for seed, folder in args.seed_dirs.items()}
            settings = {"scale": args.scale, "set": args.set, "threads": args.threads,
                        "duration_ms": args.duration_ms, "transient_ms": args.transient_ms}
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            walls = {}
            settings = {"from": str(args.from_dir), "transient_ms": args.transient_ms,
                        "scale": _scale_of(next(iter(args.seed_dirs.values())))}
        results = [analyse_seed(seed, folder, args.transient_ms, walls.get(seed))
                   for seed, folder in args.seed_dirs.items()]
    except BadInput as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RunFailed as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_RUN_FAILED
    report = summarise(results, settings)
    print(format_report(report))
    write_json(report, args.out / JSON_FILE)
    write_csv(report, args.out / CSV_FILE)
    plot(report, args.out / PNG_FILE)
    print(f"wrote {args.out / JSON_FILE}, {args.out / CSV_FILE}, {args.out / PNG_FILE}")
    return EXIT_PASS if report["passed"] else EXIT_FAIL


def _scale_of(run_dir: Path):
    """The scale parameter a run was made with (from its config.toml), or None."""
    try:
        return tomllib.loads((run_dir / "config.toml").read_text()).get("parameters", {}).get("scale")
    except (OSError, tomllib.TOMLDecodeError):
        return None


if __name__ == "__main__":
    sys.exit(main())
