#!/bin/sh
# t5110-service-metrics: GET /metrics read by Prometheus' own parser (python3-prometheus-client,
# tests/integration/metrics-check.py): the text format and its content type; jobs by project
# and state, retries, internal retries and replica restarts equal to what the API says of the
# same jobs (one succeeded, one failed, one retried after a crash, one whose replica was
# restarted in place, one whose supervisor was killed, one running, one cancelled while
# queued); the scheduler's queue, resources, admissions, waiting times and a maxWaitTime
# expiry; the request counters grow by the requests made; histograms cumulative; with
# --auth-tokens only a token for every project ('*') may read it.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID
CHECK="$PYTHON $TY_SOURCE_DIR/tests/integration/metrics-check.py"
# The scheduler's metrics come with the scheduler (and its --shortest-max-wait-time).
SCHED=no
if "$TY_BUILD_DIR/bin/trainyardd" --help 2>&1 | grep -q -- --shortest-max-wait-time; then SCHED=yes; fi
# One job at a time: the later ones queue behind a running one.
trainyardd_start svc --max-running-jobs 1 $([ $SCHED = yes ] && echo --shortest-max-wait-time=1) ||
  { echo "Bail out! trainyardd did not start"; exit 1; }
DPID=$TYD_PID
BASE=$TYD_URL
SVC="$TEST_DIR/svc"
printf 'metrics-p1-token-%s p1\nmetrics-all-token-%s *\n' "$M" "$M" >"$TEST_DIR/tokens"
chmod 600 "$TEST_DIR/tokens"
trainyardd_start auth --auth-tokens "$TEST_DIR/tokens" ||
  { echo "Bail out! trainyardd with tokens did not start"; exit 1; }
APID=$TYD_PID
ABASE=$TYD_URL
trap 'kill -TERM "$DPID" "$APID" 2>/dev/null' EXIT

# submit PROJECT JOB SCRIPT [EXTRA_TRAINING_INPUT_JSON]: a job whose master runs `sh -c SCRIPT`
submit() {
  write_job "$2.ti" "$3" 0 0 0 "${4:-}" &&
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["jobId"]=sys.argv[2]; json.dump(d, open(sys.argv[3],"w"))' "$2.ti" "$2" "$2.body" &&
  test "$(curl -s -o "$2.out" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "@$2.body" "$BASE/v1/projects/$1/jobs")" = 200
}
state_is() {
  test "$(curl -s "$BASE/v1/projects/$1/jobs/$2" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin).get("state"))')" = "$3"
}
# metrics FILE: GET /metrics into FILE (headers into FILE.h); prints the status
metrics() { curl -s -D "$1.h" -o "$1" -w '%{http_code}' "$BASE/metrics"; }
# value FILE SAMPLE [LABELS]: the value of SAMPLE{LABELS} (k=v,k=v in any order) in FILE, 0
# when absent; FILE is parsed once (metrics-check.py dump, into FILE.v)
value() {
  [ -s "$1.v" ] || $CHECK dump "$1" >"$1.v" || return 1
  awk -v k="$2{$(printf '%s' "${3:-}" | tr ',' '\n' | LC_ALL=C sort | paste -sd, -)}" \
    '$1 == k { print $2; found = 1 } END { if (!found) print 0 }' "$1.v"
}

test_expect_success 'jobs that succeed, fail, crash once, restart a replica' '
  submit p1 ok "echo fine" &&
  submit p1 bad "exit 3" &&
  submit p1 crash "if [ -e $TEST_DIR/crash.once ]; then exit 0; fi; : >$TEST_DIR/crash.once; exit 139" &&
  submit p1 restart "if [ -e $TEST_DIR/restart.once ]; then exit 0; fi; : >$TEST_DIR/restart.once; kill -KILL \$\$" &&
  wait_for 30 state_is p1 restart SUCCEEDED &&
  state_is p1 ok SUCCEEDED && state_is p1 bad FAILED && state_is p1 crash SUCCEEDED
'

test_expect_success 'a job whose supervisor is killed runs again (an internal retry)' '
  submit p1 lost "if [ -e $TEST_DIR/lost.once ]; then exit 0; fi; : >$TEST_DIR/lost.once; exec sleep 911.$M" &&
  wait_for 30 procs_at_least "sleep 911.$M" 1 &&
  spid=$(pgrep -f "supervise-job $SVC " | head -1) && test -n "$spid" &&
  kill -KILL "$spid" &&
  wait_for 30 state_is p1 lost SUCCEEDED
'

