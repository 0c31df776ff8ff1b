#!/usr/bin/env python3
"""`tessel calibrate` end to end at small sizes: the machine file it writes is JSON with positive,
finite figures, `tessel gemm --machine FILE --explain` loads it, and bad input (a bad option, a
malformed machine file) fails once with exit status 2 naming the parameter."""
import argparse, json, math, os, subprocess, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--mpiexec", required=True)
ap.add_argument("--np", type=int, required=True)
ap.add_argument("--tessel", required=True)
ap.add_argument("--mpiexec-flag", action="append", default=[])
args = ap.parse_args()

def run(*extra, env=None):
    cmd = [args.mpiexec, "-np", str(args.np), *args.mpiexec_flag, args.tessel, *extra]
    e = dict(os.environ)
    e.pop("TESSEL_MACHINE", None)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=e)

FAILS = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)

def positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "machine.json")
    res = os.path.join(tmp, "run.json")
    r = run("calibrate", "--gemm-size", "48", "--bw-bytes", "65536", "--repeat", "3",
            "--pingpong", "5", "--out", out, "--json", res)
    check(r.returncode == 0, f"calibrate exits 0 ({r.stderr.strip()[:300]})")
    if r.returncode == 0:
        m = json.load(open(out))
        for key in ("dgemm_gflops", "zgemm_gflops", "p2p_segment_bytes"):
            check(positive(m.get(key)), f"{key} = {m.get(key)} positive and finite")
        for link in ("intra_node", "inter_node"):
            check(positive(m[link]["bandwidth_gbs"]), f"{link}.bandwidth_gbs = {m[link]['bandwidth_gbs']} positive")
            lat = m[link]["latency_us"]
            check(math.isfinite(lat) and lat >= 0, f"{link}.latency_us = {lat} finite, >= 0")
        meas = m["measured"]
        check(meas["ranks"] == args.np, "measured.ranks is the run's size")
        d = meas["dgemm_gflops"]
        check(d["min"] <= d["median"] <= d["max"], "dgemm spread min <= median <= max")
        # one machine: every rank on one node, so an intra-node pair and no inter-node pair
        check(meas["nodes"] == 1 and m["node_size"] == args.np, f"one node of {args.np} ranks")
        check(meas["intra_node"] is not None and meas["inter_node"] is None, "intra pair measured, no inter pair")
        check("no inter-node pair" in r.stdout, "report says 'no inter-node pair'")
        # the link as a multiply sees it: every rank exchanging at once; the written bandwidth
        # is the smaller of that and the ping-pong (one node: the inter-node link copies it)
        intra = meas["intra_node"]
        if args.np >= 2:
            a = intra["all_at_once_gbs"]
            check(a is not None and 0 < a["min"] <= a["median"] <= a["max"],
                  f"intra all_at_once_gbs {a} measured with a spread")
            want = min(intra["bandwidth_gbs"]["median"], a["median"])
            check(abs(m["intra_node"]["bandwidth_gbs"] - want) <= 1e-12 * want,
                  f"written intra bandwidth {m['intra_node']['bandwidth_gbs']} = min(ping-pong, all at once) {want}")
            check("all ranks at once" in r.stdout, "report prints the all-at-once bandwidth")
        check("median" in r.stdout and "min" in r.stdout and "max" in r.stdout, "report prints the spread")
        check(json.load(open(res))["command"] == "calibrate", "--json result written")
        # overlap: measured with a partner (np > 1), a fraction in [0, 1] with its spread
        ov = m.get("overlap")
        check(isinstance(ov, (int, float)) and 0 <= ov <= 1, f"overlap = {ov} in [0, 1]")
        if args.np > 1:
            o = meas["overlap"]
            check(o is not None and 0 <= o["min"] <= o["median"] <= o["max"] <= 1 and o["median"] == ov,
                  f"measured.overlap {o} is the written overlap's spread")
            check(meas["overlap_bytes"] >= 65536, "overlap message >= 64 KiB")
            check("overlap," in r.stdout, "report prints the overlap")
        else:
            check(meas["overlap"] is None and ov == 0.5 and "overlap: not measured" in r.stdout,
                  "one rank: overlap not measured, default written")
        # the planner reads it
        g = run("gemm", "--m", "64", "--n", "64", "--k", "64", "--explain", "--machine", out)
        check(g.returncode == 0 and f"machine (--machine {out})" in g.stdout, "gemm --machine loads the file")
        g = run("gemm", "--m", "64", "--n", "64", "--k", "64", "--explain", env={"TESSEL_MACHINE": out})
        check(g.returncode == 0 and f"machine (TESSEL_MACHINE={out})" in g.stdout, "gemm reads TESSEL_MACHINE")
    bad = os.path.join(tmp, "bad.json")
    open(bad, "w").write('{"inter_node": {"latency_us": -1}}')
    g = run("gemm", "--m", "64", "--n", "64", "--k", "64", "--explain", "--machine", bad)
    check(g.returncode == 2 and g.stderr.count("tessel: error:") == 1 and "inter_node.latency_us = -1" in g.stderr,
          "a malformed machine file fails once with status 2 naming the key")
    # the command, not the library, reads the environment: a bad TESSEL_NODE_SIZE fails once
    g = run("info", env={"TESSEL_NODE_SIZE": "two"})
    check(g.returncode == 2 and g.stderr.count("tessel: error:") == 1
          and "TESSEL_NODE_SIZE = 'two'" in g.stderr and "positive integer" in g.stderr,
          "a bad TESSEL_NODE_SIZE fails once with status 2 naming it")
    g = run("info", env={"TESSEL_NODE_SIZE": "1"})
    check(g.returncode == 0, "TESSEL_NODE_SIZE=1 is accepted")
    r = run("calibrate", "--gemm-size", "0", "--out", out)
    check(r.returncode == 2 and r.stderr.count("tessel: error:") == 1 and "--gemm-size" in r.stderr,
          "--gemm-size 0 fails once with status 2")
assert not FAILS, f"{len(FAILS)} check(s) failed: " + "; ".join(FAILS)
