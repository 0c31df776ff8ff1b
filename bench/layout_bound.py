#!/usr/bin/env python3
"""layout_bound.py: a lower bound on the words the busiest rank must receive in C = A B when
A, B and C start and end in the block-cyclic layout a pdgemm_ caller gives (every schedule,
not only tessel's plans), by cut-set arguments solved as a linear programme.

  python3 bench/layout_bound.py --m 65536 --n 512 --k 512 --grid 2x4 --nb 128 [--mb MB]

The model. Words are numbers; a message carries linear combinations of the values its sender
has (every BLAS- and MPI-based schedule is of this kind). Let x[s][d] be the words rank s sends
to rank d over the whole multiply and S any proper subset of the ranks. The ranks in S must
end holding their part of C; what they lack is a linear function of the inputs held outside
S, and every word that crosses into S carries at most one dimension of it, so

    sum over s not in S, d in S of x[s][d]  >=  rank of that function.

Two relaxations give ranks that are easy to count (each only makes the problem easier, so
each is a valid lower bound for the same cut, and so is their maximum):

- B known to every rank: for row i of C, the entries C(i, J) that S owns depend on the
  entries A(i, K) held outside S through B(K, J), of rank min(|J|, |K|) for generic B; rows
  are independent, so the cut needs sum_i min(|J_S(i)|, |K_out(i)|).
- A known to every rank: the same by columns, sum_j min(|I_S(j)|, |K_out(j)|).

The programme: minimise t subject to sum_s x[s][d] <= t for every rank d, x >= 0, and the
cut constraint for every S (2^p - 2 of them: p <= 16 or so). t is then a lower bound on the
words received by the busiest rank, for any schedule in the model. It ignores B (A) entirely
in the first (second) relaxation, so it is tight only where one operand dominates the traffic
(tall-skinny A and C); where both operands must meet (a long k), it is weak, and it says so by
printing a small number.

Layouts: ScaLAPACK's block-cyclic (MB x NB blocks, first process (0, 0), row-major process
grid as BLACS' default), the same for A (m x k), B (k x n) and C (m x n).
"""
import argparse
import itertools
import sys

import numpy as np

try:
    from scipy.optimize import linprog
except ImportError:  # pragma: no cover
    sys.exit("layout_bound.py needs scipy (python3-scipy)")


def owners_1d(n, nb, nprocs):
    """Process index of each of n indices, block-cyclic with blocks of nb from process 0."""
    return (np.arange(n) // nb) % nprocs


def counts(owner, nprocs):
    return np.bincount(owner, minlength=nprocs)


def cut_requirements(m, n, k, pr, pc, mb, nb):
    """Words each cut S (bit mask over ranks r = prow * pc + pcol) must receive, as an array
    indexed by mask; max of the two relaxations."""
    p = pr * pc
    # Rows of C and A live on process rows, columns of C and B on process columns; the k
    # index lives on process columns for A and on process rows for B.
    rowC = owners_1d(m, mb, pr)  # prow of C row i (= A row i: same mb)
    colC = owners_1d(n, nb, pc)  # pcol of C column j (= B column j)
    kA = counts(owners_1d(k, nb, pc), pc)  # A's k columns per process column
    kB = counts(owners_1d(k, mb, pr), pr)  # B's k rows per process row
    nC = counts(colC, pc)  # C's columns per process column
    mC = counts(rowC, pr)  # C's rows per process row
    req = np.zeros(1 << p)
    for mask in range(1, (1 << p) - 1):
        inS = np.array([(mask >> r) & 1 for r in range(p)], dtype=bool).reshape(pr, pc)
        # B known: rows i of process row a: |J_S| = C columns owned in S on row a,
        # |K_out| = A's k columns of row a held outside S.
        b_free = 0
        for a in range(pr):
            J = int(nC[inS[a]].sum())
            Kout = int(kA[~inS[a]].sum())
            b_free += mC[a] * min(J, Kout)
        # A known: columns j of process column c: |I_S| = C rows owned in S on column c,
        # |K_out| = B's k rows of column c held outside S.
        a_free = 0
        for c in range(pc):
            I = int(mC[inS[:, c]].sum())
            Kout = int(kB[~inS[:, c]].sum())
            a_free += nC[c] * min(I, Kout)
        req[mask] = max(b_free, a_free)
    return req


def solve(p, req):
    """min t: cut constraints, receive of every rank <= t. Returns (t, x)."""
    pairs = [(s, d) for s in range(p) for d in range(p) if s != d]
    nv = len(pairs) + 1  # x..., t
    rows, rhs = [], []
    for d in range(p):  # sum_s x[s][d] - t <= 0
        row = np.zeros(nv)
        for v, (s, dd) in enumerate(pairs):
            if dd == d:
                row[v] = 1.0
        row[-1] = -1.0
        rows.append(row)
        rhs.append(0.0)
    for mask in range(1, (1 << p) - 1):  # -sum_{s not in S, d in S} x <= -req(S)
        if req[mask] <= 0:
            continue
        row = np.zeros(nv)
        for v, (s, d) in enumerate(pairs):
            if not (mask >> s) & 1 and (mask >> d) & 1:
                row[v] = -1.0
        rows.append(row)
        rhs.append(-req[mask])
    cost = np.zeros(nv)
    cost[-1] = 1.0
    res = linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=[(0, None)] * nv,
                  method="highs")
    if res.status != 0:
        sys.exit(f"layout_bound.py: the linear programme did not solve: {res.message}")
    return res.x[-1], dict(zip(pairs, res.x[:-1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--m", type=int, required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--grid", default="2x4", help="process grid PRxPC (default 2x4)")
    ap.add_argument("--nb", type=int, default=128, help="column block size (default 128)")
    ap.add_argument("--mb", type=int, default=0, help="row block size (default: nb)")
    ap.add_argument("--compare", type=float, action="append", default=[],
                    help="MB received by the busiest rank of some program: printed as a ratio "
                         "to the bound (repeatable)")
    args = ap.parse_args()
    try:
        pr, pc = (int(x) for x in args.grid.lower().split("x"))
    except ValueError:
        sys.exit(f"layout_bound.py: --grid {args.grid!r}: expected PRxPC, e.g. 2x4")
    mb = args.mb or args.nb
    for name, v in (("--m", args.m), ("--n", args.n), ("--k", args.k), ("--nb", args.nb),
                    ("--mb", mb), ("PR", pr), ("PC", pc)):
        if v < 1:
            sys.exit(f"layout_bound.py: {name} = {v}: expected >= 1")
    p = pr * pc
    if p > 16:
        sys.exit(f"layout_bound.py: {p} ranks: 2^p cuts, expected p <= 16")
    req = cut_requirements(args.m, args.n, args.k, pr, pc, mb, args.nb)
    t, _ = solve(p, req)
    words = int(np.ceil(t - 1e-6))
    print(f"C = A B, {args.m} x {args.n} x {args.k}, {pr}x{pc} grid, blocks {mb}x{args.nb}: "
          f"{2 ** p - 2} cuts")
    print(f"the busiest rank must receive >= {words} words = {words * 8 / 1e6:.2f} MB "
          f"(any schedule whose messages are linear in the values held)")
    for mbytes in args.compare:
        print(f"  {mbytes:.2f} MB: {mbytes / (words * 8 / 1e6):.3f} x the bound")


if __name__ == "__main__":
    main()
