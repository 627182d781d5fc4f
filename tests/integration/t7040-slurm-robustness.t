#!/bin/sh
# t7040-slurm-robustness: the slurm runtime against what a real cluster does to a job besides
# running it (docs/slurm.md), on a simulated four-node cluster (tests/lib/slurm-cluster.sh,
# level 1): a job without scheduling.priority queues behind one that has one, and Slurm's time
# limit leaves room for preparing on the allocation; `scancel
# --signal` (CONT, USR1) is no end of the job, and USR1 reaches the program; a controller
# outage leaves a running job running, and a job that ends during one is cancelled once the
# controller is back; launchers whose supervisor was killed cancel their
# Slurm job; idle connections to the launchers' listener do not lock the launchers out; a job
# over the partition's time limit fails instead of waiting for ever.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/slurm-cluster.sh"

M=$RUN_ID
if ! slurm_cluster_check; then
  test_skip "slurm robustness" "$TY_SLURM_SKIP_REASON"
  test_done
fi
export TY_SLURM_EXTRA_CONF="SlurmdTimeout=5
MessageTimeout=2"
if ! slurm_cluster_start; then
  test_skip "slurm robustness" "the test cluster did not start: $TY_SLURM_ERROR"
  test_done
fi
trap 'slurm_cluster_stop >/dev/null 2>&1' EXIT INT TERM
export TRAINYARD_SLURM_MEMORY=none
export TRAINYARD_TASK="$TY_BUILD_DIR/bin/trainyard-task"
rec() { json_get "$TRAINYARD_HOME/jobs/local/$1/job.json" "$2"; }
no_slurm_jobs() { [ -z "$(squeue -h -o %i)" ]; }
slurm_running() { [ "$(squeue -h -o %T | grep -c RUNNING)" -ge "${1:-1}" ]; }

# mkjob FILE SCRIPT [EXTRA_JSON]: a master and one worker (n1-standard-4), both running
# `sh -c SCRIPT`; EXTRA_JSON merged into trainingInput.
mkjob() {
  "$PYTHON" - "$@" <<-\PY
	import json, sys
	f, script = sys.argv[1:3]
	ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
	      "workerCount": 1,
	      "masterConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", "-c", script]},
	      "workerConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", "-c", script]}}
	if len(sys.argv) > 3:
	    ti.update(json.loads(sys.argv[3]))
	json.dump({"trainingInput": ti}, open(f, "w"))
	PY
}
# (slurmctld refuses a signal now and then while it delivers the one before: "Invalid job id
# specified"; the CONT storm does not care, and USR1 is sent until it is taken.)
# for_run SECONDS MARKER: a script that runs about SECONDS, its processes findable by MARKER
for_run() { echo "i=0; while [ \$i -lt $(($1 * 10)) ]; do sleep 0.1; i=\$((i + 1)); done; : $2"; }

test_expect_success 'a job without scheduling.priority has priority 0: nice 1000; --time has room to prepare' '
  mkjob p.json "$(for_run 30 prio.$M)" "{\"scheduling\": {\"maxRunningTime\": \"120s\"}}" || exit 1
  "$TRAINYARD" local train prio_job --runtime slurm --config p.json --grace-period 1 >log 2>&1 &
  pid=$!
  wait_for 30 slurm_running &&
  test "$(squeue -h -o %y | sort -u)" = 1000 &&
  test "$(squeue -h -o %l | sort -u)" = 7:00 &&
  kill -INT $pid &&
  set +e; wait $pid; rc=$?; set -e
  test $rc -eq 1 && wait_for 30 no_slurm_jobs
'
test_expect_success 'scancel --signal CONT and USR1 do not end the job; USR1 reaches the program' '
  mkjob s.json "trap \"echo got-USR1 >>$TEST_DIR/usr1.\$\$\" USR1; grep SigIgn /proc/\$\$/status >$TEST_DIR/ign.\$\$; touch $TEST_DIR/up.\$\$; $(for_run 20 sig.$M)" \
    "{\"scheduling\": {\"disableRetries\": true}}" || exit 1
  "$TRAINYARD" local train sig_job --runtime slurm --config s.json --grace-period 1 >log 2>&1 &
  pid=$!
  both_up() { [ "$(ls "$TEST_DIR" | grep -c "^up\.")" -eq 2 ]; } &&
  wait_for 30 both_up &&
  id=$(squeue -h -o %i) &&
  for i in $(seq 5); do scancel -s CONT "$id" 2>/dev/null || :; done &&
  sleep 1 &&
  usr1() { scancel -s USR1 "$id" 2>/dev/null; } &&
  wait_for 15 usr1 &&
  wait $pid &&
  test "$(rec sig_job "d[\"state\"]")" = SUCCEEDED &&
  test "$(rec sig_job "d[\"attemptStatus\"][\"attempt\"]")" = 1 &&
  # a shell cannot trap a signal ignored when it started (POSIX): where the environment
  # ignores SIGUSR1, the program cannot show that it got it
  if grep -q "SigIgn:.*[2367abef]..\$" "$TEST_DIR"/ign.* 2>/dev/null; then
    echo "# SIGUSR1 is ignored in this environment: its delivery is not checked"
  else
    test "$(cat "$TEST_DIR"/usr1.* | grep -c got-USR1)" -ge 2
  fi
