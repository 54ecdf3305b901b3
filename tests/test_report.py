"""ranvier report: run archives in, a self-contained HTML page and a Markdown mirror out; the numbers
are those of the archives (nothing invented where energy is missing), and the plots render in a
headless browser."""
from __future__ import annotations

import argparse
import base64
import html as html_module
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ranvier.analysis import report, speedup
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
FAKE_ENVIRONMENT = {   # the layout of ranvier.runtime.environment.collect()
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
    written = report.write_report(paths, out, **kw)
    assert (written.html, written.markdown) == (out / "report.html", out / "report.md")
    return SimpleNamespace(html=written.html.read_text(), md=written.markdown.read_text(), html_path=written.html,
                           out=out, figures=written.figures)


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
        number = re.fullmatch(r"[a-z :]+: see note (\d+)", row[6]).group(1)
        assert md.count(f"Note {number}: {energy['reason']}\n") == 1
        assert set(row[3:6] + row[7:10]) == {"—"}
    # Table IV of the study, with its sources
    for value in ("1.1", "3.4", "5.7"):
        assert f"| {value} |" in md
    assert "Real-time cortical simulations: energy and interconnect scaling on distributed systems" in md
    assert "Compass: A scalable simulator for an architecture for cognitive computing" in md
    # theory next to measurement
    assert "delivery time per synaptic event" in md


def scaling_variant(src: Path, dst: Path, ranks: int, threads: int, rtf: float, cores: int) -> Path:
    """A copy of a real archive relabelled as a run of ranks x threads at real-time factor `rtf` on a
    node of `cores` cores (environment.json)."""
    variant(src, dst, environment=environment(cores_logical=cores, ranks=ranks, ranks_per_node=ranks,
                                              threads_per_rank=threads))
    s = summary(dst)
    s.update(ranks=ranks, threads=threads, real_time_factor=rtf)
    (dst / "summary.json").write_text(json.dumps(s))
    return dst


def test_strong_scaling_of_oversubscribed_runs_shows_no_efficiency(archives, tmp_path):
    """The issue's case: 1 rank x 4 threads on 2 cores (RTF 5.0) as the baseline of 2 ranks x 4
    threads (RTF 1.6) read "parallel efficiency 156.2 %"; neither is parallel work, so neither has one.
    On a node with the cores for them, the same runs have one (speedup 3.125 on twice the cores)."""
    for cores, expected in ((2, ["oversubscribed", "oversubscribed"]), (8, ["100.0", report._fixed(156.25)])):
        folder = tmp_path / f"node-{cores}"
        for ranks, rtf in ((1, 5.0), (2, 1.6)):
            scaling_variant(archives.t1, folder / f"r{ranks}", ranks, 4, rtf, cores)
        md = read_report([folder], tmp_path / f"report-{cores}").md
        section = md[md.index("## 4. Strong scaling"):md.index("## 5.")]
        assert speedup.definition("the smallest core count of the line") in section
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
                if line.startswith("| all runs")]
        assert [row[-1] for row in rows] == expected, rows
        assert [row[-2] for row in rows] == ["1.00", report.sig(5.0 / 1.6)]     # the speedup: a ratio of times


def test_markdown_mirrors_html(scaling_report):
    md, page = scaling_report.md, scaling_report.html
    links = re.findall(r"!\[[^\]]*\]\((figures/[^)]+\.png)\)", md)
    images = IMG_DATA.findall(page)
    assert len(links) == len(images) == 5          # raster, scaling, phases, cycle times, deadline lag
    assert "deadline_lag.png" in links[-1] and "cycles on time %" in md
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
                        ("memory", "8.0 GiB"), ("MPI", "MPICH Version: 4.2.0 (MPI 4.1)"), ("compiler", "GNU 12.2.0"),
                        ("ranvier version", "0.1.0"), ("commit", "0123abc"), ("date", "2026-01-01T00:00:00+00:00"),
                        ("runs", "1"), ("env OMP_PROC_BIND", "close")):
        assert table_row(md, name, "environment") == [name, value]
    parameters = md.split("\n## 2.")[0]
    assert "| command |" not in parameters and "cores_available" not in parameters    # said elsewhere, or noise
    # one configuration: no scaling plot, the other four figures (raster, phases, cycle times, deadline lag)
    assert "no scaling to show" in md
    assert len(IMG_DATA.findall(out.html)) == 4


