"""A ranvier built without MPI, started under mpiexec, is refused once, before anything is built.

The engine of the test environment has MPI, so the decision is tested with the engine's answer
replaced (`parallel.engine_built_with_mpi`), in-process with the launcher's variables set, and
once under the real mpiexec. A real build without MPI (`pip install . -C
cmake.define.RANVIER_WITH_MPI=OFF`) takes minutes: it is checked by hand, not here.
"""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, mpiexec_path, needs_mpiexec, subprocess_env

from ranvier import cli, models
from ranvier.runtime import parallel
from ranvier.errors import ConfigError

SMALL = str(ROOT / "examples" / "dpsnn-small.toml")
LAUNCHER_VARS = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                 "MPI_LOCALNRANKS", "PMIX_SIZE", "PMIX_RANK")


@pytest.fixture
def launched(monkeypatch):
    """Sets the variables MPICH's launcher gives rank `rank` of `size`."""
    for var in LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)

    def as_rank(rank: int, size: int) -> None:
        monkeypatch.setenv("PMI_SIZE", str(size))
        monkeypatch.setenv("PMI_RANK", str(rank))
    return as_rank


@pytest.fixture
def engine_without_mpi(monkeypatch):
    monkeypatch.setattr(parallel, "engine_built_with_mpi", lambda: False)

    def must_not_build(*args, **kwargs):
        raise AssertionError("the network was built before the refusal")
    monkeypatch.setattr(models, "build", must_not_build)

    def must_not_abort(exc):         # the real one would MPI_Abort this test process
        raise AssertionError(f"a failure instead of the refusal: {exc!r}")
    monkeypatch.setattr(parallel, "stop_every_rank", must_not_abort)


def test_the_test_engine_has_mpi():
    """The other tests replace this answer; the real one, for the test environment's build."""
    assert parallel.engine_built_with_mpi() is True


@pytest.mark.parametrize("rank", [0, 1])
def test_run_under_mpiexec_is_refused_once(launched, engine_without_mpi, capsys, rank):
    launched(rank, 2)
    assert cli.main(["run", SMALL]) == cli.EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert captured.out == ""
    if rank == 0:
        lines = captured.err.splitlines()
        assert len(lines) == 1, captured.err
        assert lines[0].startswith("ranvier: error: this ranvier was built without MPI"), lines[0]
        assert "pip install --force-reinstall ." in lines[0]
    else:
        assert captured.err == ""           # the other ranks exit quietly, with the same status


def test_one_process_without_mpi_is_not_refused(launched, monkeypatch):
    monkeypatch.setattr(parallel, "engine_built_with_mpi", lambda: False)
    for var in LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)
    parallel.refuse_mpiexec_without_mpi()              # no launcher
    assert isinstance(parallel.make_comm(), parallel.SerialComm)
    launched(0, 1)                                     # mpiexec -n 1: one process, no MPI needed
    parallel.refuse_mpiexec_without_mpi()
    assert isinstance(parallel.make_comm(), parallel.SerialComm)


def test_an_engine_with_mpi_is_not_refused(launched, monkeypatch):
    monkeypatch.setattr(parallel, "engine_built_with_mpi", lambda: True)
    launched(1, 4)
    parallel.refuse_mpiexec_without_mpi()


def test_info_still_answers_under_mpiexec(launched, engine_without_mpi, capsys):
    """`ranvier info` is how one sees that the build has no MPI: never refused."""
    launched(0, 2)
    assert cli.main(["info"]) == 0
    assert "MPI backend" in capsys.readouterr().out


def test_a_communicator_given_to_an_engine_without_mpi_is_refused(monkeypatch):
    """The Python API: Simulation(comm=MPI.COMM_WORLD) with such a build."""
    monkeypatch.setattr(parallel, "engine_built_with_mpi", lambda: False)
    for var in LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match="built without MPI"):
        parallel.make_comm(object())


# Under the real launcher: the engine's answer replaced in each rank before the command runs.
WITHOUT_MPI = ("import sys; import ranvier.runtime.parallel as p; p.engine_built_with_mpi = lambda: False; "
               "from ranvier import cli; sys.exit(cli.main(sys.argv[1:]))")


