"""tessel from Python in a few lines, with no input files: a distributed multiply and a
purification, each checked against NumPy on rank 0.

    mpirun -np 4 python python/examples/quickstart.py [--n 600]

A is random (n x n); C = A A^T by tessel.multiply. F is a random symmetric "Fock" matrix with
a gap between its n/2 lowest eigenvalues and the rest; D = the density matrix of its n/2
lowest states by tessel.purify (canonical purification around SymmSquareCube), compared with
the projector from numpy.linalg.eigh. Exit status 1 if either check fails.
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI

import tessel


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=600)
    n = ap.parse_args().n
    nocc = n // 2
    ctx = tessel.Context(MPI.COMM_WORLD)
    root = ctx.rank == 0
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)) if root else None
    if root:  # F = Q diag(e) Q^T with a gap of 0.5 between state nocc-1 and nocc
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        e = np.sort(rng.uniform(-1, 1, n))
        e[nocc:] += 0.5
        f = (q * e) @ q.T
        f = (f + f.T) / 2
    else:
        f = None

    A = tessel.DistMatrix.from_numpy(ctx, a)  # scatter from rank 0
    C, report = tessel.multiply(ctx, A, A, transb="T")
    c = C.to_numpy(root=0)
    F = tessel.DistMatrix.from_numpy(ctx, f)
    D, result = tessel.purify(ctx, F, nocc)
    d = D.to_numpy(root=0)

    if root:
        mult_err = np.linalg.norm(c - a @ a.T) / np.linalg.norm(a @ a.T)
        w, v = np.linalg.eigh(f)
        d_ref = v[:, :nocc] @ v[:, :nocc].T
        dens_err = np.linalg.norm(d - d_ref)
        print(f"multiply: {report['executed']}, relative error {mult_err:.1e}, "
              f"{report['recv_bytes']} bytes received")
        print(f"purify: {result['iterations']} iterations, band energy {result['band_energy']:.10f} "
              f"(eigh: {2 * w[:nocc].sum():.10f}), ||D - D_eigh||_F {dens_err:.1e}")
        ok = mult_err < 1e-12 and dens_err < 1e-8
        print("PASSED" if ok else "FAILED")
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
