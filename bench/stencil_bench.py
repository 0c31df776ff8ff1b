#!/usr/bin/python3
"""stencil_bench.py — the halo exchange of seed 002 (Octopus): every exchange strategy, the
overlap, METIS against the geometric partitioner, locally or on the emulated cluster.

Every run is one `tessel stencil --apply-only`: the mesh, the partition (on rank 0, broadcast),
then --repeat applications of H to a batch of B vectors in the plain order (exchange, V, all
points) and in the overlapped order (start, V, inner points with tests, wait, boundary
points), alternating; it reports the median exchange time of the plain order, the median
EXPOSED exchange time of the overlapped order (pack + start + tests + wait), the hidden
fraction 1 - exposed/plain, the apply times, the halo bytes per rank per apply (ledger:
sent + received), and neighbours and messages per rank. Runs are round-robin over the
strategies (--pairs rounds) so that they share the machine's load.

The mesh: a chain of --atoms pseudo-atoms 3 bohr apart along x (the seed's Li-H chain, a
cylinder-like grid), spheres of --radius bohr, the spacing chosen so that the mesh has about
--points points (1e6 by default).

Where: --config local:NP (mpirun on this machine, oversubscribed) or nc:NODESxPPN (the
emulated cluster ../shared/tools/netcluster, brought up once per config with --rate/--delay;
wire bytes per run from `netcluster.sh stats`; torn down at the end).

Which MPI: --mpi openmpi (default; tessel from --build, default build/) or --mpi mpich (tessel
from --build, default build-mpich/, made by `scripts/setup.sh --mpi mpich`; launched by
mpirun.mpich or `netcluster.sh runmpich`, which is reliable across the emulated nodes only with
one rank per node, so use nc:Nx1 there). `persistent` (MPI_Neighbor_alltoallv_init, MPI-4)
exists only in the MPICH build: under --mpi openmpi it is skipped and listed as such, so
compare persistent against the other strategies within one --mpi mpich run.

Besides "hidden" (1 - exposed / plain), every row shows two checks of it (docs/stencil.md,
"Progress"): "hideable", min(1, work between start and wait / plain exchange), the most that
order can hide on that mesh and batch, and "saved", the apply time the overlap saves as a
fraction of the plain exchange; and the tests of the exchange per apply.

Writes bench/results/stencil-<host>-<date>.json (+ raw logs/JSONs in the folder of that name)
and prints a table per (config, partitioner, batch).

Examples (the cases of issue 10: 4, 8 and 16 ranks, 1e6 points, batch 8 and 32, METIS and
the geometric partitioner; each line is one table per config x partitioner x batch):
    # a tiny functional check (seconds)
    python3 bench/stencil_bench.py --config local:3 --points 2e4 --batches 4 --repeat 2
    # this machine (oversubscribed: 2 cores)
    python3 bench/stencil_bench.py --config local:4,local:8,local:16 --batches 8,32 --pairs 2
    # the emulated cluster, 1 gbit, 50 us: 8 nodes x 1, 4 nodes x 2, and 16 ranks (8 x 2, 16 x 1)
    python3 bench/stencil_bench.py --config nc:4x1,nc:8x1,nc:4x2 --batches 8,32 --pairs 2
    python3 bench/stencil_bench.py --config nc:8x2,nc:16x1 --batches 8,32 --pairs 2
    # persistent against the others, all under MPICH (one rank per emulated node)
    python3 bench/stencil_bench.py --mpi mpich --config local:4,local:8,nc:8x1,nc:16x1 --batches 8,32
"""
import argparse
import datetime
import json
import math
import socket
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, Config  # noqa: E402
STRATEGIES = "alltoallv,ialltoallv,neighbor,persistent,p2p"


def chain_atoms(n):
    return [("Li" if i % 2 == 0 else "H", 3.0 * (i - (n - 1) / 2), 0.0, 0.0) for i in range(n)]


