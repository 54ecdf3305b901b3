"""`ranvier bench interconnect`: the same workload over different interconnects, the DPSNN
study's comparison in miniature (docs/interconnect.md).

    ranvier bench interconnect examples/dpsnn-small.toml --duration-ms 300

Transports: `shm`, the ranks on one host (MPICH's shared memory); `tcp`, the ranks on two
emulated hosts (network namespaces joined by a veth pair: ranvier.bench.netns), so MPICH's
network module carries every message; `tcp-limited`, the same link under a `tc tbf` rate
limit (--rate). For each, one worker job (worker kind "interconnect") first times the MPI
primitives the workload's exchange uses against message size and fits t = latency + bytes /
bandwidth (theory.md section 3), then runs the workload; the table puts the measured
communicate and synchronize time per cycle next to the model's: communicate from the fit
(theory.exchange_seconds), synchronize as the barrier's latency (ibarrier's fit) plus the
wait for the slowest rank, k_P sigma (theory.md section 1). Writes interconnect.csv,
interconnect.json and interconnect.png.

The TCP transports need root and iproute2; where they cannot be had they are left out with
the reason (asked for explicitly, they are refused in one line).
"""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ..io import config as cfgmod
from ..runtime import environment
from ..analysis import theory
from ..cli.arguments import assignment, name_list, positive_float, positive_int, positive_int_list
from ..errors import ConfigError
from . import common, netns, runner
from .common import say

TRANSPORTS = ("shm", "tcp", "tcp-limited")
DESCRIPTIONS = {"shm": "one host: shared memory", "tcp": "two emulated hosts: TCP over veth",
                "tcp-limited": "two emulated hosts: TCP over veth, tc tbf rate {rate}"}
DEFAULT_SIZES = (1, 64, 512, 4096)           # 64-bit words: 8 bytes to 32 KiB
DEFAULT_RATE = "100mbit"
DEFAULT_DURATION_MS = 300.0
PING_PONG = "isend_irecv"                    # the link's own latency and bandwidth
BARRIER = "ibarrier"                         # the synchronize phase's call
CSV_NAME, JSON_NAME, PNG_NAME = "interconnect.csv", "interconnect.json", "interconnect.png"
COLUMNS = ["transport", "run", "load_before", "link", "ranks", "hosts", "path", "latency_us", "bandwidth_MB_per_s",
           "barrier_latency_us", "bytes_per_cycle", "cycles", "communicate_us_per_cycle",
           "communicate_model_us_per_cycle", "communicate_median_us_per_cycle", "synchronize_us_per_cycle",
           "synchronize_model_us_per_cycle", "synchronize_median_us_per_cycle",
           "wait_model_us_per_cycle", "real_time_factor"]
UCX_LANE = re.compile(r"\[([^:\]]+):\d+\s*:\d+\].*?(intra|inter)-node cfg#\d+ tag\(([^)]*)\)")


