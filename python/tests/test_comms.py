"""Communicators: COMM_SELF, duplicates and splits of COMM_WORLD."""
import numpy as np
from mpi4py import MPI

import tessel
from conftest import random


def multiply_check(comm, seed):
    ctx = tessel.Context(comm)
    assert ctx.size == comm.Get_size() and ctx.rank == comm.Get_rank() and ctx.comm is comm
    A, B = random((9, 6), seed), random((6, 5), seed + 1)
    dA = tessel.DistMatrix.from_numpy(ctx, A if ctx.rank == 0 else None)
    dB = tessel.DistMatrix.from_numpy(ctx, B if ctx.rank == 0 else None)
    C, _ = tessel.multiply(ctx, dA, dB)
    got = C.to_numpy()
    if ctx.rank == 0:
        np.testing.assert_allclose(got, A @ B, rtol=1e-12, atol=1e-12)


def test_comm_self():
    multiply_check(MPI.COMM_SELF, 10 + MPI.COMM_WORLD.Get_rank())


def test_default_is_world():
    assert tessel.Context().size == MPI.COMM_WORLD.Get_size()


def test_dup_and_split():
    dup = MPI.COMM_WORLD.Dup()
    try:
        multiply_check(dup, 20)
    finally:
        dup.Free()
    world = MPI.COMM_WORLD
    half = world.Split(world.Get_rank() % 2, world.Get_rank())
    try:
        multiply_check(half, 30 + world.Get_rank() % 2)
    finally:
        half.Free()
