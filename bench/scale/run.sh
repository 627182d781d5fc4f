#!/usr/bin/env bash
# bench/scale/run.sh BUILD_DIR [RUNS]: the scale benchmark (see bench-scale.c): a 1 + 999 job of
# `true` through `local train` next to posix_spawn of 1,000 `true`, and the supervising
# process's memory per replica of a 1 + 999 job of `sleep`.
set -euo pipefail
build=${1:-build}
runs=${2:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d /tmp/trainyard-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
# job FILE WORKERS COMMAND-JSON: a CUSTOM job of a master and WORKERS workers.
job() {
  cat >"$1" <<EOT
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerType: n1-standard-4
  workerCount: $2
  masterConfig:
    imageUri: example.com/bench:1
    containerCommand: $3
EOT
}
job "$scratch/true.yaml" 999 '["true"]'
job "$scratch/sleep.yaml" 999 '["sleep", "600"]'
cat >"$scratch/sleep1.yaml" <<'EOT'
trainingInput:
  scaleTier: BASIC
  masterConfig:
    imageUri: example.com/bench:1
    containerCommand: ["sleep", "600"]
EOT
TRAINYARD_HOME="$scratch/state" "$root/$build/bench/bench-scale" "$root/$build/bin/trainyard" \
  "$scratch/true.yaml" "$scratch/sleep.yaml" "$scratch/sleep1.yaml" "$runs" | tee "$scratch/out"

# make bench's table (bench/report.py): the medians printed above, goals of issue 17
secs() { awk -v k="$1" 'index($0, k) { print $(NF - 1); exit }' "$scratch/out"; }
python3 "$root/bench/report.py" add scale "1+999 true, whole local train" \
  "$(secs "trainyard local train")" s --floor "$(secs "floor (posix_spawn")" --goal "<= 1.3x"
python3 "$root/bench/report.py" add scale "1+999 true, against the contained floor" \
  "$(secs "trainyard local train")" s --floor "$(secs "contained floor")" \
  --note "floor: fork/exec into per-replica cgroups with limits, removed at the end"
python3 "$root/bench/report.py" add scale "memory per supervised replica (1+999 sleep)" \
  "$(awk '/per replica \(VmRSS/ { print $(NF - 5); exit }' "$scratch/out")" kB --goal "< 50"
