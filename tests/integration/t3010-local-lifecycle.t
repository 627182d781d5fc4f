#!/bin/sh
# t3010-local-lifecycle: completion, failure wording, exit codes, teardown and cancel of
# `local train` jobs. Every test also checks that no process of the job survives.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID # a marker unique to this test run, put into every replica's command line

# state_is JOB STATE: the job's record says it is in STATE
state_is() { test "$(json_get "$TRAINYARD_HOME/jobs/local/$1/job.json" "d[\"state\"]" 2>/dev/null)" = "$2"; }

test_expect_success 'a ps that never exits is torn down after the master succeeds' '
  write_job job.json "if [ \$(echo \$CLUSTER_SPEC | grep -c \"type\\\":\\\"ps\") = 1 ]; then exec sleep 900.$M; fi; sleep 0.3" 1 2 &&
  "$TRAINYARD" local train ps_job --config job.json >log 2>&1 &&
  grep -q "Job completed successfully." log &&
  grep -q "Tearing down training program." log &&
  no_procs "sleep 900.$M"
'
test_expect_success 'master failure: message and exit code 1' '
  write_job fail.json "exit 7" &&
  set +e; "$TRAINYARD" local train m_fail --config fail.json >log 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "The replica master 0 exited with a non-zero status of 7." err &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/m_fail/job.json" "d[\"state\"]")" = FAILED &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/m_fail/job.json" "d[\"errorMessage\"]")" = "The replica master 0 exited with a non-zero status of 7."
'
test_expect_success 'worker failure fails the job and stops the master' '
  write_job wfail.json "if echo \$CLUSTER_SPEC | grep -q \"type\\\":\\\"worker\\\",\\\"index\\\":1\"; then exit 3; fi; exec sleep 901.$M" 2 &&
  set +e; "$TRAINYARD" local train w_fail --config wfail.json >log 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "The replica worker 1 exited with a non-zero status of 3." err &&
  no_procs "sleep 901.$M"
'
test_expect_success 'a replica killed by a signal is reported with the signal' '
  write_job sig.json "if echo \$CLUSTER_SPEC | grep -q \"type\\\":\\\"ps\"; then kill -SEGV \$\$; fi; exec sleep 902.$M" 0 1 &&
  set +e; "$TRAINYARD" local train s_fail --config sig.json >log 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "The replica ps 0 was terminated by signal 11 (SIGSEGV)." err &&
  no_procs "sleep 902.$M"
'
test_expect_success 'SIGINT to the CLI cancels: job CANCELLED, exit 1, nothing left' '
  write_job long.json "sleep 903.$M & exec sleep 903.$M" 2 1 1 || exit 1
  "$TRAINYARD" local train c_job --config long.json --grace-period 2 >log 2>&1 &
  pid=$!
  { wait_for 20 procs_at_least "sleep 903.$M" 10 || { kill -KILL $pid; false; }; } &&
  kill -INT $pid &&
  set +e; wait $pid; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "Job cancelled." log &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/c_job/job.json" "d[\"state\"]")" = CANCELLED &&
  no_procs "sleep 903.$M"
'
test_expect_success 'SIGTERM to the CLI cancels too; TERM-ignoring replicas get SIGKILL' '
  write_job stubborn.json "trap \"\" TERM; sleep 904.$M & wait; wait" 1 || exit 1
  "$TRAINYARD" local train t_job --config stubborn.json --grace-period 1 >log 2>&1 &
  pid=$!
  { wait_for 20 procs_at_least "sleep 904.$M" 2 || { kill -KILL $pid; false; }; } &&
  kill -TERM $pid &&
  set +e; wait $pid; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "still running after the grace period; sending SIGKILL" log &&
  no_procs "sleep 904.$M"
'
test_expect_success 'a SIGHUP ignored when trainyard starts (nohup) stays ignored' '
  write_job hup.json "sleep 2; echo finished.$M" || exit 1
  (trap "" HUP; exec "$TRAINYARD" local train hup_job --config hup.json >log 2>&1) &
  pid=$!
  wait_for 20 state_is hup_job RUNNING && kill -HUP $pid &&
  set +e; wait $pid; rc=$?; set -e
  test $rc -eq 0 && grep -q "finished.$M" log && state_is hup_job SUCCEEDED
'
test_expect_success 'a replica that exits leaving a writer on its output does not stall the job' '
  # The worker exits 0 while its child floods the pipe it shares; the master then fails: the
  # job must end at once on the master'"'"'s exit, the writer with it.
  write_job writer.json "if echo \$CLUSTER_SPEC | grep -q \"type\\\":\\\"worker\"; then yes spam.$M & yes spam.$M & yes spam.$M & sleep 0.3; exit 0; fi; sleep 1.5; echo master-fails; exit 3" 1 &&
  set +e; timeout -k 5 60 "$TRAINYARD" local train writer_job --config writer.json >log 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "master-replica-0 *master-fails" log &&
  grep -q "The replica master 0 exited with a non-zero status of 3." err &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/writer_job/job.json" "d[\"state\"]")" = FAILED &&
  no_procs "yes spam.$M"
