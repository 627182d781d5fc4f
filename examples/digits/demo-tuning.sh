#!/usr/bin/env bash
# demo-tuning.sh BUILD_DIR: run the digits example as a hyperparameter-tuning job
# (examples/digits/tuning.yaml: 8 trials, 2 at a time, each a 1 master + 1 worker + 1 parameter
# server cluster) through `trainyard local train`, showing the live logs and ending with the
# table of trials, best first. In containers (the image built locally, no registry) when a
# container engine is usable here; as local processes otherwise. It says which.
# DIGITS_IMAGE names the image to build and run (default localhost/trainyard/digits:latest).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PATH="$root/$build/examples/digits:$PATH"
export TRAINYARD_HOME=${TRAINYARD_HOME:-$root/$build/demo-state}
image=${DIGITS_IMAGE:-localhost/trainyard/digits:latest}
job=digits_tuning_$(date +%Y%m%d_%H%M%S)
jobdir=$root/$build/demo-jobs/$job
runtime=process
if [ "$(id -u)" -eq 0 ] && scripts/setup-podman.sh >/dev/null 2>&1 &&
   examples/digits/image/build-image.sh "$build" "$image" >/dev/null 2>&1; then
  runtime=container
  echo "Container engine found: each replica runs in the image $image;"
  echo "each trial's metric directory is mounted at /tmp/hypertune in its containers."
else
  echo "No usable container engine here: each replica runs as a local process."
fi
args=(local train "$job" --runtime "$runtime" --config examples/digits/tuning.yaml
      --job-dir "$jobdir")
if [ "$image" != localhost/trainyard/digits:latest ]; then
  args+=(--master-image-uri "$image")
fi
echo "Tuning the digits example as job $job (runtime: $runtime; state in $TRAINYARD_HOME)."
echo "  trainyard ${args[*]}"
echo "Each trial: job dir $jobdir/<trial>, metric file"
echo "  $TRAINYARD_HOME/jobs/local/$job/trials/<trial>/output.metrics;"
echo "the job record with trainingOutput: $TRAINYARD_HOME/jobs/local/$job/job.json"
echo
exec "$build/bin/trainyard" "${args[@]}"
