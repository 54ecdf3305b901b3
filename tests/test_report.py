"""ranvier report: run archives in, a self-contained HTML page and a Markdown mirror out; the numbers
are those of the archives (nothing invented where energy is missing), and the plots render in a
headless browser."""
from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ranvier import report
from ranvier.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
IMG_DATA = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Fake energy numbers: a fixture, not a measurement. Each is distinctive so the test can find it.
FAKE_ENERGY = {
    "available": True, "reason": None, "meter": "fake-meter", "describes": "test fixture, not a measurement",
    "rate_hz": 10.0, "estimate": True, "baseline_power_w": 45.6, "simulation_s": 0.0177,
    "energy_total_j": 2.81, "energy_j": 1.37, "mean_power_w": 123.4, "mean_power_above_baseline_w": 77.8,
    "j_per_synaptic_event": {"all": 1.234e-6, "recurrent": 2.468e-6},
    "events": {"recurrent": 1_000_000, "external": 500_000}, "notes": "fake numbers written by tests/test_report.py",
}
UNAVAILABLE_REASON = "no power meter readable here (test fixture)"
FAKE_ENVIRONMENT = {   # the layout of ranvier.environment.collect()
    "date_utc": "2026-01-01T00:00:00+00:00", "host": "test-host", "os": "Linux 6.1", "machine": "x86_64",
    "cpu_model": "Fake CPU 9000", "cores_logical": 4, "cores_physical": 2, "cores_available": 2,
    "memory_bytes": 8 * 2**30, "ranks": 1, "ranks_per_node": 1, "nodes": 1, "threads_per_rank": 1,
    "mpi": {"library": "MPICH Version: 4.2.0", "standard": "4.1", "mpi4py": "4.0.0"},
    "ranvier": {"version": "0.1.0", "engine_version": "0.1.0", "git_commit": "0123abc", "compiler": "GNU 12.2.0",
                "build_type": "Release", "native": True, "simd": "avx2", "mpi_backend": "MPICH Version: 4.2.0"},
    "python": "3.11.7", "numpy": "2.0.0", "omp": {"OMP_PROC_BIND": "close"}, "command": ["ranvier", "run"],
}


