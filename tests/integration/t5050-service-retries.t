#!/bin/sh
# t5050-service-retries: restarts and retries in the service (process runtime), end to end:
# a job supervisor killed with SIGKILL is AI Platform's internal error -- its replicas are swept
# and the job runs again as the next attempt, twice at most, then FAILS with "Internal error
# occurred for the current attempt."; a supervisor killed after it recorded the job's outcome
# is not retried; one killed while trainyardd is down is retried by the next trainyardd; a
# SIGTERM from outside (not jobs.cancel) is a loss like any other, not a cancel; with
# scheduling.disableRetries the first loss fails the job; a worker killed from outside is
# restarted in place. Each is checked where users see it: the
# job resource (attemptStatus, also through Google's client), the logs API (labels.attempt),
# `jobs describe` and `jobs stream-logs`.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID
SVC="$TEST_DIR/svc"
# A long grace period: a supervisor is killed while it waits for a replica to stop (test 4).
trainyardd_start svc --grace-period 30 || { echo "Bail out! trainyardd did not start"; exit 1; }
DPID=$TYD_PID
BASE=$TYD_URL
trap 'kill -TERM "$DPID" 2>/dev/null' EXIT
export TRAINYARD_API_ENDPOINT="$BASE" TRAINYARD_PROJECT=p1

# restart_daemon NAME: start trainyardd again on the same state (the old log kept as
# svc-NAME.log: trainyardd_start reads the port from the log)
restart_daemon() {
  mv "$TEST_DIR/svc.log" "$TEST_DIR/svc-$1.log"
  trainyardd_start svc --grace-period 30 || { echo "Bail out! trainyardd did not restart"; exit 1; }
  DPID=$TYD_PID
  BASE=$TYD_URL
  export TRAINYARD_API_ENDPOINT="$BASE"
}
# api METHOD PATH [BODY_FILE]: body to out.json, prints the HTTP status
api() {
  if [ -n "${3:-}" ]; then
    curl -s -o out.json -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' --data-binary "@$3" "$BASE$2"
  else
    curl -s -o out.json -w '%{http_code}' -X "$1" "$BASE$2"
  fi
}
# get JOB: the job resource to JOB.json
get() { curl -s -o "$1.json" "$BASE/v1/projects/p1/jobs/$1"; }
state_is() { get "$1" && [ "$(json_get "$1.json" 'd.get("state")')" = "$2" ]; }
# recorded_running JOB ATTEMPT: the job's attemptStatus is of ATTEMPT with a replica RUNNING
recorded_running() {
  get "$1" && [ "$(json_get "$1.json" 'd.get("attemptStatus", {}).get("attempt") == '"$2"' and any(r["state"] == "RUNNING" for r in d["attemptStatus"].get("replicas", []))')" = True ]
}
# logs JOB: every log entry of JOB to JOB.logs.json
logs() { curl -s -o "$1.logs.json" "$BASE/v1/projects/p1/jobs/$1/logs?pageSize=1000"; }
# submit JOB SCRIPT [WORKERS [EXTRA_TRAINING_INPUT_JSON]]: a job whose replicas run `sh -c SCRIPT`
submit() {
  write_job "$1.ti" "$2" "${3:-0}" 0 0 "${4:-}" &&
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["jobId"]=sys.argv[2]; json.dump(d, open(sys.argv[3],"w"))' "$1.ti" "$1" "$1.body" &&
  test "$(api POST /v1/projects/p1/jobs "$1.body")" = 200
}
# The pid of the one supervisor running (the tests run one job at a time), other than $1; its
# options (--grant=JSON for a study) come before the state directory.
sup_pid() { pgrep -f "supervise-job (--[^ ]+ )*$SVC " | grep -v -x -e "${1:-none}" | head -1; }
new_sup() { test -n "$(sup_pid "$1")"; }
# entries JOB PYTHON_COND: the messages of JOB's log entries e for which COND holds
entries() {
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1]))
for e in d.get("entries", []):
    if eval(sys.argv[2]): print(e["message"])' "$1.logs.json" "$2"
}

