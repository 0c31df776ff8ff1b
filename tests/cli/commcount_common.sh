# Shared by check_ledger_commcount.sh and check_rma_commcount.sh (sourced, not run).
# Expects: ccsrc, builddir, flavour, np set by the caller's argument parsing.

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
# its JSON to DIR/commcount.json.
commcount_env_flags() {
  local dir="$1"
  if [ "$flavour" = "mpich" ]; then
    env_flags=(-genv LD_PRELOAD "$lib" -genv COMMCOUNT_OUT "$dir/commcount.json")
  else
    env_flags=(-x "LD_PRELOAD=$lib" -x "COMMCOUNT_OUT=$dir/commcount.json")
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
