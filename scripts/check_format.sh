#!/bin/bash
# check_format.sh — every tracked C++ source (.cpp, .hpp, .h) is formatted as the checked-in
# .clang-format says. Lists the files that differ and exits 1; exit 77 (a ctest skip)
# when clang-format is not installed (scripts/setup.sh installs it).
#   scripts/check_format.sh [ROOT]          check
#   scripts/check_format.sh --fix [ROOT]    reformat in place
set -euo pipefail
FIX=0
if [ "${1:-}" = --fix ]; then FIX=1; shift; fi
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$ROOT"
CF=${CLANG_FORMAT:-clang-format}
command -v "$CF" >/dev/null || { echo "check_format: $CF not found: skipped"; exit 77; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
else
  mapfile -t files < <(find apps bench include python src tests -name '*.cpp' -o -name '*.hpp' -o -name '*.h')
fi
if [ $FIX = 1 ]; then "$CF" -i "${files[@]}"; echo "check_format: formatted ${#files[@]} files"; exit 0; fi
# Batches of files over every core; a file that differs is named in a "file:line:col: error"
# line (clang-format's -Wclang-format-violations).
status=0
out=$(printf '%s\0' "${files[@]}" |
  xargs -0 -P "$(nproc)" -n 32 "$CF" --dry-run -Werror 2>&1 >/dev/null) || status=$?
mapfile -t bad < <(grep -oE '^[^:]+:[0-9]+:[0-9]+: error' <<<"$out" | cut -d: -f1 | sort -u)
if [ $status -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
  echo "check_format: $CF failed (exit $status) without naming a file:"; echo "$out"; exit 1
fi
if [ ${#bad[@]} -gt 0 ]; then
  printf 'check_format: not formatted (fix: scripts/check_format.sh --fix): %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: ok (${#files[@]} files, $("$CF" --version | head -1))"
