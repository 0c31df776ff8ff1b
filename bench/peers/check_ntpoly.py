#!/usr/bin/python3
"""check_ntpoly.py — functional check of the NTPoly peer (bench/ntpoly_density, issue 9), no timing.

  python3 bench/peers/check_ntpoly.py [--ntpoly EXE] [--case DIR] [--ranks 2] [--eps 0] [--tol 1e-8]

Converts the CP2K case (default ../shared/data/cp2k/h2o-32-szv) to Matrix Market, runs NTPoly's
TRS4 and its sign function (mu = (homo + lumo) / 2 from meta.json) on --ranks ranks, and checks
the band energy 2 tr(PH) against meta.json's band_energy_exact (dense diagonalization) and
tr(PS) against the occupied orbitals, both within --tol. Exit status 1 if either is off.
"""
import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchlib import ROOT, Config  # noqa: E402
from density_peer_bench import csr_to_mtx  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ntpoly", default=str(ROOT / "build" / "peers" / "ntpoly-3.1.1" / "bin" / "ntpoly_density"))
    ap.add_argument("--case", default=str(ROOT.parent / "shared" / "data" / "cp2k" / "h2o-32-szv"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--eps", type=float, default=0.0)
    ap.add_argument("--tol", type=float, default=1e-8)
    a = ap.parse_args()
    if not os.access(a.ntpoly, os.X_OK):
        raise SystemExit(f"check_ntpoly: {a.ntpoly} not built (bash bench/peers/build_ntpoly.sh)")
    d = Path(a.case)
    meta = json.loads((d / "meta.json").read_text())
    place = Config(f"local:{a.ranks}", "check_ntpoly")
    bad = 0
    with tempfile.TemporaryDirectory() as w:
        f = {x: str(d / x) if (d / x).exists() else str(d / (x + ".gz")) for x in ("KS.csr", "S.csr")}
        csr_to_mtx(f["KS.csr"], f"{w}/H.mtx")
        csr_to_mtx(f["S.csr"], f"{w}/S.mtx")
        mu = 0.5 * (meta["homo"] + meta["lumo"])
        for method in ("trs4", "sign"):
            js = f"{w}/{method}.json"
            prog = [a.ntpoly, "--hamiltonian", f"{w}/H.mtx", "--overlap", f"{w}/S.mtx", "--electrons",
                    str(meta["n_electrons"]), "--method", method, "--mu", repr(mu), "--eps", repr(a.eps), "--json", js]
            p, _, _ = place.run(place.command(prog, env=["-x", "OMP_NUM_THREADS=1"]), 600, f"{w}/{method}.log")
            if p.returncode != 0:
                print(f"{method}: FAILED (exit {p.returncode})\n{p.stdout[-1500:]}{p.stderr[-1500:]}")
                bad += 1
                continue
            r = json.loads(Path(js).read_text())
            de = r["band_energy"] - meta["band_energy_exact"]
            dt = r["trace_ps"] - meta["n_occupied"]
            ok = abs(de) <= a.tol and abs(dt) <= a.tol
            bad += not ok
            print(f"{method}: band energy {r['band_energy']:.12f} (exact {meta['band_energy_exact']:.10f}, "
                  f"diff {de:+.1e}), tr(PS) {r['trace_ps']:.10f} (diff {dt:+.1e}), multiplications "
                  f"{r['multiplications']}, mu {r['mu']:.6f}: {'ok' if ok else 'FAILED'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