def mesh_volume(atoms, r):
    """Volume of the union of spheres (bohr^3), counted on a 0.25 bohr grid."""
    h = 0.25
    xs = [a[1] for a in atoms]
    lo, hi = min(xs) - r, max(xs) + r
    count = 0
    nx = int(math.ceil((hi - lo) / h))
    ny = int(math.ceil(2 * r / h))
    for i in range(nx + 1):
        x = lo + i * h
        # squared distance in x to the nearest atom
        dx2 = min((x - a[1]) ** 2 for a in atoms)
        if dx2 > r * r:
            continue
        rr = r * r - dx2
        for j in range(-ny, ny + 1):
            y2 = (j * h) ** 2
            if y2 > rr:
                continue
            count += 2 * int(math.sqrt(rr - y2) / h) + 1
    return count * h ** 3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="local:4,local:8,local:16", help="comma list of local:NP or nc:NODESxPPN")
    ap.add_argument("--points", type=float, default=1e6, help="target mesh size")
    ap.add_argument("--atoms", type=int, default=12)
    ap.add_argument("--radius", type=float, default=6.0)
    ap.add_argument("--order", type=int, default=4)
    ap.add_argument("--batches", default="8,32")
    ap.add_argument("--partitioners", default="metis,geometric")
    ap.add_argument("--strategies", default=STRATEGIES)
    ap.add_argument("--test-every", type=int, default=0,
                    help="inner points between two tests of the exchange (0: tessel's default from batch and order)")
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--repeat", type=int, default=10, help="timed applies per order (median)")
    ap.add_argument("--pairs", type=int, default=1, help="rounds over the strategies")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--delay", default="50us")
    ap.add_argument("--build", default=None, help="build folder (default build/, or build-mpich/ with --mpi mpich)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--timeout", type=int, default=1800)
    a = ap.parse_args()
    if a.build is None:
        a.build = str(ROOT / ("build-mpich" if a.mpi == "mpich" else "build"))
    tessel = Path(a.build) / "apps" / "tessel" / "tessel"
    if not tessel.exists():
        raise SystemExit(f"stencil_bench: {tessel} not built (bash scripts/setup.sh"
                         f"{' --mpi mpich' if a.mpi == 'mpich' else ''})")
    strategies = [s for s in a.strategies.split(",") if s]
    for s in strategies:
        if s not in STRATEGIES.split(","):
            raise SystemExit(f"stencil_bench: strategy '{s}': expected some of {STRATEGIES}")
    if a.mpi == "openmpi" and "persistent" in strategies:
        print("stencil_bench: persistent skipped: Open MPI 4.1 has no MPI_Neighbor_alltoallv_init "
              "(run it with --mpi mpich)", flush=True)
        strategies.remove("persistent")
    batches = [int(b) for b in a.batches.split(",") if b]
    parts = [p for p in a.partitioners.split(",") if p]
    configs = [c for c in a.config.split(",") if c]
    stem = f"stencil-{socket.gethostname().split('.')[0]}-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    raw = Path(a.out) / stem
    raw.mkdir(parents=True, exist_ok=True)

    atoms = chain_atoms(a.atoms)
    vol = mesh_volume(atoms, a.radius)
    h = round((vol / a.points) ** (1 / 3), 4)
    xyz = raw / "chain.xyz"
    xyz.write_text(f"{len(atoms)}\nchain of {len(atoms)} pseudo-atoms, bohr\n" +
                   "".join(f"{s} {x:.6f} {y:.6f} {z:.6f}\n" for s, x, y, z in atoms))
    print(f"stencil_bench: chain of {a.atoms} atoms, r = {a.radius} bohr, volume {vol:.0f} bohr^3, "
          f"h = {h} bohr for ~{a.points:.3g} points", flush=True)

    runs = []
    for cfg in configs:
        place = Config(cfg, "stencil_bench", a.mpi)  # warns of MPICH on nc: with ppn > 1
        kind, np_, ppn, nodes = place.kind, place.np, place.ppn, place.nodes
        place.bring_up(a.rate, a.delay)
        try:
            for part in parts:
                for b in batches:
                    for pair in range(a.pairs):
                        for s in strategies:
                            tag = f"{cfg.replace(':', '-')}-{part}-b{b}-{s}-pair{pair}"
                            js = raw / f"{tag}.json"
                            prog = [str(tessel), "stencil", "--xyz", str(xyz), "--xyz-units", "bohr",
                                    "--radius", str(a.radius), "--spacing", str(h), "--order", str(a.order),
                                    "--potential", "softcoulomb", "--apply-only", "--batch", str(b),
                                    "--exchange", s, "--partitioner", part, "--repeat", str(a.repeat),
                                    "--test-every", str(a.test_every), "--json", str(js)]
                            cmd = place.command(prog, ["-x", "OPENBLAS_NUM_THREADS=1"] if kind == "nc" else [])
                            p, wall, wire = place.run(cmd, a.timeout, raw / f"{tag}.log", done=js)
                            r = {"config": cfg, "mpi": a.mpi, "partitioner": part, "batch": b, "strategy": s,
                                 "pair": pair,
                                 "ranks": np_, "nodes": nodes, "ppn": ppn, "rc": p.returncode, "wall_s": wall,
                                 "cmd": cmd}
                            if wire is not None:
                                r["wire_tx_bytes"] = wire
                            try:
                                r["result"] = json.loads(js.read_text())
                            except (OSError, ValueError):
                                r["result"] = None
                            ok = p.returncode == 0 and r["result"] is not None
                            if ok:
                                e = r["result"]["exchange"]
                                msg = (f"plain {1e3 * statistics.median(e['plain_seconds']):.3f} ms, exposed "
                                       f"{1e3 * statistics.median(e['overlapped_exposed_seconds']):.3f} ms, "
                                       f"hidden {100 * e['hidden_fraction']:.0f}% "
                                       f"(hideable {100 * e['hideable_fraction']:.0f}%, saved "
                                       f"{100 * e['saved_fraction']:.0f}%)")
                            else:
                                msg = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
                                msg = msg[0][-200:]
                            print(f"  {'ok    ' if ok else 'FAILED'} {tag}: {msg}", flush=True)
                            runs.append(r)
        finally:
            place.down()
    summary = summarize(runs, configs, parts, batches, strategies)
    out = {"stem": stem, "date": datetime.datetime.now().isoformat(), "mpi": a.mpi, "spacing": h, "radius": a.radius,
           "atoms": a.atoms, "order": a.order, "repeat": a.repeat, "pairs": a.pairs, "rate": a.rate,
           "delay": a.delay, "test_every": a.test_every, "runs": runs, "summary": summary}
    path = Path(a.out) / f"{stem}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"stencil_bench: wrote {path}")
    return 0 if all(r["rc"] == 0 for r in runs) else 1


