"""Block-sparse input from SciPy (``BlockSparseMatrix.from_scipy``)."""
import numpy as np

from ._tessel import BlockSparseMatrix, Distribution, InputError, DimensionMismatch


def _blocks_of(matrix, row_off, col_off):
    """(brow, bcol, dense block) of every block holding a stored entry of ``matrix``."""
    coo = matrix.tocoo()
    if coo.nnz == 0:
        return
    bi = np.searchsorted(row_off, coo.row, side="right") - 1
    bj = np.searchsorted(col_off, coo.col, side="right") - 1
    ncb = len(col_off) - 1
    key = bi.astype(np.int64) * ncb + bj
    order = np.argsort(key, kind="stable")
    key, bi, bj = key[order], bi[order], bj[order]
    rows, cols, vals = coo.row[order], coo.col[order], coo.data[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(key)]
    for s, e in zip(starts, ends):
        r, c = int(bi[s]), int(bj[s])
        block = np.zeros((row_off[r + 1] - row_off[r], col_off[c + 1] - col_off[c]), order="F")
        np.add.at(block, (rows[s:e] - row_off[r], cols[s:e] - col_off[c]), vals[s:e])
        yield r, c, block


def _from_scipy(ctx, matrix, row_sizes=None, col_sizes=None, dist=None, root=0, seed=1,
                name="matrix"):
    """Collective. A BlockSparseMatrix from a SciPy sparse matrix (csr, csc, bsr, coo, ...).

    The block structure comes from ``dist`` or from ``row_sizes`` (per-atom block sizes;
    ``col_sizes`` default to them) with a seeded random distribution (``Distribution.random``),
    given on every rank. root=k: ``matrix`` is significant on rank k only (others may pass
    None); its blocks move to their owners in one finalize. root=None: every rank passes a
    matrix of the full shape and the blocks of all ranks are added together.
    Every block holding a stored entry (even an explicit zero) becomes a stored block.
    """
    import scipy.sparse as sp

    if dist is None:
        if row_sizes is None:
            raise InputError("from_scipy: give dist or row_sizes (the block sizes)")
        dist = Distribution.random(ctx, list(row_sizes),
                                   None if col_sizes is None else list(col_sizes), seed=seed)
    elif not isinstance(dist, Distribution):
        raise InputError(f"from_scipy: dist must be a tessel.Distribution, not {type(dist).__name__}")
    if root is not None and not (0 <= root < ctx.size):
        raise InputError(f"from_scipy: root = {root} (expected 0 .. {ctx.size - 1} or None)")
    shape = dist.shape
    mine = root is None or ctx.rank == root

    def check():
        if not mine:
            return
        if not sp.issparse(matrix):
            raise InputError(f"from_scipy: matrix must be a SciPy sparse matrix, not {type(matrix).__name__}")
        if matrix.shape != shape:
            raise DimensionMismatch(f"from_scipy: matrix is {matrix.shape[0]} x {matrix.shape[1]} "
                                    f"but the block sizes give {shape[0]} x {shape[1]}")
        if not (np.issubdtype(matrix.dtype, np.floating) or np.issubdtype(matrix.dtype, np.integer)):
            raise InputError(f"from_scipy: matrix has dtype {matrix.dtype} (expected a real dtype)")

    ctx.agree(check)
    out = BlockSparseMatrix(ctx, dist, name)
    if mine:
        row_off = np.r_[0, np.cumsum(dist.row_sizes)]
        col_off = np.r_[0, np.cumsum(dist.col_sizes)]
        for r, c, block in _blocks_of(matrix.astype(np.float64), row_off, col_off):
            out.put_block(r, c, block, accumulate=root is None)
    out.finalize()
    return out
