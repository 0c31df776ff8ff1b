#!/usr/bin/python3
"""cosma_bench.py — issue 13's side-by-side: tessel against COSMA 2.8.4 (+ COSTA 2.3.2) and
ScaLAPACK, alternating, on this machine or on the emulated cluster, with commcount.

  python3 bench/cosma_bench.py [--configs nc:8x1,nc:4x2] [--cases all] [--pairs 3] [--repeat 3]
      [--tools tessel,tessel-pdgemm,cosma,cosma-pdgemm,scalapack] [--nb 128] [--grid 2x4]
      [--quick] [--out DIR] [--markdown table.md] [--machine nc:8x1=m8.json,nc:4x2=m42.json]
  python3 bench/cosma_bench.py --check [--configs local:4] [--check-size 256]   # functional

--tools may add tessel@K and tessel-pdgemm@K (K = 1 .. 4): tessel with --plan-choice K, the plan
the cost model ranks K + 1; a second table then gives, for every tessel plan run, the
predicted and the measured time and whether the model's own choice was the fastest measured.

Five programs per case, in this order within every pair (so each pair saw the same load):
  tessel         tessel gemm --algorithm optimal --layout plan        (its own layout)
  tessel-pdgemm  tessel gemm --entry pdgemm --algorithm auto --nb NB  (from block-cyclic)
  cosma          build/bench/cosma_gemm --mode native                 (COSMA's own layout)
  cosma-pdgemm   build/bench/cosma_gemm --mode pdgemm --nb NB         (COSMA's pdgemm_ wrapper)
  scalapack      build/bench/scalapack_gemm --nb NB                   (Debian ScaLAPACK 2.2.1)
The block-cyclic programs use the BLACS grid --grid (default: the most square PR <= PC, 2x4 on
8 ranks). Each run does --repeat timed multiplies (the cosma and scalapack drivers 1 untimed
warm-up first) and reports its median (slowest rank); commcount (LD_PRELOAD, counting between
MPI_Pcontrol(2) and MPI_Pcontrol(0), divided by --repeat) gives the bytes each rank received
per multiply. Configs are benchlib's: local:NP, or nc:NODESxPPN (../shared/tools/netcluster,
brought up per config at --rate/--delay and torn down; root; the wire bytes of each run are
recorded too, launch and finalize included). On an emulated cluster each program also runs once
with --repeat 1 per case (--no-wire: not): the first pair's bytes received by each node on its
link less that run's, over REPEAT - 1, are the bytes per multiply on the network (launch, set-up
and finalize cancel; traffic within a node, which commcount counts, is not on it).

Reported per case and config: median time and max received MB per rank of each program, each
program's bytes against its yardstick (the block-cyclic programs: bench/layout_bound.py's bound
for that layout, any linear schedule; the own-layout programs: Theorem 2's bound, tessel's
recv_bound_words), and the ratios the issue asks for: tessel / cosma (own layouts), tessel-pdgemm / cosma-pdgemm and
tessel-pdgemm / scalapack (from the caller's block-cyclic layout), for time and bytes.
Results: <out>/cosma-<host>-<date>.json and the raw runs in the folder of the same name.

--check (no timing): C of 256^3 (--check-size N or MxNxK) from tessel (own layout and --entry pdgemm),
cosma native (as is, and with COSMA_MIN_LOCAL_DIMENSION=32 so that all ranks take part at this
small size) and cosma-pdgemm, each written with --out, compared with numpy against A B computed
from tessel's generator: relative Frobenius error <= 1e-12 or exit status 1.
"""
import argparse
import datetime
import json
import os
import shlex
import socket
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, Config, commcount_recv  # noqa: E402

TOOLS = ("tessel", "tessel-pdgemm", "cosma", "cosma-pdgemm", "scalapack")
CASES = [("2048^3", 2048, 2048, 2048), ("4096^3", 4096, 4096, 4096), ("512x512x65536", 512, 512, 65536),
         ("65536x512x512", 65536, 512, 512), ("8192x8192x256", 8192, 8192, 256)]
