"""Run a command on MPI ranks spread over two emulated hosts on this machine: two network
namespaces joined by a veth pair, each with its own hostname (UTS namespace), IPC namespace
and private /dev/shm (mount namespace), so MPICH cannot use shared memory between them and
carries every message over TCP. Needs root and iproute2 (docs/interconnect.md).

    python bench/netns_hosts.py -n 2 -- python -m ranvier run examples/dpsnn-small.toml --out results/two-hosts
    python bench/netns_hosts.py --rate 100mbit -n 2 -- python -m ranvier run ...

The namespaces, the veth pair and its qdiscs are removed when the command ends, also after a
failure. The machinery is ranvier.bench.netns (`ranvier bench interconnect` uses it too).
"""
from __future__ import annotations

import sys

from ranvier.bench.netns import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
