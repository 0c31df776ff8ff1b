#!/usr/bin/env python3
"""coll_overlap.py - drive build/bench/coll_overlap (seed 000, Figure 5) and plot it.

    python3 bench/coll_overlap.py [--launch local|netcluster] [--nodes 4] [--ppn 4]
        [--sizes 64K,128K,...,16M] [--modes blocking,mpi-ndup,p2p-ndup] [--ops bcast,reduce]
        [--repeat 5] [--warmup 1] [--ndup 4] [--segment 32K] [--mca KEY=VALUE ...]
        [--algo-study] [--algo-bytes 8M] [--segment-study 16K,32K,128K,256K] [--manage-cluster --rate 1gbit --delay 50us]
        [--build build] [--out bench/results] [--name NAME] [--timeout 600]

Two launches per run (one JSON each, merged):
  1. nodes ranks, one per node (--map-by ppr:1:node on the cluster): the one-rank-per-node
     --modes (blocking, mpi-1, mpi-ndup, p2p-1, p2p-ndup);
  2. nodes*ppn ranks, ppn per node (--map-by ppr:PPN:node): mode "ppn" (PPN column
     communicators of `nodes` ranks, each 1/PPN of the message, blocking). --ppn 1 skips it.
--algo-study adds, for --algo-bytes (broadcast only, one rank per node), one launch per
Open MPI libnbc Ibcast algorithm (default = ignore/0, 1 linear, 3 chain) with modes mpi-1,
mpi-ndup, p2p-1, p2p-ndup, so the effect of Open MPI's algorithm is compared with tessel's
chain in one table.
--segment-study adds one launch per segment size (one rank per node, --algo-bytes, both ops,
modes p2p-1 and p2p-ndup).
--launch local: `mpirun --oversubscribe` on this machine (shared memory: no network, so the
overlap effects mostly vanish). --launch netcluster: ../shared/tools/netcluster/netcluster.sh
run (the cluster must be up, or pass --manage-cluster to bring it up and always down).

Writes <out>/<name>.json (all raw times: {"runs": [the coll_overlap JSONs + launch command]})
and <out>/<name>.png (bandwidth vs message size, one panel per operation, as Figure 5), and
prints a table of median bandwidths (MB/s, bandwidth = 2 (p - 1) n / p / t, p = nodes).
"""
import argparse
import datetime
import json
import os
import shlex
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
from mpi_env import mpi_env  # noqa: E402


