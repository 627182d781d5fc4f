#!/bin/sh
# t5155-service-logs: the logs endpoint's edges: pageSize (any size taken, a large one lowered,
# the error saying so), a page's size counted as sent (a control byte escaped is six), a log
# file truncated under a reader (read again from its start), logComplete on the page of an
# ended job's last entries (and polling reading pages of long lines at once; a client that
# knows no logComplete gets an empty page next), a followed stream of replicas writing at once
# (every line once, each file in order; its position lines, only when asked for),
# a service restart under a followed stream (it breaks off; stream-logs and polling go on).
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID
trainyardd_start svc || { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR/svc.log"; exit 1; }
BASE=$TYD_URL

# submit FILE: POST the job in FILE to project p1
submit() {
  curl -sf -X POST -H 'Content-Type: application/json' --data-binary @"$1" \
    "$BASE/v1/projects/p1/jobs" >/dev/null
}
# ended JOB: JOB has an endTime
ended() {
  curl -s "$BASE/v1/projects/p1/jobs/$1" | grep -q '"endTime"'
}
# job_json FILE ID SCRIPT: a BASIC job whose master runs sh -c SCRIPT
job_json() {
  "$PYTHON" -c 'import json,sys; json.dump({"jobId": sys.argv[2], "trainingInput": {"scaleTier": "BASIC",
 "masterConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", "-c", sys.argv[3]]}}}, open(sys.argv[1], "w"))' "$@"
}

