#!/usr/bin/python3
"""gemm_bench.py — tessel gemm against ScaLAPACK pdgemm, alternating, with commcount.

For every case (m, n, k) and rank count it runs the tessel command and the ScaLAPACK driver
(bench/scalapack_gemm) alternately, tessel, scalapack, tessel, scalapack ... (--pairs times),
each under mpirun with ../shared/tools/commcount preloaded, so both see the same machine load.
The MPI environment is taken from scripts/mpi-env.sh (sourced by a bash wrapper, never copied).

Writes bench/results/gemm-<host>-<date>.json (configuration, every run with its JSON and its
commcount summary, and a summary per case and rank count), a PNG plot next to it (time ratio
tessel/ScaLAPACK, received-bytes ratio, bytes against the Theorem 2 bound when tessel reports
it), the raw files in bench/results/gemm-<host>-<date>/, and prints a table of medians and
ratios. A failed run is reported with its command and the end of its output, and the
benchmark goes on; the exit status is 1 when any run failed.

Examples:
    python3 bench/gemm_bench.py --quick --ranks 4 --pairs 1
    python3 bench/gemm_bench.py --cases square-2048x2048x2048,tall-skinny --ranks 4,8
    python3 bench/gemm_bench.py --tools scalapack --quick --ranks 4
"""
import argparse
import datetime
import json
import math
import os
import re
import shlex
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import end_group  # noqa: E402


def _reexec_with_debian_python():
    """numpy/matplotlib come from Debian packages (python3-numpy, python3-matplotlib): when
    another python3 (pyenv, venv) runs this script without them, re-run under /usr/bin/python3."""
    try:
        import matplotlib  # noqa: F401
        import numpy  # noqa: F401
        return
    except ImportError:
        pass
    deb = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(deb) and os.access(deb, os.X_OK) \
            and not os.environ.get("GEMM_BENCH_REEXEC"):
        os.environ["GEMM_BENCH_REEXEC"] = "1"
        os.execv(deb, [deb, os.path.abspath(__file__)] + sys.argv[1:])


_reexec_with_debian_python()
ROOT = Path(__file__).resolve().parent.parent
MPI_ENV = ROOT / "scripts" / "mpi-env.sh"

# (kind, m, n, k)
DEFAULT_CASES = [
    ("square", 2048, 2048, 2048),
    ("square", 4096, 4096, 4096),
    ("tall-skinny", 512, 512, 65536),
    ("flat", 8192, 8192, 256),
    ("largeM", 65536, 512, 512),
]
QUICK_CASES = [
    ("square", 512, 512, 512),
    ("square", 1024, 1024, 1024),
    ("tall-skinny", 128, 128, 8192),
    ("flat", 1024, 1024, 64),
    ("largeM", 8192, 128, 128),
]
TOOLS = ("tessel", "scalapack")  # alternated; on 1 rank also "blas" (bench/blas_gemm, no MPI)


def label(kind, m, n, k):
    return f"{kind}-{m}x{n}x{k}"


def parse_cases(spec, quick):
    """Comma list of: a kind (square, tall-skinny, flat, largeM: every case of that kind),
    a full label (square-2048x2048x2048), MxNxK, or name=MxNxK."""
    pool = QUICK_CASES if quick else DEFAULT_CASES
    if not spec:
        return [(label(*c), *c[1:]) for c in pool]
    out = []
    for item in [s.strip() for s in spec.split(",") if s.strip()]:
        name, _, dims = item.rpartition("=")
        mm = re.fullmatch(r"(\d+)x(\d+)x(\d+)", dims)
        if mm and (name or "=" not in item):
            m, n, k = map(int, mm.groups())
            out.append((name or label("custom", m, n, k), m, n, k))
            continue
        kinds = sorted({c[0] for c in DEFAULT_CASES})
        if item in kinds:
            hits = [c for c in pool if c[0] == item]
        else:
            hits = [c for c in DEFAULT_CASES + QUICK_CASES if label(*c) == item]
        if not hits:
            sys.exit(f"gemm_bench: unknown case '{item}' (kinds: {', '.join(kinds)}; "
                     f"or a label like {label(*DEFAULT_CASES[0])}, or MxNxK, or name=MxNxK)")
        out.extend((label(*c), *c[1:]) for c in hits)
    return out