test_expect_success 'a killed job supervisor: the job is retried as attempt 2, which succeeds' '
  submit killed "if [ -e $TEST_DIR/killed.once ]; then echo second-run-$M; exit 0; fi; : >$TEST_DIR/killed.once; echo first-run-$M; exec sleep 913.$M" &&
  wait_for 30 state_is killed RUNNING &&
  wait_for 10 procs_at_least "sleep 913.$M" 1 &&
  spid=$(sup_pid) && test -n "$spid" && echo "supervisor $spid" &&
  kill -KILL "$spid" &&
  wait_for 30 state_is killed SUCCEEDED &&
  test "$(json_get killed.json "d[\"attemptStatus\"][\"attempt\"]")" = 2 &&
  test "$(json_get killed.json "d[\"attemptStatus\"][\"internalRetries\"]")" = 1 &&
  test "$(json_get killed.json "d[\"attemptStatus\"][\"replicaRestarts\"]")" = "{'"'"'master-replica-0'"'"': 0}" &&
  json_get killed.json "\"errorMessage\" not in d" | grep -q True &&
  no_procs "sleep 913.$M" &&
  ! pgrep -f "supervise-job (--[^ ]+ )*$SVC " >/dev/null
'

test_expect_success 'its log: the service line names the internal retry; entries carry their attempt' '
  logs killed &&
  entries killed "e[\"taskName\"]==\"service\" and \"Internal error\" in e[\"message\"]" >svc.txt &&
  cat svc.txt &&
  test "$(wc -l <svc.txt)" -eq 1 &&
  grep -q "the job.s supervisor (process [0-9]*) was killed by signal 9" svc.txt &&
  grep -q "Retrying the job as attempt 2 (internal retry 1 of 2)." svc.txt &&
  test "$(entries killed "e[\"message\"]==\"Validating job requirements...\"" | wc -l)" -eq 1 &&
  test "$(entries killed "e[\"message\"]==\"Job killed is queued.\"" | wc -l)" -eq 1 &&
  test "$(entries killed "e[\"message\"]==\"first-run-$M\" and \"labels\" not in e")" = "first-run-$M" &&
  test "$(entries killed "e[\"message\"]==\"second-run-$M\" and e[\"labels\"]==dict(attempt=\"2\")")" = "second-run-$M" &&
  test -n "$(entries killed "e[\"message\"]==\"Job completed successfully.\" and e.get(\"labels\",{}).get(\"attempt\")==\"2\"")" &&
  grep -q "^[^ ]* INFO@2 second-run-$M\$" "$SVC/jobs/p1/killed/logs/master-replica-0.log" &&
  grep -q "^[^ ]* INFO first-run-$M\$" "$SVC/jobs/p1/killed/logs/master-replica-0.log"
'

test_expect_success 'stream-logs marks the second attempt, leaves the first as it was; describe shows it' '
  trainyard jobs stream-logs killed >stream.txt &&
  grep -q "	master-replica-0		first-run-$M\$" stream.txt &&
  grep -q "	master-replica-0		\[attempt 2\] second-run-$M\$" stream.txt &&
  grep -q "	service		Validating job requirements" stream.txt &&
  grep -q "	service		\[attempt 2\] Job completed successfully.\$" stream.txt &&
  trainyard jobs describe killed >describe.yaml 2>/dev/null &&
  grep -q "^  internalRetries: 1\$" describe.yaml &&
  grep -q "^  attempt: 2\$" describe.yaml &&
  trainyard jobs describe killed --summarize >summary.txt 2>/dev/null &&
  grep -q "Attempt Status" summary.txt &&
  grep "INTERNAL_RETRIES" summary.txt
'

