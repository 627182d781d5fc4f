#!/usr/bin/env bash
# bench/tuning-overhead/run.sh BUILD_DIR [TRIALS [PARALLEL]]: how much of a tuning study's wall
# time is trainyard's own (see README.md)? A study of TRIALS (200) one-second trials, PARALLEL
# (8) at once, through `trainyard local train`, once per algorithm in $ALGORITHMS (default:
# "ALGORITHM_UNSPECIFIED RANDOM_SEARCH"), beside the floor: the same trial program run TRIALS
# times, PARALLEL at once, by `xargs -P`. trainyard's own time is the study's wall time less
# the ideal TRIALS / PARALLEL x 1 s, as a percentage of the wall time (goal: under 5 %); the
# trial records (startTime, endTime) split it into time inside a trial (its run less the 1 s)
# and the gaps between a trial's end and the start of the trial that takes its place.
# Not a test: nothing passes or fails on time. KEEP=1 keeps the scratch directory.
set -euo pipefail
build=${1:-build}
trials=${2:-200}
parallel=${3:-8}
ALGORITHMS=${ALGORITHMS:-ALGORITHM_UNSPECIFIED RANDOM_SEARCH}
root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
ty=$build/bin/trainyard
[ -x "$ty" ] || { echo "bench/tuning-overhead: $ty is missing; build first (ninja -C $build)" >&2; exit 2; }
if [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; else py=$(command -v python3); fi
scratch=$(mktemp -d /tmp/trainyard-bench-tuning.XXXXXX)
cleanup() {
  if [ "${KEEP:-0}" = 1 ]; then echo "bench/tuning-overhead: scratch kept: $scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT
export TRAINYARD_HOME=$scratch/state

# The trial program: sleep 1 s, then report its parameter x as the metric (hypertune's format).
# shellcheck disable=SC2016 # expanded by the trials' shells
prog='sleep 1; printf "{\"global_step\": \"1\", \"metric\": \"%s\"}\n" "${1#--x=}" >>"$CLOUD_ML_HP_METRIC_FILE"'
study() { # ALGORITHM: the job's config on stdout
  "$py" - "$prog" "$trials" "$parallel" "$1" <<'PY'
import json, sys
prog, trials, parallel, algo = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
print(json.dumps({"trainingInput": {
    "scaleTier": "BASIC",
    "masterConfig": {"imageUri": "example.com/bench:1",
                     "containerCommand": ["sh", "-c", prog, "trial"]},
    "hyperparameters": {"goal": "MAXIMIZE", "hyperparameterMetricTag": "metric",
                        "maxTrials": trials, "maxParallelTrials": parallel,
                        "algorithm": algo,
                        "params": [{"parameterName": "x", "type": "DOUBLE",
                                    "minValue": 0, "maxValue": 1}]}}}))
PY
}

now() { date +%s.%N; }
: >"$scratch/results"
floor_run() { # the floor: TRIALS runs of the program, PARALLEL at once; prints the wall time
  local t0 t1
  t0=$(now)
  seq "$trials" | CLOUD_ML_HP_METRIC_FILE=$scratch/floor.metrics \
    xargs -P "$parallel" -I{} sh -c "$prog" trial --x=0.{}
  t1=$(now)
  [ "$(wc -l <"$scratch/floor.metrics")" -eq "$trials" ] ||
    { echo "bench/tuning-overhead: the floor's runs did not all report" >&2; exit 1; }
  rm -f "$scratch/floor.metrics"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}
ty_run() { # ALGORITHM: one study; appends "ALGORITHM WALL JOB_JSON" to results
  local id=overhead_${1,,} t0 t1
  study "$1" >"$scratch/$id.json"
  t0=$(now)
  "$ty" local train "$id" --config "$scratch/$id.json" >"$scratch/$id.log" 2>&1 ||
    { echo "bench/tuning-overhead: the $1 study failed: $(tail -3 "$scratch/$id.log")" >&2; exit 1; }
  t1=$(now)
  echo "$1 $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" \
    "$TRAINYARD_HOME/jobs/local/$id/job.json" >>"$scratch/results"
}

floor=$(floor_run)
for a in $ALGORITHMS; do ty_run "$a"; done
"$py" "$root/bench/tuning-overhead/report.py" "$scratch/results" "$floor" "$trials" "$parallel"
