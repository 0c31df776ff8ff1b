#!/usr/bin/env python3
"""Linear-scaling study of `tessel density` (issue 9) on generated water boxes.

  bench/density_bench.py --tessel build/apps/tessel/tessel --np 4 --sizes 500,1000,2000 \
      --methods sign,trs4 --eps 1e-6 [--dense-max 1000] [--out results.json]

For every size N and method: `tessel density --generate water:N --eps EPS --json`, recording
time, multiplications, sign evaluations, band energy, blocks of P per block row and the bytes
received per rank (max). With --dense-max, the same systems up to that size also with --dense
(the O(N^3) crossover). Prints a table and, per method, the exponent of time ~ N^k fitted by
least squares on log-log over the sizes at or above --fit-from (default: all). Run it on an idle
machine (the lead's benchmarks): timings of a loaded machine say little.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile


def run(a, n, method, dense, work):
    js = os.path.join(work, f"d_{n}_{method}_{int(dense)}.json")
    cmd = [a.mpiexec, "-np", str(a.np)] + a.mpiexec_flag + [a.tessel, "density", "--generate", f"water:{n}",
                                                            "--method", method, "--eps", str(a.eps),
                                                            "--algorithm", a.algorithm, "--json", js]
    if dense:
        cmd.append("--dense")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
    r = json.load(open(js))
    r["n_molecules"], r["dense"] = n, dense
    return r


def fit(xs, ys):
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / den if den > 0 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessel", required=True)
    ap.add_argument("--mpiexec", default="mpirun")
    ap.add_argument("--mpiexec-flag", action="append", default=[])
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--sizes", default="500,1000,2000,4000,8000,16000")
    ap.add_argument("--methods", default="sign,trs4")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--algorithm", default="cannon")
    ap.add_argument("--dense-max", type=int, default=0)
    ap.add_argument("--fit-from", type=int, default=0)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for method in a.methods.split(","):
            for n in sizes:
                rows.append(run(a, n, method, False, work))
                if a.dense_max and n <= a.dense_max:
                    rows.append(run(a, n, method, True, work))
    print(f"{'method':>6} {'N':>7} {'kind':>6} {'seconds':>9} {'mult':>6} {'signs':>5} {'P blocks/row':>12} "
          f"{'MB/rank':>9} {'band energy':>18}")
    for r in rows:
        per_row = r["p_blocks"] / (3 * r["n_molecules"]) if not r["dense"] else float("nan")
        print(f"{r['method']:>6} {r['n_molecules']:>7} {'dense' if r['dense'] else 'sparse':>6} "
              f"{r['seconds']:>9.3f} {r['multiplications']:>6} {r['sign_evaluations']:>5} {per_row:>12.1f} "
              f"{r['bytes_per_rank_max'] / 1e6:>9.2f} {r['band_energy']:>18.8f}")
    for method in a.methods.split(","):
        pts = [(r["n_molecules"], r["seconds"]) for r in rows
               if r["method"] == method and not r["dense"] and r["n_molecules"] >= a.fit_from]
        if len(pts) >= 2:
            print(f"{method}: time ~ N^{fit(*zip(*pts)):.2f} over N = {[p[0] for p in pts]}")
    if a.out:
        json.dump(rows, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
