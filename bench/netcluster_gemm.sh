#!/bin/bash
# netcluster_gemm.sh — tessel gemm and ScaLAPACK pdgemm on an emulated cluster.
#
#   sudo bench/netcluster_gemm.sh [--quick] [--configs 4x2,8x1] [--cases square,tall-skinny]
#        [--tools tessel,tessel-pdgemm,scalapack] [--repeat 3] [--pairs 2] [--nb 128]
#        [--rate 1gbit] [--delay 50us] [--build DIR] [--out DIR] [--timeout 1800] [--force]
#
# Brings up ../shared/tools/netcluster (network namespaces joined by links of --rate and
# --delay, real TCP between nodes, shared memory within a node) once per configuration
# NODESxRANKS_PER_NODE (default 4 nodes x 2 ranks, then 8 nodes x 1 rank), and runs each case
# (square 4096^3 and tall-skinny 512x512x65536; --quick: 1024^3 and 128x128x16384) with
#   tessel          <build>/apps/tessel/tessel gemm ... --algorithm optimal --layout plan (its own layout)
#   tessel-pdgemm   the same with --entry pdgemm (its ScaLAPACK-compatible entry point)
#   scalapack       <build>/bench/scalapack_gemm (Debian ScaLAPACK pdgemm_)
# alternating (tessel, tessel-pdgemm, scalapack, tessel, ... --pairs times), with commcount
# preloaded when built. Before and after every run it reads `netcluster.sh stats` (bytes on
# every link): wire bytes = sum over nodes of the bytes sent onto the wire (tbf TX counters,
# TCP/IP headers included). A baseline run (a 1x1x1 multiply) per configuration measures what
# launching and finalizing costs on the wire; wire bytes per multiply = (run - baseline) /
# (repeat + warm-up multiplies).
#
# Writes bench/results/netcluster-gemm-<host>-<date>.json (+ raw logs, JSONs and stats in the
# folder of the same name) and prints a table. Tears the cluster down on exit (also on error
# or Ctrl-C). Needs root, Open MPI (the build in --build must use it) and a free netcluster:
# it refuses to start when node namespaces exist (someone else's cluster) unless --force.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NC=$ROOT/../shared/tools/netcluster/netcluster.sh
BUILD=$ROOT/build
OUT=$ROOT/bench/results
CONFIGS=4x2,8x1
CASES=square,tall-skinny
TOOLS=tessel,tessel-pdgemm,scalapack
REPEAT=3
WARMUP=1
PAIRS=2
NB=128
RATE=1gbit
DELAY=50us
TIMEOUT=1800
QUICK=0
FORCE=0

die() { echo "netcluster_gemm: $*" >&2; exit 2; }
usage() { sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1; shift;;
    --force) FORCE=1; shift;;
    --configs|--cases|--tools|--repeat|--pairs|--nb|--rate|--delay|--build|--out|--timeout)
      [ $# -ge 2 ] || die "$1 needs a value"
      v=$2; o=${1#--}; shift 2
      case $o in
        configs) CONFIGS=$v;; cases) CASES=$v;; tools) TOOLS=$v;; repeat) REPEAT=$v;;
        pairs) PAIRS=$v;; nb) NB=$v;; rate) RATE=$v;; delay) DELAY=$v;; build) BUILD=$v;;
        out) OUT=$v;; timeout) TIMEOUT=$v;;
      esac;;
    -h|--help) usage; exit 0;;
    *) die "unknown argument '$1' (see --help)";;
  esac
done
for v in REPEAT PAIRS NB TIMEOUT; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "--${v,,} must be a positive integer, not '${!v}'"
done
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, tc)"
[ -x "$NC" ] || die "$NC not found (../shared/tools/netcluster beside the repository)"
PY=/usr/bin/python3
[ -x $PY ] || PY=python3

# shellcheck source=../scripts/mpi-env.sh
source "$ROOT/scripts/mpi-env.sh"

