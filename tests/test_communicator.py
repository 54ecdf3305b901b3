"""A communicator passed from mpi4py is the one the engine uses."""
import subprocess
import sys
import textwrap

import pytest

from conftest import MPI_TIMEOUT_S, mpiexec_path, subprocess_env

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from mpi4py import MPI
    import ranvier as rv

    EXCHANGE = sys.argv[1] if len(sys.argv) > 1 else "alltoallv"

    def spikes(comm):
        net = rv.models.dpsnn(neurons=600, synapses_per_neuron=150)
        res = rv.Simulation(net, threads=1, comm=comm, exchange=EXCHANGE, placement="block").run(200)
        return res, (None if res.spikes is None else np.stack([res.spike_ids, res.spike_steps]))

    world = MPI.COMM_WORLD


    def check():
        alone, alone_spikes = spikes(MPI.COMM_SELF)          # every rank: the whole network by itself
        # Both ranks: one network split in two. A derived communicator: MPICH gives it a handle
        # that is negative as an integer, which once made the engine fall back to one process.
        together, together_spikes = spikes(world.Dup())
        assert alone.ranks == 1 and together.ranks == 2, (alone.ranks, together.ranks)
        assert together.counters is None or together.counters["bytes_sent"] > 0, together.counters
        assert alone_spikes.shape[1] > 100, alone_spikes.shape
        if world.rank == 0:
            assert np.array_equal(alone_spikes, together_spikes)
        else:
            assert together_spikes is None
        return alone_spikes


    try:
        mine = check()
    except BaseException:
        import traceback
        traceback.print_exc()
        world.Abort(1)          # fail at once instead of leaving the other rank waiting
    others = world.allgather(mine.tobytes())
    assert others[0] == others[1]
    if world.rank == 0:
        print("all ranks agree")
""")


@pytest.mark.parametrize("exchange", ["alltoallv", "persistent-allgather", "persistent-alltoall", "persistent-p2p"])
def test_communicator_from_mpi4py_is_used(exchange):
    """Also with the persistent strategies: their operations live on the communicator the engine
    duplicated from the caller's (a derived one included) and are freed with the simulation."""
    mpiexec = mpiexec_path()
    if mpiexec is None:
        pytest.skip("no mpiexec: install mpich mpi4py")
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, "-c", SCRIPT, exchange], capture_output=True,
                          text=True, timeout=MPI_TIMEOUT_S, env=subprocess_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all ranks agree" in done.stdout, done.stdout


# Persistent operations made and freed many times (one set per simulation, re-initialised on
# growth), then simulations left alive when the script ends: MPI is finalised after them.
MANY_SIMULATIONS = textwrap.dedent("""
    import numpy as np
    from mpi4py import MPI
    import ranvier as rv

    net = rv.models.dpsnn(neurons=400, synapses_per_neuron=100)
    first = {}
    for k in range(8):
        for exchange in ("persistent-allgather", "persistent-alltoall", "persistent-p2p"):
            res = rv.Simulation(net, threads=1, exchange=exchange, overlap=bool(k % 2)).run(20)
            if res.spikes is not None:
                trains = (res.spike_ids.tobytes(), res.spike_steps.tobytes())
                assert first.setdefault(exchange, trains) == trains, (k, exchange)
    kept = [rv.Simulation(net, threads=1, exchange=e) for e in ("persistent-allgather", "persistent-p2p")]
    for sim in kept:
        sim.run(10)
    if MPI.COMM_WORLD.rank == 0:
        print("done")
""")


def test_persistent_operations_made_and_freed_many_times():
    mpiexec = mpiexec_path()
    if mpiexec is None:
        pytest.skip("no mpiexec: install mpich mpi4py")
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, "-c", MANY_SIMULATIONS], capture_output=True,
                          text=True, timeout=MPI_TIMEOUT_S, env=subprocess_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "done" in done.stdout, done.stdout


# An MPI-3 library of the same ABI (a cluster's own, swapped in at run time) has no persistent
# collectives: the engine still loads (it references them weakly), and a persistent strategy is
# refused on every rank, by name, before anything is built. Emulated by what build_info reports.
REFUSED_WITHOUT_MPI4 = textwrap.dedent("""
    from mpi4py import MPI
    import ranvier as rv
    from ranvier.core import simulation
    from ranvier.errors import ConfigError

    real = simulation._engine.build_info
    simulation._engine.build_info = lambda: dict(real(), mpi_persistent=False)
    net = rv.models.build("mam-benchmark", n_areas=2, area_size=100, K=20)
    for kw in ({"exchange": "persistent-alltoall"}, {"exchange": "two-tier", "tier_exchange": "persistent-p2p"}):
        try:
            rv.Simulation(net, threads=1, **kw)
        except ConfigError as e:
            strategy = kw.get("tier_exchange", kw["exchange"])
            assert f"exchange '{strategy}' needs MPI-4 persistent collectives" in str(e), str(e)
        else:
            raise AssertionError(f"{kw} was not refused")
    rv.Simulation(net, threads=1, exchange="alltoallv").run(5)      # the others still run
    if MPI.COMM_WORLD.rank == 0:
        print("refused")
""")


def test_persistent_exchange_refused_by_an_mpi3_library():
    mpiexec = mpiexec_path()
    if mpiexec is None:
        pytest.skip("no mpiexec: install mpich mpi4py")
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, "-c", REFUSED_WITHOUT_MPI4], capture_output=True,
                          text=True, timeout=MPI_TIMEOUT_S, env=subprocess_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "refused" in done.stdout, done.stdout
