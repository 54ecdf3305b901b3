"""Ranks on separate hosts (issue 20, item 3): two emulated hosts on this machine (network,
UTS, IPC and mount namespaces joined by a veth pair, ranvier.bench.netns), so that MPICH can
share no memory between the ranks and carries every message over TCP. The same run on one
process and on two hosts writes the same spikes; the environment record names the transport.
Skipped, with the reason, where namespaces cannot be made (not root, no iproute2, refused)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import ROOT, mpiexec_path, restore_cpus, subprocess_env
from ranvier.analysis import report
from ranvier.bench import netns

REASON = netns.unavailable_reason() if sys.platform.startswith("linux") else "network namespaces need Linux"
needs_hosts = pytest.mark.skipif(REASON is not None or mpiexec_path() is None,
                                 reason=f"emulated hosts unavailable: {REASON or 'no mpiexec'}")
RUN = ["run", str(ROOT / "examples/dpsnn-small.toml"), "--duration-ms", "200",
       "--energy", "none", "--quiet"]


def spikes(path):
    """population -> (node ids, times), in the file's (canonical) order."""
    with h5py.File(path, "r") as f:
        return {pop: (np.asarray(g["node_ids"]), np.asarray(g["timestamps"])) for pop, g in f["spikes"].items()}


def _namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


@needs_hosts
def test_two_hosts_write_the_spikes_of_one_process(tmp_path):
    one = subprocess.run([sys.executable, "-m", "ranvier", *RUN, "--out", tmp_path / "one"], env=subprocess_env(),
                         capture_output=True, text=True, timeout=120, preexec_fn=restore_cpus)
    assert one.returncode == 0, one.stderr
    before = set(_namespaces().split())
    # bench/netns_hosts.py: the script docs/interconnect.md gives to users
    two = subprocess.run([sys.executable, str(ROOT / "bench/netns_hosts.py"), "-n", "2", "--", sys.executable, "-m",
                          "ranvier", *RUN, "--out", str(tmp_path / "two")], env=subprocess_env(), capture_output=True,
                         text=True, timeout=180, preexec_fn=restore_cpus)
    assert two.returncode == 0, two.stderr[-3000:]
    assert "netns_hosts: 2 emulated hosts (ranvier-host0, ranvier-host1" in two.stderr
    assert set(_namespaces().split()) <= before                       # removed again
    a, b = spikes(tmp_path / "one/spikes.h5"), spikes(tmp_path / "two/spikes.h5")
    assert a.keys() == b.keys()
    for pop in a:
        assert np.array_equal(a[pop][0], b[pop][0]) and np.array_equal(a[pop][1], b[pop][1]), pop
    assert sum(ids.size for ids, _ in a.values()) > 1000
    env = json.loads((tmp_path / "two/environment.json").read_text())
    transport = env["transport"]
    assert transport["ranks"] == 2 and transport["nodes"] == 2 and env["nodes"] == 2
    assert sorted(transport["hosts"]) == ["ranvier-host0", "ranvier-host1"]
    assert transport["within_node"] is None                # one rank per host: nothing shared
    assert transport["between_nodes"].startswith("MPICH ch4 netmod ")
    assert report._transport(report._flatten(env)).startswith(
        "2 node(s) (ranvier-host0, ranvier-host1): MPICH ch4 netmod ")               # `ranvier report`'s row
    single = json.loads((tmp_path / "one/environment.json").read_text())["transport"]
    assert single["nodes"] == 1 and single["between_nodes"] is None


@needs_hosts
def test_the_hosts_share_no_memory_and_are_removed_after_a_failure():
    """Each host has its own hostname and /dev/shm; a failing command leaves no namespace behind."""
    probe = ("import os, socket; open('/dev/shm/ranvier-probe', 'w').close(); "
             "print(socket.gethostname(), sorted(os.listdir('/dev/shm')))")
    with pytest.raises(RuntimeError):
        with netns.EmulatedHosts(rate="10mbit") as hosts:
            names = list(hosts.namespaces)
            seen = [subprocess.run([str(hosts.launcher), address, f"{sys.executable} -c \"{probe}\""],
                                   capture_output=True, text=True, timeout=30).stdout.strip()
                    for address in hosts.addresses]
            qdisc = subprocess.run(["ip", "netns", "exec", hosts.namespaces[1], "tc", "qdisc", "show", "dev",
                                    hosts.devices[1]],
                                   capture_output=True, text=True).stdout
            raise RuntimeError("a failure inside")
    assert seen == ["ranvier-host0 ['ranvier-probe']", "ranvier-host1 ['ranvier-probe']"]
    assert not Path("/dev/shm/ranvier-probe").exists()               # not this machine's /dev/shm either
    assert "tbf" in qdisc and "10Mbit" in qdisc
    assert not any(name in _namespaces() for name in names)


def test_unavailable_reasons_name_the_cause(monkeypatch):
    """Checked everywhere: the one-line reasons the namespace test and the benchmark give."""
    monkeypatch.setattr(netns.sys, "platform", "darwin")
    assert netns.unavailable_reason() == "network namespaces need Linux (this is darwin)"
    monkeypatch.setattr(netns.sys, "platform", "linux")
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    assert netns.unavailable_reason() == "creating network namespaces needs root (running as uid 1000)"
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    monkeypatch.setattr(netns, "_tool", lambda name: None if name in ("ip", "tc") else f"/usr/bin/{name}")
    assert netns.unavailable_reason(rate=True) == ("ip, tc not found: install iproute2 and util-linux "
                                                   "(Debian: apt-get install -y iproute2 util-linux)")
    monkeypatch.setattr(netns, "_tool", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(netns, "_run", lambda argv: subprocess.CompletedProcess(
        argv, 1, "", "mount --make-shared /run/netns failed: Operation not permitted\n"))
    reason = netns.unavailable_reason()
    assert reason.startswith("emulated hosts: creating a network namespace failed ('ip netns add ")
    assert reason.endswith(": mount --make-shared /run/netns failed: Operation not permitted)")


def test_ranks_spread_evenly_over_the_hosts():
    hosts = netns.EmulatedHosts()
    assert hosts.ranks_per_host(2) == [1, 1] and hosts.ranks_per_host(3) == [2, 1]
    with pytest.raises(netns.ConfigError, match="at least 2 ranks"):
        hosts.ranks_per_host(1)
    assert len(max(hosts.devices, key=len)) <= 15           # Linux interface names