QUICK = [("512^3", 512, 512, 512), ("128x128x8192", 128, 128, 8192), ("8192x128x128", 8192, 128, 128),
         ("1024x1024x64", 1024, 1024, 64)]


def parse_cases(spec, quick):
    if spec in ("", "all"):
        return QUICK if quick else CASES
    out = []
    for item in spec.split(","):
        try:
            m, n, k = (int(x) for x in item.lower().split("x"))
        except ValueError:
            raise SystemExit(f"cosma_bench: case '{item}': expected MxNxK")
        out.append((item, m, n, k))
    return out


def base_tool(tool):
    """tessel@K / tessel-pdgemm@K (the planner's K-th runner-up: --plan-choice K) -> its program."""
    return tool.split("@")[0]


def check_tool(tool):
    base, _, k = tool.partition("@")
    return base in TOOLS and (not k or (base.startswith("tessel") and k in "1234" and len(k) == 1))


def program(tool, bins, m, n, k, a, out_json, extra=()):
    dims = ["--m", str(m), "--n", str(n), "--k", str(k), "--repeat", str(a.repeat), "--json", out_json]
    grid = ["--grid", a.grid] if a.grid else []
    if "@" in tool:
        extra = list(extra) + ["--plan-choice", tool.partition("@")[2]]
        tool = base_tool(tool)
    if tool == "tessel":
        return [bins["tessel"], "gemm"] + dims + ["--algorithm", "optimal", "--layout", "plan"] + list(extra)
    if tool == "tessel-pdgemm":
        return [bins["tessel"], "gemm"] + dims + ["--entry", "pdgemm", "--algorithm", "auto", "--nb",
                                                   str(a.nb)] + grid + list(extra)
    if tool == "cosma":
        return [bins["cosma"], "--mode", "native", "--warmup", str(a.warmup)] + dims + list(extra)
    if tool == "cosma-pdgemm":
        return [bins["cosma"], "--mode", "pdgemm", "--nb", str(a.nb), "--warmup", str(a.warmup)] + grid + dims + \
            list(extra)
    return [bins["scalapack"], "--nb", str(a.nb), "--warmup", str(a.warmup)] + grid + dims + list(extra)


def parse_machine(spec, cfgs):
    """--machine: {config: absolute machine file} (FILE alone: every config)."""
    if not spec:
        return {}
    out = {}
    for item in spec.split(","):
        cfg, sep, f = item.rpartition("=")
        if not sep:
            cfg, f = "", item
        if cfg and cfg not in cfgs:
            raise SystemExit(f"cosma_bench: --machine '{item}': config '{cfg}' is not in --configs ({','.join(cfgs)})")
        path = Path(f).resolve()
        if not path.is_file():
            raise SystemExit(f"cosma_bench: --machine '{item}': no file {path} (write it with tessel calibrate --out)")
        for c in ([cfg] if cfg else cfgs):
            out[c] = str(path)
    return out


def run_one(place, tool, prog, raw, stem, a, commcount, env=()):
    js, cc, log = raw / f"{stem}.json", raw / f"{stem}.commcount.json", raw / f"{stem}.log"
    for f in (js, cc):
        f.unlink(missing_ok=True)
    envs = list(env)
    if commcount:
        envs += ["-x", f"LD_PRELOAD={commcount}", "-x", f"COMMCOUNT_OUT={cc}"]
    cmd = place.command(prog, env=envs + ["-x", "OMP_NUM_THREADS=1", "-x", "OPENBLAS_NUM_THREADS=1"])
    rec = {"tool": tool, "cmd": " ".join(shlex.quote(c) for c in cmd), "log": str(log), "ok": False}
    try:
        p, wall, wire = place.run(cmd, a.timeout, log)
    except Exception as e:  # timeout
        rec["error"] = str(e)
        return rec
    rec.update(wall_s=wall, wire_bytes=wire, wire_rx=getattr(p, "wire_rx", None), rc=p.returncode)
    if p.returncode != 0:
        rec["error"] = f"exit status {p.returncode}: {(p.stdout + p.stderr)[-800:]}"
        return rec
    try:
        rec["result"] = json.loads(js.read_text())
        rec["ok"] = True
        if commcount:
            rec["commcount"] = commcount_recv(cc, rec["result"].get("repeat", a.repeat))
    except (OSError, ValueError, KeyError) as e:
        rec.setdefault("error", f"{js} / {cc}: {e}")
    return rec