test_expect_success 'a supervisor killed three times: the job FAILS with the internal error' '
  submit thrice "echo run-$M; exec sleep 914.$M" &&
  wait_for 30 state_is thrice RUNNING &&
  prev=none && n=0 &&
  while [ $n -lt 3 ]; do
    wait_for 20 new_sup "$prev" || { echo "no new supervisor after kill $n"; exit 1; }
    spid=$(sup_pid "$prev") &&
    wait_for 20 procs_at_least "sleep 914.$M" 1 &&
    wait_for 10 recorded_running thrice $((n + 1)) &&
    echo "killing supervisor $spid" && kill -KILL "$spid" && prev=$spid && n=$((n + 1)) &&
    wait_for 10 sh -c "! kill -0 $spid"
  done &&
  wait_for 30 state_is thrice FAILED &&
  test "$(json_get thrice.json "d[\"errorMessage\"]")" = "Internal error occurred for the current attempt." &&
  test "$(json_get thrice.json "d[\"attemptStatus\"][\"internalRetries\"]")" = 2 &&
  test "$(json_get thrice.json "d[\"attemptStatus\"][\"attempt\"]")" = 3 &&
  test "$(json_get thrice.json "sorted(set(r[\"state\"] for r in d[\"attemptStatus\"][\"replicas\"]))")" = "['\''STOPPED'\'']" &&
  wait_for 10 no_procs "sleep 914.$M" &&
  logs thrice &&
  test "$(entries thrice "e[\"message\"]==\"run-$M\"" | wc -l)" -eq 3 &&
  test "$(entries thrice "e[\"message\"]==\"run-$M\" and e.get(\"labels\",{}).get(\"attempt\")==\"3\"")" = "run-$M" &&
  entries thrice "e[\"taskName\"]==\"service\"" >svc.txt &&
  grep -q "Retrying the job as attempt 2 (internal retry 1 of 2)." svc.txt &&
  test "$(entries thrice "e[\"message\"]==\"Validating job requirements...\"" | wc -l)" -eq 1 &&
  test "$(entries thrice "e[\"message\"]==\"Job thrice is queued.\"" | wc -l)" -eq 1 &&
  grep -q "Retrying the job as attempt 3 (internal retry 2 of 2)." svc.txt &&
  grep -q "Not retrying the job: its 2 internal retries were made." svc.txt &&
  grep -q "^Job failed: Internal error occurred for the current attempt.\$" svc.txt &&
  ! pgrep -f "supervise-job (--[^ ]+ )*$SVC " >/dev/null
'

test_expect_success 'a SIGTERM from outside trainyard (not jobs.cancel) is an internal error: the job runs again' '
  submit outside "if [ -e $TEST_DIR/outside.once ]; then echo second-run-$M; exit 0; fi; : >$TEST_DIR/outside.once; exec sleep 918.$M" &&
  wait_for 30 state_is outside RUNNING &&
  wait_for 10 procs_at_least "sleep 918.$M" 1 &&
  spid=$(sup_pid) && test -n "$spid" &&
  kill -TERM "$spid" &&
  wait_for 30 state_is outside SUCCEEDED &&
  test "$(json_get outside.json "d[\"attemptStatus\"][\"internalRetries\"]")" = 1 &&
  logs outside &&
  entries outside "e[\"taskName\"]==\"service\" and \"Internal error\" in e[\"message\"]" >svc.txt &&
  grep -q "the job.s supervisor (process $spid) was killed by signal 15" svc.txt &&
  test "$(entries outside "\"cancel\" in e[\"message\"]" | wc -l)" -eq 0 &&
  grep -q "SIGTERM from outside trainyard while the job is RUNNING (not jobs.cancel)" "$SVC/trainyardd.log" &&
  no_procs "sleep 918.$M"
'

test_expect_success 'with scheduling.disableRetries a lost supervisor fails the job: nothing runs twice' '
  submit noretry "echo run-$M; exec sleep 917.$M" 0 "{\"scheduling\": {\"disableRetries\": true}}" &&
  wait_for 30 state_is noretry RUNNING &&
  wait_for 10 procs_at_least "sleep 917.$M" 1 &&
  spid=$(sup_pid) && test -n "$spid" &&
  kill -KILL "$spid" &&
  wait_for 30 state_is noretry FAILED &&
  test "$(json_get noretry.json "d[\"errorMessage\"]")" = "Internal error occurred for the current attempt." &&
  test "$(json_get noretry.json "d[\"attemptStatus\"].get(\"internalRetries\", 0)")" = 0 &&
  logs noretry &&
  test "$(entries noretry "e[\"message\"]==\"run-$M\"" | wc -l)" -eq 1 &&
  entries noretry "e[\"taskName\"]==\"service\"" >svc.txt &&
  grep -q "Not retrying the job: retries are disabled (scheduling.disableRetries)." svc.txt &&
  wait_for 10 no_procs "sleep 917.$M" &&
  ! pgrep -f "supervise-job (--[^ ]+ )*$SVC " >/dev/null
'

cat >"$TEST_DIR/restart-$M.sh" <<EOF
case "\$CLUSTER_SPEC" in
*'"type":"worker"'*)
  if [ ! -e "$TEST_DIR/restart.once" ]; then : >"$TEST_DIR/restart.once"; echo worker-dies; kill -9 \$\$; fi
  echo worker-back; exec sleep 915.$M ;;
