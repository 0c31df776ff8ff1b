#!/usr/bin/env python3
"""`tessel density --method sign` against the same Newton-Schulz sign iteration on DBCSR 2.5
(bench/dbcsr_sign.cpp), alternating (issue 9).

  bench/density_peer_bench.py --config local:4 --cases cp2k:../shared/data/cp2k/h2o-256-szv,water:2000 \
      [--eps 1e-6] [--pairs 3] [--build build] [--out results.json] [--markdown table.md]

Per case: one set-up run of tessel (its own mu search) gives mu, the Lanczos bounds of
Ht = S^-1/2 H S^-1/2, the scale of S^-1/2's Y0 and the stage thresholds; then --pairs rounds of
tessel `--mu MU` (one sign evaluation) and `dbcsr_sign --mu MU --bounds LO,HI --s-scale S` with
the same eps, stage thresholds and final McWeeny steps, alternating, so both run the same
iteration (symmetric form through S^-1/2, order 2, the same stopping rules) at the same mu.
Reported: median total solve time, the ratio tessel/DBCSR, multiplications, iterations, band
energies and their difference. tessel's time includes its idempotency check ||PSP - P||
(2 products) that the driver does not do; its multiplications are listed, so the table says
which products each side ran. Cases: cp2k:DIR (KS.csr[.gz], S.csr[.gz], blocksizes.txt,
meta.json for the electron count) or water:N (the generated box). Configs: local:NP or
nc:NODESxPPN (benchlib.Config). Run timings on an idle machine only.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, Config, emit_table, markdown_table  # noqa: E402


def case_args(case):
    kind, _, spec = case.partition(":")
    if kind == "water":
        return ["--generate", f"water:{int(spec)}"], f"water:{spec}"
    if kind == "cp2k":
        d = Path(spec)

        def f(name):
            return str(d / name) if (d / name).exists() else str(d / (name + ".gz"))
        electrons = json.load(open(d / "meta.json"))["n_electrons"]
        return (["--ks", f("KS.csr"), "--overlap", f("S.csr"), "--blocks", str(d / "blocksizes.txt"),
                 "--electrons", str(electrons)], d.name)
    raise SystemExit(f"density_peer_bench: case '{case}': expected cp2k:DIR or water:N")


def run_json(place, prog, js, timeout, log):
    p, wall, _ = place.run(place.command(prog, env=["-x", "OMP_NUM_THREADS=1"]), timeout, log)
    if p.returncode != 0:
        raise SystemExit(f"density_peer_bench: failed ({log}):\n{p.stdout[-1500:]}{p.stderr[-1500:]}")
    return json.load(open(js)), wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="local:4")
    ap.add_argument("--cases", default=f"cp2k:{ROOT.parent / 'shared' / 'data' / 'cp2k' / 'h2o-256-szv'}")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--timeout", type=float, default=7200)
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--delay", default="50us")
    ap.add_argument("--out", default="")
    ap.add_argument("--markdown", default="")
    a = ap.parse_args()
    tessel = str(Path(a.build) / "apps" / "tessel" / "tessel")
    driver = str(Path(a.build) / "bench" / "dbcsr_sign")
    for exe in (tessel, driver):
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"density_peer_bench: {exe} not built (dbcsr_sign needs Open MPI and libdbcsr-dev)")
    place = Config(a.config, "density_peer_bench")
    place.bring_up(a.rate, a.delay)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as work:
            for case in a.cases.split(","):
                inputs, name = case_args(case)
                js = os.path.join(work, "setup.json")
                setup, _ = run_json(place, [tessel, "density"] + inputs + ["--method", "sign", "--eps", str(a.eps),
                                                                          "--json", js],
                                    js, a.timeout, os.path.join(work, "setup.log"))
                mu, (lo, hi), s = setup["mu"], setup["bounds"], setup["inverse_scale"]
                stage = ["--eps-inverse", repr(setup["eps_inverse"]), "--eps-transform", repr(setup["eps_transform"]),
                         "--eps-final", repr(setup["eps_final"]), "--final-steps", str(setup["final_steps"])]
                t_runs, d_runs = [], []
                for k in range(a.pairs):
                    jt, jd = os.path.join(work, f"t{k}.json"), os.path.join(work, f"d{k}.json")
                    rt, _ = run_json(place, [tessel, "density"] + inputs +
                                     ["--method", "sign", "--eps", str(a.eps), "--mu", repr(mu), "--json", jt] + stage,
                                     jt, a.timeout, os.path.join(work, f"t{k}.log"))
                    rd, _ = run_json(place, [driver] + inputs +
                                     ["--mu", repr(mu), "--bounds", f"{lo!r},{hi!r}", "--s-scale", repr(s),
                                      "--eps", str(a.eps), "--json", jd] + stage,
                                     jd, a.timeout, os.path.join(work, f"d{k}.log"))
                    t_runs.append(rt)
                    d_runs.append(rd)
                tt = statistics.median(r["seconds"] for r in t_runs)
                td = statistics.median(r["seconds"] for r in d_runs)
                rows.append({"case": name, "config": a.config, "eps": a.eps, "mu": mu,
                             "tessel_seconds": tt, "dbcsr_seconds": td, "ratio": tt / td if td > 0 else None,
                             "tessel_multiplications": t_runs[0]["multiplications"],
                             "dbcsr_multiplications": d_runs[0]["multiplications"],
                             "tessel_iterations": t_runs[0]["iterations"],
                             "dbcsr_iterations": d_runs[0]["iterations"],
                             "tessel_band_energy": t_runs[0]["band_energy"],
                             "dbcsr_band_energy": d_runs[0]["band_energy"],
                             "band_energy_difference": t_runs[0]["band_energy"] - d_runs[0]["band_energy"],
                             "tessel_runs": t_runs, "dbcsr_runs": d_runs})
    finally:
        place.down()
    cells = [[r["case"], r["config"], f"{r['eps']:g}", f"{r['tessel_seconds']:.3f}", f"{r['dbcsr_seconds']:.3f}",
              f"{r['ratio']:.2f}", f"{r['tessel_multiplications']} / {r['dbcsr_multiplications']}",
              f"{r['tessel_iterations']} / {r['dbcsr_iterations']}", f"{r['tessel_band_energy']:.8f}",
              f"{r['dbcsr_band_energy']:.8f}", f"{r['band_energy_difference']:+.1e}"] for r in rows]
    emit_table(markdown_table(["case", "config", "eps", "tessel s", "DBCSR s", "tessel/DBCSR", "mult (t / D)",
                               "sign it (t / D)", "band energy tessel", "band energy DBCSR", "difference"], cells),
               rows, a.markdown, a.out)

if __name__ == "__main__":
    main()
