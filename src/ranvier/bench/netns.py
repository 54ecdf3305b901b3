"""Ranks on separate hosts, emulated on one Linux machine: each host is its own network
namespace (the two joined by a veth pair, 10.201.0.1 and 10.201.0.2), its own UTS namespace
(another hostname), its own IPC namespace and its own mount namespace with a private
/dev/shm. MPICH's ranks on different hosts can share no memory, so they talk through the
network module (UCX, or OFI, over TCP on the veth pair). An optional `tc tbf` qdisc on both
ends of the pair limits the link's rate.

    with EmulatedHosts(rate="100mbit") as hosts:
        subprocess.run(hosts.mpiexec(2, [sys.executable, "-m", "ranvier", "run", ...]))

mpiexec (hydra) runs on host 0; it starts the proxy of host 1 through its ssh launcher with
`-launcher-exec` pointing at a small shell script (written into a temporary folder) that
enters host 1's namespaces instead of calling ssh. Everything is removed again on exit
(namespaces, and with them the veth pair and its qdiscs), also after a failure.

Needs root, iproute2 (`ip`, and `tc` for a rate limit) and util-linux (`unshare`, `mount`):
`unavailable_reason()` says which is missing, in one line. Used by `ranvier bench
interconnect` and bench/netns_hosts.py (docs/interconnect.md).
"""
from __future__ import annotations

import itertools
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import ConfigError

SUBNET = "10.201.0"                  # host h gets SUBNET.(h+1)/24; each pair is a network of its own
SHM_SIZE = "512m"                    # each host's private /dev/shm (tmpfs)
TBF_BURST, TBF_LATENCY = "32kbit", "50ms"
_counter = itertools.count()

# Enters a host's UTS, IPC and mount namespaces (inside its network namespace): a hostname of its
# own, a fresh tmpfs on /dev/shm, then the command, as ssh would run it (one string, through sh).
_ENTER = ("import os, socket, subprocess, sys\n"
          "socket.sethostname(sys.argv[1])\n"
          "subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=%s', 'tmpfs', '/dev/shm'], check=True)\n"
          "os.execvp('sh', ['sh', '-c', sys.argv[2]])\n" % SHM_SIZE)


def _tool(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}") if os.access(p, os.X_OK)),
                                      None)


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)


def _first_line(done: subprocess.CompletedProcess) -> str:
    text = (done.stderr or done.stdout or "").strip()
    return text.splitlines()[-1] if text else f"exit status {done.returncode}"


