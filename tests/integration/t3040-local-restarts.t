#!/bin/sh
# t3040-local-restarts: the restart and retry rules of docs/lifecycle.md on `local train` with
# the process runtime, by fault injection through real processes: replicas that kill
# themselves (a signal trainyard did not send), crash, or fail for good. Every replica appends
# a hash of its CLUSTER_SPEC and TF_CONFIG to <dir>/<role><index>.runs on every run, so a test
# can count runs and check that a restarted replica got the same environment byte for byte.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID # a marker unique to this test run, put into long-running replicas' command lines

cat >"$TEST_DIR/replica.sh" <<'SH'
#!/bin/sh
# replica.sh MODE DIR MARKER: record this run, then behave as MODE says. A replica whose end
# the test counts on its peers having run first waits for their records (not for a time: a
# loaded machine starts them late).
mode=$1 dir=$2 m=$3
t=$(printf '%s' "$TF_CONFIG" | sed -n 's/.*"task":{"type":"\([a-z]*\)","index":\([0-9]*\)}.*/\1\2/p')
n=$(($(cat "$dir/$t.runs" 2>/dev/null | wc -l) + 1)) # this run's number
printf '%s\n' "$CLUSTER_SPEC $TF_CONFIG" | md5sum | cut -c1-32 >>"$dir/$t.runs"
# wait_lines N FILE...: until every FILE in DIR has N lines (30 s at most)
wait_lines() {
  want=$1 i=0
  shift
  for f in "$@"; do
    while [ "$(cat "$dir/$f" 2>/dev/null | wc -l)" -lt "$want" ] && [ $i -lt 600 ]; do
      sleep 0.05
      i=$((i + 1))
    done
  done
}
case $mode.$t in
  kill-once.worker0) [ "$n" = 1 ] && kill -9 $$; exec sleep "900.$m" ;;
  kill-once.master0) wait_lines 2 worker0.runs; exit 0 ;;
  exit3.worker0) exit 3 ;;
  crash-once.master0) wait_lines "$n" worker0.runs worker1.runs ps0.runs; [ "$n" = 1 ] && exit 139; exit 0 ;;
  always-killed.worker0) [ $(((n - 1) % 6)) = 0 ] && wait_lines $(((n - 1) / 6 + 1)) master0.runs; kill -9 $$ ;;
  killed-each-attempt.worker0) wait_lines "$n" master0.runs ps0.runs; kill -9 $$ ;;
  slowly-killed.worker0) sleep 0.5; kill -9 $$ ;;
  stubborn.ps0|crash-stubborn.ps0) trap "" TERM; echo armed >>"$dir/$t.armed"; sleep "900.$m" & wait; wait ;;
  crash-stubborn.master0) wait_lines 1 ps0.armed; exit 139 ;;
  stubborn.master0) wait_lines 1 worker0.runs worker1.runs ps0.armed; exit 0 ;;
esac
exec sleep "900.$m"
SH

# Usage: job FILE MODE WORKERS PS [EXTRA_TRAINING_INPUT_JSON]
job() {
  mkdir -p "$TEST_DIR/runs.$1"
  write_job "$1" "exec sh $TEST_DIR/replica.sh $2 $TEST_DIR/runs.$1 $M" "$3" "$4" 0 "${5:-}"
}
runs() { cat "$TEST_DIR/runs.$1/$2.runs" 2>/dev/null | wc -l; }
runs_at_least() { [ "$(runs "$1" "$2")" -ge "$3" ]; }
distinct() { sort -u "$TEST_DIR/runs.$1/$2.runs" | wc -l; }
record() { json_get "$TRAINYARD_HOME/jobs/local/$1/job.json" "$2"; }

