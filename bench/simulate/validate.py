#!/usr/bin/python3
"""validate.py — the simulation against the emulated cluster (issue 29, item 5): the same
tessel cases on ../shared/tools/netcluster (Open MPI over real TCP, 1 gbit, 50 us, one rank per
node; tessel from build/) and under SMPI on bench/simulate/platforms/netcluster.xml (tessel from
build-smpi/), at each node count: the ledger's bytes must be equal, the times within 25%.

    python3 bench/simulate/validate.py [--nodes 2,4] [--cases gemm,cannon,rma25d,alltoallv,p2p]
        [--pairs 1] [--name validation]

Cases (each with --json; Open MPI runs get TESSEL_NODE_SIZE=1, one rank per node as simulated):
    gemm       gemm --m 2048 --n 2048 --k 2048 --layout plan --repeat 3    (time: median_s)
    cannon     spgemm --generate water-ss:2000 --eps 1e-6 --algorithm cannon --repeat 3
    rma25d     spgemm ... --algorithm rma25d --layers 1                     (time: median_s)
    cannon-comm, rma25d-comm   the two with --comm-only (no local products: the network alone)
    alltoallv  stencil --exchange alltoallv                                 (time: solve_seconds)
    p2p        stencil --exchange p2p
Bytes compared: gemm, spgemm: every count of the JSON's ledger; stencil: the halo bytes and
messages per rank. With --pairs P each case runs P times on each side, alternating, and the
medians are compared. The emulator's nodes share this machine's 2 cores (and whatever else runs
on it: the load average is recorded), the simulated nodes do not: see docs/simulation.md.

Writes docs/bench/simulate/<name>.json and <name>.md.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests" / "smpi"))
import benchlib  # noqa: E402
import compare_openmpi  # noqa: E402
import smpi_run  # noqa: E402

SP = ["spgemm", "--generate", "water-ss:2000", "--eps", "1e-6", "--repeat", "3"]
CASES = {
    "gemm": ["gemm", "--m", "2048", "--n", "2048", "--k", "2048", "--layout", "plan",
             "--repeat", "3"],
    "cannon": SP + ["--algorithm", "cannon"],
    "rma25d": SP + ["--algorithm", "rma25d", "--layers", "1"],
    # The same multiplies without the local products (spgemm --comm-only): the network alone,
    # which the load on this machine's cores barely changes on either side.
    "cannon-comm": SP + ["--algorithm", "cannon", "--comm-only"],
    "rma25d-comm": SP + ["--algorithm", "rma25d", "--layers", "1", "--comm-only"],
    "alltoallv": ["stencil", "--exchange", "alltoallv"],
    "p2p": ["stencil", "--exchange", "p2p"],
}
KIND = {"gemm": "gemm", "cannon": "spgemm-cannon", "rma25d": "spgemm-rma25d",
        "cannon-comm": "spgemm-cannon", "rma25d-comm": "spgemm-rma25d",
        "alltoallv": "stencil", "p2p": "stencil"}


def seconds(j):
    return j["solve_seconds"] if j["command"] == "stencil" else j["median_s"]


def bytes_mismatch(case, o, s):
    """The differences in bytes and counts between two runs' JSON (timed runs: no --verify)."""
    return compare_openmpi.compare(KIND[case], o, s, verified=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", default="2,4")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--delay", default="50us")
    ap.add_argument("--name", default="validation")
    ap.add_argument("--out", default=str(ROOT / "docs" / "bench" / "simulate"))
    ap.add_argument("--timeout", type=float, default=900)
    a = ap.parse_args()
    real = ROOT / "build" / "apps" / "tessel" / "tessel"
    sim = ROOT / "build-smpi" / "apps" / "tessel" / "tessel"
    plat = ROOT / "bench" / "simulate" / "platforms" / "netcluster.xml"
    for p, how in ((real, "scripts/setup.sh"), (sim, "scripts/setup.sh --smpi")):
        if not os.access(p, os.X_OK):
            raise SystemExit(f"validate.py: no {p} ({how})")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in [int(x) for x in a.nodes.split(",")]:
            cfg = benchlib.Config(f"nc:{nodes}x1", "validate.py")
            cfg.bring_up(a.rate, a.delay)
            try:
                for case in a.cases.split(","):
                    real_s, sim_s, walls, load, bad = [], [], [], [], []
                    oj_last = sj_last = None
                    for k in range(a.pairs):
                        oj = os.path.join(tmp, f"{case}.{nodes}.{k}.nc.json")
                        sj = os.path.join(tmp, f"{case}.{nodes}.{k}.smpi.json")
                        cmd = cfg.command([str(real)] + CASES[case] + ["--json", oj],
                                          env=["-x", "TESSEL_NODE_SIZE=1", "-x",
                                               "OPENBLAS_NUM_THREADS=1"])
                        res, _, _ = cfg.run(cmd, a.timeout, os.path.join(tmp, "nc.log"), done=oj)
                        if res.returncode != 0:
                            bad.append(f"netcluster run failed: {res.stdout[-500:]}{res.stderr[-500:]}")
                            break
                        status, out, _, wall = smpi_run.run(
                            str(plat), nodes, [str(sim)] + CASES[case] + ["--json", sj],
                            timeout=a.timeout)
                        if status != 0:
                            bad.append(f"SMPI run failed: {out[-800:]}")
                            break
                        o, s = json.load(open(oj)), json.load(open(sj))
                        real_s.append(seconds(o))
                        sim_s.append(seconds(s))
                        walls.append(wall)
                        load.append(open("/proc/loadavg").read().split()[0])
                        bad += bytes_mismatch(case, o, s)
                        oj_last, sj_last = o, s
                    row = {"case": case, "nodes": nodes, "args": CASES[case], "pairs": a.pairs,
                           "netcluster_s": real_s, "simulated_s": sim_s, "sim_wall_s": walls,
                           "load1": load, "differences": bad[:20]}
                    if real_s and sim_s and not any("failed" in b for b in bad):
                        r, m = statistics.median(real_s), statistics.median(sim_s)
                        row.update({"netcluster_median_s": r, "simulated_median_s": m,
                                    "ratio": m / r, "within_25pct": abs(m / r - 1) <= 0.25,
                                    "bytes_equal": not bad})
                        if sj_last["command"] == "stencil":
                            row["recv_mean_bytes"] = sj_last["exchange"]["halo_bytes_per_rank_solve"]["mean"]
                        elif sj_last["command"] == "gemm":
                            row["recv_mean_bytes"] = sj_last["ledger"]["gemm"]["recv_bytes"]["mean"]
                        else:
                            row["recv_mean_bytes"] = sj_last["ledger_one_call"]["all"]["recv_bytes"]["mean"]
                    rows.append(row)
                    print(f"validate.py: {case} on {nodes} nodes: netcluster {real_s} s, "
                          f"simulated {sim_s} s, differences {len(bad)}", flush=True)
            finally:
                cfg.down()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    (out / f"{a.name}.json").write_text(json.dumps(
        {"date": stamp, "rate": a.rate, "delay": a.delay, "platform": str(plat.relative_to(ROOT)),
         "rows": rows}, indent=1) + "\n")
    lines = [f"netcluster ({a.rate}, {a.delay}, 1 rank per node, Open MPI, build/) against "
             f"SIMULATED runs on `bench/simulate/platforms/netcluster.xml` (SMPI 3.32, "
             f"build-smpi/); {stamp}; medians of {a.pairs} run(s) per side", "",
             "| case | nodes | netcluster s | simulated s | simulated / netcluster | within 25% | "
             "bytes equal | bytes/rank (mean) | load (1 min) |",
             "|---|---:|---:|---:|---:|---|---|---:|---|"]
    for r in rows:
        if "ratio" not in r:
            lines.append(f"| {r['case']} | {r['nodes']} | failed | | | | | | |")
            continue
        lines.append(f"| {r['case']} | {r['nodes']} | {r['netcluster_median_s']:.4g} | "
                     f"{r['simulated_median_s']:.4g} | {r['ratio']:.2f} | "
                     f"{'yes' if r['within_25pct'] else 'NO'} | "
                     f"{'yes' if r['bytes_equal'] else 'NO'} | {r['recv_mean_bytes']:.4g} | "
                     f"{' '.join(r['load1'])} |")
    (out / f"{a.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
