#!/usr/bin/env python3
"""bench/mpitrace.c (the per-message MPI timeline used to trace tessel and its peers side by
side) against tessel's own ledger: `tessel gemm --json` with libmpitrace.so preloaded, for
plans that move data point to point (the redistributions, rounds and reduction of the optimal
plan; SUMMA on the caller's layout), and at every rank the trace's receives (completed
nonblocking receives, blocking receives) and sends must add up to the ledger's bytes and
messages x --repeat, per rank (max) and in total; every posted request must complete; and
bench/mpitrace_report.py must read the files. Exit status 1 on any difference."""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--mpiexec", required=True)
ap.add_argument("--np", type=int, required=True)
ap.add_argument("--flavour", default="openmpi")
ap.add_argument("--tessel", required=True)
ap.add_argument("--lib", required=True, help="libmpitrace.so")
ap.add_argument("--report", required=True, help="bench/mpitrace_report.py")
ap.add_argument("--mpiexec-flag", action="append", default=[])
args = ap.parse_args()

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def env_flags(name, value):
    return ["-x", f"{name}={value}"] if args.flavour == "openmpi" else ["-genv", name, value]


def trace_sums(prefix):
    """Per rank: received bytes and messages, sent bytes and messages, posts without a done."""
    per_rank = {}
    for path in glob.glob(f"{prefix}.*.tsv"):
        rank = int(path[len(prefix) + 1:-4])
        rb = rm = sb = sm = 0
        posts, dones = 0, 0
        for line in open(path):
            if line.startswith("#"):
                continue
            kind, _t0, _t1, _peer, nbytes, what = line.rstrip("\n").split("\t")
            nbytes = int(nbytes)
            if kind == "post":
                posts += 1
            if kind == "done":
                dones += 1
            if (kind == "done" and what == "irecv") or (kind == "call" and what == "recv"):
                rb, rm = rb + nbytes, rm + 1
            if (kind == "done" and what == "isend") or (kind == "call" and what == "send"):
                sb, sm = sb + nbytes, sm + 1
        per_rank[rank] = (rb, rm, sb, sm, posts - dones)
    return per_rank


CASES = [
    ("optimal", ["--m", "150", "--n", "70", "--k", "110", "--nb", "16", "--algorithm", "optimal"]),
    ("summa2d", ["--m", "96", "--n", "80", "--k", "64", "--nb", "16", "--algorithm", "summa2d"]),
]
with tempfile.TemporaryDirectory() as tmp:
    for name, extra in CASES:
        prefix, out, repeat = os.path.join(tmp, name), os.path.join(tmp, name + ".json"), 2
        cmd = [args.mpiexec, "-np", str(args.np), *args.mpiexec_flag,
               *env_flags("LD_PRELOAD", args.lib), *env_flags("MPITRACE_OUT", prefix),
               args.tessel, "gemm", *extra, "--repeat", str(repeat), "--json", out]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, f"{name}: tessel gemm under mpitrace exits 0 ({r.stderr.strip()[-300:]})")
        if r.returncode != 0:
            continue
        sums = trace_sums(prefix)
        check(sorted(sums) == list(range(args.np)), f"{name}: one trace file per rank ({sorted(sums)})")
        if not sums:
            continue
        g = json.load(open(out))["ledger"]["gemm"]
        for col, field in ((0, "recv_bytes"), (1, "recv_msgs"), (2, "sent_bytes"), (3, "sent_msgs")):
            tr_total = sum(v[col] for v in sums.values())
            tr_max = max(v[col] for v in sums.values())
            led_total, led_max = g[field]["total"] * repeat, g[field]["max"] * repeat
            check(tr_total == round(led_total) and tr_max == round(led_max),
                  f"{name}: {field} trace total {tr_total}, max {tr_max} = ledger x {repeat} "
                  f"{led_total:.0f}, {led_max:.0f}")
        check(args.np == 1 or sum(v[0] for v in sums.values()) > 0,
              f"{name}: traffic traced (not a vacuous comparison)")
        check(all(v[4] == 0 for v in sums.values()), f"{name}: every posted request completed")
        rep = subprocess.run([sys.executable, args.report, prefix, "--arrivals", "--ranks", "0"],
                             capture_output=True, text=True, timeout=60)
        check(rep.returncode == 0 and "rank 0:" in rep.stdout,
              f"{name}: mpitrace_report.py reads the files ({rep.stderr.strip()[-200:]})")
assert not FAILS, f"{len(FAILS)} check(s) failed: " + "; ".join(FAILS)
