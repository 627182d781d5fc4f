#!/bin/sh
# t5000-service: trainyardd's REST API end to end with curl: every projects.jobs method and
# the logs endpoint, every error form, jobs really run (process runtime), cancel, restart
# after kill -9 with running jobs re-attached, a supervisor killed (the job is run again),
# clean shutdown.
. "$(dirname "$0")/../lib/test-lib.sh"

TRAINYARDD="$TY_BUILD_DIR/bin/trainyardd"
M=$RUN_ID
SVC="$TEST_DIR/svc"

# start_daemon LOG_NAME [ARGS...]: a daemon on the shared state directory $SVC.
start_daemon() {
  name=$1; shift
  trainyardd_start "$name" --state-dir "$SVC" "$@" && DPID=$TYD_PID && BASE=$TYD_URL
}
stop_daemon() {
  kill -TERM "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null || true
}
# api METHOD PATH [BODY_FILE]: body to out.json, prints the HTTP status
api() {
  if [ -n "${3:-}" ]; then
    curl -s -o out.json -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' --data-binary "@$3" "$BASE$2"
  else
    curl -s -o out.json -w '%{http_code}' -X "$1" "$BASE$2"
  fi
}
state_of() {
  curl -s "$BASE/v1/projects/p1/jobs/$1" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin).get("state"))'
}
state_is() { [ "$(state_of "$1")" = "$2" ]; }
# job_body FILE JOB_ID MASTER_SH [WORKERS]
job_body() {
  write_job "$1.ti" "$3" "${4:-0}" &&
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["jobId"]=sys.argv[2]; json.dump(d, open(sys.argv[3],"w"))' "$1.ti" "$2" "$1"
}

# Daemons are started at the top level (tests run in subshells): BASE and DPID stay set.
start_daemon daemon
test_expect_success 'the daemon starts and answers /healthz' '
  test "$(api GET /healthz)" = 200 && grep -q ok out.json
'

test_expect_success 'HEAD is answered as GET without a body (not for a log); gzip has an ETag of its own' '
  curl -s -I -o head.txt -w "%{http_code} %{size_download}" "$BASE/healthz" >code &&
  test "$(cat code)" = "200 0" && grep -q "^Content-Length: 21" head.txt &&
  test "$(curl -s -I -o /dev/null -w "%{http_code}" "$BASE/")" = 200 &&
  test "$(curl -s -I -o /dev/null -w "%{http_code}" "$BASE/v1/projects/p1/jobs/nope")" = 404 &&
  curl -s -I -o head.txt -w "%{http_code}" "$BASE/v1/projects/p1/jobs/nope/logs" >code &&
  test "$(cat code)" = 405 && grep -q "^Allow: GET" head.txt &&
  curl -s -D plain.h -o /dev/null "$BASE/" && curl -s --compressed -D gz.h -o /dev/null "$BASE/" &&
  e1=$(sed -n "s/^ETag: //p" plain.h | tr -d "\r") && e2=$(sed -n "s/^ETag: //p" gz.h | tr -d "\r") &&
  test -n "$e1" && test "$e2" = "${e1%\"}-gz\"" &&
  test "$(curl -s --compressed -o /dev/null -w "%{http_code}" -H "If-None-Match: $e2" "$BASE/")" = 304 &&
  test "$(curl -s --compressed -o /dev/null -w "%{http_code}" -H "If-None-Match: $e1" "$BASE/")" = 200
'

test_expect_success 'create runs the job to SUCCEEDED; get shows its times' '
  job_body ok.json ok_job "echo hello-$M; echo to-stderr >&2; sleep 0.5" 1 &&
  test "$(api POST /v1/projects/p1/jobs ok.json)" = 200 &&
  test "$(json_get out.json "d[\"jobId\"]")" = ok_job &&
  test -n "$(json_get out.json "d[\"createTime\"]")" &&
  test -n "$(json_get out.json "d[\"etag\"]")" &&
  wait_for 30 state_is ok_job SUCCEEDED &&
  test "$(api GET /v1/projects/p1/jobs/ok_job)" = 200 &&
  json_get out.json "d[\"startTime\"] <= d[\"endTime\"]" | grep -q True &&
  test "$(json_get out.json "d[\"trainingInput\"][\"workerCount\"]")" = 1 &&
  json_get out.json "[t[\"state\"] for t in d[\"transitions\"]] == [\"QUEUED\", \"PREPARING\", \"RUNNING\", \"SUCCEEDED\"]" | grep -q True &&
  json_get out.json "d[\"transitions\"][0][\"time\"] == d[\"createTime\"] and d[\"transitions\"][-1][\"time\"] == d[\"endTime\"]" | grep -q True
'

test_expect_success 'replicas in attemptStatus: role, index, address, state, exit, restarts' '
  json_get out.json "[(r[\"taskName\"], r[\"role\"], r[\"index\"], r[\"state\"], r.get(\"exitCode\"), r[\"restarts\"]) for r in d[\"attemptStatus\"][\"replicas\"]][0] == (\"master-replica-0\", \"master\", 0, \"SUCCEEDED\", 0, 0)" | grep -q True &&
  json_get out.json "[(r[\"role\"], r[\"index\"], r[\"state\"] in (\"SUCCEEDED\", \"STOPPED\")) for r in d[\"attemptStatus\"][\"replicas\"]][1] == (\"worker\", 0, True)" | grep -q True &&
  json_get out.json "all(r[\"address\"].startswith(\"127.0.0.1:\") for r in d[\"attemptStatus\"][\"replicas\"])" | grep -q True
