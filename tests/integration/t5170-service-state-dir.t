#!/bin/sh
# t5170-service-state-dir: one trainyardd per state directory, and what a start finds there
# (docs/service.md, "What survives a kill"): a second trainyardd on the directory is refused
# before it touches a job; a cancel recorded by a trainyardd killed before it signalled the
# job's supervisor is carried out by the next one; a store whose jobs cannot be listed stops
# the start, naming the directory, instead of serving jobs nobody runs; an empty store next to
# the service's job directories is not silently replaced by a new one.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID
SD="$TEST_DIR/sd"
# tyd NAME [FLAGS...]: start trainyardd on $SD, its log NAME.log, its pid in pid and its
# address in url (each test runs in a shell of its own)
tyd() {
  local name=$1; shift
  "$TY_BUILD_DIR/bin/trainyardd" --listen 127.0.0.1:0 --state-dir "$SD" --grace-period 1 \
    --allow-root-jobs "$@" >"$TEST_DIR/$name.log" 2>&1 &
  echo $! >"$TEST_DIR/pid"
  wait_for 20 grep -q "listening on" "$TEST_DIR/$name.log" || return 1
  echo "http://127.0.0.1:$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TEST_DIR/$name.log" | tail -1)" >"$TEST_DIR/url"
}
state_of() { curl -s "$(cat "$TEST_DIR/url")/v1/projects/p1/jobs/$1" | "$PYTHON" -c "import json,sys; print(json.load(sys.stdin).get(\"state\"))"; }
submit() {
  printf '{"jobId": "%s", "trainingInput": {"scaleTier": "BASIC", "masterConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", "-c", "%s"]}}}' "$1" "$2" >"$TEST_DIR/$1.json"
  curl -sf -X POST -H "Content-Type: application/json" --data-binary @"$TEST_DIR/$1.json" "$(cat "$TEST_DIR/url")/v1/projects/p1/jobs" >/dev/null
}

test_expect_success 'a second trainyardd on the same state directory is refused' '
  tyd a || exit 1
  first=$(cat pid)
  set +e; timeout 20 "$TY_BUILD_DIR/bin/trainyardd" --listen 127.0.0.1:0 --state-dir "$SD" --allow-root-jobs >second.log 2>&1; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "another trainyardd (pid $first) serves the state directory $SD" second.log &&
  ! grep -q "listening on\|re-attached\|admitted" second.log
'
test_expect_success 'a cancel recorded but never signalled is carried out by the next trainyardd' '
  submit c "exec sleep 611.$M" &&
  running() { test "$(state_of c)" = RUNNING; } &&
  wait_for 20 running &&
  kill -KILL "$(cat pid)" &&
  gone() { ! kill -0 "$(cat pid)" 2>/dev/null; } && wait_for 10 gone &&
  "$PYTHON" -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute(\"UPDATE jobs SET state = ? WHERE job_id = ?\", (\"CANCELLING\", \"c\"))
db.commit()" "$SD/trainyard.db" &&
  tyd b || exit 1
  cancelled() { test "$(state_of c)" = CANCELLED; } &&
  wait_for 20 cancelled &&
  wait_for 10 no_procs "sleep 611.$M" &&
  kill -TERM "$(cat pid)" && wait_for 10 gone
'
test_expect_success 'a store whose jobs cannot be listed stops the start, naming the directory' '
  "$PYTHON" -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
page = db.execute(\"PRAGMA page_size\").fetchone()[0]
root = db.execute(\"SELECT rootpage FROM sqlite_schema WHERE name = ?\", (\"jobs_state\",)).fetchone()[0]
db.close()
with open(sys.argv[1], \"r+b\") as f:
    f.seek(page * (root - 1))
    f.write(bytes([0x0d] + [0xff] * (page - 1)))" "$SD/trainyard.db" &&
  set +e; timeout 20 "$TY_BUILD_DIR/bin/trainyardd" --listen 127.0.0.1:0 --state-dir "$SD" --allow-root-jobs >bad.log 2>&1; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "cannot recover the jobs of $SD" bad.log &&
  ! grep -q "listening on" bad.log
'
test_expect_success 'an empty store next to the service'"'"'s jobs is not replaced by a new one' '
  rm -f "$SD/trainyard.db-wal" "$SD/trainyard.db-shm" && : >"$SD/trainyard.db" &&
  set +e; timeout 20 "$TY_BUILD_DIR/bin/trainyardd" --listen 127.0.0.1:0 --state-dir "$SD" --allow-root-jobs >empty.log 2>&1; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "the store $SD/trainyard.db is missing or empty, but $SD/jobs holds the jobs of project .p1." empty.log &&
  test ! -s "$SD/trainyard.db"
'
test_expect_success 'a store whose changes were all in its lost -wal file is not replaced either' '
  # what a kill -9 before the first checkpoint leaves: page 1 in the file, the rest in the
  # -wal file; the -wal file then lost (a backup of the file alone)
  rm -f "$SD/trainyard.db" &&
  "$PYTHON" -c "
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute(\"PRAGMA journal_mode=WAL\")
db.execute(\"CREATE TABLE jobs(x)\")
db.commit()
os._exit(0)" "$SD/trainyard.db" &&
  rm -f "$SD/trainyard.db-wal" "$SD/trainyard.db-shm" &&
  before=$(cksum <"$SD/trainyard.db") &&
  set +e; timeout 20 "$TY_BUILD_DIR/bin/trainyardd" --listen 127.0.0.1:0 --state-dir "$SD" --allow-root-jobs >wal.log 2>&1; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "the store $SD/trainyard.db is missing or empty, but $SD/jobs holds the jobs of project .p1." wal.log &&
  test "$(cksum <"$SD/trainyard.db")" = "$before"
'
test_done
