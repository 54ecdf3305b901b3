"""Two settings of one build compared in one process, chunk by chunk, on one network.

On a shared or virtual machine the speed of separate processes drifts by 10-35 % (the 2-core
VM of docs/performance.md), far more than most changes measured there. This builds the network
once and runs it in chunks that alternate between two settings of an environment variable that
a measurement build of the engine reads at run time (off on, on off, off on, ...: each pair in
both orders, so a trend along the run favours neither), so both settings see the same drift. It
prints the wall time and the deliver and update phases per chunk, min and median for each
setting, and the paired differences of each.

    python bench/paired_chunks.py RANVIER_SWITCH=1 dpsnn --pairs 30 --chunk-ms 200 --threads 2
    python bench/paired_chunks.py RANVIER_SWITCH=16,8 microcircuit --base RANVIER_SWITCH=8,4

The engine in this repository reads no such variable: add a temporary one to a measurement
build (docs/performance.md, "scheduling's cold rows"), and keep the winner as plain code.
"""
import argparse
import os
import statistics
import time


def parse_setting(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    return name, value or "1"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("setting", help="VAR=VALUE set for the 'on' chunks (VALUE defaults to 1)")
    ap.add_argument("model", help="a model name, e.g. dpsnn or microcircuit")
    ap.add_argument("--base", help="VAR=VALUE for the 'off' chunks (default: VAR unset)")
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--chunk-ms", type=float, default=200.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="model parameter")
    a = ap.parse_args()

    from ranvier import models
    from ranvier.core.simulation import Simulation

    var, value = parse_setting(a.setting)
    base = parse_setting(a.base) if a.base else None
    params = {}
    for kv in a.set:
        k, v = kv.split("=", 1)
        params[k] = float(v) if "." in v or "e" in v else int(v)
    sim = Simulation(models.build(a.model, **params), threads=a.threads)

    def apply(mode: str) -> None:
        os.environ.pop(var, None)
        if base:
            os.environ[base[0]] = base[1]
        if mode == "on":
            os.environ[var] = value

    def phases(result) -> tuple[float, float]:
        p = result.summary()["phase_seconds"]   # summed since the start of the simulation
        return p["deliver"], p["update"]

    apply("off")
    prev = phases(sim.run(a.chunk_ms))   # warm-up: first touches, queues filled
    rows = {"off": [], "on": []}
    # Pair k is chunks 2k and 2k + 1: off then on for even k, on then off for odd k.
    for i in range(2 * a.pairs):
        mode = ("off", "on")[(i + i // 2) % 2]
        apply(mode)
        t = time.perf_counter()
        now = phases(sim.run(a.chunk_ms))
        rows[mode].append((time.perf_counter() - t, now[0] - prev[0], now[1] - prev[1]))
        prev = now
    for mode, r in rows.items():
        parts = [f"{name} min {min(x[j] for x in r):.4f} median {statistics.median(x[j] for x in r):.4f}"
                 for j, name in enumerate(("wall", "deliver", "update"))]
        print(f"{mode:3s} chunks {len(r)}: " + ", ".join(parts))
    for j, name in ((0, "wall"), (1, "deliver"), (2, "update")):
        diffs = [on[j] - off[j] for off, on in zip(rows["off"], rows["on"])]
        print(f"{name} on - off, paired: median {statistics.median(diffs):+.4f} s, mean {statistics.mean(diffs):+.4f} s, "
              f"'on' faster in {sum(d < 0 for d in diffs)} of {len(diffs)}")


if __name__ == "__main__":
    main()