def add_parser(benches, exchanges) -> None:
    """Registers `ranvier bench interconnect` on the bench subparsers."""
    p = benches.add_parser(
        "interconnect", allow_abbrev=False, help="one workload over shared memory, TCP and a rate-limited link",
        description="Run one workload over each interconnect: shared memory on one host, TCP between two "
                    "emulated hosts (network namespaces joined by a veth pair; needs root and iproute2) and the "
                    "same link rate-limited with tc tbf. Fit latency and bandwidth of the MPI primitives on "
                    "each, and print the measured communicate and synchronize time per cycle next to the "
                    "model's (theory.md sections 1 and 3); write interconnect.csv, .json and .png.")
    p.add_argument("workload", metavar="WORKLOAD", help="a model name (dpsnn, ...) or a config .toml")
    p.add_argument("--transports", type=name_list, metavar="T1,T2,...",
                   help=f"transports (default: {','.join(TRANSPORTS)}; the TCP ones are left out, with the "
                        f"reason, where namespaces cannot be made)")
    p.add_argument("--ranks", type=positive_int, default=2, metavar="R",
                   help="ranks (default 2; on two hosts, half on each)")
    p.add_argument("--duration-ms", type=positive_float, metavar="T",
                   help=f"simulated time per run (default: the config's, or {DEFAULT_DURATION_MS:g} ms for a model name)")
    p.add_argument("--rate", default=DEFAULT_RATE, metavar="RATE",
                   help=f"the tc tbf rate of tcp-limited (default {DEFAULT_RATE})")
    p.add_argument("--sizes", type=positive_int_list, default=list(DEFAULT_SIZES), metavar="W1,W2,...",
                   help=f"message sizes of the fit, 64-bit words (default {','.join(map(str, DEFAULT_SIZES))})")
    p.add_argument("--repeats", type=positive_int, default=50, metavar="N",
                   help="timed calls per primitive and size (default 50)")
    p.add_argument("--runs", type=positive_int, default=3, metavar="N",
                   help="runs of each transport, interleaved; the table gives medians (default 3)")
    p.add_argument("--set", type=assignment, action="append", default=[], metavar="KEY=VALUE",
                   help="any model parameter, value read as TOML (repeat for several)")
    p.add_argument("--neurons", type=positive_int, metavar="N", help="network size")
    p.add_argument("--out", metavar="DIR",
                   help="folder for the results (default: bench-results/interconnect-<timestamp>)")


def command(args) -> None:
    parameters = dict(args.set)
    if args.neurons is not None:
        parameters["neurons"] = args.neurons
    interconnect_bench(args.workload, transports=args.transports, ranks=args.ranks, duration_ms=args.duration_ms,
                       rate=args.rate, sizes=args.sizes, repeats=args.repeats, runs=args.runs, parameters=parameters,
                       out=args.out)


# -- planning ---------------------------------------------------------------------------------
RATE = re.compile(r"^\d+(\.\d+)?([kmgt]?(bit|bps))$", re.IGNORECASE)


def plan(workload: str, transports: list[str] | None, ranks: int, duration_ms: float | None, sizes,
         parameters: dict | None, reason=netns.unavailable_reason, rate: str = DEFAULT_RATE) -> dict:
    """Every check that needs no process: the workload, the transports that can run here (those
    that cannot, with the reason: left_out), the primitives to time."""
    from .. import models

    explicit = transports is not None
    transports = common.check_names("--transports", "transport", transports or TRANSPORTS, TRANSPORTS)
    if ranks < 2:
        raise ConfigError(f"--ranks {ranks}: an interconnect needs at least 2 ranks")
    if "tcp-limited" in transports and not RATE.match(rate):
        raise ConfigError(f"--rate {rate!r}: not a tc rate; give a number and a unit, for example 100mbit, 1mbit "
                          f"or 500kbit (bit, kbit, mbit, gbit; bps, kbps, ... for bytes per second)")
    sizes = sorted(set(sizes))
    if len(sizes) < 2:
        raise ConfigError(f"--sizes needs at least two different sizes to fit latency and bandwidth, got {sizes}")
    cfg = common.resolve_workload(workload, parameters)
    duration = duration_ms or (DEFAULT_DURATION_MS if not cfgmod.looks_like_path(workload) else None)
    cfg = cfgmod.override(cfg, simulation={"duration_ms": duration or cfg.simulation["duration_ms"], "threads": 1})
    network = models.build(cfg.model, **cfg.parameters)
    cfgmod.check_simulation(cfg, network)
    strategy = cfg.simulation.get("exchange") or "allgather"
    if strategy not in theory.EXCHANGE_CALLS:
        raise ConfigError(f"exchange '{strategy}': the interconnect benchmark needs a strategy with a "
                          f"communication model ({', '.join(theory.EXCHANGE_CALLS)})")
    left_out = []
    if any(t != "shm" for t in transports):
        why = reason(rate="tcp-limited" in transports)
        if why is not None:
            tcp = [t for t in transports if t != "shm"]
            if explicit:
                raise ConfigError(f"--transports {','.join(tcp)}: ranks on emulated hosts cannot run here: {why}")
            transports = [t for t in transports if t == "shm"]
            left_out.append(f"{', '.join(tcp)} left out: {why}")
    primitives = list(dict.fromkeys([PING_PONG, BARRIER, *(p for p, _, _ in theory.EXCHANGE_CALLS[strategy])]))
    return {"cfg": cfg, "network": network, "transports": transports, "left_out": left_out, "sizes": sizes,
            "primitives": primitives, "strategy": strategy}


