"""Replicated NumPy arrays to and from tessel.DistMatrix, for drivers where every rank holds
the same array (tessel.pyscf: PySCF computes F and S on every rank).

Both directions are collective over the Context. Scattering moves no data: each rank copies
its own block-cyclic piece out of its copy of the array. Gathering is a gather to rank 0 and a
broadcast (2 n^2 words through rank 0).
"""
import numpy as np

from ._tessel import DistMatrix, Layout


def owned_indices(n, nb, nproc, src, coord):
    """Not collective. The global indices (increasing, as ScaLAPACK stores them) of a
    dimension of length n in blocks of nb that process coordinate `coord` of `nproc` owns when
    block 0 sits on coordinate `src`."""
    idx = np.arange(n)
    return idx[((idx // nb) + src) % nproc == coord]


def local_piece(ctx, a, layout):
    """Not collective. This rank's piece (Fortran order) of the replicated array `a` in the
    block-cyclic `layout` (0 x 0 when the rank owns nothing)."""
    (mb, nb), (nprow, npcol), (rsrc, csrc) = layout.block_size, layout.grid, layout.src
    if ctx.rank >= nprow * npcol:
        return np.zeros((0, 0), order="F")
    prow, pcol = divmod(ctx.rank, npcol)
    rows = owned_indices(a.shape[0], mb, nprow, rsrc, prow)
    cols = owned_indices(a.shape[1], nb, npcol, csrc, pcol)
    return np.asfortranarray(a[np.ix_(rows, cols)])


def scatter_replicated(ctx, a, layout=None):
    """Collective. The DistMatrix of `a`, which every rank holds whole (same values), in
    `layout` (default Layout.default); no communication beyond the library's agreement."""
    a = np.asarray(a, dtype=np.float64)
    if layout is None:
        layout = Layout.default(ctx, a.shape[0], a.shape[1])
    return DistMatrix.from_numpy(ctx, local_piece(ctx, a, layout), layout, local=True)


def gather_replicated(ctx, x):
    """Collective. The whole matrix of DistMatrix `x` on every rank (gather to rank 0, then
    MPI_Bcast on the Context's communicator)."""
    full = x.to_numpy(root=0)
    if ctx.rank != 0:
        full = np.empty(x.layout.shape, dtype=np.float64)
    full = np.ascontiguousarray(full)
    ctx.comm.Bcast(full, root=0)
    return full
