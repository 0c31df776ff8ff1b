#!/usr/bin/python3
"""simulate.py — one tessel case on a simulated cluster (SimGrid SMPI) at a list of node counts.

    python3 bench/simulate.py --platform bench/simulate/platforms/daint-xc30.xml \\
        --nodes 16,64,256 --name spgemm-water2000 \\
        -- spgemm --generate water:2000 --eps 1e-6 --algorithm cannon

Every run is `scripts/smpi_run.py` with the SMPI build's tessel (build-smpi/, made by
`scripts/setup.sh --smpi`) on NODES x PPN ranks (--ppn, default 1), or on the rank counts of
--ranks (nodes = ranks / PPN rounded up, the last node partly filled), and the case's command
(after --) plus --json. A case with `--simulate-compute skip` (gemm, ssc: the local products
charged, not computed; docs/simulation.md) runs as smpi_run.py runs it. Per run it records:
  - the simulated time: the command's own median time per call, read from its JSON
    (spgemm, gemm, ssc: median_s; stencil: solve_seconds, or with --apply-only the median
    time of one H apply in the run's --overlap order) — simulated seconds, since the SMPI
    build's clock is the simulated one — and SMPI's simulated time of the whole run;
  - for the stencil also its overlap measurement (a second table): points, neighbours, the
    apply and exchange times in the plain and the overlapped order, the hidden, hideable and
    saved fractions (docs/stencil.md);
  - the ledger's bytes per rank, mean and max: received bytes (point-to-point and one-sided)
    and collective bytes of the call (spgemm, ssc: "all" of ledger_one_call; gemm: the "gemm"
    phases; stencil: halo bytes per apply, sent + received);
  - memory per rank: what tessel accounts where the command reports it (gemm: the plan's
    words needed x 8 B; spgemm: the accounted peak of the first multiply, max over ranks); else the simulator's peak resident memory divided by the ranks (all
    ranks live in the one simulator process; an upper bound that includes the program copies);
  - the wall time of the simulation and the load average of this machine at its end.
Writes docs/bench/simulate/<name>.json (rows + the command lines), <name>.md (a Markdown table;
every time labelled "simulated" with the platform file) and <name>.png (time and bytes per
rank against nodes). --out DIR changes the folder.

What SMPI lacks and the platform files: docs/simulation.md.
"""
import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import smpi_run  # noqa: E402


def ledger_numbers(j):
    """(recv mean, recv max, coll mean, coll max) bytes per rank of one call, from a command's JSON."""
    cmd = j.get("command")
    if cmd in ("spgemm", "ssc"):
        a = j["ledger_one_call"]["all"]
    elif cmd == "gemm":
        a = j["ledger"]["gemm"]
    elif cmd == "stencil":
        h = j["exchange"]["halo_bytes_per_rank_per_apply"]
        return h["mean"], h["max"], None, None
    else:
        raise SystemExit(f"simulate.py: no ledger reading for command '{cmd}'")
    return (a["recv_bytes"]["mean"], a["recv_bytes"]["max"], a["coll_bytes"]["mean"],
            a["coll_bytes"]["max"])


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return None if n == 0 else (xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2]))


def call_seconds(j):
    cmd = j.get("command")
    if cmd in ("spgemm", "gemm", "ssc"):
        return j["median_s"]
    if cmd == "stencil":
        if j.get("apply_only"):  # one H apply of the batch in the run's order (--overlap)
            e = j["exchange"]
            return median(e["apply_overlapped_seconds" if j.get("overlap") == "on"
                            else "apply_plain_seconds"])
        return j["solve_seconds"]
    return None


