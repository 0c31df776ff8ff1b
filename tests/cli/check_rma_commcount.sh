#!/usr/bin/env bash
# tessel's CommLedger against the independent PMPI counter shared/tools/commcount, for
# one-sided traffic (comm::Window) next to point-to-point traffic (comm::Comm).
#
# Runs tests/cli/rma_probe (a known mix of isend/irecv and Window rget/put/accumulate, passive
# and fence epochs, self targets, zero counts, MPI_PROC_NULL targets; then node-shared
# layout::redistribute moves, real and emulated nodes; then block-sparse finalize / transpose /
# redistribute with their MPI_Alltoall of counts) with libcommcount.so
# preloaded into every rank, and requires the probe's ledger totals (summed over ranks, and
# the per-rank max) to EQUAL commcount's, counter by counter: p2p sent/received bytes and
# messages, one-sided put/get/accumulate bytes and operations, and collective bytes and calls.
#
# Why whole-program counts are comparable: the probe moves nothing outside what its ledger
# records (the Context's MPI_Comm_dup and the windows' MPI_Win_allocate/free are not counted
# by either; the windows' allgather/allreduce and the probe's barriers are recorded by
# both), and it reads the ledger before its own reductions, which run with commcount paused
# (MPI_Pcontrol(0)).
#
# Usage: check_rma_commcount.sh --mpiexec PATH --np N --probe PATH --builddir DIR
#            --commcount-src DIR [--flavour openmpi|mpich] [--python PY] [--timeout S]
#            [--numproc-flag FLAG] [-- extra mpiexec flags...]
# Exit codes: 0 all passed, 1 a failure, 77 skipped (commcount sources absent).
set -u

source "$(dirname "${BASH_SOURCE[0]}")/commcount_common.sh"
commcount_parse_args "mpiexec np probe builddir ccsrc" "$@"
commcount_require_sources
commcount_build

work=$(mktemp -d "${TMPDIR:-/tmp}/tessel_rma_np${np}_XXXXXX") || exit 1
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
if t.get("bad") != 0:
    problems.append(f"the probe moved {t.get('bad')} wrong values")
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
for k in ["rma_put_bytes", "rma_get_bytes", "rma_acc_bytes", "rma_ops"] + \
         (["p2p_sent_bytes", "p2p_recv_bytes"] if np_ > 1 else []):
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

run_case small 1
# Every length x200: 1.6 MB ring messages (rendezvous protocols), 12800-element windows.
run_case large 200

if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "work folder kept: $work"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
