"""PyNN's Vogels-Abbott benchmark (examples/VAbenchmarks.py of the PyNN 0.13.0 source
distribution, CUBA and COBA), run unchanged on pyNN.ranvier (1 and 2 ranks) and pyNN.nest (the
nest extra) on this machine: rates, the spikes of 1 and 2 ranks compared, wall times.

    python bench/va_benchmark.py [--out DIR]

The script is taken from the source distribution (downloaded once, as bench/pynn_scenarios.py
does) and run in a scratch folder; its Results/*.pkl files (Neo) are read back.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np



def script() -> Path:
    """examples/VAbenchmarks.py of the PyNN source distribution, in a cache folder."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from pynn_scenarios import examples_dir
    return examples_dir() / "VAbenchmarks.py"


def run(simulator: str, benchmark: str, ranks: int, folder: Path) -> dict:
    cmd = [sys.executable, str(folder / "VAbenchmarks.py"), simulator, benchmark]
    if ranks > 1:
        cmd = [str(Path(sys.executable).parent / "mpiexec"), "-n", str(ranks)] + cmd
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    out = {"simulator": simulator, "benchmark": benchmark, "ranks": ranks, "wall_s": wall}
    for key, pattern in (("exc_rate_hz", r"Excitatory rate\s*:\s*([\d.eE+-]+)"),
                         ("inh_rate_hz", r"Inhibitory rate\s*:\s*([\d.eE+-]+)"),
                         ("build_s", r"Build time\s*:\s*([\d.eE+-]+)"),
                         ("simulation_s", r"Simulation time\s*:\s*([\d.eE+-]+)")):
        m = re.search(pattern, done.stdout)
        out[key] = float(m.group(1)) if m else None
    files = sorted((folder / "Results").rglob(f"VAbenchmarks_{benchmark}_exc_{simulator}_np{ranks}_*.pkl"))
    out["spikes_file"] = str(files[-1]) if files else None
    return out


def spikes(path: str) -> dict:
    from neo.io import PickleIO
    block = PickleIO(path).read_block()
    return {int(st.annotations["channel_id"]): np.asarray(st.magnitude) for st in block.segments[0].spiketrains}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write results.json and results.md here")
    ap.add_argument("--no-nest", action="store_true", help="leave pyNN.nest out")
    args = ap.parse_args(argv)
    rows, checks = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(script(), folder / "VAbenchmarks.py")
        for benchmark in ("CUBA", "COBA"):
            one = run("ranvier", benchmark, 1, folder)
            two = run("ranvier", benchmark, 2, folder)
            rows += [one, two]
            a, b = spikes(one["spikes_file"]), spikes(two["spikes_file"])
            checks[f"{benchmark}: identical spikes on 1 and 2 ranks"] = \
                a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
            if not args.no_nest:
                nest = run("nest", benchmark, 1, folder)
                rows.append(nest)
                for key in ("exc_rate_hz", "inh_rate_hz"):
                    checks[f"{benchmark}: {key} ranvier / nest"] = one[key] / nest[key]
    lines = ["| simulator | benchmark | ranks | excitatory Hz | inhibitory Hz | build s | simulation s | wall s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| pyNN.{r['simulator']} | {r['benchmark']} | {r['ranks']} | {r['exc_rate_hz']:.3f} | "
                     f"{r['inh_rate_hz']:.3f} | {r['build_s']:.2f} | {r['simulation_s']:.2f} | {r['wall_s']:.1f} |")
    lines.append("")
    lines += [f"- {k}: {v if isinstance(v, bool) else f'{v:.4f}'}" for k, v in checks.items()]
    text = "\n".join(lines)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for r in rows:
            r.pop("spikes_file", None)
        (out / "results.json").write_text(json.dumps({"rows": rows, "checks": checks}, indent=1))
        (out / "results.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
