#!/bin/sh
# t5010-cli-jobs: the remote verbs of `trainyard jobs` against a real trainyardd: submit
# (async and --stream-logs), describe (yaml, json, --summarize), list (table, pages, filter,
# formats), cancel, stream-logs (follow stream and polling), update (labels, etag retries),
# the endpoint/project/token resolution (flags, environment, config file) and the error forms
# (usage 2, request failures 1, connection refused).
. "$(dirname "$0")/../lib/test-lib.sh"

TRAINYARDD="$TY_BUILD_DIR/bin/trainyardd"
if [ ! -x "$TRAINYARDD" ]; then
  echo "1..0 # SKIP trainyardd is not built ($TRAINYARDD)"
  rm -rf "$TEST_DIR"
  exit 0
fi

M=$RUN_ID
TAB=$(printf "\t")
# A stable, known environment for the CLI: UTC times, no user config, no inherited settings.
export TZ=UTC
export XDG_CONFIG_HOME="$TEST_DIR/xdg"
unset TRAINYARD_CONFIG TRAINYARD_PROJECT TRAINYARD_ACCESS_TOKEN TRAINYARD_API_ENDPOINT

# state_of JOB [ARGS...]: the job's state, through the CLI
state_of() {
  job=$1; shift
  "$TRAINYARD" jobs describe "$job" --format json "$@" 2>/dev/null |
    "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin).get("state"))'
}
state_is() { [ "$(state_of "$1")" = "$2" ]; }

