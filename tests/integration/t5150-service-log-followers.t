#!/bin/sh
# t5150-service-log-followers: a log follower leaving (`jobs stream-logs` interrupted, a
# dashboard tab closed) is normal: trainyardd does not log libmicrohttpd's "Failed to send the
# chunked response body" for it (only --verbose says that a client left), and the job and the
# next follower are unaffected.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID
# A job that writes a line every 50 ms for about 2 s: the service has more to send after the
# follower has gone.
cat >"$TEST_DIR/talk.json" <<JOB
{"jobId": "talk", "trainingInput": {"scaleTier": "BASIC", "masterConfig": {"imageUri": "x/y:1",
 "containerCommand": ["sh", "-c", "i=0; while [ \$i -lt 40 ]; do echo line \$i.$M; i=\$((i+1)); sleep 0.05; done"]}}}
JOB

# follow_and_leave URL: submit talk, follow its logs, leave after the first lines, wait for
# the job to end.
follow_and_leave() {
  curl -sf -X POST -H 'Content-Type: application/json' --data-binary @talk.json \
    "$1/v1/projects/p1/jobs" >/dev/null &&
  wait_for 10 sh -c "curl -s '$1/v1/projects/p1/jobs/talk/logs' | grep -q 'line 3\\.'" &&
  { timeout 0.5 curl -sN "$1/v1/projects/p1/jobs/talk/logs?follow=true" >follow.out || true; } &&
  grep -q "line 3\\.$M" follow.out &&
  wait_for 20 sh -c "curl -s '$1/v1/projects/p1/jobs/talk' | grep -q SUCCEEDED"
}

trainyardd_start quiet
QUIET=$TYD_URL
trainyardd_start chatty --verbose
CHATTY=$TYD_URL

test_expect_success 'a follower leaving mid-stream is not logged as an error' '
  follow_and_leave "$QUIET" &&
  curl -sN "$QUIET/v1/projects/p1/jobs/talk/logs?follow=true" >all.out &&
  grep -q "line 39\\.$M" all.out &&
  ! grep -n "Failed to send\|client left" quiet.log
'
test_expect_success 'with --verbose, the daemon says that the client left' '
  follow_and_leave "$CHATTY" &&
  grep -q "http: the client left before its response was sent (Failed to send the chunked response body" chatty.log &&
  ! grep "http: Failed to send" chatty.log
'
test_expect_success 'stream-logs prints a whole 64 KiB line of control bytes (its JSON six times longer)' '
  cat >wide.json <<-JOB &&
	{"jobId": "wide", "trainingInput": {"scaleTier": "BASIC", "masterConfig": {"imageUri": "x/y:1",
	 "containerCommand": ["sh", "-c", "head -c 65536 /dev/zero | tr \"\\\\0\" \"\\\\001\"; echo; echo after.$M"]}}}
	JOB
  curl -sf -X POST -H "Content-Type: application/json" --data-binary @wide.json "$QUIET/v1/projects/p1/jobs" >/dev/null &&
  TRAINYARD_API_ENDPOINT=$QUIET "$TRAINYARD" jobs stream-logs wide --project p1 --task-name master-replica-0 >wide.out 2>wide.err &&
  ! grep -q "not a JSON object" wide.err &&
  grep -q "after\.$M" wide.out &&
  test "$(tr -cd "\001" <wide.out | wc -c)" -eq 65536
'
trainyardd_stop quiet
trainyardd_stop chatty
test_done
