"""`ranvier bench mpi`: the MPI primitives the exchange strategies use, timed through the
engine's own communicator layer against message size, with a fit t = latency + bytes /
bandwidth per primitive (theory.md, section 3).

    ranvier bench mpi --ranks 2 --sizes 1,64,4096 --repeats 200

One worker job (runner.run_worker, worker kind "mpi") times every primitive and size; the
command writes mpi_bench.csv, mpi_fit.json (read by `ranvier run --mpi-fit` and `ranvier bench
exchange --mpi-fit`) and mpi_bench.png.
"""
from __future__ import annotations

import csv
import json
import math
import os
import platform
import tempfile
from pathlib import Path

import numpy as np

from ..cli.arguments import name_list, positive_int, positive_int_list
from ..errors import ConfigError
from . import common, runner
from .common import say

DEFAULT_MPI_SIZES = (1, 8, 64, 512, 4096, 32768)
WORD_BYTES = 8                        # mpi_bench sizes are 64-bit words
MPI_CSV, MPI_FIT, MPI_PNG = "mpi_bench.csv", "mpi_fit.json", "mpi_bench.png"


def add_parser(benches, exchanges) -> None:
    """Registers `ranvier bench mpi` on the bench subparsers."""
    mpi = benches.add_parser(
        "mpi", allow_abbrev=False, help="MPI primitives against message size: latency and bandwidth fits",
        description="Time the MPI primitives the exchange strategies use, through the engine's own "
                    "communicator layer, against message size; fit t = latency + bytes / bandwidth per "
                    "primitive; write mpi_bench.csv, mpi_fit.json and mpi_bench.png.")
    mpi.add_argument("--ranks", type=positive_int, default=2, metavar="R", help="ranks (default: 2)")
    mpi.add_argument("--primitives", type=name_list, metavar="P1,P2,...", help="primitives (default: all)")
    mpi.add_argument("--sizes", type=positive_int_list, default=list(DEFAULT_MPI_SIZES), metavar="W1,W2,...",
                     help=f"message sizes in 64-bit words per rank or rank pair "
                          f"(default: {','.join(map(str, DEFAULT_MPI_SIZES))})")
    mpi.add_argument("--repeats", type=positive_int, default=200, metavar="N",
                     help="timed calls per primitive and size, after a warm-up (default: 200)")
    mpi.add_argument("--out", metavar="DIR", help="folder for the results (default: bench-results/mpi-<timestamp>)")


def command(args) -> None:
    mpi_bench(args.ranks, primitives=args.primitives, sizes=args.sizes, repeats=args.repeats, out=args.out)


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
    from .. import _engine

    valid = tuple(_engine.MPI_PRIMITIVES)
    primitives = common.check_names("--primitives", "primitive", primitives or valid, valid)
    sizes = sorted(set(sizes))
    if len(sizes) < 2:
        raise ConfigError(f"--sizes needs at least two different sizes to fit latency and bandwidth, got {sizes}")
    runner.launch_prefix(ranks)
    out = common.output_folder(out, "mpi", MPI_CSV)
    plt = common.pyplot()
    if plt is None:
        say("bench: matplotlib is not installed (pip install matplotlib): no plot will be drawn")

    say(f"bench: {len(primitives)} MPI primitive(s) x {len(sizes)} size(s) on {ranks} rank(s), "
         f"{repeats} repetitions each")
    spec = {"kind": "mpi", "primitives": primitives, "sizes": sizes, "repeats": repeats}
    with tempfile.TemporaryDirectory(prefix="ranvier-bench-") as tmp:
        rows = runner.run_worker(ranks, 1, spec, Path(tmp), f"MPI micro-benchmark on {ranks} rank(s)")["rows"]

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
    print(common.text_table(["primitive", "words", "bytes", "median µs", "min µs"], table))
    print("\nfit t = latency + bytes / bandwidth (least squares over sizes, median times)")
    print(common.text_table(["primitive", "latency µs", "bandwidth GB/s"],
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


def worker(spec: dict) -> None:
    from ..runtime.parallel import make_comm

    comm = make_comm()
    rows = time_primitives(comm, spec["primitives"], spec["sizes"], spec["repeats"])
    if comm.rank == 0:
        Path(spec["result"]).write_text(json.dumps({"rows": rows}))


def time_primitives(comm, primitives, sizes, repeats: int) -> list[dict] | None:
    """Times each primitive at each size (64-bit words) on comm, through the engine's
    communicator layer; collective. Rank 0 gets one row per primitive and size (the slowest
    rank's median and minimum), the others None."""
    from .. import _engine

    use_mpi = comm.handle is not None
    rows = []
    for primitive in primitives:
        for words in sizes:
            seconds = np.asarray(_engine.mpi_bench(use_mpi, comm.handle or 0, primitive, words, repeats))
            per_rank = comm.gather((float(np.median(seconds)), float(seconds.min())))
            if comm.rank == 0:
                # a call is over only when the slowest rank is done
                rows.append({"primitive": primitive, "words": words, "bytes": words * WORD_BYTES,
                             "median_s": max(median for median, _ in per_rank),
                             "min_s": max(fastest for _, fastest in per_rank)})
    return rows if comm.rank == 0 else None
