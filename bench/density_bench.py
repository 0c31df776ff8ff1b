#!/usr/bin/env python3
"""Linear-scaling study of `tessel density` (issue 9) on generated water boxes.

  bench/density_bench.py [--config local:4] [--sizes 500,1000,2000,4000,8000,16000] \
      [--methods sign,trs4] [--eps 1e-6] [--dense-max 2000] [--fit-from 1000] \
      [--out results.json] [--markdown table.md]

For every size N and method: `tessel density --generate water:N --eps EPS --json` (launched by
benchlib.Config: local:NP or nc:NODESxPPN), recording time, multiplications, sign evaluations,
band energy, blocks of P per block row (atom), the bytes received per rank (max) and the peak
memory per rank (getrusage ru_maxrss, max over ranks). With --dense-max, the same systems up to
that size also with --dense (the same solvers on dense matrices: O(N^3)), and the crossover
(the smallest N where the block-sparse run is faster, or a log-log extrapolation of the two fits
when the measured sizes do not reach it). Prints a table and, per method, the exponents of time
and memory ~ N^k fitted by least squares on log-log over the sizes at or above --fit-from.
Run it on an idle machine (the lead's benchmarks): timings of a loaded machine say little.
"""
import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, Config, emit_table, markdown_table  # noqa: E402


def run(a, place, n, method, dense, work):
    js = os.path.join(work, f"d_{n}_{method}_{int(dense)}.json")
    prog = [a.tessel, "density", "--generate", f"water:{n}", "--method", method, "--eps", str(a.eps),
            "--algorithm", a.algorithm, "--json", js] + a.tessel_args.split()
    if dense:
        prog.append("--dense")
    log = os.path.join(work, f"d_{n}_{method}_{int(dense)}.log")
    p, wall, _ = place.run(place.command(prog, env=["-x", "OMP_NUM_THREADS=1"]), a.timeout, log)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(prog)}\n{p.stdout[-1500:]}{p.stderr[-1500:]}")
    r = json.load(open(js))
    r["n_molecules"], r["dense"], r["wall"] = n, dense, wall
    if a.out:  # partial results survive an interrupted study
        Path(a.out + ".partial").open("a").write(json.dumps(r) + "\n")
    return r


def fit(xs, ys):
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / den if den > 0 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessel", default=str(ROOT / "build" / "apps" / "tessel" / "tessel"))
    ap.add_argument("--config", default="local:4")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--delay", default="50us")
    ap.add_argument("--timeout", type=float, default=4 * 3600)
    ap.add_argument("--sizes", default="500,1000,2000,4000,8000,16000")
    ap.add_argument("--methods", default="sign,trs4")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--algorithm", default="cannon")
    ap.add_argument("--dense-max", type=int, default=0)
    ap.add_argument("--fit-from", type=int, default=0)
    ap.add_argument("--out", default="")
    ap.add_argument("--markdown", default="")
    ap.add_argument("--tessel-args", default="",
                    help="more options for every tessel density run, e.g. '--row-panels 4 --memory 5000'")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    place = Config(a.config, "density_bench")
    place.bring_up(a.rate, a.delay)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as work:
            for method in a.methods.split(","):
                for n in sizes:
                    rows.append(run(a, place, n, method, False, work))
                    if a.dense_max and n <= a.dense_max:
                        rows.append(run(a, place, n, method, True, work))
    finally:
        place.down()
    cells = []
    for r in rows:
        per_row = r["p_blocks"] / r["block_rows"] if not r["dense"] else float("nan")
        cells.append([r["method"], r["n_molecules"], "dense" if r["dense"] else "sparse", f"{r['seconds']:.3f}",
                      r["multiplications"], r["sign_evaluations"], f"{per_row:.1f}",
                      f"{r['bytes_per_rank_max'] / 1e6:.1f}", f"{r['maxrss_bytes_max'] / 1e6:.1f}",
                      f"{r['band_energy']:.8f}"])
    lines = markdown_table(["method", "N", "kind", "seconds", "mult", "sign ev", "P blocks/row", "MB recv/rank",
                            "MB peak/rank", "band energy"], cells)
    for method in a.methods.split(","):
        sp = [r for r in rows if r["method"] == method and not r["dense"] and r["n_molecules"] >= a.fit_from]
        de = [r for r in rows if r["method"] == method and r["dense"]]
        if len(sp) >= 2:
            kt = fit([r["n_molecules"] for r in sp], [r["seconds"] for r in sp])
            km = fit([r["n_molecules"] for r in sp], [r["maxrss_bytes_max"] for r in sp])
            lines.append(f"\n{method}: time ~ N^{kt:.2f}, peak memory per rank ~ N^{km:.2f} over N = "
                         f"{[r['n_molecules'] for r in sp]} (target: time exponent <= 1.2 above the crossover)")
        if de:
            faster = [r["n_molecules"] for r in de for q in rows
                      if q["method"] == method and not q["dense"] and q["n_molecules"] == r["n_molecules"]
                      and q["seconds"] < r["seconds"]]
            if faster:
                lines.append(f"{method}: block-sparse faster than dense from N = {min(faster)} (measured)")
            elif len(de) >= 2 and len(sp) >= 2:
                ls, ld = ([math.log(r["n_molecules"]) for r in g] for g in (sp, de))
                ts, td = ([math.log(r["seconds"]) for r in g] for g in (sp, de))
                ks, kd = fit([r["n_molecules"] for r in sp], [r["seconds"] for r in sp]), \
                    fit([r["n_molecules"] for r in de], [r["seconds"] for r in de])
                cs = sum(t - ks * x for t, x in zip(ts, ls)) / len(ls)
                cd = sum(t - kd * x for t, x in zip(td, ld)) / len(ld)
                if kd > ks:
                    lines.append(f"{method}: crossover at N ~ {math.exp((cs - cd) / (kd - ks)):.0f} molecules "
                                 f"(extrapolated: sparse N^{ks:.2f}, dense N^{kd:.2f})")
    emit_table(lines, rows, a.markdown, a.out)


if __name__ == "__main__":
    main()