def stencil_columns(j):
    """The stencil's overlap measurement (docs/stencil.md): medians over --repeat applies."""
    e, part = j["exchange"], j["partition"]
    return {"points": j["points"], "batch": e["batch"],
            "points_per_rank_mean": part["points_per_rank"]["mean"],
            "neighbors_mean": e["neighbors_per_rank"]["mean"],
            "neighbors_max": e["neighbors_per_rank"]["max"],
            "apply_plain_s": median(e["apply_plain_seconds"]),
            "apply_overlapped_s": median(e["apply_overlapped_seconds"]),
            "exchange_plain_s": median(e["plain_seconds"]),
            "exchange_exposed_s": median(e["overlapped_exposed_seconds"]),
            "hidden": e["hidden_fraction"], "hideable": e["hideable_fraction"],
            "saved": e["saved_fraction"], "transfer_hidden": transfer_hidden(e)}


def transfer_hidden(e):
    """The part of the exchange's network time the overlap hid, packing excluded (packing and
    posting run before either order can overlap anything): 1 - median(tests + wait, overlapped)
    / median(wait, plain), at least 0; None when the command did not report the parts (before
    2026-11-28) or the plain wait is 0."""
    plain, over = e.get("plain_wait_seconds"), e.get("overlapped_test_wait_seconds")
    if not plain or not over or median(plain) <= 0:
        return None
    return max(0.0, 1 - median(over) / median(plain))


def memory_per_rank(j, np, rss_bytes):
    if j.get("command") == "gemm" and "memory_words_needed" in j.get("plan", {}):
        return j["plan"]["memory_words_needed"] * 8.0, "tessel (gemm plan)"
    if j.get("command") == "spgemm" and "memory_peak_bytes_max" in j:
        return j["memory_peak_bytes_max"], "tessel (spgemm: accounted peak, max over ranks)"
    return rss_bytes / np, "simulator RSS / ranks"


def human(b):
    if b is None:
        return "-"
    for unit, f in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= f:
            return f"{b / f:.3g} {unit}"
    return f"{b:.3g} B"


