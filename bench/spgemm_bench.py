#!/usr/bin/python3
"""spgemm_bench.py — the block-sparse multiply (seed 001): DBCSR 2.5 (bench/dbcsr_spgemm),
tessel `cannon` and tessel `rma25d` with L = 1, 2, 4, alternating, locally or on the emulated
cluster.

Every run is one program on the same matrices and distributions (apps/tessel/spgemm_case):
`tessel spgemm --generate CASE --algorithm A --layers L --eps E --repeat R --json` or
`dbcsr_spgemm --generate CASE --eps E --repeat R --json`, the median time per multiply reported.
Variants run round-robin (v1, v2, ..., v1, v2, ... --pairs times) so they share the machine's
load; the summary gives the median over pairs, GFLOP/s (flops of the block products done, as
each library counts them), the ratio to DBCSR (the first variant), and bytes per rank of one
multiply (the first of each run): tessel's ledger (A, B, C panels, max and mean over ranks;
"all" = everything received, point-to-point + MPI_Rget + collectives); for DBCSR, with
--commcount, the PMPI counter ../shared/tools/commcount preloaded into bench/dbcsr_spgemm,
which brackets its first multiply with MPI_Pcontrol (received point-to-point + MPI_Rget bytes,
and collective payload, mean over ranks; locally and on the emulated cluster); on the emulated
cluster also the wire bytes of every run (whole program). For rma25d with --layers auto
(variant "rma25d") tessel first runs one symbolic multiply and prints eq. 7's predicted A, B, C
bytes per candidate L (recorded as eq7_prediction). An L that does not fit a grid (eq. 4/5) is
reported as "invalid L" and skipped.

Cases: --generate specs of `tessel spgemm` (water:N = H S, water-ss:N = S S, band:N), or
csr:A.csr:B.csr:blocksizes.txt (CP2K CSR files, e.g. the 256-water SZV H*S:
csr:KS.csr.gz:S.csr.gz:blocksizes.txt in ../shared/data/cp2k/h2o-256-szv).
Configs: local:NP (mpirun on this machine, oversubscribed, OMP_NUM_THREADS=1) or
nc:NODESxPPN (../shared/tools/netcluster, brought up once per config with --rate/--delay).
--comm-only passes `--comm-only` to tessel (DBCSR has no such mode and is then not run).

Which MPI: --mpi openmpi (default; tessel and dbcsr_spgemm from --build, default build/) or
--mpi mpich (tessel from --build, default build-mpich/, made by `scripts/setup.sh --mpi mpich`;
launched by mpirun.mpich or `netcluster.sh runmpich`, which is reliable across the emulated nodes
only with one rank per node, so use nc:Nx1 there). DBCSR (Debian's libdbcsr is built with Open
MPI) exists only under --mpi openmpi: under --mpi mpich the dbcsr variant is skipped and said so,
and ratios are to the first tessel variant. --commcount preloads the counter built for --mpi.

Writes bench/results/spgemm-<host>-<date>.json (+ raw logs/JSONs in the folder of that name).

Examples:
    python3 bench/spgemm_bench.py --config local:4 --cases band:100 --pairs 1 --repeat 2
    python3 bench/spgemm_bench.py --mpi mpich --config local:3 --cases band:100 --pairs 1 --repeat 1
    python3 bench/spgemm_bench.py --config local:4,local:9,local:16 --cases band:2000,band:10000 \\
        --eps 1e-6 --pairs 3 --commcount

The emulated-cluster cases of docs/bench/2026-11-23/spgemm_dbcsr.md (water 2,000 S*S, eps 1e-6,
1 gbit, 50 us, one rank per node; run on an idle machine; --comm-only moves C partials of their
true size since the symbolic product, so it now matches the full run's bytes):
    python3 bench/spgemm_bench.py --config nc:4x1,nc:16x1 --cases water-ss:2000 \\
        --variants dbcsr,cannon,rma25d:1,rma25d:4,rma25d --commcount --pairs 2 --repeat 3
    python3 bench/spgemm_bench.py --config nc:4x1,nc:16x1 --cases water-ss:2000 \\
        --variants cannon,rma25d:1,rma25d:4,rma25d --comm-only --pairs 2 --repeat 3
("rma25d" alone = --layers auto: the L eq. 7 picks with the C term.) The issue's 8x2 case:
--config nc:8x2 (16 ranks, 2 per node).

Variants: dbcsr, cannon[:1[:RETAIN[:POLL]]], rma25d[:L[:RETAIN[:POLL]]], RETAIN = none | a | c
(`tessel spgemm --retain`: C's pattern fixed to op(A)'s, or to the filtered product's, as in a
density-matrix iteration; DBCSR's driver has no retain mode), POLL = `--poll-us` (microseconds
between progress polls during a tick's products; 0 = none, to measure what polling buys:
e.g. rma25d:1:a:0 against rma25d:1:a). The communication-bound study (where rma25d L = 4
moves fewer bytes per rank than L = 1 and Cannon; docs/sparse.md), one command, idle machine:
    python3 bench/spgemm_bench.py --preset comm-bound --pairs 2 --repeat 3
(= --config nc:16x1,nc:8x2,nc:8x1 --cases water-ss:2000,water:2000,<CP2K 256-water H*S>
 --variants cannon:1:a,rma25d:1:a,rma25d:2:a,rma25d:4:a,rma25d:4 --eps 1e-6; L = 2 runs only on
 the 2x4 grid of nc:8x1 and is reported as invalid on 4x4). Add --comm-only for the network part
alone.
"""
import argparse
import datetime
import json
import socket
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, Config  # noqa: E402
CC_SRC = ROOT.parent / "shared" / "tools" / "commcount"
DEFAULT_VARIANTS = "dbcsr,cannon,rma25d:1,rma25d:2,rma25d:4"