def test_energy_unavailable(archives, tmp_path):
    md = read_report([archives.unavailable], tmp_path / "report").md
    row = table_row(md, "1 rank × 1 thread", "energy to solution (J)")
    assert row[6] == "no meter: see note 1"                # the reason once, under the table
    assert md.count(UNAVAILABLE_REASON) == 1 and f"\nNote 1: {UNAVAILABLE_REASON}\n" in md
    assert set(row[3:6] + row[7:]) == {"—"}
    row = table_row(md, "Ranvier, 1 rank × 1 thread", "µJ per synaptic event")
    assert row[3] == "no meter: see note 1"


def test_archive_without_energy_or_environment(archives, tmp_path):
    """Archives written before energy and environment.json existed."""
    md = read_report([archives.old], tmp_path / "report").md
    assert "no environment.json in the archives" in md
    row = table_row(md, "1 rank × 1 thread", "energy to solution (J)")
    assert row[6] == "not recorded: see note 1"
    assert "\nNote 1: no energy record in summary.json" in md
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
    # one configuration: raster, phases, cycle times, deadline lag (no scaling)
    assert f"(4 figures in {run / 'report' / 'figures'})" in printed
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


# -- faults a new user found -----------------------------------------------------------------
def html_text(page: str) -> str:
    """The page's text, tags dropped, one space between cells: what a reader sees."""
    page = re.sub(r"<(style|script)>.*?</\1>", "", page, flags=re.DOTALL)
    return html_module.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def html_cells(page: str) -> list[str]:
    return [html_module.unescape(c) for c in re.findall(r"<td>(.*?)</td>", page, flags=re.DOTALL)]


def environment(**changes) -> dict:
    env = json.loads(json.dumps(FAKE_ENVIRONMENT))
    env.update(changes)
    return env


def test_one_machine_when_only_mpi_or_environment_variables_differ(archives, tmp_path):
    """Same host, CPU, cores and memory: one machine; the MPI library and the OpenMP variables
    are attributes of its runs."""
    single = variant(archives.t1, tmp_path / "runs" / "single", environment=environment(
        mpi=None, omp={"OMP_PROC_BIND": "close"}))
    variant(archives.t1, tmp_path / "runs" / "mpi", environment=environment(
        omp={"OMP_PROC_BIND": "spread", "OMP_PLACES": "cores"},
        mpi={"library": "MPICH Version: 4.2.0 MPICH Release date: Fri Feb 9 2024 MPICH Device: ch4:ofi",
             "standard": "4.1", "mpi4py": "4.0.0"}))
    out = read_report([tmp_path / "runs"], tmp_path / "report")
    md = out.md
    assert "| environment | value |" in md and "machine 2" not in md
    for name, value in (("host", "test-host"), ("CPU", "Fake CPU 9000"), ("runs", "2"),
                        ("MPI", "differs between runs: see the table below"),
                        ("env OMP_PROC_BIND", "differs between runs: see the table below"),
                        ("compiler", "GNU 12.2.0")):
        assert table_row(md, name, "environment") == [name, value]
    # the differences, per run; the library's release date and device stay in environment.json
    assert table_row(md, "single", "OMP_PLACES") == ["single", "not initialised", "close", "not set"]
    assert table_row(md, "mpi", "OMP_PLACES") == ["mpi", "MPICH Version: 4.2.0 (MPI 4.1)", "spread", "cores"]
    assert "Release date" not in md
    # the HTML says the same
    text = html_text(out.html)
    assert "machine 1" not in text and "machine 2" not in text
    assert "single not initialised close not set" in text
    assert "mpi MPICH Version: 4.2.0 (MPI 4.1) spread cores" in text

    # another host is another machine: two columns, and the runs' table says which machine
    variant(single, tmp_path / "runs" / "other", environment=environment(host="other-host", mpi=None))
    md = read_report([tmp_path / "runs"], tmp_path / "report2").md
    assert table_row(md, "host", "machine 2") == ["host", "test-host", "other-host"]
    assert table_row(md, "runs", "machine 2") == ["runs", "2", "1"]
    assert table_row(md, "other", "machine")[:3] == ["other", "2", "not initialised"]
    assert table_row(md, "mpi", "machine")[:2] == ["mpi", "1"]