def summarize(runs, configs, parts, batches, strategies):
    rows = []
    for cfg in configs:
        for part in parts:
            for b in batches:
                rs_all = [r for r in runs if r["config"] == cfg and r["partitioner"] == part and r["batch"] == b]
                if not rs_all:
                    continue
                first = next((r["result"] for r in rs_all if r["result"]), None)
                pts = first["points"] if first else "?"
                print(f"\n{cfg}, {part}, batch {b}, {pts} points")
                print(f"{'strategy':>11} {'plain ms':>9} {'exposed ms':>10} {'hidden':>7} {'hideable':>8} "
                      f"{'saved':>6} {'tests':>6} {'vs a2av':>7} {'apply pl/ov ms':>15} {'MB/rank mean/max':>17} "
                      f"{'nbrs mean/max':>13} {'wire MB':>8}")
                ref = None
                a2av = [r["result"]["exchange"] for r in rs_all if r["strategy"] == "alltoallv" and r["result"]]
                if a2av:
                    ref = statistics.median(statistics.median(e["plain_seconds"]) for e in a2av)
                for s in strategies:
                    rs = [r for r in rs_all if r["strategy"] == s and r["result"]]
                    if not rs:
                        print(f"{s:>11}  (no successful run: {'this MPI lacks it' if s == 'persistent' else 'failed'})")
                        continue
                    ex = [r["result"]["exchange"] for r in rs]
                    plain = statistics.median(statistics.median(e["plain_seconds"]) for e in ex)
                    exposed = statistics.median(statistics.median(e["overlapped_exposed_seconds"]) for e in ex)
                    ap_pl = statistics.median(statistics.median(e["apply_plain_seconds"]) for e in ex)
                    ap_ov = statistics.median(statistics.median(e["apply_overlapped_seconds"]) for e in ex)
                    hidden = max(0.0, 1 - exposed / plain) if plain > 0 else 0.0
                    hideable = statistics.median(e.get("hideable_fraction", float("nan")) for e in ex)
                    saved = statistics.median(e.get("saved_fraction", float("nan")) for e in ex)
                    tests = statistics.median(statistics.median(e.get("tests_per_apply") or [float("nan")])
                                              for e in ex)
                    byts = ex[0]["halo_bytes_per_rank_per_apply"]
                    nb = ex[0]["neighbors_per_rank"]
                    wire = [r["wire_tx_bytes"] for r in rs if "wire_tx_bytes" in r]
                    if ref is None:
                        ref = plain  # no alltoallv run: relative to the first strategy
                    row = {"config": cfg, "partitioner": part, "batch": b, "strategy": s, "plain_s": plain,
                           "exposed_s": exposed, "hidden_fraction": hidden, "hideable_fraction": hideable,
                           "saved_fraction": saved, "tests_per_apply": tests, "plain_vs_alltoallv": plain / ref,
                           "apply_plain_s": ap_pl, "apply_overlapped_s": ap_ov, "bytes_per_rank": byts,
                           "neighbors_per_rank": nb, "messages_per_rank": ex[0]["messages_per_rank"],
                           "wire_tx_bytes_median": statistics.median(wire) if wire else None, "runs": len(rs)}
                    rows.append(row)
                    print(f"{s:>11} {1e3 * plain:9.3f} {1e3 * exposed:10.3f} {100 * hidden:6.0f}% {100 * hideable:7.0f}% "
                          f"{100 * saved:5.0f}% {tests:6.0f} {plain / ref:7.2f} "
                          f"{1e3 * ap_pl:7.2f}/{1e3 * ap_ov:<7.2f} {byts['mean'] / 1e6:8.3f}/{byts['max'] / 1e6:<8.3f} "
                          f"{nb['mean']:6.1f}/{nb['max']:<6.0f} "
                          f"{(statistics.median(wire) / 1e6 if wire else float('nan')):8.1f}")
    return rows


if __name__ == "__main__":
    sys.exit(main())