def run_stem(tool, case, place, what):
    """The file stem of one run: tool, case, config and which run (pairN, repeat1)."""
    return f"{tool}-{case.replace('^', 'p')}-{place.cfg.replace(':', '')}-{what}"


def machine_env(tool, place, machine):
    """mpirun flags giving tessel's programs the config's --machine file (none for the peers)."""
    return ["-x", f"TESSEL_MACHINE={machine[place.cfg]}"] if tool.startswith("tessel") and place.cfg in machine else []


def wire_per_multiply(place, tool, prog1, raw, stem, a, env, runs):
    """The bytes each emulated node receives on its link per multiply: the first pair's run of
    `tool` (a.repeat multiplies) less one run of `prog1` (the same with --repeat 1), over
    a.repeat - 1, so that launch, set-up, warm-up and finalize cancel. Returns {node: MB} or None
    (local configs, --repeat 1, a failed run). Bytes on the wire include TCP/IP headers (~1 %)
    and no traffic within a node, which commcount counts with the rest."""
    first = next((r for r in runs if r["tool"] == tool and r["ok"] and r.get("wire_rx")), None)
    if place.kind != "nc" or a.repeat < 2 or first is None:
        return None
    one = run_one(place, tool, prog1, raw, stem, a, None, env)
    if not one["ok"] or not one.get("wire_rx"):
        return None
    return {node: (first["wire_rx"][node] - one["wire_rx"].get(node, 0)) / (a.repeat - 1) / 1e6
            for node in first["wire_rx"]}