test_expect_success 'a replica killed from outside once is restarted in place; the job succeeds' '
  job k1 kill-once 1 0 &&
  "$TRAINYARD" local train k1 --config k1 >log 2>&1 &&
  grep -q "The replica worker 0 was killed by signal 9 (SIGKILL) from outside trainyard; restarting it (restart 1 of 5)." log &&
  test "$(runs k1 worker0)" = 2 && test "$(distinct k1 worker0)" = 1 &&
  test "$(runs k1 master0)" = 1 &&
  ! grep -q "Retrying the job" log &&
  test "$(record k1 "d[\"state\"]")" = SUCCEEDED &&
  test "$(record k1 "d[\"attemptStatus\"][\"replicaRestarts\"][\"worker-replica-0\"]")" = 1 &&
  test "$(record k1 "d[\"attemptStatus\"][\"attempt\"]")" = 1 &&
  no_procs "sleep 900.$M"
'
test_expect_success 'a worker exiting 3 fails the job at once; it ran once' '
  job e3 exit3 1 0 &&
  set +e; "$TRAINYARD" local train e3 --config e3 >log 2>&1; rc=$?; set -e
  test $rc = 1 &&
  test "$(record e3 "d[\"errorMessage\"]")" = "The replica worker 0 exited with a non-zero status of 3." &&
  test "$(runs e3 worker0)" = 1 &&
  ! grep -q -e restarting -e "Retrying the job" log &&
  no_procs "sleep 900.$M"
'
test_expect_success 'a master crashing (139) in attempt 1 only: every replica ran twice, same addresses' '
  job c1 crash-once 2 1 &&
  "$TRAINYARD" local train c1 --config c1 --grace-period 2 >log 2>&1 &&
  grep -q "Retrying the job (attempt 2 of 4): The replica master 0 exited with a non-zero status of 139." log &&
  grep -q "service             \[attempt 2\] Starting attempt 2 of 4." log &&
  ! grep -q "\[attempt 1\]" log &&
  for t in master0 worker0 worker1 ps0; do test "$(runs c1 $t)" = 2 && test "$(distinct c1 $t)" = 1 || exit 1; done &&
  test "$(record c1 "d[\"state\"]")" = SUCCEEDED &&
  test "$(record c1 "d[\"attemptStatus\"][\"attempt\"]")" = 2 &&
  no_procs "sleep 900.$M"
