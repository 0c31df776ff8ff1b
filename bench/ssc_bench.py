#!/usr/bin/python3
"""ssc_bench.py — SymmSquareCube (seed 000): Algorithms 3, 4, 5 and 2.5D, N_DUP and the
collective implementation side by side, alternating, locally or on the emulated cluster.

Every run is one `tessel ssc` (D^2 and D^3 of a symmetric n x n D, --repeat timed calls, the
median reported, the ledger of ONE call: bytes and messages per rank per phase). Variants are
run round-robin (v1, v2, ..., v1, v2, ... --pairs times) so that they share the machine's load;
the summary gives the median over pairs and the ratio to the reference variant (the first).

Variants: ALG[:NDUP[:COLL]] with ALG in 3, 4, 5, 2.5d; NDUP a number or auto; COLL mpi (the MPI
library's MPI_Ibcast/MPI_Ireduce/MPI_Iallreduce) or p2p (tessel's pipelined point-to-point
chains, comm/p2p_coll.hpp). Default: 4, 3, 5:1, 5:2, 5:4, 5:8, 5:4:p2p, 2.5d:1, 2.5d:4.

Sizes: a number (a generated random symmetric D) or 768 = the shared LDA system
../shared/data/pyscf/h2o32_ccpvdz_lda-dfj_F_orth.npy when present (--in), else generated.

Where: --config local:NP (mpirun on this machine, oversubscribed) or nc:NODESxPPN (the
emulated cluster ../shared/tools/netcluster, brought up once per config with --rate/--delay;
wire bytes of every run from `netcluster.sh stats`; torn down at the end). --comm-only skips
the local multiplies (`tessel ssc --comm-only`): on a 2-core machine the GEMMs of 8-32 ranks
take far longer than the network, which would hide every communication effect; the result is
then not D^2/D^3 and only the time of the communication schedule is measured.

The model column: for algorithms 4/5 with COLL = mpi, the seed's volume per active rank
P(i,j,k) (payload rule, blocks r_i): 8 (r_i r_j + 2 r_j r_k + 2 r_i r_k) collective bytes, and
the point-to-point returns to plane 0 (8 r_i r_j for D^2 unless i = j = 0, and for D^3 unless
j = 0) — the maxima over ranks of both, against the ledger's maxima (recv/coll).

Writes bench/results/ssc-<host>-<date>.json (+ raw logs/JSONs in the folder of that name) and
prints a table per (config, n).

Examples:
    python3 bench/ssc_bench.py --config local:8 --sizes 768 --pairs 1
    python3 bench/ssc_bench.py --config nc:8x1,nc:4x2 --sizes 2048,4096 --comm-only \\
        --variants 4,5:4,5:4:p2p --pairs 2
"""
import argparse
import datetime
import json
import socket
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, Config  # noqa: E402
LDA = ROOT.parent / "shared" / "data" / "pyscf" / "h2o32_ccpvdz_lda-dfj_F_orth.npy"
DEFAULT_VARIANTS = "4,3,5:1,5:2,5:4,5:8,5:4:p2p,2.5d:1,2.5d:4"


def parse_variant(v):
    f = v.split(":")
    alg = f[0]
    if alg not in ("3", "4", "5", "2.5d"):
        raise SystemExit(f"ssc_bench: variant '{v}': algorithm must be 3, 4, 5 or 2.5d")
    ndup = f[1] if len(f) > 1 else ("1" if alg in ("3", "4") else "auto")
    coll = f[2] if len(f) > 2 else "mpi"
    if coll not in ("mpi", "p2p"):
        raise SystemExit(f"ssc_bench: variant '{v}': collectives must be mpi or p2p")
    return {"name": v, "alg": alg, "ndup": ndup, "coll": coll}


