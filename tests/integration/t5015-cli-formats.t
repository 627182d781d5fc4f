#!/bin/sh
# t5015-cli-formats: a migrating user's gcloud habits against a real trainyardd (issue 16,
# items 1, 4 and 10): --format value/csv/table/list/text with resource keys, --sort-by,
# --uri, the filter's unknown keys, case-folded enum values and strings ('=' ignores case, as
# gcloud's), '~' regular expressions (never a silent empty list; a 400 past their budget of
# matching steps),
# a --project the token does not grant (403 naming the token's projects), an empty project
# without a tokens file, and describe --summarize within 80 columns.
. "$(dirname "$0")/../lib/test-lib.sh"

TRAINYARDD="$TY_BUILD_DIR/bin/trainyardd"
if [ ! -x "$TRAINYARDD" ]; then
  echo "1..0 # SKIP trainyardd is not built ($TRAINYARDD)"
  rm -rf "$TEST_DIR"
  exit 0
fi

M=$RUN_ID
export TZ=UTC LC_ALL=C
export XDG_CONFIG_HOME="$TEST_DIR/xdg"
unset TRAINYARD_CONFIG TRAINYARD_PROJECT TRAINYARD_ACCESS_TOKEN TRAINYARD_API_ENDPOINT
TOKEN=tok-fmt-$M-aaaaaaaaaaaaaaaa
printf '%s p1,p2\n' "$TOKEN" >"$TEST_DIR/tokens" && chmod 600 "$TEST_DIR/tokens"

trainyardd_start auth --auth-tokens "$TEST_DIR/tokens" && AUTH=$TYD_URL &&
  trainyardd_start open && OPEN=$TYD_URL ||
  { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR"/*.log; exit 1; }
export TRAINYARD_API_ENDPOINT="$AUTH" TRAINYARD_ACCESS_TOKEN="$TOKEN" TRAINYARD_PROJECT=p1

state_is() {
  [ "$("$TRAINYARD" jobs describe "$1" --format 'value(state)' 2>/dev/null)" = "$2" ]
}

test_expect_success 'three jobs: two succeed, one fails with a long message' '
  write_job ok.json "true" &&
  write_job bad.json "echo $(printf "%0120d" 0) >&2; exit 3" &&
  "$TRAINYARD" jobs submit training fmt_b --config ok.json --labels team=vision >/dev/null 2>&1 &&
  "$TRAINYARD" jobs submit training fmt_a --config ok.json --labels team=nlp >/dev/null 2>&1 &&
  "$TRAINYARD" jobs submit training fmt_c --config bad.json >/dev/null 2>&1 &&
  wait_for 30 state_is fmt_a SUCCEEDED && wait_for 30 state_is fmt_b SUCCEEDED &&
  wait_for 30 state_is fmt_c FAILED
'
test_expect_success 'describe --format value(KEY): the polling scripts form' '
  test "$("$TRAINYARD" jobs describe fmt_a --format "value(state)")" = SUCCEEDED &&
  test "$("$TRAINYARD" jobs describe fmt_a --format "value(transitions[0].state,transitions[-1].state)")" = "QUEUED	SUCCEEDED" &&
  set +e; "$TRAINYARD" jobs list --format "value(transitions[0].state)" >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "transitions\[0\].state.: only jobs describe (jobs.get) shows it" err &&
  set +e; "$TRAINYARD" jobs list --sort-by transitions >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "only jobs describe" err &&
  "$TRAINYARD" jobs describe fmt_b --format "value(jobId,labels.team,trainingInput.masterConfig.imageUri.basename())" >out 2>/dev/null &&
  printf "fmt_b\tvision\ttest:1\n" >want && diff -u want out
'
test_expect_success 'list: value, csv and table with labels, --sort-by (~ descending)' '
  "$TRAINYARD" jobs list --format "value(jobId,state)" --sort-by jobId >out &&
  printf "fmt_a\tSUCCEEDED\nfmt_b\tSUCCEEDED\nfmt_c\tFAILED\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --format "csv(jobId,labels.team)" --sort-by ~jobId >out &&
  printf "job_id,team\nfmt_c,\nfmt_b,vision\nfmt_a,nlp\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --format "table(jobId:label=ID:sort=1,state)" >out &&
  printf "ID     STATE\nfmt_a  SUCCEEDED\nfmt_b  SUCCEEDED\nfmt_c  FAILED\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --sort-by state,jobId --limit 2 --format "value(jobId)" >out &&
  printf "fmt_c\nfmt_a\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --format "value(jobId:sort=1)" --limit 1 >out &&
  printf "fmt_a\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --format "value(state:sort=1,jobId:sort=2)" --limit 2 >out &&
  printf "FAILED\tfmt_c\nSUCCEEDED\tfmt_a\n" >want && diff -u want out
'
test_expect_success 'list: the default table, table without keys, list, text, --uri' '
  "$TRAINYARD" jobs list >out && head -1 out | grep -q "^JOB_ID  STATUS     CREATED$" &&
  "$TRAINYARD" jobs list --format table >out2 && diff -u out out2 &&
  "$TRAINYARD" jobs list --format "list(jobId)" --sort-by jobId --limit 1 >out &&
  printf " - fmt_a\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --format text --filter jobId=fmt_a >out &&
  grep -q "^trainingInput.masterConfig.imageUri: example.com/test:1$" out &&
  grep -q "^labels.team: nlp$" out &&
  "$TRAINYARD" jobs list --uri --sort-by jobId >out &&
  printf "%s/v1/projects/p1/jobs/fmt_a\n%s/v1/projects/p1/jobs/fmt_b\n%s/v1/projects/p1/jobs/fmt_c\n" \
    "$AUTH" "$AUTH" "$AUTH" >want && diff -u want out
'
test_expect_success 'format errors: unknown keys and formats say what would be valid (exit 2)' '
  set +e
  "$TRAINYARD" jobs describe fmt_a --format "value(stat)" >out 2>err1; r1=$?
  "$TRAINYARD" jobs list --format "table(trainingInput.masterConfg.imageUri)" 2>err2; r2=$?
  "$TRAINYARD" jobs list --format "yml" 2>err3; r3=$?
  "$TRAINYARD" jobs list --sort-by "~createdTime" 2>err4; r4=$?
  set -e
  test $r1 -eq 2 && test $r2 -eq 2 && test $r3 -eq 2 && test $r4 -eq 2 && test ! -s out &&
  grep -q "ERROR: (trainyard.jobs.describe) --format: unknown key .stat.: the Job has no key .stat. (did you mean .state.?)" err1 &&
  grep -q "did you mean .trainingInput.masterConfig.imageUri.?" err2 &&
  grep -q "unknown format .yml. (did you mean .yaml.?); valid formats: default, none, json, yaml, value, csv, table" err3 &&
  grep -q -- "--sort-by: unknown key .createdTime.* (did you mean .createTime.?)" err4
'
test_expect_success 'filter: values in any case, regular expressions, unknown keys and values are errors' '
  "$TRAINYARD" jobs list --filter "state=failed" --format "value(jobId)" >out &&
  printf "fmt_c\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --filter "state:succeeded AND labels.team:NLP" --format "value(jobId)" >out &&
  printf "fmt_a\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --filter "labels.team=NLP" --format "value(jobId)" >out &&
  printf "fmt_a\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --filter "jobId=FMT_B OR labels.team!=Nlp" --format "value(jobId)" --sort-by jobId >out &&
  printf "fmt_b\nfmt_c\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --filter "jobId~^fmt_[ab]\$" --format "value(jobId)" --sort-by jobId >out &&
  printf "fmt_a\nfmt_b\n" >want && diff -u want out &&
  "$TRAINYARD" jobs list --filter "jobId!~^fmt_(a|b) AND state~^FAIL" --format "value(jobId)" >out &&
  printf "fmt_c\n" >want && diff -u want out &&
  set +e
  "$TRAINYARD" jobs list --filter "bogus:1" >out 2>err1; r1=$?
  "$TRAINYARD" jobs list --filter "state=FAILD" >out 2>err2; r2=$?
  "$TRAINYARD" jobs list --filter "jobId~^(fmt" >out 2>err3; r3=$?
  "$TRAINYARD" jobs list --filter "state~failed" >out 2>err4; r4=$?
  set -e
  test $r1 -eq 1 && test $r2 -eq 1 && test $r3 -eq 1 && test $r4 -eq 1 && test ! -s out &&
  grep -q "INVALID_ARGUMENT: filter: unknown key .bogus.: the Job has no key .bogus.; valid keys here: attemptStatus, createTime" err1 &&
  grep -q "state: .FAILD. is not a value of this key; valid values (any case): STATE_UNSPECIFIED, QUEUED" err2 &&
  grep -q "INVALID_ARGUMENT: filter: jobId~: .^(fmt. is not a POSIX extended regular expression: .* at position 7" err3 &&
  grep -q "filter: state~: the pattern .failed. matches no value of this key (patterns compare case-sensitively)" err4
'
test_expect_success 'filter: patterns past their budget of matching steps are a 400 saying so' '
  "$PYTHON" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10)
