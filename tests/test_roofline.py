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
    assert 0.1 < m["stream_read_GBps"] < 1000 and 0.1 < m["stream_copy_GBps"] < 1000
    assert 0.5 < m["clock_GHz"] < 10 and 0.5 < m["scalar_ipc"] < 16
    assert 1 < m["chase_ns"] < 2000 and 0.05 < m["random_load_ns"] < m["chase_ns"]
    rows = sorted((k, v) for k, v in m.items() if k.startswith("scatter_add_ns_row_"))
    assert len(rows) == 4 and all(0.01 < v < 100 for _, v in rows)
    (table,) = report["workloads"]
    assert table["workload"] == "dpsnn" and table["threads"] == 1
    phases = {r["phase"]: r for r in table["rows"]}
    assert set(phases) == {"deliver", "update", "exchange"}
    for name in ("deliver", "update"):
        assert phases[name]["floor"] > 0 and phases[name]["measured"] > 0, name
    assert table["floor_core_s"] == sum(r["floor"] for r in table["rows"])
    assert 0 < table["rtf_floor"] and 0 < table["rtf_measured"]
    assert "deliver" in done.stdout and "real-time factor: floor" in done.stdout