def split_sizes(n, p):
    return [(n * (b + 1)) // p - (n * b) // p for b in range(p)]


def model_alg45(n, p):
    """(max collective payload bytes, max received p2p bytes) over the p^3 active ranks."""
    if p == 1:
        return 0, 0
    r = split_sizes(n, p)
    mc = mr = 0
    for i in range(p):
        for j in range(p):
            for k in range(p):
                mc = max(mc, 8 * (r[i] * r[j] + 2 * r[j] * r[k] + 2 * r[i] * r[k]))
                if k == 0:
                    mr = max(mr, 8 * r[i] * r[j] * ((0 if (i == 0 and j == 0) else 1) + (1 if j != 0 else 0)))
    return mc, mr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="local:8", help="comma list of local:NP or nc:NODESxPPN")
    ap.add_argument("--sizes", default="768,2048", help="comma list of n (768 = the shared LDA system)")
    ap.add_argument("--variants", default=DEFAULT_VARIANTS)
    ap.add_argument("--repeat", type=int, default=3, help="timed calls per run (median)")
    ap.add_argument("--pairs", type=int, default=2, help="rounds over the variants")
    ap.add_argument("--comm-only", action="store_true", help="skip the local multiplies")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--delay", default="50us")
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--timeout", type=int, default=1800)
    a = ap.parse_args()
    tessel = Path(a.build) / "apps" / "tessel" / "tessel"
    if not tessel.exists():
        raise SystemExit(f"ssc_bench: {tessel} not built (bash scripts/setup.sh)")
    variants = [parse_variant(v) for v in a.variants.split(",") if v]
    sizes = [int(s) for s in a.sizes.split(",") if s]
    configs = [c for c in a.config.split(",") if c]
    stem = f"ssc-{socket.gethostname().split('.')[0]}-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    raw = Path(a.out) / stem
    raw.mkdir(parents=True, exist_ok=True)
    runs = []
    for cfg in configs:
        place = Config(cfg, "ssc_bench")
        kind, np_, ppn, nodes = place.kind, place.np, place.ppn, place.nodes
        place.bring_up(a.rate, a.delay)
        try:
            for n in sizes:
                for pair in range(a.pairs):
                    for v in variants:
                        tag = f"{cfg.replace(':', '-')}-n{n}-{v['name'].replace(':', '_')}-pair{pair}"
                        js = raw / f"{tag}.json"
                        prog = [str(tessel), "ssc", "--repeat", str(a.repeat), "--algorithm", v["alg"],
                                "--n-dup", v["ndup"], "--collectives", v["coll"], "--json", str(js)]
                        prog += ["--in", str(LDA)] if (n == 768 and LDA.exists()) else ["--n", str(n)]
                        if a.comm_only:
                            prog.append("--comm-only")
                        cmd = place.command(prog, ["-x", "OPENBLAS_NUM_THREADS=1"] if kind == "nc" else [])
                        p, wall, wire = place.run(cmd, a.timeout, raw / f"{tag}.log")
                        r = {"config": cfg, "n": n, "variant": v["name"], "pair": pair, "ranks": np_,
                             "nodes": nodes, "ppn": ppn, "rc": p.returncode, "wall_s": wall, "cmd": cmd}
                        if wire is not None:
                            r["wire_tx_bytes"] = wire
                        try:
                            r["result"] = json.loads(js.read_text())
                        except (OSError, ValueError):
                            r["result"] = None
                        ok = p.returncode == 0 and r["result"] is not None
                        med = r["result"]["median_s"] if ok else None
                        print(f"  {'ok    ' if ok else 'FAILED'} {tag}: "
                              f"{'median %.4f s' % med if ok else (p.stderr or p.stdout)[-300:]}", flush=True)
                        runs.append(r)
        finally:
            place.down()
    summary = summarize(runs, variants, sizes, configs)
    out = {"stem": stem, "date": datetime.datetime.now().isoformat(), "comm_only": a.comm_only,
           "repeat": a.repeat, "pairs": a.pairs, "rate": a.rate, "delay": a.delay,
           "variants": [v["name"] for v in variants], "runs": runs, "summary": summary}
    path = Path(a.out) / f"{stem}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"ssc_bench: wrote {path}")
    return 0 if all(r["rc"] == 0 for r in runs) else 1


def summarize(runs, variants, sizes, configs):
    rows = []
    for cfg in configs:
        for n in sizes:
            ref = None
            print(f"\n{cfg}, n = {n}")
            print(f"{'variant':>10} {'mesh':>34} {'ndup':>4} {'median s':>9} {'vs first':>8} "
                  f"{'max recv MB':>11} {'max coll MB':>11} {'max msgs':>8} {'model r/c MB':>13} {'wire MB':>8}")
            for v in variants:
                rs = [r for r in runs if r["config"] == cfg and r["n"] == n and r["variant"] == v["name"]
                      and r["result"]]
                if not rs:
                    print(f"{v['name']:>10}  (no successful run)")
                    continue
                med = statistics.median(r["result"]["median_s"] for r in rs)
                res = rs[0]["result"]
                led = res.get("ledger_one_call", {}).get("ssc/compute", {})
                recv = led.get("recv_bytes", {}).get("max", 0)
                coll = led.get("coll_bytes", {}).get("max", 0)
                msgs = led.get("recv_msgs", {}).get("max", 0)
                model = model_alg45(n, res["p"]) if (v["alg"] in ("4", "5") and v["coll"] == "mpi") else None
                wire = [r["wire_tx_bytes"] for r in rs if "wire_tx_bytes" in r]
                if ref is None:
                    ref = med
                row = {"config": cfg, "n": n, "variant": v["name"], "mesh": res.get("mesh"),
                       "n_dup": res.get("n_dup"), "median_s": med, "ratio_to_first": med / ref,
                       "max_recv_bytes": recv, "max_coll_bytes": coll, "max_recv_msgs": msgs,
                       "model_max_coll_bytes": model[0] if model else None,
                       "model_max_recv_bytes": model[1] if model else None,
                       "wire_tx_bytes_median": statistics.median(wire) if wire else None,
                       "pairs": len(rs)}
                rows.append(row)
                print(f"{v['name']:>10} {str(res.get('mesh'))[:34]:>34} {res.get('n_dup'):>4} {med:9.4f} "
                      f"{med / ref:8.3f} {recv / 1e6:11.2f} {coll / 1e6:11.2f} {msgs:8.0f} "
                      f"{(('%.2f/%.2f' % (model[1] / 1e6, model[0] / 1e6)) if model else '-'):>13} "
                      f"{(statistics.median(wire) / 1e6 if wire else float('nan')):8.1f}")
    return rows


if __name__ == "__main__":
    sys.exit(main())
