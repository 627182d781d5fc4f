#!/bin/sh
# t5100-service-scheduler: trainyardd's scheduler end to end with stand-in GPUs and process
# jobs that wait for a file (nothing depends on timing): a GPU job waits while another holds
# the GPUs, with its stateReason and jobPosition, and starts when they are free (its replica
# sees CUDA_VISIBLE_DEVICES); priority overtakes creation order; a project at its limit waits
# while another project's job runs; a job that can never fit is refused with 400; maxWaitTime
# cancels a queued job; a restart of trainyardd keeps what running jobs hold; the head's
# reservation counts from the RUNNING start of the job before it, and backfill counts PREPARING.
. "$(dirname "$0")/../lib/test-lib.sh"

TRAINYARDD="$TY_BUILD_DIR/bin/trainyardd"
if [ ! -x "$TRAINYARDD" ]; then
  echo "1..0 # SKIP trainyardd is not built ($TRAINYARDD)"
  rm -rf "$TEST_DIR"
  exit 0
fi

GO="$TEST_DIR/go"
SVC="$TEST_DIR/svc"
mkdir -p "$GO"
unset TRAINYARD_CONFIG TRAINYARD_PROJECT TRAINYARD_ACCESS_TOKEN TRAINYARD_API_ENDPOINT
export XDG_CONFIG_HOME="$TEST_DIR/xdg"

