"""DistMatrix in and out of NumPy, zero-copy views, descriptors, .npy, multiply vs NumPy."""
import numpy as np
import pytest

import tessel
from conftest import on_root, random


def op(x, t):
    return {"N": x, "T": x.T, "C": x.conj().T}[t]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("m,n,k,transa,transb", [
    (7, 5, 6, "N", "N"), (13, 9, 11, "T", "N"), (10, 12, 3, "N", "C"), (1, 17, 8, "C", "T")])
def test_multiply_against_numpy(ctx, dtype, m, n, k, transa, transb):
    A = random((m, k) if transa == "N" else (k, m), 1, dtype)
    B = random((k, n) if transb == "N" else (n, k), 2, dtype)
    C0 = random((m, n), 3, dtype)
    lay = tessel.Layout.block_cyclic(ctx, m, n, mb=3, nb=2)
    dA = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, A))
    dB = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, B, ctx.size - 1), root=ctx.size - 1)
    dC = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, C0), layout=lay)
    alpha, beta = (1.5, -0.5) if dtype == np.float64 else (1.5 - 0.5j, 0.25j)
    C, rep = tessel.multiply(ctx, dA, dB, dC, alpha=alpha, beta=beta, transa=transa, transb=transb)
    assert C is dC
    ref = alpha * op(A, transa) @ op(B, transb) + beta * C0
    got = C.to_numpy(root=0)
    if ctx.rank == 0:
        assert got.dtype == dtype
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    else:
        assert got is None
    assert rep["plan"]["m"] == m and rep["plan"]["n"] == n and rep["plan"]["k"] == k
    assert rep["seconds"] >= 0


@pytest.mark.parametrize("algorithm", ["auto", "optimal", "summa2d"])
def test_multiply_algorithms_new_c(ctx, algorithm):
    A, B = random((20, 16), 4), random((16, 12), 5)
    dA = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, A))
    dB = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, B))
    C, rep = tessel.multiply(ctx, dA, dB, algorithm=algorithm)
    assert C.shape == (20, 12)
    got = C.to_numpy(root=ctx.size - 1)
    if ctx.rank == ctx.size - 1:
        np.testing.assert_allclose(got, A @ B, rtol=1e-12, atol=1e-12)
    plan = tessel.explain(ctx, dA, dB, C, algorithm=algorithm)
    assert plan["executes"] == rep["executed"]
    assert plan["grid"] == rep["plan"]["grid"]
    assert rep["algorithm"] in ("optimal", "summa2d")


def test_explain_sizes():
    plan = tessel.explain(8, m=512, n=512, k=65536)
    pm, pn, pk = plan["grid"]
    assert pm * pn * pk == plan["used"] <= 8
    w = plan["recv_words"]
    assert w["total"] == pytest.approx(w["a"] + w["b"] + w["c"]) and plan["bound_words"] > 0
    assert "grid" in plan["text"]


def test_from_numpy_orders_and_local(ctx):
    A = random((11, 9), 6)
    lay = tessel.Layout.block_cyclic(ctx, 11, 9, mb=2, nb=4)
    for src in (A, np.asfortranarray(A), np.ascontiguousarray(A), np.repeat(A, 2, axis=1)[:, ::2]):
        x = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, src), layout=lay)
        got = x.to_numpy()
        if ctx.rank == 0:
            np.testing.assert_array_equal(got, A)
    # each rank passes its own block-cyclic piece
    x = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, A), layout=lay)
    piece = np.array(x.local)  # a copy of this rank's piece
    y = tessel.DistMatrix.from_numpy(ctx, np.ascontiguousarray(piece), layout=lay, local=True)
    got = y.to_numpy()
    if ctx.rank == 0:
        np.testing.assert_array_equal(got, A)