'
# (In these two the replicas end when the test says so: after the supervisor has seen the
# controller come back, or has seen it gone. A fixed run time raced squeue's failure, which
# takes seconds while slurmctld shuts down.)
test_expect_success 'a controller outage leaves a running job running' '
  mkjob o.json "while [ ! -e $TEST_DIR/back.$M ]; do sleep 0.1; done; : outage.$M" || exit 1
  "$TRAINYARD" local train outage_job --runtime slurm --config o.json --grace-period 1 >log 2>&1 &
  pid=$!
  { wait_for 30 slurm_running && sleep 2 && slurm_ctld_stop; } || exit 1
  wait_for 30 grep -q "Cannot read the Slurm job.s state" log && sleep 4
  seen=$?
  slurm_ctld_start && test $seen -eq 0 &&
  wait_for 30 grep -q "can be read again" log && touch back.$M &&
  wait $pid &&
  test "$(rec outage_job "d[\"state\"]")" = SUCCEEDED &&
  test "$(rec outage_job "d[\"attemptStatus\"][\"attempt\"]")" = 1
'
test_expect_success 'a job that ends while the controller is down is cancelled once it is back' '
  mkjob e.json "while [ ! -e $TEST_DIR/down.$M ]; do sleep 0.1; done; : ended.$M" \
    "{\"workerConfig\": {\"imageUri\": \"x/y:1\", \"containerCommand\": [\"sh\", \"-c\", \"$(for_run 60 ended.$M)\"]}}" || exit 1
  "$TRAINYARD" local train ended_job --runtime slurm --config e.json --grace-period 1 >elog 2>&1 &
  pid=$!
  { wait_for 30 slurm_running && sleep 1 && slurm_ctld_stop; } || exit 1
  wait_for 30 grep -q "Cannot read the Slurm job.s state" elog &&
    touch down.$M && wait_for 10 grep -q "Tearing down" elog && sleep 2
  seen=$?
  slurm_ctld_start && test $seen -eq 0 &&
  wait $pid &&
  test "$(rec ended_job "d[\"state\"]")" = SUCCEEDED &&
  wait_for 120 no_slurm_jobs
'
test_expect_success 'launchers whose supervisor was killed cancel their Slurm job' '
  { wait_for 30 no_slurm_jobs && mkjob k.json "$(for_run 300 orphan.$M)"; } || exit 1
  "$TRAINYARD" local train orphan_job --runtime slurm --config k.json --grace-period 1 >log 2>&1 &
  pid=$!
  wait_for 30 slurm_running &&
  sruns=$(pgrep -P $pid -x srun | tr "\n" " ") && test -n "$sruns" &&
  kill -KILL $pid $sruns &&
  wait_for 40 no_slurm_jobs
'
test_expect_success 'idle connections to the listener do not lock the launchers out' '
  wait_for 30 no_slurm_jobs || exit 1
  blocker=$(sbatch --parsable -N4 --exclusive --wrap "sleep 300") || exit 1
  wait_for 30 slurm_running || exit 1
  mkjob q.json "echo hi" "{\"scheduling\": {\"disableRetries\": true}}" || exit 1
  "$TRAINYARD" local train idle_job --runtime slurm --config q.json --grace-period 1 >log 2>&1 &
  pid=$!
  port_of() { ps -o args= --ppid $pid | sed -n "s/.*--connect [^ ]*:\([0-9][0-9]*\).*/\1/p" | head -1; } &&
  has_port() { test -n "$(port_of)"; } &&
  wait_for 30 has_port &&
  port=$(port_of) || exit 1
  "$PYTHON" -c "
import socket, sys, time
s = [socket.create_connection((\"127.0.0.1\", int(sys.argv[1]))) for _ in range(40)]
open(\"idle.ready\", \"w\").close()
time.sleep(20)" "$port" &
  idle=$!
  wait_for 10 test -e idle.ready &&
  scancel "$blocker" &&
  set +e; wait $pid; rc=$?; kill $idle 2>/dev/null; wait $idle 2>/dev/null; set -e
  test $rc -eq 0 && test "$(rec idle_job "d[\"state\"]")" = SUCCEEDED
'
test_expect_success 'a job over the partition'"'"'s time limit fails saying so instead of waiting forever' '
  wait_for 30 no_slurm_jobs || exit 1
  scontrol update PartitionName=debug MaxTime=5 || exit 1
  mkjob t.json "echo hi" "{\"scheduling\": {\"maxRunningTime\": \"600s\"}}" &&
  set +e; timeout 60 "$TRAINYARD" local train toolong_job --runtime slurm --config t.json >log 2>err; rc=$?; set -e
  scontrol update PartitionName=debug MaxTime=INFINITE &&
  test $rc -eq 1 &&
  grep -q "Slurm will never run job .* (PartitionTimeLimit): its time limit (scheduling.maxRunningTime, plus 5 minutes for preparing on the allocation) is over the partition.s" err &&
  wait_for 30 no_slurm_jobs
'
slurm_cluster_stop
test_expect_success 'the cluster stopped: none of its processes is left' '
  test -z "$(slurm_cluster_procs)"
'
test_done
