"""Shared fixtures of the tessel Python tests. Run under mpirun at any rank count:

    mpirun -np N /usr/bin/python3 -m pytest -q -p no:cacheprovider python/tests

Every rank runs every test; collective calls line up because all ranks take the same path.
"""
import os
import pathlib

import numpy as np
import pytest
from mpi4py import MPI

import tessel


@pytest.fixture(scope="session")
def comm():
    return MPI.COMM_WORLD


@pytest.fixture(scope="session")
def ctx():
    # One Context for the whole session: Open MPI's MPI_Comm_dup can take seconds when the
    # ranks' garbage collectors have freed different communicators (docs/python.md).
    return tessel.Context(MPI.COMM_WORLD)


@pytest.fixture(scope="session")
def shared_data():
    env = os.environ.get("TESSEL_SHARED_DATA")
    path = pathlib.Path(env) if env else pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"
    return path


def raises_everywhere(ctx, exc, fn, match=None):
    """fn() raises `exc` (matching `match`) on this rank, and every rank got the same message."""
    with pytest.raises(exc, match=match) as info:
        fn()
    msgs = ctx.comm.allgather(str(info.value))
    assert len(set(msgs)) == 1, msgs
    return info.value


def on_root(ctx, array, root=0):
    """The array on `root`, None elsewhere (as a scatter's input)."""
    return array if ctx.rank == root else None


def random(shape, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype == np.complex128:
        a = a + 1j * rng.standard_normal(shape)
    return a
