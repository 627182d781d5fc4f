#!/bin/sh
# t5155-service-logs: the logs endpoint's edges: pageSize (any size taken, a large one lowered,
# the error saying so), a page's size counted as sent (a control byte escaped is six), a log
# file truncated under a reader (read again from its start), nextPageToken left out only after
# an ended job's last entries (and polling reading pages of long lines at once).
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
test_expect_success 'nextPageToken: none after an ended job'"'"'s last entries; pages of long lines read at once' '
  job_json longl.json longl "i=0; while [ \$i -lt 40 ]; do printf \"L%d \" \$i; head -c 65000 /dev/zero | tr \"\\\\0\" q; echo; i=\$((i+1)); done" &&
  submit longl.json && wait_for 30 ended longl &&
  url="$BASE/v1/projects/p1/jobs/longl/logs?taskName=master-replica-0" &&
  curl -s "$url" >p1.json &&
  test "$(json_get p1.json "len(d[\"entries\"])")" -lt 40 &&
  tok=$(json_get p1.json "d[\"nextPageToken\"]") &&
  curl -s "$url&pageToken=$tok" >p2.json && tok=$(json_get p2.json "d[\"nextPageToken\"]") &&
  curl -s "$url&pageToken=$tok" >p3.json &&
  json_get p3.json "\"nextPageToken\" not in d" | grep -q True &&
  TRAINYARD_API_ENDPOINT=$BASE timeout 10 "$TRAINYARD" jobs stream-logs longl --project p1 \
    --task-name master-replica-0 --polling-interval 60 >poll.out &&
  test "$(grep -c "	L[0-9]* q" poll.out)" -eq 40
'
trainyardd_stop svc
test_done
