"""`ranvier bench imbalance`: load imbalance and waiting under each placement and brain state.

The Blue Gene/P exchange study found load imbalance, the spikes per rank per interval, to be
what limits scaling, and distributing cells at random to cure it. This benchmark runs one
workload (dpsnn by default) under each placement (round-robin, block, random; any placement
`ranvier run` knows) and each state (aw: the model as it is; swa: `regime = "swa"`, the
slow-wave regime, where the model has it) on R ranks, one `ranvier run` at a time, and puts
side by side, per run:

- the imbalance of spikes emitted and received per rank and interval (summary.json
  "imbalance": the busiest rank over the mean, per interval, averaged; the CV over ranks),
  and of the run's totals per rank;
- the time the ranks waited for each other (the synchronize phase, its share of the run),
  and the waiting per cycle measured from the cycle times (slowest rank minus mean) next to
  the synchronisation model of docs/theory.md section 1 (k_P sigma: the expected maximum of P
  normal cycle times).

Outputs in --out: imbalance.csv (one row per run), imbalance.json, imbalance.png (imbalance
against waiting), and each run's archive under runs/.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from .. import models
from ..cli.arguments import assignment, positive_float, positive_int
from ..errors import ConfigError
from . import common, runner

STATES = {"aw": {}, "swa": {"regime": "swa"}}
DEFAULT_PLACEMENTS = ("round-robin", "block", "random")
COLUMNS = ("state", "placement", "ranks", "threads", "spikes", "emitted_max_over_mean", "emitted_weighted_max_over_mean",
           "emitted_cv",
           "emitted_total_max_over_mean", "received_max_over_mean", "received_cv", "received_total_max_over_mean",
           "synchronize_share", "wait_per_cycle_us", "wait_predicted_us", "real_time_factor", "archive")


def add_parser(benches, exchanges) -> None:
    from ..core.simulation import PLACEMENTS

    p = benches.add_parser(
        "imbalance", allow_abbrev=False, help="spikes per rank and interval, and waiting, per placement and state",
        description="Runs a workload under each placement and brain state on --ranks ranks and prints the "
                    "imbalance of spikes emitted and received per rank and interval next to the waiting "
                    "(synchronize) and the synchronisation model of docs/theory.md section 1.")
    p.add_argument("workload", nargs="?", default="dpsnn", help="a model name or a run configuration (default dpsnn)")
    p.add_argument("--ranks", type=positive_int, default=2, help="MPI ranks (default 2)")
    p.add_argument("--threads", type=positive_int, default=1, help="threads per rank (default 1)")
    p.add_argument("--placements", default=",".join(DEFAULT_PLACEMENTS),
                   help=f"comma-separated, from: {', '.join(PLACEMENTS)} (default {','.join(DEFAULT_PLACEMENTS)})")
    p.add_argument("--states", default="aw", help="comma-separated: aw (the model as given), swa (regime=swa)")
    p.add_argument("--duration-ms", type=positive_float, default=None, help="simulated time per run (default 1000 ms)")
    p.add_argument("--exchange", choices=exchanges, default=None, help="spike exchange (default: the workload's)")
    p.add_argument("--set", type=assignment, action="append", default=[], metavar="KEY=VALUE",
                   help="a model parameter for every run, value read as TOML (repeatable)")
    p.add_argument("--out", default=None, help="output folder (default bench-results/imbalance-<time>)")


def command(args) -> None:
    from ..core.simulation import PLACEMENTS

    placements = common.check_names("--placements", "placement", args.placements.split(","), PLACEMENTS)
    states = common.check_names("--states", "state", args.states.split(","), list(STATES))
    parameters = dict(args.set)
    cfg = common.resolve_workload(args.workload)
    common.check_parameters(cfg, parameters)
    known = models.defaults(cfg.model)
    for state in states:
        missing = [k for k in STATES[state] if k not in known]
        if missing:
            raise ConfigError(f"--states {state}: model '{cfg.model}' has no parameter {missing[0]!r}; "
                              f"this state needs a model with it (dpsnn)")
    duration = args.duration_ms or cfg.simulation["duration_ms"]
    out = common.output_folder(args.out, "imbalance", "imbalance.csv")
    out.mkdir(parents=True, exist_ok=True)
    rows = run_all(args.workload, states, placements, parameters, args.ranks, args.threads, duration,
                   args.exchange, out)
    print(format_table(rows))
    write_outputs(rows, out)
    print(f"results written to {out}/")


def run_all(workload, states, placements, parameters, ranks, threads, duration_ms, exchange, out: Path) -> list[dict]:
    from .scaling import _workload_args, run_argv

    rows = []
    with open(out / "imbalance.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for state in states:
            for placement in placements:
                archive = out / "runs" / f"{state}-{placement}"
                argv = run_argv(_workload_args(workload), {**parameters, **STATES[state]}, threads, duration_ms,
                                archive, exchange=exchange, energy="none")
                argv[-1:-1] = ["--placement", placement]          # before --quiet
                done = runner.launch(ranks, threads, argv)
                summary_path = archive / "summary.json"
                if done.returncode != 0 or not summary_path.exists():
                    tail = "\n".join((done.stderr or done.stdout or "").strip().splitlines()[-20:])
                    raise runner.WorkerFailed(f"{state} {placement} failed with status {done.returncode}: "
                                              f"{' '.join(map(str, done.args))}\n{tail}")
                row = row_of(json.loads(summary_path.read_text()), state, archive)
                writer.writerow(row)
                f.flush()
                rows.append(row)
                common.say(f"bench imbalance: {state} {placement}: emitted max/mean "
                           f"{_fmt(row['emitted_max_over_mean'], '.3f')}, synchronize "
                           f"{_fmt(row['synchronize_share'] * 100 if row['synchronize_share'] is not None else None, '.1f')} %")
    return rows


def row_of(s: dict, state: str, archive) -> dict:
    imb = s.get("imbalance") or {}
    phases = s["phase_seconds"]
    total = sum(phases.values())
    stats = s.get("cycle_statistics") or {}
    measured, predicted = stats.get("measured") or {}, stats.get("predicted") or {}
    cycles = stats.get("cycles")
    row = {"state": state, "placement": s["placement"], "ranks": s["ranks"], "threads": s["threads"],
           "spikes": s["spikes_total"], "real_time_factor": s["real_time_factor"], "archive": str(archive),
           "synchronize_share": phases["synchronize"] / total if total > 0 else None,
           "wait_per_cycle_us": measured["cycle_wait_s"] * 1e6 if "cycle_wait_s" in measured else None,
           "wait_predicted_us": predicted["sync_conv_s"] / cycles * 1e6 if cycles and "sync_conv_s" in predicted else None}
    for q in ("emitted", "received"):
        d = imb.get(q) or {}
        row[f"{q}_max_over_mean"] = d.get("max_over_mean")
        row[f"{q}_weighted_max_over_mean"] = d.get("weighted_max_over_mean")
        row[f"{q}_cv"] = d.get("cv")
        row[f"{q}_total_max_over_mean"] = d.get("per_rank_max_over_mean")
    return row


def _fmt(x, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def format_table(rows: list[dict]) -> str:
    header = ["state", "placement", "spikes", "emitted max/mean", "weighted", "emitted CV", "emitted totals max/mean",
              "received max/mean", "received totals max/mean", "synchronize %", "wait/cycle us",
              "model k_P sigma us"]
    body = [[r["state"], r["placement"], f"{r['spikes']}", _fmt(r["emitted_max_over_mean"], ".3f"),
             _fmt(r["emitted_weighted_max_over_mean"], ".3f"),
             _fmt(r["emitted_cv"], ".3f"), _fmt(r["emitted_total_max_over_mean"], ".3f"),
             _fmt(r["received_max_over_mean"], ".3f"), _fmt(r["received_total_max_over_mean"], ".3f"),
             _fmt(r["synchronize_share"] * 100 if r["synchronize_share"] is not None else None, ".1f"),
             _fmt(r["wait_per_cycle_us"], ".2f"), _fmt(r["wait_predicted_us"], ".2f")] for r in rows]
    return common.text_table(header, body)


def write_outputs(rows: list[dict], out: Path) -> None:
    (out / "imbalance.json").write_text(json.dumps(rows, indent=1))
    plt = common.pyplot()
    if plt is None:
        common.say("bench imbalance: matplotlib is not installed: no imbalance.png")
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    for i, r in enumerate(rows):
        label = f"{r['state']} {r['placement']}"
        if r["emitted_max_over_mean"] is not None and r["synchronize_share"] is not None:
            left.scatter(r["emitted_max_over_mean"], 100 * r["synchronize_share"], color=f"C{i % 10}", label=label)
        if r["wait_per_cycle_us"] is not None and r["wait_predicted_us"] is not None:
            right.scatter(r["wait_predicted_us"], r["wait_per_cycle_us"], color=f"C{i % 10}", label=label)
    left.set_xlabel("spikes emitted per rank and interval: max / mean")
    left.set_ylabel("synchronize (% of the run)")
    right.set_xlabel("waiting per cycle, model k_P sigma (us)")
    right.set_ylabel("waiting per cycle, measured (us)")
    lim = [0, max([1e-9] + [max(r["wait_per_cycle_us"] or 0, r["wait_predicted_us"] or 0) for r in rows]) * 1.1]
    right.plot(lim, lim, "k--", lw=0.8)
    left.legend(fontsize="small")
    fig.savefig(out / "imbalance.png", dpi=100)
    plt.close(fig)
