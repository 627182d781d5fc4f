#!/bin/sh
# t3060-local-gpus: the GPUs of `local train` (docs/cli.md, "local train and GPUs") with
# stand-in devices (TRAINYARD_GPUS, TRAINYARD_GPU_DEVICES, and the config file's gpus and
# gpu_devices): a job that can never fit exits 2 naming what it needs and what this machine
# has; a job whose GPUs another `local train` holds waits, saying why, and runs once they are
# free, its replica seeing CUDA_VISIBLE_DEVICES; a cancel while waiting ends it CANCELLED; a
# tuning job runs as many trials at once as it got GPUs for. No test waits on a timer: the
# holding job sleeps until a file appears (a minute at most, should a test fail before).
. "$(dirname "$0")/../lib/test-lib.sh"

export TRAINYARD_CONFIG="$TEST_DIR/no-config" # none unless a test writes one
: >"$TRAINYARD_CONFIG"

# Usage: gpu_job FILE SCRIPT COUNT [EXTRA_TRAINING_INPUT_JSON]: a master with COUNT T4s.
gpu_job() {
  write_job "$1" "$2" 0 0 0 "{\"masterConfig\": {\"imageUri\": \"example.com/test:1\", \"containerCommand\": [\"sh\", \"-c\", \"$2\"], \"acceleratorConfig\": {\"type\": \"NVIDIA_TESLA_T4\", \"count\": \"$3\"}}${4:+, $4}}"
}
# Usage: run_stand_ins GPUS ARGS...: `local train ARGS` with the stand-in GPUs GPUS (env
# execs it: $! of a run in the background is trainyard itself).
run_stand_ins() {
  g=$1
  shift
  env TRAINYARD_GPUS="$g" TRAINYARD_GPU_DEVICES=stand-in "$TRAINYARD" local train "$@"
}
SI1="env TRAINYARD_GPUS=NVIDIA_TESLA_T4:1 TRAINYARD_GPU_DEVICES=stand-in $TRAINYARD local train"

if ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  test_skip 'never fits: a machine without GPUs' "this host has NVIDIA GPUs"
else
test_expect_success 'never fits: a machine without GPUs' '
  gpu_job one.json "true" 1 &&
  set +e; "$TRAINYARD" local train nf_1 --config one.json >out 2>err; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q "ERROR: (trainyard.local.train) trainingInput: the job needs 1 × NVIDIA_TESLA_T4 at once, and this machine has none (no NVIDIA GPU devices under /dev)" err &&
  test ! -e "$TRAINYARD_HOME/jobs/local/nf_1"
'
fi

test_expect_success 'never fits: one stand-in T4 for a job that needs two' '
  gpu_job two.json "true" 2 &&
  set +e; run_stand_ins NVIDIA_TESLA_T4:1 nf_2 --config two.json >out 2>err; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q "the job needs 2 × NVIDIA_TESLA_T4 at once, and this machine has 1 (TRAINYARD_GPUS=NVIDIA_TESLA_T4:1)" err
'

test_expect_success 'the config file declares stand-ins; the environment overrides it' '
  printf "gpus = NVIDIA_TESLA_T4:1\ngpu_devices = stand-in\n" >cfg &&
  set +e; TRAINYARD_CONFIG=$PWD/cfg "$TRAINYARD" local train nf_3 --config two.json >out 2>err; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q "this machine has 1 ($PWD/cfg:1: gpus = NVIDIA_TESLA_T4:1)" err &&
  TRAINYARD_CONFIG=$PWD/cfg TRAINYARD_GPUS=NVIDIA_TESLA_T4:2 "$TRAINYARD" local train cf_ok \
    --config two.json >out 2>err &&
  grep -q "GPUs 0, 1 (NVIDIA_TESLA_T4, stand-ins)" out &&
  printf "gpu_devices = bogus\n" >bad &&
  set +e; TRAINYARD_CONFIG=$PWD/bad "$TRAINYARD" local train nf_4 --config two.json >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "bad:1: gpu_devices: expected nvidia" err
'

