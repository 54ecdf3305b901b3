"""`ranvier bench interconnect`: the fit of latency and bandwidth, the model next to the
measurement, the table, the refusals, and a short run over the transports this machine allows."""
from __future__ import annotations

import json
import math

import pytest

from conftest import ROOT, PNG_MAGIC, assert_bad_input, needs_mpiexec, ranvier_cli, read_csv
from ranvier.analysis import theory
from ranvier.bench import interconnect, netns
from ranvier.errors import ConfigError

SMALL = {"neurons": 512, "synapses_per_neuron": 50}


def rows_of(latency_s: float, bandwidth: float, primitive: str, sizes=(1, 64, 512, 4096)) -> list[dict]:
    return [{"primitive": primitive, "words": w, "bytes": 8 * w, "median_s": latency_s + 8 * w / bandwidth,
             "min_s": latency_s} for w in sizes]


def test_the_fit_recovers_latency_and_bandwidth():
    rows = rows_of(30e-6, 12.5e6, "isend_irecv") + rows_of(20e-6, 1e9, "allgather")
    rows += [{"primitive": "ibarrier", "words": w, "bytes": 8 * w, "median_s": 15e-6, "min_s": 15e-6}
             for w in (1, 64, 512, 4096)]
    fit = interconnect.fit_rows(rows, 2)
    assert fit["ranks"] == 2
    assert fit["primitives"]["isend_irecv"]["latency_s"] == pytest.approx(30e-6)
    assert fit["primitives"]["isend_irecv"]["bandwidth_bytes_per_s"] == pytest.approx(12.5e6)
    assert fit["primitives"]["ibarrier"]["bandwidth_bytes_per_s"] is None       # sends nothing: latency only
    assert fit["primitives"]["ibarrier"]["latency_s"] == pytest.approx(15e-6)
    # communicate: allgather (counts) + allgather (records, bytes to one other rank); synchronize:
    # the barrier's latency plus the predicted wait
    model = interconnect.predict(fit, "allgather", 2, bytes_per_cycle=2 * 8000.0, wait_s_per_cycle=5e-6)
    assert model["communicate_s"] == pytest.approx(2 * 20e-6 + 8000.0 / 1e9)
    assert model["communicate_s"] == pytest.approx(theory.exchange_seconds("allgather", 2, 8000.0, fit))
    assert model["synchronize_s"] == pytest.approx(15e-6 + 5e-6)
    assert interconnect.predict(fit, "allgather", 2, 0.0, None)["synchronize_s"] is None


def test_the_relative_fit_keeps_the_latency_of_small_messages():
    """Measured on the rate-limited link (isend_irecv, µs at 8 B .. 32 KiB): plain least squares puts
    the intercept below zero; on the relative error the latency stays near the small messages' time."""
    from ranvier.bench.mpi import fit_latency_bandwidth

    sizes, times = [8, 512, 4096, 32768], [20.4e-6, 164.9e-6, 330.7e-6, 3808.0e-6]
    assert fit_latency_bandwidth(sizes, times)[0] < 0
    latency, bandwidth = interconnect.fit_relative(sizes, times)
    assert 15e-6 < latency < 25e-6 and 5e6 < bandwidth < 20e6
    assert interconnect.fit_relative(sizes, [5e-6] * 4) == (pytest.approx(5e-6), None)


def test_the_path_is_read_from_the_transport_record_and_ucx():
    stderr = ("[1795810665.078074] [ranvier-host0:6754 :0]     ucp_worker.c:1912 UCX  INFO    ucp_context_0 "
              "inter-node cfg#1 tag(tcp/rv1x0v0)  rma_am(tcp/rv1x0v0)  am(tcp/rv1x0v0)\n"
              "[1795810665.088769] [ranvier-host1:6758 :0]     ucp_worker.c:1912 UCX  INFO    ucp_context_0 "
              "inter-node cfg#1 tag(tcp/rv1x0v1)\n")
    lanes = interconnect.ucx_lanes(stderr)
    assert lanes == {"ranvier-host0": ["inter-node tcp/rv1x0v0"], "ranvier-host1": ["inter-node tcp/rv1x0v1"]}
    two_hosts = {"nodes": 2, "hosts": ["a", "b"], "within_node": None,
                 "between_nodes": "MPICH ch4 netmod ucx, tcp (no RDMA device in /sys/class/infiniband)"}
    assert interconnect.path_of(two_hosts, lanes) == "ucx tcp"
    assert interconnect.path_of(two_hosts, {}) == two_hosts["between_nodes"]
    one_host = {"nodes": 1, "hosts": ["a"], "within_node": "shared memory (MPI's intra-node path)",
                "between_nodes": None}
    assert interconnect.path_of(one_host, {}) == "shared memory"


