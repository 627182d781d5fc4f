#!/usr/bin/env bash
# bench/sched/run.sh BUILD_DIR [PASSES [RELEASES]]: the scheduler benchmark (see
# bench-sched.c and README.md). Prints figures and ratios; nothing passes or fails.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bin="$build/bench/sched/bench-sched"
[ -x "$bin" ] || { echo "bench/sched: $bin is missing; build first (ninja -C $build)" >&2; exit 2; }
out=$("$bin" "${@:2}")
printf '%s\n' "$out"

# make bench's table (bench/report.py): the figures printed above; the decision's goal from README.md
col() { printf '%s\n' "$out" | awk -v k="$1" 'index($0, k) == 1 { print $('"$2"'); exit }'; }
python3 "$root/bench/report.py" add sched "one decision over 10,000 queued, median" \
  "$(col ty_sched_pass 2)" us --floor "$(col "baseline (FIFO, no" NF-1)" --goal "<= 1000 us"
python3 "$root/bench/report.py" add sched "capacity frees: passes/s" \
  "$(printf '%s\n' "$out" | awk '/^capacity frees/ { on = 1; next } on && /^ty_sched_pass/ { print $2 }')" \
  1/s --floor "$(col "baseline (FIFO) " 3)"
