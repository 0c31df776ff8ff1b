"""Block-sparse matrices: from SciPy (csr, bsr), to NumPy, the algebra against NumPy."""
import numpy as np
import pytest
import scipy.sparse as sp

import tessel
from conftest import on_root, raises_everywhere

SIZES = [2, 3, 1, 4, 2, 3, 1]  # per-atom block sizes, n = 16


def block_random(sizes, density, seed):
    """A dense matrix whose blocks (of `sizes`) are random or zero."""
    rng = np.random.default_rng(seed)
    off = np.r_[0, np.cumsum(sizes)]
    a = np.zeros((off[-1], off[-1]))
    for i in range(len(sizes)):
        for j in range(len(sizes)):
            if i == j or rng.random() < density:
                a[off[i]:off[i + 1], off[j]:off[j + 1]] = rng.standard_normal((sizes[i], sizes[j]))
    return a


def test_from_scipy_csr_to_numpy(ctx):
    a = block_random(SIZES, 0.3, 1)
    A = tessel.BlockSparseMatrix.from_scipy(ctx, on_root(ctx, sp.csr_matrix(a)), row_sizes=SIZES)
    assert A.shape == a.shape and A.is_finalized
    got = A.to_numpy(root=ctx.size - 1)
    if ctx.rank == ctx.size - 1:
        np.testing.assert_array_equal(got, a)
    off = np.r_[0, np.cumsum(SIZES)]
    nonzero = sum(1 for i in range(7) for j in range(7) if a[off[i]:off[i + 1], off[j]:off[j + 1]].any())
    assert A.nblocks() == nonzero
    assert A.occupation() == pytest.approx(nonzero / 49)
    for brow, bcol, block in A.blocks():  # stored on their owners
        assert A.distribution.owner(brow, bcol) == ctx.rank
        np.testing.assert_array_equal(block, a[off[brow]:off[brow + 1], off[bcol]:off[bcol + 1]])


def test_from_scipy_bsr_every_rank_adds(ctx):
    a = block_random([3] * 5, 0.4, 2)
    dist = tessel.Distribution.random(ctx, [3] * 5, seed=4)
    A = tessel.BlockSparseMatrix.from_scipy(ctx, sp.bsr_matrix(a, blocksize=(3, 3)), dist=dist, root=None)
    got = A.to_numpy()
    if ctx.rank == 0:
        np.testing.assert_allclose(got, ctx.size * a)  # every rank's matrix added


def test_algebra_against_numpy(ctx):
    a, b = block_random(SIZES, 0.3, 5), block_random(SIZES, 0.3, 6)
    dist = tessel.Distribution.random(ctx, SIZES, seed=7)
    A = tessel.BlockSparseMatrix.from_scipy(ctx, on_root(ctx, sp.csr_matrix(a)), dist=dist)
    B = tessel.BlockSparseMatrix.from_scipy(ctx, on_root(ctx, sp.coo_matrix(b)), dist=dist)
    assert A.trace() == pytest.approx(np.trace(a))
    assert A.dot(B) == pytest.approx(np.sum(a * b))
    assert A.norm() == pytest.approx(np.linalg.norm(a))
    C = A.copy()
    C.add(B, alpha=2.0, beta=-3.0)
    C.scale(0.5)
    C.shift(1.25)
    T = C.transpose()
    R = T.redistribute(tessel.Distribution.random(ctx, SIZES, seed=99))
    ref = (0.5 * (2 * a - 3 * b) + 1.25 * np.eye(a.shape[0])).T
    got = R.to_numpy()
    if ctx.rank == 0:
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)
    F = A.copy()
    F.filter(1e9)  # drops every block
    assert F.nblocks() == 0


def test_dense_round_trip(ctx):
    a = block_random(SIZES, 0.5, 8)
    x = tessel.DistMatrix.from_numpy(ctx, on_root(ctx, a))
    dist = tessel.Distribution.random(ctx, SIZES, seed=3)
    A = tessel.BlockSparseMatrix.from_dense(x, dist)
    y = A.to_dense(tessel.Layout.block_cyclic(ctx, 16, 16, 3, 5))
    got = y.to_numpy()
    if ctx.rank == 0:
        np.testing.assert_array_equal(got, a)


def test_put_get_finalize(ctx):
    dist = tessel.Distribution.random(ctx, SIZES, seed=2)
    A = tessel.BlockSparseMatrix(ctx, dist, name="P")
    if ctx.rank == 0:  # rank 0 puts every diagonal block; finalize moves them to their owners
        for i, s in enumerate(SIZES):
            A.put_block(i, i, np.full((s, s), float(i)))
    A.finalize()
    for i, s in enumerate(SIZES):
        blk = A.get_block(i, i)
        if dist.owner(i, i) == ctx.rank:
            np.testing.assert_array_equal(blk, np.full((s, s), float(i)))
        else:
            assert blk is None
    assert A.trace() == pytest.approx(sum(i * s for i, s in enumerate(SIZES)))


