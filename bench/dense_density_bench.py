#!/usr/bin/python3
"""dense_density_bench.py — issue 31, part 2: the dense density matrix of the same (F, S) by
tessel's purification against the eigensolvers ELPA (1- and 2-stage) and ScaLAPACK pdsygvx.

  python3 bench/dense_density_bench.py [--sizes 2000,4000] [--n8000] [--configs local:1,local:4,local:8]
      [--nc] [--pairs 1] [--methods trs4,canonical,elpa1,elpa2,pdsygvx] [--nb 64]
      [--out DIR] [--markdown table.md] [--build BUILD]
  python3 bench/dense_density_bench.py --plot docs/dense_density.png --results R1.json,R2.json
  python3 bench/dense_density_bench.py --check [--build BUILD]     # functional, no timing

Methods, ALTERNATING within every pair (each pair saw the same load):
  trs4, canonical  tessel purify --method M --algorithm 5 --n-dup 4 --nb NB --overlap S
                   (its time to D: the JSON's "seconds" (the iterations) + "ns_seconds"
                   (Newton-Schulz S^-1/2 and the two basis changes); bytes: its ledger)
  elpa1, elpa2     build/bench/elpa_density --solver elpa1|elpa2 (ELPA 2022.11 generalized routine)
  pdsygvx          build/bench/elpa_density --solver pdsygvx (ScaLAPACK's expert driver)
The peers' bytes are commcount's (LD_PRELOAD, the timed solve only). elpa_density is Debian's
ELPA, built against Open MPI: this benchmark runs under Open MPI only.

Input (no PySCF matrix here is larger than n = 768): a generated pair with a known spectrum.
H = Q diag(e) Q^T with Q a random orthogonal matrix, nocc = n/5 occupied levels uniform in
[-1.0, -0.3] Eh, the virtual ones in [-0.3 + gap, 2.0] Eh (gap 0.3 Eh: between the RHF water
clusters' 0.5-0.8 and the LDA one's 0.04); S = the Kac-Murdock-Szego matrix S_ij = r^|i-j|
(r = 0.5, condition number 9, positive definite) with Cholesky factor L; F = L H L^T, so
F C = S C e has exactly the eigenvalues e. Cached as <out>/gen/n<N>_{F,S}.npy.

--check: n = 240, 1 and 3 ranks (a prime, a non-square grid), every method's D written with
--out and compared with numpy's D from the Cholesky-reduced eigenproblem (LAPACK dsyevd):
max |D - D_ref| <= 1e-8 or exit status 1; exit status 77 (a skip) when elpa_density was not
built.
"""
import argparse
import datetime
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, Config, commcount_recv, emit_table, markdown_table  # noqa: E402

METHODS = ("trs4", "canonical", "elpa1", "elpa2", "pdsygvx")
SKIP = 77


def generate(n, nocc, gap, folder, seed=31):
    """The cached (F, S) pair of size n and its exact eigenvalues (see the module text)."""
    folder.mkdir(parents=True, exist_ok=True)
    fp, sp, ep = (folder / f"n{n}_{x}.npy" for x in ("F", "S", "e"))
    if not (fp.exists() and sp.exists() and ep.exists()):
        rng = np.random.default_rng(seed + n)
        e = np.concatenate([np.linspace(-1.0, -0.3, nocc), np.linspace(-0.3 + gap, 2.0, n - nocc)])
        q, r = np.linalg.qr(rng.standard_normal((n, n)))
        q *= np.sign(np.diag(r))
        h = (q * e) @ q.T
        idx = np.arange(n)
        s = 0.5 ** np.abs(idx[:, None] - idx[None, :])
        L = np.linalg.cholesky(s)
        f = L @ h @ L.T
        f = 0.5 * (f + f.T)
        np.save(fp, f)
        np.save(sp, s)
        np.save(ep, e)
    return fp, sp, np.load(ep)


def reference_density(f, s, nocc):
    """D = C_occ C_occ^T from the Cholesky-reduced problem (numpy: LAPACK dpotrf + dsyevd)."""
    L = np.linalg.cholesky(s)
    li = np.linalg.inv(L)
    w, y = np.linalg.eigh(li @ f @ li.T)
    c = li.T @ y[:, :nocc]
    return c @ c.T, w


def program(method, bins, fp, sp, nocc, a, js, out):
    if method in ("trs4", "canonical"):
        cmd = [bins["tessel"], "purify", "--fock", str(fp), "--overlap", str(sp), "--nocc", str(nocc),
               "--method", method, "--algorithm", "5", "--n-dup", "4", "--nb", str(a.nb), "--json", js]
    else:
        cmd = [bins["elpa"], "--fock", str(fp), "--overlap", str(sp), "--nocc", str(nocc), "--solver",
               method, "--nb", str(a.nb), "--repeat", "1", "--warmup", "0", "--json", js]
    return cmd + (["--out", out] if out else [])