# -- the fit and the model --------------------------------------------------------------------
def fit_relative(message_bytes, seconds) -> tuple[float, float | None]:
    """t = latency + bytes / bandwidth by least squares on the relative error, so that every size
    weighs the same: the microseconds of a small message are not lost in the milliseconds of a
    large one on a slow link (plain least squares, `ranvier bench mpi`'s fit, can then give a
    negative latency). (latency in s, bandwidth in bytes/s, None where the time does not grow)."""
    x, y = np.asarray(message_bytes, dtype=float), np.asarray(seconds, dtype=float)
    design = np.column_stack([np.ones_like(x), x]) / y[:, None]
    (latency, slope), *_ = np.linalg.lstsq(design, np.ones_like(y), rcond=None)
    return float(latency), (1.0 / float(slope) if slope * x.max() > 1e-9 * y.max() else None)


def fit_rows(rows: list[dict], ranks: int) -> dict:
    """mpi_fit.json's layout (theory.load_mpi_fit) from time_primitives' rows: per primitive,
    fit_relative; the barrier sends nothing, so its latency is the median over sizes."""
    fits = {}
    for primitive in dict.fromkeys(row["primitive"] for row in rows):
        mine = [row for row in rows if row["primitive"] == primitive]
        sizes, times = [r["bytes"] for r in mine], [r["median_s"] for r in mine]
        if primitive == BARRIER:
            latency, bandwidth = float(np.median(times)), None
        else:
            latency, bandwidth = fit_relative(sizes, times)
        fits[primitive] = {"latency_s": latency, "bandwidth_bytes_per_s": bandwidth, "bytes": sizes, "median_s": times}
    return {"ranks": ranks, "primitives": fits,
            "model": "t = latency + bytes / bandwidth, least squares on the relative error over message sizes of "
                     "the median time (max over ranks); ibarrier: the median over sizes"}


def predict(fit: dict, strategy: str, ranks: int, bytes_per_cycle: float, wait_s_per_cycle: float | None) -> dict:
    """Model times per cycle: communicate (theory.md section 3, bytes_per_cycle summed over
    ranks) and synchronize = the barrier's latency + the predicted wait for the slowest rank
    (section 1)."""
    communicate = theory.exchange_seconds(strategy, ranks, bytes_per_cycle / ranks, fit)
    barrier = fit["primitives"].get(BARRIER, {}).get("latency_s")
    synchronize = None
    if barrier is not None and wait_s_per_cycle is not None:
        synchronize = max(barrier, 0.0) + wait_s_per_cycle
    return {"communicate_s": communicate, "synchronize_s": synchronize, "barrier_latency_s": barrier}


def ucx_lanes(stderr: str) -> dict[str, list[str]]:
    """The transports UCX chose per host ("inter-node cfg#1 tag(tcp/eth0)"), from its UCX_LOG_LEVEL=info lines."""
    lanes: dict[str, list[str]] = {}
    for host, where, tag in UCX_LANE.findall(stderr):
        entry = f"{where}-node {tag}"
        if entry not in lanes.setdefault(host, []):
            lanes[host].append(entry)
    return lanes


def path_of(transport: dict, lanes: dict) -> str:
    """What carried the messages, in words: shared memory within a node, the network module between."""
    parts = []
    if transport.get("within_node"):
        parts.append("shared memory")
    if transport.get("between_nodes"):
        # the lanes' transports ("tcp/eth0" -> "tcp"); the devices are in the JSON's ucx_lanes
        seen = sorted({part.split("/")[0] for host in lanes.values() for lane in host if lane.startswith("inter")
                       for part in lane.split(" ", 1)[1].split()})
        module = transport["between_nodes"].split(",")[0].replace("MPICH ch4 netmod ", "")
        parts.append(f"{module} {' '.join(seen)}" if seen else transport["between_nodes"])
    return " + ".join(parts) or "none"