*)
  echo master-waits
  while [ ! -e "$TEST_DIR/restart.once" ]; do sleep 0.1; done
  sleep 2; echo master-done ;;
esac
EOF
test_expect_success 'a worker killed from outside once is restarted in place; the job SUCCEEDS' '
  submit restart ". $TEST_DIR/restart-$M.sh" 1 &&
  wait_for 30 state_is restart SUCCEEDED &&
  test "$(json_get restart.json "d[\"attemptStatus\"][\"replicaRestarts\"][\"worker-replica-0\"]")" = 1 &&
  test "$(json_get restart.json "d[\"attemptStatus\"][\"replicaRestarts\"][\"master-replica-0\"]")" = 0 &&
  test "$(json_get restart.json "[r.get(\"lastRestart\") for r in d[\"attemptStatus\"][\"replicas\"]]")" = "[None, '"'"'The replica worker 0 was terminated by signal 9 (SIGKILL).'"'"']" &&
  test "$(json_get restart.json "d[\"attemptStatus\"][\"attempt\"]")" = 1 &&
  json_get restart.json "\"internalRetries\" not in d[\"attemptStatus\"]" | grep -q True &&
  wait_for 10 no_procs "sleep 915.$M"
'

test_expect_success 'describe and stream-logs show the restart' '
  trainyard jobs describe restart >describe.yaml 2>/dev/null &&
  grep -q "^    worker-replica-0: 1\$" describe.yaml &&
  trainyard jobs describe restart --summarize >summary.txt 2>/dev/null &&
  grep -q "master-replica-0=0, worker-replica-0=1" summary.txt &&
  trainyard jobs stream-logs restart >stream.txt &&
  grep -q "	service		The replica worker 0 was killed by signal 9 (SIGKILL) from outside trainyard; restarting it (restart 1 of 5).\$" stream.txt &&
  grep -q "	worker-replica-0		worker-back\$" stream.txt &&
  ! grep -q "\[attempt" stream.txt
'

cat >"$TEST_DIR/outcome-$M.sh" <<EOF
case "\$CLUSTER_SPEC" in
*'"type":"worker"'*)
  trap "" TERM; echo worker-stays
  while :; do sleep 0.2; done ;;
*)
  sleep 1; echo master-done; exit 0 ;;
