#!/bin/sh
# t3080-local-jobs: `local train` from flags alone (--master-command; gcloud's python-package
# flags refused with the reason), past local runs read back with `jobs list|describe|stream-logs
# --local`, a killed run shown as FAILED, and a failed run's id free for a retry (the earlier
# run kept as <id>.1, listed, described and its logs shown as such) while a SUCCEEDED or
# running one still holds it; runs without an id started together each get their own; a
# filter whose '~' patterns run past their budget of matching steps is refused.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID

# described_as JOB STATE: `jobs describe --local` says JOB is in STATE (job.json is rewritten
# at most every 50 ms while a run goes on: a state a moment old is not written yet)
described_as() {
  "$TRAINYARD" jobs describe "$1" --local --format "value(state)" 2>/dev/null | grep -qx "$2"
}
export TZ=UTC
IMG=--master-image-uri=example.com/none:1

test_expect_success 'local train runs a process job given by flags alone' '
  "$TRAINYARD" local train flags_1 "$IMG" --master-command=sh,-c,"echo hello \$0 \$*",zero \
    --python-version=3.7 -- a b >log 2>&1 &&
  grep -q "master-replica-0 *hello zero a b" log &&
  rec="$TRAINYARD_HOME/jobs/local/flags_1/job.json" &&
  test "$(json_get "$rec" "json.dumps(d[\"trainingInput\"][\"masterConfig\"][\"containerCommand\"])")" = "[\"sh\", \"-c\", \"echo hello \$0 \$*\", \"zero\"]" &&
  test "$(json_get "$rec" "d[\"trainingInput\"][\"pythonVersion\"]")" = 3.7
'
test_expect_success '--worker-command and the ^DELIM^ escape' '
  "$TRAINYARD" local train flags_2 "$IMG" --master-command="^:^sh:-c:echo m,1" \
    --worker-count=1 --master-machine-type=n1-standard-4 --worker-machine-type=n1-standard-4 \
    --worker-command=sh,-c,"echo w" >log 2>&1 &&
  grep -q "master-replica-0 *m,1" log && grep -q "worker-replica-0 *w" log &&
  set +e; "$TRAINYARD" local train "$IMG" --master-command= 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q -- "--master-command: the command is empty" err
'
test_expect_success 'USER_ARGS replace a config file'"'"'s args beside --master-command' '
  printf "trainingInput:\n  args: [--from-config]\n" >args.yaml &&
  "$TRAINYARD" local train "$IMG" --config args.yaml --master-command=sh,-c,"echo got \$*",x \
    -- --from-cli >log 2>&1 &&
  grep -q "master-replica-0 *got --from-cli$" log &&
  set +e; "$TRAINYARD" local train "$IMG" --config args.yaml --master-command=true 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "trainingInput.args: cannot be combined with" err
'
test_expect_success 'the python-package flags are refused with the reason, not as unknown' '
  for f in --module-name=trainer.task --package-path=trainer/ --packages=a.tar.gz --runtime-version=2.11; do
    set +e; "$TRAINYARD" local train "$IMG" "$f" 2>err; rc=$?; set -e
    test $rc -eq 2 && grep -q "custom-container jobs only" err &&
      grep -q -- "--master-command" err && ! grep -q "unknown flag" err || exit 1
  done &&
  "$TRAINYARD" local train --help >out && grep -q -- "--master-command=PROGRAM" out &&
  grep -q -- "--module-name" out &&
  set +e; "$TRAINYARD" local train "$IMG" --distributed --worker-count=1 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q -- "--distributed (gcloud ai-platform local train): .* --worker-count" err &&
  set +e; "$TRAINYARD" local train "$IMG" --start-port=27182 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q -- "--start-port (gcloud ai-platform local train): .*leave the flag out" err
'
test_expect_success 'enum and label flags are checked in the flag, in gcloud spelling' '
  set +e
  "$TRAINYARD" local train "$IMG" --scale-tier=STANDARD_1 --master-machine-type=x --dry-run 2>e1
  "$TRAINYARD" local train "$IMG" --master-accelerator=count=1,type=nvidia-tesla-t5 2>e2; r2=$?
  "$TRAINYARD" local train "$IMG" --master-accelerator=count=1,type=accelerator-type-unspecified 2>e3
  "$TRAINYARD" local train "$IMG" --labels Team=x 2>e4; r4=$?
  "$TRAINYARD" local train "$IMG" --labels team=X 2>e5
  set -e
  ! grep -q "scale-tier" e1 && test $r2 -eq 2 &&
  grep -q -- "--master-accelerator: .nvidia-tesla-t5. is not a valid choice: expected one of nvidia-tesla-k80, .* (did you mean .nvidia-tesla-t4.?)" e2 &&
  grep -q -- "--master-accelerator: .accelerator-type-unspecified. is not a valid choice" e3 &&
  test $r4 -eq 2 && grep -q -- "ERROR: (trainyard.local.train) --labels: key .Team. must start with a lowercase letter" e4 &&
  grep -q -- "--labels: value .X. of key .team. may contain only" e5
'
test_expect_success 'jobs list|describe --local show past runs, newest first, filtered' '
  set +e; "$TRAINYARD" local train failed_1 "$IMG" --master-command=sh,-c,"exit 3" >/dev/null 2>&1; set -e
  "$TRAINYARD" jobs list --local >out &&
  head -1 out | grep -q "^JOB_ID  *STATUS  *CREATED" &&
  sed -n 2p out | grep -q "^failed_1  *FAILED" &&
  grep -q "^flags_1  *SUCCEEDED" out &&
  "$TRAINYARD" jobs list --local --filter state:FAILED --format json >f.json &&
  test "$(json_get f.json "\" \".join(j[\"jobId\"] for j in d)")" = failed_1 &&
  "$TRAINYARD" jobs describe failed_1 --local --format json >d.json 2>err &&
  test "$(json_get d.json "d[\"errorMessage\"]")" = "The replica master 0 exited with a non-zero status of 3." &&
  grep -q "stream-logs failed_1 --local" err &&
  "$TRAINYARD" jobs list --local --state-dir "$TRAINYARD_HOME" --limit 1 --format "value(jobId)" >v &&
  test "$(cat v)" = failed_1 &&
  set +e; "$TRAINYARD" jobs describe nosuch --local 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "no local run .nosuch." err &&
  set +e; "$TRAINYARD" jobs list --state-dir "$TRAINYARD_HOME" 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q -- "--state-dir: only with --local" err &&
  set +e; "$TRAINYARD" jobs list --local --state-dir "$TRAINYARD_HOME/typo" 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q -- "--state-dir: .*/typo.: No such file or directory" err
'
test_expect_success 'jobs stream-logs --local follows a running run to its end' '
  "$TRAINYARD" local train stream_1 "$IMG" --master-command=sh,-c,"for i in 1 2 3; do echo l\$i; sleep 0.3; done; echo err >&2" >/dev/null 2>&1 &
  pid=$!
  wait_for 10 test -e "$TRAINYARD_HOME/jobs/local/stream_1/job.json" &&
  "$TRAINYARD" jobs stream-logs stream_1 --local >out &&
  wait $pid &&
  grep -q "^INFO${TAB:-	}.*master-replica-0	*l3$" out &&
  grep -q "^ERROR	.*master-replica-0		err$" out &&
  tail -1 out | grep -q "Job completed successfully." &&
  "$TRAINYARD" jobs stream-logs stream_1 --local --task-name master-replica-0 >m &&
  test "$(wc -l <m)" -eq 4 &&
  set +e; "$TRAINYARD" jobs stream-logs stream_1 --local --task-name master 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "run .stream_1. has no task .master. (its tasks: service, master-replica-0)" err
'
test_expect_success 'local train shows a line with NUL bytes whole, as stream-logs --local does' '
  "$TRAINYARD" local train nul_1 "$IMG" \
    --master-command=python3,-c,"import sys; sys.stdout.buffer.write(b\"nul\\0in\\0middle \\xff end.$M\\n\")" \
    >log 2>&1 &&
  r=$(printf "\357\277\275") &&
  grep -q "master-replica-0 *nul${r}in${r}middle ${r} end\.$M$" log &&
  "$TRAINYARD" jobs stream-logs nul_1 --local --task-name master-replica-0 >out &&
  grep -q "	nul${r}in${r}middle ${r} end\.$M$" out
'
test_expect_success 'a newline in a service message cannot forge a log record' '
  set +e
  "$TRAINYARD" local train forge_1 "$IMG" \
    --master-command="$(printf "nosuch.$M\n2020-01-01T00:00:00.000000Z WARNING forged")" >log 2>err
  rc=$?; set -e
  test $rc -eq 1 &&
  svc="$TRAINYARD_HOME/jobs/local/forge_1/logs/service.log" &&
  ! grep -q "^2020-01-01T00:00:00.000000Z" "$svc" &&
  grep -q "^20.*Z ERROR Job failed: .*cannot run .nosuch\.$M\\\\n2020-01-01T00:00:00.000000Z WARNING forged" "$svc" &&
  grep -q "Job failed: .*nosuch\.$M\\\\n2020" log && ! grep -q "^2020-01-01" log &&
  "$TRAINYARD" jobs stream-logs forge_1 --local --task-name service >out &&
  test "$(grep -c forged out)" -eq 1 && grep -q "^ERROR	.*forged" out
'
test_expect_success 'a killed run shows FAILED, and its id is free for a retry; the old run is kept' '
  "$TRAINYARD" local train killed_1 "$IMG" --master-command=sh,-c,"echo first; exec sleep 905.$M" >/dev/null 2>&1 &
  pid=$!
  { wait_for 20 procs_at_least "sleep 905.$M" 1 || { kill -KILL $pid; false; }; } &&
  { wait_for 5 described_as killed_1 RUNNING || { kill -KILL $pid; false; }; } &&
  set +e; "$TRAINYARD" local train killed_1 "$IMG" --master-command=true 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "job .killed_1. is running (process $pid" err &&
  kill -KILL $pid && { wait $pid || true; } &&
  wait_for 10 no_procs "sleep 905.$M" &&
  "$TRAINYARD" jobs describe killed_1 --local --format json >d.json 2>/dev/null &&
  test "$(json_get d.json "d[\"state\"]")" = FAILED &&
  json_get d.json "d[\"errorMessage\"]" | grep -q "ended without recording its end" &&
  json_get d.json "d[\"endTime\"]" | grep -q Z &&
  "$TRAINYARD" local train killed_1 "$IMG" --master-command=sh,-c,"echo second" >log 2>err &&
  grep -q "kept as .*/jobs/local/killed_1.1" err &&
  grep -q first "$TRAINYARD_HOME/jobs/local/killed_1.1/logs/master-replica-0.log" &&
  grep -q second "$TRAINYARD_HOME/jobs/local/killed_1/logs/master-replica-0.log" &&
  ! grep -q first "$TRAINYARD_HOME/jobs/local/killed_1/logs/master-replica-0.log" &&
  "$TRAINYARD" jobs list --local --format "value(jobId,state)" >v &&
  grep -q "^killed_1	SUCCEEDED$" v && grep -q "^killed_1\.1	FAILED$" v
'
test_expect_success 'the run kept aside is listed, described and its logs shown as <id>.<N>' '
  "$TRAINYARD" jobs list --local >out &&
  grep -q "^killed_1\.1  *FAILED  " out &&
  "$TRAINYARD" jobs describe killed_1.1 --local --format json >d.json 2>err &&
  test "$(json_get d.json "d[\"jobId\"]")" = killed_1.1 &&
  json_get d.json "d[\"errorMessage\"]" | grep -q "ended without recording its end" &&
  grep -q "stream-logs killed_1.1 --local" err &&
  "$TRAINYARD" jobs describe killed_1.1 --local --summarize >s 2>/dev/null &&
  grep -q "killed_1\.1" s &&
  "$TRAINYARD" jobs stream-logs killed_1.1 --local --task-name master-replica-0 >logs &&
  grep -q "master-replica-0	*first$" logs && ! grep -q second logs &&
  set +e; "$TRAINYARD" jobs describe killed_1.01 --local 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "N must be a number from 1 to 2147483647, without leading zeros" err &&
  set +e; "$TRAINYARD" jobs stream-logs killed_1.9 --local 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "no local run .killed_1.9." err
'
test_expect_success 'a failed run is retried as the same id; a SUCCEEDED one keeps it' '
  set +e; "$TRAINYARD" local train failed_1 "$IMG" --master-command=sh,-c,"exit 4" >/dev/null 2>&1; rc=$?; set -e
  test $rc -eq 1 &&
  test -d "$TRAINYARD_HOME/jobs/local/failed_1.1" &&
  "$TRAINYARD" local train failed_1 "$IMG" --master-command=true >/dev/null 2>err &&
  grep -q "kept as .*failed_1.2" err &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/failed_1.1/job.json" "d[\"errorMessage\"]")" = "The replica master 0 exited with a non-zero status of 3." &&
  set +e; "$TRAINYARD" local train failed_1 "$IMG" --master-command=true 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "already exists and SUCCEEDED" err &&
  "$TRAINYARD" jobs list --local --filter "jobId:failed_1*" --format "value(jobId,state)" >v &&
  printf "failed_1\tSUCCEEDED\nfailed_1.2\tFAILED\nfailed_1.1\tFAILED\n" >want &&
  diff want v &&
  "$TRAINYARD" jobs describe failed_1.2 --local --format "value(errorMessage)" >v 2>/dev/null &&
  test "$(cat v)" = "The replica master 0 exited with a non-zero status of 4."
'
test_expect_success 'runs started together without a job id each get one of their own' '
  mkdir gen && pids= &&
  for i in $(seq 1 24); do
    TRAINYARD_HOME=$PWD/gen "$TRAINYARD" local train "$IMG" --master-command=true \
      >/dev/null 2>"gen.$i.err" & pids="$pids $!"
  done &&
  for p in $pids; do wait $p || { cat gen.*.err; exit 1; }; done &&
  test "$(ls gen/jobs/local | grep -c "^local_[0-9]\{8\}_[0-9]\{6\}_[0-9a-f]\{4\}\$")" = 24 &&
  ! grep -l "kept as" gen.*.err
'
test_expect_success 'a filter whose patterns run past their budget is refused, saying so' '
  mkdir -p "$TRAINYARD_HOME/jobs/local/big_1" &&
  python3 -c "import json, sys; json.dump({\"jobId\": \"big_1\", \"state\": \"FAILED\",
    \"createTime\": \"2020-01-01T00:00:00Z\", \"errorMessage\": \"a b \" * 40000},
    open(sys.argv[1], \"w\"))" "$TRAINYARD_HOME/jobs/local/big_1/job.json" &&
  "$TRAINYARD" jobs list --local --filter "errorMessage~^a.b" --format "value(jobId)" >v &&
  test "$(cat v)" = big_1 &&
  set +e; "$TRAINYARD" jobs list --local --filter "errorMessage~.{999}x" 2>err; rc=$?; set -e
  test $rc -ne 0 &&
  grep -q "took over 100000000 matching steps on the jobs read, and were stopped: narrow the filter" err
'
test_expect_success 'a --job-dir that names a file is a usage error, and no run is made' '
  : >afile &&
  set +e; "$TRAINYARD" local train jf_1 --master-image-uri=x/y:1 --master-command=true \
    --job-dir "$TEST_DIR/afile" >out 2>err; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q "trainingInput.jobDir: .*afile. exists and is not a directory" err &&
  test ! -e "$TRAINYARD_HOME/jobs/local/jf_1"
'
test_expect_success 'the slurm runtime without a Slurm configuration is refused at once, saying so' '
  set +e; SLURM_CONF=$TEST_DIR/no-such.conf "$TRAINYARD" local train sl_1 --runtime slurm \
    --master-image-uri=x/y:1 --master-command=true >out 2>err; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q "the slurm runtime cannot read the Slurm configuration SLURM_CONF names (.*no-such.conf.: No such file or directory)" err &&
  test ! -e "$TRAINYARD_HOME/jobs/local/sl_1"
'
test_done
