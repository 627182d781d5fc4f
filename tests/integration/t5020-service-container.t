#!/bin/sh
# t5020-service-container: jobs of the service in containers (trainyardd --runtime
# container): a job runs to SUCCEEDED with its logs; cancel leaves no container or network;
# a killed supervisor's containers are swept by the daemon and the job runs again (an internal
# error: attempt 2).
# Skipped when no usable container engine is on this machine.
. "$(dirname "$0")/../lib/test-lib.sh"

require_testbox "service container" run cancel sweep

J=$$
SVC="$TEST_DIR/svc"
export JOB_IMAGE=localhost/trainyard/testbox:1

trainyardd_start svc --runtime container
DPID=$TYD_PID
BASE=$TYD_URL

submit() { # submit JOB_ID SCRIPT [WORKERS]
  write_job "$1.ti" "$2" "${3:-0}" &&
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["jobId"]=sys.argv[2]; print(json.dumps(d))' "$1.ti" "$1" |
    curl -s -o "$1.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary @- "$BASE/v1/projects/p/jobs" | grep -q 200
}
state_is() {
  [ "$(curl -s "$BASE/v1/projects/p/jobs/$1" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin).get("state"))')" = "$2" ]
}
leftovers() {
  podman ps -a --filter "label=trainyard.job=$1" --format '{{.Names}}'
  podman network ls --filter "label=trainyard.job=$1" --format '{{.Name}}'
}
running_at_least() {
  [ "$(podman ps -q --filter "label=trainyard.job=$1" | wc -l)" -ge "$2" ]
}

# The master waits 3 s before it ends the job: the end of the master stops the worker at
# once (the engine's exit is known at once), which may not have printed its line yet.
test_expect_success 'service container: a job runs to SUCCEEDED with its logs' '
  submit run_$J "echo in-container-\$(hostname); case \$(hostname) in *master*) sleep 3;; esac" 1 &&
  wait_for 120 state_is run_$J SUCCEEDED &&
  curl -s "$BASE/v1/projects/p/jobs/run_$J/logs" >logs.json &&
  grep -q "in-container-cmle-training-master" logs.json &&
  grep -q "in-container-cmle-training-worker" logs.json &&
  test -z "$(leftovers run_$J)"
'

test_expect_success 'service container: cancel leaves no container or network' '
  submit cancel_$J "exec sleep 600" 1 &&
  wait_for 120 state_is cancel_$J RUNNING &&
  curl -s -X POST "$BASE/v1/projects/p/jobs/cancel_$J:cancel" | grep -q "{}" &&
  wait_for 60 state_is cancel_$J CANCELLED &&
  test -z "$(leftovers cancel_$J)"
'

test_expect_success 'service container: a killed supervisor: its containers are swept, the job runs again as attempt 2' '
  submit sweep_$J "exec sleep 600" 1 &&
  wait_for 120 state_is sweep_$J RUNNING &&
  wait_for 30 running_at_least sweep_$J 2 &&
  old=$(podman ps -q --no-trunc --filter "label=trainyard.job=sweep_$J" | tr "\n" " ") &&
  spid=$(pgrep -f "supervise-job $SVC" | head -1) && test -n "$spid" &&
  kill -KILL "$spid" &&
  old_gone() { for c in $old; do ! podman container exists "$c" || return 1; done; } &&
  wait_for 60 old_gone &&
  wait_for 120 running_at_least sweep_$J 2 &&
  state_is sweep_$J RUNNING &&
  curl -s "$BASE/v1/projects/p/jobs/sweep_$J" >sweep.json &&
  test "$(json_get sweep.json "d[\"attemptStatus\"][\"attempt\"]")" = 2 &&
  test "$(json_get sweep.json "d[\"attemptStatus\"][\"internalRetries\"]")" = 1 &&
  curl -s -X POST "$BASE/v1/projects/p/jobs/sweep_$J:cancel" | grep -q "{}" &&
  wait_for 60 state_is sweep_$J CANCELLED &&
  wait_for 60 sh -c "test -z \"\$(podman ps -a --filter label=trainyard.job=sweep_$J -q; podman network ls --filter label=trainyard.job=sweep_$J -q)\""
'

kill -TERM "$DPID"; wait "$DPID"
test_done