# -- running ----------------------------------------------------------------------------------
def _launch(transport: str, ranks: int, spec_path: Path, rate: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "ranvier.bench", "worker", str(spec_path)]
    env = runner.launch_env(ranks, 1)
    env.pop("OMP_PROC_BIND", None)        # no binding on any transport: hosts would each bind to core 0
    env.pop("OMP_PLACES", None)
    env.setdefault("UCX_LOG_LEVEL", "info")   # UCX names the transport it chose (parsed: ucx_lanes)
    if transport == "shm":
        mpiexec = runner.mpiexec_path()
        if mpiexec is None:
            raise ConfigError(f"{ranks} ranks need mpiexec, which was not found; install it with: "
                              f"pip install mpich mpi4py")
        return subprocess.run([mpiexec, "-n", str(ranks), *argv], env=env, capture_output=True, text=True,
                              check=False, preexec_fn=runner.restore_cpus)
    with netns.EmulatedHosts(rate=rate if transport == "tcp-limited" else None) as hosts:
        return subprocess.run(hosts.mpiexec(ranks, argv), env=env, capture_output=True, text=True, check=False,
                              preexec_fn=runner.restore_cpus)


def run_transport(transport: str, ranks: int, spec: dict, workdir: Path, rate: str) -> dict:
    spec_path, result_path = workdir / f"{transport}.json", workdir / f"{transport}-result.json"
    result_path.unlink(missing_ok=True)
    spec_path.write_text(json.dumps({**spec, "result": str(result_path)}))
    done = _launch(transport, ranks, spec_path, rate)
    if done.returncode != 0 or not result_path.exists():
        tail = "\n".join(line for line in (done.stderr or done.stdout).strip().splitlines()
                         if "UCX  INFO" not in line)
        raise runner.WorkerFailed(f"transport {transport} on {ranks} ranks failed with status {done.returncode}\n"
                                  + "\n".join(tail.splitlines()[-20:]))
    out = json.loads(result_path.read_text())
    out["ucx_lanes"] = ucx_lanes(done.stdout + done.stderr)      # UCX logs to stdout
    return out


def interconnect_bench(workload: str, transports: list[str] | None = None, ranks: int = 2,
                       duration_ms: float | None = None, rate: str = DEFAULT_RATE, sizes=DEFAULT_SIZES,
                       repeats: int = 50, runs: int = 3, parameters: dict | None = None, out=None) -> Path:
    p = plan(workload, transports, ranks, duration_ms, sizes, parameters, rate=rate)
    cfg, network, strategy = p["cfg"], p["network"], p["strategy"]
    out = common.output_folder(out, "interconnect", CSV_NAME)
    plt = common.pyplot()
    if plt is None:
        say("bench: matplotlib is not installed (pip install matplotlib): no plot will be drawn")
    duration = float(cfg.simulation["duration_ms"])
    spec = {"kind": "interconnect", "model": cfg.model, "parameters": cfg.parameters,
            "simulation": cfg.simulation_kwargs(), "duration_ms": duration, "primitives": p["primitives"],
            "sizes": p["sizes"], "repeats": repeats}
    say(f"bench: {cfg.model}, {network.size:,} neurons, {duration:g} ms simulated, {ranks} ranks, exchange "
        f"{strategy}; transports {', '.join(p['transports'])}" + "".join(f"; {n}" for n in p["left_out"]))
    rows, details = [], {}
    with tempfile.TemporaryDirectory(prefix="ranvier-bench-") as tmp:
        # Runs are the outer loop, so that a change in the machine's load spreads over all transports.
        for run in range(1, runs + 1):
            for transport in p["transports"]:
                label = f"{transport} ({DESCRIPTIONS[transport].format(rate=rate)}), run {run}/{runs}"
                load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
                measured = run_transport(transport, ranks, spec, Path(tmp), rate)
                row, detail = table_row(transport, measured, strategy, ranks, rate)
                row.update(run=run, load_before=load)
                rows.append(row)
                details.setdefault(transport, []).append(detail)
                say(f"bench: {label}: communicate {row['communicate_us_per_cycle']:.1f} µs/cycle, "
                    f"synchronize {row['synchronize_us_per_cycle']:.1f} µs/cycle")
    table = summarize(rows)
    loads = [row["load_before"] for row in rows if row["load_before"] is not None]
    print(f"{cfg.model}, {network.size:,} neurons, {duration:g} ms simulated, {ranks} ranks x 1 thread, exchange "
          f"{strategy}; {os.cpu_count()} cores" + (f", load average {min(loads):.2f} to {max(loads):.2f} before the "
                                                   f"runs" if loads else "")
          + f"; medians over {runs} run(s) of each transport; times per cycle, mean over ranks and cycles (median: "
            "the median cycle); model: theory.md section 3 (communicate) and barrier latency + k_P sigma "
            "(synchronize)")
    for note in p["left_out"]:
        print(note)
    print(format_table(table))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / CSV_NAME, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    (out / JSON_NAME).write_text(json.dumps({"workload": workload, "model": cfg.model, "neurons": network.size,
                                             "duration_ms": duration, "ranks": ranks, "exchange": strategy,
                                             "rate": rate, "runs": runs, "left_out": p["left_out"],
                                             "cpu_model": environment.cpu_model(), "table": table, "rows": rows,
                                             "transports": details}, indent=2) + "\n")
    written = [out / CSV_NAME, out / JSON_NAME]
    if plt is not None and table:
        plot(plt, table, out / PNG_NAME, f"{cfg.model}, {network.size:,} neurons, {ranks} ranks")
        written.append(out / PNG_NAME)
    print(f"\nresults written to {', '.join(map(str, written))}")
    return out


