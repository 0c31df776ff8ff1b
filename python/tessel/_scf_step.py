"""One density step of a closed-shell SCF, by tessel, from replicated matrices.

Input on every rank (the same values): the AO Fock matrix F (n x n) and an orthogonalizer x
(n x m, x^T S x = I; PySCF's canonical orthogonalization). Output on every rank: the density
of one spin channel P (AO basis, tr(P S) = nocc) and what an SCF driver needs besides it.

    F, x  --scatter (local copies)-->  F' = x^T F x  (2 distributed multiplies)
          --purify (SymmSquareCube)-->  D' (m x m, orthogonal basis)
          --P = x D' x^T (2 multiplies)-->  gather + broadcast P, D', F'

Replicated afterwards (every rank, NumPy): the HOMO and LUMO by Lanczos on the projected F'
(O(k m^2)) and, when the driver asks, the orbital gradient 2 (I - D') F'_new D' (O(m^3)).
"""
import time

import numpy as np

from ._replicated import gather_replicated, scatter_replicated
from ._tessel import density, multiply
from ._tessel import purify as _purify

#: Density methods of the step: tessel.purify's methods without a chemical potential (around
#: SymmSquareCube), and "sign": the sign iteration with its chemical-potential search
#: (tessel.density over dense.multiply).
METHODS = ("canonical", "trs2", "trs4", "sign")


class StepRecord:
    """Not collective. The outcome of one density step, replicated on every rank.

    density: P, AO basis, one spin channel (PySCF's dm = 2 P); d_orth, f_orth: D' and F' in the
    orthogonal basis of x; nocc; homo, lumo (Eh, from the projected F'); result: tessel.purify's
    result dict; seconds: {"distribute", "purify", "back", "gather", "levels"} on this rank.
    """

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def orbital_gradient(self, fock):
        """Not collective. PySCF's RHF orbital gradient 2 C_vir^T F C_occ in the form
        2 (I - D') F'_new D' with F'_new = x^T fock x: the same Frobenius norm (C_occ, C_vir
        orthonormal bases of D' and I - D'), returned as an m*m vector."""
        f_new = self.x.T @ fock @ self.x
        fd = f_new @ self.d_orth
        return (2.0 * (fd - self.d_orth @ fd)).ravel()


class DensityStep:
    """The tessel side of an SCF: a Context, the occupation and the method; keeps x
    distributed between steps while PySCF hands the same x again."""

    def __init__(self, ctx, nocc, method="canonical", **purify_options):
        self.ctx, self.nocc, self.method, self.options = ctx, nocc, method, purify_options
        self._x = None  # (the replicated x, its DistMatrix)
        self._eye = None  # the identity in the orthogonal basis (S of the sign method)

    def run(self, fock, x, s=None):
        """Collective. The StepRecord of Fock matrix `fock` (AO) with orthogonalizer `x` (the
        overlap `s` is not needed: x carries it)."""
        ctx, t = self.ctx, {}
        t0 = time.perf_counter()
        dx = self._distributed_x(x)
        dF = scatter_replicated(ctx, fock)
        xtF, _ = multiply(ctx, dx, dF, transa="T")
        dFo, _ = multiply(ctx, xtF, dx)
        t1 = time.perf_counter()
        dDo, result = self._solve(dFo, x.shape[1])
        t2 = time.perf_counter()
        xD, _ = multiply(ctx, dx, dDo)
        dP, _ = multiply(ctx, xD, dx, transb="T")
        t3 = time.perf_counter()
        P, d_orth, f_orth = (gather_replicated(ctx, m) for m in (dP, dDo, dFo))
        t4 = time.perf_counter()
        homo, lumo = frontier_levels(f_orth, d_orth, self.nocc)
        t5 = time.perf_counter()
        t = {"distribute": t1 - t0, "purify": t2 - t1, "back": t3 - t2, "gather": t4 - t3,
             "levels": t5 - t4}
        return StepRecord(density=0.5 * (P + P.T), d_orth=d_orth, f_orth=f_orth, x=x,
                          nocc=self.nocc, homo=homo, lumo=lumo, result=result, seconds=t)

    def _solve(self, dFo, m):
        """Collective. (D', result) of F' (m x m, orthogonal basis) by the step's method."""
        if self.method != "sign":
            return _purify(self.ctx, dFo, self.nocc, method=self.method, **self.options)
        if self._eye is None or self._eye.layout.shape != (m, m):
            self._eye = scatter_replicated(self.ctx, np.eye(m))
        return density(self.ctx, dFo, self._eye, 2 * self.nocc, method="sign", **self.options)

    def _distributed_x(self, x):
        if self._x is None or self._x[0] is not x:
            self._x = (x, scatter_replicated(self.ctx, x))
        return self._x[1]


def frontier_levels(f_orth, d_orth, nocc):
    """Not collective. (HOMO, LUMO): the largest eigenvalue of F' on the range of D' and the
    smallest on its complement, by Lanczos (scipy eigsh, matrix-vector products only) on
    D'F'D' + lo (I - D') and Q F' Q + hi D' (Q = I - D'; lo/hi below/above F''s Gershgorin
    bounds); dense eigvalsh of the same matrices below 64 states. Exact up to D''s
    idempotency error."""
    m = f_orth.shape[0]
    radius = np.abs(f_orth).sum(axis=1) - np.abs(np.diag(f_orth))
    lo = float(np.min(np.diag(f_orth) - radius)) - 1.0
    hi = float(np.max(np.diag(f_orth) + radius)) + 1.0

    def occ(v):  # D'F'D' v + lo (v - D'v)
        dv = d_orth @ v
        return d_orth @ (f_orth @ dv) + lo * (v - dv)

    def vir(v):  # Q F' Q v + hi D'v
        dv = d_orth @ v
        qv = v - dv
        fqv = f_orth @ qv
        return fqv - d_orth @ fqv + hi * dv

    if m < 64:
        eye = np.eye(m)
        return (float(np.linalg.eigvalsh(occ(eye))[-1]), float(np.linalg.eigvalsh(vir(eye))[0]))
    from scipy.sparse.linalg import LinearOperator, eigsh

    v0 = np.random.default_rng(7).standard_normal(m)  # the same on every rank
    levels = []
    for fn, which in ((occ, "LA"), (vir, "SA")):
        op = LinearOperator((m, m), matvec=fn, dtype=np.float64)
        levels.append(float(eigsh(op, k=1, which=which, v0=v0, tol=1e-12,
                                  return_eigenvectors=False)[0]))
    return tuple(levels)