test_expect_success 'pageSize: a large one is lowered to 1000, and the error says so' '
  job_json many.json many "seq 1 1500 | sed s/^/n$M./" && submit many.json &&
  wait_for 20 ended many &&
  curl -s "$BASE/v1/projects/p1/jobs/many/logs?pageSize=1001&taskName=master-replica-0" >p.json &&
  test "$(json_get p.json "len(d[\"entries\"])")" -eq 1000 &&
  curl -s "$BASE/v1/projects/p1/jobs/many/logs?pageSize=99999999999" >e.json &&
  json_get e.json "d[\"error\"][\"message\"]" >msg &&
  grep -q "^pageSize: expected a number from 0 to 2147483647 (0 is the default, 100; more than 1000 is read as 1000)" msg
'
test_expect_success 'a page of control bytes stays near 1 MiB of JSON as sent (escaped)' '
  job_json ctrl.json ctrl "i=0; while [ \$i -lt 40 ]; do head -c 65536 /dev/zero | tr \"\\\\0\" \"\\\\001\"; echo; i=\$((i+1)); done" &&
  submit ctrl.json && wait_for 30 ended ctrl &&
  curl -s -o page.json "$BASE/v1/projects/p1/jobs/ctrl/logs?taskName=master-replica-0" &&
  n=$(json_get page.json "len(d[\"entries\"])") && size=$(wc -c <page.json) &&
  echo "entries $n, $size bytes" &&
  test "$n" -ge 1 && test "$n" -lt 40 &&
  test "$(json_get page.json "len(d[\"entries\"][0][\"message\"])")" -eq 65536 &&
  test "$size" -lt $((1024 * 1024 + 6 * 65536 + 65536))
'
test_expect_success 'a log truncated under its readers: the page token and the stream carry on' '
  job_json trunc.json trunc "for i in 1 2 3 4 5 6 7 8 9 10; do echo before\$i.$M.........................................; done; while [ ! -e \"$TEST_DIR/go\" ]; do sleep 0.05; done; echo after.$M" &&
  submit trunc.json &&
  url="$BASE/v1/projects/p1/jobs/trunc/logs?taskName=master-replica-0" &&
  wait_for 20 sh -c "curl -s \"$url\" | grep -q before10\\.$M" &&
  curl -s "$url" >p1.json && tok=$(json_get p1.json "d[\"nextPageToken\"]")
  { curl -sN "$url&follow=true" >f.out; echo $? >f.rc; } &
  wait_for 10 grep -q "before10\.$M" f.out &&
  : >"$TEST_DIR/svc/jobs/p1/trunc/logs/master-replica-0.log" &&
  touch "$TEST_DIR/go" &&
  wait_for 20 ended trunc && wait_for 10 test -s f.rc &&
  test "$(cat f.rc)" = 0 && grep -q "\"after\.$M\"" f.out &&
  test "$(curl -s -o p2.json -w "%{http_code}" "$url&pageToken=$tok")" = 200 &&
  test "$(json_get p2.json "[e[\"message\"] for e in d[\"entries\"]]")" = "[$(printf "%s" "'"'"'after.$M'"'"'")]"
'
test_expect_success 'logComplete on an ended job'"'"'s last page, then an empty one; pages of long lines read at once' '
  job_json longl.json longl "i=0; while [ \$i -lt 40 ]; do printf \"L%d \" \$i; head -c 65000 /dev/zero | tr \"\\\\0\" q; echo; i=\$((i+1)); done" &&
  submit longl.json && wait_for 30 ended longl &&
  url="$BASE/v1/projects/p1/jobs/longl/logs?taskName=master-replica-0" &&
  curl -s "$url" >p1.json &&
  test "$(json_get p1.json "len(d[\"entries\"])")" -lt 40 &&
  tok=$(json_get p1.json "d[\"nextPageToken\"]") &&
  curl -s "$url&pageToken=$tok" >p2.json && tok=$(json_get p2.json "d[\"nextPageToken\"]") &&
  curl -s "$url&pageToken=$tok" >p3.json &&
  json_get p3.json "d.get(\"logComplete\") is True and len(d[\"entries\"]) > 0" | grep -q True &&
  json_get p2.json "\"logComplete\" not in d" | grep -q True &&
  tok=$(json_get p3.json "d[\"nextPageToken\"]") && curl -s "$url&pageToken=$tok" >p4.json &&
  json_get p4.json "d[\"entries\"] == [] and d[\"logComplete\"] is True and bool(d[\"nextPageToken\"])" | grep -q True &&
  TRAINYARD_API_ENDPOINT=$BASE timeout 10 "$TRAINYARD" jobs stream-logs longl --project p1 \
    --task-name master-replica-0 --polling-interval 60 >poll.out &&
  test "$(grep -c "	L[0-9]* q" poll.out)" -eq 40
'
# steady_job FILE ID SECONDS: a master and 3 workers writing numbered lines as fast as they
# can for SECONDS (steady-writer.py; the workers say they are done in $TEST_DIR/ID.done)
steady_job() {
  mkdir -p "$TEST_DIR/$2.done" &&
  "$PYTHON" -c 'import json,sys
c = {"imageUri": "x/y:1", "containerCommand": ["python3", sys.argv[3], sys.argv[4], sys.argv[5]]}
json.dump({"jobId": sys.argv[2], "trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
 "workerType": "n1-standard-4", "workerCount": "3", "masterConfig": c, "workerConfig": c}},
 open(sys.argv[1], "w"))' "$1" "$2" "$TY_SOURCE_DIR/tests/integration/steady-writer.py" "$3" "$TEST_DIR/$2.done"
}

test_expect_success 'stream-logs of 4 replicas writing at once: every line once, each replica'"'"'s in order' '
  steady_job steady.json steady 4 && submit steady.json &&
  TRAINYARD_API_ENDPOINT=$BASE timeout 60 "$TRAINYARD" jobs stream-logs steady --project p1 >out &&
  "$PYTHON" "$TY_SOURCE_DIR/tests/integration/steady-check.py" out 4
'
test_expect_success 'the follow stream gives its position; the pages from one hold what followed it' '
  curl -sN "$BASE/v1/projects/p1/jobs/steady/logs?follow=true" >plain &&
  ! grep -q "nextPageToken" plain &&
  curl -sN "$BASE/v1/projects/p1/jobs/steady/logs?follow=true&positions=true" >raw &&
  "$PYTHON" - raw "$BASE/v1/projects/p1/jobs/steady/logs" <<-\PY
	import collections, json, sys, urllib.request
	lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
	pos = [i for i, l in enumerate(lines) if "nextPageToken" in l]
	assert len(pos) >= 1 and all(set(lines[i]) == {"nextPageToken"} for i in pos), pos[:5]
	key = lambda e: (e["taskName"], e["message"])
	for i in (pos[0], pos[len(pos) // 2]):
	    want = collections.Counter(key(e) for e in lines[i + 1:] if "timestamp" in e)
	    got, tok = collections.Counter(), lines[i]["nextPageToken"]
	    while tok:
	        d = json.load(urllib.request.urlopen("%s?pageSize=1000&pageToken=%s" % (sys.argv[2], tok)))
	        got.update(key(e) for e in d["entries"])
	        tok = None if d.get("logComplete") else d["nextPageToken"]
	    assert got == want, (i, len(got), len(want))
	PY
'
trainyardd_stop svc

# A service restarted (SIGTERM, then started again on the same port and state) while its
# job runs on.
trainyardd_start rs || { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR/rs.log"; exit 1; }
RS=$TYD_URL
ROOT_JOBS=; [ "$(id -u)" -eq 0 ] && ROOT_JOBS=--allow-root-jobs
test_expect_success 'a service restart: the stream breaks off (no clean end); stream-logs and polling carry on' '
  job_json rjob.json rjob "i=0; while [ \$i -lt 300 ]; do echo r\$i.$M; i=\$((i+1)); sleep 0.02; done" &&
  curl -sf -X POST -H "Content-Type: application/json" --data-binary @rjob.json "$RS/v1/projects/p1/jobs" >/dev/null &&
  url="$RS/v1/projects/p1/jobs/rjob/logs?taskName=master-replica-0"
  # (set -e holds in these too: the status is kept by an if)
  if curl -sN "$url&follow=true" >raw.out; then echo 0; else echo $?; fi >raw.rc &
  if TRAINYARD_API_ENDPOINT=$RS "$TRAINYARD" jobs stream-logs rjob --project p1 --task-name master-replica-0 >cli.out 2>cli.err; then echo 0; else echo $?; fi >cli.rc &
  if TRAINYARD_API_ENDPOINT=$RS "$TRAINYARD" jobs stream-logs rjob --project p1 --task-name master-replica-0 --polling-interval 0.2 >poll.out 2>poll.err; then echo 0; else echo $?; fi >poll.rc &
  wait_for 20 grep -q "r20\.$M" cli.out && wait_for 20 grep -q "r20\.$M" poll.out &&
  kill -TERM "$(cat "$TEST_DIR/rs.pid")" &&
  wait_for 20 test -s raw.rc && wait_for 20 sh -c "! curl -s -o /dev/null \"$RS/healthz\"" &&
  sleep 1 &&
  { "$TY_BUILD_DIR/bin/trainyardd" --listen "127.0.0.1:${RS##*:}" --state-dir "$TEST_DIR/rs" \
      --grace-period 1 $ROOT_JOBS >>"$TEST_DIR/rs.log" 2>&1 & echo $! >"$TEST_DIR/rs.pid"; } &&
  wait_for 20 curl -sf -o /dev/null "$RS/healthz" &&
  wait_for 60 test -s cli.rc && wait_for 20 test -s poll.rc &&
  echo "raw $(cat raw.rc) cli $(cat cli.rc) poll $(cat poll.rc)" && cat cli.err poll.err &&
  test "$(cat raw.rc)" != 0 && test "$(cat cli.rc)" = 0 && test "$(cat poll.rc)" = 0 &&
  seq 0 299 | sed "s/.*/r&.$M/" >want &&
  cut -f5 cli.out >cli.msgs && diff want cli.msgs &&
  cut -f5 poll.out >poll.msgs && diff want poll.msgs &&
  ! grep -q "application error" "$TEST_DIR/rs.log"
'
trainyardd_stop rs
test_done