def test_notes_are_numbered_once_across_the_page(archives, tmp_path):
    """Two reasons energy is unavailable: note 1 and note 2, each stated once under section 7's
    table; the cells hold a few words and the note's number, section 8 refers to the same notes,
    and the literature is cited by author, not by a number that could be taken for a note."""
    rapl = ("RAPL: no RAPL counters: /sys/class/powercap does not exist (not Linux, or the intel_rapl powercap "
            "driver is not loaded); NVML: the pynvml module is not installed (pip install nvidia-ml-py)")
    off = "energy measurement switched off (--energy none)"
    variant(archives.t1, tmp_path / "runs" / "t1", energy={"available": False, "reason": rapl, "meter": None})
    variant(archives.t2, tmp_path / "runs" / "t2", energy={"available": False, "reason": off, "meter": None})
    out = read_report([tmp_path / "runs"], tmp_path / "report")
    md = out.md
    assert table_row(md, "1 rank × 1 thread", "energy to solution (J)")[6] == "no meter: see note 1"
    assert table_row(md, "1 rank × 2 threads", "energy to solution (J)")[6] == "switched off: see note 2"
    assert table_row(md, "Ranvier, 1 rank × 1 thread", "µJ per synaptic event")[3] == "no meter: see note 1"
    assert table_row(md, "Ranvier, 1 rank × 2 threads", "µJ per synaptic event")[3] == "switched off: see note 2"
    # each full reason once on the page, in its note, never in a cell
    for page, cells in ((md, [c for line in md.splitlines() if line.startswith("|") for c in line.split("|")]),
                        (out.html, html_cells(out.html))):
        text = page if page is md else html_text(page)
        assert text.count(rapl) == 1 and text.count(off) == 1
        assert f"Note 1: {rapl}" in text and f"Note 2: {off}" in text
        assert not [c for c in cells if "RAPL" in c or "switched off (" in c]
        # every reference has its note, every note number is used once
        defined = re.findall(r"Note (\d+):", text)
        assert sorted(defined) == ["1", "2"]
        assert set(re.findall(r"see note (\d+)", text)) == set(defined)
        # no other numbered marks: "(1)" or "[1]" next to "note 1" reads as a second note 1
        assert not re.findall(r"\(\d+\)|\[\d+\]", text)
    assert "[Simula et al.] F. Simula" in md and "[Preissl et al.] R. Preissl" in md


def test_phase_panels_scale_their_own_y_axis(archives, tmp_path):
    from matplotlib.figure import Figure

    ctx, sections = report.build([archives.scaling])
    assert len(ctx.configs) == 2
    fig = Figure()
    report._draw_phases(fig, ctx.configs)
    axes = fig.axes
    assert len(axes) == 2 and not axes[0].get_shared_y_axes().joined(axes[0], axes[1])
    for ax, c in zip(axes, ctx.configs):       # each panel scaled to its own tallest stack
        per_rank = c.median_run.summary["phase_seconds_per_rank"]
        tallest = max(sum(per_rank[p][rank] for p in report.PHASES) for rank in range(c.summary["ranks"]))
        assert tallest <= ax.get_ylim()[1] <= 1.1 * tallest
        assert ax.get_ylabel() == "seconds"
    phases = next(s for s in sections if s.title.startswith("5."))
    caption = next(b for b in phases.blocks if isinstance(b, report.Figure)).caption
    assert "each panel has its own y scale" in caption
    md = read_report([archives.scaling], tmp_path / "report").md
    assert "each panel has its own y scale" in md.split("\n## 5.")[1].split("\n## 6.")[0]


def test_ordinals():
    assert [report.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112, 1000)] == \
        ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th", "112th",
         "1000th"]


