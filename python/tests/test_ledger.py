"""The ledger as dicts: equal to the C++ ledger of the same call; statistics over ranks."""
import numpy as np
import pytest

import tessel


@pytest.mark.parametrize("m,n,k,mb,nb,transa,algorithm", [
    (24, 18, 30, 4, 3, "N", "auto"), (24, 18, 30, 5, 5, "T", "optimal"), (16, 16, 16, 4, 4, "N", "summa2d")])
def test_ledger_equals_cxx(ctx, m, n, k, mb, nb, transa, algorithm):
    grid = tessel.Layout.default(ctx, 1, 1).grid
    A = tessel.DistMatrix(ctx, tessel.Layout.block_cyclic(ctx, *((m, k) if transa == "N" else (k, m)), mb, nb, grid))
    B = tessel.DistMatrix(ctx, tessel.Layout.block_cyclic(ctx, k, n, mb, nb, grid))
    C = tessel.DistMatrix(ctx, tessel.Layout.block_cyclic(ctx, m, n, mb, nb, grid))
    ctx.reset_ledger()
    _, rep = tessel.multiply(ctx, A, B, C, transa=transa, algorithm=algorithm)
    mine = ctx.ledger(local=True)
    ref = tessel._testing.multiply_ledger(ctx.comm, m, n, k, mb, nb, grid[0], grid[1],
                                          transa=transa, algorithm=algorithm)
    fields = ["p2p_sent_bytes", "p2p_sent_msgs", "p2p_recv_bytes", "p2p_recv_msgs", "coll_bytes",
              "coll_calls", "rma_put_bytes", "rma_get_bytes", "rma_acc_bytes", "rma_ops",
              "shm_bytes", "shm_msgs"]
    as_cxx = {phase: [c[f] for f in fields] for phase, c in mine.items()}
    assert as_cxx == dict(ref)
    assert rep["ledger"] == mine  # the report's ledger is this call's
    assert rep["recv_bytes"] == sum(c["recv_bytes"] for c in mine.values())


def test_ledger_stats_over_ranks(ctx):
    ctx.reset_ledger()
    x = tessel.DistMatrix.from_numpy(ctx, np.ones((9, 7)) if ctx.rank == 0 else None)
    tessel.multiply(ctx, x, x, transb="T")
    local = ctx.ledger(local=True)
    stats = ctx.ledger()
    every = ctx.comm.allgather(local)
    phases = set().union(*every)
    assert set(stats) == phases
    for phase in phases:
        recv = [sum(c["recv_bytes"] for p, c in rank.items() if p.startswith(phase)) for rank in every]
        assert stats[phase]["recv_bytes"]["max"] == max(recv)
        assert stats[phase]["recv_bytes"]["total"] == sum(recv)
        assert stats[phase]["recv_bytes"]["mean"] == pytest.approx(sum(recv) / ctx.size)
    total = ctx.ledger(prefixes=[""])[""]
    assert total["sent_bytes"]["total"] == total["recv_bytes"]["total"]  # every byte sent arrives
    assert ctx.ledger(local=True) == local  # reading the ledger records nothing