def cmake_cache(build):
    vals = {}
    try:
        for line in (build / "CMakeCache.txt").read_text().splitlines():
            mm = re.match(r"^([A-Za-z_0-9]+):[A-Z]+=(.*)$", line)
            if mm:
                vals[mm.group(1)] = mm.group(2)
    except OSError:
        pass
    return vals


def mpi_flavour(mpirun):
    try:
        out = subprocess.run([mpirun, "--version"], capture_output=True, text=True,
                             timeout=30, stdin=subprocess.DEVNULL)
        text = out.stdout + out.stderr
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return "openmpi" if re.search(r"Open MPI|OpenRTE", text) else "mpich"


def env_wrapped(cmd):
    """Run cmd with the environment of scripts/mpi-env.sh (sourced, not copied)."""
    return ["bash", "-c", 'source "$0" && exec "$@"', str(MPI_ENV)] + [str(c) for c in cmd]


def commcount_summary(path, repeat):
    """Per-rank received bytes of the timed region, per multiply: p2p received + one-sided get
    + collective payload (commcount's payload rule), and its parts; max and mean over ranks."""
    d = json.loads(Path(path).read_text())
    per = d.get("per_rank", [])
    if not per:
        raise ValueError("commcount JSON has no per_rank entries")
    rep = max(1, int(repeat))

    def stat(values):
        return {"max": max(values) / rep, "mean": sum(values) / len(values) / rep}

    recv = [r["p2p_recv_bytes"] + r["rma_get_bytes"] + r["coll_bytes"] for r in per]
    return {
        "nranks": d.get("nranks"),
        "mpi": d.get("mpi"),
        "divided_by_repeat": rep,
        "recv_bytes": stat(recv),
        "p2p_recv_bytes": stat([r["p2p_recv_bytes"] for r in per]),
        "rma_get_bytes": stat([r["rma_get_bytes"] for r in per]),
        "coll_bytes": stat([r["coll_bytes"] for r in per]),
        "p2p_sent_bytes": stat([r["p2p_sent_bytes"] for r in per]),
        "msgs": stat([r["p2p_recv_msgs"] + r["p2p_sent_msgs"] + r["rma_ops"] for r in per]),
        "coll_calls": stat([r["coll_calls"] for r in per]),
        "coll_by_kind": d.get("coll_by_kind", {}),
    }


def run_in_own_group(cmd, log, timeout):
    """Run cmd in its own process group with output to log; on timeout end that group (mpirun
    and the ranks it started, nothing else). Returns the exit status, or None on timeout."""
    with open(log, "w") as lf:
        proc = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=ROOT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            end_group(proc, grace=10)
            return None


MPIRUN_NOISE = re.compile(r"^-{10,}$|Primary job +terminated|Per user-direction|"
                          r"detected that one or more processes|mpirun\S* noticed that|"
                          r"Process name:|Exit code:|the job to be terminated|^ *$")


def tail(path, lines=10):
    """The program's own last lines, without mpirun's abort banners."""
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    own = [l for l in text if not MPIRUN_NOISE.search(l)]
    return "\n".join(own[-lines:])