def ranvier_run(out: Path, threads: int) -> None:
    # the pinning variables this process set on import must not pin the child's threads
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_PROC_BIND", "OMP_PLACES")}
    proc = subprocess.run([sys.executable, "-m", "ranvier", "run", "examples/dpsnn-small.toml", "--duration-ms", "200",
                           "--threads", str(threads), "--quiet", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr


def variant(src: Path, dst: Path, energy=None, environment=None) -> Path:
    """A copy of a real archive with its energy record and environment.json replaced (a dict),
    removed (False) or kept (None): archives from before either existed must work too."""
    shutil.copytree(src, dst)
    summary = json.loads((dst / "summary.json").read_text())
    if energy is False:
        summary.pop("energy", None)
    elif energy is not None:
        summary["energy"] = energy
    (dst / "summary.json").write_text(json.dumps(summary))
    if environment is False:
        (dst / "environment.json").unlink(missing_ok=True)
    elif environment is not None:
        (dst / "environment.json").write_text(json.dumps(environment))
    return dst


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> SimpleNamespace:
    base = tmp_path_factory.mktemp("archives")
    scaling = base / "scaling"                 # laid out like a scaling experiment: scaling/runs/<run>
    t1, t2 = scaling / "runs" / "t1", scaling / "runs" / "t2"
    t1.parent.mkdir(parents=True)
    ranvier_run(t1, threads=1)
    ranvier_run(t2, threads=2)
    measured = variant(t1, base / "energy-measured", energy=FAKE_ENERGY, environment=FAKE_ENVIRONMENT)
    unavailable = variant(t1, base / "energy-unavailable",
                          energy={"available": False, "reason": UNAVAILABLE_REASON, "meter": None})
    old = variant(t1, base / "old", energy=False, environment=False)
    return SimpleNamespace(base=base, scaling=scaling, t1=t1, t2=t2, measured=measured, unavailable=unavailable,
                           old=old)


def read_report(paths, out: Path, **kw) -> SimpleNamespace:
    html_path, md_path = report.write_report(paths, out, **kw)
    assert (html_path, md_path) == (out / "report.html", out / "report.md")
    return SimpleNamespace(html=html_path.read_text(), md=md_path.read_text(), html_path=html_path, out=out)


@pytest.fixture(scope="module")
def scaling_report(archives, tmp_path_factory) -> SimpleNamespace:
    return read_report([archives.scaling], tmp_path_factory.mktemp("scaling-report"))


def summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def table_row(md: str, first_cell: str, header_word: str) -> list[str]:
    """The cells of the row starting with first_cell in the table whose header holds header_word."""
    for table in re.split(r"\n\n", md):
        lines = table.strip().splitlines()
        if len(lines) > 2 and lines[0].startswith("|") and header_word in lines[0]:
            for line in lines[2:]:
                cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
                if cells[0] == first_cell:
                    return cells
    raise AssertionError(f"no row '{first_cell}' in a table with '{header_word}'")


# -- finding runs ----------------------------------------------------------------------------
def test_find_runs(archives, tmp_path):
    assert report.find_runs([archives.scaling]) == [archives.t1, archives.t2]
    assert report.find_runs([archives.t1]) == [archives.t1]                    # a run folder itself
    assert report.find_runs([archives.t1 / "summary.json"]) == [archives.t1]
    assert report.find_runs([archives.t2, archives.scaling]) == [archives.t2, archives.t1]   # once each
    # a run still being written lives in a hidden temporary folder: not a run yet
    hidden = tmp_path / "exp" / ".r1.abc.tmp"
    hidden.mkdir(parents=True)
    (hidden / "summary.json").write_text("{}")
    with pytest.raises(ConfigError, match=re.escape(str(tmp_path / "exp"))):
        report.find_runs([tmp_path / "exp"])
    with pytest.raises(ConfigError, match="missing-folder.*does not exist"):
        report.find_runs([tmp_path / "missing-folder"])


def test_bad_summary_is_one_clear_error(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "summary.json").write_text("{not json")
    with pytest.raises(ConfigError, match="broken/summary.json"):
        report.write_report([broken], tmp_path / "out")
    (broken / "summary.json").write_text('{"model": "dpsnn"}')
    with pytest.raises(ConfigError, match="lacks.*real_time_factor"):
        report.write_report([broken], tmp_path / "out")


def test_sig():
    assert [report.sig(x) for x in (0.08826, 12.34, 1234.5, 0, None, float("nan"))] == \
        ["0.0883", "12.3", "1,234", "0", "—", "—"]


# -- content ---------------------------------------------------------------------------------
def test_report_holds_every_section_and_run(archives, scaling_report):
    md = scaling_report.md
    for n in range(1, 10):
        assert f"\n## {n}. " in md
    s1, s2 = summary(archives.t1), summary(archives.t2)
    # each run's real-time factor, in the parameters table
    assert table_row(md, "t1", "seed")[-1] == report.sig(s1["real_time_factor"])
    assert table_row(md, "t2", "seed")[-1] == report.sig(s2["real_time_factor"])
    # the profiling table: computation, communication, barrier as % of the simulate wall time
    row = table_row(md, "1 rank × 2 threads", "computation %")
    p = s2["phase_seconds"]
    wall = s2["simulate_seconds"]
    computation = 100 * (p["deliver"] + p["update"] + p["collocate"]) / wall
    assert row[4:7] == [f"{computation:.1f}", f"{100 * p['communicate'] / wall:.1f}",
                        f"{100 * p['synchronize'] / wall:.1f}"]
    # speedup relative to the smallest core count
    speedup = s1["real_time_factor"] / s2["real_time_factor"]
    assert table_row(md, "all runs", "speedup")[0] == "all runs"
    assert report.sig(speedup) in md
    # rates per population
    for population, hz in s1["rates_steady_hz"].items():
        assert f"{hz:.2f}" in table_row(md, "1 rank × 1 thread", f"{population} (Hz)")
    # cycle statistics
    assert report.sig(s1["cycle_statistics"]["pooled"]["cv"]) in table_row(md, "1 rank × 1 thread", "lumped CV")
    # energy as the run recorded it: where it was not measured, the reason and no number
    row = table_row(md, "1 rank × 1 thread", "energy to solution (J)")
    energy = s1.get("energy") or {"available": False, "reason": "no energy record"}
    if not energy["available"]:
        assert row[6].startswith("unavailable (")
        assert f"unavailable: {energy['reason']}" in md
        assert set(row[3:6] + row[7:10]) == {"—"}
    # Table IV of the study, with its sources
    for value in ("1.1", "3.4", "5.7"):
        assert f"| {value} |" in md
    assert "Real-time cortical simulations: energy and interconnect scaling on distributed systems" in md
    assert "Compass: A scalable simulator for an architecture for cognitive computing" in md
    # theory next to measurement
    assert "delivery time per synaptic event" in md


def test_markdown_mirrors_html(scaling_report):
    md, page = scaling_report.md, scaling_report.html
    links = re.findall(r"!\[[^\]]*\]\((figures/[^)]+\.png)\)", md)
    images = IMG_DATA.findall(page)
    assert len(links) == len(images) == 4          # raster, scaling, phases, cycle times
    for link, data in zip(links, images):
        png = (scaling_report.out / link).read_bytes()
        assert png.startswith(PNG_SIGNATURE) and base64.b64decode(data) == png
    assert page.count("<table>") == md.count("\n|---|")
    assert re.findall(r"<h2>([^<]+)</h2>", page) == re.findall(r"\n## (.+)", md)


def test_html_is_self_contained(scaling_report):
    page = scaling_report.html
    assert page.count("<img ") == len(IMG_DATA.findall(page))      # every image inline
    assert "http://" not in page and "https://" not in page
    assert "<link" not in page and "@import" not in page and not re.search(r"<script[^>]*\bsrc=", page)
    assert "<style>" in page


def test_energy_measured(archives, tmp_path):
    out = read_report([archives.measured], tmp_path / "report")
    md = out.md
    row = table_row(md, "1 rank × 1 thread", "energy to solution (J)")
    sig = report.sig
    assert row[2:11] == [sig(0.0177), sig(123.4), sig(45.6), sig(77.8), sig(1.37), sig(2.81),
                         f"{sig(1.234)} / {sig(2.468)}", "fake-meter (test fixture, not a measurement) at 10 Hz", "yes"]
    assert "fake numbers written by tests/test_report.py" in md
    # next to the literature
    row = table_row(md, "Ranvier, 1 rank × 1 thread", "µJ per synaptic event")
    assert row[1] == "Fake CPU 9000" and row[3].startswith(f"{sig(1.234)} (all), {sig(2.468)} (recurrent)")
    # environment.json
    for name, value in (("host", "test-host"), ("CPU", "Fake CPU 9000"), ("cores", "2 physical, 4 logical"),
                        ("memory", "8.0 GiB"), ("MPI", "MPICH Version: 4.2.0"), ("compiler", "GNU 12.2.0"),
                        ("ranvier version", "0.1.0"), ("commit", "0123abc"), ("date", "2026-01-01T00:00:00+00:00"),
                        ("runs", "1")):
        assert table_row(md, name, "environment") == [name, value]
    parameters = md.split("\n## 2.")[0]
    assert "| command |" not in parameters and "OMP_PROC_BIND" not in parameters     # facts of a run, not a machine
    # one configuration: no scaling plot, the other three figures
    assert "no scaling to show" in md
    assert len(IMG_DATA.findall(out.html)) == 3


def test_energy_unavailable(archives, tmp_path):
    md = read_report([archives.unavailable], tmp_path / "report").md
    row = table_row(md, "1 rank × 1 thread", "energy to solution (J)")
    assert row[6] == "unavailable (1)"                     # the reason once, under the table
    assert f"(1) unavailable: {UNAVAILABLE_REASON}" in md
    assert set(row[3:6] + row[7:]) == {"—"}
    row = table_row(md, "Ranvier, 1 rank × 1 thread", "µJ per synaptic event")
    assert row[3] == f"unavailable: {UNAVAILABLE_REASON}"


def test_archive_without_energy_or_environment(archives, tmp_path):
    """Archives written before energy and environment.json existed."""
    md = read_report([archives.old], tmp_path / "report").md
    assert "no environment.json in the archives" in md
    row = table_row(md, "1 rank × 1 thread", "energy to solution (J)")
    assert row[6] == "unavailable (1)"
    assert "(1) unavailable: no energy record in summary.json" in md
    assert set(row[3:6] + row[7:]) == {"—"}


def test_repeats_are_grouped(archives, tmp_path):
    """t1 and its two copies are one configuration: min and median over three runs."""
    md = read_report([archives.t1, archives.measured, archives.unavailable], tmp_path / "report").md
    row = table_row(md, "1 rank × 1 thread", "computation %")
    assert row[2] == "3"
    # the measured repeat gives the configuration its energy
    assert table_row(md, "1 rank × 1 thread", "energy to solution (J)")[6] == report.sig(1.37)


# -- the command -----------------------------------------------------------------------------
def parse(*argv):
    parser = argparse.ArgumentParser(prog="ranvier")
    report.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["report", *map(str, argv)])


def test_command(archives, tmp_path, capsys):
    run = shutil.copytree(archives.t2, tmp_path / "t2")
    assert report.command(parse(run, "--title", "My scaling study")) == 0
    printed = capsys.readouterr().out
    assert str(run / "report" / "report.html") in printed and str(run / "report" / "report.md") in printed
    assert (run / "report" / "report.md").read_text().startswith("# My scaling study\n")
    assert report.find_runs([run]) == [run]          # the report folder is no run
    assert report.command(parse(run, "--out", tmp_path / "again", "--raster", run)) == 0
    with pytest.raises(ConfigError, match="not one of the runs"):
        report.command(parse(run, "--out", tmp_path / "x", "--raster", archives.t1))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no run archive"):
        report.command(parse(tmp_path / "empty"))


# -- the page in a browser -------------------------------------------------------------------
def chromium() -> str | None:
    for name in ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return next((p for p in ("/usr/lib/chromium/chromium-headless-shell",) if os.access(p, os.X_OK)), None)


def browse(browser: str, page: Path, profile: Path, *flags) -> subprocess.CompletedProcess:
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *flags, page.as_uri()],
                          capture_output=True, text=True, timeout=60, check=False)


def test_report_renders_in_a_browser(scaling_report, tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("no Chromium found (apt-get install chromium-headless-shell)")
    page = scaling_report.html_path
    images = len(IMG_DATA.findall(scaling_report.html))

    dom = browse(browser, page, tmp_path / "profile", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the page's inline script counts the images that decoded (complete, with a width)
    assert f'data-images-ok="{images}"' in dom.stdout, dom.stdout[:500]
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not [line for line in console if page.name in line or "Uncaught" in line], console

    shot = tmp_path / "report.png"
    done = browse(browser, page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,3000")
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]                  # floats in [0, 1]
    assert pixels.shape[:2] == (3000, 1280)
    rgb = (pixels * 255).round().astype(np.uint32)
    colours = np.unique(rgb[..., 0] << 16 | rgb[..., 1] << 8 | rgb[..., 2])
    assert colours.size > 100 and pixels.std() > 0.05, "blank screenshot"
    # the plots' first colour (matplotlib's C0, #1f77b4) is painted: the figures are on the page
    c0 = np.array([0x1f, 0x77, 0xb4]) / 255
    assert np.any(np.all(np.abs(pixels - c0) < 0.06, axis=-1))
