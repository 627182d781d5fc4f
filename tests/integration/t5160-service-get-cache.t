#!/bin/sh
# t5160-service-get-cache: jobs.get answers from trainyardd's cache of rendered answers
# (src/trainyardd/jobcache.c) are always the job as it is now. A repeated get gives the same
# bytes, in both forms (prettyPrint and not); a write to the store from another process (Python's
# sqlite3 on the database file, as any program could: labels, a transition, the state) is seen by
# the very next get; a QUEUED job's jobPosition and stateReason follow the scheduler when another
# job leaves the queue or a job of higher priority joins it ahead (its own row unchanged: the
# cache trusts its scheduler values only while the scheduler's change count stands); and a job run by its supervisor (another process
# writing the store) is seen through every state to SUCCEEDED, transitions and attemptStatus
# included, while gets keep hitting the cache in between. While nothing is committed to the store,
# repeated gets are answered without even reading the job's version (the store's commit epoch),
# and a write by another process ends that for the very next get.
. "$(dirname "$0")/../lib/test-lib.sh"

DB="$TEST_DIR/q/trainyard.db"

# get JOB [QUERY]: the body of jobs.get of JOB in project p to out.json
get() {
  curl -sf -o out.json "$BASE/v1/projects/p/jobs/$1${2:-}"
}
# create JOB MASTER_SH [PRIORITY]
create() {
  write_job "$1.ti" "$2" 0 &&
    "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["jobId"]=sys.argv[2]
if sys.argv[4]: d["trainingInput"].setdefault("scheduling", {})["priority"] = int(sys.argv[4])
json.dump(d, open(sys.argv[3],"w"))' "$1.ti" "$1" "$1.json" "${3:-}" &&
    curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' --data-binary "@$1.json" "$BASE/v1/projects/p/jobs"
}
# sql STATEMENT: run it on the store from this process (not the daemon's connections)
sql() {
  "$PYTHON" -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1], timeout=10); c.execute(sys.argv[2]); c.commit()' "$DB" "$1"
}

trainyardd_start q --max-running-jobs 0 && BASE=$TYD_URL

test_expect_success 'three QUEUED jobs; a repeated get gives the same bytes, in both forms' '
  create j1 "true" && create j2 "true" && create j3 "true" &&
  get j3 && cp out.json a1 && get j3 && cmp a1 out.json &&
  get j3 "?prettyPrint=false" && cp out.json c1 && get j3 "?prettyPrint=false" && cmp c1 out.json &&
  ! cmp -s a1 c1 &&
  json_get a1 "d == json.load(open(\"c1\"))" | grep -q True &&
  test "$(json_get a1 "d[\"jobPosition\"]")" = 3
'