# 16 vCPUs (memory not counted) and two stand-in T4s; project plim may hold one running job
# and one GPU; maxWaitTime may be as short as 1 s.
start_daemon() {
  trainyardd_start "$1" --state-dir "$SVC" --capacity cpus=16,gpus=NVIDIA_TESLA_T4:2 \
    --gpu-devices=stand-in --shortest-max-wait-time=1 \
    --project-limit=plim:jobs=1,gpus=NVIDIA_TESLA_T4:1 && BASE=$TYD_URL && DPID=$TYD_PID
}
# api METHOD PATH [BODY_FILE]: body to out.json, prints the HTTP status
api() {
  if [ -n "${3:-}" ]; then
    curl -s -o out.json -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' --data-binary "@$3" "$BASE$2"
  else
    curl -s -o out.json -w '%{http_code}' -X "$1" "$BASE$2"
  fi
}
# create PROJECT JOB [GPUS] [MACHINE] [SCHEDULING_JSON]: a process job whose master writes its
# environment to $GO/JOB.env, then waits until $GO/JOB exists; prints the HTTP status.
create() {
  "$PYTHON" - "$2" "$GO" "${3:-0}" "${4:-n1-standard-4}" "${5:-}" >"$2.json" <<'PY'
import json, sys
job, go, gpus, machine, sched = sys.argv[1:]
script = "env > %s/%s.env; while [ ! -e %s/%s ]; do sleep 0.1; done" % (go, job, go, job)
master = {"imageUri": "example.com/test:1", "containerCommand": ["sh", "-c", script]}
if int(gpus):
    master["acceleratorConfig"] = {"count": gpus, "type": "NVIDIA_TESLA_T4"}
ti = {"scaleTier": "CUSTOM", "masterType": machine, "masterConfig": master}
if sched:
    ti["scheduling"] = json.loads(sched)
json.dump({"jobId": job, "trainingInput": ti}, sys.stdout)
PY
  api POST "/v1/projects/$1/jobs" "$2.json"
}
# field PROJECT JOB EXPR: EXPR of the job's resource (d)
field() {
  curl -s "$BASE/v1/projects/$1/jobs/$2" >"f-$2.json" && json_get "f-$2.json" "$3"
}
state_is() { [ "$(field "$1" "$2" 'd["state"]')" = "$3" ]; }
position() { field "$1" "$2" 'd.get("jobPosition")'; }
reason() { field "$1" "$2" 'd.get("stateReason", "")'; }
position_is() { [ "$(position "$1" "$2")" = "$3" ]; }
reason_has() { reason "$1" "$2" | grep -q "$3"; }
# A replica's CUDA_VISIBLE_DEVICES, once it wrote its environment.
cuda_of() { sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$GO/$1.env"; }

test_expect_success 'bad scheduling settings stop the start, naming the setting' '
  bad() { ! "$TRAINYARDD" --state-dir "$TEST_DIR/bad" --listen 127.0.0.1:0 "$@" >bad.out 2>&1; } &&
  bad --capacity gpus=NVIDIA_TESLA_X1:2 && grep -q "^trainyardd: --capacity: gpus: unknown GPU type .NVIDIA_TESLA_X1." bad.out &&
  bad --capacity jobs=2 && grep -q "^trainyardd: --capacity: jobs: not a key of this setting" bad.out &&
  bad --project-limit=vision && grep -q "^trainyardd: --project-limit: expected PROJECT:KEY=VALUE" bad.out &&
  bad "--project-limit=a b:jobs=1" && grep -q "^trainyardd: --project-limit: invalid project id .a b." bad.out &&
  bad --gpu-devices=amd && grep -q "^trainyardd: --gpu-devices: expected nvidia (the host.s NVIDIA devices) or stand-in" bad.out &&
  bad --shortest-max-wait-time=0 && grep -q "^trainyardd: --shortest-max-wait-time: expected seconds from 1" bad.out &&
  printf "# limits\nproject-limit = census:cpus=x\n" >bad.conf &&
  bad --config bad.conf && grep -q "^trainyardd: bad.conf:2: project-limit: cpus: expected a number" bad.out &&
  bad --gpu-devices=stand-in && grep -q "gpu-devices=stand-in: no GPUs declared" bad.out &&
  "$TRAINYARDD" --help | grep -q -- "--shortest-max-wait-time=SECONDS" &&
  if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
    bad --capacity gpus=NVIDIA_TESLA_T4:1 &&
    grep -q -- "--capacity: gpus=NVIDIA_TESLA_T4:1 declares 1 GPU device, and this host has 0" bad.out
  fi
'

start_daemon sched || { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR/sched.log"; exit 1; }

test_expect_success 'the capacity is logged at start-up' '
  grep -q "capacity: cpus=16,gpus=NVIDIA_TESLA_T4:2 (stand-in GPUs); not counted: running jobs, memory" sched.log &&
  grep -q "project limit: plim: jobs=1,gpus=NVIDIA_TESLA_T4:1" sched.log
'

test_expect_success 'a job that can never fit is refused with 400 naming the resource' '
  test "$(create p1 toobig 4)" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" >msg &&
  grep -q "needs 4 × NVIDIA_TESLA_T4 at once, and this service has 2 (--capacity cpus=16,gpus=NVIDIA_TESLA_T4:2)" msg &&
  test "$(create p1 toomanycpus 0 n1-standard-32)" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q "32 vCPUs" &&
  test "$(create plim overlimit 2)" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" >msg2 &&
  grep -q "project plim has 1 (--project-limit plim:jobs=1,gpus=NVIDIA_TESLA_T4:1)" msg2 &&
  test "$(create p1 shortwait 0 n1-standard-4 "{\"maxWaitTime\": \"0.5s\"}")" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q "maxWaitTime: must be at least 1s (got 0.5s)" &&
  test "$(api GET /v1/projects/p1/jobs)" = 200 && test "$(cat out.json)" = "{}"
'

test_expect_success 'a GPU job waits while another holds the GPUs, saying why' '
  test "$(create p1 g1 2)" = 200 &&
  wait_for 10 state_is p1 g1 RUNNING &&
  wait_for 10 test -s "$GO/g1.env" &&
  test "$(create p1 g2 2)" = 200 &&
  test "$(json_get out.json "d[\"state\"]")" = QUEUED &&
  wait_for 10 reason_has p1 g2 "Waiting for 2 × NVIDIA_TESLA_T4: 0 of 2 free" &&
  test "$(position p1 g2)" = 1 &&
  state_is p1 g2 QUEUED
'

test_expect_success 'priority overtakes creation order' '
  test "$(create p1 g3 2 n1-standard-4 "{\"priority\": 500}")" = 200 &&
  wait_for 10 position_is p1 g2 2 &&
  test "$(position p1 g3)" = 1 &&
  reason p1 g2 | grep -q "1 job ahead of it" &&
  touch "$GO/g1" &&
  wait_for 10 state_is p1 g1 SUCCEEDED &&
  wait_for 10 state_is p1 g3 RUNNING &&
  state_is p1 g2 QUEUED && test "$(position p1 g2)" = 1
'

test_expect_success 'maxWaitTime cancels a job still queued, saying so' '
  test "$(create p1 w1 2 n1-standard-4 "{\"maxWaitTime\": \"2s\"}")" = 200 &&
  wait_for 10 state_is p1 w1 CANCELLED &&
  test "$(field p1 w1 "d[\"errorMessage\"]")" = "Job cancelled: it did not start within its scheduling.maxWaitTime (2s)." &&
  test ! -e "$GO/w1.env" &&
  api GET /v1/projects/p1/jobs/w1/logs >/dev/null &&
  json_get out.json "[e for e in d[\"entries\"] if e[\"taskName\"]==\"service\" and \"maxWaitTime (2s)\" in e[\"message\"]][0]"
'

# service_lines PROJECT JOB: the messages of the job's service lines, one per line
service_lines() {
  api GET "/v1/projects/$1/jobs/$2/logs" >/dev/null &&
    json_get out.json "\"\\n\".join(e[\"message\"] for e in d[\"entries\"] if e[\"taskName\"] == \"service\")"
}
test_expect_success 'a queued job'"'"'s log says so from its creation; a cancel in the queue ends it' '
  test "$(create p1 qc 2)" = 200 || exit 1
  state_is p1 qc QUEUED &&
    printf "%s\n" "Validating job requirements..." \
      "Job creation request has been successfully validated." "Job qc is queued." >expect &&
    service_lines p1 qc >actual && diff -u expect actual
  queued_ok=$?
  test "$(api POST /v1/projects/p1/jobs/qc:cancel)" = 200 && test $queued_ok -eq 0 &&
  state_is p1 qc CANCELLED &&
  printf "%s\n" "Job cancellation requested." "Job cancelled." >>expect &&
  service_lines p1 qc >actual && diff -u expect actual &&
  test ! -e "$GO/qc.env"
'

test_expect_success 'a job directory a create cut short left is taken; an earlier job'"'"'s is not' '
  mkdir -p "$SVC/jobs/p1/cut/logs" && touch "$GO/cut" &&
  test "$(create p1 cut)" = 200 &&
  wait_for 10 state_is p1 cut SUCCEEDED &&
  service_lines p1 cut >cut-lines && test "$(grep -c "^Job cut is queued\.$" cut-lines)" = 1 &&
  mkdir -p "$SVC/jobs/p1/stale/logs" && echo old >"$SVC/jobs/p1/stale/logs/service.log" &&
  touch "$GO/stale" &&
  test "$(create p1 stale)" = 200 &&
  wait_for 10 state_is p1 stale FAILED &&
  field p1 stale "d[\"errorMessage\"]" | grep -q "job .stale. already exists"
'

test_expect_success 'a project at its limit waits while another project runs' '
  test "$(create plim l1)" = 200 &&
  wait_for 10 state_is plim l1 RUNNING &&
  test "$(create plim l2)" = 200 &&
  test "$(create p2 o1)" = 200 &&
  wait_for 10 state_is p2 o1 RUNNING &&
  state_is plim l2 QUEUED &&
  wait_for 10 reason_has plim l2 "Project plim is at its limit" &&
  TRAINYARD_API_ENDPOINT=$BASE TRAINYARD_PROJECT=plim "$TRAINYARD" jobs list \
    --format "table(jobId,state,jobPosition,stateReason)" >list.out &&
  grep -q "^JOB_ID  *STATE  *JOB_POSITION  *STATE_REASON" list.out &&
  grep -q "^l2  *QUEUED  *[0-9]  *Project plim is at its limit" list.out &&
  TRAINYARD_API_ENDPOINT=$BASE TRAINYARD_PROJECT=plim "$TRAINYARD" jobs list \
    --format "value(jobId,state)" >value.out &&
  grep -q "^l2$(printf "\t")QUEUED\$" value.out && grep -q "^l1$(printf "\t")RUNNING\$" value.out &&
  TRAINYARD_API_ENDPOINT=$BASE TRAINYARD_PROJECT=plim "$TRAINYARD" jobs describe l2 --summarize >desc.out &&
  grep -q "STATE_REASON" desc.out && grep -q "Project plim is at its limit" desc.out &&
  touch "$GO/l1" "$GO/o1" &&
  wait_for 10 state_is plim l2 RUNNING &&
  touch "$GO/l2" && wait_for 10 state_is plim l2 SUCCEEDED
'

test_expect_success 'a job started when the GPUs are free sees its devices' '
  touch "$GO/g3" &&
  wait_for 10 state_is p1 g2 RUNNING &&
  wait_for 10 test -s "$GO/g2.env" &&
  test "$(cuda_of g2)" = "0,1" &&
  test "$(cuda_of o1)" = "" &&
  service_lines p1 g2 >g2-lines && test "$(grep -c "^Job g2 is queued\.$" g2-lines)" = 1 &&
  test "$(grep -c "^Validating job requirements" g2-lines)" = 1 &&
  test "$(sed -n 3p g2-lines)" = "Job g2 is queued." &&
  sed -n 4p g2-lines | grep -q "^Admitted after"
'

# A restart while g2 runs: what it holds (2 GPUs, 4 of the 16 vCPUs) stays counted, so a job
# that needs all 16 vCPUs waits for it.
kill -TERM "$DPID"; wait "$DPID"; rc1=$?
start_daemon sched2 || { echo "Bail out! trainyardd did not restart"; cat "$TEST_DIR/sched2.log"; exit 1; }

test_expect_success 'a restart keeps what running jobs hold' '
  state_is p1 g2 RUNNING &&
  test "$(create p1 big 0 n1-standard-16)" = 200 &&
  test "$(create p1 g4 1)" = 200 &&
  wait_for 10 reason_has p1 big "Waiting for 16 vCPUs: 12 of 16 free" &&
  reason p1 g4 | grep -q "NVIDIA_TESLA_T4" &&
  state_is p1 big QUEUED && state_is p1 g4 QUEUED &&
  ! grep -q "held by another process" sched2.log &&
  touch "$GO/g2" &&
  wait_for 10 state_is p1 big RUNNING &&
  touch "$GO/big" "$GO/g4" &&
  wait_for 10 state_is p1 g4 SUCCEEDED && wait_for 10 state_is p1 big SUCCEEDED
'
test_expect_success 'a job without GPUs has its admission line too' '
  curl -s "$BASE/v1/projects/p1/jobs/big/logs" >big-logs.json &&
  grep -q "Admitted after [0-9.]* s in the queue: 16 vCPUs and 60.0 GiB of memory.\"" big-logs.json
'

# A job whose supervisor is lost while trainyardd is down, and whose GPU another process takes
# meanwhile: its next attempt waits for the device, and its log says so.
test_expect_success 'a lost job'"'"'s next attempt waits for its GPU held outside, saying so' '
  rm -f "$GO/rl.env" &&
  test "$(create p1 rl 2)" = 200 &&
  wait_for 10 test -s "$GO/rl.env" &&
  spid=$(pgrep -f "supervise-job .*$SVC" | head -1) && test -n "$spid" &&
  kill -KILL "$DPID" && { wait "$DPID" || true; } &&
  kill -KILL "$spid" &&
  wait_for 10 sh -c "! kill -0 $spid 2>/dev/null" &&
  { "$PYTHON" -c "import fcntl, sys, time; f = open(sys.argv[1], \"a\"); fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); time.sleep(60)" \
      "$SVC/stand-in-gpus/gpu-0.lock" & echo $! >holder.pid; } &&
  sleep 0.5 && kill -0 "$(cat holder.pid)"
'
start_daemon sched3 || { echo "Bail out! trainyardd did not restart"; cat "$TEST_DIR/sched3.log"; exit 1; }
test_expect_success 'its log says what it waits for; it runs once the device is free' '
  wait_for 30 grep -q "p1/rl: a GPU device it holds is held by another process" sched3.log &&
  rl_log_says() { curl -s "$BASE/v1/projects/p1/jobs/rl/logs" | grep -q "$1"; } &&
  wait_for 10 rl_log_says "its next attempt waits for GPU device 0, which it held and another process" &&
  rm -f "$GO/rl.env" &&
  kill "$(cat holder.pid)" &&
  wait_for 30 test -s "$GO/rl.env" &&
  test "$(cuda_of rl)" = "0,1" &&
  touch "$GO/rl" &&
  wait_for 20 state_is p1 rl SUCCEEDED &&
  test "$(field p1 rl "d[\"attemptStatus\"][\"attempt\"]")" = 2
'

kill -TERM "$DPID"; wait "$DPID"; rc2=$?
test_expect_success 'SIGTERM stops both daemons with status 0' "test $rc1 -eq 0 && test $rc2 -eq 0"

# maxRunningTime counts from RUNNING (ml v1): the head's reservation counts from when the job
# before it entered RUNNING, once the service has read that from the store, and a job goes
# ahead of the head only if its PREPARING allowance (a process job: 60 s) and its own
# maxRunningTime end by then. pa (4 of 8 vCPUs) runs for at most 3600 s from RUNNING; pb needs
# all 8: the head, its reservation pa's RUNNING start + 3600 s; pc (4 vCPUs, 3565 s) would end
# by then only if the 60 s pa may take to start were still counted (it started at once): it
# waits behind pb; pd (3480 s) goes ahead.
SVC=$TEST_DIR/prep
trainyardd_start prep --state-dir "$SVC" --capacity cpus=8 && BASE=$TYD_URL && DPID=$TYD_PID ||
  { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR/prep.log"; exit 1; }
test_expect_success 'the head waits for the RUNNING start of the job before it; backfill counts PREPARING' '
  test "$(create p1 pa 0 n1-standard-4 "{\"maxRunningTime\": \"3600s\"}")" = 200 &&
  wait_for 10 state_is p1 pa RUNNING && sleep 1.2 &&
  test "$(create p1 pb 0 n1-standard-8 "{\"maxRunningTime\": \"3600s\"}")" = 200 &&
  wait_for 10 reason_has p1 pb "Waiting for 8 vCPUs: 4 of 8 free" &&
  test "$(create p1 pc 0 n1-standard-4 "{\"maxRunningTime\": \"3565s\"}")" = 200 &&
  wait_for 10 reason_has p1 pc "Waiting behind job pb" &&
  test "$(create p1 pd 0 n1-standard-4 "{\"maxRunningTime\": \"3480s\"}")" = 200 &&
  wait_for 10 state_is p1 pd RUNNING && state_is p1 pc QUEUED
'
# The service writes a job's opening lines at its create; when it could not (a full disk, or
# killed first), the job's supervisor writes them (here: the file emptied while it waits).
test_expect_success 'a job whose opening lines are missing gets them from its supervisor' '
  touch "$GO/lw" && test "$(create p1 lw)" = 200 && state_is p1 lw QUEUED &&
  : >"$SVC/jobs/p1/lw/logs/service.log" &&
  for j in pa pb pc pd; do api POST "/v1/projects/p1/jobs/$j:cancel" /dev/null >/dev/null; done &&
  wait_for 20 state_is p1 lw SUCCEEDED &&
  service_lines p1 lw >lw-lines && test "$(grep -c "^Job lw is queued\.$" lw-lines)" = 1 &&
  head -1 lw-lines | grep -q "^Validating job requirements"
'
# Two creates of one id at once: the store takes one; neither may undo the other'"'"'s job
# directory, nor its supervisor fail on it ("already exists").
test_expect_success 'two creates of one id at once: one stored, and it runs with its opening lines' '
  "$PYTHON" - "$GO" <<-\PY &&
	import json, sys
	for i in range(1, 21):
	    body = {"jobId": "dup%d" % i, "trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
	            "masterConfig": {"imageUri": "example.com/test:1", "containerCommand": ["true"]}}}
	    json.dump(body, open("dup%d.json" % i, "w"))
	PY
  for i in $(seq 20); do
    for k in 1 2; do
      curl -s -o /dev/null -w "%{http_code}\n" -X POST -H "Content-Type: application/json" \
        --data-binary "@dup$i.json" "$BASE/v1/projects/p1/jobs" >>codes &
    done
    wait
  done &&
  test "$(grep -c "^200$" codes)" = 20 && test "$(grep -c "^409$" codes)" = 20 &&
  all_done() { for i in $(seq 20); do state_is p1 dup$i SUCCEEDED || return 1; done; } &&
  wait_for 60 all_done &&
  for i in $(seq 20); do
    { service_lines p1 dup$i >dl && test "$(grep -c "^Job dup$i is queued\.$" dl)" = 1; } || exit 1
  done
'
(
  cd "$TEST_DIR" || exit 1
  for j in pa pb pc pd; do api POST "/v1/projects/p1/jobs/$j:cancel" /dev/null >/dev/null; done
  wait_for 20 state_is p1 pa CANCELLED
)
kill -TERM "$DPID"; wait "$DPID"
test_done
