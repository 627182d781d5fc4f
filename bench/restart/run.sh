#!/usr/bin/env bash
# bench/restart/run.sh BUILD_DIR [ROUNDS]: the restart-latency benchmark (see bench-restart.c).
set -euo pipefail
build=${1:-build}
rounds=${2:-20}
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d /tmp/trainyard-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
TRAINYARD_HOME="$scratch/state" "$root/$build/bench/bench-restart" \
  "$root/$build/bin/trainyard" "$scratch" "$rounds" | tee "$scratch/out"

# make bench's table (bench/report.py): the medians printed above (no goal stated)
med() { awk -v k="$1" '$1 == k { for (i = 1; i < NF; i++) if ($i == "median") print $(i + 1) }' \
  "$scratch/out"; }
python3 "$root/bench/report.py" add restart "process replica, death to running again" \
  "$(med trainyard)" ms --floor "$(med baseline)"
