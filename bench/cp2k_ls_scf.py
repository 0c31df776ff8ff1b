#!/usr/bin/env python3
"""CP2K's own linear-scaling SCF (LS_SCF, TRS4) beside `tessel density` on the matrices of the
same run: the density step users of CP2K actually run, per SCF cycle, against tessel's.

  bench/cp2k_ls_scf.py --case ../shared/data/cp2k/h2o-256-szv --config local:1 \
      [--cp2k cp2k.psmp] [--workdir DIR] [--reuse DIR] [--tessel-args "..."] [--out r.json] [--markdown t.md]

The case folder holds CP2K's input (cp2k.inp: LS_SCF with PURIFICATION_METHOD TRS4,
EPS_FILTER, KS_CSR_WRITE and S_CSR_WRITE), its coordinates, blocksizes.txt and meta.json (the
electron count). Steps:
  1. CP2K (Debian `cp2k` 2023.1: `apt-get install cp2k`) runs the input in --workdir on the
     config's ranks, one OpenMP thread each, under GNU time (peak resident memory per rank).
     --reuse DIR parses a finished run there instead (out.log, time.txt or the GNU time lines).
  2. From CP2K's output: per SCF cycle the TRS4 iterations and the sum of their time column
     (the density step of that cycle; the S^-1/2 Newton-Schulz steps run once, before cycle 1,
     and are reported apart), the cycle's total time, and CP2K's timing report rows of the
     density routines (calls, total seconds); CP2K's estimated peak process memory.
  3. `tessel density --method trs4 --eps EPS` on the KS and S matrices CP2K wrote at the end of
     that run (its last cycle's H), with the case's block sizes and electron count, on the
     same ranks, under GNU time. Its time includes its own S^-1/2 and the transformations.
Reported (JSON, Markdown): CP2K's mean and last-cycle TRS4 step, its S^-1/2, its peak memory;
tessel's time, its band energy 2 tr(PH), its peak memory. One run each: for timings run it on
an idle machine and say so; memory does not depend on the load.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, Config, emit_table, markdown_table  # noqa: E402

TIME = "/usr/bin/time"
RSS_TAG = "cp2k_ls_scf maxrss_kb"
DATA_DIRS = ("/usr/share/cp2k", "/usr/share/cp2k/data")


def parse_cp2k(text):
    """CP2K's output -> cycles [{cycle, trs4_iterations, trs4_seconds, cycle_seconds}], the
    Newton-Schulz S^-1/2 seconds before cycle 1, the timing report's density rows and the
    estimated peak memory (MiB) when printed."""
    cycles, it_times, ns_times, seen_scf = [], [], [], False
    for line in text.splitlines():
        f = line.split()
        if line.strip().startswith("TRS4 it") and len(f) >= 6:
            it_times.append(float(f[5]))  # "TRS4 it N occupation error seconds rate eps"
        elif line.strip().startswith("NS sqrt iter") and not seen_scf and len(f) >= 7:
            ns_times.append(float(f[6]))
        elif len(f) == 5 and f[0] == "SCF" and f[1].isdigit():
            seen_scf = True
            cycles.append({"cycle": int(f[1]), "energy": float(f[2]), "cycle_seconds": float(f[4]),
                           "trs4_iterations": len(it_times), "trs4_seconds": sum(it_times)})
            it_times = []
    timing = {}
    for m in re.finditer(r"^ (density_matrix_trs4|ls_scf_dm_update|ls_scf_main|ls_scf_init_scf|"
                         r"matrix_sqrt_Newton_Schulz|ls_scf|qs_energies)\s+(\d+)\s+\S+\s+\S+\s+\S+\s+"
                         r"(\S+)\s+(\S+)\s*$", text, re.M):  # calls, ASD, self avg/max, total avg/max
        timing[m.group(1)] = {"calls": int(m.group(2)), "total_seconds_avg": float(m.group(3)),
                              "total_seconds_max": float(m.group(4))}
    peak = re.search(r"Estimated peak process memory \[MiB\]\s+(\d+)", text)
    return {"cycles": cycles, "s_sqrt_seconds": sum(ns_times), "timing_report": timing,
            "cp2k_peak_mib": int(peak.group(1)) if peak else None,
            "energy": cycles[-1]["energy"] if cycles else None}


def rss_max_kb(text):
    kb = [int(line.split()[-1]) for line in text.splitlines() if line.startswith(RSS_TAG)]
    return max(kb) if kb else None


def written(workdir, what):
    """The CSR file CP2K wrote for `what` ("KS" or "S"), newest first."""
    found = sorted(Path(workdir).glob(f"*-{what}_SPIN_1*.csr"), key=os.path.getmtime, reverse=True)
    if not found and what == "S":
        found = sorted(Path(workdir).glob("*-S*.csr"), key=os.path.getmtime, reverse=True)
    if not found:
        raise SystemExit(f"cp2k_ls_scf: no {what} CSR file written in {workdir} (KS_CSR_WRITE / "
                         f"S_CSR_WRITE missing from the input?)")
    return str(found[0])


def run_cp2k(place, args, workdir):
    case = Path(args.case)
    workdir.mkdir(parents=True, exist_ok=True)
    for f in case.iterdir():
        if f.suffix in (".inp", ".xyz"):
            shutil.copy(f, workdir / f.name)
    data = next((d for d in DATA_DIRS if os.path.exists(os.path.join(d, "BASIS_MOLOPT"))), None)
    if shutil.which(args.cp2k) is None or data is None:
        raise SystemExit(f"cp2k_ls_scf: '{args.cp2k}' or CP2K's data (BASIS_MOLOPT) not found: "
                         "apt-get install cp2k")
    prog = [TIME, "-f", f"{RSS_TAG} %M", args.cp2k, "-i", "cp2k.inp", "-o", "out.log"]
    here = os.getcwd()
    os.chdir(workdir)
    try:
        p, wall, _ = place.run(place.command(prog, env=["-x", "OMP_NUM_THREADS=1", "-x",
                                                        f"CP2K_DATA_DIR={data}"]),
                               args.timeout, workdir / "run.log")
    finally:
        os.chdir(here)
    if p.returncode != 0:
        raise SystemExit(f"cp2k_ls_scf: CP2K failed ({workdir / 'run.log'})")
    (workdir / "time.txt").write_text(p.stdout + p.stderr)
    return wall


def run_tessel(place, args, workdir, meta):
    js = workdir / "tessel.json"
    prog = [TIME, "-f", f"{RSS_TAG} %M", str(Path(args.build) / "apps" / "tessel" / "tessel"),
            "density", "--ks", written(workdir, "KS"), "--overlap", written(workdir, "S"),
            "--blocks", str(Path(args.case) / "blocksizes.txt"), "--electrons",
            str(meta["n_electrons"]), "--method", "trs4", "--eps", str(args.eps),
            "--json", str(js)] + shlex.split(args.tessel_args)
    p, wall, _ = place.run(place.command(prog, env=["-x", "OMP_NUM_THREADS=1"]), args.timeout,
                           workdir / "tessel.log")
    if p.returncode != 0:
        raise SystemExit(f"cp2k_ls_scf: tessel failed ({workdir / 'tessel.log'})")
    r = json.load(open(js))
    r["peak_rss_kb"] = rss_max_kb(p.stdout + p.stderr)
    return r, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default=str(ROOT.parent / "shared" / "data" / "cp2k" / "h2o-256-szv"))
    ap.add_argument("--config", default="local:1")
    ap.add_argument("--cp2k", default="cp2k.psmp")
    ap.add_argument("--workdir", default="")
    ap.add_argument("--reuse", default="", help="parse a finished CP2K run in this folder")
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--tessel-args", default="")
    ap.add_argument("--timeout", type=float, default=14400)
    ap.add_argument("--out", default="")
    ap.add_argument("--markdown", default="")
    args = ap.parse_args()
    place = Config(args.config, "cp2k_ls_scf")
    meta = json.load(open(Path(args.case) / "meta.json"))
    if args.reuse:
        workdir, cp2k_wall = Path(args.reuse), None
    else:
        workdir = Path(args.workdir or f"/tmp/cp2k_ls_scf_{Path(args.case).name}_{place.np}")
        cp2k_wall = run_cp2k(place, args, workdir)
    text = (workdir / "out.log").read_text()
    cp = parse_cp2k(text)
    if not cp["cycles"]:
        raise SystemExit(f"cp2k_ls_scf: no SCF cycle in {workdir / 'out.log'}")
    rss_text = (workdir / "time.txt").read_text() if (workdir / "time.txt").exists() else ""
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", rss_text)
    cp["peak_rss_kb"] = rss_max_kb(rss_text) or (int(m.group(1)) if m else None)
    cp["wall_seconds"] = cp2k_wall
    ts, tessel_wall = run_tessel(place, args, workdir, meta)
    steps = [c["trs4_seconds"] for c in cp["cycles"]]
    rep = cp["timing_report"].get("density_matrix_trs4")  # CP2K's own count of the whole routine
    per_call = rep["total_seconds_max"] / rep["calls"] if rep else None
    row = {"case": Path(args.case).name, "config": args.config, "cp2k": cp,
           "cp2k_trs4_mean_s": statistics.mean(steps), "cp2k_trs4_last_s": steps[-1],
           "cp2k_trs4_report_per_call_s": per_call,
           "tessel": {k: ts.get(k) for k in ("seconds", "band_energy", "iterations", "multiplications",
                                              "memory_peak_bytes", "maxrss_bytes_max", "peak_rss_kb")},
           "tessel_wall_s": tessel_wall, "band_energy_exact": meta.get("band_energy_exact")}
    mb = lambda kb: f"{kb / 1024:.0f} MB" if kb else "-"  # noqa: E731
    lines = [
        f"{row['case']} on {args.config}: CP2K LS_SCF TRS4, {len(steps)} SCF cycles",
        f"  CP2K density step per cycle: density_matrix_trs4 in its timing report "
        + (f"{rep['calls']} calls, {per_call:.2f} s each; " if rep else "not found; ")
        + f"its TRS4 iteration lines sum to {row['cp2k_trs4_mean_s']:.2f} s per cycle (mean), "
        f"last {steps[-1]:.2f} s ({cp['cycles'][-1]['trs4_iterations']} iterations); S^-1/2 once "
        f"{cp['s_sqrt_seconds']:.2f} s; peak RSS {mb(cp['peak_rss_kb'])}"
        + (f", CP2K's estimate {cp['cp2k_peak_mib']} MiB" if cp["cp2k_peak_mib"] else ""),
        f"  tessel density --method trs4 on the last cycle's KS, S: {ts['seconds']:.2f} s (with its "
        f"S^-1/2), band energy {ts['band_energy']:.10f} Eh, peak RSS {mb(row['tessel']['peak_rss_kb'])}",
    ]
    header = ["case", "config", "CP2K TRS4 step s (report per call; iterations mean / last)",
              "CP2K S^-1/2 s", "CP2K peak RSS",
              "tessel density s", "tessel peak RSS", "tessel band energy Eh"]
    cells = [[row["case"], args.config, (f"{per_call:.2f}; " if rep else "-; ")
              + f"{row['cp2k_trs4_mean_s']:.2f} / {steps[-1]:.2f}",
              f"{cp['s_sqrt_seconds']:.2f}", mb(cp["peak_rss_kb"]), f"{ts['seconds']:.2f}",
              mb(row["tessel"]["peak_rss_kb"]), f"{ts['band_energy']:.10f}"]]
    emit_table(markdown_table(header, cells) + [""] + lines, [row],
               markdown=args.markdown or None, out=args.out or None)


if __name__ == "__main__":
    main()
