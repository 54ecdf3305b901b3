"""`ranvier info`: version, build features, MPI, cores."""
from __future__ import annotations

import os
import platform
import sys


def add_parser(commands, exchanges=None) -> None:
    commands.add_parser("info", allow_abbrev=False, help="version, build features, MPI, cores")


def loaded_libmpi() -> str | None:
    """The libmpi file this process has mapped (Linux; None elsewhere or when none is loaded)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(maxsplit=5)[-1].strip() for line in maps if "libmpi" in line}
    except OSError:
        return None
    paths = sorted(p for p in paths if os.path.basename(p).startswith("libmpi") and ".so" in p)
    return os.path.realpath(paths[0]) if paths else None


def command(args=None) -> int:
    from .. import _engine
    from ..core.options import engine_settings
    from ..version import ranvier_version
    from ..runtime.parallel import mpi_library_version
    from ..core.simulation import EXCHANGES, PLACEMENTS

    _engine.use_simd(engine_settings().simd)      # RANVIER_SIMD, as a run would read it
    info = _engine.build_info()
    yes = {True: "yes", False: "no"}
    tidy = lambda text: " ".join(str(text).split())      # MPI version strings pad with spaces
    print(f"ranvier {ranvier_version()}")
    print(f"engine              {info.get('version', '?')}, built with {info.get('compiler', '?')}")
    mpi = yes[bool(info.get("mpi"))] + (f" ({tidy(info['mpi_library'])})" if info.get("mpi_library") else "")
    print(f"MPI backend         {mpi}")
    if info.get("mpi"):
        persistent = "yes" if info.get("mpi_persistent") else "no (MPI-3 library: the persistent-* exchanges refuse to run)"
        print(f"MPI-4 persistent    {persistent}")
    library = loaded_libmpi()
    if library:      # the file, not only its version: which MPI LD_LIBRARY_PATH swapped in
        print(f"MPI library file    {library}")
    print(f"OpenMP              {yes[bool(info.get('openmp'))]}, max threads {info.get('openmp_max_threads', '?')}")
    print(f"CUDA                {yes[bool(info.get('cuda'))]}")
    print(f"native CPU tuning   {yes[bool(info.get('native'))]}")
    if "simd" in info:
        print(f"SIMD                {info['simd']}")
    print(f"exchanges           {', '.join(EXCHANGES)}")
    print(f"placements          {', '.join(PLACEMENTS)}")
    try:
        import mpi4py
        print(f"mpi4py              {mpi4py.__version__}, {tidy(mpi_library_version())}")
    except ImportError:
        print("mpi4py              not installed (pip install mpich mpi4py for multi-rank runs)")
    print(f"python              {platform.python_version()} ({sys.executable})")
    print(f"cpu cores           {os.cpu_count()}")
    return 0