test_expect_success 'labels written by another process: the next get shows them' '
  get j2 && get j2 && test "$(json_get out.json "d[\"labels\"]")" != "{'"'"'k'"'"': '"'"'v'"'"'}" &&
  sql "UPDATE jobs SET labels = '"'"'{\"k\":\"v\"}'"'"' WHERE job_id = '"'"'j2'"'"'" &&
  get j2 && test "$(json_get out.json "d[\"labels\"]")" = "{'"'"'k'"'"': '"'"'v'"'"'}" &&
  get j2 "?prettyPrint=false" && test "$(json_get out.json "d[\"labels\"][\"k\"]")" = v
'

# metric NAME: its value in /metrics now
metric() { curl -sf "$BASE/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }

test_expect_success 'while nothing is committed, repeated gets skip even the version lookup; a write ends that at once' '
  get j1 && get j1 && u0=$(metric trainyard_api_get_cache_unchanged_hits_total) &&
  get j1 && get j1 && get j1 &&
  u1=$(metric trainyard_api_get_cache_unchanged_hits_total) &&
  test "$u1" -ge $((u0 + 1)) &&
  sql "UPDATE jobs SET labels = '"'"'{\"w\":\"1\"}'"'"' WHERE job_id = '"'"'j1'"'"'" &&
  get j1 && test "$(json_get out.json "d[\"labels\"]")" = "{'"'"'w'"'"': '"'"'1'"'"'}" &&
  sql "UPDATE jobs SET labels = '"'"'{\"w\":\"2\"}'"'"' WHERE job_id = '"'"'j1'"'"'" &&
  get j1 && test "$(json_get out.json "d[\"labels\"]")" = "{'"'"'w'"'"': '"'"'2'"'"'}"
'

test_expect_success 'a transition recorded by another process: the next get lists it' '
  get j2 && test "$(json_get out.json "len(d[\"transitions\"])")" = 1 &&
  sql "INSERT INTO transitions (job_seq, state, usec) SELECT seq, '"'"'PREPARING'"'"', create_usec + 1 FROM jobs WHERE job_id = '"'"'j2'"'"'" &&
  get j2 && test "$(json_get out.json "[t[\"state\"] for t in d[\"transitions\"]]")" = "['"'"'QUEUED'"'"', '"'"'PREPARING'"'"']"
'

test_expect_success 'a QUEUED job moves up when one ahead leaves the queue (its row unchanged)' '
  get j3 && test "$(json_get out.json "d[\"jobPosition\"]")" = 3 &&
  reason=$(json_get out.json "d[\"stateReason\"]") &&
  curl -sf -o /dev/null -X POST "$BASE/v1/projects/p/jobs/j1:cancel" &&
  get j3 && test "$(json_get out.json "d[\"jobPosition\"]")" = 2 &&
  test "$(json_get out.json "d[\"stateReason\"]")" != "$reason" &&
  get j3 "?prettyPrint=false" && test "$(json_get out.json "d[\"jobPosition\"]")" = 2
'

test_expect_success 'a job of higher priority joins the queue ahead: the next get of a cached one moves down' '
  get j2 && get j2 && test "$(json_get out.json "d[\"jobPosition\"]")" = 1 &&
  create j4 "true" 500 &&
  get j2 && test "$(json_get out.json "d[\"jobPosition\"]")" = 2 &&
  json_get out.json "d[\"stateReason\"]" | grep -q "1 job ahead of it" &&
  get j4 && test "$(json_get out.json "d[\"jobPosition\"]")" = 1 &&
  get j3 "?prettyPrint=false" && test "$(json_get out.json "d[\"jobPosition\"]")" = 3
'

test_expect_success 'a state written by another process: the next get shows it, without jobPosition' '
  get j3 && get j3 && test "$(json_get out.json "d[\"state\"]")" = QUEUED &&
  sql "UPDATE jobs SET state = '"'"'FAILED'"'"', end_usec = create_usec + 5, error_message = '"'"'set outside'"'"' WHERE job_id = '"'"'j3'"'"'" &&
  get j3 && test "$(json_get out.json "d[\"state\"]")" = FAILED &&
  test "$(json_get out.json "d[\"errorMessage\"]")" = "set outside" &&
  test "$(json_get out.json "\"jobPosition\" in d")" = False
'

trainyardd_stop q
trainyardd_start r && BASE=$TYD_URL
DB="$TEST_DIR/r/trainyard.db"

# is_state JOB STATE: a get (the cache's or not) shows STATE
is_state() { get "$1" && test "$(json_get out.json "d[\"state\"]")" = "$2"; }

test_expect_success 'a job run by its supervisor is seen through every state to SUCCEEDED' '
  create run1 "sleep 2" &&
  wait_for 30 is_state run1 RUNNING &&
  wait_for 30 is_state run1 SUCCEEDED &&
  test "$(json_get out.json "[t[\"state\"] for t in d[\"transitions\"]]")" = "['"'"'QUEUED'"'"', '"'"'PREPARING'"'"', '"'"'RUNNING'"'"', '"'"'SUCCEEDED'"'"']" &&
  test "$(json_get out.json "d[\"attemptStatus\"][\"attempt\"]")" = 1 &&
  test -n "$(json_get out.json "d[\"endTime\"]")"
'

trainyardd_stop r
test_done