esac
EOF
test_expect_success 'a supervisor killed after it recorded the outcome: not retried, the job SUCCEEDS' '
  submit outcome ". $TEST_DIR/outcome-$M.sh" 1 &&
  tearing() { logs outcome && test -n "$(entries outcome "e[\"message\"]==\"Tearing down training program.\"")"; } &&
  wait_for 30 tearing &&
  procs_at_least "outcome-$M.sh" 1 &&
  get outcome && test "$(json_get outcome.json "d[\"state\"]")" = RUNNING &&
  spid=$(sup_pid) && test -n "$spid" && kill -KILL "$spid" &&
  wait_for 10 state_is outcome SUCCEEDED &&
  json_get outcome.json "\"internalRetries\" not in d[\"attemptStatus\"]" | grep -q True &&
  test "$(json_get outcome.json "d[\"attemptStatus\"][\"attempt\"]")" = 1 &&
  wait_for 10 no_procs "outcome-$M.sh" &&
  sleep 1 && ! pgrep -f "supervise-job (--[^ ]+ )*$SVC " >/dev/null &&
  logs outcome &&
  entries outcome "e[\"taskName\"]==\"service\"" >svc.txt && cat svc.txt &&
  grep -q "^After the job.s outcome was recorded, the job.s supervisor (process $spid) was killed by signal 9" svc.txt &&
  grep -q "^Job completed successfully.\$" svc.txt &&
  ! grep -q "Retrying the job" svc.txt &&
  test -z "$(entries outcome "\"labels\" in e")"
'

