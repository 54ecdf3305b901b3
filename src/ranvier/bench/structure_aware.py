"""The structure-aware study on a fixed multi-area network (the multi-area model, or any network
with areas), at one rank count:

    ranvier bench structure-aware multi-area --ranks 2 --set scale=0.005 \\
        --set inter_area_delay_min_ms=1.0 --duration-ms 2000 --repeats 3

(the multi-area model reads its data set, docs/data.md, or the folder `--set data=...` names)

Unlike weak-scaling / heterogeneity / cycle-times (areas.py), which give every rank one area of
a model with n_areas, the network stays as it is and the placements differ:
  conventional            round-robin, one exchange among all ranks every cycle;
  conventional/P          the same exchange, neurons placed by area placement P;
  two-tier/P              placement P, exchange inside area groups every cycle and among all ranks
                          every D cycles (the structure-aware scheme),
for P in --placements (by-area, area-groups, balanced). Prints per configuration the real-time
factor and phases per cycle, the cycle-time statistics, each two-tier run's synchronisation
against the conventional one next to theory.md 1 (1/sqrt(D), and with the measured serial
correlation), and the load per area (neurons, synapses, spikes: the hotspot) and per rank (its
compute per cycle, spikes and events). Writes structure_aware.csv (one row per run),
structure_aware.json and structure_aware.png.
"""
from __future__ import annotations

import csv
import json
import statistics
import tempfile
from pathlib import Path

from ..io import config as cfgmod
from .. import models
from ..core import placement as placements
from ..analysis import theory
from ..cli.arguments import assignment, positive_float, positive_int
from ..errors import ConfigError
from . import areas, common
from .common import check_parameters, resolve_workload, say
from .runner import launch_prefix, run_worker

CSV_NAME, JSON_NAME, PNG_NAME = "structure_aware.csv", "structure_aware.json", "structure_aware.png"
DEFAULT_PLACEMENTS = ("by-area", "area-groups", "balanced")
REFERENCE = "conventional"
COLUMNS = ["config", *areas.RUN_COLUMNS]


def configurations(placement_names, conventional_exchange: str, tier_exchange: str | None,
                   global_interval: int | None) -> list[dict]:
    """The runs of one repeat: the conventional reference, then each placement with both exchanges."""
    out = [{"config": REFERENCE, "scheme": areas.CONVENTIONAL,
            "simulation": {"exchange": conventional_exchange, "placement": "round-robin", "global_interval": None}}]
    for p in placement_names:
        out.append({"config": f"conventional/{p}", "scheme": areas.CONVENTIONAL,
                    "simulation": {"exchange": conventional_exchange, "placement": p, "global_interval": None}})
        two_tier = {"exchange": "two-tier", "placement": p, "global_interval": global_interval}
        if tier_exchange is not None:
            two_tier["tier_exchange"] = tier_exchange
        out.append({"config": f"two-tier/{p}", "scheme": areas.STRUCTURE_AWARE, "simulation": two_tier})
    return out


def area_load(network, population_spikes: dict | None) -> list[dict]:
    """Per area: neurons, incoming synapses (expected), spikes of the run, spikes per neuron."""
    rows: dict[str, dict] = {}
    for pop in network.populations:
        row = rows.setdefault(pop.area, {"area": pop.area, "neurons": 0, "synapses": 0.0, "spikes": 0})
        row["neurons"] += pop.size
        row["spikes"] += (population_spikes or {}).get(pop.name, 0)
    for pr in network.projections:
        rows[network.population(pr.target).area]["synapses"] += network.projection_synapses(pr)
    total = sum(r["spikes"] for r in rows.values()) or 1
    neurons = sum(r["neurons"] for r in rows.values())
    for r in rows.values():
        r["spike_share"] = r["spikes"] / total
        r["rate_vs_mean"] = (r["spikes"] / r["neurons"]) / (total / neurons) if total else None
    return list(rows.values())


