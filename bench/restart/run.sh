#!/usr/bin/env bash
# bench/restart/run.sh BUILD_DIR [ROUNDS]: the restart-latency benchmark (see bench-restart.c).
set -euo pipefail
build=${1:-build}
rounds=${2:-20}
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d /tmp/trainyard-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
TRAINYARD_HOME="$scratch/state" "$root/$build/bench/bench-restart" \
  "$root/$build/bin/trainyard" "$scratch" "$rounds"