def tessel_recv(ledger):
    """Bytes received per rank (max) from tessel's ledger: p2p + collective payload + RMA."""
    al = ledger.get("all", {})
    return sum(al.get(k, {}).get("max", 0) for k in ("recv_bytes", "coll_bytes", "rma_bytes"))


def run_one(place, method, prog, raw, stem, a, commcount):
    js, cc, log = raw / f"{stem}.json", raw / f"{stem}.commcount.json", raw / f"{stem}.log"
    for f in (js, cc):
        f.unlink(missing_ok=True)
    envs = ["-x", "OMP_NUM_THREADS=1", "-x", "OPENBLAS_NUM_THREADS=1"]
    peer = method not in ("trs4", "canonical")
    if commcount and peer:
        envs += ["-x", f"LD_PRELOAD={commcount}", "-x", f"COMMCOUNT_OUT={cc}"]
    cmd = place.command(prog, env=envs)
    rec = {"method": method, "cmd": " ".join(shlex.quote(c) for c in cmd), "log": str(log), "ok": False}
    p, wall, wire = place.run(cmd, a.timeout, log)
    rec.update(wall_s=wall, wire_bytes=wire, rc=p.returncode)
    if p.returncode != 0:
        rec["error"] = f"exit status {p.returncode}: {(p.stdout + p.stderr)[-600:]}"
        return rec
    try:
        r = json.loads(js.read_text())
        rec["result"] = r
        rec["time_s"] = r["median_s"] if peer else tessel_time_to_d(r)
        rec["band_energy"] = r["band_energy"]
        if not peer:
            rec["recv_bytes"] = tessel_recv(r.get("ledger", {}))
        elif commcount:
            rec["recv_bytes"] = commcount_recv(cc, 1)["max"]
        rec["ok"] = True
    except (OSError, ValueError, KeyError) as e:
        rec["error"] = f"{js}: {e}"
    return rec


def max_diff(path_a, b):
    """max |A - B| of the .npy file `path_a` and the array or .npy file `b`."""
    return float(np.max(np.abs(np.load(path_a) - (np.load(b) if isinstance(b, (str, Path)) else b))))


def check(a, bins):
    """The functional check (see the module text); returns the exit status."""
    if not os.path.isfile(bins["elpa"]):
        print(f"dense_density_bench --check: SKIP: {bins['elpa']} not built (needs libelpa-dev)")
        return SKIP
    out = Path(a.out) / "check"
    n, nocc = 240, 48
    fp, sp, e = generate(n, nocc, 0.3, out / "gen")
    d_ref, w = reference_density(np.load(fp), np.load(sp), nocc)
    print(f"reference: numpy eigh, eigenvalue error vs generator {np.max(np.abs(w - e)):.1e}")
    bad = 0
    for ranks in (1, 3):
        place = Config(f"local:{ranks}", "dense_density_bench")
        for m in METHODS:
            stem = f"{m}-np{ranks}"
            d_out = out / f"{stem}_D.npy"
            d_out.unlink(missing_ok=True)
            rec = run_one(place, m, program(m, bins, fp, sp, nocc, a, str(out / f"{stem}.json"), str(d_out)),
                          out, stem, a, None)
            diff = max_diff(d_out, d_ref) if rec["ok"] and d_out.exists() else float("inf")
            ok = diff <= 1e-8
            bad += not ok
            print(f"  {m:<9} {ranks} ranks: max |D - D_ref| {diff:.2e} {'ok' if ok else 'FAILED'}"
                  f"{'' if rec['ok'] else ' ' + rec.get('error', '')}", flush=True)
    bad += not check_bad_overlap(bins, fp, out, nocc)
    print("dense_density_bench --check: " + ("ok" if bad == 0 else f"{bad} FAILED"))
    return 1 if bad else 0


def check_bad_overlap(bins, fp, out, nocc):
    """An S that is not positive definite: elpa_density must say so once and exit non-zero
    (ELPA itself hangs there), for each solver at 2 ranks."""
    sp = out / "gen" / "bad_S.npy"
    s = np.load(out / "gen" / "n240_S.npy")
    s[0, 0] = -1.0
    np.save(sp, s)
    ok = True
    place = Config("local:2", "dense_density_bench")
    for m in ("elpa1", "elpa2", "pdsygvx"):
        cmd = place.command([bins["elpa"], "--fock", str(fp), "--overlap", str(sp), "--nocc", str(nocc),
                             "--solver", m])
        p, _, _ = place.run(cmd, 120, out / f"bad-S-{m}.log")
        said = (p.stdout + p.stderr).count("not positive definite")
        good = p.returncode not in (0, None) and said == 1
        ok &= good
        print(f"  {m:<9} non-SPD S: exit {p.returncode}, message {said}x {'ok' if good else 'FAILED'}")
    return ok


