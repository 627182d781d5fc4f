#!/usr/bin/env bash
# demo.sh BUILD_DIR: run the digits example as a distributed job (1 master, 2 workers, 2
# parameter servers, 1 evaluator) through `trainyard local train`, showing the live logs.
# In containers (its image built locally, no registry) when run as root and rootful Podman
# can be set up here (scripts/setup-podman.sh); as local processes otherwise. It says which.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PATH="$root/$build/examples/digits:$PATH"
export TRAINYARD_HOME=${TRAINYARD_HOME:-$root/$build/demo-state}
job=digits_$(date +%Y%m%d_%H%M%S)
jobdir=$root/$build/demo-jobs/$job
runtime=process
if [ "$(id -u)" -eq 0 ] && scripts/setup-podman.sh >/dev/null 2>&1 &&
   examples/digits/image/build-image.sh "$build" >/dev/null 2>&1; then
  runtime=container
  echo "Container engine found: each replica runs in the image localhost/trainyard/digits:latest."
else
  echo "No usable container engine here: each replica runs as a local process."
fi
echo "Running the digits example as job $job (runtime: $runtime; state in $TRAINYARD_HOME)."
echo "  trainyard local train $job --runtime $runtime --config examples/digits/config.yaml --job-dir $jobdir"
echo
"$build/bin/trainyard" local train "$job" --runtime "$runtime" \
  --config examples/digits/config.yaml --job-dir "$jobdir"
echo
echo "Checkpoints: $jobdir/checkpoints"
