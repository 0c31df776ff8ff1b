#!/usr/bin/python3
"""doc_plots.py — the README's plots, drawn from the measured tables in docs/ and bench/README.md.

    python3 bench/doc_plots.py [--out-dir docs] [--only spgemm,density,gemm]

The benchmark scripts write their full JSON into bench/results/, which is not in the
repository; what the repository keeps is the tables in the docs, each beside the command that
produced it and its date. This script reads those tables (found by the sentence that introduces
each one, so a moved or renamed table fails here with that sentence) and renders:

  spgemm   docs/spgemm_vs_dbcsr.png   docs/sparse.md: time per multiply, DBCSR 2.5 against
           tessel Cannon and rma25d L = 1, 4, 9 and 16 ranks on 2 cores and 16 emulated nodes
  density  docs/density_scaling.png   docs/density.md: `tessel density` time against molecules
           (sign and TRS4, block-sparse, 4 ranks) and the dense purification where it was run
  gemm     docs/gemm_vs_peers.png     bench/README.md: time and bytes of tessel over COSMA
           native, COSMA's pdgemm_ wrapper and ScaLAPACK, 10 cases on 2 emulated clusters
  seed001  docs/simulation_seed001.png docs/simulation.md: SIMULATED time per S·S of Cannon and
           rma25d against nodes on daint-xc30.xml, and the speed-up over Cannon beside seed 001's

No benchmark is run. matplotlib and numpy come from Debian (python3-matplotlib, scripts/setup.sh):
run it with /usr/bin/python3 when another python3 comes first on PATH.
"""
import argparse
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def table_after(path, anchor):
    """The first markdown table after the line containing `anchor` in `path`: header, rows."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    start = next((i for i, l in enumerate(lines) if anchor in l), None)
    if start is None:
        sys.exit(f"doc_plots.py: '{anchor}' not found in {path}: the table moved; update ANCHORS")
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    if len(rows) < 3:
        sys.exit(f"doc_plots.py: no table after '{anchor}' in {path}")
    return rows[0], [r for r in rows[2:]]


def seconds(cell):
    """'4.31 s (0.38×), 45.2 MB' -> 4.31; a cell without seconds ('invalid on 3×3', '–') -> nan."""
    m = re.match(r"\s*([0-9.]+) s\b", cell) or re.match(r"\s*([0-9.]+)\s*$", cell)
    return float(m.group(1)) if m else math.nan


def number(cell):
    """'1,000' -> 1000.0; '58.8' -> 58.8; '–' -> nan."""
    m = re.match(r"\s*([0-9][0-9,]*\.?[0-9]*)", cell)
    return float(m.group(1).replace(",", "")) if m else math.nan


def pair(cell):
    """'0.84, 0.50' or '**1.05**, **1.39**, 0.66' -> (0.84, 0.50): time ratio, bytes ratio."""
    a, b = cell.replace("*", "").split(",")[:2]
    return float(a), float(b)


ANCHORS = {
    "spgemm_local": ("docs/sparse.md", "### Since session 11"),
    "spgemm_nc16": ("docs/sparse.md", "On the emulated cluster, 16 nodes × 1 rank"),
    "density_dense": ("docs/density.md", "Session 9 (idle machine"),
    "density_sign": ("docs/density.md", "**Memory, session 12.**"),
    "density_trs4": ("docs/density.md", "TRS4 at 2 products per step (session 15"),
    "gemm_peers": ("bench/README.md", "**The full table again on a faster VM (2026-12-08"),
    "seed001": ("docs/simulation.md", "**Seed 001 on one build, tuned collectives (2026-12-01)."),
}


def plot_spgemm(plt, out):
    hdr, local = table_after(*ANCHORS["spgemm_local"])
    _, nc16 = table_after(*ANCHORS["spgemm_nc16"])
    tools = ["DBCSR", "Cannon", "rma25d L = 1", "rma25d L = 4"]
    groups = []  # (label, [seconds per tool])
    for r in local:
        groups.append((f"{r[1].replace('CP2K 256', 'CP2K 256-water')}\n{r[0]} ranks",
                       [seconds(r[hdr.index(t)]) for t in tools]))
    for r in nc16:
        groups.append((f"{r[0].replace('CP2K 256', 'CP2K 256-water')}\n16 nodes (emul.)",
                       [seconds(c) for c in r[1:5]]))
    colours = ["#7f7f7f", "#1f77b4", "#2ca02c", "#98df8a"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 1]})
    for ax, case in zip(axes, ["water-ss:2000", "CP2K 256"]):
        sel = [g for g in groups if g[0].startswith(case)]
        for j, t in enumerate(tools):
            xs = [i + (j - 1.5) * 0.2 for i in range(len(sel))]
            ax.bar(xs, [g[1][j] for g in sel], 0.2, label=t, color=colours[j])
        ax.set_xticks(range(len(sel)))
        ax.set_xticklabels([g[0].split("\n")[1] for g in sel])
        ax.set_ylabel("seconds per multiply")
        ax.set_title("water S·S, 2,000 molecules" if case.startswith("water")
                     else "CP2K 256-water SZV, H·S")
    for ax in axes:
        ax.set_ylim(0, ax.get_ylim()[1] * 1.25)
    axes[0].legend(fontsize=8, ncol=4, loc="upper center")
    fig.suptitle("Block-sparse multiply, ε = 1e-6: tessel against DBCSR 2.5 (lower is better)\n"
                 "one 2-core machine, Open MPI (emul.: 16 emulated nodes, 1 Gbit); "
                 "docs/sparse.md, runs of 2026-11-27", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def matplotlib_null():
    from matplotlib.ticker import NullFormatter
    return NullFormatter()


def plot_density(plt, out):
    hdr9, rows9 = table_after(*ANCHORS["density_dense"])
    hs, sign = table_after(*ANCHORS["density_sign"])
    ht, trs4 = table_after(*ANCHORS["density_trs4"])
    dense = [(number(r[1]), number(r[hdr9.index("`--dense` s")])) for r in rows9
             if r[0] == "trs4" and not math.isnan(number(r[hdr9.index("`--dense` s")]))]
    s = [(number(r[0]), number(r[1])) for r in sign]
    t = [(number(r[0]), number(r[1])) for r in trs4]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ax.loglog(*zip(*s), "o-", color="#1f77b4", label="sign, block-sparse (tessel 2982892)")
    ax.loglog(*zip(*t), "s-", color="#2ca02c", label="TRS4, block-sparse (tessel 2c8052d)")
    # The dense runs come from an earlier VM (docs/density.md: not comparable in time with the
    # later tables), so the block-sparse TRS4 of that same run is drawn beside them.
    early = [(number(r[1]), number(r[hdr9.index("block-sparse s")])) for r in rows9
             if r[0] == "trs4"]
    ax.loglog(*zip(*early), "s--", color="#98df8a", mfc="none",
              label="TRS4, block-sparse, 3 products/step (5636acd, earlier VM)")
    ax.loglog(*zip(*dense), "x--", color="#7f7f7f",
              label="dense purification `--dense` (5636acd, earlier VM)")
    n0, t0 = t[0]
    ns = [n0, t[-1][0]]
    ax.loglog(ns, [t0 * (n / n0) for n in ns], ":", color="#bbbbbb", label="∝ N (linear)")
    ax.set_xlabel("water molecules (generated box)")
    ax.set_ylabel("seconds")
    ax.set_xticks([500, 1000, 2000, 4000])
    ax.set_xticklabels(["500", "1,000", "2,000", "4,000"])
    ax.xaxis.set_minor_formatter(matplotlib_null())
    ax.set_title("`tessel density`, ε = 1e-6, 4 ranks on 2 cores\n"
                 "docs/density.md (2026-11-27/28)", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def plot_gemm(plt, out):
    hdr, rows = table_after(*ANCHORS["gemm_peers"])
    def shape(case):  # 65536×512×512 -> two lines, so ten labels fit side by side
        return case.replace("×", "×\n", 1) if len(case) > 6 else case
    labels = [shape(r[0]) + "\n" + r[1].replace("nc:", "") for r in rows]
    series = [("tessel / COSMA (own layouts)", 2, "#1f77b4"),
              ("tessel pdgemm_ / COSMA pdgemm_", 3, "#ff7f0e"),
              ("tessel pdgemm_ / ScaLAPACK", 4, "#2ca02c")]
    fig, axes = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    for k, (ax, what) in enumerate(zip(axes, ["time", "bytes received"])):
        for j, (name, col, colour) in enumerate(series):
            xs = [i + (j - 1) * 0.27 for i in range(len(rows))]
            ax.bar(xs, [pair(r[col])[k] for r in rows], 0.27, label=name, color=colour)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_ylabel(f"{what} ratio")
        ax.set_ylim(0, ax.get_ylim()[1] * 1.2)
    axes[1].set_xticks(range(len(rows)))
    axes[1].set_xticklabels(labels, fontsize=8)
    axes[0].legend(fontsize=8, ncol=3, loc="upper center")
    fig.suptitle("Dense multiply: tessel over its peers (below 1: tessel better), emulated 8×1 "
                 "and 4×2 clusters, 1 Gbit\nbench/README.md, Issue 34 item 5: runs of 2026-12-08, idle "
                 "(machine files from `tessel calibrate`; bytes per rank by commcount)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def plot_seed001(plt, out):
    hdr, rows = table_after(*ANCHORS["seed001"])
    nodes = [int(r[0].replace(",", "")) for r in rows]
    cols = [("Cannon s", "Cannon", "#1f77b4"), ("rma25d L = 1 s", "rma25d L = 1", "#2ca02c"),
            ("rma25d L > 1 s", "rma25d L > 1 (L in the table)", "#98df8a")]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for key, label, colour in cols:
        ys = [number(r[hdr.index(key)]) for r in rows]
        axes[0].plot(nodes, ys, "o-", label=label, color=colour)
        if key != "Cannon s":
            base = [number(r[hdr.index("Cannon s")]) for r in rows]
            axes[1].plot(nodes, [b / y for b, y in zip(base, ys)], "o-", label=label, color=colour)
    # seed 001, Table 2 / Figure 1 (H2O-DFT-LS, DZVP): OS1 over PTP and the best L over PTP
    seed_nodes = [200, 400, 729, 1296, 2704]  # seed 001 Table 2, H2O-DFT-LS, seconds
    ptp, os1, best = [325, 212, 155, 136, 99], [298, 184, 137, 120, 85], [260, 148, 117, 85, 55]
    axes[1].plot(seed_nodes, [a / b for a, b in zip(ptp, os1)], "s--", color="#2ca02c", alpha=0.5,
                 label="seed 001 (measured, DZVP): OS1 over PTP")
    axes[1].plot(seed_nodes, [a / b for a, b in zip(ptp, best)], "s--", color="#98df8a",
                 alpha=0.8, label="seed 001 (measured, DZVP): best OSL over PTP")
    axes[1].axhline(1.0, color="#7f7f7f", lw=0.8)
    for ax, ticks in zip(axes, [nodes, sorted(set(nodes) | set(seed_nodes))]):
        ax.set_xscale("log")
        ax.set_xlabel("nodes (one rank per node)")
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{n:,}" for n in ticks])
        ax.xaxis.set_minor_formatter(matplotlib_null())
    axes[0].set_yscale("log")
    axes[0].set_ylabel("SIMULATED seconds per S·S")
    axes[1].set_ylabel("speed-up over Cannon (higher is better)")
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=7)
    fig.suptitle("Seed 001 SIMULATED on daint-xc30.xml (SMPI 3.32): water S·S, 6,912 molecules, "
                 "SZV, ε = 1e-6\ndocs/simulation.md, runs of 2026-12-01", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


PLOTS = {"spgemm": ("spgemm_vs_dbcsr.png", plot_spgemm),
         "seed001": ("simulation_seed001.png", plot_seed001),
         "density": ("density_scaling.png", plot_density),
         "gemm": ("gemm_vs_peers.png", plot_gemm)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", default=str(ROOT / "docs"))
    ap.add_argument("--only", default=",".join(PLOTS), help="comma list of " + ", ".join(PLOTS))
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for name in args.only.split(","):
        if name not in PLOTS:
            sys.exit(f"doc_plots.py: unknown plot '{name}' (one of {', '.join(PLOTS)})")
        fname, fn = PLOTS[name]
        out = Path(args.out_dir) / fname
        fn(plt, out)
        plt.close("all")
        print(f"doc_plots.py: wrote {out}")


if __name__ == "__main__":
    main()