@pytest.mark.parametrize("stride, words", [(2, "2nd"), (3, "3rd")])
def test_raster_of_every_nth_neuron_says_so_in_english(archives, tmp_path, monkeypatch, stride, words):
    total = summary(archives.t1)["spikes_total"]
    monkeypatch.setattr(report, "RASTER_MAX_SPIKES", math.ceil(total / stride))
    assert math.ceil(total / report.RASTER_MAX_SPIKES) == stride
    out = read_report([archives.t1], tmp_path / "report")
    assert f"every {words} neuron shown" in out.md and f"every {words} neuron shown" in out.html
    assert not re.search(r"\b\d+(st|nd|rd|th)\b", out.md.replace(words, ""))
    # the raster's axis label too
    from matplotlib.figure import Figure

    spikes = report.read_spikes(archives.t1 / "spikes.h5")
    fig = Figure()
    s = summary(archives.t1)
    report._draw_raster(fig, spikes, report._population_sizes(spikes, s), s, stride)
    assert fig.axes[0].get_ylabel() == f"neuron (every {words})"


def test_rate_window_of_short_runs(archives, tmp_path):
    """A run no longer than the 1 s transient: the whole run is the window, and the report says so;
    a summary with an empty or missing window falls back to the whole run's rates."""
    s = summary(archives.t1)
    assert s["duration_ms"] < 1000
    md = read_report([archives.t1], tmp_path / "whole").md
    row = table_row(md, "1 rank × 1 thread", "window (s)")
    assert row[1] == f"0–{s['duration_ms'] / 1000:g} (whole run, onset included)"
    assert "whole run, onset transient included, for shorter ones" in md

    # a 1 s transient cut from a 200 ms run: the window [1000, 200) is empty
    empty = variant(archives.t1, tmp_path / "runs" / "empty")
    broken = {**s, "rates_window_ms": [1000.0, s["duration_ms"]], "rates_steady_hz": {}}
    (empty / "summary.json").write_text(json.dumps(broken))
    missing = variant(archives.t1, tmp_path / "runs" / "missing")
    (missing / "summary.json").write_text(json.dumps({k: v for k, v in s.items() if not k.startswith("rates_")
                                                      or k == "rates_hz"}))
    for run in (empty, missing):
        out = read_report([run], tmp_path / f"report-{run.name}")
        row = table_row(out.md, "1 rank × 1 thread", "window (s)")
        assert row[1] == f"0–{s['duration_ms'] / 1000:g} (whole run, onset included)"
        assert row[2:2 + len(s["rates_hz"])] == [f"{hz:.2f}" for hz in s["rates_hz"].values()]
        assert f"0–{s['duration_ms'] / 1000:g} (whole run, onset included)" in out.html

    # a window after a transient says how long the transient was
    late = variant(archives.t1, tmp_path / "runs" / "late")
    (late / "summary.json").write_text(json.dumps({**s, "rates_window_ms": [100.0, s["duration_ms"]]}))
    row = table_row(read_report([late], tmp_path / "report-late").md, "1 rank × 1 thread", "window (s)")
    assert row[1] == f"0.1–{s['duration_ms'] / 1000:g} (after a 0.1 s transient)"


def test_figures_line_only_when_figures_were_written(archives, tmp_path, monkeypatch, capsys):
    run = shutil.copytree(archives.t1, tmp_path / "t1")
    assert report.command(parse(run)) == 0
    assert "4 figures in" in capsys.readouterr().out and (run / "report" / "figures").is_dir()
    # without matplotlib: the page says why there are no plots, the command mentions no figures,
    # and the figures of the earlier report are gone with their folder
    monkeypatch.setattr(report, "_matplotlib_figure", lambda: None)
    assert report.command(parse(run)) == 0
    printed = capsys.readouterr().out
    assert printed.rstrip().endswith("report.md") and "figures in" not in printed
    assert not (run / "report" / "figures").exists()
    md = (run / "report" / "report.md").read_text()
    assert "not drawn, matplotlib is not installed" in md and "](figures/" not in md
    monkeypatch.undo()

    # with matplotlib but nothing to draw: no spikes.h5, no timers.h5, no phases per rank, no deadlines
    bare = shutil.copytree(archives.t1, tmp_path / "bare")
    (bare / "spikes.h5").unlink()
    (bare / "timers.h5").unlink()
    s = summary(bare)
    del s["phase_seconds_per_rank"]
    del s["deadlines"]
    (bare / "summary.json").write_text(json.dumps(s))
    assert report.command(parse(bare)) == 0
    printed = capsys.readouterr().out
    assert printed.rstrip().endswith("report.md") and "figures in" not in printed
    assert not (bare / "report" / "figures").exists()
    written = report.write_report([bare], tmp_path / "bare-report")
    assert written.figures == [] and "<img" not in written.html.read_text()
    assert "No phase_seconds_per_rank in the summaries" in written.markdown.read_text()