def test_local_is_zero_copy(ctx):
    A = random((10, 7), 7)
    x = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, A), layout=tessel.Layout.block_cyclic(ctx, 10, 7, 2, 2))
    loc = x.local
    assert loc.flags["F_CONTIGUOUS"] or loc.size == 0
    assert np.shares_memory(loc, x.local) or loc.size == 0
    loc *= 2.0          # writes through to the distributed matrix
    loc += ctx.rank      # rank-dependent: proves each rank's own piece was written
    got = x.to_numpy()
    ref = 2.0 * A
    # the owner rank of each element, from the layout's local shapes (block cyclic 2x2)
    owners = np.zeros_like(A)
    grid = x.layout.grid
    for i in range(10):
        for j in range(7):
            owners[i, j] = ((i // 2) % grid[0]) * grid[1] + (j // 2) % grid[1]
    if ctx.rank == 0:
        np.testing.assert_array_equal(got, ref + owners)


def test_view_wraps_numpy_storage(ctx):
    lay = tessel.Layout.block_cyclic(ctx, 9, 8, 2, 3)
    lr, lc = lay.local_shape(ctx.rank)
    big = np.zeros((lr + 3, lc), order="F")  # leading dimension lr + 3, as ScaLAPACK's lld
    store = big[:lr, :]
    store[...] = ctx.rank + 1
    x = tessel.DistMatrix.view(ctx, store, lay)
    assert x.is_view
    assert np.shares_memory(x.local, big) or store.size == 0
    assert x.ld == max(1, lr + 3) or lc <= 1 or lr == 0
    full = x.to_numpy()
    store[...] = 0       # changes the matrix itself
    zero = x.to_numpy()
    if ctx.rank == 0:
        assert full.min() >= 1 and zero.max() == 0
        assert set(np.unique(full)) <= set(range(1, ctx.size + 1))


def test_descriptor_round_trip(ctx):
    lay = tessel.Layout.block_cyclic(ctx, 30, 20, mb=4, nb=3, rsrc=0, csrc=0)
    desc = lay.descriptor(ctx.rank, ctxt=7)
    assert desc[:8] == [1, 7, 30, 20, 4, 3, 0, 0]
    assert desc[8] == max(1, lay.local_shape(ctx.rank)[0])
    back = tessel.Layout.from_descriptor(ctx, desc, grid=lay.grid)
    assert back == lay and back.block_size == (4, 3)
    x = tessel.DistMatrix(ctx, lay)
    assert x.descriptor()[8] == x.ld
    assert not tessel.Layout.on_rank(ctx, 3, 3).is_block_cyclic


def test_npy_round_trip_and_redistribute(ctx, tmp_path_factory):
    path = ctx.comm.bcast(str(tmp_path_factory.mktemp("npy") / "A.npy") if ctx.rank == 0 else None)
    A = random((12, 10), 8, np.complex128)
    x = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, A))
    x.write_npy(path)
    if ctx.rank == 0:
        np.testing.assert_array_equal(np.load(path), A)
    y = tessel.DistMatrix.read_npy(ctx, path, layout=tessel.Layout.block_cyclic(ctx, 12, 10, 5, 1))
    z = y.redistribute(tessel.Layout.on_rank(ctx, 12, 10, rank=ctx.size - 1))
    assert z.local.shape == ((12, 10) if ctx.rank == ctx.size - 1 else (0, 0))
    if ctx.rank == ctx.size - 1:
        np.testing.assert_array_equal(z.local, A)


def test_views_keep_their_owners_alive(ctx):
    x = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, np.arange(20.0).reshape(5, 4)))
    loc = x.local
    del x       # the last name: only the view holds the matrix now (reference counting)
    loc += 1.0  # the matrix lives as long as its .local view
    lay = tessel.Layout.block_cyclic(ctx, 6, 6, 2, 2)
    y = tessel.DistMatrix.view(ctx, np.full(lay.local_shape(ctx.rank), 3.0, order="F"), lay)
    # the temporary array passed in lives as long as the matrix
    got = y.to_numpy()
    if ctx.rank == 0:
        np.testing.assert_array_equal(got, np.full((6, 6), 3.0))


def test_numpy_scalars_and_complex_alpha(ctx):
    a = np.arange(6.0).reshape(2, 3)
    x = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, a))
    C, _ = tessel.multiply(ctx, x, x, transb="T", alpha=np.float64(2.0), beta=np.float32(0))
    got = C.to_numpy()
    if ctx.rank == 0:
        np.testing.assert_allclose(got, 2 * a @ a.T)
