"""The cost of the Python binding: tessel.multiply vs dense::multiply alone, same process.

    source scripts/mpi-env.sh
    PYTHONPATH=build/python mpirun -np 4 /usr/bin/python3 bench/python_overhead.py \
        [--n 2048] [--repeat 7] [--algorithm auto] [--json out.json]

Both calls multiply the same n x n x n float64 matrices (block-cyclic 128 x 128 on the most
square grid) into the same C: `tessel.multiply` (argument checks, ledger snapshot, report
dict) and `tessel._testing.multiply_raw` (dense::multiply and nothing else). They alternate,
each after a barrier, each timed from Python the same way (the slowest rank's MPI.Wtime); one
untimed warm-up of each first. Prints the medians and the ratio python / C++ (target <= 1.05
for n = 2048 on 4 ranks, issue 12). Not a test: run it on an idle machine.
"""
import argparse
import json
import statistics

import numpy as np
from mpi4py import MPI

import tessel


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--nb", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--algorithm", default="auto")
    ap.add_argument("--json")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    ctx = tessel.Context(comm)
    n = args.n
    lay = tessel.Layout.block_cyclic(ctx, n, n, args.nb, args.nb)
    A, B, C = (tessel.DistMatrix(ctx, lay) for _ in range(3))
    rng = np.random.default_rng(comm.Get_rank())
    A.local[:] = rng.random(A.local.shape)
    B.local[:] = rng.random(B.local.shape)

    def timed(call):
        comm.Barrier()
        t0 = MPI.Wtime()
        call()
        return comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)

    py_call = lambda: tessel.multiply(ctx, A, B, C, algorithm=args.algorithm)  # noqa: E731
    cxx_call = lambda: tessel._testing.multiply_raw(ctx, A, B, C, algorithm=args.algorithm)  # noqa: E731
    timed(py_call)
    timed(cxx_call)
    t_py, t_cxx = [], []
    for _ in range(args.repeat):
        t_py.append(timed(py_call))
        t_cxx.append(timed(cxx_call))
    med_py, med_cxx = statistics.median(t_py), statistics.median(t_cxx)
    out = {"tool": "python_overhead", "n": n, "ranks": comm.Get_size(), "nb": args.nb,
           "algorithm": args.algorithm, "python_s": t_py, "cxx_s": t_cxx,
           "median_python_s": med_py, "median_cxx_s": med_cxx, "ratio": med_py / med_cxx}
    if comm.Get_rank() == 0:
        print(f"n = {n}, {comm.Get_size()} ranks: python {med_py:.6f} s, C++ {med_cxx:.6f} s, "
              f"ratio {med_py / med_cxx:.4f} (median of {args.repeat})")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