'
test_expect_success 'a worker always killed from outside: (1+5) x 4 = 24 runs, then FAILED' '
  job a1 always-killed 1 0 &&
  set +e; "$TRAINYARD" local train a1 --config a1 --grace-period 2 >log 2>&1; rc=$?; set -e
  test $rc = 1 &&
  test "$(runs a1 worker0)" = 24 && test "$(runs a1 master0)" = 4 &&
  test "$(record a1 "d[\"errorMessage\"]")" = "The replica worker 0 was terminated by signal 9 (SIGKILL)." &&
  test "$(grep -c "restarting it (restart" log)" = 20 &&
  grep -q "restarting it (restart 5 of 5)." log &&
  grep -q "Retrying the job (attempt 4 of 4): The replica worker 0 was terminated by signal 9 (SIGKILL)." log &&
  grep -q "Not retrying the job: attempt 4 of 4 was the last." log &&
  test "$(record a1 "d[\"attemptStatus\"][\"attempt\"]")" = 4 &&
  no_procs "sleep 900.$M"
'
test_expect_success 'disableRetries: the same worker runs once and fails the job' '
  job d1 always-killed 1 0 "{\"scheduling\": {\"disableRetries\": true}}" &&
  set +e; "$TRAINYARD" local train d1 --config d1 >log 2>&1; rc=$?; set -e
  test $rc = 1 &&
  test "$(runs d1 worker0)" = 1 && test "$(runs d1 master0)" = 1 &&
  test "$(record d1 "d[\"errorMessage\"]")" = "The replica worker 0 was terminated by signal 9 (SIGKILL)." &&
  grep -q "Not restarting the replica worker 0: retries are disabled (scheduling.disableRetries)." log &&
  test "$(record d1 "d[\"attemptStatus\"][\"maxAttempts\"]")" = 1 &&
  no_procs "sleep 900.$M"
'
test_expect_success 'disableRetries: a crash is not retried, and the log says the job is not' '
  job d2 crash-once 2 1 "{\"scheduling\": {\"disableRetries\": true}}" &&
  set +e; "$TRAINYARD" local train d2 --config d2 >log 2>&1; rc=$?; set -e
  test $rc = 1 &&
  test "$(runs d2 master0)" = 1 &&
  grep -q "Not retrying the job (master 0 failed): retries are disabled (scheduling.disableRetries)." log &&
  test "$(record d2 "d[\"attemptStatus\"][\"attempt\"]"),$(record d2 "d[\"attemptStatus\"][\"maxAttempts\"]")" = 1,1
'
test_expect_success 'restartJobOnWorkerRestart: every replica runs 4 times, one attempt each' '
  job r1 killed-each-attempt 1 1 "{\"scheduling\": {\"restartJobOnWorkerRestart\": true}}" &&
  set +e; "$TRAINYARD" local train r1 --config r1 --grace-period 2 >log 2>&1; rc=$?; set -e
  test $rc = 1 &&
  for t in master0 worker0 ps0; do test "$(runs r1 $t)" = 4 || exit 1; done &&
  ! grep -q "restarting it" log &&
  test "$(record r1 "d[\"errorMessage\"]")" = "The replica worker 0 was terminated by signal 9 (SIGKILL)." &&
  no_procs "sleep 900.$M"
'
test_expect_success 'disableRetries wins over restartJobOnWorkerRestart' '
  job b1 always-killed 1 0 "{\"scheduling\": {\"restartJobOnWorkerRestart\": true, \"disableRetries\": true}}" &&
  set +e; "$TRAINYARD" local train b1 --config b1 >log 2>&1; rc=$?; set -e
  test $rc = 1 && test "$(runs b1 worker0)" = 1 && test "$(runs b1 master0)" = 1
'
test_expect_success 'cancel inside a restart loop cancels at once; nothing is left' '
  job s1 slowly-killed 1 1 || exit 1
  "$TRAINYARD" local train s1 --config s1 --grace-period 5 >log 2>&1 &
  pid=$!
  { wait_for 30 runs_at_least s1 worker0 3 || { kill -KILL $pid; false; }; } &&
  kill -INT $pid &&
  set +e; wait $pid; rc=$?; set -e
  test $rc = 1 &&
  n=$(runs s1 worker0) && sleep 1 && test "$(runs s1 worker0)" = "$n" &&
  test "$(record s1 "d[\"state\"]")" = CANCELLED &&
  grep -q "Job cancelled." log &&
  no_procs "sleep 900.$M"
'
test_expect_success 'cancel while an attempt is torn down for a retry: no new attempt, killed at once' '
  job x1 crash-stubborn 0 1 || exit 1
  rm -f log # the grep below must not read an earlier test s log before this run made its own
  "$TRAINYARD" local train x1 --config x1 --grace-period 60 >log 2>&1 &
  pid=$!
  { wait_for 30 grep -q "Retrying the job (attempt 2 of 4)" log || { kill -KILL $pid; false; }; } &&
  kill -INT $pid &&
  { wait_for 10 sh -c "! kill -0 $pid" || { kill -KILL $pid; false; }; } &&
  set +e; wait $pid; rc=$?; set -e
  test $rc = 1 &&
  grep -q "Cancel requested during teardown: killing the replicas now." log &&
  ! grep -q "Starting attempt 2" log &&
  test "$(runs x1 master0)" = 1 &&
  test "$(record x1 "d[\"state\"]")" = CANCELLED &&
  no_procs "sleep 900.$M"
'
test_expect_success 'teardown after success restarts nothing (a TERM-ignoring ps gets SIGKILL)' '
  job t1 stubborn 2 1 &&
  "$TRAINYARD" local train t1 --config t1 --grace-period 1 >log 2>&1 &&
  grep -q "still running after the grace period; sending SIGKILL" log &&
  ! grep -q -e restarting -e "Retrying the job" log &&
  for t in master0 worker0 worker1 ps0; do test "$(runs t1 $t)" = 1 || exit 1; done &&
  test "$(record t1 "d[\"attemptStatus\"][\"replicaRestarts\"][\"ps-replica-0\"]")" = 0 &&
  no_procs "sleep 900.$M"
'
test_done
