#!/usr/bin/env bash
# bench/launch/run.sh BUILD_DIR [RUNS]: the launch benchmark (see bench-launch.c).
set -euo pipefail
build=${1:-build}
runs=${2:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d /tmp/trainyard-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
cat >"$scratch/wide.yaml" <<'EOT'
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerType: n1-standard-4
  workerCount: 16
  masterConfig:
    imageUri: example.com/bench:1
    containerCommand: ["true"]
EOT
TRAINYARD_HOME="$scratch/state" "$root/$build/bench/bench-launch" \
  "$root/$build/bin/trainyard" "$scratch/wide.yaml" "$runs" | tee "$scratch/out"

# make bench's table (bench/report.py): the medians printed above, goals of issue 17
row() { awk -v k="$1" -v c="$2" '$1 == k { print $(NF - c) }' "$scratch/out"; }
for p in "to all started:3" "to job end:1"; do
  python3 "$root/bench/report.py" add launch "1+16 true, ${p%:*}" "$(row trainyard "${p#*:}")" ms \
    --floor "$(row baseline "${p#*:}")" --goal "<= 1.2x"
  python3 "$root/bench/report.py" add launch "1+16 true, ${p%:*}, against the contained floor" \
    "$(row trainyard "${p#*:}")" ms --floor "$(row contained "${p#*:}")" \
    --note "floor: fork/exec into per-replica cgroups with limits, removed at the end"
done