test_expect_success 'a running job, and one cancelled while it waits behind it' '
  submit p2 blocker "exec sleep 912.$M" &&
  wait_for 30 state_is p2 blocker RUNNING &&
  submit p2 waiter "true" &&
  state_is p2 waiter QUEUED &&
  test "$(curl -s -o /dev/null -w "%{http_code}" -X POST "$BASE/v1/projects/p2/jobs/waiter:cancel")" = 200 &&
  wait_for 10 state_is p2 waiter CANCELLED
'

test_expect_success '/metrics: 200, the content type of the text format, parsed by prometheus_client' '
  test "$(metrics m1)" = 200 &&
  grep -i "^content-type:" m1.h | tr -d "\r" >ct &&
  test "$(cat ct)" = "Content-Type: text/plain; version=0.0.4; charset=utf-8" &&
  $CHECK format m1 &&
  $CHECK families m1 >fams &&
  for f in trainyard_jobs trainyard_job_retries trainyard_job_internal_retries \
           trainyard_replica_restarts trainyard_http_requests \
           trainyard_http_request_duration_seconds process_start_time_seconds; do
    grep -qx "$f" fams || { echo "no family $f"; exit 1; }
  done
'

test_expect_success 'jobs by project and state, retries and restarts: as the API says' '
  $CHECK jobs m1 "$BASE" p1 p2 &&
  test "$(value m1 trainyard_jobs project=p1,state=SUCCEEDED)" = 4 &&
  test "$(value m1 trainyard_jobs project=p1,state=FAILED)" = 1 &&
  test "$(value m1 trainyard_jobs project=p2,state=RUNNING)" = 1 &&
  test "$(value m1 trainyard_jobs project=p2,state=CANCELLED)" = 1 &&
  test "$(value m1 trainyard_jobs project=p2,state=QUEUED)" = 0 &&
  test "$(value m1 trainyard_job_retries_total project=p1)" = 2 &&
  test "$(value m1 trainyard_job_internal_retries_total project=p1)" = 1 &&
  test "$(value m1 trainyard_replica_restarts project=p1)" = 1
'

if [ $SCHED = yes ]; then
  test_expect_success 'the scheduler: queue, resources held and free, admissions, waiting times' '
    test "$(value m1 trainyard_scheduler_queued_jobs)" = 0 &&
    test "$(value m1 trainyard_scheduler_holding_jobs)" = 1 &&
    test "$(value m1 trainyard_resource_capacity resource=jobs)" = 1 &&
    test "$(value m1 trainyard_resource_used resource=jobs)" = 1 &&
    test "$(value m1 trainyard_resource_free resource=jobs)" = 0 &&
    test "$(value m1 trainyard_resource_used resource=cpus)" = 4 &&
    ! grep -q "^trainyard_resource_capacity{resource=\"cpus\"" m1 &&
    test "$(value m1 trainyard_scheduler_admissions_total)" -ge 6 &&
    test "$(value m1 trainyard_scheduler_wait_seconds_count)" = "$(value m1 trainyard_scheduler_admissions_total)" &&
    test "$(value m1 trainyard_scheduler_expirations_total)" = 0
  '
  test_expect_success 'a job whose maxWaitTime passes in the queue is counted as an expiration' '
    submit p2 late "true" "{\"scheduling\": {\"maxWaitTime\": \"1s\"}}" &&
    wait_for 15 state_is p2 late CANCELLED &&
    test "$(metrics mx)" = 200 && $CHECK format mx &&
    test "$(value mx trainyard_scheduler_expirations_total)" = 1 &&
    test "$(value mx trainyard_scheduler_queued_jobs)" = 0 &&
    test "$(value mx trainyard_jobs project=p2,state=CANCELLED)" = 2 &&
    $CHECK jobs mx "$BASE" p2
  '
else
  test_skip 'the scheduler: queue, resources held and free, admissions, waiting times' \
    'this trainyardd has no scheduler (no --shortest-max-wait-time)'
  test_skip 'a job whose maxWaitTime passes in the queue is counted as an expiration' \
    'this trainyardd has no scheduler (no --shortest-max-wait-time)'
fi

