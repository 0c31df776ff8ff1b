#!/usr/bin/env python3
"""End-to-end tests of `tessel density` under mpirun (standard library only).

  density_cli_test.py --mpiexec mpirun --np 4 --tessel build/apps/tessel/tessel [--mpiexec-flag=--oversubscribe]

Good runs: the CP2K 32-water SZV files (TRS4 and sign at eps 1e-6: band energy within 1e-5 Ha of
meta.json's band_energy_exact, 2 tr(PS) = N to 1e-5; --out P.csr written; --json parsed), the
generated water box (sign at eps 0: --dense, the atomic blocks (--tile none), the default clustered
tiles and contiguous tiles give the same band energy; diag, dense and block-sparse, gives it too;
auto prints one "method auto: chose X because ..." line and the JSON's method_used/method_reason).
Errors: exit status 2, one 'tessel: error:' line (rank 0 only), no output file.
Exit 0 when all pass, 1 otherwise, 77 (skip) never: the data-free cases always run.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The optional real matrices: TESSEL_SHARED_DATA (ctest sets it from -DTESSEL_DATA_DIR).
DATA = os.environ.get("TESSEL_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
CP2K = os.path.join(DATA, "cp2k", "h2o-32-szv")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiexec", default="mpirun")
    ap.add_argument("--numproc-flag", default="-np")
    ap.add_argument("--mpiexec-flag", action="append", default=[])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--tessel", required=True)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    problems = []

    def run(args, cwd):
        cmd = [a.mpiexec, a.numproc_flag, str(a.np)] + a.mpiexec_flag + [a.tessel, "density"] + args
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=a.timeout)
        return p

    def number(out, label):
        m = re.search(re.escape(label) + r"\s*([-+0-9.eE]+)", out)
        return float(m.group(1)) if m else float("nan")

    with tempfile.TemporaryDirectory() as work:
        # ---- good runs
        if os.path.exists(os.path.join(CP2K, "meta.json")):
            meta = json.load(open(os.path.join(CP2K, "meta.json")))
            files = ["--ks", os.path.join(CP2K, "KS.csr"), "--overlap", os.path.join(CP2K, "S.csr"),
                     "--blocks", os.path.join(CP2K, "blocksizes.txt"), "--electrons", str(meta["n_electrons"])]
            # default tiles (clustered, ~32 rows), contiguous tiles, and the atomic blocks
            for method, alg, tile in (("trs4", "cannon", []), ("sign", "rma25d", ["--tiling", "contiguous"]),
                                      ("trs4", "rma25d", ["--tile", "none"])):
                out_csr = os.path.join(work, f"P_{method}_{len(tile)}.csr")
                js = os.path.join(work, f"{method}.json")
                p = run(files + ["--method", method, "--algorithm", alg, "--out", out_csr, "--json", js] + tile,
                        work)
                name = f"cp2k 32 szv {method} {alg} {' '.join(tile) or 'tiles'}"
                if p.returncode != 0:
                    problems.append(f"{name}: exit {p.returncode}: {p.stderr[-500:]}")
                    continue
                be = number(p.stdout, "band energy 2 tr(PH):")
                if not abs(be - meta["band_energy_exact"]) <= 1e-5:
                    problems.append(f"{name}: band energy {be} vs exact {meta['band_energy_exact']}")
                r = json.load(open(js))
                if abs(2 * r["trace_ps"] - meta["n_electrons"]) > 1e-5:
                    problems.append(f"{name}: 2 tr(PS) = {2 * r['trace_ps']}")
                n_basis = sum(int(x) for x in open(os.path.join(CP2K, "blocksizes.txt")).read().split())
                if r["n"] != n_basis:  # the sparse route frees H before the JSON: it once said 0
                    problems.append(f"{name}: JSON n = {r['n']} (expected {n_basis} from blocksizes.txt)")
                if not (meta["homo"] < r["mu"] < meta["lumo"]):
                    problems.append(f"{name}: mu {r['mu']} not in (HOMO, LUMO)")
                if not os.path.exists(out_csr) or os.path.getsize(out_csr) == 0:
                    problems.append(f"{name}: no {out_csr}")
                want_tiles = "none" not in tile
                if want_tiles != ("tiles:" in p.stdout) or (want_tiles and r["tiles"] >= 96):
                    problems.append(f"{name}: tiles line/count wrong ({r['tiles']} tiles)")
                if p.stdout.count("band energy") != 1:
                    problems.append(f"{name}: {p.stdout.count('band energy')} summaries (expected 1, rank 0)")
                print(f"ok {name}: band energy {be:.10f} (exact {meta['band_energy_exact']}), "
                      f"{r['multiplications']} multiplications, {r['sign_evaluations']} sign evaluations")
        else:
            print(f"skip: no {CP2K}")
        energies = {}
        for extra in ([], ["--dense"], ["--tile", "none"], ["--tile", "12", "--tiling", "contiguous"]):
            p = run(["--generate", "water:12", "--eps", "0", "--method", "sign"] + extra, work)
            name = "generate water:12 sign " + (" ".join(extra) or "(default tiles)")
            if p.returncode != 0:
                problems.append(f"{name}: exit {p.returncode}: {p.stderr[-500:]}")
                continue
            energies[name] = number(p.stdout, "band energy 2 tr(PH):")
            electrons = number(p.stdout, "electrons 2 tr(PS) =")
            if abs(electrons - 96) > 1e-8:
                problems.append(f"{name}: 2 tr(PS) = {electrons}, expected 96")
            print(f"ok {name}: band energy {energies[name]:.12f}")
        if len(energies) == 4:
            v = list(energies.values())
            if max(v) - min(v) > 1e-9:
                problems.append(f"dense, block-sparse and tiled band energies differ: {v}")

        # ---- diag and auto (issue 31): the same band energy as sign, dense and block-sparse;
        # auto prints its choice and reason and puts them in the JSON; without ScaLAPACK diag
        # is an error and auto chooses sign.
        js = os.path.join(work, "auto.json")
        diag_built = True
        p = run(["--generate", "water:12", "--eps", "0", "--json", js], work)
        if p.returncode != 0:
            problems.append(f"auto: exit {p.returncode}: {p.stderr[-500:]}")
        else:
            r = json.load(open(js))
            lines = [l for l in p.stdout.splitlines() if l.startswith("method auto: chose ")]
            if len(lines) != 1 or not r.get("method_reason") or r["method"] != "auto":
                problems.append(f"auto: choice lines {lines}, json {r.get('method')} {r.get('method_reason')}")
            elif f"chose {r['method_used']} because" not in lines[0]:
                problems.append(f"auto: printed '{lines[0]}' but the JSON says {r['method_used']}")
            else:
                print(f"ok auto: {lines[0]}")
            diag_built = "not built" not in r.get("method_reason", "")
            if diag_built:
                for extra in ([], ["--dense"]):
                    p = run(["--generate", "water:12", "--eps", "0", "--method", "diag"] + extra, work)
                    name = "generate water:12 diag " + (" ".join(extra) or "block-sparse")
                    if p.returncode != 0:
                        problems.append(f"{name}: exit {p.returncode}: {p.stderr[-500:]}")
                        continue
                    be = number(p.stdout, "band energy 2 tr(PH):")
                    if len(energies) == 4 and abs(be - list(energies.values())[0]) > 1e-8:
                        problems.append(f"{name}: band energy {be} vs sign {list(energies.values())[0]}")
                    elif "method auto" in p.stdout or "iterations: 0 (diag" not in p.stdout:
                        problems.append(f"{name}: summary lines wrong: {p.stdout[-800:]}")
                    else:
                        print(f"ok {name}: band energy {be:.12f} (sign {list(energies.values())[0]:.12f})")
                # ELPA's solvers give the same band energy where built, a clear error elsewhere
                for solver in ("elpa1", "elpa2"):
                    p = run(["--generate", "water:12", "--eps", "0", "--method", "diag",
                             "--diag-solver", solver], work)
                    name = f"generate water:12 diag --diag-solver {solver}"
                    if p.returncode != 0:
                        if "ELPA is not built" in p.stderr and p.stderr.count("error:") == 1:
                            print(f"ok {name}: refused without ELPA ({p.stderr.strip()[:120]})")
                        else:
                            problems.append(f"{name}: exit {p.returncode}: {p.stderr[-500:]}")
                        continue
                    be = number(p.stdout, "band energy 2 tr(PH):")
                    ref = list(energies.values())[0] if energies else None
                    if ref is None or abs(be - ref) > 1e-8 or f"eigensolver {solver}" not in p.stdout:
                        problems.append(f"{name}: band energy {be} vs sign {ref}: {p.stdout[-600:]}")
                    else:
                        print(f"ok {name}: band energy {be:.12f} (sign {ref:.12f})")
                if os.path.exists(os.path.join(CP2K, "meta.json")):
                    p = run(files + ["--method", "diag", "--eps", "1e-6"], work)
                    be = number(p.stdout, "band energy 2 tr(PH):")
                    if p.returncode != 0 or not abs(be - meta["band_energy_exact"]) <= 1e-5:
                        problems.append(f"cp2k diag: exit {p.returncode}, band energy {be} vs "
                                        f"{meta['band_energy_exact']}: {p.stderr[-300:]}")
                    else:
                        print(f"ok cp2k 32 szv diag: band energy {be:.10f} (exact {meta['band_energy_exact']})")

        # ---- the memory accounting: stages with a peak, the peak within the process's
        # ru_maxrss (the accounting counts tessel's storage, a part of the process), the
        # largest matrix below the peak
        js = os.path.join(work, "memory.json")
        p = run(["--generate", "water:48", "--method", "trs4", "--json", js], work)
        if p.returncode != 0:
            problems.append(f"memory accounting run: exit {p.returncode}: {p.stderr[-500:]}")
        else:
            r = json.load(open(js))
            stages = {s["stage"]: s for s in r.get("memory_stages", [])}
            if not {"inverse sqrt", "trs4", "end"} <= set(stages):
                problems.append(f"memory stages: {sorted(stages)}")
            elif not (0 < r["largest_matrix_bytes"] < r["memory_peak_bytes"] <= r["maxrss_bytes_max"]):
                problems.append(f"memory: largest {r['largest_matrix_bytes']}, peak "
                                f"{r['memory_peak_bytes']}, maxrss {r['maxrss_bytes_max']}")
            # (each part is a max over ranks, maybe of another rank than the peak's: each part
            # is at most the peak, their sum need not be)
            elif any(s["peak_bytes"] < max(s["matrices"], s["buffers"], s["windows"]) for s in stages.values()):
                problems.append(f"memory: a stage's parts exceed its peak: {stages}")
            elif any(not s["matrices_alive"] or s["matrices_alive"][0] > r["largest_matrix_bytes"]
                     or s["matrices_alive"] != sorted(s["matrices_alive"], reverse=True)
                     for s in stages.values() if s["matrices"] > 0):
                problems.append(f"memory: the matrices alive at a stage's peak are not listed "
                                f"largest first within the largest matrix: {stages}")
            elif "accounted memory per rank" not in p.stdout:
                problems.append("memory: no accounted memory line")
            else:
                print(f"ok memory accounting: peak {r['memory_peak_bytes']:.0f} B in "
                      f"{r['memory_peak_stage']}, largest matrix {r['largest_matrix_bytes']:.0f} B")

            # --explain: the same prediction as the full run's, no solve, no output files
            jx, ox = os.path.join(work, "explain.json"), os.path.join(work, "explain_P.npy")
            q = run(["--generate", "water:48", "--method", "trs4", "--explain", "--json", jx,
                     "--out", ox], work)
            m = re.search(r"predicted peak ([0-9.]+ [kMG]?B)", q.stdout)
            full = re.search(r"predicted peak ([0-9.]+ [kMG]?B)", p.stdout)
            if q.returncode != 0:
                problems.append(f"--explain: exit {q.returncode}: {q.stderr[-500:]}")
            elif not m or not full or m.group(1) != full.group(1) or not r["memory_predicted_bytes"] > 0:
                problems.append(f"--explain: predicted {m and m.group(1)} against the run's "
                                f"{full and full.group(1)} / {r['memory_predicted_bytes']}")
            elif "band energy" in q.stdout or os.path.exists(jx) or os.path.exists(ox):
                problems.append("--explain: solved or wrote output files")
            else:
                print(f"ok --explain: predicted peak {m.group(1)} per rank, as the run")

            # --row-panels auto with a budget between the one-pass and two-panel predictions
            # (12.5 and 10.875 x the largest input: memory_watch.hpp): 2 panels chosen. A box
            # large enough that the predictions exceed the process's own ru_maxrss (which the
            # start check also holds against the budget) by a wide margin: at water:250 the
            # budget (41.5 MiB at 4 ranks) was within 2 MB of MPICH's ru_maxrss, which once
            # exceeded it (43.7 MB); water:500 gives 111.6 MiB. --explain does not solve.
            unit = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}
            q = run(["--generate", "water:500", "--method", "trs4", "--explain"], work)
            m = re.search(r"predicted peak ([0-9.]+) ([kMG]?B)", q.stdout)
            budget = float(m.group(1)) * unit[m.group(2)] * (11.6 / 12.5) / 2**20 if m else 1.0
            q = run(["--generate", "water:500", "--method", "trs4", "--explain", "--memory",
                     f"{budget:.3f}"], work)
            if q.returncode != 0 or "2 row panel(s), auto" not in q.stdout:
                problems.append(f"--row-panels auto with --memory {budget:.3f}: exit "
                                f"{q.returncode}: {q.stdout[-400:]} {q.stderr[-400:]}")
            else:
                print(f"ok --row-panels auto: 2 panels under a {budget:.2f} MiB budget")
            # A budget just above what the run needs does not stop it: the per-step check
            # extrapolates from one iterate to the next, not from a stage's seed (the identity
            # of the inverse sqrt grows ~40x in blocks in its first step at water:250; taken as
            # the growth of the whole peak, it stopped a water:8000 run that fits).
            jn, jb = os.path.join(work, "need.json"), os.path.join(work, "budget.json")
            q = run(["--generate", "water:250", "--method", "trs4", "--json", jn], work)
            rn = json.load(open(jn)) if q.returncode == 0 else {}
            need = max(rn.get("maxrss_bytes_max", 0), rn.get("memory_predicted_bytes", 0))
            q = run(["--generate", "water:250", "--method", "trs4", "--memory",
                     f"{1.1 * need / 2**20:.1f}", "--json", jb], work)
            if not need or q.returncode != 0:
                problems.append(f"--memory 1.1x the need ({need:.0f} B): exit {q.returncode}: "
                                f"{q.stdout[-400:]} {q.stderr[-400:]}")
            elif abs(json.load(open(jb))["band_energy"] - rn["band_energy"]) > 1e-9:
                problems.append("--memory 1.1x the need: another band energy than without a budget")
            else:
                print(f"ok --memory {1.1 * need / 2**20:.1f} MiB (1.1x the need): ran to the end")
            # --spill: H and S on disk while the solver does not read them: the same band
            # energy to the last digit (the same products), a lower accounted peak (two
            # matrices fewer in TRS4), and no file left in the directory
            sd = os.path.join(work, "spill")
            os.makedirs(sd)
            js0, js1 = os.path.join(work, "nospill.json"), os.path.join(work, "spill.json")
            q0 = run(["--generate", "water:250", "--method", "trs4", "--json", js0], work)
            q1 = run(["--generate", "water:250", "--method", "trs4", "--spill", sd, "--json", js1], work)
            if q0.returncode != 0 or q1.returncode != 0:
                problems.append(f"--spill: exit {q0.returncode} / {q1.returncode}: {q1.stderr[-400:]}")
            else:
                r0, r1 = json.load(open(js0)), json.load(open(js1))
                if r1["band_energy"] != r0["band_energy"] or os.listdir(sd):
                    problems.append(f"--spill: band energy {r1['band_energy']!r} against {r0['band_energy']!r}, "
                                    f"left {os.listdir(sd)}")
                else:
                    alive = [{x["stage"]: len(x["matrices_alive"]) for x in r["memory_stages"]}
                             for r in (r0, r1)]
                    if alive[0].get("trs4", 0) - alive[1].get("trs4", 0) != 2 or \
                            not r1["memory_peak_bytes"] < r0["memory_peak_bytes"]:
                        problems.append(f"--spill: matrices alive at the TRS4 peak {alive[1]} against "
                                        f"{alive[0]} without (expected 2 fewer); accounted peak "
                                        f"{r1['memory_peak_bytes']} against {r0['memory_peak_bytes']}")
                    else:
                        print(f"ok --spill: the same band energy, 2 matrices fewer at the TRS4 peak, "
                              f"accounted peak {r1['memory_peak_bytes'] / r0['memory_peak_bytes']:.2f}x, "
                              f"no file left")
            # 3 panels: the band energy of the one-pass run (the same products, filtered alike)
            jp = os.path.join(work, "panels.json")
            q = run(["--generate", "water:48", "--method", "trs4", "--row-panels", "3", "--json",
                     jp], work)
            if q.returncode != 0:
                problems.append(f"--row-panels 3: exit {q.returncode}: {q.stderr[-500:]}")
            else:
                rp = json.load(open(jp))
                if rp["row_panels"] != 3 or abs(rp["band_energy"] - r["band_energy"]) > 1e-9:
                    problems.append(f"--row-panels 3: band energy {rp['band_energy']} against "
                                    f"{r['band_energy']} in one pass (row_panels {rp['row_panels']})")
                else:
                    print(f"ok --row-panels 3: band energy {rp['band_energy']:.10f} as one pass")

        # ---- errors: exit 2, one message from rank 0, no output file
        blocks_bad = os.path.join(work, "bad_blocks.txt")
        with open(blocks_bad, "w") as f:
            f.write("4\n1\n1\n")
        gen = ["--generate", "water:4"]
        cases = [
            ("bad method", gen + ["--method", "lanczos"], "--method"),
            ("negative eps", gen + ["--eps", "-1e-6"], "--eps"),
            ("negative stage eps", gen + ["--eps-final", "-1"], "--eps-final"),
            ("negative final steps", gen + ["--final-steps", "-2"], "--final-steps"),
            ("odd electrons", gen + ["--electrons", "31"], "electrons = 31"),
            ("too many electrons", gen + ["--electrons", "48"], "at most"),
            ("mu outside the spectrum", gen + ["--mu", "100"], "outside the spectrum"),
            ("diag with mu", gen + ["--method", "diag", "--mu", "0"],
             "takes no mu" if diag_built else "diagonalization not built"),
            ("sign order", gen + ["--sign-order", "4"], "--sign-order"),
            ("bad eigensolver", gen + ["--diag-solver", "lapack"], "--diag-solver 'lapack'"),
            ("bad algorithm", gen + ["--algorithm", "summa"], "--algorithm"),
            ("bad row panels", gen + ["--row-panels", "0"], "--row-panels"),
            ("row panels with rma25d", gen + ["--row-panels", "2", "--algorithm", "rma25d"],
             "--row-panels"),
            ("bad generate", ["--generate", "ice:3"], "--generate"),
            ("missing files", ["--electrons", "8"], "--ks"),
            ("missing file", ["--ks", "nope.csr", "--overlap", "nope.csr", "--blocks", blocks_bad,
                              "--electrons", "8"], "nope.csr"),
            ("bad out", gen + ["--out", "P.txt"], "--out"),
            ("eps too large", gen + ["--eps", "10"], "eps"),
            ("tile zero", gen + ["--tile", "0"], "--tile"),
            ("tile not a number", gen + ["--tile", "big"], "--tile"),
            ("bad tiling", gen + ["--tiling", "random"], "--tiling"),
            ("negative memory", gen + ["--memory", "-5"], "--memory"),
            ("memory budget below the need", ["--generate", "water:48", "--memory", "1"],
             "--memory 1 MiB: the solve needs"),
            ("spill into a missing directory", gen + ["--spill", os.path.join(work, "no", "dir")],
             "--spill"),
            ("spill with --dense", gen + ["--dense", "--spill", work], "--spill"),
        ]
        if os.path.exists(os.path.join(CP2K, "meta.json")):
            cases.append(("block sizes do not match", ["--ks", os.path.join(CP2K, "KS.csr"), "--overlap",
                                                       os.path.join(CP2K, "S.csr"), "--blocks", blocks_bad,
                                                       "--electrons", "256"], "KS.csr"))
        for name, args, must in cases:
            out = os.path.join(work, "P_err.npy")
            p = run(args + ["--out", out] if "--out" not in args else args, work)
            msgs = [l for l in p.stderr.splitlines() if "tessel: error:" in l]
            if p.returncode != 2:
                problems.append(f"error '{name}': exit {p.returncode} (expected 2): {p.stderr[-300:]}")
            elif len(msgs) != 1:
                problems.append(f"error '{name}': {len(msgs)} error lines (expected 1)")
            elif must not in msgs[0]:
                problems.append(f"error '{name}': message lacks '{must}': {msgs[0]}")
            elif os.path.exists(out):
                problems.append(f"error '{name}': left {out}")
            else:
                print(f"ok error '{name}': {msgs[0]}")
    for pr in problems:
        print("FAIL", pr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