def tessel_time_to_d(r):
    """tessel purify's time to D from its JSON: the iterations ("seconds") plus S^-1/2 and
    the basis changes ("ns_seconds"), as the peers' time includes their Cholesky and
    transforms. (Until 2026-12-07 this bench took "seconds" alone: the S^-1/2 was left out.)"""
    return r["seconds"] + r.get("ns_seconds", 0.0)


def retime(cases):
    """Recompute tessel's times to D of results written by an earlier version of this bench
    (which took the iterations alone) from the JSON each run kept, and the ratios."""
    for c in cases:
        for m, recs in c["runs"].items():
            if m in ("trs4", "canonical"):
                for r in recs:
                    if r.get("ok"):
                        r["time_s"] = tessel_time_to_d(r["result"])
                        r["iteration_s"] = r["result"]["seconds"]
            row = c["methods"].get(m, {})
            ok = [r for r in recs if r.get("ok")]
            if row.get("ok") and ok:
                row["time_s"] = statistics.median(r["time_s"] for r in ok)
        fastest = min((r["time_s"] for r in c["methods"].values() if r.get("ok")), default=None)
        for r in c["methods"].values():
            if r.get("ok"):
                r["ratio"] = r["time_s"] / fastest
    return cases


def layout(r):
    """Where the work ran: tessel's SymmSquareCube mesh (it may leave ranks inactive), the peers' grid."""
    if "ssc" in r:
        return r["ssc"].get("mesh", "").replace(" mesh on ranks ", " on ")
    return "grid {}x{}".format(*r.get("grid", [0, 0]))


def summarize(case_runs, ref_d):
    """Per method: median time, ratio to the fastest, band energy difference, bytes, max |D - D_elpa2|."""
    rows = {}
    for m, recs in case_runs.items():
        ok = [r for r in recs if r["ok"]]
        if not ok:
            rows[m] = {"ok": False, "error": recs[-1].get("error", "") if recs else "not run"}
            continue
        rows[m] = {"ok": True, "time_s": statistics.median(r["time_s"] for r in ok),
                   "band_energy": ok[-1]["band_energy"], "recv_bytes": ok[-1].get("recv_bytes"),
                   "iterations": ok[-1]["result"].get("iterations"), "runs": len(ok),
                   "layout": layout(ok[-1]["result"]),
                   "d_diff": max_diff(ok[-1]["d_path"], ref_d) if ref_d and ok[-1].get("d_path") else None}
    fastest = min((r["time_s"] for r in rows.values() if r["ok"]), default=None)
    for r in rows.values():
        if r["ok"]:
            r["ratio"] = r["time_s"] / fastest
    return rows


def measure(a, bins):
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(a.out)
    raw = out / f"dense-density-{socket.gethostname()}-{stamp}"
    raw.mkdir(parents=True, exist_ok=True)
    sizes = [int(x) for x in a.sizes.split(",")] + ([8000] if a.n8000 else [])
    configs = a.configs.split(",") + (["nc:8x1", "nc:4x2"] if a.nc else [])
    methods = a.methods.split(",")
    commcount = a.commcount or str(Path(a.build) / "commcount" / "openmpi" / "libcommcount.so")
    commcount = commcount if os.path.isfile(commcount) else None
    results = []
    for n in sizes:
        nocc = n // 5
        fp, sp, e = generate(n, nocc, a.gap, out / "gen")
        exact = 2 * float(np.sum(e[:nocc]))
        for cfg in configs:
            place = Config(cfg, "dense_density_bench")
            place.bring_up(a.rate, a.delay)
            runs = {m: [] for m in methods}
            try:
                for pair in range(a.pairs):
                    for m in methods:
                        stem = f"n{n}-{cfg.replace(':', '')}-{m}-{pair}"
                        d_path = str(raw / f"{stem}_D.npy") if pair == a.pairs - 1 else ""
                        rec = run_one(place, m, program(m, bins, fp, sp, nocc, a, str(raw / f"{stem}.json"),
                                                         d_path), raw, stem, a, commcount)
                        rec["d_path"] = d_path
                        runs[m].append(rec)
                        print(f"n={n} {cfg} {m} pair {pair}: "
                              + (f"{rec['time_s']:.2f} s" if rec["ok"] else rec.get("error", "")), flush=True)
            finally:
                place.down()
            ref = runs.get("elpa2", [{}])[-1].get("d_path") if runs.get("elpa2") and runs["elpa2"][-1]["ok"] else None
            rows = summarize(runs, ref)
            for d in raw.glob(f"n{n}-{cfg.replace(':', '')}-*_D.npy"):
                d.unlink()  # n^2 doubles each: keep only the numbers
            results.append({"n": n, "nocc": nocc, "config": cfg, "exact_band_energy": exact, "methods": rows,
                            "runs": runs})
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    notes = ["", f"{stamp}, {socket.gethostname()}, load at the end: {load}"]
    emit_table(table(results) + notes, results, a.markdown, str(raw) + ".json")
    return 0


