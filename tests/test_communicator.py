"""A communicator passed from mpi4py is the one the engine uses."""
import subprocess
import sys
import textwrap

import pytest

from conftest import MPI_TIMEOUT_S, mpiexec_path, subprocess_env

SCRIPT = textwrap.dedent("""
    import numpy as np
    from mpi4py import MPI
    import ranvier as rv

    def spikes(comm):
        net = rv.models.dpsnn(neurons=600, synapses_per_neuron=150)
        res = rv.Simulation(net, threads=1, comm=comm, exchange="alltoallv", placement="block").run(200)
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


def test_communicator_from_mpi4py_is_used():
    mpiexec = mpiexec_path()
    if mpiexec is None:
        pytest.skip("no mpiexec: install mpich mpi4py")
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=MPI_TIMEOUT_S, env=subprocess_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all ranks agree" in done.stdout, done.stdout
