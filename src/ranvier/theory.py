"""Models that explain the measurements (shared/models/theory.md).

Communication (section 3): the time of one exchange interval, predicted from Ranvier's own MPI
micro-benchmark (`ranvier bench mpi` writes mpi_fit.json: per primitive, latency and bandwidth
of t = latency + bytes / bandwidth, on a given number of ranks).
"""
from __future__ import annotations

import json
from pathlib import Path

from .errors import ConfigError

# The primitive calls one interval of each strategy makes: (primitive, calls, carries the records).
# The records' call is charged bytes / bandwidth with the bytes each rank sends to one other rank;
# the others their latency only. Fences of rma: three per interval.
EXCHANGE_CALLS = {
    "allgather": [("allgather", 1, False), ("allgather", 1, True)],
    "allgather-compressed": [("allgather", 1, True)],
    "alltoallv": [("alltoall", 1, False), ("alltoallv", 1, True)],
    "alltoall-fixed": [("alltoall", 1, True)],
    "p2p": [("isend_irecv", 1, True), ("allreduce", 1, False)],
    "p2p-nbx": [("isend_irecv", 1, True), ("ibarrier", 1, False)],
    "neighbor": [("neighbor_alltoallv", 1, False), ("neighbor_alltoallv", 1, True)],
    "rma": [("put_fence", 1, True), ("put_fence", 2, False)],
    "rma-pscw": [("put_fence", 1, True), ("put_fence", 2, False)],
    "hierarchical": [("isend_irecv", 1, True), ("allgather", 1, True), ("allgather", 1, False)],
}


def load_mpi_fit(path) -> dict:
    try:
        fit = json.loads(Path(path).read_text())
        fit["primitives"], fit["ranks"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"--mpi-fit: '{path}' is not an mpi_fit.json written by 'ranvier bench mpi' ({e})") from None
    return fit


def exchange_seconds(strategy: str, ranks: int, bytes_per_rank: float, fit: dict) -> float | None:
    """Predicted time of one interval's exchange: the sum over the strategy's calls of their
    latency, plus the records' bytes over the bandwidth. bytes_per_rank: data one rank sends to
    the other ranks in one interval (Result counters: bytes_sent / ranks / intervals). None when
    the fit was measured on another number of ranks (latency depends on it) or lacks a primitive."""
    if ranks < 2 or fit.get("ranks") != ranks or strategy not in EXCHANGE_CALLS:
        return None
    per_peer = bytes_per_rank / (ranks - 1)
    total = 0.0
    for primitive, calls, carries_records in EXCHANGE_CALLS[strategy]:
        p = fit["primitives"].get(primitive)
        if p is None:
            return None
        total += calls * p["latency_s"]
        bandwidth = p.get("bandwidth_bytes_per_s")
        if carries_records and bandwidth:
            total += per_peer / bandwidth
    return total