case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD;; esac
case $OUT in /*) ;; *) OUT=$PWD/$OUT;; esac
mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
[ -n "$mpiexec" ] || die "$BUILD is not configured (run scripts/setup.sh)"
"$mpiexec" --version 2>&1 | grep -qE "Open MPI|OpenRTE" ||
  die "$BUILD is built with $mpiexec; netcluster runs Open MPI: use an Open MPI build (scripts/setup.sh)"
TESSEL=$BUILD/apps/tessel/tessel
SCALAPACK=$BUILD/bench/scalapack_gemm
COMMCOUNT=$BUILD/commcount/openmpi/libcommcount.so
[ -f "$COMMCOUNT" ] || { echo "netcluster_gemm: no $COMMCOUNT: running without commcount"; COMMCOUNT=; }
[ -x "$SCALAPACK" ] || die "$SCALAPACK not built (run scripts/setup.sh)"

# Cases: name m n k
declare -A CASE_DIMS
if [ $QUICK = 1 ]; then
  CASE_DIMS[square]="1024 1024 1024"; CASE_DIMS[tall-skinny]="128 128 16384"
else
  CASE_DIMS[square]="4096 4096 4096"; CASE_DIMS[tall-skinny]="512 512 65536"
fi
IFS=, read -r -a case_list <<<"$CASES"
IFS=, read -r -a tool_list <<<"$TOOLS"
IFS=, read -r -a config_list <<<"$CONFIGS"
for c in "${case_list[@]}"; do
  if [ -z "${CASE_DIMS[$c]:-}" ]; then
    [[ $c =~ ^[0-9]+x[0-9]+x[0-9]+$ ]] || die "unknown case '$c' (square, tall-skinny or MxNxK)"
    CASE_DIMS[$c]=${c//x/ }
  fi
done
for t in "${tool_list[@]}"; do
  case $t in tessel|tessel-pdgemm|scalapack) ;; *) die "unknown tool '$t'";; esac
done
for c in "${config_list[@]}"; do
  [[ $c =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || die "--configs: '$c' is not NODESxRANKS_PER_NODE"
done
if [ $FORCE = 0 ] && ip netns list 2>/dev/null | grep -qE '^node[0-9]+'; then
  die "netcluster node namespaces exist already (another user's cluster?): rerun with --force to take it over"
fi

host=$(hostname -s 2>/dev/null || hostname)
stem=netcluster-gemm-$host-$(date +%Y%m%d-%H%M%S)
RAW=$OUT/$stem
mkdir -p "$RAW"
MANIFEST=$RAW/manifest.tsv
: >"$MANIFEST"
UP=0
cleanup() {
  if [ $UP = 1 ]; then
    "$NC" down >>"$RAW/netcluster.log" 2>&1 || echo "netcluster_gemm: netcluster down FAILED (see $RAW/netcluster.log)" >&2
    UP=0
  fi
}
trap cleanup EXIT
trap 'echo "netcluster_gemm: interrupted" >&2; exit 130' INT TERM

# run_one KIND TOOL CONFIG CASE PAIR M N K NP PPN
run_one() {
  local kind=$1 tool=$2 cfg=$3 case=$4 pair=$5 m=$6 n=$7 k=$8 np=$9 ppn=${10}
  local s=$tool-$case-$cfg-pair$pair
  [ "$kind" = baseline ] && s=baseline-$cfg
  local json=$RAW/$s.json cc=$RAW/$s.commcount.json log=$RAW/$s.log
  local prog=() warm=0
  case $tool in
    tessel|tessel-pdgemm)
      prog=("$TESSEL" gemm --m "$m" --n "$n" --k "$k" --repeat "$REPEAT" --nb "$NB" --json "$json")
      if [ "$tool" = tessel-pdgemm ]; then prog+=(--entry pdgemm --algorithm auto)
      else prog+=(--algorithm optimal --layout plan); fi;;
    scalapack)
      warm=$WARMUP; [ "$kind" = baseline ] && warm=0
      prog=("$SCALAPACK" --m "$m" --n "$n" --k "$k" --nb "$NB" --repeat "$REPEAT"
            --warmup "$warm" --json "$json")
      [ "$kind" = baseline ] && prog=("$SCALAPACK" --m 1 --n 1 --k 1 --repeat 1 --warmup 0 --json "$json");;
  esac
  local pre=()
  [ -n "$COMMCOUNT" ] && pre=(-x "LD_PRELOAD=$COMMCOUNT" -x "COMMCOUNT_OUT=$cc")
  rm -f "$json" "$cc"
  "$NC" stats >"$RAW/$s.stats0" 2>>"$RAW/netcluster.log"
  local rc=0 t0 t1
  t0=$(date +%s.%N)
  if [ ! -x "${prog[0]}" ]; then
    rc=127; echo "binary not found: ${prog[0]}" >"$log"
  else
    # --bind-to none: every emulated node is this machine; Open MPI's default binding put the
    # first rank of every node on core 0.
    echo "+ netcluster.sh run -- -np $np --map-by ppr:$ppn:node --bind-to none ${pre[*]} -x OPENBLAS_NUM_THREADS ${prog[*]}" >"$log"
    timeout -k 10 "$TIMEOUT" "$NC" run -- -np "$np" --map-by "ppr:$ppn:node" --bind-to none "${pre[@]}" \
      -x OPENBLAS_NUM_THREADS "${prog[@]}" </dev/null >>"$log" 2>&1 || rc=$?
  fi
  t1=$(date +%s.%N)
  "$NC" stats >"$RAW/$s.stats1" 2>>"$RAW/netcluster.log"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$tool" "$cfg" "$case" \
    "$pair" "$m" "$n" "$k" "$np" "$rc" "$s" "$(echo "$t1 - $t0" | bc)" "$warm" "${prog[*]}" >>"$MANIFEST"
  if [ $rc = 0 ]; then
    local line; line=$(grep -m1 -E '^(scalapack pdgemm|time:)' "$log" || true)
    echo "  ok     $s: ${line:-done}"
  else
    local why="exit status $rc"; [ $rc = 124 ] && why="timed out after $TIMEOUT s"
    [ $rc = 127 ] && why="binary not found: ${prog[0]}"
    echo "  FAILED $s: $why (log $log)"
    grep -vE -- '^-{10,}$|Primary job +terminated|Per user-direction|detected that one or more|noticed that|Process name:|Exit code:|the job to be terminated|^ *$' "$log" |
      tail -n 6 | sed 's/^/         /'
  fi
}

echo "netcluster_gemm: configs $CONFIGS, cases $CASES, tools $TOOLS, $PAIRS pair(s) x $REPEAT reps," \
  "$RATE, $DELAY; raw files in $RAW"
[ -x "$TESSEL" ] || echo "netcluster_gemm: ERROR: $TESSEL not built: tessel runs will be reported as failed"
for cfg in "${config_list[@]}"; do
  nodes=${cfg%x*}; ppn=${cfg#*x}; np=$((nodes * ppn))
  echo "== $nodes nodes x $ppn rank(s), $RATE, $DELAY"
  "$NC" up "$nodes" --rate "$RATE" --delay "$DELAY" --slots "$ppn" >>"$RAW/netcluster.log" 2>&1 ||
    { echo "netcluster_gemm: netcluster up FAILED:"; tail -n 5 "$RAW/netcluster.log"; exit 1; }
  UP=1
  cp "${NETCLUSTER_DIR:-${TMPDIR:-/tmp}/netcluster}/state/config" "$RAW/config-$cfg.txt" 2>/dev/null || true
  run_one baseline scalapack "$cfg" baseline 0 1 1 1 "$np" "$ppn"
  for c in "${case_list[@]}"; do
    read -r m n k <<<"${CASE_DIMS[$c]}"
    for ((pair = 1; pair <= PAIRS; pair++)); do
      for t in "${tool_list[@]}"; do
        run_one run "$t" "$cfg" "$c" "$pair" "$m" "$n" "$k" "$np" "$ppn"
      done
    done
  done
  cleanup
done

# Collect: times from the JSONs, wire bytes from the stats deltas, payload from commcount.
$PY - "$RAW" "$OUT/$stem.json" "$RATE" "$DELAY" "$REPEAT" "$PAIRS" "$NB" "$ROOT/scripts/mpi-env.sh" <<'PY'
import json, os, statistics, sys
raw, out, rate, delay, repeat, pairs, nb, envfile = sys.argv[1:9]
repeat = int(repeat)

def stats(path):
    nodes = {}
    try:
        for line in open(path):
            f = line.split()
            if not f or f[0].startswith("#"):
                continue
            nodes[f[0]] = {"tx": int(f[5]), "rx": int(f[7]), "drops": int(f[9])}
    except (OSError, ValueError, IndexError):
        return None
    return nodes

def wire(stem):
    a, b = stats(f"{raw}/{stem}.stats0"), stats(f"{raw}/{stem}.stats1")
    if not a or not b:
        return None
    tx = {n: b[n]["tx"] - a.get(n, {"tx": 0})["tx"] for n in b}
    rx = {n: b[n]["rx"] - a.get(n, {"rx": 0})["rx"] for n in b}
    return {"total_tx_bytes": sum(tx.values()), "max_node_tx_bytes": max(tx.values()),
            "max_node_rx_bytes": max(rx.values()),
            "drops": sum(b[n]["drops"] - a.get(n, {"drops": 0})["drops"] for n in b),
            "per_node_tx_bytes": tx}

runs, baseline = [], {}
for line in open(f"{raw}/manifest.tsv"):
    kind, tool, cfg, case, pair, m, n, k, np_, rc, stem, wall, warm, cmd = line.rstrip("\n").split("\t")
    r = {"kind": kind, "tool": tool, "config": cfg, "case": case, "pair": int(pair), "m": int(m),
         "n": int(n), "k": int(k), "ranks": int(np_), "rc": int(rc), "wall_s": float(wall),
         "cmd": cmd, "log": f"{raw}/{stem}.log", "ok": False}
    try:
        r["result"] = json.load(open(f"{raw}/{stem}.json"))
        r["ok"] = int(rc) == 0 and isinstance(r["result"].get("median_s"), (int, float))
    except (OSError, ValueError):
        pass
    if not r["ok"]:
        r["error"] = "exit status %s" % rc if int(rc) else "no result JSON"
    r["wire"] = wire(stem)
    try:
        cc = json.load(open(f"{raw}/{stem}.commcount.json"))
        per = cc["per_rank"]
        rep = (r.get("result") or {}).get("repeat", repeat)
        recv = [p["p2p_recv_bytes"] + p["rma_get_bytes"] + p["coll_bytes"] for p in per]
        r["commcount"] = {"recv_bytes_max": max(recv) / rep, "recv_bytes_total": sum(recv) / rep,
                          "divided_by_repeat": rep}
    except (OSError, ValueError, KeyError, ZeroDivisionError):
        pass
    if kind == "baseline":
        baseline[cfg] = r
    else:
        res = r.get("result") or {}
        nmul = res.get("repeat", repeat) + res.get("warmup", int(warm))
        r["multiplies_in_run"] = nmul
        b = (baseline.get(cfg) or {}).get("wire")
        if r["wire"] and b and nmul:
            r["wire_tx_bytes_per_multiply"] = (r["wire"]["total_tx_bytes"] - b["total_tx_bytes"]) / nmul
        runs.append(r)

summary = []
keys = []
for r in runs:
    kk = (r["config"], r["case"], r["tool"])
    if kk not in keys:
        keys.append(kk)
med = lambda v: statistics.median(v) if v else None
for cfg, case, tool in keys:
    rs = [r for r in runs if (r["config"], r["case"], r["tool"]) == (cfg, case, tool)]
    ok = [r for r in rs if r["ok"]]
    summary.append({
        "config": cfg, "case": case, "tool": tool, "m": rs[0]["m"], "n": rs[0]["n"], "k": rs[0]["k"],
        "runs_ok": len(ok), "runs_failed": len(rs) - len(ok),
        "median_s": med([r["result"]["median_s"] for r in ok]),
        "wire_tx_bytes_per_multiply": med([r["wire_tx_bytes_per_multiply"] for r in ok
                                           if "wire_tx_bytes_per_multiply" in r]),
        "commcount_recv_bytes_total_per_multiply": med([r["commcount"]["recv_bytes_total"] for r in ok
                                                        if "commcount" in r]),
        "commcount_recv_bytes_max_per_multiply": med([r["commcount"]["recv_bytes_max"] for r in ok
                                                      if "commcount" in r]),
    })
for s in summary:
    ref = next((x for x in summary if x["config"] == s["config"] and x["case"] == s["case"]
                and x["tool"] == "scalapack"), None)
    s["time_ratio_vs_scalapack"] = (s["median_s"] / ref["median_s"]
                                    if ref and s["median_s"] and ref["median_s"] else None)

doc = {"tool": "netcluster_gemm", "rate": rate, "delay": delay, "repeat": repeat,
       "pairs": int(pairs), "nb": int(nb), "mpi_env": open(envfile).read(),
       "configs": {f[len("config-"):-4]: open(os.path.join(raw, f)).read().strip()
                   for f in sorted(os.listdir(raw)) if f.startswith("config-")},
       "metrics": {"median_s": "median over runs of each run's median multiply time",
                   "wire_tx_bytes_per_multiply": "(sum over nodes of wire TX bytes of the run - "
                   "the baseline run's) / (repeat + warm-up multiplies); includes TCP/IP headers",
                   "commcount_recv_bytes_*_per_multiply": "MPI payload received in the timed "
                   "multiplies (p2p + get + collective payload), total over ranks / max per rank"},
       "baseline": baseline, "runs": runs, "summary": summary}
tmp = out + ".tmp"
with open(tmp, "w") as f:
    json.dump(doc, f, indent=1)
os.replace(tmp, out)

def fmt(v, spec):
    w = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0)
    return format(v, spec) if isinstance(v, (int, float)) else "-".rjust(w)
print(f"\n{'config':7s} {'case':12s} {'tool':14s} {'median s':>9s} {'vs scal.':>8s} "
      f"{'wire MB/mult':>12s} {'payload MB':>10s} {'max/rank MB':>11s} {'fail':>4s}")
for s in summary:
    mb = lambda v: v / 1e6 if isinstance(v, (int, float)) else None
    print(f"{s['config']:7s} {s['case']:12s} {s['tool']:14s} {fmt(s['median_s'], '9.4f')} "
          f"{fmt(s['time_ratio_vs_scalapack'], '8.3f')} {fmt(mb(s['wire_tx_bytes_per_multiply']), '12.2f')} "
          f"{fmt(mb(s['commcount_recv_bytes_total_per_multiply']), '10.2f')} "
          f"{fmt(mb(s['commcount_recv_bytes_max_per_multiply']), '11.2f')} {s['runs_failed']:4d}")
for cfg, b in baseline.items():
    w = b.get("wire") or {}
    print(f"baseline {cfg}: {fmt((w.get('total_tx_bytes') or 0) / 1e6, '.3f')} MB on the wire "
          f"for launch + a 1x1x1 multiply + finalize")
print(f"results: {out}")
sys.exit(1 if any(not r["ok"] for r in runs) else 0)
PY
