"""bench/roofline.py: the machine calibration gives plausible figures, and a quick roofline of
dpsnn has every phase with its work, floor and measured time (a check of the script; the
figures themselves are measurements, in docs/performance.md)."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quick_roofline_of_dpsnn(tmp_path):
    out = tmp_path / "roofline.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "roofline.py"), "--quick", "--workloads", "dpsnn",
                           "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    m = report["machine"]
    for key in ("stream_read_GBps", "stream_copy_GBps", "stream_triad_GBps"):
        assert 0.1 < m[key] < 1000, key
    assert 0.5 < m["clock_GHz"] < 10 and 0.5 < m["scalar_ipc"] < 16
    assert 1 < m["chase_ns"] < 2000 and 0.05 < m["random_load_ns"] < m["chase_ns"]
    assert 1 < m["chase_huge_ns"] < 2000
    rows = {k: v for k, v in m.items() if k.startswith("scatter_add_ns_row_")}
    assert set(rows) == {f"scatter_add_ns_row_{n}Ki" for n in (16, 64, 256, 4096)}
    assert all(0.01 < v < 100 for v in rows.values()), rows
    (table,) = report["workloads"]
    assert table["workload"] == "dpsnn" and table["threads"] == 1
    phases = {r["phase"]: r for r in table["rows"]}
    assert set(phases) == {"deliver", "update", "exchange"}
    for name in ("deliver", "update"):
        assert phases[name]["floor"] > 0 and phases[name]["measured"] > 0, name
        assert phases[name]["work_units"] and all(v > 0 for v in phases[name]["work_units"].values()), name
    assert phases["deliver"]["bytes"] > 0 and phases["deliver"]["random"] == phases["deliver"]["work_units"]["segments"]
    assert phases["exchange"]["work_units"]["spikes"] > 0
    assert table["floor_core_s"] == sum(r["floor"] for r in table["rows"])
    assert 0 < table["rtf_floor"] and 0 < table["rtf_measured"]
    assert table["process"]["cpu_s"] > 0 and table["process"]["wall_s"] > 0
    assert "deliver" in done.stdout and "real-time factor: floor" in done.stdout
    assert "deliver  = E x scatter(row)" in done.stdout  # the floor model is printed with the table