class Runner:
    def __init__(self, args, raw_dir, flavour, mpirun, binaries, commcount):
        self.args = args
        self.raw = raw_dir
        self.flavour = flavour
        self.mpirun = mpirun
        self.bin = binaries
        self.commcount = commcount

    def command(self, tool, case, p, out_json):
        _, m, n, k = case
        a = self.args
        if tool == "tessel":
            prog = [self.bin["tessel"], "gemm", "--m", m, "--n", n, "--k", k,
                    "--repeat", a.repeat, "--json", out_json, "--nb", a.nb]
            if a.tessel_entry == "pdgemm":  # ScaLAPACK layout in and out; auto keeps it when cheaper
                prog += ["--entry", "pdgemm", "--algorithm", "auto"]
            else:  # tessel's own layout: the optimal plan, inputs already in its layouts
                prog += ["--algorithm", "optimal", "--layout", "plan"]
            prog += shlex.split(a.tessel_args)
        elif tool == "blas":
            prog = [self.bin["blas"], "--m", m, "--n", n, "--k", k, "--repeat", a.repeat,
                    "--warmup", a.warmup, "--json", out_json]
        else:
            prog = [self.bin["scalapack"], "--m", m, "--n", n, "--k", k, "--nb", a.nb,
                    "--repeat", a.repeat, "--warmup", a.warmup, "--json", out_json]
        return prog

    def run(self, tool, case, p, pair):
        name = case[0]
        stem = f"{tool}-{name}-np{p}-pair{pair}"
        out_json = self.raw / f"{stem}.json"
        cc_json = self.raw / f"{stem}.commcount.json"
        log = self.raw / f"{stem}.log"
        prog = self.command(tool, case, p, out_json)
        if self.args.reuse and out_json.is_file():  # a finished run of an earlier invocation
            rec = {"tool": tool, "case": name, "m": case[1], "n": case[2], "k": case[3], "ranks": p,
                   "pair": pair, "cmd": "(reused)", "log": str(log), "ok": False, "reused": True}
            try:
                rec["result"] = json.loads(out_json.read_text())
                rec["ok"] = isinstance(rec["result"].get("median_s"), (int, float))
                if rec["ok"] and self.commcount and tool != "blas" and cc_json.is_file():
                    rec["commcount"] = commcount_summary(cc_json, rec["result"].get("repeat", self.args.repeat))
            except (OSError, ValueError, KeyError) as e:
                rec["error"] = f"reused {out_json}: {e}"
            if rec["ok"]:
                print(f"  {tool:9s} {name} np={p} pair {pair}: reused (median {rec['result']['median_s']:.4f} s)", flush=True)
                return rec
        for f in (out_json, cc_json):
            f.unlink(missing_ok=True)
        launch = [self.mpirun, "-np", p]
        if tool == "blas":
            launch = []  # bare single process, no MPI
        elif self.commcount:
            if self.flavour == "openmpi":
                launch += ["-x", f"LD_PRELOAD={self.commcount}", "-x", f"COMMCOUNT_OUT={cc_json}"]
            else:
                launch += ["-genv", "LD_PRELOAD", self.commcount, "-genv", "COMMCOUNT_OUT", cc_json]
        if launch:
            launch += shlex.split(self.args.mpirun_args)
        cmd = env_wrapped(launch + prog)
        rec = {"tool": tool, "case": name, "m": case[1], "n": case[2], "k": case[3], "ranks": p,
               "pair": pair, "cmd": " ".join(shlex.quote(str(c)) for c in launch + prog),
               "log": str(log), "ok": False}
        if self.args.dry_run:
            print("  would run:", rec["cmd"])
            rec["error"] = "dry run"
            return rec
        if not Path(prog[0]).is_file():
            rec["error"] = f"{tool} binary not found: {prog[0]}"
            print(f"  FAILED {tool} {name} np={p} pair {pair}: {rec['error']}", flush=True)
            return rec
        t0 = time.time()
        rec["rc"] = run_in_own_group(cmd, log, self.args.timeout)
        if rec["rc"] is None:
            rec["error"] = f"timed out after {self.args.timeout} s (mpirun and its ranks killed)"
        rec["wall_s"] = round(time.time() - t0, 3)
        if rec.get("rc") not in (0, None):
            rec["error"] = f"exit status {rec['rc']}"
        if "error" not in rec:
            try:
                res = json.loads(out_json.read_text())
                rec["result"] = res
                if not isinstance(res.get("median_s"), (int, float)):
                    raise ValueError("no numeric median_s")
                rec["ok"] = True
            except (OSError, ValueError) as e:
                rec["error"] = f"no usable result JSON {out_json}: {e}"
        if rec["ok"] and self.commcount and tool != "blas":
            try:
                rep = rec["result"].get("repeat", self.args.repeat)
                rec["commcount"] = commcount_summary(cc_json, rep)
            except (OSError, ValueError, KeyError) as e:
                rec["commcount_error"] = f"{cc_json}: {e}"
        if rec["ok"]:
            cc = rec.get("commcount")
            vol = f", recv {cc['recv_bytes']['max'] / 1e6:.2f} MB/rank max" if cc else ""
            print(f"  {tool:9s} {name} np={p} pair {pair}: median {rec['result']['median_s']:.4f} s"
                  f"{vol} ({rec['wall_s']:.1f} s wall)", flush=True)
            if "commcount_error" in rec:
                print(f"  WARNING {tool} {name} np={p}: commcount: {rec['commcount_error']}")
        else:
            print(f"  FAILED {tool} {name} np={p} pair {pair}: {rec['error']}\n"
                  f"    command: {rec['cmd']}\n    log: {log}", flush=True)
            t = tail(log)
            rec["error_excerpt"] = t
            if t:
                print("    " + t.replace("\n", "\n    "), flush=True)
        return rec


