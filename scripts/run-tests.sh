#!/usr/bin/env bash
# run-tests.sh: run every test of trainyard and print one summary line "N passed, N failed".
#   1. unit and integration tests against the normal build
#   2. the same against an AddressSanitizer + UBSan build
#   3. a short libFuzzer run of every fuzz target (clang)
#   4. the house style a machine can check (scripts/check-style.sh: formatting, banned
#      functions, no sleep in src/lib)
# Each test program speaks TAP; every "ok"/"not ok" line counts as one test. A program that
# exits non-zero without a failing TAP line counts as one failure. Output of failing programs
# is shown in full; passing ones print one line.
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD=build ASAN_BUILD=build-asan FUZZ_BUILD=build-fuzz FUZZ_SECONDS=10
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --asan-build) ASAN_BUILD=$2; shift 2 ;;
    --fuzz-build) FUZZ_BUILD=$2; shift 2 ;;
    --fuzz-seconds) FUZZ_SECONDS=$2; shift 2 ;;
    *) echo "run-tests: unknown option $1" >&2; exit 2 ;;
  esac
done

passed=0 failed=0 skipped=0
failures=()
logdir=$(mktemp -d /tmp/trainyard-tests.XXXXXX)

# run_tap NAME CMD...: run one TAP program, count its results.
run_tap() {
  local name=$1; shift
  local log="$logdir/$(echo "$name" | tr '/ ' '__').log"
  local start end rc p f s
  start=$(date +%s.%N)
  "$@" >"$log" 2>&1 </dev/null
  rc=$?
  end=$(date +%s.%N)
  p=$(grep -cE '^ok [0-9]+' "$log" | head -1)
  s=$(grep -cE '^ok [0-9]+.*# *(SKIP|skip)' "$log" | head -1)
  f=$(grep -cE '^not ok [0-9]+' "$log" | head -1)
  p=$((p - s))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && [ "$rc" -ne 77 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  if [ "$f" -gt 0 ]; then
    failures+=("$name")
    echo "FAIL  $name ($p passed, $f failed, exit $rc)"
    sed 's/^/    /' "$log"
  else
    printf 'ok    %-48s %4d passed%s (%.1fs)\n' "$name" "$p" \
      "$([ "$s" -gt 0 ] && echo ", $s skipped")" "$(awk -v a="$start" -v b="$end" 'BEGIN{print b-a}')"
  fi
}

# Integration scripts not run again under the sanitizers: their time goes to the examples'
# own training (PyTorch) or to network namespaces, while the C code they drive is the same
# as in scripts that do run there (t3020/t4000/t4030 for the runtimes, t7010 for slurm).
# t4040's restarts run under the sanitizers in test-container-engine (the fake engine) and
# t3040 (the supervisor's side); its time goes to Podman removing and creating containers.
# t3050's time goes to killing process trees and waiting for cgroups to empty (the cgroup code
# runs under the sanitizers in test-cgroup); t5080's to mounting, filling and checking small
# filesystems (the store's and logs' error paths run there in test-store-ioerr and
# test-logs-full); t5090's to the kill loop's store locks and restarts (the daemon's paths are
# t5000's and t5050's).
# t4050's init (HostConfig.Init) is in every create body of t4000, and its fallback in
# test-container-engine; its time goes to Podman.
ASAN_SKIP=" t3030-pytorch.t t4020-container-pytorch.t t4040-container-restarts.t t4050-container-init.t"
ASAN_SKIP="$ASAN_SKIP t7020-slurm-netns.t t3050-local-no-escape.t t5080-service-disk-full.t t5090-service-kill-loop.t "

run_suite() {
  local build=$1 label=$2
  for t in "$build"/tests/test-*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    run_tap "$label unit/$(basename "$t")" "$t"
  done
  for t in tests/integration/t*.t; do
    [ -f "$t" ] || continue
    case "$label:$ASAN_SKIP" in
      asan:*" $(basename "$t") "*) echo "skip  $label $(basename "$t") (see ASAN_SKIP)"; continue ;;
    esac
    TY_BUILD_DIR="$(abspath "$build")" TY_SOURCE_DIR="$PWD" run_tap "$label $(basename "$t")" sh "$t"
  done
}

echo "== normal build ($BUILD)"
run_suite "$BUILD" "build"

echo "== AddressSanitizer + UBSan build ($ASAN_BUILD)"
if [ ! -f "$ASAN_BUILD/build.ninja" ]; then
  meson setup "$ASAN_BUILD" -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debug >/dev/null || { echo "FAIL  asan setup"; failed=$((failed + 1)); }
fi
if ninja -C "$ASAN_BUILD" >"$logdir/asan-build.log" 2>&1; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_suite "$ASAN_BUILD" "asan"
  unset ASAN_OPTIONS UBSAN_OPTIONS
else
  echo "FAIL  asan build"; cat "$logdir/asan-build.log"; failed=$((failed + 1))
fi

echo "== fuzz ($FUZZ_BUILD, ${FUZZ_SECONDS}s per target)"
if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
  # fuzzer-no-link instruments the library too, so coverage guides the search through it.
  CC=clang meson setup "$FUZZ_BUILD" -Dfuzz=true -Db_lundef=false \
    -Db_sanitize=address,undefined -Dc_args=-fsanitize=fuzzer-no-link >/dev/null \
    || { echo "FAIL  fuzz setup"; failed=$((failed + 1)); }
fi
if ninja -C "$FUZZ_BUILD" >"$logdir/fuzz-build.log" 2>&1; then
  for f in "$FUZZ_BUILD"/fuzz/fuzz-*; do
    [ -x "$f" ] && [ -f "$f" ] || continue
    name=$(basename "$f"); corpus="fuzz/corpus/${name#fuzz-}"
    dict=()
    if [ -f "fuzz/${name#fuzz-}.dict" ]; then dict=(-dict="fuzz/${name#fuzz-}.dict"); fi
    work=$(mktemp -d "$logdir/corpus.XXXXXX")
    if "$f" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" \
         -artifact_prefix="$logdir/" "$work" "$corpus" >"$logdir/$name.log" 2>&1; then
      echo "ok    fuzz/$name ($(grep -oE 'stat::number_of_executed_units: [0-9]+' "$logdir/$name.log" | awk '{print $2}') execs)"
      passed=$((passed + 1))
    else
      echo "FAIL  fuzz/$name"; tail -40 "$logdir/$name.log"; failed=$((failed + 1))
      failures+=("fuzz/$name")
    fi
  done
else
  echo "FAIL  fuzz build"; cat "$logdir/fuzz-build.log"; failed=$((failed + 1))
fi

echo "== style (scripts/check-style.sh)"
if scripts/check-style.sh >"$logdir/style.log" 2>&1; then
  echo "ok    style: formatting, banned functions, no sleep in src/lib"
  passed=$((passed + 1))
else
  echo "FAIL  style"; sed 's/^/    /' "$logdir/style.log"; failed=$((failed + 1))
  failures+=("style")
fi

if [ ${#failures[@]} -gt 0 ]; then
  echo "failed: ${failures[*]}"
fi
echo "logs: $logdir"
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
