#!/usr/bin/env bash
# tessel's CommLedger against the independent PMPI counter shared/tools/commcount for the
# block-sparse multiply: tests/cli/spgemm_probe (put_block/finalize, Cannon's Isend/Irecv,
# rma25d's MPI_Rget and partial C panels through a window cache, an op-T conform step) runs
# with libcommcount.so preloaded; its ledger totals (sum over ranks and per-rank max) must
# EQUAL commcount's, counter by counter (p2p, one-sided, collective bytes and calls).
# Whole-program counts are comparable as for check_rma_commcount.sh: the probe moves nothing
# its ledger does not record, and its own reductions run with commcount paused.
#
# Usage: check_spgemm_commcount.sh --mpiexec PATH --np N --probe PATH --builddir DIR
#            --commcount-src DIR [--flavour openmpi|mpich] [--python PY] [--timeout S]
#            [--numproc-flag FLAG] [-- extra mpiexec flags...]
# Exit codes: 0 all passed, 1 a failure, 77 skipped (commcount sources absent).
set -u

source "$(dirname "${BASH_SOURCE[0]}")/commcount_common.sh"
commcount_parse_args "mpiexec np probe builddir ccsrc" "$@"
commcount_require_sources
commcount_build

work=$(mktemp -d "${TMPDIR:-/tmp}/tessel_spgemm_np${np}_XXXXXX") || exit 1
passed=0
failed=0

# run_case NAME SCALE
run_case() {
  local name="$1" scale="$2"
  local dir="$work/$name"
  mkdir -p "$dir"
  local env_flags
  commcount_env_flags "$dir"
  local cmd=("$mpiexec" "$numproc_flag" "$np" "${extra_flags[@]}" "${env_flags[@]}" "$probe"
             "$dir/ledger.json" "$scale")
  commcount_run "$name" "$dir" "${cmd[@]}" || return
  if "$python" - "$dir/ledger.json" "$dir/commcount.json" "$np" "np$np $name" <<'EOF'
import json, sys
ledger_path, cc_path, np_, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
problems = []
try:
    t = json.load(open(ledger_path))
    c = json.load(open(cc_path))
except Exception as e:  # a missing or malformed file is a failure
    print(f"FAIL  {name}: cannot read the results: {e}")
    sys.exit(1)
if c.get("nranks") != np_ or t.get("ranks") != np_:
    problems.append(f"rank counts: probe {t.get('ranks')}, commcount {c.get('nranks')}, expected {np_}")
counters = ["p2p_sent_bytes", "p2p_sent_msgs", "p2p_recv_bytes", "p2p_recv_msgs",
            "rma_put_bytes", "rma_get_bytes", "rma_acc_bytes", "rma_ops",
            "coll_bytes", "coll_calls"]
rows = []
for agg in ("total", "max"):
    for k in counters:
        mine, theirs = t[agg][k], c[agg][k]
        rows.append(f"{k}.{agg}: ledger {mine}, commcount {theirs}")
        if mine != theirs:  # exact: both are integer counts
            problems.append(f"{k}.{agg}: tessel ledger {mine} != commcount {theirs}")
# Not vacuous: every kind of traffic the probe makes was seen.
tot = c["total"]
for k in (["rma_get_bytes", "rma_ops", "p2p_sent_bytes", "p2p_recv_bytes"] if np_ > 1 else []):
    if tot[k] == 0:
        problems.append(f"commcount saw no {k}: the comparison would be vacuous")
summary = (f"p2p sent {tot['p2p_sent_bytes']} B / recv {tot['p2p_recv_bytes']} B, "
           f"rma put {tot['rma_put_bytes']} B, get {tot['rma_get_bytes']} B, "
           f"acc {tot['rma_acc_bytes']} B, {tot['rma_ops']} ops")
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

run_case small 12
# 200 molecules: panels of ~100 kB (rendezvous protocols).
run_case large 200

if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "work folder kept: $work"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
