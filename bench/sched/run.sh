#!/usr/bin/env bash
# bench/sched/run.sh BUILD_DIR [PASSES [RELEASES]]: the scheduler benchmark (see
# bench-sched.c and README.md). Prints figures and ratios; nothing passes or fails.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bin="$build/bench/sched/bench-sched"
[ -x "$bin" ] || { echo "bench/sched: $bin is missing; build first (ninja -C $build)" >&2; exit 2; }
"$bin" "${@:2}"
