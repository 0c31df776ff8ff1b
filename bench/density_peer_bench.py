#!/usr/bin/env python3
"""`tessel density` against its peers, alternating (issue 9): the same Newton-Schulz sign
iteration on DBCSR 2.5 (bench/dbcsr_sign.cpp), and NTPoly 3.1.1's own TRS4 and sign function
(bench/ntpoly_density.f90, built by bench/peers/build_ntpoly.sh).

  bench/density_peer_bench.py --config local:4 --cases cp2k:../shared/data/cp2k/h2o-256-szv,water:2000 \
      [--eps 1e-6] [--pairs 3] [--tools tessel,dbcsr,ntpoly] [--methods sign,trs4] [--ntpoly-eps 1e-7,1e-8] [--build build] [--ntpoly EXE] \
      [--out results.json] [--markdown table.md]

Per case with the sign method: one set-up run of tessel (its own mu search) gives mu, the Lanczos bounds of
Ht = S^-1/2 H S^-1/2, the scale of S^-1/2's Y0 and the stage thresholds; then --pairs rounds of
tessel `--mu MU` (one sign evaluation) and `dbcsr_sign --mu MU --bounds LO,HI --s-scale S` with
the same eps, stage thresholds and final McWeeny steps, alternating, so both run the same
iteration (symmetric form through S^-1/2, order 2, the same stopping rules) at the same mu.
Reported: median total solve time, the ratio tessel/DBCSR, multiplications, iterations, band
energies and their difference, and each tool's peak resident memory per rank (GNU time's %M,
the largest rank's ru_maxrss over the runs: the same measure for every tool). tessel's time
includes its idempotency check ||PSP - P|| (2 products) that the driver does not do; its multiplications are listed, so the table says
which products each side ran.

NTPoly (--tools ...,ntpoly): H and S converted once per case to Matrix Market (CP2K CSR ->
`coordinate real general`; water:N is first written by `tessel generate water --molecules N
--out-dir`, seed and filter at their defaults, as `--generate water:N` uses them); per pair
`ntpoly_density --method sign --mu MU` (NTPoly's InverseSquareRoot, then its SignFunction of
S^-1/2 H S^-1/2 - MU I at tessel's MU: NTPoly has no mu search for the sign function) and
`ntpoly_density --method trs4` next to `tessel density --method trs4`, same eps (NTPoly drops
elements below eps, tessel and DBCSR drop blocks). NTPoly's time includes its S^-1/2
(order 5), as tessel's includes its own. Cases: cp2k:DIR (KS.csr[.gz], S.csr[.gz], blocksizes.txt,
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


def csr_entries(src):
    """The entries (row, column, value text) of CP2K CSR text (`row col value`, 1-based, both
    triangles; plain or .gz)."""
    import gzip
    opener = gzip.open if str(src).endswith(".gz") else open
    with opener(src, "rt") as f:
        for line in f:
            t = line.split()
            if len(t) == 3:
                yield int(t[0]), int(t[1]), t[2]


def csr_to_mtx(src, dst):
    """CP2K CSR text -> Matrix Market `coordinate real general` (what NTPoly's
    ConstructMatrixFromMatrixMarket reads)."""
    rows = cols = 0
    lines = []
    for r, c, v in csr_entries(src):
        rows, cols = max(rows, r), max(cols, c)
        lines.append(f"{r} {c} {v}\n")
    with open(dst, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"{rows} {cols} {len(lines)}\n")
        f.writelines(lines)


def csr_to_ntpoly_bin(src, dst):
    """CP2K CSR text -> NTPoly's binary matrix file, what its ConstructMatrixFromBinary reads
    with MPI-IO: int32 rows, columns, complex flag (0), int64 number of values, then per value
    int32 row, int32 column (1-based) and float64 value. (Its Matrix Market reader was killed
    at 6.3 GB on one of 4 ranks reading the 730 MB H of water:8000; the binary reader takes
    each rank's share of the triplets directly.)"""
    import struct
    rows = cols = count = 0
    with open(dst + ".tmp", "wb") as out:
        out.write(b"\0" * 20)  # the header, written at the end
        buf = bytearray()
        for r, c, v in csr_entries(src):
            rows, cols = max(rows, r), max(cols, c)
            buf += struct.pack("<iid", r, c, float(v))
            count += 1
            if len(buf) >= 1 << 24:
                out.write(buf)
                buf.clear()
        out.write(buf)
        out.seek(0)
        out.write(struct.pack("<iiiq", rows, cols, 0, count))
    os.replace(dst + ".tmp", dst)


def ntpoly_inputs(place, case, inputs, tessel, work, timeout, binary=False):
    """(H, S, electrons) of a case for the NTPoly driver, converted into `work`: Matrix Market
    files, or with `binary` NTPoly's binary files (*.bin, which the driver reads with
    ConstructMatrixFromBinary)."""
    kind, _, spec = case.partition(":")
    if kind == "water":
        gen = os.path.join(work, f"water{spec}")
        os.makedirs(gen, exist_ok=True)
        p, _, _ = place.run(place.command([tessel, "generate", "water", "--molecules", spec, "--out-dir", gen]),
                            timeout, os.path.join(work, f"generate{spec}.log"))
        if p.returncode != 0:
            raise SystemExit(f"density_peer_bench: tessel generate failed:\n{p.stdout[-1500:]}{p.stderr[-1500:]}")
        import re
        electrons = int(re.search(r"(\d+) electrons", p.stdout).group(1))
        h, s = os.path.join(gen, "H.csr"), os.path.join(gen, "S.csr")
    else:
        h, s = inputs[inputs.index("--ks") + 1], inputs[inputs.index("--overlap") + 1]
        electrons = int(inputs[inputs.index("--electrons") + 1])
    ext, convert = (".bin", csr_to_ntpoly_bin) if binary else (".mtx", csr_to_mtx)
    hm, sm = (os.path.join(work, f"{kind}{spec.replace('/', '_')}-{m}{ext}") for m in "HS")
    convert(h, hm)
    convert(s, sm)
    return hm, sm, electrons


TIME = "/usr/bin/time"  # GNU time: each rank's peak resident memory (getrusage ru_maxrss)
RSS_TAG = "density_peer_bench maxrss_kb"


def run_json(place, prog, js, timeout, log):
    """Runs `prog` on every rank under GNU time (when installed), returns its JSON with
    "peak_rss_bytes" (the largest rank's ru_maxrss, the same measure for every tool) and the
    wall time."""
    timed = [TIME, "-f", f"{RSS_TAG} %M"] + prog if os.path.exists(TIME) else prog
    p, wall, _ = place.run(place.command(timed, env=["-x", "OMP_NUM_THREADS=1"]), timeout, log)
    if p.returncode != 0:
        raise SystemExit(f"density_peer_bench: failed ({log}):\n{p.stdout[-1500:]}{p.stderr[-1500:]}")
    r = json.load(open(js))
    kb = [int(line.split()[-1]) for line in (p.stdout + p.stderr).splitlines() if line.startswith(RSS_TAG)]
    r["peak_rss_bytes"] = 1024 * max(kb) if kb else None
    return r, wall


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
    ap.add_argument("--tools", default="",
                    help="tessel plus the peers to run: dbcsr (bench/dbcsr_sign), ntpoly (NTPoly driver); "
                         "default: tessel and every peer that is built")
    ap.add_argument("--ntpoly", default="",
                    help="NTPoly driver (default <build>/peers/ntpoly-3.1.1/bin/ntpoly_density, from "
                         "bench/peers/build_ntpoly.sh)")
    ap.add_argument("--ntpoly-binary", action="store_true",
                    help="hand NTPoly its binary matrix files instead of Matrix Market (large cases: "
                         "its Matrix Market reader needs several times the file per rank)")
    ap.add_argument("--methods", default="sign,trs4",
                    help="sign (tessel, DBCSR's driver, NTPoly) and/or trs4 (tessel and NTPoly only)")
    ap.add_argument("--ntpoly-eps", default="",
                    help="more eps values for NTPoly beside --eps (comma list): NTPoly drops elements below "
                         "eps, tessel and DBCSR drop blocks, so the same eps is not the same accuracy; each value "
                         "adds NTPoly columns (time, ratio, band energy difference) to the table")
    ap.add_argument("--ntpoly-slices", type=int, default=1, help="NTPoly process grid slices")
    ap.add_argument("--work", default="", help="keep the logs, JSONs and converted inputs here")
    ap.add_argument("--tessel-args", default="",
                    help="more options for every tessel density run, e.g. '--row-panels 2'")
    a = ap.parse_args()
    tessel = str(Path(a.build) / "apps" / "tessel" / "tessel")
    driver = str(Path(a.build) / "bench" / "dbcsr_sign")
    a.ntpoly = a.ntpoly or str(Path(a.build) / "peers" / "ntpoly-3.1.1" / "bin" / "ntpoly_density")
    if not a.tools:
        a.tools = ",".join(["tessel"] + [t for t, exe in (("dbcsr", driver), ("ntpoly", a.ntpoly))
                                         if os.access(exe, os.X_OK)])
        print(f"density_peer_bench: --tools {a.tools}")
    tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    if "tessel" not in tools or any(t not in ("tessel", "dbcsr", "ntpoly") for t in tools):
        raise SystemExit(f"density_peer_bench: --tools '{a.tools}': expected tessel plus any of dbcsr, ntpoly")
    methods = [m.strip() for m in a.methods.split(",") if m.strip()]
    if not methods or any(m not in ("sign", "trs4") for m in methods):
        raise SystemExit(f"density_peer_bench: --methods '{a.methods}': expected sign and/or trs4")
    need = {"tessel": (tessel, "build tessel"), "dbcsr": (driver, "dbcsr_sign needs Open MPI and libdbcsr-dev"),
            "ntpoly": (a.ntpoly, "run bench/peers/build_ntpoly.sh")}
    for t in tools:
        if not os.access(need[t][0], os.X_OK):
            raise SystemExit(f"density_peer_bench: {need[t][0]} not built ({need[t][1]}; or leave {t} out of --tools)")
    extra = [f"ntpoly@{float(e):g}" for e in a.ntpoly_eps.split(",") if e.strip()]
    if extra and "ntpoly" not in tools:
        raise SystemExit("density_peer_bench: --ntpoly-eps needs ntpoly in --tools")
    place = Config(a.config, "density_peer_bench")
    place.bring_up(a.rate, a.delay)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = a.work or tmp
            os.makedirs(work, exist_ok=True)
            for case in a.cases.split(","):
                inputs, name = case_args(case)
                if "ntpoly" in tools:
                    hm, sm, nel = ntpoly_inputs(place, case, inputs, tessel, work, a.timeout,
                                                a.ntpoly_binary)
                    nt_in = [a.ntpoly, "--hamiltonian", hm, "--overlap", sm, "--electrons", str(nel),
                             "--slices", str(a.ntpoly_slices)]
                mu = None
                if "sign" in methods:  # the sign runs share tessel's mu, bounds and stage thresholds
                    js = os.path.join(work, "setup.json")
                    setup, _ = run_json(place, [tessel, "density"] + inputs + ["--method", "sign", "--eps", str(a.eps),
                                                                              "--json", js] + a.tessel_args.split(),
                                        js, a.timeout, os.path.join(work, "setup.log"))
                    mu, (lo, hi), s = setup["mu"], setup["bounds"], setup["inverse_scale"]
                    stage = ["--eps-inverse", repr(setup["eps_inverse"]), "--eps-transform",
                             repr(setup["eps_transform"]), "--eps-final", repr(setup["eps_final"]),
                             "--final-steps", str(setup["final_steps"])]
                # per method, per tool: the runs of the pairs (alternating within a pair)
                runs = {("sign", t): [] for t in tools + extra} if "sign" in methods else {}
                if "ntpoly" in tools and "trs4" in methods:
                    for t in ["tessel", "ntpoly"] + extra:
                        runs[("trs4", t)] = []
                for k in range(a.pairs):
                    for (method, tool), acc in runs.items():
                        js = os.path.join(work, f"{name}-{method}-{tool}-{k}.json")
                        log = js[:-5] + ".log"
                        if tool == "tessel" and method == "sign":
                            prog = [tessel, "density"] + inputs + ["--method", "sign", "--eps", str(a.eps),
                                                                  "--mu", repr(mu), "--json", js] + a.tessel_args.split() + stage
                        elif tool == "tessel":
                            prog = [tessel, "density"] + inputs + ["--method", "trs4", "--eps", str(a.eps), "--json", js] + a.tessel_args.split()
                        elif tool == "dbcsr":
                            prog = [driver] + inputs + ["--mu", repr(mu), "--bounds", f"{lo!r},{hi!r}", "--s-scale",
                                                        repr(s), "--eps", str(a.eps), "--json", js] + stage
                        else:  # NTPoly, at --eps or at the eps in its name (ntpoly@EPS)
                            e = tool.split("@")[1] if "@" in tool else str(a.eps)
                            prog = nt_in + ["--eps", e] + (["--method", "sign", "--mu", repr(mu)] if method == "sign"
                                                           else ["--method", "trs4"]) + ["--json", js]
                        acc.append(run_json(place, prog, js, a.timeout, log)[0])
                for method in ("sign", "trs4"):
                    got = {t: r for (m, t), r in runs.items() if m == method}
                    if not got:
                        continue
                    row = {"case": name, "config": a.config, "eps": a.eps, "method": method, "mu": mu}
                    for t, rs in got.items():
                        row[t] = {"seconds": statistics.median(r["seconds"] for r in rs),
                                  "multiplications": rs[0]["multiplications"], "iterations": rs[0]["iterations"],
                                  "band_energy": rs[0]["band_energy"], "trace_ps": rs[0].get("trace_ps"),
                                  "mu": rs[0].get("mu"), "runs": rs,
                                  "peak_rss_bytes": max((r["peak_rss_bytes"] for r in rs
                                                         if r.get("peak_rss_bytes")), default=None)}
                    for t in got:
                        if t != "tessel":
                            row[f"ratio_tessel_{t}"] = row["tessel"]["seconds"] / row[t]["seconds"] \
                                if row[t]["seconds"] > 0 else None
                            row[f"band_energy_difference_{t}"] = row["tessel"]["band_energy"] - row[t]["band_energy"]
                    rows.append(row)
    finally:
        place.down()
    peers = [t for t in ("dbcsr", "ntpoly") if t in tools] + extra
    label = {"tessel": "tessel", "dbcsr": "DBCSR", "ntpoly": "NTPoly"}
    label.update({t: f"NTPoly eps {t.split('@')[1]}" for t in extra})
    head = ["case", "config", "eps", "method", "tessel s"] + [f"{label[t]} s" for t in peers] + \
        [f"tessel/{label[t]}" for t in peers] + ["mult (" + " / ".join(label[t] for t in ["tessel"] + peers) + ")",
                                                  "it (" + " / ".join(label[t] for t in ["tessel"] + peers) + ")",
                                                  "band energy tessel"] + \
        [f"{label[t]} - tessel" for t in peers] + \
        ["peak RSS MB (" + " / ".join(label[t] for t in ["tessel"] + peers) + ")"]
    lines = markdown_table(head, [])

    def cell(row, t, key, fmt):
        return format(row[t][key], fmt) if t in row and row[t].get(key) is not None else "-"
    for r in rows:
        c = [r["case"], r["config"], f"{r['eps']:g}", r["method"], cell(r, "tessel", "seconds", ".3f")]
        c += [cell(r, t, "seconds", ".3f") for t in peers]
        c += [f"{r[f'ratio_tessel_{t}']:.2f}" if r.get(f"ratio_tessel_{t}") else "-" for t in peers]
        c.append(" / ".join(cell(r, t, "multiplications", "d") for t in ["tessel"] + peers))
        c.append(" / ".join(cell(r, t, "iterations", "d") for t in ["tessel"] + peers))
        c.append(cell(r, "tessel", "band_energy", ".8f"))
        c += [f"{-r[f'band_energy_difference_{t}']:+.1e}" if f"band_energy_difference_{t}" in r else "-" for t in peers]
        c.append(" / ".join(f"{r[t]['peak_rss_bytes'] / 1e6:.0f}" if t in r and r[t].get("peak_rss_bytes") else "-"
                            for t in ["tessel"] + peers))
        lines.append("| " + " | ".join(c) + " |")
    emit_table(lines, rows, a.markdown, a.out)


if __name__ == "__main__":
    main()
