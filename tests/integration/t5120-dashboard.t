#!/bin/sh
# t5120-dashboard: trainyardd's web dashboard in a real browser (headless Chromium driven
# through chromedriver by Selenium, dashboard-check.py). A service with a tokens file of two
# projects; p1 has a job that succeeded, one whose worker exited 3, one that prints a line
# every 0.3 s and one QUEUED behind it (p1 may run one job at once); p2 has its own job. The
# checks: sign-in (a wrong token refused with the service's message), p1's jobs and not p2's,
# the queue position, rows updated in place by the list's refresh (a selection kept), the
# project's job count following the list, filter (and its 400), sorting by click and keyboard, a failed job's
# errorMessage and failing replica, its "last lines" (and "Jump to end") at the real end of a
# log of long wrapped lines, labels saved with the etag (a stale one
# reported; a save whose connection broke sent again), the running job's logs streaming in (and again after the service restarts),
# Cancel (its first request broken before or after it landed), the logs page's header
# following a job from QUEUED to RUNNING while its log streams, a token revoked (SIGHUP) while
# the page follows a log noticed at once, 390 px wide pages, the first load's size, and no console errors. Screenshots go to $TY_ARTIFACT_DIR, else $TEST_DIR/artifacts.
. "$(dirname "$0")/../lib/test-lib.sh"

. "$TY_SOURCE_DIR/tests/lib/dashboard.sh"
dashboard_require 'the dashboard in Chromium'

M=$$
T1=tok-p1-$M-aaaaaaaaaaaaaaaa
T2=tok-p2-$M-bbbbbbbbbbbbbbbb
printf '%s p1\n%s p2\n' "$T1" "$T2" >"$TEST_DIR/tokens" && chmod 600 "$TEST_DIR/tokens"
trainyardd_start svc --auth-tokens "$TEST_DIR/tokens" --project-limit=p1:jobs=1 && BASE=$TYD_URL ||
  { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR/svc.log"; exit 1; }

# api PROJECT METHOD PATH [BODY_FILE]: with PROJECT's token; body to out.json, prints status
api() {
  tok=$T1; [ "$1" = p2 ] && tok=$T2
  curl -s -o out.json -w '%{http_code}' -X "$2" -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' ${4:+--data-binary "@$4"} "$BASE$3"
}
# make_job PROJECT JOB_ID MASTER_SH [WORKERS [LABELS_JSON]]
make_job() {
  labels=${5:-}; [ -n "$labels" ] || labels="{}"
  write_job "$2.ti" "$3" "${4:-0}" &&
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["jobId"]=sys.argv[2]
d["labels"]=json.loads(sys.argv[3]); json.dump(d, open(sys.argv[4],"w"))' \
    "$2.ti" "$2" "$labels" "$2.json" &&
  test "$(api "$1" POST "/v1/projects/$1/jobs" "$2.json")" = 200
}
state_is() {
  api "$1" GET "/v1/projects/$1/jobs/$2" >/dev/null && grep -q "\"state\": \"$3\"" out.json
}
logs_have() {
  api "$1" GET "/v1/projects/$1/jobs/$2/logs" >/dev/null && grep -q "$3" out.json
}

test_expect_success 'jobs of p1 (ended, failed, running, queued) and of p2' '
  make_job p1 ok_job "echo hello-$M; echo warning-line >&2; echo hello İstanbul error-mark" 0 "{\"team\": \"vision\"}" &&
  make_job p1 fail_job "if echo \$CLUSTER_SPEC | grep -q \"type\\\":\\\"worker\\\"\"; then echo worker-dies >&2; exit 3; fi; exec sleep 60" 1 &&
  wait_for 20 state_is p1 ok_job SUCCEEDED && wait_for 20 state_is p1 fail_job FAILED &&
  make_job p1 long_job "i=0; while [ \$i -lt 24 ]; do printf \"long-%d \" \$i; head -c 60000 /dev/zero | tr \"\\\\0\" q; echo; i=\$((i+1)); done; echo long-end-$M" &&
  wait_for 20 state_is p1 long_job SUCCEEDED &&
  make_job p1 wide_job "i=0; while [ \$i -lt 500 ]; do printf \"wide-%d \" \$i; head -c 1500 /dev/zero | tr \"\\\\0\" w; echo; i=\$((i+1)); done; echo wide-end-$M" &&
  wait_for 20 state_is p1 wide_job SUCCEEDED &&
  make_job p1 run_job "i=0; while [ \$i -lt 400 ]; do i=\$((i+1)); echo tick-\$i; sleep 0.3; done" &&
  wait_for 20 logs_have p1 run_job tick-1 &&
  make_job p1 queue_job "echo queued-$M" &&
  state_is p1 queue_job QUEUED &&
  make_job p2 other_job "echo other-$M" &&
  wait_for 20 state_is p2 other_job SUCCEEDED
'

# restart.sh: the service stopped (SIGTERM: running jobs carry on) and started again on the same
# port and state, as an operator's restart; for the logs page's reconnection. The stopped daemon
# is this script's child, a zombie until the checks end: "gone" is when it no longer listens.
PORT=${BASE##*:}
ROOT_JOBS=; [ "$(id -u)" -eq 0 ] && ROOT_JOBS=--allow-root-jobs
cat >"$TEST_DIR/restart.sh" <<EOF2
#!/bin/sh
n=\$(grep -c "listening on" "$TEST_DIR/svc.log")
kill -TERM \$(cat "$TEST_DIR/svc.pid")
i=0; while curl -s -o /dev/null "$BASE/healthz" && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i + 1)); done
sleep 2 # down long enough that the page's first catch-up attempts fail as well
"$TY_BUILD_DIR/bin/trainyardd" --listen 127.0.0.1:$PORT --state-dir "$TEST_DIR/svc" --grace-period 1 \
  $ROOT_JOBS --auth-tokens "$TEST_DIR/tokens" --project-limit=p1:jobs=1 >>"$TEST_DIR/svc.log" 2>&1 &
echo \$! >"$TEST_DIR/svc.pid"
i=0; while [ "\$(grep -c "listening on" "$TEST_DIR/svc.log")" -le "\$n" ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i + 1)); done
curl -sf -o /dev/null "$BASE/healthz"
EOF2
chmod +x "$TEST_DIR/restart.sh"

cat >"$TEST_DIR/config.json" <<EOF2
{"base": "$BASE", "t1": "$T1", "t2": "$T2", "restart": "$TEST_DIR/restart.sh",
 "image": "${JOB_IMAGE:-example.com/test:1}",
 "tokens": "$TEST_DIR/tokens", "pidfile": "$TEST_DIR/svc.pid",
 "artifacts": "$DASHBOARD_ART",
 "jobs": {"ok": "ok_job", "fail": "fail_job", "run": "run_job", "queue": "queue_job",
          "other": "other_job", "long": "long_job", "wide": "wide_job"}}
EOF2
dashboard_checks 'dashboard' dashboard-check.py "$TEST_DIR/config.json"

# The UI cancelled both, the checks their own jobs; whatever is left must not outlive the test.
(cd "$TEST_DIR" &&
  for j in count_job block_job state_job revoke_job; do api p1 POST "/v1/projects/p1/jobs/$j:cancel" >/dev/null; done
  api p1 POST /v1/projects/p1/jobs/run_job:cancel >/dev/null &&
  api p1 POST /v1/projects/p1/jobs/queue_job:cancel >/dev/null &&
  wait_for 10 state_is p1 run_job CANCELLED)
trainyardd_stop svc
test_done