def plot(rows, path, title):
    try:
        import matplotlib
    except ImportError:  # e.g. a python3 without it (the Debian one has it: python3-matplotlib)
        print("simulate.py: no matplotlib: no plot")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = [r for r in rows if r.get("exit") == 0 and r.get("call_s") is not None]
    if not ok:
        return False
    n = [r["nodes"] for r in ok]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.plot(n, [r["call_s"] for r in ok], "o-")
    a.set_xscale("log")
    a.set_yscale("log")
    a.set_xlabel("nodes")
    a.set_ylabel("simulated seconds per call")
    a.grid(True, which="both", alpha=0.3)
    # the stencil's ledger numbers are its halo bytes, sent + received (ledger_numbers)
    what = "halo sent + received" if "stencil" in ok[0] else "received"
    b.plot(n, [r["recv_mean"] for r in ok], "o-", label=f"{what}, mean")
    b.plot(n, [r["recv_max"] for r in ok], "s--", label=f"{what}, max")
    b.set_xscale("log")
    b.set_yscale("log")
    b.set_xlabel("nodes")
    b.set_ylabel("bytes per rank per call (ledger)")
    b.legend()
    b.grid(True, which="both", alpha=0.3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def pct(x):
    return "-" if x is None else f"{100 * x:.0f}%"


def stencil_table(rows, plat):
    """Markdown lines of the stencil's overlap columns (none for other commands)."""
    st = [r for r in rows if "stencil" in r]
    if not st:
        return []
    out = ["", f"Halo exchange (SIMULATED on `{plat}`; medians; hidden = 1 - exposed / plain, "
           "transfer hidden = the same without packing, 1 - (tests + wait, overlapped) / wait "
           "(plain), hideable = min(1, V + inner points / plain exchange), saved = (apply plain - "
           "apply overlapped) / plain exchange; docs/stencil.md):", "",
           "| nodes | points | points/rank | batch | neighbours mean / max | halo B/rank/apply "
           "mean | apply plain ms | apply overlapped ms | exchange plain ms | exposed ms | "
           "hidden | transfer hidden | hideable | saved |",
           "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in st:
        c = r["stencil"]
        out.append(f"| {r['nodes']} | {c['points']:,} | {c['points_per_rank_mean']:,.0f} | "
                   f"{c['batch']} | {c['neighbors_mean']:.1f} / {c['neighbors_max']:.0f} | "
                   f"{human(r['recv_mean'])} | {1e3 * c['apply_plain_s']:.3f} | "
                   f"{1e3 * c['apply_overlapped_s']:.3f} | {1e3 * c['exchange_plain_s']:.3f} | "
                   f"{1e3 * c['exchange_exposed_s']:.3f} | {100 * c['hidden']:.0f}% | "
                   f"{pct(c['transfer_hidden'])} | {100 * c['hideable']:.0f}% | "
                   f"{100 * c['saved']:.0f}% |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--platform", required=True, help="SimGrid platform file")
    ap.add_argument("--nodes", help="comma-separated node counts (ranks = nodes x ppn)")
    ap.add_argument("--ranks", help="comma-separated rank counts instead of --nodes "
                    "(nodes = ranks / ppn, rounded up)")
    ap.add_argument("--ppn", type=int, default=1, help="ranks per node (default 1)")
    ap.add_argument("--name", required=True, help="name of the result files")
    ap.add_argument("--out", default=str(ROOT / "docs" / "bench" / "simulate"))
    ap.add_argument("--tessel", default=str(ROOT / "build-smpi" / "apps" / "tessel" / "tessel"))
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    ap.add_argument("--cfg", action="append", default=[],
                    help="extra SMPI setting KEY:VALUE for every run (smpi_run.py --cfg)")
    ap.add_argument("--node-speed", help="the platform's host speed replaced by this "
                    "(smpi_run.py --node-speed, e.g. a process standing for several cores)")
    ap.add_argument("--no-privatize-above", type=int, default=256,
                    help="ranks above which smpirun -no-privatize is used (no program copy per rank)")
    ap.add_argument("case", nargs=argparse.REMAINDER, help="-- tessel SUBCOMMAND ARGS")
    a = ap.parse_args()
    # SIGTERM ends this script through SystemExit, so the runner below is terminated (not
    # SIGKILLed) and smpi_run.py takes the simulator down with it.
    signal.signal(signal.SIGTERM, lambda signum, _f: sys.exit(128 + signum))
    case = a.case[1:] if a.case[:1] == ["--"] else a.case
    if bool(a.nodes) == bool(a.ranks):
        ap.error("give one of --nodes and --ranks")
    if not case:
        ap.error("no case (give the tessel subcommand and its options after --)")
    if not os.access(a.tessel, os.X_OK):
        raise SystemExit(f"simulate.py: no SMPI tessel at {a.tessel} (scripts/setup.sh --smpi)")
    plat = os.path.relpath(a.platform, ROOT)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    counts = [(int(x), int(x) * a.ppn) for x in a.nodes.split(",")] if a.nodes else \
        [(-(-int(x) // a.ppn), int(x)) for x in a.ranks.split(",")]
    for nodes, np in counts:
        with tempfile.TemporaryDirectory() as tmp:
            jpath = os.path.join(tmp, "run.json")
            # A process per run, so that its children's peak memory is this run's alone.
            cmd = [sys.executable, str(ROOT / "scripts" / "smpi_run.py"), "--platform",
                   a.platform, "--np", str(np), "--ppn", str(a.ppn), "--timeout", str(a.timeout)]
            if np > a.no_privatize_above:
                cmd.append("--no-privatize")
            if a.node_speed:
                cmd += ["--node-speed", a.node_speed]
            for c in a.cfg:
                cmd += ["--cfg", c]
            # SIGTERM, not subprocess.run's SIGKILL, when this script is interrupted or killed:
            # smpi_run.py then takes the simulator down with it.
            p = subprocess.Popen(cmd + ["--", a.tessel] + case + ["--json", jpath],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 stdin=subprocess.DEVNULL)
            try:
                text, _ = p.communicate()
            except BaseException:
                p.terminate()
                p.wait()
                raise
            try:
                info = json.loads(text.strip().splitlines()[-1])["smpi"]
            except (IndexError, ValueError, KeyError):
                info = {"simulated_s": None, "wall_s": 0.0, "exit": p.returncode,
                        "maxrss_bytes": 0}
            status, sim, wall, rss = info["exit"], info["simulated_s"], info["wall_s"], \
                info["maxrss_bytes"]
            row = {"nodes": nodes, "ppn": a.ppn, "ranks": np, "exit": status,
                   "simulated_run_s": sim, "wall_s": wall,
                   "load": open("/proc/loadavg").read().split()[:3]}
            if status == 0 and os.path.exists(jpath):
                with open(jpath) as f:
                    j = json.load(f)
                rm, rx, cm, cx = ledger_numbers(j)
                mem, mem_src = memory_per_rank(j, np, rss)
                row.update({"call_s": call_seconds(j), "recv_mean": rm, "recv_max": rx,
                            "coll_mean": cm, "coll_max": cx, "memory_per_rank": mem,
                            "memory_source": mem_src, "result": j})
                if j.get("command") == "stencil":
                    row["stencil"] = stencil_columns(j)
            else:
                row["tail"] = text[-2000:]
        rows.append(row)
        print(f"simulate.py: {a.name}: {nodes} nodes x {a.ppn}: exit {status}, "
              f"simulated {row.get('call_s')} s per call, recv/rank mean {human(row.get('recv_mean'))} "
              f"max {human(row.get('recv_max'))}, wall {wall:.1f} s", flush=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    skip = smpi_run.skips_compute(case)
    doc = {"name": a.name, "platform": plat, "ppn": a.ppn, "node_speed": a.node_speed,
           "case": case, "date": stamp,
           "tessel": a.tessel,
           "smpi_cfg": smpi_run.SMPI_CFG + (smpi_run.SKIP_CFG if skip else []) + a.cfg,
           "rows": rows}
    (out / f"{a.name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [f"`tessel {' '.join(case)}` on `{plat}` (SIMULATED, SMPI 3.32; {a.ppn} rank(s) per "
             f"node; {stamp})" +
             (f" — host speed set to {a.node_speed}" if a.node_speed else "") +
             (f" — --cfg {' '.join(a.cfg)}" if a.cfg else "") +
             (" — local products SKIPPED and charged at the node speed: results meaningless, "
              "times and bytes are the output" if skip else ""), "",
             "| nodes | ranks | simulated s per call | recv B/rank mean | recv B/rank max | "
             "coll B/rank mean | memory/rank | simulation wall s | load |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if r["exit"] != 0:
            lines.append(f"| {r['nodes']} | {r['ranks']} | failed (exit {r['exit']}) | | | | | "
                         f"{r['wall_s']:.1f} | {' '.join(r['load'])} |")
            continue
        cs = r.get("call_s")
        lines.append(f"| {r['nodes']} | {r['ranks']} | {cs:.4g} | {human(r['recv_mean'])} | "
                     f"{human(r['recv_max'])} | {human(r['coll_mean'])} | "
                     f"{human(r['memory_per_rank'])} ({r['memory_source']}) | {r['wall_s']:.1f} | "
                     f"{' '.join(r['load'])} |")
    lines += stencil_table(rows, plat)
    (out / f"{a.name}.md").write_text("\n".join(lines) + "\n")
    if plot(rows, out / f"{a.name}.png", f"tessel {' '.join(case)}\nSIMULATED on {plat}"):
        print(f"simulate.py: wrote {out / a.name}.{{json,md,png}}")
    else:
        print(f"simulate.py: wrote {out / a.name}.{{json,md}} (no successful run to plot)")
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
