# Shared by the check_*_commcount.sh scripts (sourced, not run).
# The functions below expect ccsrc, builddir, flavour, np and tmo, set by commcount_parse_args.

# commcount_parse_args "REQUIRED VARS" ARGS...: parses the options every check script takes
# (--mpiexec --np --numproc-flag --probe --tessel --builddir --commcount-src --flavour --python
# --timeout, then -- and extra mpiexec flags) into mpiexec, np, numproc_flag, probe, tessel,
# builddir, ccsrc, flavour, python, tmo and the array extra_flags; exits 2 on an unknown option
# or when a variable named in REQUIRED is empty.
commcount_parse_args() {
  local required="$1"
  shift
  mpiexec="" np="" probe="" tessel="" builddir="" ccsrc="" flavour="openmpi" python="python3"
  tmo=300 numproc_flag="-n"
  while [ $# -gt 0 ]; do
    case "$1" in
      --mpiexec) mpiexec="$2"; shift 2 ;;
      --np) np="$2"; shift 2 ;;
      --numproc-flag) numproc_flag="$2"; shift 2 ;;
      --probe) probe="$2"; shift 2 ;;
      --tessel) tessel="$2"; shift 2 ;;
      --builddir) builddir="$2"; shift 2 ;;
      --commcount-src) ccsrc="$2"; shift 2 ;;
      --flavour) flavour="$2"; shift 2 ;;
      --python) python="$2"; shift 2 ;;
      --timeout) tmo="$2"; shift 2 ;;
      --) shift; break ;;
      *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
  done
  extra_flags=("$@")
  local v
  for v in $required; do
    if [ -z "${!v}" ]; then echo "missing --${v}" >&2; exit 2; fi
  done
}

# Exits 77 (ctest SKIP) when the commcount sources are absent (as on a user's machine).
commcount_require_sources() {
  if [ ! -f "$ccsrc/commcount.c" ] || [ ! -f "$ccsrc/Makefile" ]; then
    echo "SKIP: the commcount sources ($ccsrc) are absent; nothing to compare against"
    exit 77
  fi
}

# Builds the counter once into the build folder and sets `lib`. Several tests may start at
# the same time: build into a private folder and rename the library into place (atomic).
commcount_build() {
  lib="$builddir/commcount/$flavour/libcommcount.so"
  if [ ! -f "$lib" ] || [ "$ccsrc/commcount.c" -nt "$lib" ]; then
    local stage
    stage=$(mktemp -d "$builddir/commcount.build.XXXXXX") || exit 1
    if ! make -s -C "$ccsrc" "$flavour" OUT="$stage" >"$stage/make.log" 2>&1; then
      cat "$stage/make.log"
      echo "FAIL: cannot build commcount ($flavour)"
      rm -rf "$stage"
      echo "0 passed, 1 failed"
      exit 1
    fi
    mkdir -p "$builddir/commcount/$flavour"
    mv -f "$stage/$flavour/libcommcount.so" "$lib"
    rm -rf "$stage"
  fi
}

# Sets the array `env_flags`: mpiexec flags that preload the counter into every rank and send
# its JSON to DIR/commcount.json. When the program run ($probe, else $tessel) is built with
# AddressSanitizer (scripts/test.sh --sanitize), its libasan is preloaded first: ASan aborts
# at start-up ("ASan runtime does not come first in initial library list") when another
# preloaded library precedes it.
commcount_env_flags() {
  local dir="$1" preload="$lib" exe="${probe:-$tessel}" asan=""
  if [ -n "$exe" ]; then
    asan=$(ldd "$exe" 2>/dev/null | awk '$1 ~ /^libasan\.so/ && $3 ~ /^\// { print $3; exit }')
  fi
  [ -z "$asan" ] || preload="$asan:$lib"
  if [ "$flavour" = "mpich" ]; then
    env_flags=(-genv LD_PRELOAD "$preload" -genv COMMCOUNT_OUT "$dir/commcount.json")
  else
    env_flags=(-x "LD_PRELOAD=$preload" -x "COMMCOUNT_OUT=$dir/commcount.json")
  fi
}

# Runs the command in DIR with the timeout; on failure reports it and counts it (`failed`).
# Returns the command's status.
commcount_run() {
  local name="$1" dir="$2"
  shift 2
  (cd "$dir" && timeout -k 10 "$tmo" "$@" >"$dir/stdout" 2>"$dir/stderr")
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL  np$np $name: exit code $rc$([ $rc -eq 124 ] && echo ' (timed out)')"
    echo "      command: $*"
    tail -n 20 "$dir/stderr" | sed 's/^/      | /'
    failed=$((failed + 1))
  fi
  return $rc
}
