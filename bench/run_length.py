"""Does a cycle cost the same however many came before? Wall time and memory along a long run.

    python bench/run_length.py                                   # dpsnn-small, 1000 s simulated, streamed
    python bench/run_length.py --duration-s 100 --block-s 10 --neurons 400 --set synapses_per_neuron=100
    python bench/run_length.py --compare 10,100                  # a run and one 10x longer: time ratio

The run streams its spikes and timers into a temporary folder as `ranvier run --out` does
(or keeps only counts with --counts, as `ranvier run` without --out does). Every --block-s of
simulated time it prints the wall seconds that block took and the resident memory, so a cost
that grows with the run's age, or memory that grows with it, shows at once. --compare runs
each duration in a fresh process and prints the ratio of their wall times to the ratio of
their durations.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s() -> float:
    import resource
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_run(args) -> dict:
    import ranvier as rv
    from ranvier.io import config as cfgmod

    cfg = cfgmod.load(ROOT / "examples" / "dpsnn-small.toml")
    parameters = {**cfg.parameters, **dict(cfgmod.parse_assignment(a) for a in args.set)}
    if args.neurons:
        parameters["neurons"] = args.neurons
    net = rv.models.build(cfg.model, **parameters)
    blocks = []
    with tempfile.TemporaryDirectory(dir=args.tmp) as folder:
        kwargs = dict(record_spikes="counts") if args.counts else dict(stream_to=folder)
        sim = rv.Simulation(net, threads=args.threads, seed=1, **kwargs)
        block_ms = args.block_s * 1000.0
        total_ms = args.duration_s * 1000.0
        t_start = time.perf_counter()
        last = [0.0, t_start, cpu_s()]

        def progress(done_ms, _total_ms, _wall):
            if done_ms - last[0] >= block_ms - 1e-9 or done_ms >= total_ms:
                now, cpu = time.perf_counter(), cpu_s()
                blocks.append({"until_s": done_ms / 1000, "wall_s": now - last[1], "cpu_s": cpu - last[2],
                               "rss_mib": rss_mib()})
                if not args.json:
                    b = blocks[-1]
                    print(f"{b['until_s']:9.1f} s simulated  {b['wall_s']:8.3f} s wall, {b['cpu_s']:8.3f} s CPU "
                          f"for the last {(done_ms - last[0]) / 1000:g} s  RSS {b['rss_mib']:7.1f} MiB", flush=True)
                last[:] = [done_ms, now, cpu]

        res = sim.run(total_ms, progress=progress)
        wall = time.perf_counter() - t_start
        summary = res.summary()
        sim.close()
    return {"duration_s": args.duration_s, "wall_s": wall, "blocks": blocks, "peak_rss_mib": peak_rss_mib(),
            "spikes": summary["spikes_total"], "rates_hz": summary["rates_steady_hz"], "neurons": net.size}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration-s", type=float, default=1000.0, help="simulated seconds (default 1000)")
    p.add_argument("--block-s", type=float, default=100.0, help="report every this many simulated seconds")
    p.add_argument("--neurons", type=int, help="network size (default: dpsnn-small's 2048)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="model parameter")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--counts", action="store_true", help="keep counts only (ranvier run without --out)")
    p.add_argument("--tmp", help="folder for the streamed files (default: the system's)")
    p.add_argument("--compare", metavar="T1,T2", help="two durations in s, each run in its own process")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = p.parse_args(argv)
    if args.compare:
        short, long = (float(x) for x in args.compare.split(","))
        walls = {}
        for duration in (short, long):
            cmd = [sys.executable, __file__, "--duration-s", str(duration), "--block-s", str(duration), "--json",
                   "--threads", str(args.threads)] + [f"--set={a}" for a in args.set]
            if args.neurons:
                cmd += ["--neurons", str(args.neurons)]
            if args.counts:
                cmd.append("--counts")
            walls[duration] = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        ratio = walls[long]["wall_s"] / walls[short]["wall_s"]
        print(f"{short:g} s simulated: {walls[short]['wall_s']:.3f} s wall, peak RSS {walls[short]['peak_rss_mib']:.0f} MiB")
        print(f"{long:g} s simulated: {walls[long]['wall_s']:.3f} s wall, peak RSS {walls[long]['peak_rss_mib']:.0f} MiB")
        print(f"wall-time ratio {ratio:.3f} for a duration ratio of {long / short:g} "
              f"({ratio / (long / short):.3f} of proportional)")
        return 0
    out = one_run(args)
    if args.json:
        print(json.dumps(out))
        return 0
    first, last = out["blocks"][0], out["blocks"][-1]
    print(f"dpsnn {out['neurons']} neurons, {out['duration_s']:g} s simulated in {out['wall_s']:.1f} s wall; "
          f"first block {first['wall_s']:.3f} s wall ({first['cpu_s']:.3f} s CPU), last block {last['wall_s']:.3f} s "
          f"wall ({last['cpu_s']:.3f} s CPU); ratio last/first {last['wall_s'] / first['wall_s']:.3f} wall, "
          f"{last['cpu_s'] / first['cpu_s']:.3f} CPU; peak RSS {out['peak_rss_mib']:.0f} MiB; "
          f"{out['spikes']:,} spikes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
