#!/usr/bin/env python3
"""End-to-end tests of `tessel stencil` under mpirun (Python 3 standard library only).

Bad inputs (spacing <= 0, an unsupported order, more ranks than points, an empty mesh, an
unreadable or malformed .xyz, more states than points, unknown strategies, an unwritable
--json): exit code 2, one error line from rank 0 naming the option and the value, no hang, no
file left behind (the contract checked by run_cli_tests.py, whose helpers this script uses).
Good inputs: the built-in default converges to the oscillator's shells; the particle in a box at
order 2 gives the exact eigenvalues of the discrete Laplacian, sum_axes (1 - cos(pi m h/L))/h^2,
and every exchange strategy and both orders give bitwise the same eigenvalues; an .xyz molecule
with the soft-Coulomb potential converges.

Usage: run_stencil_cli_tests.py --mpiexec mpirun --flavour openmpi
           --mpiexec-flag=--oversubscribe --tessel build/apps/tessel/tessel --np 2,5
"""
import argparse
import json
import math
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_cli_tests import Runner, Tally, check_error_case, run_ok  # noqa: E402

STRATEGIES = ["alltoallv", "ialltoallv", "neighbor", "persistent", "p2p"]


def error_cases(runner, tally, nranks, work, persistent_ok):
    counter = [0]

    def case():
        counter[0] += 1
        d = os.path.join(work, f"np{nranks}_serr{counter[0]:02d}")
        os.makedirs(d)
        return d

    def write(d, name, text):
        p = os.path.join(d, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    tag = f"np{nranks}"
    quick = ["--box", "2", "--spacing", "0.5", "--states", "2"]
    simple = [
        (["--spacing", "0"], ["--spacing 0"]),
        (["--spacing", "-0.5"], ["--spacing -0.5"]),
        (["--order", "3"], ["--order 3", "2, 4, 6, 8 or 12"]),
        (["--order", "10"], ["--order 10"]),
        (["--box", "2", "--spacing", "0.3"], ["--spacing 0.3", "--box 2", "integer"]),
        (["--box", "2", "--spacing", "0.5", "--states", "30"], ["states 30", "27 points"]),
        (["--states", "0"], ["--states 0"]),
        (quick + ["--exchange", "allgather"], ["--exchange 'allgather'", "neighbor"]),
        (quick + ["--partitioner", "scotch"], ["--partitioner 'scotch'", "metis"]),
        (quick + ["--potential", "morse"], ["--potential 'morse'", "harmonic"]),
        (quick + ["--overlap", "maybe"], ["--overlap 'maybe'"]),
        (quick + ["--solver", "davidson"], ["--solver 'davidson'", "lobpcg"]),
        (["--xyz", "/nonexistent/dir/mol.xyz", "--radius", "3"], ["--xyz /nonexistent/dir/mol.xyz", "cannot read"]),
        (["--xyz", "mol.xyz", "--box", "4"], ["--xyz mol.xyz", "--box 4"]),
    ]
    if nranks > 1:
        # one interior point: more ranks than points
        simple.append((["--box", "1", "--spacing", "0.5", "--states", "1"], ["more ranks than points", f"{nranks} ranks"]))
    if not persistent_ok:
        simple.append((quick + ["--exchange", "persistent"], ["--exchange persistent", "MPI_Neighbor_alltoallv_init"]))
    for args, must in simple:
        d = case()
        check_error_case(runner, tally, nranks, f"{tag} stencil error: {' '.join(args)}",
                         ["stencil"] + args + ["--json", os.path.join(d, "out.json")], d, must=must)
    # .xyz files: malformed line, bad count, no atoms, radius 0 (empty mesh), truncated
    files = [
        ("bad.xyz", "2\nc\nH 0 0 0\nH 1.0 x 0\n", ["--radius", "3"], ["line 4", "symbol x y z"]),
        ("count.xyz", "two\nc\nH 0 0 0\n", ["--radius", "3"], ["line 1", "number of atoms"]),
        ("none.xyz", "0\nnothing\n", ["--radius", "3"], ["no atoms"]),
        ("h.xyz", "1\nc\nH 0 0 0\n", ["--radius", "0"], ["--radius 0", "empty mesh"]),
        ("short.xyz", "3\nc\nH 0 0 0\n", ["--radius", "3"], ["expected 3 atoms"]),
    ]
    for name, text, extra, must in files:
        d = case()
        p = write(d, name, text)
        check_error_case(runner, tally, nranks, f"{tag} stencil error: {name} {' '.join(extra)}",
                         ["stencil", "--xyz", p] + extra + ["--json", os.path.join(d, "out.json")], d,
                         must=[f"--xyz {p}" if "--radius 0" not in must else "--radius 0"] + must,
                         extra_paths=[os.path.join(d, "out.json")])
    d = case()
    check_error_case(runner, tally, nranks, f"{tag} stencil error: unwritable --json",
                     ["stencil"] + quick + ["--json", "/nonexistent/dir/out.json"], d, must=["--json", "/nonexistent/dir/out.json"])


def load(path, problems):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        problems.append(f"cannot read {path}: {e}")
        return None


def positive_cases(runner, tally, nranks, work, persistent_ok):
    tag = f"np{nranks}"
    d = os.path.join(work, f"np{nranks}_sok")
    os.makedirs(d)
    # 1. The built-in default: the oscillator's shells 1.5, 2.5 (x3), 3.5 (x6) within 2e-2.
    problems = []
    js = os.path.join(d, "default.json")
    run = run_ok(runner, nranks, ["stencil", "--json", js], d, problems)
    j = load(js, problems) if run.rc == 0 else None
    if j:
        want = [1.5] + [2.5] * 3 + [3.5] * 6
        got = j["eigenvalues"]
        if len(got) != 10 or max(abs(a - b) for a, b in zip(got, want)) > 2e-2:
            problems.append(f"eigenvalues {got} not within 2e-2 of {want}")
        if not j["converged"] or j["partition"]["points_per_rank"]["min"] < 1:
            problems.append("not converged or an empty rank")
    out = "\n".join(t for _, t in run.out_lines)
    for token in ["iter    1", "analytic", "hidden", "neighbours per rank"]:
        if token not in out:
            problems.append(f"stdout lacks {token!r}")
    tally.report(f"{tag} stencil default (harmonic oscillator, irregular mesh)", problems, run)

    # 2. Particle in a box at order 2: exact discrete eigenvalues; every strategy and order the same bits.
    L, h = 4.0, 0.5
    e1 = lambda m: (1 - math.cos(math.pi * m * h / L)) / (h * h)  # noqa: E731
    exact = [3 * e1(1)] + [2 * e1(1) + e1(2)] * 3
    first = None
    for s in STRATEGIES:
        if s == "persistent" and not persistent_ok:
            continue
        for ov in ["on", "off"]:
            problems = []
            js = os.path.join(d, f"box_{s}_{ov}.json")
            run = run_ok(runner, nranks, ["stencil", "--box", "4", "--spacing", "0.5", "--order", "2", "--states", "4",
                                          "--tol", "1e-9", "--exchange", s, "--overlap", ov, "--repeat", "1",
                                          "--partitioner", "geometric" if ov == "off" else "metis", "--json", js],
                         d, problems)
            j = load(js, problems) if run.rc == 0 else None
            if j:
                got = j["eigenvalues"]
                if max(abs(a - b) for a, b in zip(got, exact)) > 1e-8:
                    problems.append(f"eigenvalues {got} differ from the exact discrete {exact}")
                key = (ov == "off")  # the partitioner differs between orders: compare within each
                if first is None:
                    first = {}
                if key in first and first[key] != got:
                    problems.append(f"eigenvalues {got} are not bitwise those of the first strategy {first[key]}")
                first.setdefault(key, got)
            tally.report(f"{tag} stencil box order 2 --exchange {s} --overlap {ov}", problems, run)

    # 3. LOBPCG on the box: the same exact discrete eigenvalues.
    problems = []
    js = os.path.join(d, "box_lobpcg.json")
    run = run_ok(runner, nranks, ["stencil", "--box", "4", "--spacing", "0.5", "--order", "2", "--states", "4",
                                  "--tol", "1e-9", "--solver", "lobpcg", "--repeat", "1", "--json", js], d, problems)
    j = load(js, problems) if run.rc == 0 else None
    if j and max(abs(a - b) for a, b in zip(j["eigenvalues"], exact)) > 1e-8:
        problems.append(f"LOBPCG eigenvalues {j['eigenvalues']} differ from the exact discrete {exact}")
    tally.report(f"{tag} stencil box order 2 --solver lobpcg", problems, run)

    # 4. A molecule from an .xyz file (Angstrom), soft-Coulomb potential, order 6, with propagation.
    problems = []
    xyz = os.path.join(d, "h2o.xyz")
    with open(xyz, "w") as f:
        f.write("3\nwater\nO 0.000 0.000 0.117\nH 0.000 0.757 -0.467\nH 0.000 -0.757 -0.467\n")
    js = os.path.join(d, "h2o.json")
    run = run_ok(runner, nranks, ["stencil", "--xyz", xyz, "--radius", "3.5", "--spacing", "0.5", "--order", "6",
                                  "--states", "4", "--propagate", "2", "--json", js], d, problems)
    j = load(js, problems) if run.rc == 0 else None
    if j:
        if not j["converged"] or not (j["eigenvalues"][0] < 0):
            problems.append(f"not converged or a ground state {j['eigenvalues'][0]} >= 0 in an attractive potential")
        if j["propagation"]["max_norm_deviation"] > 1e-6:
            problems.append(f"norm deviation {j['propagation']['max_norm_deviation']} after 2 Taylor steps")
    tally.report(f"{tag} stencil --xyz water soft-Coulomb order 6 --propagate 2", problems, run)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--numproc-flag", default="-n")
    ap.add_argument("--mpiexec-flag", action="append", default=[])
    ap.add_argument("--flavour", default="")
    ap.add_argument("--tessel", required=True)
    ap.add_argument("--np", required=True)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--persistent", choices=["yes", "no"], default="no",
                    help="whether this build has MPI_Neighbor_alltoallv_init")
    a = ap.parse_args()
    ranks = [int(x) for x in re.split(r"[,; ]+", a.np.strip()) if x]
    runner = Runner(a.mpiexec, a.numproc_flag, a.mpiexec_flag, os.path.abspath(a.tessel), a.timeout, a.flavour)
    tally = Tally()
    work = tempfile.mkdtemp(prefix="tessel_stencil_cli_")
    try:
        for n in ranks:
            error_cases(runner, tally, n, work, a.persistent == "yes")
            positive_cases(runner, tally, n, work, a.persistent == "yes")
    finally:
        if tally.failed:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if tally.failures:
        print("failed: " + "; ".join(tally.failures))
    print(f"{tally.passed} passed, {tally.failed} failed", flush=True)
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