def _reexec_with_debian_python():
    """matplotlib comes from Debian (python3-matplotlib, scripts/setup.sh): when another python3
    (pyenv, venv) runs this script without it, re-run under /usr/bin/python3 (as gemm_bench.py)."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    deb = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(deb) and os.access(deb, os.X_OK) \
            and not os.environ.get("COLL_OVERLAP_REEXEC"):
        os.environ["COLL_OVERLAP_REEXEC"] = "1"
        os.execv(deb, [deb, os.path.abspath(__file__)] + sys.argv[1:])


_reexec_with_debian_python()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NC = os.path.normpath(os.path.join(ROOT, "..", "shared", "tools", "netcluster", "netcluster.sh"))


def parse_bytes(s):
    s = s.strip().upper()
    mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def human(n):
    for unit, f in (("M", 1024 ** 2), ("K", 1024)):
        if n >= f and n % f == 0:
            return f"{n // f}{unit}"
    return str(n)


def launch(args, ranks, ppn, prog_args, mca, label):
    exe = os.path.join(os.path.abspath(args.build), "bench", "coll_overlap")
    mca_args = []
    for kv in mca:
        k, v = kv.split("=", 1)
        mca_args += ["--mca", k, v]
    if args.launch == "local":
        cmd = ["mpirun", "--oversubscribe", "-np", str(ranks)] + mca_args
    else:
        cmd = [NC, "run", "--", "-np", str(ranks), "--map-by", f"ppr:{ppn}:node",
               "--bind-to", "none"] + mca_args  # else every node's ranks share core 0
    cmd += [exe] + prog_args
    print("+", " ".join(shlex.quote(c) for c in cmd), flush=True)
    r = subprocess.run(cmd, env=mpi_env(), timeout=args.timeout, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(r.stdout)
    if r.returncode != 0:
        raise SystemExit(f"coll_overlap.py: launch failed (exit {r.returncode}): {label}")
    return " ".join(shlex.quote(c) for c in cmd)


def run_one(args, tmpdir, label, ranks, ppn, modes, ops, sizes, mca):
    jpath = os.path.join(tmpdir, f"{label}.json")
    prog = ["--nodes", str(args.nodes), "--modes", ",".join(modes), "--ops", ",".join(ops),
            "--sizes", ",".join(str(s) for s in sizes), "--ndup", str(args.ndup),
            "--segment", str(parse_bytes(args.segment)), "--repeat", str(args.repeat),
            "--warmup", str(args.warmup), "--label", label, "--json", jpath]
    cmd = launch(args, ranks, ppn, prog, mca, label)
    with open(jpath) as f:
        j = json.load(f)
    j["command"] = cmd
    j["launch"] = args.launch
    j["mca"] = mca
    return j


def table(runs):
    lines = []
    for run in runs:
        lines.append(f"## {run['label']}  ({run['ranks']} ranks, {run['ppn']} per node, "
                     f"p2p segment {human(run['segment_bytes'])}, mca {run.get('mca') or 'none'})")
        by = {}
        for r in run["results"]:
            by.setdefault((r["op"], r["bytes"]), {})[r["mode"]] = r
        modes = []
        for r in run["results"]:
            if r["mode"] not in modes:
                modes.append(r["mode"])
        lines.append("| op | bytes | " + " | ".join(f"{m} MB/s (median s)" for m in modes) + " |")
        lines.append("|---|---:|" + "---:|" * len(modes))
        for (op, b), row in by.items():
            cells = []
            for m in modes:
                r = row.get(m)
                cells.append(f"{r['bandwidth_Bps'] / 1e6:.1f} ({r['median_s']:.5f})" if r else "")
            lines.append(f"| {op} | {human(b)} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def plot(runs, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("coll_overlap.py: matplotlib not available; no plot", file=sys.stderr)
        return
    series = {}  # (op, legend) -> [(bytes, bw)]
    for run in runs:
        if run["label"].startswith(("algo", "seg-")):
            continue
        for r in run["results"]:
            legend = {"blocking": "blocking (MPI_Bcast/MPI_Reduce, 1 PPN)",
                      "mpi-1": "nonblocking MPI, 1 collective",
                      "mpi-ndup": f"nonblocking MPI, N_DUP = {run['ndup']}",
                      "p2p-1": "tessel p2p chain, 1 collective",
                      "p2p-ndup": f"tessel p2p chain, N_DUP = {run['ndup']}",
                      "ppn": f"{run['ppn']} PPN (blocking, 1/{run['ppn']} each)"}[r["mode"]]
            series.setdefault((r["op"], legend), []).append((r["bytes"], r["bandwidth_Bps"] / 1e6))
    ops = sorted({op for op, _ in series}, key=lambda o: ["bcast", "reduce"].index(o))
    fig, axes = plt.subplots(1, len(ops), figsize=(6 * len(ops), 4.5), squeeze=False)
    for ax, op in zip(axes[0], ops):
        for (o, legend), pts in series.items():
            if o != op:
                continue
            pts.sort()
            ax.plot([p[0] / 1024 for p in pts], [p[1] for p in pts], marker="o", label=legend)
        ax.set_xscale("log", base=2)
        ticks = sorted({p[0] for (o, _), pts in series.items() if o == op for p in pts})
        ax.set_xticks([t / 1024 for t in ticks])
        ax.set_xticklabels([human(t) for t in ticks], fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bandwidth 2(p-1)n/p/t (MB/s)")
        ax.set_title({"bcast": "Broadcast", "reduce": "Reduction"}[op])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print("wrote", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--launch", choices=["local", "netcluster"], default="local")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--ppn", type=int, default=4)
    ap.add_argument("--sizes", default="64K,128K,256K,512K,1M,2M,4M,8M,16M")
    ap.add_argument("--modes", default="blocking,mpi-ndup,p2p-ndup")
    ap.add_argument("--ops", default="bcast,reduce")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--ndup", type=int, default=4)
    ap.add_argument("--segment", default="32K")
    ap.add_argument("--mca", action="append", default=[], help="KEY=VALUE, for every launch")
    ap.add_argument("--algo-study", action="store_true")
    ap.add_argument("--algo-bytes", default="8M")
    ap.add_argument("--segment-study", default="", help="segment sizes, e.g. 16K,32K,128K")
    ap.add_argument("--algo-only", action="store_true",
                    help="only the --algo-study / --segment-study launches")
    ap.add_argument("--manage-cluster", action="store_true")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--delay", default="50us")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--name", default=None)
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args()

    sizes = [parse_bytes(s) for s in args.sizes.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    ops = [o for o in args.ops.split(",") if o]
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    name = args.name or f"coll-overlap-{args.launch}-{socket.gethostname()}-{stamp}"
    os.makedirs(args.out, exist_ok=True)
    tmpdir = os.path.join(args.out, name)
    os.makedirs(tmpdir, exist_ok=True)

    if args.manage_cluster:
        subprocess.run([NC, "up", str(args.nodes), "--rate", args.rate, "--delay", args.delay],
                       check=True)
    runs = []
    try:
        if not args.algo_only:
            if modes:
                runs.append(run_one(args, tmpdir, "1ppn", args.nodes, 1, modes, ops, sizes,
                                    args.mca))
            if args.ppn > 1:
                runs.append(run_one(args, tmpdir, f"{args.ppn}ppn", args.nodes * args.ppn,
                                    args.ppn, ["ppn"], ops, sizes, args.mca))
        if args.algo_study:
            for alg, aname in ((0, "default"), (1, "linear"), (3, "chain")):
                mca = args.mca + ([f"coll_libnbc_ibcast_algorithm={alg}"] if alg else [])
                runs.append(run_one(args, tmpdir, f"algo-{aname}", args.nodes, 1,
                                    ["mpi-1", "mpi-ndup", "p2p-1", "p2p-ndup"], ["bcast"],
                                    [parse_bytes(args.algo_bytes)], mca))
        for seg in [x for x in args.segment_study.split(",") if x]:
            seg_args = argparse.Namespace(**vars(args))
            seg_args.segment = seg
            runs.append(run_one(seg_args, tmpdir, f"seg-{seg}", args.nodes, 1,
                                ["p2p-1", "p2p-ndup"], ["bcast", "reduce"],
                                [parse_bytes(args.algo_bytes)], args.mca))
    finally:
        if args.manage_cluster:
            subprocess.run([NC, "down"])

    meta = {"tool": "coll_overlap.py", "launch": args.launch, "nodes": args.nodes,
            "host": socket.gethostname(), "date": stamp,
            "cluster": {"rate": args.rate, "delay": args.delay} if args.launch == "netcluster" else None,
            "runs": runs}
    jpath = os.path.join(args.out, name + ".json")
    with open(jpath, "w") as f:
        json.dump(meta, f, indent=1)
    print("wrote", jpath)
    print(table(runs))
    if any(not r["label"].startswith(("algo", "seg-")) for r in runs):
        where = (f"emulated cluster, {args.nodes} nodes, {args.rate}, {args.delay}"
                 if args.launch == "netcluster" else f"this machine, shared memory (oversubscribed)")
        plot(runs, os.path.join(args.out, name + ".png"),
             f"coll_overlap (seed 000 Fig. 5): p = {args.nodes}, {where}")
    if any(r.get("check") != "ok" for r in runs):
        raise SystemExit("coll_overlap.py: a result check failed")


if __name__ == "__main__":
    main()