test_expect_success 'a job waits while another holds its GPU, then runs with it' '
  gpu_job hold.json "touch $TEST_DIR/holding; i=0; while [ ! -e $TEST_DIR/go ] && [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i+1)); done" 1 &&
  gpu_job see.json "echo seen=\$CUDA_VISIBLE_DEVICES/\$CUDA_DEVICE_ORDER" 1
  $SI1 hold_1 --config hold.json >hold.out 2>&1 & h=$!
  wait_for 20 test -e holding &&
  { $SI1 see_1 --config see.json >see.out 2>see.err & s=$!; } &&
  wait_for 20 grep -q "Waiting for 1 × NVIDIA_TESLA_T4: 0 of 1 free (it is held by other jobs)" see.err &&
  ! grep -q seen= see.out &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/see_1/job.json" "d[\"state\"]")" = QUEUED &&
  touch go && wait $h && wait $s &&
  grep -q "master-replica-0 *seen=0/PCI_BUS_ID" see.out &&
  grep -q "Admitted after [0-9.]* s in the queue: 4 vCPUs and 15.0 GiB of memory; GPU 0 (NVIDIA_TESLA_T4, stand-ins)." see.out &&
  grep -q "The job.s GPUs are stand-ins" see.out &&
  test "$(grep -c Waiting see.err)" = 1
'

test_expect_success 'a cancel while waiting ends the job CANCELLED' '
  # see.err of the test before says "Waiting for" too: read before see_2 has made its own, it
  # had the job interrupted before it started (exit 130, not 1)
  rm -f holding go see.out see.err
  $SI1 hold_2 --config hold.json >hold.out 2>&1 & h=$!
  wait_for 20 test -e holding &&
  { $SI1 see_2 --config see.json >see.out 2>see.err & s=$!; } &&
  wait_for 20 grep -q "Waiting for" see.err &&
  kill -INT $s &&
  set +e; wait $s; rc=$?; set -e
  touch go && wait $h &&
  test $rc -eq 1 &&
  grep -q "Job see_2 was cancelled: Job cancelled by the user." see.err &&
  grep -q "service  *Job cancellation requested.$" see.out &&
  grep -q "service  *Job cancelled.$" see.out &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/see_2/job.json" "d[\"state\"]")" = CANCELLED &&
  ! grep -q seen= see.out
'

# A tuning job whose trials each need one T4: each trial records its GPU and how many trials
# run as it starts; unless DIR/alone exists it waits until a second trial has started; then
# it reports its metric.
cat >"$TEST_DIR/trial.sh" <<'SH'
d=$1 id=$CLOUD_ML_TRIAL_ID
touch "$d/started.$id"
n=$(($(ls "$d"/started.* | wc -l) - $(ls "$d"/done.* 2>/dev/null | wc -l)))
echo "trial=$id gpu=$CUDA_VISIBLE_DEVICES at_once=$n"
if [ -e "$d/alone" ]; then
  sleep 0.3
else
  while [ "$(ls "$d"/started.* | wc -l)" -lt 2 ]; do sleep 0.05; done
fi
echo '{"global_step": "1", "loss": "0.5"}' >"$CLOUD_ML_HP_METRIC_FILE"
touch "$d/done.$id"
SH
HP='"hyperparameters": {"goal": "MINIMIZE", "hyperparameterMetricTag": "loss", "maxTrials": 2, "maxParallelTrials": 2, "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}'

test_expect_success 'tuning with one GPU for maxParallelTrials 2: one trial at a time' '
  mkdir t1 && touch t1/alone &&
  gpu_job tune1.json "sh $TEST_DIR/trial.sh $TEST_DIR/t1" 1 "$HP" &&
  run_stand_ins NVIDIA_TESLA_T4:1 tune_1 --config tune1.json >tune1.out 2>&1 &&
  grep -q "up to 2 trials, 1 at a time (as many as the job was given room for)" tune1.out &&
  grep -q "in the queue: 1 trial at once, each 4 vCPUs and 15.0 GiB of memory; GPU 0 (NVIDIA_TESLA_T4, stand-ins)." tune1.out &&
  test "$(grep -c "trial=[12] gpu=0 at_once=1" tune1.out)" = 2
'

test_expect_success 'tuning with two GPUs: two trials at once, each on its own GPU' '
  mkdir t2 &&
  gpu_job tune2.json "sh $TEST_DIR/trial.sh $TEST_DIR/t2" 1 "$HP" &&
  run_stand_ins NVIDIA_TESLA_T4:2 tune_2 --config tune2.json >tune2.out 2>&1 &&
  grep -q "Admitted after [0-9.]* s in the queue: 2 trials at once, each 4 vCPUs and 15.0 GiB of memory; GPUs 0, 1 (NVIDIA_TESLA_T4, stand-ins)." tune2.out &&
  grep -q "up to 2 trials, 2 at a time, minimizing" tune2.out &&
  test "$(grep -o "gpu=[01]" tune2.out | sort -u | wc -l)" = 2
'

test_done
