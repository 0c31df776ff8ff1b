#!/usr/bin/env python3
"""Render a tessel trace (``--trace FILE.json``, Chrome trace-event format) as a PNG.

    python3 bench/trace_plot.py TRACE.json [-o OUT.png] [--phase PREFIX] [--title TEXT]

One lane per rank (rank 0 at the top), three rows in each lane:
  phase    the ledger phases (PhaseScope), the innermost on top, coloured by full name;
  comm     every transfer from posted to completed (point-to-point, collective, one-sided,
           shared-memory), coloured by kind and drawn translucent, so stacked transfers darken;
  compute  the local kernels (local GEMM calls).
Where comm and compute overlap in time the communication is hidden behind computation: the
picture the DBCSR paper asks for. Printed per rank: compute time, time with a transfer in
flight, and the overlap of the two (the fraction of communication time hidden by compute).
``--phase`` keeps only the time span of the phases whose name starts with PREFIX.
"""
import argparse
import json
import sys
from collections import defaultdict

KIND_COLOURS = {
    "p2p_send": "#d62728", "p2p_recv": "#ff7f0e", "coll": "#1f77b4",
    "rma_put": "#9467bd", "rma_get": "#8c564b", "rma_acc": "#e377c2", "shm": "#17becf",
}
PHASE_PALETTE = ["#c7c7c7", "#dbdb8d", "#9edae5", "#c5b0d5", "#f7b6d2", "#c49c94", "#aec7e8",
                 "#ffbb78", "#98df8a", "#ff9896"]


def union(intervals):
    """Sorted disjoint union of [b, e) intervals."""
    out = []
    for b, e in sorted(intervals):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return out


def length(iv):
    return sum(e - b for b, e in iv)


def intersect(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append([lo, hi])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def load(path):
    """Per rank: phases [(ts, end, name)], transfers [(ts, end, kind, bytes)], kernels [(ts, end)]."""
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    phases, kernels = defaultdict(list), defaultdict(list)
    transfers = defaultdict(list)
    posted = {}
    ranks = set()
    for e in events:
        pid = e.get("pid", 0)
        ranks.add(pid)
        ph = e.get("ph")
        if ph == "X":
            span = (e["ts"], e["ts"] + e.get("dur", 0.0))
            if e.get("cat") == "phase":
                phases[pid].append(span + (e["name"],))
            elif e.get("cat") == "compute":
                kernels[pid].append(span)
        elif ph == "b":
            posted[(pid, e["id"])] = e
        elif ph == "e":
            b = posted.pop((pid, e["id"]), None)
            if b is not None:
                a = b.get("args", {})
                transfers[pid].append((b["ts"], e["ts"], a.get("kind", b["name"]), a.get("bytes", 0)))
    return sorted(ranks), phases, transfers, kernels


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--out", help="PNG to write (default: TRACE with .png)")
    ap.add_argument("--phase", default="", help="only the time span of phases starting with this")
    ap.add_argument("--title", default=None)
    ap.add_argument("--width", type=float, default=14.0, help="figure width in inches")
    args = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    ranks, phases, transfers, kernels = load(args.trace)
    if not ranks:
        sys.exit(f"trace_plot: {args.trace} holds no events")
    lo, hi = 0.0, 0.0
    spans = [s for r in ranks for s in phases[r] if s[2].startswith(args.phase)]
    if args.phase and not spans:
        sys.exit(f"trace_plot: no phase starts with '{args.phase}'")
    allts = [s[1] for r in ranks for s in phases[r]] + [t[1] for r in ranks for t in transfers[r]]
    hi = max(allts) if allts else 1.0
    if args.phase:
        lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
    scale = 1e-3  # microseconds -> milliseconds

    top_names = sorted({s[2] for r in ranks for s in phases[r]})
    pcol = {n: PHASE_PALETTE[i % len(PHASE_PALETTE)] for i, n in enumerate(top_names)}
    fig, ax = plt.subplots(figsize=(args.width, 0.75 + 0.62 * len(ranks)))
    print(f"{'rank':>4} {'compute ms':>11} {'comm ms':>9} {'overlap ms':>11} {'comm hidden':>11}")
    for row, r in enumerate(ranks):
        y = len(ranks) - 1 - row
        clip = lambda iv: [(max(b, lo), min(e, hi)) for b, e in iv if e > lo and b < hi]
        # phases, outer ones first so that the innermost phase shows
        for b, e, n in sorted(phases[r], key=lambda s: s[2].count("/")):
            for cb, ce in clip([(b, e)]):
                ax.broken_barh([((cb - lo) * scale, (ce - cb) * scale)], (y + 0.56, 0.30),
                               facecolors=pcol[n], edgecolor="white", linewidth=0.3)
        by_kind = defaultdict(list)
        for b, e, kind, _ in transfers[r]:
            by_kind[kind].append((b, max(e, b + 0.5)))
        for kind, iv in by_kind.items():
            bars = [((b - lo) * scale, (e - b) * scale) for b, e in clip(iv)]
            ax.broken_barh(bars, (y + 0.30, 0.24), facecolors=KIND_COLOURS.get(kind, "k"),
                           alpha=0.35, edgecolor="none")
        kv = clip(kernels[r])
        ax.broken_barh([((b - lo) * scale, (e - b) * scale) for b, e in kv], (y + 0.04, 0.24),
                       facecolors="#2ca02c", edgecolor="none")
        comp = union(kv)
        comm = union(clip([(b, e) for b, e, _, _ in transfers[r]]))
        ov = length(intersect(comp, comm))
        cl = length(comm)
        print(f"{r:>4} {length(comp) * scale:>11.2f} {cl * scale:>9.2f} {ov * scale:>11.2f} "
              f"{(ov / cl if cl else 0):>10.0%}")
    ax.set_yticks([len(ranks) - 1 - i + 0.45 for i in range(len(ranks))])
    ax.set_yticklabels([f"rank {r}" for r in ranks])
    ax.set_ylim(-0.1, len(ranks) + 0.05)
    ax.set_xlim(0, (hi - lo) * scale)
    ax.set_xlabel("time (ms)" + (f" from the start of '{args.phase}'" if args.phase else ""))
    handles = [Patch(color="#2ca02c", label="compute (local GEMM)")]
    kinds = sorted({t[2] for r in ranks for t in transfers[r]})
    handles += [Patch(color=KIND_COLOURS.get(k, "k"), alpha=0.5, label=f"comm: {k}") for k in kinds]
    handles += [Patch(color=pcol[n], label=f"phase: {n}") for n in top_names]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.3 / len(ranks)),
              ncol=min(5, len(handles)), fontsize=8, frameon=False)
    ax.set_title(args.title or f"tessel trace: {args.trace.split('/')[-1]} "
                 "(per rank, top to bottom: phase, comm in flight, compute)", fontsize=10)
    fig.tight_layout()
    out = args.out or args.trace.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=110)
    print(f"trace_plot: wrote {out}")


if __name__ == "__main__":
    main()
