#!/usr/bin/env bash
# tessel's CommLedger against the independent PMPI counter shared/tools/commcount.
#
# Runs `tessel gemm ... --json out.json` with libcommcount.so preloaded into every rank and
# checks that the ledger's point-to-point and one-sided totals (JSON "ledger" -> "gemm":
# recv_bytes, sent_bytes, recv_msgs, sent_msgs, rma_bytes; total and per-rank max) are EQUAL
# to commcount's.
#
# What is compared, and why it is honest: commcount counts the whole program, the JSON
# counts the timed multiplies only (per repetition). Outside the multiplies `tessel gemm`
# moves no point-to-point or one-sided bytes when --verify is not given (it does not read or
# write .npy files here; the JSON is written by rank 0 alone; ledger statistics, timing and
# error agreement are collectives, which commcount keeps apart in coll_bytes). So the
# whole-program p2p counts of commcount must equal R x the per-repetition ledger, R =
# --repeat. Collective bytes are not compared (the ledger's "gemm" group holds none by design;
# commcount also sees the command's own allreduces).
#
# Usage: check_ledger_commcount.sh --mpiexec PATH --np N --tessel PATH --builddir DIR
#            --commcount-src DIR [--flavour openmpi|mpich] [--python PY] [--timeout S]
#            [-- extra mpiexec flags...]
# Exit codes: 0 all passed, 1 a failure, 77 skipped (commcount sources absent).
set -u

source "$(dirname "${BASH_SOURCE[0]}")/commcount_common.sh"
commcount_parse_args "mpiexec np tessel builddir ccsrc" "$@"
commcount_require_sources
commcount_build

work=$(mktemp -d "${TMPDIR:-/tmp}/tessel_ledger_np${np}_XXXXXX") || exit 1
passed=0
failed=0

# run_case NAME REPEAT tessel-gemm-args...
run_case() {
  local name="$1" repeat="$2"
  shift 2
  local dir="$work/$name"
  mkdir -p "$dir"
  local env_flags
  commcount_env_flags "$dir"
  local cmd=("$mpiexec" "$numproc_flag" "$np" "${extra_flags[@]}" "${env_flags[@]}" "$tessel" gemm
             "$@" --repeat "$repeat" --json "$dir/out.json")
  commcount_run "$name" "$dir" "${cmd[@]}" || return
  if "$python" - "$dir/out.json" "$dir/commcount.json" "$repeat" "$np" "np$np $name" <<'EOF'
import json, sys
tessel_path, cc_path, repeat, np_, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
problems = []
try:
    t = json.load(open(tessel_path))
    c = json.load(open(cc_path))
except Exception as e:  # a missing or malformed file is a failure
    print(f"FAIL  {name}: cannot read the results: {e}")
    sys.exit(1)
g = t["ledger"]["gemm"]
if c.get("nranks") != np_ or t.get("ranks") != np_:
    problems.append(f"rank counts: tessel {t.get('ranks')}, commcount {c.get('nranks')}, expected {np_}")

def cc(agg, *keys):
    return sum(c[agg][k] for k in keys)

# ledger field -> commcount counters (see PhaseCounts and comm::ledger_stats):
#   recv_bytes = p2p received + one-sided get; sent_bytes = p2p sent + put + accumulate;
#   recv_msgs = p2p received messages; sent_msgs = p2p sent messages + one-sided operations;
#   rma_bytes = put + get + accumulate.
pairs = {
    "recv_bytes": ("p2p_recv_bytes", "rma_get_bytes"),
    "sent_bytes": ("p2p_sent_bytes", "rma_put_bytes", "rma_acc_bytes"),
    "recv_msgs": ("p2p_recv_msgs",),
    "sent_msgs": ("p2p_sent_msgs", "rma_ops"),
    "rma_bytes": ("rma_put_bytes", "rma_get_bytes", "rma_acc_bytes"),
}
rows = []
for field, keys in pairs.items():
    for agg in ("total", "max"):
        mine = g[field][agg] * repeat       # the JSON is per repetition
        theirs = cc(agg, *keys)
        rows.append(f"{field}.{agg}: tessel {mine:.0f}, commcount {theirs}")
        # exact: both are integer counts (doubles hold them exactly below 2^53)
        if abs(mine - round(mine)) > 1e-6 or round(mine) != theirs:
            problems.append(f"{field}.{agg}: tessel ledger {mine!r} (x{repeat} repetitions) != "
                            f"commcount {theirs} ({' + '.join(keys)})")
if np_ > 1 and c["total"]["p2p_recv_bytes"] + c["total"]["rma_get_bytes"] == 0:
    problems.append("no point-to-point or one-sided traffic at all: the comparison would be vacuous")
summary = (f"executed '{t.get('executed')}', recv total {g['recv_bytes']['total'] * repeat:.0f} B, "
           f"sent total {g['sent_bytes']['total'] * repeat:.0f} B, rma {g['rma_bytes']['total'] * repeat:.0f} B")
if problems:
    print(f"FAIL  {name}: {summary}")
    for p in problems:
        print(f"      - {p}")
    for r in rows:
        print(f"      {r}")
    sys.exit(1)
print(f"PASS  {name}: {summary}")
EOF
  then
    passed=$((passed + 1))
  else
    echo "      command: ${cmd[*]}"
    failed=$((failed + 1))
  fi
}

base=(--m 300 --n 200 --k 500 --nb 16)
run_case optimal 1 "${base[@]}" --algorithm optimal
run_case summa2d 1 "${base[@]}" --algorithm summa2d
run_case auto 1 "${base[@]}" --algorithm auto
# Non-square: a tall-skinny product, a 1 x p input grid, transposed complex operands.
run_case tall_skinny_optimal 1 --m 900 --n 40 --k 130 --nb 16 --algorithm optimal
run_case grid_1xp_summa2d 1 "${base[@]}" --grid "1x$np" --algorithm summa2d
run_case complex_TC_optimal 1 --m 120 --n 70 --k 210 --nb 16 --dtype complex --transa T \
  --transb C --algorithm optimal
# The JSON is per repetition: with --repeat 3 commcount sees three multiplies.
run_case optimal_repeat3 3 "${base[@]}" --algorithm optimal

if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "work folder kept: $work"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
