"""The worker process of the benchmarks: `python -m ranvier.bench worker SPEC.json`, started by
runner.run_worker (under mpiexec for several ranks). The spec's "kind" names the benchmark
module whose worker(spec) runs; a failure on any rank stops every rank (MPI_Abort).
"""
from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from ..errors import ConfigError
from . import areas, exchange, interconnect, mpi

WORKERS = {"exchange": exchange.worker, "mpi": mpi.worker, "areas": areas.worker,
           "interconnect": interconnect.worker}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "worker":
        print("usage: python -m ranvier.bench worker SPEC.json (started by 'ranvier bench')", file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[1]).read_text())
    from ..runtime.parallel import abort_world

    try:
        WORKERS[spec["kind"]](spec)
    except ConfigError as e:         # input only a built simulation could check: its message is enough
        print(f"ConfigError: {e}", file=sys.stderr, flush=True)
        abort_world(1)               # never leave the other ranks waiting in a collective
        return 1
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        abort_world(1)
        raise
    return 0