def compare(summary: list[dict]) -> list[dict]:
    """Each configuration against the conventional reference: synchronisation and exchange per cycle,
    real-time factor; for two-tier runs the predicted synchronisation ratio of theory.md 1."""
    ref = next((s for s in summary if s["config"] == REFERENCE), None)
    if ref is None:
        return []
    rho = ref.get("autocorrelation")
    out = []
    for s in summary:
        if s is ref:
            continue
        D = s["D"]
        out.append({
            "config": s["config"], "D": D,
            "sync_us": s["synchronize_us_per_cycle"], "sync_ref_us": ref["synchronize_us_per_cycle"],
            "sync_ratio": areas._ratio(s["synchronize_us_per_cycle"], ref["synchronize_us_per_cycle"]),
            "sync_ratio_predicted": (1.0 / D ** 0.5) if D > 1 else None,
            "sync_ratio_predicted_correlated": theory.correlated_sync_ratio(D, rho[:D - 1])
            if D > 1 and rho is not None and len(rho) >= D - 1 else None,
            "exchange_ratio": areas._ratio(s["exchange_us_per_cycle"], ref["exchange_us_per_cycle"]),
            "speedup": areas._ratio(ref["rtf_median"], s["rtf_median"]),
        })
    return out


def summarize(runs: list[dict]) -> list[dict]:
    summary = areas.summarize_runs(runs, "config")
    order = list(dict.fromkeys(r["config"] for r in runs))
    summary.sort(key=lambda s: order.index(s["config"]))
    for s in summary:     # per-rank load: medians over repeats
        group = [r for r in runs if r["config"] == s["config"]]
        for key in ("rank_compute_us", "rank_spikes", "rank_events"):
            s[key] = [statistics.median(r[key][i] for r in group) for i in range(len(group[0][key]))]
    return summary


def rank_table(summary: list[dict]) -> tuple[list, list]:
    header = ["config", "rank", "compute µs/cycle", "spikes", "recurrent events"]
    rows = []
    for s in summary:
        for i, (c, k, e) in enumerate(zip(s["rank_compute_us"], s["rank_spikes"], s["rank_events"])):
            rows.append([s["config"], str(i), f"{c:.2f}", f"{k:.0f}", f"{e:.0f}"])
    return header, rows


def area_table(load: list[dict]) -> tuple[list, list]:
    header = ["area", "neurons", "synapses in", "spikes", "share", "rate / mean"]
    rows = [[r["area"], f"{r['neurons']}", f"{r['synapses']:.0f}", f"{r['spikes']}", f"{r['spike_share']:.3f}",
             common_fmt(r["rate_vs_mean"], ".2f")] for r in load]
    return header, rows


def format_rank_table(summary: list[dict]) -> str:
    return common.text_table(*rank_table(summary))


def format_area_table(load: list[dict]) -> str:
    return common.text_table(*area_table(load))


def common_fmt(value, spec):
    return "-" if value is None else format(value, spec)


def comparison_table(comparison: list[dict]) -> tuple[list, list]:
    header = ["config", "D", "sync µs", "conv sync µs", "sync ratio", "1/sqrt(D)", "with acf", "comm+sync ratio",
              "RTF conv / RTF"]
    rows = [[c["config"], str(c["D"]), common_fmt(c["sync_us"], ".2f"), common_fmt(c["sync_ref_us"], ".2f"),
             common_fmt(c["sync_ratio"], ".3f"), common_fmt(c["sync_ratio_predicted"], ".3f"),
             common_fmt(c["sync_ratio_predicted_correlated"], ".3f"), common_fmt(c["exchange_ratio"], ".3f"),
             common_fmt(c["speedup"], ".3f")] for c in comparison]
    return header, rows


def format_comparison(comparison: list[dict]) -> str:
    return common.text_table(*comparison_table(comparison))


