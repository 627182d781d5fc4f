#!/bin/sh
# t5070-isolation: the isolation matrix of trainyardd (docs/security.md). Two projects with
# their own tokens each have jobs (one ended, one running) with unique markers in their ids,
# labels and logs; isolation-matrix.py then calls every row of the API table with no token, a
# wrong token, the other project's token, and crafted ids and task names: every answer is
# 400/401/403/404 in Google's error form, none shows the other project's data, and nothing of
# the other project is changed.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID
TA=tok-a-$M-aaaaaaaaaaaaaaaa
TB=tok-b-$M-bbbbbbbbbbbbbbbb
printf '%s pa\n%s pb\n' "$TA" "$TB" >"$TEST_DIR/tokens" && chmod 600 "$TEST_DIR/tokens"

# api PROJECT METHOD PATH [BODY_FILE]: with PROJECT's token; body to out.json, prints status
api() {
  tok=$TA; [ "$1" = pb ] && tok=$TB
  curl -s -o out.json -w '%{http_code}' -X "$2" -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' ${4:+--data-binary "@$4"} "$BASE$3"
}
# plant PROJECT JOB_ID MASTER_SH: a job with a marker label
plant() {
  write_job "$2.ti" "$3" &&
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["jobId"]=sys.argv[2]
d["labels"]={"marker": sys.argv[3]}; json.dump(d, open(sys.argv[4],"w"))' \
    "$2.ti" "$2" "lab-$2" "$2.json" &&
  test "$(api "$1" POST "/v1/projects/$1/jobs" "$2.json")" = 200
}
state_is() {
  api "$1" GET "/v1/projects/$1/jobs/$2" >/dev/null && grep -q "\"state\": \"$3\"" out.json
}
logs_have() {
  api "$1" GET "/v1/projects/$1/jobs/$2/logs" >/dev/null && grep -q "$3" out.json
}

trainyardd_start svc --auth-tokens "$TEST_DIR/tokens" && BASE=$TYD_URL ||
  { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR/svc.log"; exit 1; }
PORT=${BASE##*:}

test_expect_success 'two projects, each with an ended and a running job, markers in their logs' '
  plant pa done_a_$M "echo log-done-a-$M" &&
  plant pb done_b_$M "echo log-done-b-$M" &&
  plant pa run_a_$M "echo log-run-a-$M; sleep 120" &&
  plant pb run_b_$M "echo log-run-b-$M; sleep 120" &&
  wait_for 30 state_is pa done_a_$M SUCCEEDED && wait_for 30 state_is pb done_b_$M SUCCEEDED &&
  wait_for 30 logs_have pa run_a_$M log-run-a-$M && wait_for 30 logs_have pb run_b_$M log-run-b-$M
'

cat >"$TEST_DIR/markers.json" <<EOF
{"tokens": {"pa": "$TA", "pb": "$TB"},
 "jobs": {"pa": ["done_a_$M", "run_a_$M"], "pb": ["done_b_$M", "run_b_$M"]},
 "markers": {"pa": ["lab-done_a_$M", "lab-run_a_$M", "log-done-a-$M", "log-run-a-$M"],
             "pb": ["lab-done_b_$M", "lab-run_b_$M", "log-done-b-$M", "log-run-b-$M"]}}
EOF
test_expect_success 'every API row, every credential and crafted id: 400/401/403/404, nothing leaks' '
  "$PYTHON" "$TY_SOURCE_DIR/tests/integration/isolation-matrix.py" \
    "$TY_SOURCE_DIR/src/trainyardd/route.h" 127.0.0.1 "$PORT" "$TEST_DIR/markers.json"
'

test_expect_success 'the running jobs are still RUNNING, then cancelled by their own project' '
  state_is pa run_a_$M RUNNING && state_is pb run_b_$M RUNNING &&
  test "$(api pa POST /v1/projects/pa/jobs/run_a_$M:cancel)" = 200 &&
  test "$(api pb POST /v1/projects/pb/jobs/run_b_$M:cancel)" = 200 &&
  wait_for 30 state_is pa run_a_$M CANCELLED && wait_for 30 state_is pb run_b_$M CANCELLED
'
trainyardd_stop svc

test_done