def test_the_table_gives_the_median_of_the_runs():
    rows = [{key: None for key in interconnect.COLUMNS} for _ in range(3)]
    for k, (row, communicate) in enumerate(zip(rows, (100.0, 300.0, 200.0))):
        row.update(transport="tcp", run=k + 1, link="veth", ranks=2, hosts=2, path="ucx tcp",
                   communicate_us_per_cycle=communicate, latency_us=20.0 + k)
    line, = interconnect.summarize(rows)
    assert line["communicate_us_per_cycle"] == 200.0 and line["latency_us"] == 21.0 and line["runs"] == 3
    assert line["path"] == "ucx tcp" and line["hosts"] == 2 and line["synchronize_us_per_cycle"] is None


def test_the_table_has_a_line_per_transport():
    row = {"transport": "tcp", "hosts": 2, "path": "ucx tcp/x", "latency_us": 31.25, "bandwidth_MB_per_s": 11.9,
           "barrier_latency_us": 40.0, "bytes_per_cycle": 1234.0, "communicate_us_per_cycle": 80.0,
           "communicate_median_us_per_cycle": 60.0, "communicate_model_us_per_cycle": 75.5,
           "synchronize_us_per_cycle": 50.0, "synchronize_median_us_per_cycle": 20.0,
           "synchronize_model_us_per_cycle": None, "real_time_factor": 3.5}
    lines = interconnect.format_table([row, {**row, "transport": "shm", "bandwidth_MB_per_s": None}]).splitlines()
    assert lines[0].split()[:2] == ["transport", "hosts"]
    assert lines[1].split() == ["tcp", "2", "ucx", "tcp/x", "31.2", "11.9", "40.0", "1234", "80.0", "60.0", "75.5",
                                "50.0", "20.0", "-", "3.50"]
    assert lines[2].split()[5] == "-"


def test_the_tcp_transports_are_refused_or_left_out_with_the_reason():
    def no_root(rate=False):
        return "creating network namespaces needs root (running as uid 1000)"
    with pytest.raises(ConfigError, match=r"--transports tcp,tcp-limited: ranks on emulated hosts cannot run here: "
                                          r"creating network namespaces needs root \(running as uid 1000\)"):
        interconnect.plan("dpsnn", ["shm", "tcp", "tcp-limited"], 2, 50.0, (1, 64), SMALL, reason=no_root)
    p = interconnect.plan("dpsnn", None, 2, 50.0, (1, 64), SMALL, reason=no_root)
    assert p["transports"] == ["shm"]
    assert p["left_out"] == ["tcp, tcp-limited left out: creating network namespaces needs root (running as uid 1000)"]
    assert p["primitives"] == ["isend_irecv", "ibarrier", "allgather"]
    asked = []
    p = interconnect.plan("dpsnn", ["tcp-limited"], 2, 50.0, (1, 64), SMALL,
                          reason=lambda rate=False: asked.append(rate))
    assert p["transports"] == ["tcp-limited"] and asked == [True]       # tc is checked too


@pytest.mark.parametrize("argv, word", [
    (["--transports", "infiniband"], "unknown transport 'infiniband'"),
    (["--ranks", "1"], "--ranks 1: an interconnect needs at least 2 ranks"),
    (["--sizes", "8"], "--sizes needs at least two different sizes"),
    (["--rate", "fast"], "--rate 'fast': not a tc rate"),
])
def test_bad_input_is_refused_in_one_line(argv, word, tmp_path, capsys):
    out = tmp_path / "out"
    assert_bad_input(["bench", "interconnect", "dpsnn", *argv, "--out", str(out)], word, out, capsys)


@needs_mpiexec
def test_a_short_run_over_the_transports_this_machine_allows(tmp_path):
    """shm always; tcp too where namespaces can be made (else it is left out, with the reason)."""
    out = tmp_path / "ic"
    reason = netns.unavailable_reason()
    done = ranvier_cli("bench", "interconnect", ROOT / "examples/dpsnn-small.toml", "--duration-ms", "100", "--sizes",
                       "1,512", "--repeats", "5", "--runs", "1", "--transports", "shm" if reason else "shm,tcp",
                       "--out", out,
                       timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = read_csv(out / "interconnect.csv")
    assert [r["transport"] for r in rows] == (["shm"] if reason else ["shm", "tcp"])
    assert rows[0]["hosts"] == "1" and rows[0]["path"] == "shared memory"
    for r in rows:
        for key in ("latency_us", "communicate_us_per_cycle", "communicate_model_us_per_cycle",
                    "communicate_median_us_per_cycle", "synchronize_us_per_cycle", "synchronize_model_us_per_cycle"):
            assert math.isfinite(float(r[key])), (key, r)
        assert float(r["bytes_per_cycle"]) > 0 and int(r["cycles"]) == 100
    if not reason:
        assert rows[1]["hosts"] == "2" and rows[1]["path"].split()[0] in ("ucx", "ofi") and "tcp" in rows[1]["path"]
    saved = json.loads((out / "interconnect.json").read_text())
    assert saved["exchange"] == "allgather" and len(saved["rows"]) == len(rows)
    assert "communicate µs" in done.stdout and rows[0]["transport"] in done.stdout
    png = out / "interconnect.png"
    assert not png.exists() or png.read_bytes()[:8] == PNG_MAGIC
