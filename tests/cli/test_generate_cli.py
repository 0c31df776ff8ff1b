#!/usr/bin/env python3
"""`tessel generate water` end to end: the written CP2K CSR files read densely with NumPy
(symmetric H and S, S positive definite, a HOMO-LUMO gap of the generalized problem with
nocc = 4N, block sizes 4 1 1 per molecule), and bad input failing once with exit status 2."""
import argparse, os, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--mpiexec", required=True)
ap.add_argument("--np", type=int, required=True)
ap.add_argument("--tessel", required=True)
ap.add_argument("--mpiexec-flag", action="append", default=[])
args = ap.parse_args()
try:
    import numpy as np
    import scipy.linalg as sl
except ImportError:
    print("SKIP: numpy/scipy not available")
    sys.exit(77)

def run(*extra):
    cmd = [args.mpiexec, "-np", str(args.np), *args.mpiexec_flag, args.tessel, "generate", "water", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

def dense(path, n):
    a = np.zeros((n, n))
    d = np.loadtxt(path, ndmin=2)
    a[d[:, 0].astype(int) - 1, d[:, 1].astype(int) - 1] = d[:, 2]
    return a

ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and cond

with tempfile.TemporaryDirectory() as tmp:
    n_mol = 12
    r = run("--molecules", str(n_mol), "--out-dir", tmp)
    check(r.returncode == 0, f"generate exits 0 ({r.stderr.strip()[:200]})")
    if r.returncode == 0:
        sizes = [int(x) for x in open(os.path.join(tmp, "blocksizes.txt")).read().split()]
        check(sizes == [4, 1, 1] * n_mol, "blocksizes.txt is 4 1 1 per molecule")
        n = 6 * n_mol
        S, H = dense(os.path.join(tmp, "S.csr"), n), dense(os.path.join(tmp, "H.csr"), n)
        check(np.abs(S - S.T).max() < 1e-13 and np.abs(H - H.T).max() < 1e-13, "H and S symmetric")
        w = np.linalg.eigvalsh(S)
        check(w[0] > 1e-3, f"S positive definite (lambda_min {w[0]:.4f})")
        e = sl.eigh(H, S, eigvals_only=True)
        gap = e[4 * n_mol] - e[4 * n_mol - 1]
        check(gap > 0.1, f"HOMO-LUMO gap {gap:.4f} Eh with nocc = 4N")
        check(f"{8 * n_mol} electrons" in r.stdout, "prints the electron count")
        # water.xyz: 3N atoms O, H, H per molecule in Angstrom inside the box of the comment line,
        # bonds 0.9572 A (minimum image), the box edge (N / 0.0334)^(1/3)
        lines = open(os.path.join(tmp, "water.xyz")).read().splitlines()
        box = float(lines[1].split("edge ")[1].split()[0])
        sym = [l.split()[0] for l in lines[2:]]
        xyz = np.array([[float(v) for v in l.split()[1:4]] for l in lines[2:]])
        check(int(lines[0]) == 3 * n_mol and sym == ["O", "H", "H"] * n_mol, "water.xyz atoms O H H")
        check(abs(box - (n_mol / 0.0334) ** (1 / 3)) < 1e-3 and (xyz >= 0).all() and (xyz < box).all(),
              f"water.xyz in the box ({box:.3f} A)")
        d = xyz[1::3] - xyz[0::3]
        d -= box * np.round(d / box)
        check(np.abs(np.linalg.norm(d, axis=1) - 0.9572).max() < 1e-5, "water.xyz O-H bonds 0.9572 A")
    r = run("--molecules", "0")
    check(r.returncode == 2 and r.stderr.count("tessel: error:") == 1 and "0 molecules" in r.stderr,
          "--molecules 0 fails once with status 2")
    r = run("--out-dir", os.path.join(tmp, "missing"))
    check(r.returncode == 2 and r.stderr.count("tessel: error:") == 1 and "--out-dir" in r.stderr,
          "a missing --out-dir fails once with status 2")
sys.exit(0 if ok else 1)