cat >"$TEST_DIR/tune-$M.sh" <<EOF
echo trial-\$CLOUD_ML_TRIAL_ID
sleep 1.$M
printf '{"acc": 0.5, "global_step": 1}\\n' >"\$CLOUD_ML_HP_METRIC_FILE"
EOF
cat >"$TEST_DIR/tune-hp.json" <<EOF
{"hyperparameters": {"goal": "MAXIMIZE", "hyperparameterMetricTag": "acc", "maxTrials": 2,
 "maxParallelTrials": 1, "algorithm": "RANDOM_SEARCH",
 "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}}
EOF
test_expect_success 'a tuning job whose supervisor is killed runs its study again, numbered after the lost trials, and SUCCEEDS' '
  submit tune ". $TEST_DIR/tune-$M.sh" 0 "$(cat "$TEST_DIR/tune-hp.json")" &&
  wait_for 30 procs_at_least "sleep 1.$M" 1 &&
  spid=$(sup_pid) && test -n "$spid" && kill -KILL "$spid" &&
  wait_for 60 state_is tune SUCCEEDED &&
  test "$(json_get tune.json "d[\"attemptStatus\"]")" = "{'"'"'internalRetries'"'"': 1}" &&
  test "$(json_get tune.json "d[\"trainingOutput\"][\"completedTrialCount\"]")" = 2 &&
  test "$(json_get tune.json "[t[\"attemptStatus\"][\"attempt\"] for t in d[\"trainingOutput\"][\"trials\"]]")" = "[1, 1]" &&
  test "$(json_get tune.json "[t[\"trialId\"] for t in d[\"trainingOutput\"][\"trials\"]]")" = "['"'"'2'"'"', '"'"'3'"'"']" &&
  logs tune &&
  entries tune "e[\"taskName\"]==\"service\"" >svc.txt &&
  grep -q "Retrying the job (internal retry 1 of 2): its trials run anew.\$" svc.txt &&
  test "$(grep -c "^Trial 2 SUCCEEDED" svc.txt)" -eq 1 && test "$(grep -c "^Trial 3 SUCCEEDED" svc.txt)" -eq 1 &&
  grep -q "^Starting the job again after an internal error (internal retry 1): its trials run anew, numbered from 2.\$" svc.txt &&
  test "$(entries tune "e[\"message\"]==\"trial-1\"" | wc -l)" -eq 1 &&
  ! pgrep -f "supervise-job (--[^ ]+ )*$SVC " >/dev/null
'

# A supervisor that dies while trainyardd is down is found by the next trainyardd.
test_expect_success 'a job running when trainyardd is killed' '
  submit down "if [ -e $TEST_DIR/down.once ]; then echo again-$M; exit 0; fi; : >$TEST_DIR/down.once; exec sleep 916.$M" &&
  wait_for 30 state_is down RUNNING && wait_for 10 procs_at_least "sleep 916.$M" 1
'
kill -KILL "$DPID"; wait "$DPID" 2>/dev/null
spid=$(sup_pid)
test_expect_success 'its supervisor killed while no trainyardd runs' '
  test -n "$spid" && kill -KILL "$spid" && wait_for 10 sh -c "! kill -0 $spid"
'
restart_daemon first
test_expect_success 'the next trainyardd sweeps its replicas and retries the job: attempt 2 SUCCEEDS' '
  wait_for 30 state_is down SUCCEEDED &&
  test "$(json_get down.json "d[\"attemptStatus\"][\"internalRetries\"]")" = 1 &&
  test "$(json_get down.json "d[\"attemptStatus\"][\"attempt\"]")" = 2 &&
  no_procs "sleep 916.$M" &&
  logs down &&
  test "$(entries down "e[\"message\"]==\"again-$M\" and e[\"labels\"]==dict(attempt=\"2\")")" = "again-$M" &&
  entries down "e[\"taskName\"]==\"service\"" | grep -q "supervisor (process $spid) ended while trainyardd was not running before the job.s outcome was recorded"
'

test_expect_success 'a job with maxRunningTime 6s running when trainyardd is killed' '
  submit overdue "echo run-$M; exec sleep 919.$M" 0 "{\"scheduling\": {\"maxRunningTime\": \"6s\"}}" &&
  wait_for 30 state_is overdue RUNNING && wait_for 10 procs_at_least "sleep 919.$M" 1
'
kill -KILL "$DPID"; wait "$DPID" 2>/dev/null
spid=$(sup_pid)
test_expect_success 'its supervisor killed while no trainyardd runs; its time passes meanwhile' '
  test -n "$spid" && kill -KILL "$spid" && wait_for 10 sh -c "! kill -0 $spid" && sleep 6
'
restart_daemon second
test_expect_success 'the next trainyardd fails it for its maxRunningTime, launching nothing again' '
  wait_for 30 state_is overdue FAILED &&
  test "$(json_get overdue.json "d[\"errorMessage\"]")" = "The job exceeded its maximum running time (scheduling.maxRunningTime 6s)." &&
  logs overdue &&
  entries overdue "e[\"taskName\"]==\"service\"" >svc.txt &&
  grep -q "supervisor (process $spid) ended while trainyardd was not running before the job.s outcome was recorded" svc.txt &&
  test "$(entries overdue "e[\"message\"]==\"run-$M\"" | wc -l)" -eq 1 &&
  test "$(grep -c "Waiting for training program to start." svc.txt)" -eq 1 &&
  no_procs "sleep 919.$M"
'

test_expect_success "Google's API client reads jobs with attemptStatus" '
  if ! "$PYTHON" -c "import googleapiclient.discovery, httplib2" 2>/dev/null; then
    echo "googleapiclient is not installed: checked with plain JSON only"; exit 0
  fi
  "$PYTHON" - "$TY_SOURCE_DIR/tests/data/ml.v1.discovery.json" "$BASE" <<-PY
	import json, sys
	import httplib2
	from googleapiclient import discovery
	doc = json.load(open(sys.argv[1]))
	try:
	    ml = discovery.build_from_document(doc, http=httplib2.Http(),
	                                       client_options={"api_endpoint": sys.argv[2] + "/"})
	except TypeError:
	    doc["rootUrl"] = sys.argv[2] + "/"
	    ml = discovery.build_from_document(doc, http=httplib2.Http())
	jobs = ml.projects().jobs()
	got = jobs.get(name="projects/p1/jobs/killed").execute()
	assert got["state"] == "SUCCEEDED", got
	assert got["attemptStatus"]["attempt"] == 2 and got["attemptStatus"]["internalRetries"] == 1, got
	listed = jobs.list(parent="projects/p1", filter="jobId:restart").execute()["jobs"]
	assert listed[0]["attemptStatus"]["replicaRestarts"]["worker-replica-0"] == 1, listed
	PY
'

kill -TERM "$DPID"; wait "$DPID"
# After a failure, jobs may still run: their supervisors outlive the daemon. Stop them.
for p in $(pgrep -f "supervise-job (--[^ ]+ )*$SVC "); do kill -TERM "$p"; done
for p in $(pgrep -f "supervise-job (--[^ ]+ )*$SVC "); do kill -TERM "$p"; done # a second one kills at once
test_done
