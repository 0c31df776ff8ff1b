"""One SCF density step: tessel.pyscf's (distributed purification) against PySCF's own
(diagonalization), on the same Fock matrix of a water cluster.

    mpirun -np P python3 bench/pyscf_density_step.py --waters 32 --basis 6-31g [--repeat 5]

Rank 0 builds the molecule and the first-cycle Kohn-Sham matrix (LDA, density-fitted, from
PySCF's minao guess: a Fock matrix with the molecule's gap) and PySCF's orthogonalizer x; they
are broadcast (every rank holds them, as in tessel.pyscf). Timed, alternating, median of
--repeat: PySCF's step `mf.eig(F, S, x=x)` on rank 0 alone (x^T F x, scipy eigh, back-
transform; its BLAS threads as the environment sets them) and tessel's step
(`DensityStep.run`: scatter, x^T F x, purification, x D' x^T, gather + broadcast, HOMO/LUMO)
on all ranks, with its purification part. Also ||D_tessel - D_pyscf||_max.
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

import tessel
from tessel._scf_step import DensityStep

WATER = [("O", (0.0, 0.0, 0.0)), ("H", (0.757, 0.586, 0.0)), ("H", (-0.757, 0.586, 0.0))]


def fock_of_water(nwaters, basis):
    """(mf, F, S, x, nocc) on the calling rank: the first-cycle LDA Kohn-Sham matrix."""
    from pyscf import dft, gto

    side = int(np.ceil(nwaters ** (1 / 3) - 1e-9))
    cells = [(i, j, k) for i in range(side) for j in range(side) for k in range(side)]
    atoms = [(el, tuple(np.add(xyz, np.multiply(c, 2.9)))) for c in cells[:nwaters] for el, xyz in WATER]
    mol = gto.M(atom=atoms, basis=basis, verbose=0)
    mf = dft.RKS(mol, xc="lda").density_fit()
    mf.grids.level = 0
    S = mf.get_ovlp()
    F = mf.get_fock(dm=mf.get_init_guess())
    x = mf.check_linear_dependency(S)
    return mf, F, S, x, mol.nelectron // 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--waters", type=int, default=16)
    ap.add_argument("--basis", default="6-31g")
    ap.add_argument("--method", default="canonical")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    ctx = tessel.Context(comm)
    mf, F, S, x, nocc = fock_of_water(args.waters, args.basis) if ctx.rank == 0 else (None,) * 5
    F, x, nocc = comm.bcast((F, x, nocc), root=0)
    step = DensityStep(ctx, nocc, args.method)
    t_pyscf, t_tessel, t_purify = [], [], []
    for _ in range(args.repeat):
        if ctx.rank == 0:
            t = time.perf_counter()
            e, c = mf.eig(F, S, x=x)
            t_pyscf.append(time.perf_counter() - t)
        ctx.barrier()
        t = time.perf_counter()
        record = step.run(F, x)
        t_tessel.append(comm.allreduce(time.perf_counter() - t, op=MPI.MAX))
        t_purify.append(record.seconds["purify"])
    if ctx.rank == 0:
        d_ref = c[:, :nocc] @ c[:, :nocc].T
        diff = np.abs(record.density - d_ref).max()
        med = np.median
        print(f"waters {args.waters} {args.basis}: n = {F.shape[0]}, nocc = {nocc}, gap = "
              f"{e[nocc] - e[nocc - 1]:.3f} Eh, {ctx.size} ranks: pyscf eig {med(t_pyscf):.3f} s, "
              f"tessel step {med(t_tessel):.3f} s (purify {med(t_purify):.3f} s, "
              f"{record.result['iterations']} iterations), ratio {med(t_tessel) / med(t_pyscf):.1f}, "
              f"max|dD| {diff:.1e}", flush=True)


if __name__ == "__main__":
    main()