def fnum(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def med(values):
    values = [v for v in values if fnum(v)]
    return statistics.median(values) if values else None


def summarize(runs, cases, ranks):
    out = []
    for case in cases:
        for p in ranks:
            rs = [r for r in runs if r["case"] == case[0] and r["ranks"] == p]
            s = {"case": case[0], "m": case[1], "n": case[2], "k": case[3], "ranks": p}
            for tool in TOOLS:
                ok = [r for r in rs if r["tool"] == tool and r["ok"]]
                s[tool] = {
                    "runs_ok": len(ok),
                    "runs_failed": len([r for r in rs if r["tool"] == tool and not r["ok"]]),
                    "median_s": med([r["result"]["median_s"] for r in ok]),
                    "gflops": med([r["result"].get("gflops") for r in ok]),
                    "recv_bytes_max": med([r["commcount"]["recv_bytes"]["max"] for r in ok
                                           if "commcount" in r]),
                    "recv_bytes_mean": med([r["commcount"]["recv_bytes"]["mean"] for r in ok
                                            if "commcount" in r]),
                }
                if tool == "scalapack":
                    s[tool]["grid"] = next((r["result"].get("grid") for r in ok), None)
            blas = [r for r in rs if r["tool"] == "blas" and r["ok"]]
            if blas or any(r["tool"] == "blas" for r in rs):
                s["blas"] = {"runs_ok": len(blas),
                             "runs_failed": len([r for r in rs if r["tool"] == "blas"]) - len(blas),
                             "median_s": med([r["result"]["median_s"] for r in blas])}
                bp = {}
                for r in rs:
                    if r["ok"] and r["tool"] in ("tessel", "blas"):
                        bp.setdefault(r["pair"], {})[r["tool"]] = r["result"]["median_s"]
                s["time_ratio_vs_blas"] = med([v["tessel"] / v["blas"] for v in bp.values()
                                               if fnum(v.get("tessel")) and fnum(v.get("blas"))
                                               and v["blas"] > 0])
            tes = [r for r in rs if r["tool"] == "tessel" and r["ok"]]
            if tes:
                led = [r["result"].get("ledger", {}) for r in tes]
                s["tessel"]["ledger_total_recv_bytes_max"] = med(
                    [l.get("total_recv_bytes", {}).get("max") for l in led])
                s["tessel"]["ledger_plan_recv_bytes_max"] = med(
                    [l.get("plan_recv_bytes", {}).get("max") for l in led])
                s["tessel"]["ledger_redistribution_recv_bytes_max"] = med(
                    [l.get("redistribution_recv_bytes", {}).get("max") for l in led])
                s["bound_words"] = med([r["result"].get("bound_words") for r in tes])
            # time ratio: median over pairs where both ran, of tessel/scalapack
            pairs = {}
            for r in rs:
                if r["ok"]:
                    pairs.setdefault(r["pair"], {})[r["tool"]] = r["result"]["median_s"]
            ratios = [v["tessel"] / v["scalapack"] for v in pairs.values()
                      if fnum(v.get("tessel")) and fnum(v.get("scalapack")) and v["scalapack"] > 0]
            s["time_ratio"] = med(ratios)
            s["time_ratios_per_pair"] = ratios
            tb, sb = s["tessel"]["recv_bytes_max"], s["scalapack"]["recv_bytes_max"]
            s["bytes_ratio"] = tb / sb if fnum(tb) and fnum(sb) and sb > 0 else None
            bw = s.get("bound_words")
            if fnum(bw) and bw > 0:
                s["tessel_bytes_over_bound"] = tb / (8 * bw) if fnum(tb) else None
                led_t = s["tessel"].get("ledger_total_recv_bytes_max")
                s["tessel_ledger_over_bound"] = led_t / (8 * bw) if fnum(led_t) else None
                s["scalapack_bytes_over_bound"] = sb / (8 * bw) if fnum(sb) else None
            out.append(s)
    return out


def fmt(x, spec):
    width = int(re.match(r"\d*", spec).group() or 0)
    return format(x, spec) if fnum(x) else "-".rjust(width)


def print_table(summary):
    hdr = (f"{'case':28s} {'np':>3s} {'tessel s':>9s} {'scalapack s':>11s} {'t/s':>6s} "
           f"{'tessel MB':>10s} {'scal. MB':>9s} {'B t/s':>6s} {'t/bound':>7s} {'fails t/s':>9s}")
    print("\nmedians (time: slowest rank per multiply; MB: received per rank per multiply, max "
          "over ranks, commcount)")
    print(hdr)
    print("-" * len(hdr))
    blas_rows = [s for s in summary if "blas" in s]
    for s in summary:
        t, c = s["tessel"], s["scalapack"]
        mb = lambda v: v / 1e6 if fnum(v) else None  # noqa: E731
        print(f"{s['case']:28s} {s['ranks']:3d} {fmt(t['median_s'], '9.4f')} "
              f"{fmt(c['median_s'], '11.4f')} {fmt(s['time_ratio'], '6.3f')} "
              f"{fmt(mb(t['recv_bytes_max']), '10.2f')} {fmt(mb(c['recv_bytes_max']), '9.2f')} "
              f"{fmt(s['bytes_ratio'], '6.3f')} {fmt(s.get('tessel_bytes_over_bound'), '7.3f')} "
              f"{t['runs_failed']:>4d}/{c['runs_failed']:<4d}")
    if blas_rows:
        print("\n1 rank against bare BLAS dgemm (bench/blas_gemm):")
        print(f"{'case':28s} {'tessel s':>9s} {'blas s':>9s} {'t/blas':>7s}")
        for s in blas_rows:
            print(f"{s['case']:28s} {fmt(s['tessel']['median_s'], '9.4f')} "
                  f"{fmt(s['blas']['median_s'], '9.4f')} {fmt(s.get('time_ratio_vs_blas'), '7.3f')}")


def plot(summary, png, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError as e:
        print(f"gemm_bench: no plot ({e})")
        return False
    cases = list(dict.fromkeys(s["case"] for s in summary))
    ranks = list(dict.fromkeys(s["ranks"] for s in summary))
    get = {(s["case"], s["ranks"]): s for s in summary}
    panels = [("time_ratio", "time tessel / ScaLAPACK"),
              ("bytes_ratio", "received bytes tessel / ScaLAPACK\n(max per rank, commcount)")]
    has_bound = any(fnum(s.get("tessel_bytes_over_bound")) or fnum(s.get("tessel_ledger_over_bound"))
                    for s in summary)
    if has_bound:
        panels.append(("tessel_bytes_over_bound",
                       "tessel received bytes / Theorem 2 bound\n(bars: commcount, x: ledger)"))
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, 1.6 * len(cases) * max(1, len(ranks)) / 2), 3.2 * len(panels)),
                             squeeze=False)
    x = np.arange(len(cases))
    w = 0.8 / max(1, len(ranks))
    for ax, (key, ylabel) in zip(axes[:, 0], panels):
        for i, p in enumerate(ranks):
            vals = [get.get((c, p), {}).get(key) for c in cases]
            vals = [v if fnum(v) else np.nan for v in vals]
            xs = x - 0.4 + w * (i + 0.5)
            ax.bar(xs, vals, w, label=f"{p} ranks")
            for xi, v in zip(xs, vals):
                if np.isfinite(v):
                    ax.text(xi, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
            if key == "tessel_bytes_over_bound":
                led = [get.get((c, p), {}).get("tessel_ledger_over_bound") for c in cases]
                ax.plot(xs, [v if fnum(v) else np.nan for v in led], "kx", ms=6)
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels(cases, fontsize=8, rotation=10)
        ax.legend(fontsize=7, ncol=len(ranks))
        if not any(fnum(get.get((c, p), {}).get(key)) for c in cases for p in ranks):
            ax.text(0.5, 0.5, "no data (failed or missing runs)", transform=ax.transAxes,
                    ha="center", va="center", color="red")
    axes[0, 0].set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return True


def write_json_atomically(path, obj):
    tmp = path.with_name(path.name + f".tmp.{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1) + "\n")
    tmp.replace(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--cases", default="", help="comma list: kind (square, tall-skinny, flat, "
                    "largeM), label, MxNxK or name=MxNxK (default: all five)")
    ap.add_argument("--ranks", default="4,7,8,16", help="comma list of rank counts (default 4,7,8,16)")
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions per run (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="ScaLAPACK warm-up multiplies (default 1)")
    ap.add_argument("--pairs", type=int, default=3, help="tessel/ScaLAPACK alternations (default 3)")
    ap.add_argument("--nb", type=int, default=128, help="block-cyclic block size (default 128)")
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds, for testing)")
    ap.add_argument("--tools", default="tessel,scalapack", help="which halves to run")
    ap.add_argument("--no-blas", action="store_true",
                    help="on 1 rank, do not also run the bare BLAS dgemm (bench/blas_gemm)")
    ap.add_argument("--tessel-entry", choices=["own", "pdgemm"], default="own",
                    help="tessel's own layout, or its ScaLAPACK-compatible entry (--entry pdgemm)")
    ap.add_argument("--tessel-args", default="", help="extra arguments for tessel gemm "
                    "(use the = form: --tessel-args='--n-dup 4')")
    ap.add_argument("--mpirun-args", default="", help="extra arguments for mpirun "
                    "(use the = form: --mpirun-args='--bind-to none')")
    ap.add_argument("--build", default=str(ROOT / "build"), help="build folder (default build)")
    ap.add_argument("--tessel", help="tessel binary (default <build>/apps/tessel/tessel)")
    ap.add_argument("--scalapack", help="driver (default <build>/bench/scalapack_gemm)")
    ap.add_argument("--commcount", help="commcount library (default "
                    "<build>/commcount/<mpi>/libcommcount.so)")
    ap.add_argument("--no-commcount", action="store_true", help="do not preload commcount")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per run (default 3600)")
    ap.add_argument("--reuse", default="", help="raw folder of an earlier (interrupted) run: "
                    "runs whose result JSON is there are read, not run again")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"), help="results folder")
    ap.add_argument("--dry-run", action="store_true", help="print the commands only")
    a = ap.parse_args()

    if a.repeat < 1 or a.pairs < 1 or a.nb < 1 or a.warmup < 0:
        sys.exit("gemm_bench: --repeat, --pairs and --nb must be >= 1, --warmup >= 0")
    try:
        ranks = [int(r) for r in a.ranks.split(",") if r.strip()]
        if not ranks or min(ranks) < 1:
            raise ValueError
    except ValueError:
        sys.exit(f"gemm_bench: --ranks '{a.ranks}': expected a comma list of positive integers")
    tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    if not tools or any(t not in TOOLS for t in tools):
        sys.exit(f"gemm_bench: --tools '{a.tools}': expected a comma list of {', '.join(TOOLS)}")
    cases = parse_cases(a.cases, a.quick)
    if not MPI_ENV.is_file():
        sys.exit(f"gemm_bench: {MPI_ENV} not found")

    build = Path(a.build).resolve()
    cache = cmake_cache(build)
    mpirun = cache.get("MPIEXEC_EXECUTABLE") or "mpirun"
    flavour = mpi_flavour(mpirun)
    binaries = {"tessel": Path(a.tessel or build / "apps" / "tessel" / "tessel").resolve(),
                "scalapack": Path(a.scalapack or build / "bench" / "scalapack_gemm").resolve(),
                "blas": (build / "bench" / "blas_gemm").resolve()}
    commcount = None
    if not a.no_commcount:
        commcount = Path(a.commcount or build / "commcount" / flavour / "libcommcount.so").resolve()
        if not commcount.is_file():
            print(f"gemm_bench: WARNING: commcount library {commcount} not found (scripts/setup.sh "
                  "builds it): running without traffic counts")
            commcount = None
    for t in tools:
        if not binaries[t].is_file():
            print(f"gemm_bench: ERROR: {t} binary {binaries[t]} not found: its runs will be "
                  "reported as failed (build with scripts/setup.sh)")

    host = socket.gethostname().split(".")[0]
    date = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = Path(a.out).resolve()
    stem = f"gemm-{host}-{date}"
    raw = Path(a.reuse) if a.reuse else out_dir / stem
    if not a.dry_run:
        raw.mkdir(parents=True, exist_ok=True)
    print(f"gemm_bench: {len(cases)} case(s) x ranks {ranks} x {a.pairs} pair(s) of "
          f"{'/'.join(tools)}; mpirun {mpirun} ({flavour}); commcount "
          f"{commcount or 'off'}; raw files in {raw}", flush=True)

    runner = Runner(a, raw, flavour, mpirun, binaries, str(commcount) if commcount else None)
    runs = []
    started = datetime.datetime.now().isoformat(timespec="seconds")
    for case in cases:
        for p in ranks:
            print(f"== {case[0]} (m={case[1]} n={case[2]} k={case[3]}) on {p} ranks", flush=True)
            for pair in range(1, a.pairs + 1):
                for tool in tools + (["blas"] if p == 1 and not a.no_blas else []):
                    runs.append(runner.run(tool, case, p, pair))

    summary = summarize(runs, cases, ranks)
    result = {
        "tool": "gemm_bench",
        "host": host,
        "started": started,
        "finished": datetime.datetime.now().isoformat(timespec="seconds"),
        "config": {"cases": [{"name": c[0], "m": c[1], "n": c[2], "k": c[3]} for c in cases],
                   "ranks": ranks, "repeat": a.repeat, "warmup": a.warmup, "pairs": a.pairs,
                   "nb": a.nb, "tools": tools, "tessel_entry": a.tessel_entry,
                   "tessel_args": a.tessel_args, "mpirun": mpirun, "mpirun_args": a.mpirun_args,
                   "mpi_flavour": flavour, "mpi_env": MPI_ENV.read_text(),
                   "binaries": {k: str(v) for k, v in binaries.items()},
                   "commcount": str(commcount) if commcount else None, "nproc": os.cpu_count()},
        "metrics": {
            "median_s": "median over runs of each run's median over --repeat multiplies "
                        "(each multiply timed on the slowest rank)",
            "time_ratio": "median over pairs of tessel median_s / ScaLAPACK median_s",
            "recv_bytes": "commcount, per multiply: p2p received + one-sided get + collective "
                          "payload, per rank; max and mean over ranks",
            "bytes_ratio": "tessel recv_bytes max / ScaLAPACK recv_bytes max",
            "tessel_bytes_over_bound": "tessel recv_bytes max / (8 * bound_words)",
            "time_ratio_vs_blas": "1 rank only: median over pairs of tessel median_s / bare "
                                  "dgemm median_s (bench/blas_gemm)",
        },
        "runs": runs,
        "summary": summary,
    }
    if a.dry_run:
        return 0
    json_path = out_dir / f"{stem}.json"
    write_json_atomically(json_path, result)
    print_table(summary)
    png = out_dir / f"{stem}.png"
    title = (f"tessel gemm (optimal, entry {a.tessel_entry}) vs ScaLAPACK pdgemm (nb {a.nb}), "
             f"{host}, {date}, {a.pairs} pair(s) x {a.repeat} reps")
    if plot(summary, png, title):
        print(f"\nplot:    {png}")
    print(f"results: {json_path}")
    failed = [r for r in runs if not r["ok"]]
    if failed:
        print(f"gemm_bench: {len(failed)} of {len(runs)} run(s) FAILED:")
        for r in failed:
            print(f"  {r['tool']} {r['case']} np={r['ranks']} pair {r['pair']}: {r['error']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