def summarize(rows: list[dict]) -> list[dict]:
    """One line per transport: the median over its runs of every number, its words as they are."""
    table = []
    for transport in dict.fromkeys(row["transport"] for row in rows):
        mine = [row for row in rows if row["transport"] == transport]
        line = {}
        for key in COLUMNS:
            values = [row[key] for row in mine]
            numbers = [v for v in values if isinstance(v, (int, float)) and v is not None]
            if key in ("transport", "link", "path", "ranks", "hosts") or not numbers:
                line[key] = values[0] if key != "path" else " / ".join(dict.fromkeys(values))
            else:
                line[key] = float(np.median(numbers))
        line["runs"] = len(mine)
        table.append(line)
    return table


def table_row(transport: str, measured: dict, strategy: str, ranks: int, rate: str) -> tuple[dict, dict]:
    """One line of the table (and the details for the JSON) from a worker's measurements."""
    fit = fit_rows(measured["rows"], ranks)
    run = measured["run"]
    model = predict(fit, strategy, ranks, run["bytes_per_cycle"], measured["wait_s_per_cycle"])
    ping = fit["primitives"][PING_PONG]
    us = (lambda s: None if s is None else s * 1e6)
    row = {"transport": transport, "link": DESCRIPTIONS[transport].format(rate=rate), "ranks": ranks,
           "hosts": len(measured["transport"]["hosts"]), "path": path_of(measured["transport"], measured["ucx_lanes"]),
           "latency_us": us(ping["latency_s"]),
           "bandwidth_MB_per_s": None if ping["bandwidth_bytes_per_s"] is None else ping["bandwidth_bytes_per_s"] / 1e6,
           "barrier_latency_us": us(model["barrier_latency_s"]),
           "bytes_per_cycle": run["bytes_per_cycle"], "cycles": run["cycles"],
           "communicate_us_per_cycle": run["communicate_us_per_cycle"],
           "communicate_model_us_per_cycle": us(model["communicate_s"]),
           "communicate_median_us_per_cycle": run["communicate_median_us_per_cycle"],
           "synchronize_us_per_cycle": run["synchronize_us_per_cycle"],
           "synchronize_model_us_per_cycle": us(model["synchronize_s"]),
           "synchronize_median_us_per_cycle": run["synchronize_median_us_per_cycle"],
           "wait_model_us_per_cycle": us(measured["wait_s_per_cycle"]),
           "real_time_factor": run["real_time_factor"]}
    return row, {"fit": fit, "transport": measured["transport"], "ucx_lanes": measured["ucx_lanes"], "run": run}


