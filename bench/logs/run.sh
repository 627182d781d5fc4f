#!/usr/bin/env bash
# bench/logs/run.sh BUILD_DIR [MB [ROUNDS]]: a logs page with `since` in a large log file (see
# bench-logsince.c), beside a scan of the file up to that point. Prints figures and ratios;
# nothing passes or fails.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bin="$build/bench/logs/bench-logsince"
[ -x "$bin" ] || { echo "bench/logs: $bin is missing; build first (ninja -C $build)" >&2; exit 2; }
out=$("$bin" "${@:2}")
printf '%s\n' "$out"

# make bench's table (bench/report.py): the medians printed above (no goal stated)
us() { printf '%s\n' "$out" | awk -v k="$1" 'index($0, k) == 1 { print $NF }'; }
python3 "$root/bench/report.py" add logs "one page with since, 90% into a 256 MB log" \
  "$(us "since (one page, bisected) us")" us --floor "$(us "scan to the since point (baseline) us")" \
  --note "floor: reading the file to that point (what a since cost before the bisection)"