'
test_expect_success 'an output nobody reads stops neither the run nor its time limit' '
  # stdout is a pipe whose reader waits: the run goes on, its time limit fails it, its log
  # file has every line; the lines that did not fit are said to be left out
  # 150,000 lines (some 6 MiB as shown) fill the 4 MiB the output may hold; the time limit
  # comes well after they are written, even on a loaded machine
  write_job flood.json "seq 1 150000; echo done.$M; exec sleep 906.$M" 0 0 0 "{\"scheduling\": {\"maxRunningTime\": \"8s\"}}" &&
  { "$TRAINYARD" local train flood_job --config flood.json 2>err |
    { while [ ! -e go ]; do sleep 0.1; done; cat >out; }; } &
  pid=$!
  wait_for 30 state_is flood_job FAILED; failed=$?
  touch go && wait $pid &&
  test $failed -eq 0 &&
  grep -q "maximum running time" err &&
  grep -q "^\[trainyard: [0-9]* lines not shown here: the output was not being read" out &&
  grep -q "done.$M" "$TRAINYARD_HOME/jobs/local/flood_job/logs/master-replica-0.log" &&
  test "$(grep -c "" "$TRAINYARD_HOME/jobs/local/flood_job/logs/master-replica-0.log")" -ge 150001 &&
  no_procs "sleep 906.$M"
'
test_expect_success 'daemonized grandchildren are cleaned up when the job ends' '
  write_job daemon.json "setsid sh -c \"sleep 905.$M\" </dev/null >/dev/null 2>&1 & sleep 0.3" &&
  "$TRAINYARD" local train d_job --config daemon.json >log 2>&1 &&
  no_procs "sleep 905.$M"
'
test_expect_success 'a program that does not exist fails in preparing, naming the replica' '
  write_job nx.json "true" 1 &&
  "$PYTHON" -c "import json; d=json.load(open(\"nx.json\")); d[\"trainingInput\"][\"workerConfig\"]={\"imageUri\":\"x\",\"containerCommand\":[\"/no/such/prog\"]}; json.dump(d,open(\"nx.json\",\"w\"))" &&
  set +e; "$TRAINYARD" local train nx_job --config nx.json >log 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "The replica worker 0 could not be started: cannot run ./no/such/prog.: No such file or directory" err
'
test_expect_success 'scheduling.maxRunningTime fails a job that runs too long' '
  write_job slow.json "exec sleep 906.$M" 0 0 0 "{\"scheduling\": {\"maxRunningTime\": \"1s\"}}" &&
  set +e; "$TRAINYARD" local train slow_job --config slow.json >log 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "maximum running time" err && no_procs "sleep 906.$M"
'
test_expect_success 'a 1+16 job of short replicas succeeds' '
  write_job wide.json "true" 16 &&
  "$TRAINYARD" local train wide_job --config wide.json >log 2>&1 &&
  test "$(grep -c "replica-" "$TRAINYARD_HOME/jobs/local/wide_job/logs/service.log")" -eq 0 &&
  grep -q "Job completed successfully." log
'
test_expect_success 'replicas that cannot start fail the job, with no spurious cancel' '
  echo "{\"trainingInput\": {\"scaleTier\": \"CUSTOM\", \"masterType\": \"n1-standard-4\", \"workerType\": \"n1-standard-4\", \"workerCount\": 3, \"masterConfig\": {\"imageUri\": \"x/y:1\", \"containerCommand\": [\"no-such-program-$M\"]}}}" >nostart.json &&
  for i in 1 2 3; do
    set +e; "$TRAINYARD" local train nostart_$i --config nostart.json >log 2>&1; rc=$?; set -e
    test $rc -eq 1 && grep -q "could not be started" log && ! grep -q "Cancel requested" log || exit 1
  done
'
test_expect_success 'more replicas than the soft open-files limit allows; replicas get that limit' '
  # 1+40 replicas hold ~160 descriptors (pipes, port reservations) under a soft limit of 64:
  # trainyard raises its own to the hard limit, and gives each replica the 64 back.
  (ulimit -Sn 64 && "$TRAINYARD" local train nofile_1 --master-image-uri=example.com/none:1 \
     --scale-tier=CUSTOM --master-machine-type=n1-standard-4 --worker-machine-type=n1-standard-4 \
     --worker-count=40 --master-command=sh,-c,"ulimit -n" >log 2>&1) &&
  grep -q "master-replica-0.*64$" log &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/nofile_1/job.json" "d[\"state\"]")" = SUCCEEDED
'
test_done