'

test_expect_success 'projects: every project with jobs, and its count (no tokens file)' '
  test "$(api GET /v1/projects)" = 200 &&
  test "$(json_get out.json "[(p[\"projectId\"], p[\"jobCount\"]) for p in d[\"projects\"]]")" = "[('"'"'p1'"'"', '"'"'1'"'"')]"
'

test_expect_success 'logs: stdout INFO, stderr ERROR, service messages, taskName filter' '
  test "$(api GET "/v1/projects/p1/jobs/ok_job/logs")" = 200 &&
  json_get out.json "[e for e in d[\"entries\"] if e[\"message\"]==\"hello-$M\" and e[\"taskName\"]==\"master-replica-0\" and e[\"severity\"]==\"INFO\"][0]" &&
  json_get out.json "[e for e in d[\"entries\"] if e[\"message\"]==\"to-stderr\" and e[\"severity\"]==\"ERROR\"][0]" &&
  json_get out.json "[e for e in d[\"entries\"] if e[\"taskName\"]==\"service\" and \"completed successfully\" in e[\"message\"]][0]" &&
  test "$(api GET "/v1/projects/p1/jobs/ok_job/logs?taskName=worker-replica-0")" = 200 &&
  test "$(json_get out.json "sorted(set(e[\"taskName\"] for e in d[\"entries\"]))")" = "[$(printf "%s" "'"'"'worker-replica-0'"'"'")]"
'

test_expect_success 'logs in pages: the token continues without gaps or repeats; the last says logComplete' '
  curl -s "$BASE/v1/projects/p1/jobs/ok_job/logs" >all.json &&
  total=$(json_get all.json "len(d[\"entries\"])") &&
  json_get all.json "d.get(\"logComplete\") is True and bool(d[\"nextPageToken\"])" | grep -q True &&
  tok="" && got=0 && i=0 &&
  while [ $i -lt 50 ]; do
    curl -s "$BASE/v1/projects/p1/jobs/ok_job/logs?pageSize=2&pageToken=$tok" >page.json
    n=$(json_get page.json "len(d[\"entries\"])")
    got=$((got + n)); i=$((i + 1))
    tok=$(json_get page.json "d.get(\"nextPageToken\", \"\")")
    [ "$(json_get page.json "d.get(\"logComplete\", False)")" = False ] || break
    [ "$n" -eq 2 ] || exit 1
  done &&
  test "$got" -eq "$total" && test "$i" -eq $(((total + 1) / 2))
'

test_expect_success 'a failing master fails the job with the service wording' '
  job_body fail.json fail_job "exit 7" &&
  test "$(api POST /v1/projects/p1/jobs fail.json)" = 200 &&
  wait_for 30 state_is fail_job FAILED &&
  api GET /v1/projects/p1/jobs/fail_job >/dev/null &&
  json_get out.json "d[\"errorMessage\"]" | grep -q "The replica master 0 exited with a non-zero status of 7." &&
  json_get out.json "d[\"attemptStatus\"][\"replicas\"][0]" | grep -q "'"'"'state'"'"': '"'"'FAILED'"'"', '"'"'exitCode'"'"': 7, '"'"'exit'"'"': '"'"'The replica master 0 exited with a non-zero status of 7.'"'"'"
'

test_expect_success 'duplicate job id: 409 ALREADY_EXISTS, the first job untouched' '
  test "$(api POST /v1/projects/p1/jobs ok.json)" = 409 &&
  test "$(json_get out.json "d[\"error\"][\"status\"]")" = ALREADY_EXISTS &&
  test "$(json_get out.json "d[\"error\"][\"code\"]")" = 409 &&
  state_is ok_job SUCCEEDED
'

test_expect_success 'bad input: 400 naming the field, bad JSON, unknown fields, wrong types' '
  job_body lb1.json lb_one "true" &&
  "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); d[\"labels\"]={\"trainyard-pytorch-env\": \"yes\"}; json.dump(d, open(sys.argv[1],\"w\"))" lb1.json &&
  test "$(api POST /v1/projects/p1/jobs lb1.json)" = 400 &&
  grep -q "labels.trainyard-pytorch-env: expected true or false (got .yes.)" out.json &&
  "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); d[\"labels\"]={\"trainyard-runtime\": \"contianer\"}; json.dump(d, open(sys.argv[1],\"w\"))" lb1.json &&
  test "$(api POST /v1/projects/p1/jobs lb1.json)" = 400 &&
  grep -q "labels.trainyard-runtime: unknown runtime .contianer. (did you mean .container.?" out.json &&
  echo "{\"jobId\": \"1bad\", \"trainingInput\": {\"scaleTier\": \"BASIC\"}}" >b1.json &&
  test "$(api POST /v1/projects/p1/jobs b1.json)" = 400 && grep -q jobId out.json &&
  test "$(json_get out.json "d[\"error\"][\"status\"]")" = INVALID_ARGUMENT &&
  echo "{\"jobId\": \"j\", \"trainingInput\": {\"scaleTier\": \"CUSTOM\", \"masterType\": \"n1-standard-4\", \"workerCount\": \"abc\"}}" >b2.json &&
  test "$(api POST /v1/projects/p1/jobs b2.json)" = 400 && grep -q workerCount out.json &&
  echo "{\"jobId\": \"j\", \"trainingInput\": {\"scaleTier\": \"BASIC\", \"bogus\": 1}}" >b3.json &&
  test "$(api POST /v1/projects/p1/jobs b3.json)" = 400 && grep -q "Unknown name" out.json && grep -q bogus out.json &&
  printf "{\"jobId\": " >b4.json &&
  test "$(api POST /v1/projects/p1/jobs b4.json)" = 400 && grep -q "Invalid JSON payload" out.json &&
  echo "[1,2]" >b5.json &&
  test "$(api POST /v1/projects/p1/jobs b5.json)" = 400 &&
  echo "{\"trainingInput\": {\"scaleTier\": \"BASIC\"}}" >b6.json &&
  test "$(api POST /v1/projects/p1/jobs b6.json)" = 400 && grep -qi "job.*id" out.json &&
  echo "{\"jobId\": \"j\", \"trainingInput\": {\"masterConfig\": {\"imageUri\": \"gcr.io/p/img:\"}}}" >b7.json &&
  test "$(api POST /v1/projects/p1/jobs b7.json)" = 400 &&
  grep -q "trainingInput.masterConfig.imageUri: .*gcr.io/p/img:.* is not a container image reference" out.json &&
  test "$(api GET /v1/projects/p1/jobs)" = 200 &&
  test "$(json_get out.json "sorted(j[\"jobId\"] for j in d[\"jobs\"])")" = "[$(printf "%s" "'"'"'fail_job'"'"', '"'"'ok_job'"'"'")]"
'

test_expect_success 'a body over the limit gets 413; URLs and methods are checked' '
  head -c 2000000 /dev/zero | tr "\0" " " >big.json &&
  test "$(api POST /v1/projects/p1/jobs big.json)" = 413 &&
  test "$(api GET /v1/projects/p1/jobs/nope)" = 404 &&
  test "$(json_get out.json "d[\"error\"][\"status\"]")" = NOT_FOUND &&
  test "$(api GET /v1/projects/p1/jobs/9bad)" = 400 &&
  test "$(api DELETE /v1/projects/p1/jobs/ok_job)" = 405 &&
  test "$(api GET /v2/whatever)" = 404 &&
  test "$(api GET "/v1/projects/p1/jobs?bogus=1")" = 400 && grep -q bogus out.json &&
  test "$(api GET "/v1/projects/p1/jobs?pageSize=-3")" = 400 &&
  test "$(api GET "/v1/projects/p1/jobs?pageToken=junk")" = 400 &&
  test "$(api GET "/v1/projects/p1/jobs?filter=state:")" = 400 &&
  test "$(api POST /v1/projects/p1/jobs/ok_job:getIamPolicy)" = 501
'

# is_error STATUS: out.json is Google's error form with that status (a body, never null)
is_error() {
  "$PYTHON" -c 'import json,sys; e=json.load(open("out.json"))["error"]; assert e["status"]==sys.argv[1] and e["message"], e' "$1"
}
test_expect_success 'bytes that are not UTF-8 in a request: the error is still JSON' '
  test "$(api GET "/v1/projects/p1/jobs/ok_job?alt=%ff")" = 400 && is_error INVALID_ARGUMENT &&
  test "$(api GET "/v1/projects/p1/jobs?pageSize=%ff")" = 400 && is_error INVALID_ARGUMENT &&
  test "$(api GET "/v1/projects/p1/jobs/ok_job?%ff=1")" = 400 && is_error INVALID_ARGUMENT &&
  test "$(api GET "/v1/projects/p1/jobs?filter=state=%ff")" = 400 && is_error INVALID_ARGUMENT &&
  e30=$("$PYTHON" -c "print(\"%C3%A9\" * 30)") &&
  test "$(api GET "/v1/projects/p1/jobs?filter=createTime<x$e30")" = 400 && is_error INVALID_ARGUMENT &&
  "$PYTHON" -c "import json; print(json.dumps({\"jobId\": \"u8\", \"trainingInput\": {\"scaleTier\": \"BASIC\", \"x\" + \"\\u00e9\" * 600: 1}}))" >u8.json &&
  test "$(api POST /v1/projects/p1/jobs u8.json)" = 400 && is_error INVALID_ARGUMENT && grep -q "Unknown name" out.json &&
  code=$(curl -s -o out.json -w "%{http_code}" -H "Host: $(printf "\377")" "$BASE/v1/projects/p1/jobs/ok_job") &&
  test "$code" = 403 && is_error PERMISSION_DENIED
'
test_expect_success 'project ids . and .. are refused: a job is never kept outside jobs/' '
  job_body dots.json escaped "true" &&
  code=$(curl -s --path-as-is -o out.json -w "%{http_code}" -X POST -H "Content-Type: application/json" --data-binary @dots.json "$BASE/v1/projects/../jobs") &&
  test "$code" = 400 && grep -q "invalid project id" out.json && grep -q "start with a letter or number" out.json &&
  code=$(curl -s --path-as-is -o out.json -w "%{http_code}" -X POST -H "Content-Type: application/json" --data-binary @dots.json "$BASE/v1/projects/./jobs") &&
  test "$code" = 400 &&
  test "$(api GET /v1/projects/.hidden/jobs)" = 400 &&
  ! test -e "$SVC/escaped" && ! test -e "$SVC/jobs/./escaped"
'
test_expect_success 'an encoded / in a path segment is refused, not read as two segments' '
  test "$(api GET /v1/projects/p1%2Fjobs/ok_job)" = 400 && is_error INVALID_ARGUMENT &&
  grep -q "encoded ./. (%2F)" out.json &&
  test "$(api GET /v1/projects/p1/jobs/ok_job%2f)" = 400 &&
  test "$(api GET "/v1/projects/p1/jobs?filter=labels.a%3Db%2Fc")" = 200 &&
  test "$(api GET /v1/projects/p1/jobs/ok_job)" = 200
'
test_expect_success 'limits a job cannot exceed: accelerator count, maxRunningTime' '
  write_job big.ti "true" 0 0 0 "{\"masterType\": \"n1-standard-8\", \"masterConfig\": {\"imageUri\": \"x\", \"containerCommand\": [\"true\"], \"acceleratorConfig\": {\"type\": \"NVIDIA_TESLA_T4\", \"count\": \"4294967296\"}}}" &&
  "$PYTHON" -c "import json,sys; d=json.load(open(\"big.ti\")); d[\"jobId\"]=\"gpus_2e32\"; json.dump(d, open(\"big.json\",\"w\"))" &&
  test "$(api POST /v1/projects/p1/jobs big.json)" = 400 && grep -q "acceleratorConfig.count: at most 16 per replica" out.json &&
  write_job long.ti "true" 0 0 0 "{\"scheduling\": {\"maxRunningTime\": \"9223372036000s\"}}" &&
  "$PYTHON" -c "import json,sys; d=json.load(open(\"long.ti\")); d[\"jobId\"]=\"long_run\"; json.dump(d, open(\"long.json\",\"w\"))" &&
  test "$(api POST /v1/projects/p1/jobs long.json)" = 400 && grep -q "at most 315576000000s" out.json &&
  test "$(api GET /v1/projects/p1/jobs/long_run)" = 404
'

test_expect_success 'list: newest first, filters, pages, {} when empty' '
  for i in 1 2 3; do job_body c$i.json census_$i "true" && test "$(api POST /v1/projects/p1/jobs c$i.json)" = 200 || exit 1; done &&
  test "$(api GET "/v1/projects/p1/jobs?filter=jobId:census*")" = 200 &&
  test "$(json_get out.json "[j[\"jobId\"] for j in d[\"jobs\"]]")" = "[$(printf "%s" "'"'"'census_3'"'"', '"'"'census_2'"'"', '"'"'census_1'"'"'")]" &&
  wait_for 30 state_is census_3 SUCCEEDED &&
  test "$(api GET "/v1/projects/p1/jobs?filter=state:FAILED")" = 200 &&
  test "$(json_get out.json "[j[\"jobId\"] for j in d[\"jobs\"]]")" = "[$(printf "%s" "'"'"'fail_job'"'"'")]" &&
  test "$(api GET "/v1/projects/p1/jobs?pageSize=2&filter=jobId:census*")" = 200 &&
  tok=$(json_get out.json "d[\"nextPageToken\"]") &&
  test "$(api GET "/v1/projects/p1/jobs?pageSize=2&filter=jobId:census*&pageToken=$tok")" = 200 &&
  test "$(json_get out.json "[j[\"jobId\"] for j in d[\"jobs\"]]")" = "[$(printf "%s" "'"'"'census_1'"'"'")]" &&
  json_get out.json "\"nextPageToken\" not in d" | grep -q True &&
  test "$(api GET "/v1/projects/p1/jobs?pageSize=2&pageToken=$tok")" = 400 &&
  test "$(api GET /v1/projects/empty/jobs)" = 200 && test "$(tr -d " \n" <out.json)" = "{}"
'

test_expect_success 'patch labels with the etag; a stale etag is 409 ABORTED' '
  api GET /v1/projects/p1/jobs/ok_job >/dev/null && etag=$(json_get out.json "d[\"etag\"]") &&
  printf "{\"labels\": {\"team\": \"vision\"}, \"etag\": \"%s\"}" "$etag" >p.json &&
  test "$(api PATCH "/v1/projects/p1/jobs/ok_job?updateMask=labels" p.json)" = 200 &&
  test "$(json_get out.json "d[\"labels\"][\"team\"]")" = vision &&
  test "$(json_get out.json "d[\"etag\"]")" != "$etag" &&
  test "$(api PATCH "/v1/projects/p1/jobs/ok_job?updateMask=labels" p.json)" = 409 &&
  test "$(json_get out.json "d[\"error\"][\"status\"]")" = ABORTED &&
  test "$(api PATCH "/v1/projects/p1/jobs/ok_job" p.json)" = 400 &&
  test "$(api PATCH "/v1/projects/p1/jobs/ok_job?updateMask=state" p.json)" = 400 &&
  api GET /v1/projects/p1/jobs/ok_job >/dev/null && etag=$(json_get out.json "d[\"etag\"]") &&
  printf "{\"labels\": {\"team\": \"vision\"}, \"etag\": \"%s\"}" "$etag" >pb.json &&
  test "$(api PATCH "/v1/projects/p1/jobs/ok_job?updateMask=%20labels%20,etag%20" pb.json)" = 200 &&
  test "$(api PATCH "/v1/projects/p1/jobs/ok_job?updateMask=labels&updateMask=jobId" p.json)" = 400 &&
  grep -q "parameter .updateMask. is given more than once" out.json &&
  test "$(api GET "/v1/projects/p1/jobs/ok_job?prettyPrint=nope")" = 400 &&
  grep -q "Invalid value at .prettyPrint. (TYPE_BOOL), ..nope.." out.json &&
  test "$(api GET "/v1/projects/p1/jobs/ok_job?prettyPrint=FALSE")" = 200 &&
  test "$(wc -l <out.json)" -le 1 &&
  echo "{\"labels\": {\"Bad Key\": \"x\"}}" >p2.json &&
  test "$(api PATCH "/v1/projects/p1/jobs/ok_job?updateMask=labels" p2.json)" = 400 &&
  echo "{\"masterType\": \"n1-standard-8\"}" >p3.json &&
  test "$(api PATCH "/v1/projects/p1/jobs/ok_job?updateMask=labels" p3.json)" = 400 &&
  grep -q "Unknown name" out.json && grep -q masterType out.json &&
  test "$(api GET /v1/projects/p1/jobs/ok_job)" = 200 &&
  test "$(json_get out.json "d[\"labels\"][\"team\"]")" = vision &&
  test "$(api GET "/v1/projects/p1/jobs?filter=labels.team=vision")" = 200 &&
  test "$(json_get out.json "[j[\"jobId\"] for j in d[\"jobs\"]]")" = "[$(printf "%s" "'"'"'ok_job'"'"'")]"
'

test_expect_success 'cancel a running job: CANCELLED, nothing of it left; cancel is idempotent' '
  job_body long.json long_job "sleep 910.$M & exec sleep 910.$M" 1 &&
  test "$(api POST /v1/projects/p1/jobs long.json)" = 200 &&
  wait_for 30 state_is long_job RUNNING &&
  wait_for 10 procs_at_least "sleep 910.$M" 4 &&
  test "$(api POST /v1/projects/p1/jobs/long_job:cancel)" = 200 && test "$(tr -d " \n" <out.json)" = "{}" &&
  wait_for 30 state_is long_job CANCELLED &&
  no_procs "sleep 910.$M" &&
  test "$(api POST /v1/projects/p1/jobs/long_job:cancel)" = 200 &&
  state_is long_job CANCELLED &&
  test "$(api POST /v1/projects/p1/jobs/nope:cancel)" = 404
'

test_expect_success 'follow=true streams the logs of a running job and ends with it' '
  job_body fol.json fol_job "for i in 1 2 3; do echo tick-\$i; sleep 0.3; done" &&
  test "$(api POST /v1/projects/p1/jobs fol.json)" = 200 &&
  timeout 30 curl -sN "$BASE/v1/projects/p1/jobs/fol_job/logs?follow=true" >stream.txt &&
  grep -q "\"message\":\"tick-3\"" stream.txt &&
  grep -q "Job completed successfully" stream.txt
'

test_expect_success 'a tuning job runs its trials; trainingOutput lists them best first' '
  "$PYTHON" - tune.json <<"PY" &&
import json, sys
prog = ("for a in \"$@\"; do case $a in --x=*) x=${a#--x=};; esac; done; "
        "printf \"{\\\"%s\\\": \\\"%s\\\", \\\"global_step\\\": \\\"1\\\"}\\n\" "
        "\"$CLOUD_ML_HP_METRIC_TAG\" \"$x\" >\"$CLOUD_ML_HP_METRIC_FILE\"; echo trial-$CLOUD_ML_TRIAL_ID")
ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
      "masterConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", "-c", prog, "prog"]},
      "hyperparameters": {"goal": "MAXIMIZE", "maxTrials": 3, "maxParallelTrials": 2,
                          "algorithm": "RANDOM_SEARCH",
                          "params": [{"parameterName": "x", "type": "DOUBLE",
                                      "minValue": 0, "maxValue": 1}]}}
json.dump({"jobId": "tune_job", "trainingInput": ti}, open(sys.argv[1], "w"))
PY
  test "$(api POST /v1/projects/p1/jobs tune.json)" = 200 &&
  wait_for 60 state_is tune_job SUCCEEDED &&
  api GET /v1/projects/p1/jobs/tune_job >/dev/null &&
  test "$(json_get out.json "d[\"trainingOutput\"][\"completedTrialCount\"]")" = 3 &&
  json_get out.json "d[\"trainingOutput\"][\"isHyperparameterTuningJob\"]" | grep -q True &&
  json_get out.json "[float(t[\"finalMetric\"][\"objectiveValue\"]) for t in d[\"trainingOutput\"][\"trials\"]]" >metrics &&
  "$PYTHON" -c "import sys; v=eval(open(\"metrics\").read()); sys.exit(0 if len(v)==3 and v==sorted(v, reverse=True) else 1)" &&
  curl -s "$BASE/v1/projects/p1/jobs/tune_job/logs?pageSize=1000" >tl.json &&
  json_get tl.json "sorted(set(e.get(\"trialId\") for e in d[\"entries\"] if e[\"message\"].startswith(\"trial-\")))" | grep -q "1.*2.*3"
'

test_expect_success 'a trial carries its replicas while it runs, and when it failed; a succeeded one not' '
  "$PYTHON" - trr.json <<"PY" &&
import json, sys
# trial 1 fails (its master exits 3, its worker is stopped), trial 2 waits for a file, then succeeds
prog = ("case $CLOUD_ML_TRIAL_ID-$TF_CONFIG in 1-*worker\\\",\\\"index*) exec sleep 30;; 1-*) sleep 0.5; exit 3;; esac; "
        "while [ ! -e \"$GO\" ]; do sleep 0.1; done; "
        "printf \"{\\\"m\\\": \\\"1\\\", \\\"global_step\\\": \\\"1\\\"}\\n\" >\"$CLOUD_ML_HP_METRIC_FILE\"")
ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4", "workerCount": 1,
      "masterConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", "-c", prog, "prog"]},
      "hyperparameters": {"goal": "MAXIMIZE", "hyperparameterMetricTag": "m", "maxTrials": 2,
                          "maxParallelTrials": 1, "algorithm": "RANDOM_SEARCH",
                          "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}}
json.dump({"jobId": "trr_job", "trainingInput": ti}, open(sys.argv[1], "w"))
PY
  sed -i "s|\$GO|$TEST_DIR/go_$M|g" trr.json &&
  test "$(api POST /v1/projects/p1/jobs trr.json)" = 200 &&
  t2_up() { api GET /v1/projects/p1/jobs/trr_job >/dev/null &&
            json_get out.json "[(r[\"taskName\"], r[\"state\"], r[\"address\"][:10]) for t in d[\"trainingOutput\"][\"trials\"] if t[\"trialId\"] == \"2\" for r in t[\"attemptStatus\"][\"replicas\"]]" |
            grep -qx "\[(.master-replica-0., .RUNNING., .127.0.0.1:.), (.worker-replica-0., .RUNNING., .127.0.0.1:.)\]"; } &&
  { wait_for 30 t2_up || { touch "go_$M"; false; }; } &&
  json_get out.json "[(r[\"taskName\"], r[\"state\"], r.get(\"exitCode\")) for t in d[\"trainingOutput\"][\"trials\"] if t[\"trialId\"] == \"1\" for r in t[\"attemptStatus\"][\"replicas\"]]" >t1 &&
  { grep -q "(.master-replica-0., .FAILED., 3)" t1 && grep -q "(.worker-replica-0., .STOPPED., None)" t1 ||
    { cat t1; touch "go_$M"; false; }; } &&
  touch "go_$M" && wait_for 30 state_is trr_job SUCCEEDED &&
  api GET /v1/projects/p1/jobs/trr_job >/dev/null &&
  test "$(json_get out.json "[\"replicas\" in t[\"attemptStatus\"] for t in d[\"trainingOutput\"][\"trials\"] if t[\"trialId\"] == \"2\"]")" = "[False]" &&
  test "$(json_get out.json "[len(t[\"attemptStatus\"][\"replicas\"]) for t in d[\"trainingOutput\"][\"trials\"] if t[\"trialId\"] == \"1\"]")" = "[2]"
'

# resume_body FILE JOB_ID HP_OVERRIDES_JSON: tune.json's job, renamed, hyperparameters changed.
resume_body() {
  "$PYTHON" -c 'import json,sys; d=json.load(open("tune.json")); d["jobId"]=sys.argv[2]; d["trainingInput"]["hyperparameters"].update(json.loads(sys.argv[3])); json.dump(d, open(sys.argv[1],"w"))' "$@"
}
test_expect_success 'resumePreviousJobId: a resumed job continues the study after its trials' '
  resume_body res.json res_job "{\"resumePreviousJobId\": \"tune_job\", \"maxTrials\": 2, \"maxParallelTrials\": 1}" &&
  test "$(api POST /v1/projects/p1/jobs res.json)" = 200 &&
  wait_for 60 state_is res_job SUCCEEDED &&
  api GET /v1/projects/p1/jobs/res_job >/dev/null &&
  test "$(json_get out.json "sorted(t[\"trialId\"] for t in d[\"trainingOutput\"][\"trials\"])")" = "['\''4'\'', '\''5'\'']" &&
  curl -s "$BASE/v1/projects/p1/jobs/res_job/logs?pageSize=1000" >rl.json &&
  json_get rl.json "[e for e in d[\"entries\"] if \"Resuming the study of job tune_job: 3 succeeded and 0 failed\" in e[\"message\"]][0]"
'
test_expect_success 'resumePreviousJobId: resuming a resumed job continues the whole study' '
  resume_body res2.json res2_job "{\"resumePreviousJobId\": \"res_job\", \"maxTrials\": 1, \"maxParallelTrials\": 1}" &&
  test "$(api POST /v1/projects/p1/jobs res2.json)" = 200 &&
  wait_for 60 state_is res2_job SUCCEEDED &&
  api GET /v1/projects/p1/jobs/res2_job >/dev/null &&
  test "$(json_get out.json "[t[\"trialId\"] for t in d[\"trainingOutput\"][\"trials\"]]")" = "['\''6'\'']" &&
  curl -s "$BASE/v1/projects/p1/jobs/res2_job/logs?pageSize=1000" >rl.json &&
  json_get rl.json "[e for e in d[\"entries\"] if \"Resuming the study of job res_job (and the 1 job it resumed in turn): 5 succeeded and 0 failed\" in e[\"message\"]][0]"
'
test_expect_success 'resumePreviousJobId: missing, plain or incompatible jobs are 400s naming the field' '
  resume_body r1.json r1_job "{\"resumePreviousJobId\": \"nope_job\"}" &&
  test "$(api POST /v1/projects/p1/jobs r1.json)" = 400 &&
  grep -q "trainingInput.hyperparameters.resumePreviousJobId: job .nope_job. was not found in project .p1." out.json &&
  resume_body r2.json r2_job "{\"resumePreviousJobId\": \"ok_job\"}" &&
  test "$(api POST /v1/projects/p1/jobs r2.json)" = 400 &&
  grep -q "job .ok_job. is not a hyperparameter tuning job" out.json &&
  resume_body r3.json r3_job "{\"resumePreviousJobId\": \"tune_job\", \"goal\": \"MINIMIZE\"}" &&
  test "$(api POST /v1/projects/p1/jobs r3.json)" = 400 &&
  grep -q "the goal must be the same" out.json &&
  test "$(api GET /v1/projects/p1/jobs/r1_job)" = 404 && test "$(api GET /v1/projects/p1/jobs/r3_job)" = 404
'
test_expect_success 'a tuning job shows each ended trial in trainingOutput while it runs' '
  "$PYTHON" - slow.json <<"PY" &&
import json, sys
d = json.load(open("tune.json"))
d["jobId"] = "slow_tune"
hp = d["trainingInput"]["hyperparameters"]
hp.update({"maxTrials": 2, "maxParallelTrials": 1})
cmd = d["trainingInput"]["masterConfig"]["containerCommand"]
cmd[2] = "if [ \"$CLOUD_ML_TRIAL_ID\" = 2 ]; then sleep 30; fi; " + cmd[2]
json.dump(d, open(sys.argv[1], "w"))
PY
  test "$(api POST /v1/projects/p1/jobs slow.json)" = 200 &&
  trial1_done() { api GET /v1/projects/p1/jobs/slow_tune >/dev/null && json_get out.json "[t[\"state\"] for t in d[\"trainingOutput\"][\"trials\"] if t[\"trialId\"] == \"1\"]" | grep -q SUCCEEDED; } &&
  wait_for 30 trial1_done &&
  test "$(json_get out.json "d[\"state\"]")" = RUNNING &&
  test "$(api POST /v1/projects/p1/jobs/slow_tune:cancel)" = 200 &&
  wait_for 30 state_is slow_tune CANCELLED
'

# re_job runs until the test touches re.go (a minute at most), not for a fixed time: on a
# loaded machine a timed job could end before the daemon is killed, and then nothing is
# re-attached to it.
test_expect_success 'jobs running when the daemon is killed with SIGKILL keep running' '
  job_body re.json re_job "i=0; while [ ! -e $TEST_DIR/re.go ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i+1)); done; echo done-$M" 1 &&
  job_body rc.json rc_job "sleep 911.$M & exec sleep 911.$M" &&
  test "$(api POST /v1/projects/p1/jobs re.json)" = 200 &&
  test "$(api POST /v1/projects/p1/jobs rc.json)" = 200 &&
  wait_for 30 state_is re_job RUNNING && wait_for 30 state_is rc_job RUNNING
'
kill -KILL "$DPID"; wait "$DPID" 2>/dev/null; sleep 0.5
start_daemon daemon2
test_expect_success 'a new daemon re-attaches to them and finishes them' '
  procs_at_least "sleep 911.$M" 2 &&
  grep -q "re-attached to 2 running job" "$TEST_DIR/daemon2.log" &&
  test "$(api GET /v1/projects/p1/jobs?pageSize=100)" = 200 &&
  test "$(json_get out.json "len(d[\"jobs\"])")" -ge 8 &&
  touch re.go && wait_for 30 state_is re_job SUCCEEDED &&
  curl -s "$BASE/v1/projects/p1/jobs/re_job/logs" | grep -q "done-$M" &&
  test "$(api POST /v1/projects/p1/jobs/rc_job:cancel)" = 200 &&
  wait_for 30 state_is rc_job CANCELLED &&
  no_procs "sleep 911.$M"
'

test_expect_success 'a supervisor killed with SIGKILL: its replicas are swept, the job runs again as attempt 2 (t5050 has more)' '
  job_body sk.json sk_job "sleep 912.$M & exec sleep 912.$M" 1 &&
  test "$(api POST /v1/projects/p1/jobs sk.json)" = 200 &&
  wait_for 30 state_is sk_job RUNNING &&
  wait_for 10 procs_at_least "sleep 912.$M" 4 &&
  old=$(pgrep -f "sleep 912.$M" | tr "\n" " ") &&
  spid=$(pgrep -f "supervise-job $SVC" | head -1) && test -n "$spid" &&
  kill -KILL "$spid" &&
  old_gone() { for p in $old; do ! kill -0 "$p" 2>/dev/null || return 1; done; } &&
  wait_for 10 old_gone &&
  wait_for 30 procs_at_least "sleep 912.$M" 4 &&
  state_is sk_job RUNNING &&
  api GET /v1/projects/p1/jobs/sk_job >/dev/null &&
  test "$(json_get out.json "d[\"attemptStatus\"][\"attempt\"]")" = 2 &&
  test "$(json_get out.json "d[\"attemptStatus\"][\"internalRetries\"]")" = 1 &&
  test "$(api POST /v1/projects/p1/jobs/sk_job:cancel)" = 200 &&
  wait_for 30 state_is sk_job CANCELLED &&
  wait_for 10 no_procs "sleep 912.$M"
'

stop_daemon
start_daemon daemon3 --max-running-jobs 0
test_expect_success '--max-running-jobs 0 queues jobs with their position' '
  job_body q1.json q_one "true" && job_body q2.json q_two "true" &&
  test "$(api POST /v1/projects/p1/jobs q1.json)" = 200 &&
  test "$(json_get out.json "d[\"jobPosition\"]")" = 1 &&
  test "$(api POST /v1/projects/p1/jobs q2.json)" = 200 &&
  test "$(json_get out.json "d[\"jobPosition\"]")" = 2 &&
  sleep 1 && state_is q_one QUEUED &&
  test "$(api POST /v1/projects/p1/jobs/q_one:cancel)" = 200 && state_is q_one CANCELLED &&
  test "$(api GET /v1/projects/p1/jobs/q_two)" = 200 &&
  test "$(json_get out.json "d[\"jobPosition\"]")" = 1
'
test_expect_success 'list filters see what list shows: jobPosition and the scheduler'"'"'s stateReason' '
  test "$(api GET "/v1/projects/p1/jobs?filter=jobPosition%3D1")" = 200 &&
  test "$(json_get out.json "\",\".join(j[\"jobId\"] for j in d.get(\"jobs\", []))")" = q_two &&
  test "$(api GET "/v1/projects/p1/jobs?filter=jobPosition%3E1")" = 200 &&
  test "$(json_get out.json "len(d.get(\"jobs\", []))")" = 0 &&
  test "$(api GET "/v1/projects/p1/jobs?filter=stateReason%3A*")" = 200 &&
  test "$(json_get out.json "\",\".join(j[\"jobId\"] for j in d.get(\"jobs\", []))")" = q_two
'
kill -TERM "$DPID"; wait "$DPID"; rc=$?
test_expect_success 'SIGTERM stops the daemon with status 0' "test $rc -eq 0"

start_daemon daemon4
test_expect_success 'a queued job runs after a restart without the cap' '
  wait_for 30 state_is q_two SUCCEEDED
'
stop_daemon

printf "# tokens\nsecret-token-aaaaaaaa p1\nsecret-token-bbbbbbbb *\n" >"$TEST_DIR/tokens"
chmod 600 "$TEST_DIR/tokens"
start_daemon daemon5 --auth-tokens "$TEST_DIR/tokens"
test_expect_success 'auth: 401 without or with a wrong token, 403 for another project' '
  test "$(api GET /v1/projects/p1/jobs)" = 401 &&
  test "$(json_get out.json "d[\"error\"][\"status\"]")" = UNAUTHENTICATED &&
  test "$(curl -s -o out.json -w "%{http_code}" -H "Authorization: Bearer wrong-token-xxxxxxx" "$BASE/v1/projects/p1/jobs")" = 401 &&
  test "$(curl -s -o out.json -w "%{http_code}" -H "Authorization: Bearer secret-token-aaaaaaaa" "$BASE/v1/projects/p1/jobs")" = 200 &&
  test "$(curl -s -o out.json -w "%{http_code}" -H "Authorization: Bearer secret-token-aaaaaaaa" "$BASE/v1/projects/p2/jobs")" = 403 &&
  test "$(json_get out.json "d[\"error\"][\"status\"]")" = PERMISSION_DENIED &&
  test "$(curl -s -o out.json -w "%{http_code}" -H "Authorization: Bearer secret-token-bbbbbbbb" "$BASE/v1/projects/p2/jobs")" = 200 &&
  test "$(api GET /healthz)" = 200
'
stop_daemon

test_expect_success 'refuses non-loopback addresses without tokens, and bad options' '
  set +e; "$TRAINYARDD" --listen 0.0.0.0:0 --state-dir "$SVC" 2>err; rc=$?; set -e
  test $rc -ne 0 && grep -q "auth-tokens" err &&
  set +e; "$TRAINYARDD" --bogus 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q bogus err &&
  printf "listen = 127.0.0.1:0\nnonsense = 1\n" >conf &&
  set +e; "$TRAINYARDD" --config conf 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "conf:2" err &&
  printf "listen = 127.0.0.1:99999\nstate-dir = %s\n" "$TEST_DIR/new-state" >conf &&
  set +e; "$TRAINYARDD" --config conf 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "conf:1: listen: expected HOST:PORT" err &&
  set +e; "$TRAINYARDD" --listen nohost:80 --state-dir "$TEST_DIR/new-state" 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "^trainyardd: --listen: expected HOST:PORT" err &&
  test ! -e "$TEST_DIR/new-state" &&
  cp tokens tokens2 && chmod 644 tokens2 &&
  set +e; "$TRAINYARDD" --state-dir "$SVC" --auth-tokens tokens2 2>err; rc=$?; set -e
  test $rc -ne 0 && grep -q "chmod 600" err
'

test_expect_success 'nothing of any job is left running' '
  no_procs "$M" || { ps -eo pid,args | grep -F "$M"; false; }
'

test_done
