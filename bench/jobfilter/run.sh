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
# the '~' rows: the filter (ere.h) against glibc's regexec on the same field (no goal stated)
printf '%s\n' "$out" | awk '/~"/ { v = $(NF - 2); f = $(NF - 1); NF -= 3; print v "\t" f "\t" $0 }' |
while IFS=$'\t' read -r filter glibc text; do
  python3 "$root/bench/report.py" add jobfilter "$text" "$filter" ns --floor "$glibc" \
    --note "floor: glibc regexec of the field (exponential regcomp on some patterns)"
done