def parse_variant(v):
    f = v.split(":")
    if f[0] == "dbcsr":
        return {"name": v, "prog": "dbcsr"}
    bad = (f[0] not in ("cannon", "rma25d") or len(f) > 4 or (len(f) >= 3 and f[2] not in ("none", "a", "c"))
           or (len(f) == 4 and not f[3].replace(".", "", 1).isdigit()))
    if bad:
        raise SystemExit(f"spgemm_bench: variant '{v}': expected dbcsr, cannon[:1[:RETAIN[:POLL]]] or "
                         "rma25d[:L[:RETAIN[:POLL]]] (RETAIN none, a or c; POLL the microseconds "
                         "between progress polls, --poll-us, 0 = none)")
    return {"name": v, "prog": "tessel", "alg": f[0], "layers": f[1] if len(f) > 1 else "auto",
            "retain": f[2] if len(f) > 2 else "none", "poll": f[3] if len(f) > 3 else None}


# --preset comm-bound: the communication-bound cases found with the ledger (docs/sparse.md,
# "Where L = 4 moves fewer bytes"): C's pattern fixed (--retain a: the pattern of S, or of H,
# as in a density-matrix iteration), so the partial C panels hold no fill-in and go as values
# plus a bitmap; 16 ranks as 16 nodes x 1 and 8 nodes x 2 (4x4 grid: L = 1, 4), and 8 nodes x 1
# (2x4 grid: L = 1, 2). rma25d:4 without retain shows what the fill-in costs.
PRESETS = {
    "comm-bound": {
        "config": "nc:16x1,nc:8x2,nc:8x1",
        "cases": "water-ss:2000,water:2000,"
                 "csr:{d}/KS.csr.gz:{d}/S.csr.gz:{d}/blocksizes.txt",
        "variants": "cannon:1:a,rma25d:1:a,rma25d:2:a,rma25d:4:a,rma25d:4",
        "eps": "1e-6",
    },
}