@needs_mpiexec
def test_refused_once_under_mpiexec(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([mpiexec_path(), "-n", "2", sys.executable, "-c", WITHOUT_MPI, "run", SMALL,
                           "--out", str(out)], cwd=tmp_path, env=subprocess_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == cli.EXIT_BAD_INPUT, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ranvier: error: this ranvier was built without MPI"), proc.stderr
    assert not out.exists()


# -- a cluster's own MPI, swapped in at run time ----------------------------------------------
LOADED_LIBMPI = ("import ranvier; from ranvier.runtime.parallel import mpi_library_version; "
                 "print(mpi_library_version()); "
                 "print(*sorted({line.split()[-1] for line in open('/proc/self/maps') if '/libmpi' in line}), sep='\\n')")


def wheel_libmpi():
    """The libmpi.so.12 of the mpich wheel in this environment, or None."""
    from importlib import metadata
    try:
        dist = metadata.distribution("mpich")
    except metadata.PackageNotFoundError:
        return None
    lib = next((f for f in dist.files or [] if f.name == "libmpi.so.12"), None)
    return dist.locate_file(lib).resolve() if lib is not None else None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_LIBRARY_PATH and /proc/self/maps: Linux")
def test_ld_library_path_chooses_the_libmpi_of_engine_and_mpi4py(tmp_path):
    """A cluster user points LD_LIBRARY_PATH at the system's libmpi.so.12: the engine takes it
    (its run-time path is DT_RUNPATH, which LD_LIBRARY_PATH overrides, not DT_RPATH) and so does
    mpi4py (which would otherwise load the wheel's libmpi by its full path): one libmpi in the
    process. The 'system' library here is a copy of the wheel's, in another folder."""
    pytest.importorskip("mpi4py")
    original = wheel_libmpi()
    if original is None or not original.exists():
        pytest.skip("no mpich wheel in this environment")
    system_lib = tmp_path / "system-mpi" / "lib"
    system_lib.mkdir(parents=True)
    (system_lib / "libmpi.so.12").write_bytes(original.read_bytes())
    (system_lib / "mpich").symlink_to(original.parent / "mpich")    # its libfabric and UCX ($ORIGIN/mpich)
    (system_lib / "libmpi.so.12").chmod(0o755)

    def loaded(extra_env):
        env = dict(subprocess_env(), **extra_env)
        proc = subprocess.run([sys.executable, "-c", LOADED_LIBMPI], env=env, capture_output=True, text=True,
                              timeout=60, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        version, *files = proc.stdout.splitlines()
        assert version.startswith("MPICH"), proc.stdout
        return files

    assert loaded({}) == [str(original)]
    assert loaded({"LD_LIBRARY_PATH": str(system_lib)}) == [str(system_lib / "libmpi.so.12")]
    # `ranvier info` names the file, so the user sees the swap took.
    info = subprocess.run([sys.executable, "-m", "ranvier", "info"], env=dict(subprocess_env(), LD_LIBRARY_PATH=str(system_lib)),
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert f"MPI library file    {system_lib / 'libmpi.so.12'}" in info.stdout, info.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("nm") is None,
                    reason="ELF symbol table read with nm: Linux")
def test_mpi4_persistent_collectives_are_weak_references():
    """The engine references MPI-4's persistent collectives weakly, so that it still loads where
    an MPI-3 library of the same ABI is swapped in at run time (the persistent strategies are
    then refused, tests/test_communicator.py); everything else it calls is a plain reference."""
    from ranvier import _engine
    if not _engine.build_info()["mpi"]:
        pytest.skip("engine built without MPI")
    listing = subprocess.run(["nm", "-D", _engine.__file__], capture_output=True, text=True, check=True).stdout
    kinds = {f[-1]: f[-2] for f in map(str.split, listing.splitlines()) if len(f) >= 2 and f[-1].startswith("MPI_")}
    assert kinds["MPI_Send_init"] == kinds["MPI_Startall"] == kinds["MPI_Allgatherv"] == "U"
    for name in ("MPI_Allgather_init", "MPI_Alltoallv_init"):
        assert kinds.get(name, "w") == "w", (name, kinds.get(name))
