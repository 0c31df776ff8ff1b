#!/usr/bin/env python3
"""compare_openmpi.py — the same tessel cases under SMPI (build-smpi/) and under Open MPI
(build/), at the same rank count: the answers and the ledger's bytes must be equal.

    tests/smpi/compare_openmpi.py --smpi-tessel build-smpi/apps/tessel/tessel \\
        --openmpi-tessel build/apps/tessel/tessel --platform PLATFORM.xml --np 4 \\
        [--cases spgemm-cannon,spgemm-rma25d,gemm,stencil-alltoallv,gemm-skip,spgemm-skip,
         spgemm-skip-l4,spgemm-table]
        [--water N]

A simulated run executes the program's own messages and local kernels; only time is
modelled. So every count of the ledger (bytes and messages per phase, max/mean/total over
ranks) must be the same number, and the results must agree: the block-sparse product's
blocks and values and its error against the dense multiply, the dense product's Freivalds
check, the stencil's eigenvalues and halo traffic. The case spgemm-table times the Open MPI
run's block products by shape (--measure-product-times) and runs the SMPI side under
--simulate-compute skip with that table (--product-times): no product runs there, so beside
the equal ledger and counts the charge summed over the ranks must be, to rounding, the sum over
shapes of the Open MPI run's products of that shape times the table's entry (read here from
the file). The case spgemm-skip runs the SMPI side
with --simulate-compute skip (block products sampled, the rest charged): the ledger, the
filter's decisions and the counts must be equal, and some products must have been charged
without running. The case gemm-skip runs the SMPI side with
--simulate-compute skip (no product computed, the flops charged to the simulated clock) and
Open MPI computing for real: the ledger and the plan must still be equal, the SMPI side must
say it skipped, and its simulated time must hold at least the charged flops at the platform's
host speed. Open MPI runs with TESSEL_NODE_SIZE=1,
one rank per node as on the simulated platform (where MPI_COMM_TYPE_SHARED splits per host),
and without TESSEL_MACHINE on either side, so both price plans with the same defaults.

Exit 0: all equal; 1: a difference (printed); 77: skipped, because the Open MPI build or
smpirun is missing (ctest reports it as skipped, not passed).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import smpi_run  # noqa: E402
from mpi_env import mpi_env  # noqa: E402


def cases(water):
    """name -> (tessel arguments, the JSON keys that must be equal, checker of the answers)."""
    spgemm = ["spgemm", "--generate", f"water:{water}", "--eps", "1e-6", "--verify",
              "--repeat", "1"]
    return {
        "spgemm-cannon": spgemm + ["--algorithm", "cannon"],
        "spgemm-rma25d": spgemm + ["--algorithm", "rma25d", "--layers", "1"],
        "gemm": ["gemm", "--m", "600", "--n", "500", "--k", "700", "--verify", "--repeat", "1"],
        "stencil-alltoallv": ["stencil", "--exchange", "alltoallv"],
        "gemm-skip": ["gemm", "--m", "1500", "--n", "1300", "--k", "1700", "--repeat", "2"],
        # large enough that the kernel's batches exceed its sample (3,072 products of a shape)
        "spgemm-skip": ["spgemm", "--generate", "water-ss:1000", "--eps", "1e-6", "--repeat", "1",
                        "--algorithm", "cannon"],
        # rma25d with L = 4 layers: the partial panels of the other layers sampled with their
        # values stored nowhere (AccValues::Virtual), their wire sizes a computing run's
        "spgemm-skip-l4": ["spgemm", "--generate", "water-ss:1000", "--eps", "1e-6", "--repeat",
                           "1", "--algorithm", "rma25d", "--layers", "4"],
        "spgemm-table": ["spgemm", "--generate", f"water-ss:{water}", "--eps", "1e-6",
                         "--repeat", "1", "--algorithm", "rma25d"],
    }


# Arguments of the SMPI side only (the Open MPI side computes for real).
SMPI_ONLY = {"spgemm-table": ["--simulate-compute", "skip", "--product-times", "{table}"],
             "gemm-skip": ["--simulate-compute", "skip"],
             "spgemm-skip": ["--simulate-compute", "skip"],
             "spgemm-skip-l4": ["--simulate-compute", "skip"]}
# Arguments of the Open MPI side only ({table}: a file in the run's temporary folder).
OMPI_ONLY = {"spgemm-table": ["--measure-product-times", "{table}"]}


def read_table(path):
    """The product-times file, parsed here (not by tessel): {(m, n, k): seconds}."""
    t = {}
    with open(path) as f:
        for line in f:
            if line.strip() and not line.lstrip().startswith("#"):
                m, n, k, s = line.split()
                t[(int(m), int(n), int(k))] = float(s)
    return t


def compare_table(o, s, table):
    """spgemm-table: the SMPI side's charge, summed over ranks, is the Open MPI run's product
    count of every shape times the table's seconds for it (no product sampled or run)."""
    bad = []
    t = read_table(table)
    timed = o.get("products_timed") or []
    if not timed:
        bad.append("Open MPI: --measure-product-times reported no timed products")
    expect = sum(x["products"] * t[(x["m"], x["n"], x["k"])] for x in timed)
    n = sum(x["products"] for x in timed)
    if n != o["blocks_multiplied"]:
        bad.append(f"Open MPI: {n} products timed by shape, {o['blocks_multiplied']} multiplied")
    if not close(s.get("charged_s_sum", 0), expect, rel=1e-9):
        bad.append(f"SMPI charged_s_sum {s.get('charged_s_sum')!r}, expected {expect!r} "
                   f"(the table's seconds times the products of each shape)")
    return bad


