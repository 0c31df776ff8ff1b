#!/usr/bin/env python3
"""mpitrace_report.py — reads the per-rank timelines of bench/mpitrace.c and prints, per rank,
the program's MPI phases and the work between them, so two programs traced the same way can be
compared side by side.

  python3 bench/mpitrace_report.py PREFIX [PREFIX2 ...] [--gap-ms 2] [--arrivals] [--ranks 0,1]

A phase is a stretch of MPI activity (posts, blocking calls, completions) with no pause longer
than --gap-ms; the pause after it is the program's own work ("work", e.g. a GEMM). Per phase:
start, end and length (ms since MPI_Pcontrol(2)), bytes posted or sent, bytes received (completed
receives and blocking receives/collectives), messages. --arrivals adds, per phase, each completed
receive: peer, bytes, posted at, completed at (the order of arrival as the program saw it: a
completion is only seen inside a Wait/Test call).
"""
import argparse
import glob
import sys


def load(prefix):
    ranks = {}
    for path in sorted(glob.glob(f"{prefix}.*.tsv")):
        rank = int(path[len(prefix) + 1:-4])
        ev = []
        with open(path) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                kind, t0, t1, peer, nbytes, what = line.rstrip("\n").split("\t")
                ev.append((kind, float(t0), float(t1), int(peer), int(nbytes), what))
        ranks[rank] = ev
    if not ranks:
        raise SystemExit(f"mpitrace_report: no files {prefix}.<rank>.tsv")
    return ranks


def phases(events, gap):
    """Groups events by activity time (a "done" counts at its completion) into phases."""
    spans = []
    for e in sorted(events, key=lambda e: (e[2] if e[0] == "done" else e[1])):
        kind, t0, t1, peer, nbytes, what = e
        start = t1 if kind == "done" else t0
        if spans and start - spans[-1]["end"] <= gap:
            s = spans[-1]
        else:
            s = {"start": start, "end": start, "out": 0, "in": 0, "msgs": 0, "arrivals": []}
            spans.append(s)
        s["end"] = max(s["end"], t1)
        if kind == "post" and what == "isend" or kind == "call" and what == "send":
            s["out"] += nbytes
            s["msgs"] += 1
        if kind == "done" and what == "irecv":
            s["in"] += nbytes
            s["arrivals"].append((peer, nbytes, t0, t1))
        if kind == "call" and what not in ("send", "wait", "waitall", "waitany", "waitsome"):
            s["in"] += nbytes  # blocking receives and collectives
    return spans


def report(prefix, gap, arrivals, only):
    ranks = load(prefix)
    print(f"== {prefix}: {len(ranks)} ranks (times in ms since MPI_Pcontrol(2))")
    for r in sorted(ranks):
        if only and r not in only:
            continue
        spans = phases(ranks[r], gap)
        print(f" rank {r}: {len(spans)} MPI phases")
        for i, s in enumerate(spans):
            work = (spans[i + 1]["start"] - s["end"]) if i + 1 < len(spans) else 0.0
            print(f"  mpi {1e3 * s['start']:9.2f} .. {1e3 * s['end']:9.2f} ({1e3 * (s['end'] - s['start']):8.2f}) "
                  f"out {s['out'] / 1e6:7.3f} MB in {s['in'] / 1e6:7.3f} MB msgs {s['msgs']:4d}"
                  + (f"   then work {1e3 * work:8.2f}" if work else ""))
            if arrivals:
                for peer, nbytes, t0, t1 in s["arrivals"]:
                    print(f"      from {peer:3d} {nbytes / 1e6:7.3f} MB posted {1e3 * t0:9.2f} done {1e3 * t1:9.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefix", nargs="+")
    ap.add_argument("--gap-ms", type=float, default=2.0)
    ap.add_argument("--arrivals", action="store_true")
    ap.add_argument("--ranks", default="")
    a = ap.parse_args()
    only = {int(x) for x in a.ranks.split(",") if x}
    for p in a.prefix:
        report(p, a.gap_ms / 1e3, a.arrivals, only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