def med(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return statistics.median(xs) if xs else None


def ratio(x, y):
    return x / y if x is not None and y else None


# The ratios a summary holds (x/y), and the ones the tables print.
RATIOS = ("tessel/cosma", "tessel-pdgemm/cosma-pdgemm", "tessel-pdgemm/scalapack", "cosma-pdgemm/scalapack")
TABLE_RATIOS = RATIOS[:3]


def summarize(runs, tools, wire=None):
    """Per program: median time, commcount MB (max, mean), and with `wire` ({tool: {node: MB}},
    wire_per_multiply) the busiest node's MB per multiply on the network; per ratio x/y of
    RATIOS: time, bytes and wire."""
    s = {}
    for t in tools:
        ok = [r for r in runs if r["tool"] == t and r["ok"]]
        s[t] = {"median_s": med([r["result"]["median_s"] for r in ok]),
                "recv_mb_max": med([r["commcount"]["max"] / 1e6 for r in ok if "commcount" in r]),
                "recv_mb_mean": med([r["commcount"]["mean"] / 1e6 for r in ok if "commcount" in r]),
                "runs_ok": len(ok), "runs_failed": len([r for r in runs if r["tool"] == t and not r["ok"]])}
        if (wire or {}).get(t):
            s[t]["wire_mb_node_max"] = max(wire[t].values())
    for key in RATIOS:
        x, y = key.split("/")
        if x in s and y in s:
            s[key] = {"time": ratio(s[x]["median_s"], s[y]["median_s"]),
                      "bytes": ratio(s[x]["recv_mb_max"], s[y]["recv_mb_max"]),
                      "wire": ratio(s[x].get("wire_mb_node_max"), s[y].get("wire_mb_node_max"))}
    return s


def grid_of(spec, p):
    """The BLACS grid (PR, PC) of the block-cyclic programs: --grid, else the most square PR <= PC."""
    if spec:
        pr, pc = (int(x) for x in spec.lower().split("x"))
        return pr, pc
    pr = max(d for d in range(1, int(p ** 0.5) + 1) if p % d == 0)
    return pr, p // pr


def layout_bound_mb(m, n, k, grid, nb):
    """bench/layout_bound.py's lower bound (MB) on what the busiest rank must receive when A, B and
    C start and end block-cyclic on `grid` with nb x nb blocks (any linear schedule); None where
    it cannot be computed (more than 16 ranks, or no scipy)."""
    pr, pc = grid
    if pr * pc > 16:
        return None
    try:
        import layout_bound as lb
        t, _ = lb.solve(pr * pc, lb.cut_requirements(m, n, k, pr, pc, nb, nb))
    except (ImportError, SystemExit):
        return None
    return max(0, int(t - 1e-6 + 0.999999)) * 8 / 1e6


def own_bound_mb(runs):
    """Theorem 2's bound (MB) on what the busiest rank of tessel's own-layout plan receives, from
    the tessel run's JSON (recv_bound_words, doubles)."""
    for r in runs:
        if r["tool"] == "tessel" and r["ok"] and "recv_bound_words" in r["result"]:
            return r["result"]["recv_bound_words"] * 8 / 1e6
    return None


# The yardstick of each program's bytes: the layout bound for the programs that start and end in
# the block-cyclic layout, Theorem 2's for the own-layout ones.
BOUND_OF = {"tessel": "own", "cosma": "own", "tessel-pdgemm": "layout", "cosma-pdgemm": "layout",
            "scalapack": "layout"}


def table(results, tools):
    def f(v, spec):
        return format(v, spec) if isinstance(v, (int, float)) else "-"
    head = ["case", "config"] + list(tools) + ["bound MB (layout, own)"]
    ratios = [k for k in TABLE_RATIOS if all(t in tools for t in k.split("/"))]
    lines = ["| " + " | ".join(head + [f"{r} (time, bytes)" for r in ratios]) + " |",
             "|" + "---|" * (len(head) + len(ratios))]
    for r in results:
        s, b = r["summary"], r.get("bound_mb", {})
        cells = [r["case"], r["config"]]
        for t in tools:
            bound = b.get(BOUND_OF[base_tool(t)])
            x = ratio(s[t]["recv_mb_max"], bound)
            cells.append(f"{f(s[t]['median_s'], '.3f')} s, {f(s[t]['recv_mb_max'], '.1f')} MB"
                         + (f" ({x:.2f}x {BOUND_OF[base_tool(t)]} bound)" if x is not None else ""))
        cells.append(f"{f(b.get('layout'), '.2f')}, {f(b.get('own'), '.2f')}")
        cells += [f"{f(s[k]['time'], '.2f')}, {f(s[k]['bytes'], '.2f')}" for k in ratios]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def wire_table(results, tools):
    """MB per multiply received on the emulated wire by the busiest node (wire_per_multiply), per
    program, and the ratios; "" when no case has them."""
    if not any(r.get("wire_mb_per_node") for r in results):
        return ""
    ratios = [k for k in TABLE_RATIOS if all(t in tools for t in k.split("/"))]
    lines = ["| " + " | ".join(["case", "config"] + list(tools) + ratios) + " |",
             "|" + "---|" * (2 + len(tools) + len(ratios))]
    for r in results:
        s = r["summary"]
        cells = [r["case"], r["config"]]
        cells += [f"{s[t]['wire_mb_node_max']:.1f}" if s[t].get("wire_mb_node_max") is not None else "-"
                  for t in tools]
        cells += [f"{s[k]['wire']:.2f}" if s[k].get("wire") is not None else "-" for k in ratios]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def model_table(results, tools):
    """The cost model's honesty: for every tessel program (its plan choice 0 and the runners-up
    asked for with tessel@K), the plan run, the predicted time (the JSON's predicted_time_s,
    the busiest rank) and the measured median, their ratio, and whether the model's own choice
    was the fastest measured of its entry (within 5 %)."""
    lines = ["| case | config | program | plan (pm x pn x pk, rounds) | predicted s | measured s | "
             "measured / predicted | model's choice fastest? |", "|" + "---|" * 8]
    for r in results:
        for entry in ("tessel", "tessel-pdgemm"):
            mine = [t for t in tools if base_tool(t) == entry]
            meas = {t: r["summary"][t]["median_s"] for t in mine}
            best = min((v for v in meas.values() if v), default=None)
            for t in mine:
                ok = [x for x in r["runs"] if x["tool"] == t and x["ok"]]
                if not ok:
                    continue
                res = ok[0]["result"]
                pred = res.get("predicted_time_s", {}).get("total")
                plan = res.get("plan", {})
                grid = "x".join(str(g) for g in plan.get("grid", [])) + f", {plan.get('rounds', '?')}"
                verdict = ""
                if t == entry and best and meas[t]:
                    verdict = "yes" if meas[t] <= 1.05 * best else f"no ({meas[t] / best:.2f}x the fastest)"
                x = ratio(meas[t], pred)
                lines.append(f"| {r['case']} | {r['config']} | {t} | {grid} | "
                             f"{pred if pred is None else format(pred, '.4f')} | "
                             f"{meas[t] if meas[t] is None else format(meas[t], '.4f')} | "
                             f"{'-' if x is None else format(x, '.2f')} | {verdict} |")
    return "\n".join(lines) + "\n"


def check(a, bins, place, raw):
    """Functional: every program's C against A B from tessel's generator (numpy)."""
    import numpy as np
    m, n, k = a.check_shape
    runs = [("tessel", "tessel", []), ("tessel-pdgemm", "tessel-pdgemm", []), ("cosma", "cosma", []),
            ("cosma-min32", "cosma", ["-x", "COSMA_MIN_LOCAL_DIMENSION=32"]), ("cosma-pdgemm", "cosma-pdgemm", [])]
    a.repeat, a.warmup = 1, 0
    M = (1 << 64) - 1

    def hashed(seed, which, i, j):  # = apps/tessel/cli_util.cpp hashed(), vectorised over i, j
        with np.errstate(over="ignore"):
            x = (np.uint64(seed * 0x9E3779B97F4A7C15 & M) + np.uint64(which * 0xBF58476D1CE4E5B9 & M)
                 + i.astype(np.uint64) * np.uint64(0x94D049BB133111EB) + j.astype(np.uint64))
            x ^= x >> np.uint64(30); x *= np.uint64(0xBF58476D1CE4E5B9)  # noqa: E702
            x ^= x >> np.uint64(27); x *= np.uint64(0x94D049BB133111EB)  # noqa: E702
            x ^= x >> np.uint64(31)
        return (x >> np.uint64(11)).astype(np.float64) * (2.0 / 9007199254740992.0) - 1.0
    ia, ja = np.meshgrid(np.arange(m), np.arange(k), indexing="ij")
    ib, jb = np.meshgrid(np.arange(k), np.arange(n), indexing="ij")
    ref = hashed(42, 1, ia, ja) @ hashed(42, 2, ib, jb)
    bad = 0
    for name, tool, env in runs:
        out = raw / f"check-{name}.npy"
        prog = program(tool, bins, m, n, k, a, str(raw / f"check-{name}.json"), ["--out", str(out)])
        rec = run_one(place, tool, prog, raw, f"check-{name}", a, None, env)
        if not rec["ok"]:
            print(f"  {name}: FAILED {rec.get('error')}")
            bad += 1
            continue
        c = np.load(out)
        err = np.linalg.norm(c - ref) / np.linalg.norm(ref)
        extra = ""
        if tool == "cosma":
            strat = rec["result"].get("strategy", "")
            extra = " (" + " ".join(l.strip() for l in strat.splitlines() if "processors" in l or "parallel" in l) + ")"
        print(f"  {name:14s} ||C||_F {np.linalg.norm(c):.12e}  ||C - A B||_F / ||A B||_F = {err:.1e}{extra}")
        bad += not (err <= 1e-12)
    print(f"cosma_bench --check {m}x{n}x{k} on {place.cfg}: {'ok' if not bad else f'{bad} FAILED'}")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="nc:8x1,nc:4x2")
    ap.add_argument("--cases", default="all", help="all, or a comma list of MxNxK")
    ap.add_argument("--quick", action="store_true", help="small cases of the same shapes")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--nb", type=int, default=128)
    ap.add_argument("--grid", default="", help="BLACS grid PRxPC of the block-cyclic programs (default most square)")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--delay", default="50us")
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--commcount", default="", help="default <build>/commcount/openmpi/libcommcount.so")
    ap.add_argument("--no-commcount", action="store_true")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--markdown", default="")
    ap.add_argument("--no-wire", action="store_true",
                    help="skip the extra --repeat 1 run per case and program on an emulated cluster that gives "
                         "the bytes per multiply on the wire (into the busiest node)")
    ap.add_argument("--check", action="store_true", help="functional check only (see above)")
    ap.add_argument("--check-size", default="256", help="N (N^3) or MxNxK of --check")
    ap.add_argument("--force", action="store_true", help="use the emulated cluster even if node namespaces exist")
    ap.add_argument("--machine", default="",
                    help="machine file(s) for tessel's planner (TESSEL_MACHINE of both tessel programs): FILE for "
                         "every config, or CONFIG=FILE,... (e.g. nc:8x1=m8.json,nc:4x2=m42.json; a config not "
                         "named runs on the built-in defaults). Write them with `tessel calibrate --out FILE` "
                         "launched on that config. Default: none (the planner's defaults: a fast network)")
    a = ap.parse_args()
    tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    if not tools or any(not check_tool(t) for t in tools):
        raise SystemExit(f"cosma_bench: --tools '{a.tools}': expected a comma list of {', '.join(TOOLS)} "
                         "(tessel@K, tessel-pdgemm@K: the planner's K-th runner-up, K = 1 .. 4)")
    build = Path(a.build)
    bins = {"tessel": str(build / "apps" / "tessel" / "tessel"), "cosma": str(build / "bench" / "cosma_gemm"),
            "scalapack": str(build / "bench" / "scalapack_gemm")}
    for t in (["tessel", "cosma"] if a.check else tools):
        exe = bins["cosma" if t.startswith("cosma") else "tessel" if t.startswith("tessel") else "scalapack"]
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"cosma_bench: {exe} not built (cosma_gemm: bash bench/peers/build_cosma.sh, then "
                             "reconfigure and build the cosma_gemm target)")
    commcount = None
    if not a.no_commcount and not a.check:
        commcount = a.commcount or str(build / "commcount" / "openmpi" / "libcommcount.so")
        if not os.path.isfile(commcount):
            print(f"cosma_bench: WARNING: {commcount} not found: no byte counts")
            commcount = None
    host = socket.gethostname().split(".")[0]
    stem = f"cosma-{host}-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    raw = Path(a.out).resolve() / stem
    raw.mkdir(parents=True, exist_ok=True)
    try:
        dims = [int(x) for x in a.check_size.lower().split("x")]
        a.check_shape = tuple(dims * 3 if len(dims) == 1 else dims)
        assert len(a.check_shape) == 3 and min(a.check_shape) > 0
    except (ValueError, AssertionError):
        raise SystemExit(f"cosma_bench: --check-size '{a.check_size}': expected N or MxNxK")
    configs = [Config(c, "cosma_bench") for c in a.configs.split(",")]
    if any(c.kind == "nc" for c in configs) and not a.force:
        import subprocess
        ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        if any(line.startswith("node") for line in ns.splitlines()):
            raise SystemExit("cosma_bench: netcluster node namespaces exist already (another user's cluster?): "
                             "rerun with --force to take it over")
    if a.check:
        place = configs[0]
        place.bring_up(a.rate, a.delay)
        try:
            return check(a, bins, place, raw)
        finally:
            place.down()
    cases = parse_cases(a.cases, a.quick)
    machine = parse_machine(a.machine, [c.cfg for c in configs])
    results = []
    for place in configs:
        place.bring_up(a.rate, a.delay)
        try:
            for name, m, n, k in cases:
                print(f"== {name} on {place.cfg}", flush=True)
                runs = []
                for pair in range(1, a.pairs + 1):
                    for t in tools:
                        st = run_stem(t, name, place, f"pair{pair}")
                        env = machine_env(t, place, machine)
                        rec = run_one(place, t, program(t, bins, m, n, k, a, str(raw / f"{st}.json")), raw, st, a,
                                      commcount, env)
                        rec["pair"] = pair
                        runs.append(rec)
                        if rec["ok"]:
                            cc = rec.get("commcount")
                            print(f"  {t:14s} pair {pair}: {rec['result']['median_s']:.4f} s"
                                  + (f", {cc['max'] / 1e6:.2f} MB/rank max" if cc else ""), flush=True)
                        else:
                            print(f"  {t:14s} pair {pair}: FAILED {rec.get('error', '')[:300]}\n    log {rec['log']}",
                                  flush=True)
                wire = {}
                if not a.no_wire:
                    a1 = argparse.Namespace(**{**vars(a), "repeat": 1})
                    for t in tools:
                        st = run_stem(t, name, place, "repeat1")
                        env = machine_env(t, place, machine)
                        w = wire_per_multiply(place, t, program(t, bins, m, n, k, a1, str(raw / f"{st}.json")),
                                              raw, st, a, env, runs)
                        if w:
                            wire[t] = w
                            print(f"  {t:14s} on the wire: {max(w.values()):.2f} MB per multiply into the "
                                  "busiest node", flush=True)
                summary = summarize(runs, tools, wire)
                results.append({"case": name, "m": m, "n": n, "k": k, "config": place.cfg,
                                "machine": machine.get(place.cfg, ""), "runs": runs, "wire_mb_per_node": wire,
                                "summary": summary,
                                "bound_mb": {"layout": layout_bound_mb(m, n, k, grid_of(a.grid, place.np),
                                                                       a.nb),
                                             "own": own_bound_mb(runs)}})
        finally:
            place.down()
    out = Path(a.out).resolve() / f"{stem}.json"
    out.write_text(json.dumps({"tool": "cosma_bench", "host": host, "tools": tools, "nb": a.nb, "grid": a.grid,
                               "repeat": a.repeat, "pairs": a.pairs, "rate": a.rate, "delay": a.delay,
                               "results": results}, indent=1) + "\n")
    t = table(results, tools)
    w = wire_table(results, tools)
    if w:
        t += ("\nMB per multiply received on the emulated wire by the busiest node (a run of --repeat R less one "
              "of --repeat 1, over R - 1; no traffic within a node; TCP/IP headers included)\n\n" + w)
    if any(base_tool(x).startswith("tessel") for x in tools):
        t += "\nthe cost model: predicted and measured time of each tessel plan run\n\n" + model_table(results, tools)
    print("\nmedian time (slowest rank) and max MB received per rank per multiply (commcount)\n" + t, end="")
    if a.markdown:
        Path(a.markdown).write_text(t)
    print(f"results: {out}")
    return 1 if any(not r["ok"] for res in results for r in res["runs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