def plot(plt, summary: list[dict], load: list[dict], path: Path, title: str) -> None:
    fig = plt.figure(figsize=(17, 5))
    draw(fig, summary, load, title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw(fig, summary: list[dict], load: list[dict], title: str) -> None:
    """The three panels on a matplotlib figure: load per area (the hotspot), phases per
    configuration, compute per rank; the bench's PNG and `ranvier report` draw the same."""
    axes = fig.subplots(1, 3)
    ax = axes[0]
    names = [r["area"] for r in load]
    x = range(len(names))
    ax.bar(x, [r["spike_share"] for r in load], color="C3", label="share of spikes")
    neurons = sum(r["neurons"] for r in load)
    ax.plot(x, [r["neurons"] / neurons for r in load], "k.", label="share of neurons")
    ax.set_xticks(list(x), names, rotation=90, fontsize=7)
    ax.set_ylabel("fraction")
    ax.set_title("load per area")
    ax.legend(fontsize=8)
    ax = axes[1]
    labels = [s["config"] for s in summary]
    bottom = [0.0] * len(summary)
    for phase, column in zip(areas.PHASES, areas.PHASE_COLUMNS):
        values = [s[column] or 0.0 for s in summary]
        ax.bar(range(len(summary)), values, bottom=bottom, color=areas.PHASE_COLORS[phase], label=phase)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(range(len(summary)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("µs per cycle (mean over ranks)")
    ax.set_title("phases per configuration")
    ax.legend(fontsize=8)
    ax = axes[2]
    width = 0.8 / max(1, len(summary))
    for k, s in enumerate(summary):
        ranks = range(len(s["rank_compute_us"]))
        ax.bar([r + k * width for r in ranks], s["rank_compute_us"], width=width, label=s["config"])
    n_ranks = len(summary[0]["rank_compute_us"]) if summary else 0
    ax.set_xticks([r + width * (len(summary) - 1) / 2 for r in range(n_ranks)], [str(r) for r in range(n_ranks)])
    ax.set_xlabel("rank")
    ax.set_ylabel("compute µs per cycle (deliver + update + collocate)")
    ax.set_title("load per rank")
    ax.legend(fontsize=7)
    fig.suptitle(title)


def structure_aware_bench(workload: str, ranks: int = 2, threads: int | None = None, duration_ms=None,
                          repeats: int = 3, parameters: dict | None = None, placement_names=DEFAULT_PLACEMENTS,
                          conventional_exchange: str = "allgather", tier_exchange: str | None = None,
                          global_interval: int | None = None, out=None) -> Path:
    areas._check_strategy("--conventional-exchange", conventional_exchange)
    areas._check_strategy("--tier-exchange", tier_exchange)
    placement_names = common.check_names("--placements", "placement", placement_names, placements.AREA_PLACEMENTS)
    parameters = dict(parameters or {})
    cfg = resolve_workload(workload)
    check_parameters(cfg, parameters, {})
    if duration_ms is None and workload in models.REGISTRY:
        duration_ms = areas.DEFAULT_DURATION_MS
    cfg = cfgmod.override(cfg, parameters=parameters,
                          simulation={"duration_ms": duration_ms, "threads": threads or cfg.simulation["threads"] or 1})
    cfg.simulation.update(barrier=True, overlap=False)   # synchronize is the barrier; the study's schemes do not overlap
    network = models.build(cfg.model, **cfg.parameters)
    resolution = cfg.simulation["resolution_ms"]
    cfgmod.check_simulation(cfg, network)
    for p in placement_names:      # every placement must take this network on these ranks: checked first
        try:
            placements.segments(network, p, ranks, resolution)
        except ConfigError as e:
            raise ConfigError(f"--placements {p}: {e}") from None
    largest = network.largest_global_interval(resolution, round(network.min_delay_ms() / resolution))
    if largest < 2:
        raise ConfigError(f"the shortest inter-area delay, {network.min_inter_area_delay_ms():g} ms, allows no "
                          f"global interval above 1 cycle of {network.min_delay_ms():g} ms: two-tier would exchange "
                          f"globally every cycle; raise the inter-area delays (multi-area: --set "
                          f"inter_area_delay_min_ms=1.0, the study's cutoff)")
    if global_interval is not None and global_interval > largest:
        raise ConfigError(f"--global-interval {global_interval} is too long: the shortest inter-area delay allows "
                          f"at most {largest}")
    D = global_interval or largest
    launch_prefix(ranks, cfg.simulation["threads"])
    plt = common.pyplot()
    out = common.output_folder(out, "structure-aware", CSV_NAME)
    out.mkdir(parents=True, exist_ok=True)
    configs = configurations(placement_names, conventional_exchange, tier_exchange, D)
    say(f"bench: {cfg.model}, {network.size:,} neurons in {len(placements.area_ranges(network))} areas on {ranks} "
        f"rank(s) x {cfg.simulation['threads']} thread(s), {float(cfg.simulation['duration_ms']):g} ms per run, "
        f"{len(configs)} configurations x {repeats} repeat(s), D = {D}")
    base = {"kind": "areas", "model": cfg.model, "parameters": cfg.parameters,
            "duration_ms": float(cfg.simulation["duration_ms"]), "lump_cycles": D}
    runs = []
    with tempfile.TemporaryDirectory(prefix="ranvier-bench-") as tmp, open(out / CSV_NAME, "w", newline="") as f:
        rows = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        rows.writeheader()
        for repeat in range(1, repeats + 1):     # repeats outermost: a drift of the machine spreads evenly
            for c in configs:
                spec = {**base, "scheme": c["scheme"], "simulation": {**cfg.simulation_kwargs(), **c["simulation"]}}
                label = f"{c['config']}, repeat {repeat}/{repeats}"
                run = {**run_worker(ranks, cfg.simulation["threads"], spec, Path(tmp), label),
                       "config": c["config"], "repeat": repeat}
                rows.writerow(run)
                f.flush()
                runs.append(run)
                say(f"bench: {label}: real-time factor {run['real_time_factor']:.3f}, synchronize "
                    f"{run['synchronize_us_per_cycle']:.2f} µs/cycle")
    summary = summarize(runs)
    comparison = compare(summary)
    load = area_load(network, runs[0].get("population_spikes"))
    print(f"{cfg.model}: {network.size:,} neurons, {len(load)} areas, {ranks} rank(s) x "
          f"{cfg.simulation['threads']} thread(s), {float(cfg.simulation['duration_ms']):g} ms, D = {D}, "
          f"{repeats} repeat(s) (medians)")
    print("\nphases: µs per cycle, mean over ranks")
    print(areas.format_phase_table(summary, "config"))
    print("\ncycle times (deliver + update + collocate), lumped by D")
    print(areas.format_cycle_table(summary, "config"))
    print("\nagainst the conventional scheme (round-robin): synchronisation per cycle, predicted 1/sqrt(D) for "
          "independent cycle times and with the conventional run's autocorrelation (theory.md 1)")
    print(format_comparison(comparison))
    print("\nload per rank (the slowest rank sets every cycle)")
    print(format_rank_table(summary))
    print("\nload per area (spikes of the conventional run; rate / mean: the hotspot)")
    print(format_area_table(load))
    (out / JSON_NAME).write_text(json.dumps({"workload": workload, "parameters": cfg.parameters, "ranks": ranks,
                                             "D": D, "runs": runs, "summary": summary, "comparison": comparison,
                                             "area_load": load}, indent=1, default=float) + "\n")
    written = [CSV_NAME, JSON_NAME]
    if plt is not None:
        plot(plt, summary, load, out / PNG_NAME, f"{cfg.model}: structure-aware study on {ranks} rank(s), D = {D}")
        written.append(PNG_NAME)
    say(f"bench: wrote {', '.join(str(out / w) for w in written)}")
    return out


def add_parser(benches, exchanges) -> None:
    strategies = [e for e in exchanges if e != "two-tier"]
    p = benches.add_parser("structure-aware", allow_abbrev=False,
                           help="the structure-aware study on one multi-area network: placements x schemes",
                           description=__doc__.split("\n\n", 1)[1].split("\n\n", 1)[1])
    p.add_argument("workload", metavar="WORKLOAD", help="a model with areas (multi-area, mam-benchmark) or a .toml")
    p.add_argument("--ranks", type=positive_int, default=2, metavar="R", help="ranks (default: 2)")
    p.add_argument("--threads", type=positive_int, metavar="K", help="threads per rank (default: the config's, else 1)")
    p.add_argument("--duration-ms", type=positive_float, metavar="T",
                   help="simulated time per run (default: the config's, or 2000 ms for a model name)")
    p.add_argument("--repeats", type=positive_int, default=3, metavar="N", help="runs of each configuration (default: 3)")
    p.add_argument("--placements", default=",".join(DEFAULT_PLACEMENTS), metavar="P1,P2,...",
                   help=f"area placements compared with round-robin (default: {','.join(DEFAULT_PLACEMENTS)})")
    p.add_argument("--set", type=assignment, action="append", default=[], metavar="KEY=VALUE",
                   help="a model parameter, value read as TOML (repeat for several)")
    p.add_argument("--conventional-exchange", choices=strategies, default="allgather",
                   help="the exchange of the conventional runs (default: allgather)")
    p.add_argument("--tier-exchange", choices=strategies, help="two-tier: the strategy of both tiers")
    p.add_argument("--global-interval", type=positive_int, metavar="D",
                   help="two-tier: cycles between global exchanges (default: the largest the delays allow)")
    p.add_argument("--out", metavar="DIR", help="folder for the results (default: bench-results/structure-aware-<time>)")


def command(args) -> None:
    structure_aware_bench(args.workload, ranks=args.ranks, threads=args.threads, duration_ms=args.duration_ms,
                          repeats=args.repeats, parameters=dict(args.set),
                          placement_names=[x.strip() for x in args.placements.split(",") if x.strip()],
                          conventional_exchange=args.conventional_exchange, tier_exchange=args.tier_exchange,
                          global_interval=args.global_interval, out=args.out)
