#!/usr/bin/env bash
# demo.sh BUILD_DIR: run the digits example as a distributed job (1 master, 2 workers, 2
# parameter servers, 1 evaluator) through `trainyard local train`, showing the live logs.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PATH="$root/$build/examples/digits:$PATH"
export TRAINYARD_HOME=${TRAINYARD_HOME:-$root/$build/demo-state}
job=digits_$(date +%Y%m%d_%H%M%S)
jobdir=$root/$build/demo-jobs/$job
echo "Running the digits example as job $job (process runtime; state in $TRAINYARD_HOME)."
echo "  trainyard local train $job --config examples/digits/config.yaml --job-dir $jobdir"
echo
"$build/src/cli/trainyard" local train "$job" --config examples/digits/config.yaml \
  --job-dir "$jobdir"
echo
echo "Checkpoints: $jobdir/checkpoints"