def ompi_env():
    """scripts/mpi-env.sh, one rank per node as on the simulated platform, no machine file."""
    env = mpi_env(TESSEL_NODE_SIZE="1")
    env.pop("TESSEL_MACHINE", None)
    return env


def close(a, b, rel=1e-12, abs_=1e-14):
    return a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float)) and
                      math.isfinite(a) and math.isfinite(b) and
                      abs(a - b) <= max(abs_, rel * max(abs(a), abs(b))))


def diff(path, a, b, out, rel=1e-12):
    """Appends to out every leaf where a and b differ (numbers: within rel)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'Open MPI' if k in a else 'SMPI'}")
            else:
                diff(f"{path}.{k}", a[k], b[k], out, rel)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} entries under Open MPI, {len(b)} under SMPI")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(f"{path}[{i}]", x, y, out, rel)
    elif not close(a, b, rel):
        out.append(f"{path}: Open MPI {a!r}, SMPI {b!r}")


def nonzero(x):
    """True when some number under x is not 0 (the ledger recorded traffic)."""
    if isinstance(x, dict):
        return any(nonzero(v) for v in x.values())
    if isinstance(x, list):
        return any(nonzero(v) for v in x)
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x != 0


def platform_speed(platform):
    """The node speed (flop/s) of the platform's cluster line (speed="60Gf")."""
    import re
    with open(platform) as f:
        m = re.search(r'<cluster[^>]*\bspeed="([0-9.]+)([GMT]?)f"', f.read())
    return float(m.group(1)) * {"": 1, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)]