test_expect_success 'request counters grow by the requests made; latency histograms follow' '
  test "$(metrics m2)" = 200 &&
  for i in 1 2 3 4 5; do curl -s -o /dev/null "$BASE/healthz" || exit 1; done &&
  curl -s -o /dev/null "$BASE/v1/projects/p1/jobs/ok" &&
  curl -s -o /dev/null "$BASE/v1/projects/p1/jobs/ok" &&
  curl -s -o /dev/null "$BASE/v1/projects/p1/jobs/nope" &&
  curl -s -o /dev/null "$BASE/no/such/url" &&
  test "$(metrics m3)" = 200 && $CHECK format m3 &&
  H=method=GET,route=/healthz,code=200 &&
  G="method=GET,route=/v1/projects/{project}/jobs/{job}" &&
  test $(( $(value m3 trainyard_http_requests_total $H) - $(value m2 trainyard_http_requests_total $H) )) = 5 &&
  test $(( $(value m3 trainyard_http_requests_total $G,code=200) - $(value m2 trainyard_http_requests_total $G,code=200) )) = 2 &&
  test $(( $(value m3 trainyard_http_requests_total $G,code=404) - $(value m2 trainyard_http_requests_total $G,code=404) )) = 1 &&
  test $(( $(value m3 trainyard_http_requests_total method=GET,route=none,code=404) - $(value m2 trainyard_http_requests_total method=GET,route=none,code=404) )) = 1 &&
  test "$(value m3 trainyard_http_requests_total "method=POST,route=/v1/projects/{project}/jobs,code=200")" = $([ $SCHED = yes ] && echo 8 || echo 7) &&
  test "$(value m3 trainyard_http_requests_total method=GET,route=/metrics,code=200)" -ge 2 &&
  test $(( $(value m3 trainyard_http_request_duration_seconds_count $G) - $(value m2 trainyard_http_request_duration_seconds_count $G) )) = 3 &&
  test "$(value m3 trainyard_http_request_duration_seconds_bucket $G,le=+Inf)" = "$(value m3 trainyard_http_request_duration_seconds_count $G)"
'

test_expect_success 'the jobs.get cache: a second get of a job is a hit; its bytes within the bound; SQLite memory, the live heap' '
  test "$(metrics m4)" = 200 &&
  curl -s -o /dev/null "$BASE/v1/projects/p1/jobs/ok" &&
  test "$(metrics m5)" = 200 && $CHECK format m5 &&
  test $(( $(value m5 trainyard_api_get_cache_hits_total) - $(value m4 trainyard_api_get_cache_hits_total) )) = 1 &&
  test "$(value m5 trainyard_api_get_cache_misses_total)" = "$(value m4 trainyard_api_get_cache_misses_total)" &&
  test "$(value m5 trainyard_api_get_cache_entries)" -ge 1 &&
  test "$(value m5 trainyard_api_get_cache_bytes)" -gt 0 &&
  test "$(value m5 trainyard_api_get_cache_max_bytes)" = 16777216 &&
  test "$(value m5 trainyard_api_get_cache_evictions_total)" = 0 &&
  test "$(value m5 trainyard_store_memory_bytes)" -gt 0 &&
  { ! grep -q "^trainyard_heap_in_use_bytes " m5 || # left out under a sanitizer
    test "$(value m5 trainyard_heap_in_use_bytes)" -gt "$(value m5 trainyard_api_get_cache_bytes)"; }
'

test_expect_success 'with --auth-tokens: no token 401, a project token 403, a token for every project 200' '
  test "$(curl -s -o /dev/null -w "%{http_code}" "$ABASE/healthz")" = 200 &&
  test "$(curl -s -o out.json -w "%{http_code}" "$ABASE/metrics")" = 401 &&
  test "$(curl -s -o out.json -w "%{http_code}" -H "Authorization: Bearer metrics-p1-token-$M" "$ABASE/metrics")" = 403 &&
  grep -q "Permission denied on project .\*." out.json &&
  test "$(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer metrics-p1-token-$M" "$ABASE/v1/projects/p1/jobs")" = 200 &&
  test "$(curl -s -o am -w "%{http_code}" -H "Authorization: Bearer metrics-all-token-$M" "$ABASE/metrics")" = 200 &&
  $CHECK format am &&
  test "$(value am trainyard_http_requests_total method=GET,route=/metrics,code=403)" = 1 &&
  test "$(value am trainyard_http_requests_total method=GET,route=/metrics,code=401)" = 1
'

test_expect_success 'the running job is cancelled; no process of the test is left' '
  test "$(curl -s -o /dev/null -w "%{http_code}" -X POST "$BASE/v1/projects/p2/jobs/blocker:cancel")" = 200 &&
  wait_for 30 state_is p2 blocker CANCELLED &&
  wait_for 10 no_procs "sleep 912.$M" && no_procs "sleep 911.$M"
'

test_done