c.execute(\"UPDATE jobs SET error_message = ? WHERE job_id = ?\", (\"a b \" * 40000, \"fmt_c\"))
c.commit()" "$TEST_DIR/auth/trainyard.db" &&
  "$TRAINYARD" jobs list --filter "errorMessage~^a.b" --format "value(jobId)" >out &&
  printf "fmt_c\n" >want && diff -u want out &&
  set +e; "$TRAINYARD" jobs list --filter "errorMessage~.{999}x" >out 2>err; r=$?; set -e
  test $r -eq 1 && test ! -s out &&
  grep -q "INVALID_ARGUMENT: filter: its patterns (.~.) took over 100000000 matching steps on the jobs read, and were stopped" err
'

test_expect_success 'a project the token does not grant: 403 naming the token projects' '
  set +e; "$TRAINYARD" jobs list --project p3 >out 2>err; rc=$?; set -e
  test $rc -eq 1 && test ! -s out &&
  grep -q "PERMISSION_DENIED: Permission denied on project .p3.: the token does not grant it (it grants projects .p1., .p2.)" err
'
test_expect_success 'without a tokens file, an empty project says it has no jobs' '
  TRAINYARD_API_ENDPOINT="$OPEN" "$TRAINYARD" jobs list --project nojobs >out 2>err &&
  test ! -s out && grep -q "^Listed 0 items.$" err && grep -q "^Project \[nojobs\] has no jobs.$" err &&
  TRAINYARD_API_ENDPOINT="$OPEN" "$TRAINYARD" jobs list --project nojobs --filter state=RUNNING 2>err &&
  ! grep -q "has no jobs" err
'
test_expect_success 'describe --summarize fits 80 columns (columns that do not fit go below)' '
  "$TRAINYARD" jobs describe fmt_c --summarize >out 2>/dev/null &&
  grep -q "ERROR_MESSAGE" out && grep -q "Job Overview" out &&
  awk "length > 80 { bad = 1 } END { exit bad }" out
'

trainyardd_stop auth
trainyardd_stop open
test_done
