"""PySCF-style Fock matrix -> density matrix by purification with tessel -> check with eigh.

    mpirun -np 4 python3 python/examples/purify_fock.py [TAG] [--data DIR]

TAG names a system of ../shared/data/pyscf (default h2o32_sto3g_rhf, n = 224): its
<TAG>_F_orth.npy is the Fock matrix in an orthogonal basis, <TAG>.json gives nocc. The matrix
is read with collective MPI-IO straight into a block-cyclic layout, purified (canonical
purification around SymmSquareCube), and rank 0 compares D with the projector onto the nocc
lowest eigenvectors from numpy.linalg.eigh, and the band energy with 2 * sum of those
eigenvalues.
"""
import argparse
import json
import pathlib
import sys

import numpy as np
from mpi4py import MPI

import tessel

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "pyscf"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tag", nargs="?", default="h2o32_sto3g_rhf")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="folder of <tag>_F_orth.npy and <tag>.json")
    ap.add_argument("--method", default="canonical", choices=["canonical", "trs2", "trs4"])
    args = ap.parse_args()

    ctx = tessel.Context(MPI.COMM_WORLD)
    data = pathlib.Path(args.data)
    fock = data / f"{args.tag}_F_orth.npy"
    if not (data / f"{args.tag}.json").is_file():  # every rank sees the same files
        if ctx.rank == 0:
            print(f"purify_fock: {data / (args.tag + '.json')} not found: give --data DIR "
                  "(the folder ../shared/data/pyscf of the project)", file=sys.stderr)
        return 2
    meta = json.loads((data / f"{args.tag}.json").read_text())
    nocc = meta["nocc"]

    # Collective read into a 32 x 32 block-cyclic layout over all ranks.
    n = meta["n"]
    layout = tessel.Layout.block_cyclic(ctx, n, n, mb=32, nb=32)
    F = tessel.DistMatrix.read_npy(ctx, str(fock), layout=layout)

    def on_step(step):
        if ctx.rank == 0:
            print(f"  step {step['iteration']:3d}  ||D - D^2||_F = {step['idempotency_error']:.3e}"
                  f"  tr D = {step['trace']:.6f}  E_band = {step['band_energy']:.10f}")

    if ctx.rank == 0:
        print(f"{args.tag}: n = {n}, nocc = {nocc}, {ctx.size} ranks, {args.method} purification")
    D, res = tessel.purify(ctx, F, nocc, method=args.method, on_step=on_step)
    stats = ctx.ledger()
    D_full = D.to_numpy(root=0)
    F_full = F.to_numpy(root=0)

    if ctx.rank == 0:
        w, v = np.linalg.eigh(F_full)
        D_ref = v[:, :nocc] @ v[:, :nocc].T
        e_ref = 2 * w[:nocc].sum()
        rel = np.linalg.norm(D_full - D_ref) / np.linalg.norm(D_ref)
        print(f"iterations {res['iterations']}, mesh {res['mesh']}, {res['seconds']:.3f} s")
        print(f"||D - D_eigh||_F / ||D_eigh||_F = {rel:.2e}")
        print(f"band energy {res['band_energy']:.12f} Eh, eigh {e_ref:.12f} Eh, "
              f"difference {abs(res['band_energy'] - e_ref):.2e}")
        print(f"HOMO-LUMO gap {w[nocc] - w[nocc - 1]:.4f} Eh")
        print("bytes received per rank (max) by phase:")
        for phase, s in stats.items():
            if s["recv_bytes"]["max"] or s["coll_bytes"]["max"] or s["shm_bytes"]["max"]:
                print(f"  {phase:26s} p2p {s['recv_bytes']['max']:10.0f}  collective {s['coll_bytes']['max']:10.0f}"
                      f"  node-shared {s['shm_bytes']['max']:10.0f}")
        ok = rel < 1e-8 and abs(res["band_energy"] - e_ref) < 1e-8 * abs(e_ref)
        print("OK" if ok else "MISMATCH")
        status = 0 if ok else 1
    else:
        status = 0
    return ctx.comm.bcast(status, root=0)


if __name__ == "__main__":
    sys.exit(main())
