"""One density step of a closed-shell SCF on block-sparse matrices with atomic blocks.

Input on every rank (the same values): the AO Fock matrix F, the AO overlap S and PySCF's
orthogonalizer x (n x n here: no linear dependency removed). Each rank puts the atom-pair
blocks of F and S it owns (a seeded random distribution of the atoms, no message), and
tessel.density runs on the block-sparse algebra (S^-1/2 by Newton-Schulz, then the sign
iteration or a purification, every product filtered at eps). P comes back to every rank
(gathered on rank 0, broadcast).

Replicated afterwards (every rank, NumPy, O(n^3)): F' = x^T F x and D' = x^T S P S x, from
which the StepRecord gives the HOMO/LUMO and the orbital gradient as for the dense step.
"""
import time

import numpy as np

from ._scf_step import StepRecord, frontier_levels
from ._tessel import BlockSparseMatrix, Distribution, InputError, density

#: Methods on block-sparse matrices (tessel.density's iterative ones).
METHODS = ("sign", "trs4", "canonical", "trs2")


def atomic_block_sizes(mol):
    """Not collective. The basis functions of each atom (PySCF's aoslice_by_atom), atoms
    without functions left out: the block sizes of the atomic-block matrices."""
    sizes = [int(p1 - p0) for _, _, p0, p1 in mol.aoslice_by_atom()]
    return [s for s in sizes if s > 0]


class SparseDensityStep:
    """The tessel side of an SCF on block-sparse matrices: a Context, the occupation, the
    method, the atomic block sizes, the filter threshold eps and the multiply algorithm."""

    def __init__(self, ctx, nocc, method, block_sizes, eps=1e-12, algorithm="cannon", **options):
        if method not in METHODS:
            raise InputError(f"block-sparse density step: method = {method!r} (expected one of "
                             f"{', '.join(METHODS)})")
        self.ctx, self.nocc, self.method = ctx, nocc, method
        self.eps, self.algorithm, self.options = eps, algorithm, options
        self.dist = Distribution.random(ctx, list(block_sizes))
        self._s = None  # (the replicated S, its BlockSparseMatrix)

    def run(self, fock, x, s):
        """Collective. The StepRecord of Fock matrix `fock` with overlap `s` (both AO)."""
        t0 = time.perf_counter()
        n = fock.shape[0]
        if x.shape != (n, n):
            raise InputError(f"block-sparse density step: the orthogonalizer is {x.shape[0]} x "
                             f"{x.shape[1]} (PySCF removed linear dependencies of the basis); "
                             "the block-sparse route needs all n functions: use the dense route")
        dF = self._owned(fock, "F")
        dS = self._overlap(s)
        t1 = time.perf_counter()
        dP, result = density(self.ctx, dF, dS, 2 * self.nocc, method=self.method, eps=self.eps,
                             algorithm=self.algorithm, **self.options)
        t2 = time.perf_counter()
        P = self.ctx.comm.bcast(dP.to_numpy(root=0), root=0)
        t3 = time.perf_counter()
        sx = s @ x
        d_orth = sx.T @ P @ sx
        f_orth = x.T @ fock @ x
        homo, lumo = frontier_levels(f_orth, d_orth, self.nocc)
        t4 = time.perf_counter()
        t = {"distribute": t1 - t0, "purify": t2 - t1, "back": 0.0, "gather": t3 - t2,
             "levels": t4 - t3}
        return StepRecord(density=0.5 * (P + P.T), d_orth=d_orth, f_orth=f_orth, x=x,
                          nocc=self.nocc, homo=homo, lumo=lumo, result=result, seconds=t)

    def _overlap(self, s):
        if self._s is None or self._s[0] is not s:
            self._s = (s, self._owned(s, "S"))
        return self._s[1]

    def _owned(self, a, name):
        """Collective (the finalize). The block-sparse copy of the replicated matrix `a`: each
        rank puts the nonzero blocks of its process row's block rows and process column's
        block columns (rank = prow * pc + pcol, the Distribution's rule), so nothing moves."""
        d = self.dist
        out = BlockSparseMatrix(self.ctx, d, name)
        off = np.r_[0, np.cumsum(d.row_sizes)]
        prow, pcol = divmod(self.ctx.comm.rank, d.grid[1])
        rows = np.flatnonzero(np.asarray(d.row_dist) == prow)
        cols = np.flatnonzero(np.asarray(d.col_dist) == pcol)
        for i in rows:
            for j in cols:
                block = a[off[i]:off[i + 1], off[j]:off[j + 1]]
                if np.any(block):
                    out.put_block(int(i), int(j), np.asfortranarray(block))
        out.finalize()
        return out
