#!/usr/bin/env bash
# fuzz-long.sh: the deep fuzzing run behind `make fuzz-long`. Every libFuzzer target of the
# fuzz build (ASan + UBSan, the library instrumented for coverage too) runs for N seconds
# (default 600) on its corpus, one after the other; a per-target report follows (runs,
# coverage, corpus files before/after, crashes). The inputs a run found are then merged into
# the repository's corpus fuzz/corpus/<target>/ with libFuzzer's -merge=1 (-set_cover_merge=1
# where libFuzzer has it), which keeps only those that add coverage. Any crash (memory error,
# UB, leak, timeout, out-of-memory, or a target's own check) fails the run; its reproducer is
# kept under the log directory.
#
#   scripts/fuzz-long.sh [--fuzz-build DIR] [--seconds N] [--only NAME] [--no-merge]
set -uo pipefail
cd "$(dirname "$0")/.."

FUZZ_BUILD=build-fuzz SECONDS_EACH=600 ONLY="" MERGE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --fuzz-build) FUZZ_BUILD=$2; shift 2 ;;
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --no-merge) MERGE=0; shift ;;
    *) echo "fuzz-long: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$SECONDS_EACH" in '' | *[!0-9]*) echo "fuzz-long: --seconds wants a number" >&2; exit 2 ;; esac

logdir=$(mktemp -d /tmp/trainyard-fuzz-long.XXXXXX)
if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
  # Same configuration as the short run of scripts/run-tests.sh.
  CC=clang meson setup "$FUZZ_BUILD" -Dfuzz=true -Db_lundef=false \
    -Db_sanitize=address,undefined -Dc_args=-fsanitize=fuzzer-no-link >"$logdir/setup.log" 2>&1 \
    || { cat "$logdir/setup.log"; echo "fuzz-long: FAIL fuzz setup"; exit 1; }
fi
# Only the fuzz targets (the rest of the fuzz build is the short run's business).
targets=$(ninja -C "$FUZZ_BUILD" -t targets all 2>/dev/null | sed -n 's|^\(fuzz/fuzz-[A-Za-z0-9_-]*\): .*|\1|p')
[ -n "$targets" ] || { echo "fuzz-long: FAIL no fuzz target in $FUZZ_BUILD (clang needed)"; exit 1; }
# shellcheck disable=SC2086
ninja -C "$FUZZ_BUILD" $targets >"$logdir/build.log" 2>&1 \
  || { cat "$logdir/build.log"; echo "fuzz-long: FAIL fuzz build"; exit 1; }

# last_cov LOG: the coverage (edges) of libFuzzer's last status line.
last_cov() { grep -oE ' cov: [0-9]+' "$1" | tail -1 | awk '{print $2}'; }
stat_of() { grep -oE "stat::$2: [0-9]+" "$1" | tail -1 | awk '{print $2}'; }

echo "== fuzz-long ($FUZZ_BUILD, ${SECONDS_EACH}s per target, logs in $logdir)"
report=() failed=0 n=0
for f in "$FUZZ_BUILD"/fuzz/fuzz-*; do
  [ -x "$f" ] && [ -f "$f" ] || continue
  name=$(basename "$f"); short=${name#fuzz-}
  [ -z "$ONLY" ] || [ "$ONLY" = "$short" ] || [ "$ONLY" = "$name" ] || continue
  n=$((n + 1))
  corpus="fuzz/corpus/$short"
  mkdir -p "$corpus"
  dict=()
  if [ -f "fuzz/$short.dict" ]; then dict=(-dict="fuzz/$short.dict"); fi
  work="$logdir/new-$short" art="$logdir/artifacts-$short"
  mkdir -p "$work" "$art"
  before=$(find "$corpus" -type f | wc -l)
  echo "   $name: running ${SECONDS_EACH}s (started $(date +%H:%M:%S))"
  # New inputs go to $work (the first directory); the repository's corpus is only read.
  "$f" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 "${dict[@]}" -artifact_prefix="$art/" "$work" "$corpus" \
    >"$logdir/$name.log" 2>&1
  rc=$?
  crashes=$(find "$art" -type f | wc -l)
  runs=$(stat_of "$logdir/$name.log" number_of_executed_units)
  cov=$(last_cov "$logdir/$name.log")
  found=$(find "$work" -type f | wc -l)
  after=$before
  merge_flag=merge
  if "$f" -help=1 2>&1 | grep -q '^ *set_cover_merge '; then merge_flag=set_cover_merge; fi
  if [ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ] && [ "$MERGE" -eq 1 ] && [ "$found" -gt 0 ]; then
    # -merge=1 adds to the first directory only the inputs of the second that reach new
    # coverage (features); -set_cover_merge=1 (libFuzzer of LLVM 15 on) does the same with
    # a greedy set cover, keeping far fewer of them for the same coverage.
    if "$f" -"$merge_flag"=1 -max_len=4096 -timeout=10 -rss_limit_mb=2048 "$corpus" "$work" \
         >"$logdir/$name.merge.log" 2>&1; then
      after=$(find "$corpus" -type f | wc -l)
    else
      echo "   $name: merge failed (see $logdir/$name.merge.log)"; rc=1
    fi
  fi
  if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    status=FAIL failed=$((failed + 1))
    [ "$crashes" -gt 0 ] || crashes="1 (exit $rc)"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$logdir/$name.log" | head -5 | sed 's/^/      /'
    find "$art" -type f | sed 's/^/      reproducer: /'
  else
    status=ok
  fi
  line=$(printf '%-4s  %-20s runs %10s  cov %6s  corpus %4s -> %-4s (new inputs %s)  crashes %s' \
    "$status" "$name" "${runs:-?}" "${cov:-?}" "$before" "$after" "$found" "$crashes")
  echo "   $line"
  report+=("$line")
done
[ "$n" -gt 0 ] || { echo "fuzz-long: FAIL no fuzz target in $FUZZ_BUILD/fuzz (clang needed)"; exit 1; }

echo "== fuzz-long report (${SECONDS_EACH}s per target)"
printf '%s\n' "${report[@]}"
echo "logs: $logdir"
echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