def compare_skip(o, s, platform):
    """gemm-skip: the same ledger and plan, the SMPI side skipped (and said so), and its
    simulated time at least the busiest rank's charged flops at the node speed."""
    bad = []
    diff("ledger", o["ledger"], s["ledger"], bad)
    diff("plan", o["plan"], s["plan"], bad)
    diff("executed", o["executed"], s["executed"], bad)
    if (o.get("simulate_compute"), s.get("simulate_compute")) != ("run", "skip"):
        bad.append(f"simulate_compute: Open MPI {o.get('simulate_compute')!r}, "
                   f"SMPI {s.get('simulate_compute')!r} (expected 'run' and 'skip')")
    if s["verify"]["done"]:
        bad.append("SMPI: --verify ran on a skipped product")
    pm, pn, pk = s["plan"]["grid"]
    m, n, k = s["m"], s["n"], s["k"]
    busiest = 2.0 * math.ceil(m / pm) * math.ceil(n / pn) * math.ceil(k / pk)
    least = 2.0 * (m // pm) * (n // pn) * (k // pk) / platform_speed(platform)
    if not s["median_s"] >= least:
        bad.append(f"SMPI median_s {s['median_s']} < the charged flops' time {least} "
                   f"(a rank's {busiest:.3g} flops at most)")
    return bad


def compare_sampled(o, s):
    """spgemm-skip: the block products sampled under SMPI, computed under Open MPI: the same
    ledger and the same filter decisions and counts (they depend on the norms only), the SMPI
    side skipped (and said so) and charged some products without running them."""
    bad = []
    diff("ledger_one_call", o["ledger_one_call"], s["ledger_one_call"], bad)
    for k in ("n", "blocks", "grid", "layers", "ticks", "blocks_multiplied", "blocks_skipped",
              "product_blocks", "product_values", "flops"):
        diff(k, o[k], s[k], bad)
    if (o.get("simulate_compute"), s.get("simulate_compute")) != ("run", "skip"):
        bad.append(f"simulate_compute: Open MPI {o.get('simulate_compute')!r}, "
                   f"SMPI {s.get('simulate_compute')!r} (expected 'run' and 'skip')")
    if o.get("charged_s_max") != 0:
        bad.append(f"Open MPI charged_s_max {o.get('charged_s_max')!r}, expected 0")
    if not s.get("charged_s_max", 0) > 0:
        bad.append(f"SMPI charged_s_max {s.get('charged_s_max')!r}: no product was sampled out")
    return bad


def compare(name, o, s, verified=True):
    """The keys of each command's JSON that carry the ledger and the answers. Equal but empty
    is not a pass: both sides must have recorded traffic and, where asked, run --verify.
    verified=False: timed runs without --verify (bench/simulate/validate.py): the ledger and
    the counts are compared, the answers are not."""
    bad = []
    ledger = "ledger_one_call" if name.startswith("spgemm") else "ledger"
    if ledger in o and not nonzero(o[ledger]):
        bad.append(f"{ledger}: the Open MPI run recorded no traffic")
    if verified and name.startswith(("spgemm", "gemm")) and name != "gemm-skip":
        for side, j in (("Open MPI", o), ("SMPI", s)):
            if not j["verify"]["done"]:
                bad.append(f"{side}: --verify did not run")
    if name.startswith("spgemm"):
        diff("ledger_one_call", o["ledger_one_call"], s["ledger_one_call"], bad)
        for k in ("n", "blocks", "grid", "layers", "ticks", "blocks_multiplied",
                  "blocks_skipped", "blocks_filtered", "product_blocks", "product_values",
                  "c_blocks", "c_values"):
            diff(k, o[k], s[k], bad)
        diff("verify.relative_error", o["verify"]["relative_error"],
             s["verify"]["relative_error"], bad, rel=1e-9)
        for side, j in (("Open MPI", o), ("SMPI", s)):
            if j["verify"]["done"] and not j["verify"]["text"].startswith("PASSED"):
                bad.append(f"{side}: --verify {j['verify']['text']}")
    elif name == "gemm":
        diff("ledger", o["ledger"], s["ledger"], bad)
        diff("plan", o["plan"], s["plan"], bad)
        diff("executed", o["executed"], s["executed"], bad)
        diff("verify.residual", o["verify"]["residual"], s["verify"]["residual"], bad, rel=1e-9)
        for side, j in (("Open MPI", o), ("SMPI", s)):
            if j["verify"]["done"] and not j["verify"]["text"].startswith("PASSED"):
                bad.append(f"{side}: --verify {j['verify']['text']}")
    elif name.startswith("stencil"):
        for k in ("points", "iterations", "converged", "partition"):
            diff(k, o[k], s[k], bad)
        diff("eigenvalues", o["eigenvalues"], s["eigenvalues"], bad, rel=1e-10)
        for k in ("halo_bytes_per_rank_solve", "halo_bytes_per_rank_per_apply",
                  "messages_per_rank", "neighbors_per_rank"):
            diff(f"exchange.{k}", o["exchange"][k], s["exchange"][k], bad)
        for side, j in (("Open MPI", o), ("SMPI", s)):
            if not j["converged"]:
                bad.append(f"{side}: the eigensolver did not converge")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smpi-tessel", required=True)
    ap.add_argument("--openmpi-tessel", required=True)
    ap.add_argument("--mpirun", default="/usr/bin/mpirun.openmpi")
    ap.add_argument("--platform", required=True)
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--cases", default="spgemm-cannon,spgemm-rma25d,gemm,stencil-alltoallv")
    ap.add_argument("--water", type=int, default=200, help="molecules of the spgemm cases")
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()

    for what, path in (("Open MPI tessel (build it: scripts/setup.sh)", a.openmpi_tessel),
                       ("mpirun", a.mpirun), ("smpirun", shutil.which("smpirun") or ""),
                       ("SMPI tessel", a.smpi_tessel)):
        if not path or not os.access(path, os.X_OK):
            print(f"compare_openmpi: SKIP: no {what} at '{path}'")
            return 77
    table = cases(a.water)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.cases.split(","):
            args = table[name]
            tab = os.path.join(tmp, f"{name}.times.txt")
            oj, sj = os.path.join(tmp, f"{name}.openmpi.json"), os.path.join(tmp, f"{name}.smpi.json")
            cmd = [a.mpirun, "-np", str(a.np), "--oversubscribe", a.openmpi_tessel] + args + \
                  [x.format(table=tab) for x in OMPI_ONLY.get(name, [])] + ["--json", oj]
            p = subprocess.run(cmd, env=ompi_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=a.timeout,
                               stdin=subprocess.DEVNULL)
            if p.returncode != 0:
                print(f"compare_openmpi: {name}: Open MPI run failed ({p.returncode}):\n"
                      f"{' '.join(cmd)}\n{p.stdout[-3000:]}")
                failed += 1
                continue
            status, out, sim, wall = smpi_run.run(
                a.platform, a.np, [a.smpi_tessel] + args +
                [x.format(table=tab) for x in SMPI_ONLY.get(name, [])] + ["--json", sj],
                timeout=a.timeout)
            if status != 0:
                print(f"compare_openmpi: {name}: SMPI run failed ({status}):\n{out[-3000:]}")
                failed += 1
                continue
            with open(oj) as f:
                o = json.load(f)
            with open(sj) as f:
                s = json.load(f)
            sampled = name.startswith(("spgemm-skip", "spgemm-table"))
            bad = compare_sampled(o, s) if sampled else compare(name, o, s)
            if name == "spgemm-table":
                bad += compare_table(o, s, tab)
            if name == "gemm-skip":
                bad += compare_skip(o, s, a.platform)
            if name in SMPI_ONLY:
                if "meaningless by design" not in out:
                    bad.append("SMPI: the run did not print that its results are meaningless")
            verdict = "equal" if not bad else f"{len(bad)} differences"
            print(f"compare_openmpi: {name} at {a.np} ranks: {verdict} (simulated {sim} s, "
                  f"simulation wall {wall:.1f} s)")
            for line in bad[:40]:
                print(f"    {line}")
            failed += bool(bad)
    print(f"compare_openmpi: {'FAILED' if failed else 'passed'}: {a.cases} at {a.np} ranks")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