def _distribution(mean, low, high, counts):
    return {"projection": "", "synapses": int(sum(counts)), "mean": mean, "sd": 0.01, "min": low, "max": high,
            "histogram": counts, "histogram_range": [low, high]}


def test_plastic_weights_drawn(archives, tmp_path):
    """A plastic run: a table and a figure of each projection's initial and final weights, with
    the weight recorder's traces below when weights.h5 holds them; drawn without spikes.h5 too,
    without an unreadable weights.h5, and gone from the figures of a later static report."""
    import h5py
    from matplotlib.figure import Figure

    s = summary(archives.t1)
    plasticity = {
        "E_to_E": {"initial": _distribution(0.25, 0.0, 0.6, [0] * 15 + [700, 600] + [0] * 23),
                   "final": _distribution(0.31, 0.0, 0.6, [0] * 10 + [100] * 13 + [0] * 17),
                   "synapse": "STDP(lambda_=0.05)"},
        "B_to_P": {"initial": _distribution(30.0, 0.0, 300.0, [0, 0, 0, 0, 500] + [0] * 35),
                   "final": _distribution(28.5, 0.0, 300.0, [0, 0, 0, 250, 250] + [0] * 35),
                   "synapse": "STDPPowerLaw(lambda_=0.05)"}}
    plastic = variant(archives.t1, tmp_path / "runs" / "plastic")
    (plastic / "summary.json").write_text(json.dumps({**s, "plasticity": plasticity}))
    with h5py.File(plastic / "weights.h5", "w") as f:
        g = f.create_group("weight_trace/E_to_E")
        g["times_ms"] = np.arange(0.0, 201.0, 50.0)
        g["weights"] = np.linspace(0.2, 0.4, 15).reshape(3, 5)
    out = read_report([plastic], tmp_path / "report")
    row = table_row(out.md, "E -> E", "plastic projection")
    sig = report.sig
    assert row[1:4] == ["1,300", f"{sig(0.25, 4)} / {sig(0.31, 4)}", f"{sig(0.01, 3)} / {sig(0.01, 3)}"]
    assert row[4] == "STDP(lambda_=0.05)"
    assert table_row(out.md, "B -> P", "plastic projection")[2] == f"{sig(30.0, 4)} / {sig(28.5, 4)}"
    assert tmp_path / "report" / "figures" / "weights.png" in out.figures
    assert "the weight recorder's synapses over time" in out.md
    fig = Figure()
    report._draw_weights(fig, plasticity, report.read_weight_traces(plastic / "weights.h5"))
    assert len(fig.axes) == 4                                  # histograms above, traces below
    assert len(fig.axes[0].patches) == 2 and len(fig.axes[2].lines) == 3
    assert fig.axes[1].get_xlim()[1] >= 300.0                  # each projection over its own range
    # no spikes.h5 (no raster), a weights.h5 that is not HDF5 (no traces): the distributions stay
    (plastic / "spikes.h5").unlink()
    (plastic / "weights.h5").write_bytes(b"not hdf5")
    out = read_report([plastic], tmp_path / "report")
    assert "No raster" in out.md and [p.name for p in out.figures].count("weights.png") == 1
    assert "the weight recorder's synapses over time" not in out.md
    # a static run reported into the same folder leaves no weights figure behind
    out = read_report([archives.t1], tmp_path / "report")
    assert "plastic projection" not in out.md and not (tmp_path / "report" / "figures" / "weights.png").exists()