trainyardd_start svc && BASE=$TYD_URL || { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR/svc.log"; exit 1; }
export TRAINYARD_API_ENDPOINT="$BASE"

# ---- help and usage ------------------------------------------------------------------------

test_expect_success 'trainyard --help and trainyard jobs list the remote verbs' '
  "$TRAINYARD" --help >out &&
  for v in "jobs submit training" "jobs describe" "jobs list" "jobs cancel" "jobs stream-logs" "jobs update"; do
    grep -q "$v" out || exit 1
  done &&
  set +e; "$TRAINYARD" jobs 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "jobs stream-logs" err &&
  "$TRAINYARD" jobs submit --help >out && grep -q "jobs submit training" out
'
test_expect_success 'every verb has --help with the global flags' '
  for v in "submit training" describe list cancel stream-logs update; do
    "$TRAINYARD" jobs $v --help >out || exit 1
    grep -q -- "--api-endpoint" out && grep -q -- "--project" out &&
      grep -q -- "--access-token-file" out || exit 1
  done &&
  "$TRAINYARD" jobs submit training --help >out &&
  grep -q -- "--master-image-uri" out && grep -q -- "--stream-logs" out &&
  grep -q -- "--runtime" out && grep -q -- "--pytorch-env" out && grep -q -- "--async" out
'
test_expect_success 'unknown verb and unknown flag exit 2' '
  set +e; "$TRAINYARD" jobs frobnicate 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown command .jobs frobnicate." err &&
  set +e; "$TRAINYARD" jobs list --bogus 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "ERROR: (trainyard.jobs.list) unknown flag .--bogus." err
'
test_expect_success 'usage errors exit 2 with the verb in the message' '
  set +e
  "$TRAINYARD" jobs describe 2>err1; r1=$?
  "$TRAINYARD" jobs describe a b 2>err2; r2=$?
  "$TRAINYARD" jobs submit training x --master-image-uri=i --async --stream-logs 2>err3; r3=$?
  "$TRAINYARD" jobs list --page-size 0 2>err4; r4=$?
  "$TRAINYARD" jobs list --format tabel 2>err5; r5=$?
  "$TRAINYARD" jobs stream-logs j --polling-interval 0.01 2>err6; r6=$?
  "$TRAINYARD" jobs update j 2>err7; r7=$?
  "$TRAINYARD" jobs update j --clear-labels --remove-labels a 2>err8; r8=$?
  "$TRAINYARD" jobs update j --update-labels BAD=x 2>err9; r9=$?
  "$TRAINYARD" jobs submit training 2>err11; r11=$?
  set -e
  for r in $r1 $r2 $r3 $r4 $r5 $r6 $r7 $r8 $r9 $r11; do test "$r" -eq 2 || exit 1; done &&
  grep -q "ERROR: (trainyard.jobs.describe) JOB is required" err1 &&
  grep -q "unexpected argument .b." err2 &&
  grep -q "ERROR: (trainyard.jobs.submit.training) --async and --stream-logs" err3 &&
  grep -q -- "--page-size: expected a positive number or unlimited (got .0.)" err4 &&
  grep -q -- "--format: unknown format .tabel. (did you mean .table.?); valid formats: " err5 &&
  grep -q -- "--polling-interval: expected seconds, from 0.1 to 86400 (got .0.01.)" err6 &&
  grep -q "nothing to update" err7 &&
  grep -q "cannot be used together" err8 &&
  grep -q -- "(trainyard.jobs.update) --update-labels: key .BAD. must start with a lowercase letter" err9 &&
  grep -q "JOB is required" err11
'
test_expect_success 'job-spec errors are caught before sending (exit 2, nothing created)' '
  set +e
  "$TRAINYARD" jobs submit training 9lives --master-image-uri=x 2>err1; r1=$?
  "$TRAINYARD" jobs submit training w1 --master-image-uri=x --master-machine-type=n1-standard-4 \
    --worker-count=2 2>err2; r2=$?
  "$TRAINYARD" jobs submit training l1 --master-image-uri=x --labels=Bad=1 2>err3; r3=$?
  set -e
  test $r1 -eq 2 && grep -q "jobId: must start with a letter" err1 &&
  test $r2 -eq 2 && grep -q "trainingInput.workerType: required when workerCount is positive" err2 &&
  test $r3 -eq 2 && grep -q -- "(trainyard.jobs.submit.training) --labels: key .Bad." err3 &&
  "$TRAINYARD" jobs list >out 2>err && test ! -s out && grep -q "^Listed 0 items.$" err
'
test_expect_success 'gcloud python-package flags: refused with the reason, not as unknown (exit 2, nothing created)' '
  for f in --module-name=trainer.task --package-path=trainer/ --packages=a.tar.gz,b.whl \
           --runtime-version=2.11; do
    set +e; "$TRAINYARD" jobs submit training py_1 --master-image-uri=x --region=us-central1 \
      --python-version=3.7 "$f" >out 2>err; rc=$?; set -e
    test $rc -eq 2 && test ! -s out &&
      grep -q "^ERROR: (trainyard.jobs.submit.training) ${f%%=*} (trainingInput\.[a-zA-Z]*): trainyard runs custom-container jobs only" err &&
      grep -q -- "give the image with --master-image-uri and the program with --master-command" err &&
      ! grep -q "unknown flag" err || { cat err; exit 1; }
  done &&
  printf "{\"trainingInput\":{\"scaleTier\":\"BASIC\",\"pythonModule\":\"trainer.task\",\"runtimeVersion\":\"2.11\"}}" >py.json &&
  set +e; "$TRAINYARD" jobs submit training py_2 --config py.json 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "trainyard runs custom-container jobs only; runtime-version jobs" err &&
  "$TRAINYARD" jobs list >out 2>err && test ! -s out && grep -q "^Listed 0 items.$" err &&
  "$TRAINYARD" jobs submit training --help >out &&
  grep -q -- "--python-version=VERSION  *recorded in the job (pythonVersion), no effect" out &&
  grep -q -- "python-package flags (--module-name, --package-path, --packages," out
'

# ---- endpoint, project, token --------------------------------------------------------------

test_expect_success 'no daemon: exit 1 naming the endpoint and suggesting trainyardd' '
  set +e; "$TRAINYARD" jobs list --api-endpoint http://127.0.0.1:1 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "ERROR: (trainyard.jobs.list) cannot connect to trainyardd at http://127.0.0.1:1" err &&
  grep -q "Is trainyardd running?" err
'
test_expect_success 'a bad endpoint or config file is a usage error (exit 2)' '
  set +e; "$TRAINYARD" jobs list --api-endpoint ftp://x 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "is not an http:// or https:// URL" err &&
  printf "project = a\nnot a setting\n" >bad.conf &&
  set +e; TRAINYARD_CONFIG=bad.conf "$TRAINYARD" jobs list 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "bad.conf:2:" err &&
  printf "colour = blue\n" >unknown.conf &&
  set +e; TRAINYARD_CONFIG=unknown.conf "$TRAINYARD" jobs list 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown.conf:1: unknown key .colour." err &&
  set +e; TRAINYARD_CONFIG=missing.conf "$TRAINYARD" jobs list 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "missing.conf" err
'
test_expect_success 'endpoint: --api-endpoint > TRAINYARD_API_ENDPOINT > config > default' '
  mkdir -p "$XDG_CONFIG_HOME/trainyard" &&
  printf "# test\napi_endpoint = %s\n" "$BASE" >"$XDG_CONFIG_HOME/trainyard/config" &&
  (unset TRAINYARD_API_ENDPOINT; "$TRAINYARD" jobs list 2>err) && grep -q "Listed 0 items" err &&
  TRAINYARD_API_ENDPOINT=http://127.0.0.1:1 "$TRAINYARD" jobs list --api-endpoint "$BASE/" 2>err &&
  set +e; TRAINYARD_API_ENDPOINT=http://127.0.0.1:1 "$TRAINYARD" jobs list 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "127.0.0.1:1 (TRAINYARD_API_ENDPOINT)" err &&
  rm "$XDG_CONFIG_HOME/trainyard/config" &&
  set +e; (unset TRAINYARD_API_ENDPOINT; HOME=/nonexistent "$TRAINYARD" jobs list --project zz 2>err); set -e
  grep -q "Listed 0 items\|cannot connect to trainyardd at http://127.0.0.1:8080 (the default endpoint)" err
'

# ---- submit, describe, list ------------------------------------------------------------------

test_expect_success 'submit: message and epilog on stderr, jobId and state on stdout' '
  write_job ok.json "echo hello-$M; echo to-stderr-$M >&2" &&
  "$TRAINYARD" jobs submit training cli_ok1 --config ok.json >out 2>err &&
  grep -q "^Job \[cli_ok1\] submitted successfully.$" err &&
  grep -q "^Your job is still active. You may view the status of your job with the command$" err &&
  grep -q "^  \$ trainyard jobs describe cli_ok1$" err &&
  grep -q "^or continue streaming the logs with the command$" err &&
  grep -q "^  \$ trainyard jobs stream-logs cli_ok1$" err &&
  printf "jobId: cli_ok1\nstate: QUEUED\n" >want && cmp want out &&
  wait_for 30 state_is cli_ok1 SUCCEEDED
'
test_expect_success 'submit of an existing id: exit 1 with the server message' '
  set +e; "$TRAINYARD" jobs submit training cli_ok1 --config ok.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "ERROR: (trainyard.jobs.submit.training) ALREADY_EXISTS: " err
'
test_expect_success 'submit --async (accepted) and --format json' '
  "$TRAINYARD" jobs submit training cli_ok2 --config ok.json --async --format json >out.json 2>err &&
  test "$(json_get out.json "d[\"jobId\"]")" = cli_ok2 &&
  grep -q "^WARNING: The --async flag is deprecated: submitting without waiting is the default" err &&
  test -n "$(json_get out.json "d[\"createTime\"]")" &&
  "$TRAINYARD" jobs submit training cli_ok3 --config ok.json >/dev/null 2>&1 &&
  wait_for 30 state_is cli_ok2 SUCCEEDED && wait_for 30 state_is cli_ok3 SUCCEEDED
'
test_expect_success 'describe: the whole Job as YAML (keys sorted), quoted times, epilog on stderr' '
  "$TRAINYARD" jobs describe cli_ok1 >out 2>err &&
  grep -q "^jobId: cli_ok1$" out && grep -q "^state: SUCCEEDED$" out &&
  grep -q "^createTime: .20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T.*Z.$" out &&
  grep -q "^etag: " out && grep -q "^trainingInput:$" out &&
  grep -q "^  masterConfig:$" out && grep -q "^    - sh$" out &&
  grep "^[a-zA-Z]" out | cut -d: -f1 >keys && LC_ALL=C sort -c keys &&
  grep -q "^attemptStatus:$" out && grep -q "^  attempt: 1$" out &&
  grep -q "^View logs with:$" err && grep -q "^  \$ trainyard jobs stream-logs cli_ok1$" err
'
test_expect_success 'describe --format json parses and matches' '
  "$TRAINYARD" jobs describe cli_ok1 --format json >out.json &&
  test "$(json_get out.json "d[\"jobId\"]")" = cli_ok1 &&
  test "$(json_get out.json "d[\"trainingInput\"][\"scaleTier\"]")" = CUSTOM
'
test_expect_success 'describe of a missing job: exit 1, NOT_FOUND' '
  set +e; "$TRAINYARD" jobs describe no_such_job 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "^ERROR: (trainyard.jobs.describe) NOT_FOUND: " err &&
  set +e; "$TRAINYARD" jobs describe "a/b?c" 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "^ERROR: (trainyard.jobs.describe) " err
'
test_expect_success 'describe --summarize: boxed tables (ASCII outside UTF-8 locales)' '
  LC_ALL=C "$TRAINYARD" jobs describe cli_ok1 --summarize >out &&
  grep -q "Job Overview" out && grep -q "Training Input Summary" out &&
  grep -q "^+-*+" out && grep -q "| JOB_ID *| CREATE_TIME" out &&
  grep -q "| cli_ok1 *|" out && grep -q "| SUCCEEDED *|" out && grep -q "MASTER_TYPE" out &&
  ! grep -q "WORKER_COUNT" out &&
  LC_ALL=C.UTF-8 "$TRAINYARD" jobs describe cli_ok1 --summarize >out &&
  grep -q "┌" out && grep -q "│ cli_ok1" out &&
  LC_ALL=C "$TRAINYARD" jobs describe cli_ok1 --summarize --format json >out 2>err &&
  grep -q "^WARNING: --format is ignored when --summarize is present$" err &&
  grep -q "| cli_ok1 *|" out && grep -q "^View logs with:$" err
'
test_expect_success 'with --format, describe and list print no epilog (as gcloud)' '
  "$TRAINYARD" jobs describe cli_ok1 --format "value(state)" >out 2>err &&
  test "$(cat out)" = SUCCEEDED && ! grep -q "View logs" err &&
  "$TRAINYARD" jobs describe cli_ok1 --format none >out 2>err &&
  test ! -s out && ! test -s err &&
  "$TRAINYARD" jobs list --filter jobId:zzz --format json >out 2>err &&
  test "$(cat out)" = "[]" && ! test -s err
'
test_expect_success 'list: table newest first, CREATED in local time' '
  "$TRAINYARD" jobs list >out &&
  head -1 out | grep -q "^JOB_ID  *STATUS  *CREATED$" &&
  test "$(sed -n 2p out | cut -d" " -f1)" = cli_ok3 &&
  test "$(sed -n 4p out | cut -d" " -f1)" = cli_ok1 &&
  grep -q "^cli_ok1  *SUCCEEDED  *20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]$" out &&
  created=$("$TRAINYARD" jobs describe cli_ok1 --format json | "$PYTHON" -c "import json,sys; print(json.load(sys.stdin)[\"createTime\"][:19])") &&
  grep -q "^cli_ok1  *SUCCEEDED  *$created$" out &&
  TZ=EST5 "$TRAINYARD" jobs list >est && ! grep -q "$created" est
'
test_expect_success 'list --limit and --page-size follow the pages' '
  "$TRAINYARD" jobs list --limit 2 --page-size 1 >out &&
  test "$(wc -l <out)" -eq 3 &&
  test "$(sed -n 2p out | cut -d" " -f1)" = cli_ok3 &&
  test "$(sed -n 3p out | cut -d" " -f1)" = cli_ok2 &&
  "$TRAINYARD" jobs list --page-size 1 >out && test "$(wc -l <out)" -eq 4 &&
  "$TRAINYARD" jobs list --limit unlimited --page-size 2 >out && test "$(wc -l <out)" -eq 4 &&
  "$TRAINYARD" jobs list --page-size 500 >out && test "$(wc -l <out)" -eq 4 &&
  "$TRAINYARD" jobs list --page-size unlimited >out && test "$(wc -l <out)" -eq 4
'
test_expect_success 'list --filter is evaluated by the server' '
  "$TRAINYARD" jobs list --filter "jobId:cli_ok1 OR jobId:cli_ok2" >out &&
  test "$(wc -l <out)" -eq 3 && ! grep -q cli_ok3 out &&
  "$TRAINYARD" jobs list --filter "state:FAILED" >out 2>err &&
  test ! -s out && grep -q "^Listed 0 items.$" err &&
  set +e; "$TRAINYARD" jobs list --filter "state:(" 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "INVALID_ARGUMENT" err
'
test_expect_success 'list --format json and yaml' '
  "$TRAINYARD" jobs list --format json >out.json &&
  test "$(json_get out.json "[j[\"jobId\"] for j in d]")" = "[$(printf "%s" "'"'"'cli_ok3'"'"', '"'"'cli_ok2'"'"', '"'"'cli_ok1'"'"'")]" &&
  "$TRAINYARD" jobs list --format yaml --limit 2 >out &&
  test "$(grep -c "^---$" out)" -eq 2 && test "$(head -n 1 out)" = "---" &&
  test "$(grep -c "^jobId: " out)" -eq 2 &&
  "$TRAINYARD" jobs list --format json --project empty_p >out 2>err &&
  test "$(cat out)" = "[]" && ! grep -q "Listed 0 items." err
'
test_expect_success 'projects: --project > TRAINYARD_PROJECT > config > default' '
  "$TRAINYARD" jobs submit training p_job --project p2 --config ok.json >/dev/null 2>&1 &&
  "$TRAINYARD" jobs list --project p2 >out && grep -q "^p_job " out && ! grep -q cli_ok out &&
  TRAINYARD_PROJECT=p2 "$TRAINYARD" jobs list >out && grep -q "^p_job " out &&
  TRAINYARD_PROJECT=p2 "$TRAINYARD" jobs list --project default >out && ! grep -q p_job out &&
  printf "project = \"p2\"\n" >p.conf &&
  TRAINYARD_CONFIG=p.conf "$TRAINYARD" jobs list >out && grep -q "^p_job " out &&
  "$TRAINYARD" jobs list >out && ! grep -q p_job out &&
  set +e; "$TRAINYARD" jobs describe p_job 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q NOT_FOUND err &&
  "$TRAINYARD" --project p2 jobs list >out && grep -q "^p_job " out &&
  "$TRAINYARD" --project=p2 --format "value(state)" jobs describe p_job >out &&
  grep -qx "QUEUED\|PREPARING\|RUNNING\|SUCCEEDED" out &&
  set +e; "$TRAINYARD" --local jobs list 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown flag .--local." err
'

# ---- logs ------------------------------------------------------------------------------------

test_expect_success 'stream-logs of a finished job: gcloud lines, local times, then exit 0' '
  "$TRAINYARD" jobs stream-logs cli_ok1 >out 2>err &&
  grep -q "^INFO${TAB}20[0-9-]* [0-9:]* +0000${TAB}master-replica-0${TAB}${TAB}hello-$M$" out &&
  grep -q "^ERROR${TAB}.*${TAB}master-replica-0${TAB}${TAB}to-stderr-$M$" out &&
  grep -q "^INFO${TAB}.*${TAB}service${TAB}${TAB}Job completed successfully.$" out &&
  TZ=UTC-3 "$TRAINYARD" jobs stream-logs cli_ok1 >out3 && grep -q " +0300${TAB}" out3
'
test_expect_success 'stream-logs --format: gcloud'"'"'s log resources (json list, yaml, value)' '
  "$TRAINYARD" jobs stream-logs cli_ok1 --format json >out.json &&
  test "$(json_get out.json "[e[\"message\"] for e in d if e[\"task_name\"] == \"master-replica-0\"]")" = "[$(printf "%s" "'"'"'hello-$M'"'"', '"'"'to-stderr-$M'"'"'")]" &&
  test "$(json_get out.json "sorted(d[0].keys())")" = "[$(printf "%s" "'"'"'message'"'"', '"'"'severity'"'"', '"'"'task_name'"'"', '"'"'timestamp'"'"', '"'"'trial_id'"'"'")]" &&
  "$TRAINYARD" jobs stream-logs cli_ok1 --format "value(severity,message)" --task-name master-replica-0 >out &&
  printf "INFO\thello-$M\nERROR\tto-stderr-$M\n" >want && cmp want out &&
  "$TRAINYARD" jobs stream-logs cli_ok1 --format "json(message)" --task-name master-replica-0 --polling-interval 0.2 >out.json &&
  test "$(json_get out.json "d")" = "[{'"'"'message'"'"': '"'"'hello-$M'"'"'}, {'"'"'message'"'"': '"'"'to-stderr-$M'"'"'}]" &&
  "$TRAINYARD" jobs stream-logs cli_ok1 --format yaml --task-name master-replica-0 >out &&
  test "$(grep -c "^---$" out)" -eq 2 && grep -q "^message: hello-$M$" out &&
  set +e; "$TRAINYARD" jobs stream-logs cli_ok1 --format "value(jobId)" >out 2>err; rc=$?; set -e
  test $rc -eq 2 && test ! -s out &&
  grep -q "unknown key .jobId.: a log entry has severity, timestamp, task_name, trial_id and message" err &&
  set +e; "$TRAINYARD" jobs stream-logs cli_ok1 --format table >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "the log verbs print json, yaml, value(...) or none" err &&
  set +e; "$TRAINYARD" jobs stream-logs cli_ok1 --format json --task-name master 2>err >out; rc=$?; set -e
  test $rc -eq 1 && test ! -s out
'
test_expect_success 'stream-logs --task-name and --polling-interval' '
  "$TRAINYARD" jobs stream-logs cli_ok1 --task-name master-replica-0 >out &&
  test "$(cut -f3 out | sort -u)" = master-replica-0 &&
  "$TRAINYARD" jobs stream-logs cli_ok1 --polling-interval 0.2 >poll &&
  "$TRAINYARD" jobs stream-logs cli_ok1 >follow && cmp poll follow
'
test_expect_success 'stream-logs --task-name of a task the job has not: exit 1, its tasks listed' '
  set +e; "$TRAINYARD" jobs stream-logs cli_ok1 --task-name master >out 2>err; rc=$?; set -e
  test $rc -eq 1 && test ! -s out &&
  grep -q "taskName: job .cli_ok1. has no task .master. (its tasks: service, master-replica-0)" err &&
  set +e; "$TRAINYARD" jobs stream-logs cli_ok1 --task-name worker-replica-0 --polling-interval 0.2 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "has no task .worker-replica-0." err
'
test_expect_success 'stream-logs follows a running job until it ends (stream and polling)' '
  write_job slow.json "echo first-$M; sleep 2; echo second-$M" &&
  "$TRAINYARD" jobs submit training cli_slow --config slow.json >/dev/null 2>&1 &&
  "$TRAINYARD" jobs stream-logs cli_slow >out &&
  grep -q "first-$M" out && grep -q "second-$M" out &&
  grep -q "Job completed successfully." out && state_is cli_slow SUCCEEDED &&
  "$TRAINYARD" jobs submit training cli_slow2 --config slow.json >/dev/null 2>&1 &&
  "$TRAINYARD" jobs stream-logs cli_slow2 --polling-interval 0.3 >out &&
  grep -q "first-$M" out && grep -q "second-$M" out &&
  test "$(grep -c "second-$M" out)" -eq 1 && grep -q "Job completed successfully." out
'
test_expect_success 'stream-logs of a missing job: exit 1' '
  set +e; "$TRAINYARD" jobs stream-logs no_such_job 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "ERROR: (trainyard.jobs.stream-logs) NOT_FOUND" err
'
test_expect_success 'submit --stream-logs: logs on stderr, final state on stdout, exit 0' '
  "$TRAINYARD" jobs submit training cli_sl --config ok.json --stream-logs >out 2>err &&
  grep -q "^Job \[cli_sl\] submitted successfully.$" err &&
  grep -q "${TAB}master-replica-0${TAB}${TAB}hello-$M$" err &&
  ! grep -q "Your job is still active" err &&
  grep -q "^jobId: cli_sl$" out && grep -q "^state: SUCCEEDED$" out &&
  grep -q "^endTime: .20[0-9-]*T[0-9:]*.$" out
'
test_expect_success 'submit --stream-logs of a failing job: exit 1 with its error' '
  write_job fail.json "echo failing-$M; exit 3" &&
  set +e; "$TRAINYARD" jobs submit training cli_fail --config fail.json --stream-logs >out 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "^state: FAILED$" out && grep -q "failing-$M" err &&
  grep -q "ERROR: (trainyard.jobs.submit.training) Job cli_fail ended FAILED: The replica master 0 exited with a non-zero status of 3." err
'
test_expect_success 'submit: USER_ARGS, --runtime and --pytorch-env reach the daemon' '
  write_job args.json "echo \"args:\$*\" MASTER_ADDR=\${MASTER_ADDR:-unset}" &&
  "$PYTHON" -c "import json; d=json.load(open(\"args.json\")); d[\"trainingInput\"][\"masterConfig\"][\"containerCommand\"].append(\"sh\"); json.dump(d,open(\"args.json\",\"w\"))" &&
  "$TRAINYARD" jobs submit training cli_args --config args.json --runtime process --pytorch-env \
    --labels team=vision --stream-logs -- --epochs 5 >out 2>err &&
  grep -q "args:--epochs 5 MASTER_ADDR=" err && ! grep -q "MASTER_ADDR=unset" err &&
  "$TRAINYARD" jobs describe cli_args --format json >d.json &&
  test "$(json_get d.json "d[\"labels\"][\"trainyard-runtime\"]")" = process &&
  test "$(json_get d.json "d[\"labels\"][\"trainyard-pytorch-env\"]")" = true &&
  test "$(json_get d.json "d[\"labels\"][\"team\"]")" = vision
'
test_expect_success 'update: the labels the service read at creation stay; changing one is refused' '
  "$TRAINYARD" jobs update cli_args --clear-labels 2>err &&
  "$TRAINYARD" jobs describe cli_args --format json >d.json &&
  test "$(json_get d.json "\" \".join(k + \"=\" + v for k, v in sorted(d[\"labels\"].items()))")" = "trainyard-pytorch-env=true trainyard-runtime=process" &&
  set +e; "$TRAINYARD" jobs update cli_args --update-labels trainyard-runtime=container 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "labels.trainyard-runtime: the service read it when the job was created (it was .process.)" err
'
test_expect_success 'a patch cannot take a job over 64 labels with the two it keeps' '
  "$PYTHON" -c "import json; json.dump({\"labels\": {\"k%d\" % i: \"v\" for i in range(63)}}, open(\"l63.json\", \"w\"))" &&
  code=$(curl -s -o out.json -w "%{http_code}" -X PATCH -H "Content-Type: application/json" \
    --data-binary @l63.json "$BASE/v1/projects/default/jobs/cli_args?updateMask=labels") &&
  test "$code" = 400 && grep -q "at most 64 labels (got 65, with the 2 of trainyard-runtime" out.json &&
  "$TRAINYARD" jobs describe cli_args --format json >d.json &&
  test "$(json_get d.json "len(d[\"labels\"])")" = 2 &&
  "$PYTHON" -c "import json; json.dump({\"labels\": {\"k%d\" % i: \"v\" for i in range(62)}}, open(\"l62.json\", \"w\"))" &&
  code=$(curl -s -o out.json -w "%{http_code}" -X PATCH -H "Content-Type: application/json" \
    --data-binary @l62.json "$BASE/v1/projects/default/jobs/cli_args?updateMask=labels") &&
  test "$code" = 200 && test "$(json_get out.json "len(d[\"labels\"])")" = 64
'

test_expect_success '--labels replace the config file'"'"'s labels, as gcloud; a key given twice is refused' '
  "$PYTHON" -c "import json; d=json.load(open(\"ok.json\")); d[\"labels\"]={\"team\": \"a\", \"env\": \"b\"}; json.dump(d, open(\"lab.json\", \"w\"))" &&
  "$TRAINYARD" jobs submit training cli_lab1 --config lab.json --labels owner=c >/dev/null 2>&1 &&
  "$TRAINYARD" jobs describe cli_lab1 --format "value(labels)" >out 2>/dev/null &&
  test "$(cat out)" = "owner=c" &&
  "$TRAINYARD" jobs submit training cli_lab2 --config lab.json >/dev/null 2>&1 &&
  "$TRAINYARD" jobs describe cli_lab2 --format "value(labels)" >out 2>/dev/null &&
  test "$(cat out)" = "env=b;team=a" &&
  set +e; "$TRAINYARD" jobs submit training cli_lab3 --config lab.json --labels a=1 --labels a=2 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "labels: .a. cannot be given more than once (a=1, a=2)" err &&
  wait_for 30 state_is cli_lab1 SUCCEEDED && wait_for 30 state_is cli_lab2 SUCCEEDED
'

test_expect_success 'Ctrl-C stops the logs, not the job: submit --stream-logs prints the job (exit 1), stream-logs gcloud'"'"'s line' '
  write_job int.json "echo started-$M; exec sleep 909.$M" &&
  "$TRAINYARD" jobs submit training cli_int --config int.json --stream-logs >out 2>err &
  pid=$! &&
  wait_for 30 grep -q "started-$M" err || exit 1
  (sleep 20; kill -KILL $pid 2>/dev/null) & guard=$!
  kill -INT $pid && set +e; wait $pid; rc=$?; kill $guard 2>/dev/null; set -e
  test $rc -eq 1 && grep -q "^Received keyboard interrupt.$" err &&
  grep -q "^  \$ trainyard jobs stream-logs cli_int$" err &&
  grep -q "^jobId: cli_int$" out && grep -q "^state: RUNNING$" out &&
  state_is cli_int RUNNING &&
  "$TRAINYARD" jobs stream-logs cli_int >out2 2>err2 &
  pid=$! &&
  wait_for 30 grep -q "started-$M" out2 || exit 1
  (sleep 20; kill -KILL $pid 2>/dev/null) & guard=$!
  kill -INT $pid && set +e; wait $pid; rc=$?; kill $guard 2>/dev/null; set -e
  test $rc -eq 1 && grep -q "^Command killed by keyboard interrupt$" err2 &&
  "$TRAINYARD" jobs cancel cli_int 2>/dev/null &&
  wait_for 30 state_is cli_int CANCELLED && wait_for 10 no_procs "sleep 909.$M"
'

# ---- cancel ----------------------------------------------------------------------------------

test_expect_success 'cancel a running job: Cancelled, replicas gone, exit 0' '
  write_job long.json "exec sleep 907.$M" &&
  "$TRAINYARD" jobs submit training cli_long --config long.json >/dev/null 2>&1 &&
  wait_for 20 procs_at_least "sleep 907.$M" 1 &&
  "$TRAINYARD" jobs cancel cli_long >out 2>err &&
  grep -q "^Cancelled job \[cli_long\].$" err &&
  wait_for 30 state_is cli_long CANCELLED &&
  wait_for 10 no_procs "sleep 907.$M"
'
test_expect_success 'cancel of a finished job succeeds and changes nothing' '
  "$TRAINYARD" jobs cancel cli_ok1 2>err &&
  grep -q "^Job \[cli_ok1\] has already ended (SUCCEEDED): nothing to cancel.$" err &&
  ! grep -q Cancelled err && state_is cli_ok1 SUCCEEDED
'
test_expect_success 'cancel --format: the service'"'"'s reply (the empty object, as gcloud); a bad format cancels nothing' '
  "$TRAINYARD" jobs cancel cli_ok1 --format json >out 2>err && test "$(cat out)" = "{}" &&
  grep -q "Job \[cli_ok1\] has already ended" err &&
  set +e; "$TRAINYARD" jobs cancel cli_ok1 --format yml >out 2>err; rc=$?; set -e
  test $rc -eq 2 && test ! -s out && ! grep -q Cancelled err &&
  grep -q "ERROR: (trainyard.jobs.cancel) --format: unknown format .yml. (did you mean .yaml.?)" err
'
test_expect_success 'cancel of a missing job: exit 1, NOT_FOUND' '
  set +e; "$TRAINYARD" jobs cancel no_such_job 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "ERROR: (trainyard.jobs.cancel) NOT_FOUND" err
'

# ---- update ----------------------------------------------------------------------------------

labels_of() {
  "$TRAINYARD" jobs describe "$1" --format json 2>/dev/null |
    "$PYTHON" -c 'import json,sys; l=json.load(sys.stdin).get("labels",{}); print(",".join("%s=%s" % kv for kv in sorted(l.items())))'
}
test_expect_success 'update --update-labels, --remove-labels, --clear-labels' '
  etag1=$("$TRAINYARD" jobs describe cli_ok2 --format json | "$PYTHON" -c "import json,sys; print(json.load(sys.stdin)[\"etag\"])") &&
  "$TRAINYARD" jobs update cli_ok2 --update-labels a=1,b=2 --update-labels c=3 2>err &&
  grep -q "^Updated job \[cli_ok2\].$" err &&
  test "$(labels_of cli_ok2)" = "a=1,b=2,c=3" &&
  etag2=$("$TRAINYARD" jobs describe cli_ok2 --format json | "$PYTHON" -c "import json,sys; print(json.load(sys.stdin)[\"etag\"])") &&
  test "$etag1" != "$etag2" &&
  "$TRAINYARD" jobs update cli_ok2 --remove-labels a,c --update-labels b=20,d=4 2>err &&
  test "$(labels_of cli_ok2)" = "b=20,d=4" &&
  "$TRAINYARD" jobs update cli_ok2 --update-labels d=5,f=6 --remove-labels d 2>err &&
  test "$(labels_of cli_ok2)" = "b=20,f=6" &&
  "$TRAINYARD" jobs update cli_ok2 --remove-labels f 2>err &&
  "$TRAINYARD" jobs update cli_ok2 --update-labels d=4 2>err &&
  "$TRAINYARD" jobs update cli_ok2 --remove-labels zzz 2>err &&
  grep -q "^No update to perform.$" err &&
  "$TRAINYARD" jobs update cli_ok2 --clear-labels --update-labels e=5 --format yaml >out 2>err &&
  grep -q "^  e: .5.$" out && test "$(labels_of cli_ok2)" = "e=5" &&
  "$TRAINYARD" jobs update cli_ok2 --clear-labels 2>err && test "$(labels_of cli_ok2)" = ""
'
test_expect_success 'international labels (gcloud'"'"'s rule): kept, listed and filtered by' '
  set +e; "$TRAINYARD" jobs update cli_ok2 --update-labels "Équipe=x" 2>bad; rc=$?; set -e
  test $rc -eq 2 &&
  "$TRAINYARD" jobs update cli_ok2 --update-labels "チーム=機械学習,équipe=٣-ß" 2>err &&
  test "$(labels_of cli_ok2)" = "équipe=٣-ß,チーム=機械学習" &&
  "$TRAINYARD" jobs list --filter "labels.チーム=機械学習" --format "value(jobId)" >out &&
  test "$(cat out)" = cli_ok2 && grep -q "key .Équipe. must start with a lowercase letter and contain only lowercase letters, digits, hyphens and underscores (international characters are allowed" bad &&
  "$TRAINYARD" jobs update cli_ok2 --clear-labels 2>err
'
test_expect_success 'concurrent updates all land (etag conflicts are retried)' '
  "$TRAINYARD" jobs update cli_ok3 --update-labels k1=1 2>e1 & p1=$!
  "$TRAINYARD" jobs update cli_ok3 --update-labels k2=2 2>e2 & p2=$!
  "$TRAINYARD" jobs update cli_ok3 --update-labels k3=3 2>e3 & p3=$!
  wait $p1 && wait $p2 && wait $p3 &&
  test "$(labels_of cli_ok3)" = "k1=1,k2=2,k3=3"
'
test_expect_success 'update of a missing job: exit 1, NOT_FOUND' '
  set +e; "$TRAINYARD" jobs update no_such_job --update-labels a=b 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "ERROR: (trainyard.jobs.update) NOT_FOUND" err
'

# ---- access tokens ---------------------------------------------------------------------------

TOKEN="cli-test-token-$M-0123456789"
printf "%s tokp\n" "$TOKEN" >"$TEST_DIR/tokens"
chmod 600 "$TEST_DIR/tokens"
trainyardd_start auth --auth-tokens "$TEST_DIR/tokens" && AUTH=$TYD_URL || AUTH=
test_expect_success 'a daemon with tokens: UNAUTHENTICATED without one' '
  test -n "$AUTH" &&
  set +e; "$TRAINYARD" jobs list --api-endpoint "$AUTH" --project tokp 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "ERROR: (trainyard.jobs.list) UNAUTHENTICATED: " err
'
test_expect_success 'token: --access-token-file > TRAINYARD_ACCESS_TOKEN > config' '
  printf "%s\n" "$TOKEN" >tok && printf "wrong-token-wrong-token\n" >badtok &&
  export TRAINYARD_API_ENDPOINT="$AUTH" &&
  "$TRAINYARD" jobs list --project tokp --access-token-file tok 2>err &&
  grep -q "Listed 0 items" err &&
  TRAINYARD_ACCESS_TOKEN="$TOKEN" "$TRAINYARD" jobs list --project tokp 2>err &&
  set +e; TRAINYARD_ACCESS_TOKEN="$TOKEN" "$TRAINYARD" jobs list --project tokp --access-token-file badtok 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q UNAUTHENTICATED err &&
  set +e; TRAINYARD_ACCESS_TOKEN="$TOKEN" "$TRAINYARD" jobs list --project other 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "ERROR: (trainyard.jobs.list) PERMISSION_DENIED: " err &&
  mkdir -p cfgdir && printf "project = tokp\naccess_token_file = ../tok\n" >cfgdir/config &&
  TRAINYARD_CONFIG=cfgdir/config "$TRAINYARD" jobs list 2>err && grep -q "Listed 0 items" err &&
  printf "project = tokp\naccess_token = %s\n" "$TOKEN" >cfgdir/config2 &&
  TRAINYARD_CONFIG=cfgdir/config2 "$TRAINYARD" jobs submit training tok_job --config ok.json >/dev/null 2>&1 &&
  TRAINYARD_CONFIG=cfgdir/config2 "$TRAINYARD" jobs stream-logs tok_job >out &&
  grep -q "hello-$M" out &&
  printf "\n" >empty_tok &&
  set +e; "$TRAINYARD" jobs list --access-token-file empty_tok 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "access token is empty" err
'

trainyardd_stop auth
trainyardd_stop svc
test_expect_success 'no job processes are left' '
  no_procs "sleep 907.$M"
'
test_done