def _number(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def format_table(rows: list[dict]) -> str:
    return common.text_table(
        ["transport", "hosts", "path", "latency µs", "bandwidth MB/s", "barrier µs", "bytes/cycle",
         "communicate µs", "median", "model", "synchronize µs", "median", "model", "RTF"],
        [[r["transport"], str(r["hosts"]), r["path"], _number(r["latency_us"], ".1f"),
          _number(r["bandwidth_MB_per_s"], ".4g"), _number(r["barrier_latency_us"], ".1f"),
          _number(r["bytes_per_cycle"], ".0f"), _number(r["communicate_us_per_cycle"], ".1f"),
          _number(r["communicate_median_us_per_cycle"], ".1f"), _number(r["communicate_model_us_per_cycle"], ".1f"),
          _number(r["synchronize_us_per_cycle"], ".1f"), _number(r["synchronize_median_us_per_cycle"], ".1f"),
          _number(r["synchronize_model_us_per_cycle"], ".1f"), _number(r["real_time_factor"], ".2f")]
         for r in rows])


def plot(plt, rows: list[dict], path: Path, title: str) -> None:
    """Measured and model time per cycle, communicate and synchronize, one group of bars per transport."""
    import numpy as np

    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = np.arange(len(rows))
    series = [("communicate_us_per_cycle", "communicate, mean cycle", "C0", None, 1.0),
              ("communicate_median_us_per_cycle", "communicate, median cycle", "C0", None, 0.55),
              ("communicate_model_us_per_cycle", "communicate, model", "C0", "//", 0.3),
              ("synchronize_us_per_cycle", "synchronize, mean cycle", "C1", None, 1.0),
              ("synchronize_median_us_per_cycle", "synchronize, median cycle", "C1", None, 0.55),
              ("synchronize_model_us_per_cycle", "synchronize, model", "C1", "//", 0.3)]
    width = 0.13
    for j, (key, label, color, hatch, alpha) in enumerate(series):
        values = [np.nan if r[key] is None or r[key] <= 0 else r[key] for r in rows]
        ax.bar(x + (j - 2.5) * width, values, width, color=color, hatch=hatch, alpha=alpha, label=label)
    ax.set_xticks(x, [r["transport"] for r in rows])
    ax.set_yscale("log")
    ax.set_ylim(top=ax.get_ylim()[1] * 6)                  # room for the legend above the bars
    ax.set_ylabel("µs per cycle (mean over ranks)")
    ax.set_title(title)
    ax.legend(fontsize="x-small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- the worker -------------------------------------------------------------------------------
def worker(spec: dict) -> None:
    """One transport: the primitives' times, then the workload (worker kind "interconnect")."""
    from .. import models
    from ..runtime import parallel
    from ..core.simulation import Simulation
    from .exchange import exchange_measurements
    from .mpi import time_primitives

    comm = parallel.make_comm()
    rows = time_primitives(comm, spec["primitives"], spec["sizes"], spec["repeats"])
    network = models.build(spec["model"], **spec["parameters"])
    sim = Simulation(network, comm=comm, **spec["simulation"])
    result = sim.run(spec["duration_ms"])
    if comm.rank != 0:
        return
    stats = result.cycle_statistics()
    from ..core.simulation import PHASES
    per_cycle = result.cycle_timers.mean(axis=0)           # [cycle, phase], mean over ranks
    medians = {f"{phase}_median_us_per_cycle": float(np.median(per_cycle[:, PHASES.index(phase)]) * 1e6)
               for phase in ("communicate", "synchronize")}
    wait = None if stats is None else stats["predicted"]["sync_conv_s"] / stats["cycles"]
    Path(spec["result"]).write_text(json.dumps({
        "rows": rows, "run": {**exchange_measurements(result), **medians}, "wait_s_per_cycle": wait,
        "measured_wait_s_per_cycle": None if stats is None else stats["measured"]["cycle_wait_s"],
        "transport": parallel.transport(comm), "host": os.uname().nodename}))
