#!/usr/bin/env bash
# bench/jobfilter/run.sh BUILD_DIR [MATCHES_PER_ROUND [ROUNDS]]: the job-filter benchmark
# (see bench-jobfilter.c). Prints figures and a ratio; nothing passes or fails.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bin="$build/bench/jobfilter/bench-jobfilter"
[ -x "$bin" ] || { echo "bench/jobfilter: $bin is missing; build first (ninja -C $build)" >&2; exit 2; }
out=$("$bin" "${@:2}")
printf '%s\n' "$out"

# make bench's table (bench/report.py): the medians printed above (no goal stated)
ns() { printf '%s\n' "$out" | awk -v k="$1" 'index($0, k) == 1 { print $NF }'; }
python3 "$root/bench/report.py" add jobfilter "one filter match (4 terms)" \
  "$(ns ty_filter_match)" ns --floor "$(ns "baseline (plain lookups)")"