def unavailable_reason(rate: bool = False) -> str | None:
    """None where emulated hosts can be made here; else why not, in one line (no root, no `ip`,
    namespaces refused, ...). rate: a rate limit is wanted too (needs `tc` and its tbf qdisc)."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces need Linux (this is {sys.platform})"
    if os.geteuid() != 0:
        return f"creating network namespaces needs root (running as uid {os.geteuid()})"
    missing = [name for name, package in (("ip", "iproute2"), ("unshare", "util-linux"), ("mount", "util-linux"))
               if _tool(name) is None]
    if rate and _tool("tc") is None:
        missing.append("tc")
    if missing:
        return (f"{', '.join(missing)} not found: install iproute2 and util-linux "
                f"(Debian: apt-get install -y iproute2 util-linux)")
    try:
        with EmulatedHosts(rate="1mbit" if rate else None):
            pass
    except ConfigError as e:
        return str(e)
    return None


class EmulatedHosts:
    """Two emulated hosts on one machine (see the module's docstring); a context manager."""

    def __init__(self, rate: str | None = None, hosts: int = 2):
        if hosts != 2:
            raise ConfigError(f"emulated hosts: only 2 are supported (one veth pair), not {hosts}")
        self.rate = rate
        tag = f"rv{os.getpid() % 100000}x{next(_counter)}"
        self.namespaces = [f"{tag}h{h}" for h in range(hosts)]
        self.devices = [f"{tag}v{h}" for h in range(hosts)]          # at most 15 characters
        self.addresses = [f"{SUBNET}.{h + 1}" for h in range(hosts)]
        self.hostnames = [f"ranvier-host{h}" for h in range(hosts)]
        self._made: list[str] = []
        self._folder: tempfile.TemporaryDirectory | None = None
        self.launcher: Path | None = None

    # -- making and removing -----------------------------------------------------------------
    def __enter__(self) -> EmulatedHosts:
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _ip(self, *args: str, what: str) -> None:
        done = _run([_tool("ip") or "ip", *args])
        if done.returncode != 0:
            raise ConfigError(f"emulated hosts: {what} failed ('ip {' '.join(args)}': {_first_line(done)})")

    def _make(self) -> None:
        ip, unshare = _tool("ip"), _tool("unshare")
        if ip is None or unshare is None:
            raise ConfigError("emulated hosts need 'ip' (iproute2) and 'unshare' (util-linux); install them "
                              "(Debian: apt-get install -y iproute2 util-linux)")
        for ns in self.namespaces:
            self._ip("netns", "add", ns, what="creating a network namespace")
            self._made.append(ns)
        a, b = self.devices
        self._ip("link", "add", a, "type", "veth", "peer", "name", b, what="creating a veth pair")
        for ns, dev, address in zip(self.namespaces, self.devices, self.addresses):
            self._ip("link", "set", dev, "netns", ns, what="moving a veth end into its namespace")
            self._ip("-n", ns, "addr", "add", f"{address}/24", "dev", dev, what="addressing a veth end")
            self._ip("-n", ns, "link", "set", dev, "up", what="bringing a veth end up")
            self._ip("-n", ns, "link", "set", "lo", "up", what="bringing loopback up")
            if self.rate is not None:
                tc = _tool("tc")
                if tc is None:
                    raise ConfigError("a rate-limited link needs 'tc' (iproute2); install it "
                                      "(Debian: apt-get install -y iproute2)")
                argv = [ip, "netns", "exec", ns, tc, "qdisc", "add", "dev", dev, "root", "tbf", "rate", self.rate,
                        "burst", TBF_BURST, "latency", TBF_LATENCY]
                done = _run(argv)
                if done.returncode != 0:
                    raise ConfigError(f"emulated hosts: the rate limit failed ('tc qdisc add ... tbf rate "
                                      f"{self.rate}': {_first_line(done)})")
        self._folder = tempfile.TemporaryDirectory(prefix="ranvier-hosts-")
        self.launcher = Path(self._folder.name) / "enter-host"
        cases = "\n".join(f"  {address}|{hostname}) ns={ns}; name={hostname};;"
                          for address, hostname, ns in zip(self.addresses, self.hostnames, self.namespaces))
        self.launcher.write_text(
            "#!/bin/sh\n"
            "# hydra's ssh launcher calls this as: enter-host [ssh options] HOST COMMAND...\n"
            "while [ $# -gt 0 ]; do case \"$1\" in -*) shift;; *) break;; esac; done\n"
            "host=$1; shift\n"
            f"case \"$host\" in\n{cases}\n"
            "  *) echo \"enter-host: unknown host '$host'\" >&2; exit 255;;\n"
            "esac\n"
            f"exec {shlex.quote(ip)} netns exec \"$ns\" {shlex.quote(unshare)} --uts --ipc --mount "
            f"--propagation private {shlex.quote(sys.executable)} -c {shlex.quote(_ENTER)} \"$name\" \"$*\"\n")
        self.launcher.chmod(0o755)
        # a host must come up whole: its namespaces entered, its hostname set, /dev/shm mounted
        done = _run([str(self.launcher), self.addresses[1], "hostname"])
        if done.returncode != 0 or done.stdout.strip() != self.hostnames[1]:
            raise ConfigError(f"emulated hosts: entering a host's namespaces failed (unshare --uts --ipc "
                              f"--mount: {_first_line(done)})")

    def close(self) -> None:
        """Removes the namespaces (their veth ends and qdiscs go with them) and the launcher."""
        ip = _tool("ip") or "ip"
        while self._made:
            _run([ip, "netns", "delete", self._made.pop()])
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    # -- launching ---------------------------------------------------------------------------
    def ranks_per_host(self, ranks: int) -> list[int]:
        """Ranks on each host: as even as they go, host 0 first."""
        if ranks < len(self.namespaces):
            raise ConfigError(f"{len(self.namespaces)} emulated hosts need at least {len(self.namespaces)} ranks, "
                              f"not {ranks}")
        base, extra = divmod(ranks, len(self.namespaces))
        return [base + (h < extra) for h in range(len(self.namespaces))]

    def mpiexec(self, ranks: int, argv: list[str], mpiexec: str | None = None) -> list[str]:
        """The command that runs argv on `ranks` ranks spread over the hosts: mpiexec in host 0,
        its proxy for host 1 started through the launcher."""
        from .runner import mpiexec_path

        if self.launcher is None:
            raise RuntimeError("EmulatedHosts.mpiexec outside 'with EmulatedHosts(...)'")
        mpiexec = mpiexec or mpiexec_path()
        if mpiexec is None:
            raise ConfigError("ranks on emulated hosts need mpiexec, which was not found; install it with: "
                              "pip install mpich mpi4py")
        hosts = ",".join(f"{address}:{n}" for address, n in zip(self.addresses, self.ranks_per_host(ranks)))
        inner = [mpiexec, "-launcher", "ssh", "-launcher-exec", str(self.launcher), "-localhost", self.addresses[0],
                 "-hosts", hosts, "-n", str(ranks), *argv]
        return [str(self.launcher), self.addresses[0], shlex.join(inner)]

    def describe(self) -> str:
        link = f"veth, tc tbf rate {self.rate} burst {TBF_BURST} latency {TBF_LATENCY}" if self.rate else "veth"
        return (f"{len(self.namespaces)} emulated hosts ({', '.join(self.hostnames)}: network, UTS, IPC and mount "
                f"namespaces, a private /dev/shm each) joined by {link}, {' <-> '.join(self.addresses)}")


def main(argv: list[str]) -> int:
    """python -m ranvier.bench.netns [--rate RATE] [-n RANKS] -- COMMAND...: runs COMMAND under
    mpiexec on RANKS ranks over two emulated hosts (bench/netns_hosts.py is the same)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="netns_hosts", description="Run a command on MPI ranks spread over two emulated hosts (network, UTS, "
                                        "IPC and mount namespaces joined by a veth pair). Needs root.")
    parser.add_argument("-n", "--ranks", type=int, default=2, help="ranks, spread evenly over the 2 hosts (default 2)")
    parser.add_argument("--rate", help="limit the link with tc tbf, for example 100mbit (default: no limit)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS... (a Python program: "
                                                                  "python -m ranvier run ...)")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("netns_hosts: error: no command given; usage: netns_hosts.py [--rate R] [-n N] -- COMMAND...",
              file=sys.stderr)
        return 2
    reason = unavailable_reason(rate=args.rate is not None)
    if reason is not None:
        print(f"netns_hosts: error: {reason}", file=sys.stderr)
        return 2
    try:
        with EmulatedHosts(rate=args.rate) as hosts:
            print(f"netns_hosts: {hosts.describe()}", file=sys.stderr, flush=True)
            env = dict(os.environ)
            env.pop("OMP_PROC_BIND", None)        # no pinning inherited: each host's ranks share its cores
            env.pop("OMP_PLACES", None)
            return subprocess.run(hosts.mpiexec(args.ranks, command), env=env, check=False).returncode
    except ConfigError as e:
        print(f"netns_hosts: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