def table(results):
    """The Markdown table of the cases in `results` (measure's JSON rows)."""
    lines = []
    for c in results:
        n, cfg, exact = c["n"], c["config"], c["exact_band_energy"]
        for m, r in c["methods"].items():
            lines.append([n, cfg, m] + (["failed", "", "", "", "", "", ""] if not r["ok"] else [
                r.get("layout") or layout(c["runs"][m][-1]["result"]),
                f"{r['time_s']:.2f}", f"{r['ratio']:.2f}",
                "" if r["iterations"] is None else str(r["iterations"]),
                "" if r["d_diff"] is None else f"{r['d_diff']:.1e}",
                f"{r['band_energy'] - exact:.1e}",
                "" if r["recv_bytes"] is None else f"{r['recv_bytes'] / 1e6:.1f}"]))
    header = ["n", "config", "method", "mesh / grid", "time to D (s)", "/ fastest", "iterations",
              "max abs(D - D_elpa2)", "E_band - exact (Eh)", "MB received per rank (max)"]
    return markdown_table(header, lines)


def plot(png, result_files):
    """Time to D per method, grouped by (n, config), from the results JSON of earlier runs."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cases = retime([c for f in result_files for c in json.loads(Path(f).read_text())])
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(METHODS)
    for k, m in enumerate(METHODS):
        xs = [i + (k - (len(METHODS) - 1) / 2) * width for i in range(len(cases))]
        ys = [c["methods"].get(m, {}).get("time_s", float("nan")) for c in cases]
        ax.bar(xs, ys, width, label=m)
    ax.set_xticks(range(len(cases)), [f"n={c['n']}\n{c['config']}" for c in cases])
    ax.set_yscale("log")
    ax.set_ylabel("time to D (s, slowest rank)")
    ax.set_title("Dense density matrix: purification vs ELPA / pdsygvx (loaded 2-core machine)")
    ax.set_ylim(top=ax.get_ylim()[1] * 4)
    ax.legend(ncol=5, fontsize=8, loc="upper center")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="2000,4000")
    ap.add_argument("--n8000", action="store_true", help="add n = 8000 (long on 2 cores)")
    ap.add_argument("--configs", default="local:1,local:4,local:8")
    ap.add_argument("--nc", action="store_true", help="add nc:8x1 and nc:4x2 (the emulated cluster)")
    ap.add_argument("--rate", default="10gbit")
    ap.add_argument("--delay", default="50us")
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--nb", type=int, default=64)
    ap.add_argument("--gap", type=float, default=0.3, help="HOMO-LUMO gap of the generated input (Eh)")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--commcount", default="", help="default <build>/commcount/openmpi/libcommcount.so")
    ap.add_argument("--out", default=str(ROOT / "build" / "dense-density"))
    ap.add_argument("--markdown", default="")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--plot", default="", help="PNG of time to D from --results (no runs)")
    ap.add_argument("--results", default="",
                    help="comma-separated results JSON of earlier runs: their table (--markdown), or --plot")
    a = ap.parse_args()
    if a.plot:
        return plot(a.plot, a.results.split(",")) or 0
    if a.results:  # the table of earlier runs
        cases = retime([c for f in a.results.split(",") for c in json.loads(Path(f).read_text())])
        emit_table(table(cases), cases, a.markdown)
        return 0
    for m in a.methods.split(","):
        if m not in METHODS:
            raise SystemExit(f"dense_density_bench: --methods {m}: expected some of {','.join(METHODS)}")
    b = Path(a.build)
    bins = {"tessel": str(b / "apps" / "tessel" / "tessel"), "elpa": str(b / "bench" / "elpa_density")}
    return check(a, bins) if a.check else measure(a, bins)


if __name__ == "__main__":
    sys.exit(main())
