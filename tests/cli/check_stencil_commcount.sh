#!/bin/bash
# The stencil halo exchange's CommLedger against the independent PMPI counter commcount: runs
# tests/cli/stencil_probe (every exchange strategy, counted applies only) with commcount
# preloaded and requires the ledger's point-to-point and collective counts to equal
# commcount's exactly (the neighbourhood collectives by commcount's payload rule). SKIP (77)
# without the commcount sources.
# Usage: check_stencil_commcount.sh --mpiexec M --np N --probe P --builddir B --commcount-src S
#        [--numproc-flag F] [--flavour openmpi|mpich] [--python PY] [--timeout T] [-- mpiexec flags]
set -u
source "$(dirname "${BASH_SOURCE[0]}")/commcount_common.sh"
commcount_parse_args "mpiexec np probe builddir ccsrc" "$@"
commcount_require_sources
commcount_build
work=$(mktemp -d "${TMPDIR:-/tmp}/tessel_stencil_cc_np${np}_XXXXXX") || exit 1
passed=0
failed=0
dir="$work/halo"
mkdir -p "$dir"
commcount_env_flags "$dir"
cmd=("$mpiexec" "$numproc_flag" "$np" "${extra_flags[@]}" "${env_flags[@]}" "$probe" "$dir/ledger.json")
if commcount_run halo "$dir" "${cmd[@]}"; then
  if "$python" - "$dir/ledger.json" "$dir/commcount.json" "$np" <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2])); np_ = int(sys.argv[3])
problems = []
if c.get("nranks") != np_ or t.get("ranks") != np_:
    problems.append(f"rank counts: probe {t.get('ranks')}, commcount {c.get('nranks')}")
for agg in ("total", "max"):
    for k in t[agg]:
        if t[agg][k] != c[agg][k]:
            problems.append(f"{k}.{agg}: tessel ledger {t[agg][k]} != commcount {c[agg][k]}")
if np_ > 1 and (c["total"]["coll_bytes"] == 0 or c["total"]["p2p_sent_bytes"] == 0):
    problems.append("no halo traffic: the comparison would be vacuous")
s = f"{t['strategies']} strategies: collective {c['total']['coll_bytes']} B in {c['total']['coll_calls']} calls, p2p {c['total']['p2p_sent_bytes']} B"
if problems:
    print(f"FAIL  np{np_} halo exchange: {s}")
    for p in problems:
        print(f"      - {p}")
    sys.exit(1)
print(f"PASS  np{np_} halo exchange ledger == commcount: {s}")
PYEOF
  then passed=$((passed + 1)); else echo "      command: ${cmd[*]}"; failed=$((failed + 1)); fi
fi
if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "work folder kept: $work"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