def commcount_lib(build, mpi):
    lib = Path(build) / "commcount" / mpi / "libcommcount.so"
    if not lib.exists():
        stage = Path(build) / "commcount.bench"
        stage.mkdir(exist_ok=True)
        subprocess.run(["make", "-s", "-C", str(CC_SRC), mpi, f"OUT={stage}"], check=True)
        lib.parent.mkdir(parents=True, exist_ok=True)
        (stage / mpi / "libcommcount.so").rename(lib)
    return lib


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="local:4", help="comma list of local:NP or nc:NODESxPPN")
    ap.add_argument("--cases", default="band:2000", help="comma list of --generate specs")
    ap.add_argument("--variants", default=DEFAULT_VARIANTS)
    ap.add_argument("--eps", default="1e-6")
    ap.add_argument("--repeat", type=int, default=3, help="timed multiplies per run (median)")
    ap.add_argument("--pairs", type=int, default=2, help="rounds over the variants")
    ap.add_argument("--comm-only", action="store_true",
                    help="tessel: symbolic product only (no flops; every panel of its true size)")
    ap.add_argument("--commcount", action="store_true",
                    help="count DBCSR's bytes of its first multiply with ../shared/tools/commcount (LD_PRELOAD)")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--delay", default="50us")
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"],
                    help="MPI of the build and the launcher (mpich: no DBCSR; see above)")
    ap.add_argument("--build", default=None, help="build folder (default build/, or build-mpich/ with --mpi mpich)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--preset", choices=sorted(PRESETS),
                    help="set --config, --cases, --variants and --eps to a named study (comm-bound: "
                         "the emulated-cluster cases where rma25d L = 4 moves fewer bytes than L = 1 and Cannon)")
    a = ap.parse_args()
    if a.preset:
        d = ROOT.parent / "shared" / "data" / "cp2k" / "h2o-256-szv"
        for k, v in PRESETS[a.preset].items():
            setattr(a, k, v.format(d=d))
    if a.build is None:
        a.build = str(ROOT / ("build-mpich" if a.mpi == "mpich" else "build"))
    tessel = Path(a.build) / "apps" / "tessel" / "tessel"
    dbcsr = Path(a.build) / "bench" / "dbcsr_spgemm"
    variants = [parse_variant(v) for v in a.variants.split(",") if v]
    if a.comm_only:
        variants = [v for v in variants if v["prog"] != "dbcsr"]
    if a.mpi == "mpich" and any(v["prog"] == "dbcsr" for v in variants):
        print("spgemm_bench: dbcsr skipped: Debian's DBCSR is built with Open MPI (run it with --mpi openmpi)",
              flush=True)
        variants = [v for v in variants if v["prog"] != "dbcsr"]
    if not variants:
        raise SystemExit("spgemm_bench: no variant left to run")
    for v in variants:
        exe = dbcsr if v["prog"] == "dbcsr" else tessel
        if not exe.exists():
            raise SystemExit(f"spgemm_bench: {exe} not built (bash scripts/setup.sh"
                             f"{' --mpi mpich' if a.mpi == 'mpich' else ''})")
    cases = [c for c in a.cases.split(",") if c]
    configs = [c for c in a.config.split(",") if c]
    cclib = commcount_lib(a.build, a.mpi) if a.commcount else None
    stem = f"spgemm-{socket.gethostname().split('.')[0]}-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    raw = Path(a.out) / stem
    raw.mkdir(parents=True, exist_ok=True)
    runs = []
    for cfg in configs:
        place = Config(cfg, "spgemm_bench", a.mpi)  # warns of MPICH on nc: with ppn > 1
        kind, np_, ppn, nodes = place.kind, place.np, place.ppn, place.nodes
        place.bring_up(a.rate, a.delay)
        try:
            for ci, case in enumerate(cases):
                for pair in range(a.pairs):
                    for v in variants:
                        tag = f"{cfg.replace(':', '-')}-case{ci}-{v['name'].replace(':', '_')}-pair{pair}"
                        js = raw / f"{tag}.json"
                        ccjs = raw / f"{tag}.commcount.json"
                        if case.startswith("csr:"):
                            fa, fb, fblk = case[4:].split(":")
                            src = ["--a", fa, "--b", fb, "--blocks", fblk]
                        else:
                            src = ["--generate", case]
                        common = src + ["--eps", a.eps, "--repeat", str(a.repeat), "--json", str(js)]
                        if v["prog"] == "dbcsr":
                            prog = [str(dbcsr)] + common
                        else:
                            prog = [str(tessel), "spgemm", "--algorithm", v["alg"], "--layers", v["layers"],
                                    "--retain", v["retain"]] + common + (
                                        ["--poll-us", v["poll"]] if v["poll"] is not None else [])
                            if a.comm_only:
                                prog.append("--comm-only")
                        env = ["-x", "OMP_NUM_THREADS=1", "-x", "OPENBLAS_NUM_THREADS=1"]
                        if cclib and v["prog"] == "dbcsr":  # locally and on the emulated cluster
                            env += ["-x", f"LD_PRELOAD={cclib}", "-x", f"COMMCOUNT_OUT={ccjs}"]
                        cmd = place.command(prog, env)
                        p, wall, wire = place.run(cmd, a.timeout, raw / f"{tag}.log", done=js)
                        r = {"config": cfg, "case": case, "variant": v["name"], "pair": pair, "ranks": np_,
                             "nodes": nodes, "ppn": ppn, "rc": p.returncode, "wall_s": wall, "cmd": cmd}
                        if wire is not None:
                            r["wire_tx_bytes"] = wire
                        try:
                            r["result"] = json.loads(js.read_text())
                        except (OSError, ValueError):
                            r["result"] = None
                        try:
                            r["commcount"] = json.loads(ccjs.read_text())
                        except (OSError, ValueError):
                            pass
                        invalid = p.returncode == 2 and "does not fit" in (p.stderr + p.stdout)
                        r["invalid_layers"] = invalid
                        ok = p.returncode == 0 and r["result"] is not None
                        med = r["result"]["median_s"] if ok else None
                        what = ("median %.4f s" % med) if ok else ("invalid L for this grid" if invalid
                                                                    else (p.stderr or p.stdout)[-300:])
                        print(f"  {'ok    ' if ok else ('skip  ' if invalid else 'FAILED')} {tag}: {what}", flush=True)
                        runs.append(r)
        finally:
            place.down()
    summary = summarize(runs, variants, cases, configs)
    out = {"stem": stem, "date": datetime.datetime.now().isoformat(), "mpi": a.mpi, "comm_only": a.comm_only,
           "eps": a.eps, "repeat": a.repeat, "pairs": a.pairs, "rate": a.rate, "delay": a.delay,
           "variants": [v["name"] for v in variants], "runs": runs, "summary": summary}
    path = Path(a.out) / f"{stem}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"spgemm_bench: wrote {path}")
    return 0 if all(r["rc"] == 0 or r["invalid_layers"] for r in runs) else 1


