#!/bin/bash
# check_layers.sh — the include layering of the base of tessel (issue 11: "core <-> comm
# include each other"). The layers, bottom first:
#   1. core/error.hpp, core/ledger.hpp, core/trace.hpp, core/timer.hpp (no MPI communication)
#   2. comm/                                             (uses layer 1 only)
#   3. core/context.hpp                                  (owns a comm::Comm)
# So: no header or source of comm/ includes core/context.hpp, no file of core/ other than
# context.hpp / context.cpp includes a comm/ header, and core/{error,ledger,trace} do not
# include core/context.hpp. Prints every violation; exit 1 if any.
#   scripts/check_layers.sh [ROOT]
set -euo pipefail
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$ROOT"
bad=0
while IFS= read -r hit; do
  echo "check_layers: comm/ must not include core/context.hpp: $hit"; bad=1
done < <(grep -n '#include "tessel/core/context.hpp"' include/tessel/comm/* src/comm/* || true)
while IFS= read -r hit; do
  case $hit in include/tessel/core/context.hpp:*|src/core/context.cpp:*) continue;; esac
  echo "check_layers: only core/context may include comm/: $hit"; bad=1
done < <(grep -n '#include "tessel/comm/' include/tessel/core/* src/core/* || true)
while IFS= read -r hit; do
  echo "check_layers: core/{error,ledger,trace} must not include core/context.hpp: $hit"; bad=1
done < <(grep -n '#include "tessel/core/context.hpp"' include/tessel/core/{error,ledger,trace,timer}.hpp \
           src/core/{ledger,trace}.cpp 2>/dev/null || true)
[ $bad = 0 ] && echo "check_layers: ok (core/{error,ledger,trace} <- comm <- core/context)"
exit $bad