def test_sparse_bad_arguments(ctx):
    dist = tessel.Distribution.random(ctx, SIZES, seed=2)
    A = tessel.BlockSparseMatrix(ctx, dist, name="Q")
    if ctx.rank == 0:
        A.put_block(1, 1, np.ones((2, 2)))  # block (1, 1) is 3 x 3
    raises_everywhere(ctx, tessel.InputError, A.finalize, match=r"Q: put_block\(1, 1\) on rank 0")
    if ctx.rank == ctx.size - 1:
        A.put_block(99, 0, np.ones((2, 2)))
    raises_everywhere(ctx, tessel.InputError, A.finalize, match="99")
    A.finalize()  # nothing pending any more
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.Distribution(SIZES, SIZES, (1, 1), [0] * 6, [0] * 7))
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.Distribution.random(ctx, [2, 0, 1]))
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.Distribution.random("4", [2, 1]), match="number of ranks")
    raises_everywhere(ctx, tessel.InputError, lambda: A.to_dense("layout"), match="tessel.Layout")
    raises_everywhere(ctx, tessel.DimensionMismatch,
                      lambda: tessel.BlockSparseMatrix.from_scipy(ctx, on_root(ctx, sp.eye(15, format="csr")),
                                                                  row_sizes=SIZES), match="15 x 15")
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.BlockSparseMatrix.from_scipy(ctx, on_root(ctx, np.eye(16)), row_sizes=SIZES),
                      match="SciPy sparse")
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.BlockSparseMatrix.from_scipy(ctx, on_root(ctx, sp.eye(16, dtype=complex, format="csr")),
                                                                  row_sizes=SIZES), match="complex")
    other = tessel.BlockSparseMatrix(ctx, tessel.Distribution.random(ctx, SIZES[::-1]))
    A.finalize()
    raises_everywhere(ctx, tessel.LayoutMismatch, lambda: A.dot(other))


def _known_pair(n, nocc, seed):
    """(H, S, exact P): S = I + a small symmetric perturbation (SPD), H with a gap at nocc;
    P = C_occ C_occ^T of the generalized problem by scipy.linalg.eigh (independent)."""
    import scipy.linalg

    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    s = np.eye(n) + 0.02 * (a + a.T)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    e = np.r_[np.linspace(-2.0, -0.5, nocc), np.linspace(0.5, 3.0, n - nocc)]
    h0 = q @ np.diag(e) @ q.T
    c = np.linalg.cholesky(s)
    h = c @ h0 @ c.T
    h = 0.5 * (h + h.T)
    w, v = scipy.linalg.eigh(h, s)
    p = v[:, :nocc] @ v[:, :nocc].T
    return h, s, p


@pytest.mark.parametrize("method", ["sign", "trs4"])
def test_density_block_sparse_against_eigh(ctx, method):
    """tessel.density on BlockSparseMatrix (uneven blocks, both multiply algorithms) equals
    scipy's generalized eigensolver's density; the dense call on the same pair likewise."""
    sizes = [5, 3, 1, 4, 2, 5, 3, 1]
    n, nocc = sum(sizes), 11
    h, s, p_ref = _known_pair(n, nocc, 5)
    for algorithm in ("cannon", "rma25d"):
        H = tessel.BlockSparseMatrix.from_scipy(ctx, sp.csr_matrix(h), row_sizes=sizes)
        S = tessel.BlockSparseMatrix.from_scipy(ctx, sp.csr_matrix(s), row_sizes=sizes)
        P, r = tessel.density(ctx, H, S, 2 * nocc, method=method, eps=1e-13, algorithm=algorithm)
        assert isinstance(P, tessel.BlockSparseMatrix)
        got = ctx.comm.bcast(P.to_numpy(root=0), root=0)
        assert np.abs(got - p_ref).max() < 1e-9, (algorithm, np.abs(got - p_ref).max())
        assert r["trace_ps"] == pytest.approx(nocc, abs=1e-9)
        assert r["band_energy"] == pytest.approx(2 * np.trace(p_ref @ h), abs=1e-8)


def test_density_block_sparse_bad_arguments(ctx):
    sizes = [3, 2, 4]
    h, s, _ = _known_pair(9, 3, 2)
    H = tessel.BlockSparseMatrix.from_scipy(ctx, sp.csr_matrix(h), row_sizes=sizes)
    S = tessel.BlockSparseMatrix.from_scipy(ctx, sp.csr_matrix(s), row_sizes=sizes)
    dense = H.to_dense()
    raises_everywhere(ctx, tessel.InputError, lambda: tessel.density(ctx, H, dense, 6, method="sign"),
                      match=r"density: S must be a tessel.BlockSparseMatrix \(as H\)")
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.density(ctx, dense, dense, 6, method="sign", eps=1e-9),
                      match=r"density: eps = 1e-09 \(a filter threshold of block-sparse products")
    raises_everywhere(ctx, tessel.InputError,
                      lambda: tessel.density(ctx, H, S, 6, method="sign", algorithm="summa"),
                      match="summa")