def summarize(runs, variants, cases, configs):
    rows = []
    for cfg in configs:
        for case in cases:
            ref = None
            print(f"\n{cfg}, {case}")
            print(f"{'variant':>10} {'L':>2} {'median s':>9} {'vs first':>8} {'GFLOP/s':>8} "
                  f"{'A+B MB max':>10} {'A+B MB mean':>11} {'A+B/L=1':>7} {'eq.7':>5} {'C MB mean':>9} "
                  f"{'all MB mean':>11} {'wire MB':>8}")
            ab_l1 = None
            for v in variants:
                rs = [r for r in runs if r["config"] == cfg and r["case"] == case and r["variant"] == v["name"]
                      and r["result"]]
                if not rs:
                    bad = [r for r in runs if r["config"] == cfg and r["case"] == case and r["variant"] == v["name"]]
                    why = "invalid L for this grid" if bad and bad[0]["invalid_layers"] else "no successful run"
                    print(f"{v['name']:>10}  ({why})")
                    continue
                med = statistics.median(r["result"]["median_s"] for r in rs)
                res = rs[0]["result"]
                led = res.get("ledger_one_call", {})
                stat = lambda ph, k: led.get(ph, {}).get("recv_bytes", {}).get(k, 0)
                ab_max = stat("spgemm/A panels", "max") + stat("spgemm/B panels", "max")
                ab_mean = stat("spgemm/A panels", "mean") + stat("spgemm/B panels", "mean")
                c_mean = stat("spgemm/C panels", "mean") + stat("spgemm/C pattern", "mean")
                all_mean = stat("all", "mean")
                coll_mean = None
                if v["prog"] == "dbcsr":
                    all_mean = None  # not counted without --commcount
                    if "commcount" in rs[0]:
                        mean = rs[0]["commcount"]["mean"]
                        all_mean = mean["p2p_recv_bytes"] + mean["rma_get_bytes"]
                        coll_mean = mean["coll_bytes"]
                wire = [r["wire_tx_bytes"] for r in rs if "wire_tx_bytes" in r]
                if ref is None:
                    ref = med
                # eq. 7: A+B per rank scales as (LR S_A + LC S_B) / L against L = 1; with S_A ~ S_B
                # that is 1/sqrt(L) on a square grid and (1 + L) / (2 L) on a non-square one.
                L = res.get("layers") or 1
                if v["name"] == "rma25d:1" or (v.get("alg") == "rma25d" and L == 1):
                    ab_l1 = ab_mean
                pr_, pc_ = (int(x) for x in str(res.get("grid", "1x1")).split("x")) if "grid" in res else (1, 1)
                model = (L ** -0.5 if pr_ == pc_ else (1 + L) / (2 * L)) if v.get("alg") == "rma25d" else None
                ab_ratio = ab_mean / ab_l1 if (ab_l1 and v.get("alg") == "rma25d") else None
                row = {"config": cfg, "case": case, "variant": v["name"], "layers": res.get("layers"),
                       "ab_ratio_to_l1": ab_ratio, "ab_ratio_eq7": model,
                       "median_s": med, "ratio_to_first": med / ref, "gflops": res.get("gflops"),
                       "ab_max_bytes": ab_max, "ab_mean_bytes": ab_mean, "c_mean_bytes": c_mean,
                       "all_mean_bytes": all_mean, "coll_mean_bytes": coll_mean,
                       "eq7_prediction": res.get("eq7_prediction"),
                       "wire_tx_bytes_median": statistics.median(wire) if wire else None, "pairs": len(rs)}
                rows.append(row)
                print(f"{v['name']:>10} {str(res.get('layers', '-')):>2} {med:9.4f} {med / ref:8.3f} "
                      f"{res.get('gflops', 0):8.3f} {ab_max / 1e6:10.2f} {ab_mean / 1e6:11.2f} "
                      f"{('%.3f' % ab_ratio) if ab_ratio else '-':>7} {('%.3f' % model) if model else '-':>5} {c_mean / 1e6:9.2f} "
                      f"{(all_mean / 1e6 if all_mean is not None else float('nan')):11.2f} "
                      f"{(statistics.median(wire) / 1e6 if wire else float('nan')):8.1f}")
                if res.get("retain", "none") != "none":
                    pat_first = stat("spgemm/C pattern", "mean")
                    pat_last = res.get("c_pattern_last_call_mean_bytes", 0)
                    row["c_pattern_first_bytes"] = pat_first
                    row["c_pattern_last_bytes"] = pat_last
                    print(f"{'':>13}retain {res['retain']}: C pattern {pat_first / 1e6:.2f} MB/rank in the first call "
                          f"(counted above), {pat_last:.0f} B in the last (cached); steady state A+B+C "
                          f"{(ab_mean + c_mean - pat_first + pat_last) / 1e6:.2f} MB/rank")
                if coll_mean is not None:
                    print(f"{'':>13}DBCSR collectives (commcount payload): {coll_mean / 1e6:.2f} MB mean per rank")
                for x in res.get("eq7_prediction") or []:
                    print(f"{'':>13}eq. 7 predicted L={x['layers']}: A {x['a_bytes'] / 1e6:.2f} + B {x['b_bytes'] / 1e6:.2f} "
                          f"+ C {x['c_bytes'] / 1e6:.2f} = {(x['a_bytes'] + x['b_bytes'] + x['c_bytes']) / 1e6:.2f} MB per rank")
    return rows


if __name__ == "__main__":
    sys.exit(main())
