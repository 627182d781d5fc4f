#!/bin/sh
# t6030-tuning-stop-resume: enableTrialEarlyStopping (the median stopping rule on the trials'
# intermediate reports), resumePreviousJobId (a study continued from an earlier job's
# trials), trainingOutput kept up to date after each trial, and --dry-run of a trial, all
# through `local train` (docs/tuning.md).
. "$(dirname "$0")/../lib/test-lib.sh"

export SEEN="$TEST_DIR/seen"
mkdir -p "$SEEN"

# The training program: reports accuracy v * step / 12 at steps 1..12, one every 0.15 s,
# where v comes from --q (goodN: 0.75 + 0.05 N; badN: 0.1; failN: exit 3). At its start, once the job's
# record (job.json) lists its trial, it copies the record so the test can see what
# trainingOutput said while the job ran.
cat >"$TEST_DIR/prog.py" <<'PY'
import json, os, shutil, sys, time
opt = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
tid = os.environ["CLOUD_ML_TRIAL_ID"]
record = os.path.join(os.environ["TRAINYARD_HOME"], "jobs", "local", opt["job"], "job.json")
for _ in range(100):  # the record lists this trial soon after it starts (written by a timer)
    try:
        if any(t.get("trialId") == tid for t in
               json.load(open(record)).get("trainingOutput", {}).get("trials", [])):
            break
    except ValueError:
        pass
    time.sleep(0.05)
shutil.copy(record, os.path.join(os.environ["SEEN"], opt["job"] + "." + tid + ".job.json"))
q = opt["q"]
if q.startswith("fail"):
    sys.exit(3)
v = 0.1 if q.startswith("bad") else 0.75 + 0.05 * int(q[4:])
path, tag = os.environ["CLOUD_ML_HP_METRIC_FILE"], os.environ["CLOUD_ML_HP_METRIC_TAG"]
lines = []
for step in range(1, 13):
    lines.append(json.dumps({"checkpoint_path": "", "global_step": str(step), tag: str(v * step / 12),
                             "timestamp": time.time(), "trial": tid}, sort_keys=True) + "\n")
    with open(path + ".tmp", "w") as f:
        f.writelines(lines)
    os.rename(path + ".tmp", path)
    time.sleep(0.15)
open(os.path.join(os.environ["SEEN"], opt["job"] + "." + tid + ".done"), "w").close()
PY

# Usage: stop_job FILE JOB CATEGORIES [EXTRA_HP_JSON]: a GRID_SEARCH over --q, one trial at
# a time, early stopping on.
stop_job() {
  "$PYTHON" - "$@" <<'PYJ'
import json, os, sys
f, job, cats = sys.argv[1:4]
extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
hp = {"goal": "MAXIMIZE", "hyperparameterMetricTag": "acc", "maxTrials": 10,
      "maxParallelTrials": 1, "algorithm": "GRID_SEARCH", "enableTrialEarlyStopping": True,
      "params": [{"parameterName": "q", "type": "CATEGORICAL", "categoricalValues": cats.split(",")}]}
hp.update(extra)
ti = {"scaleTier": "BASIC", "masterConfig": {"imageUri": "x/y:1",
      "containerCommand": [os.environ["PYTHON"], os.environ["TEST_DIR"] + "/prog.py"],
      "containerArgs": ["--job=" + job]}, "hyperparameters": hp}
json.dump({"trainingInput": ti}, open(f, "w"))
PYJ
}
export TEST_DIR PYTHON TRAINYARD_HOME
J1="$TRAINYARD_HOME/jobs/local/stop_a/job.json"
J2="$TRAINYARD_HOME/jobs/local/stop_b/job.json"

test_expect_success 'early stopping: a trial behind the median is stopped, the others run on' '
  stop_job a.json stop_a good1,good2,good3,bad1,good4 &&
  "$TRAINYARD" local train stop_a --config a.json >out 2>err &&
  grep -q "Stopping trial 4 early: its best acc by step [0-9]* (.*) is worse than the median (.*) of 3 completed trials" out &&
  grep -q "Trial 4 SUCCEEDED (stopped early)" out &&
  grep -q "^4  *SUCCEEDED\*  *0.0[0-9]*  *bad1" out && grep -q "^\* stopped early" out &&
  COLUMNS=200 "$TRAINYARD" jobs describe stop_a --local --summarize >sum.txt &&
  grep "STOPPED_EARLY" sum.txt && test "$(grep -c -E "(│|[|]) yes *(│|[|])" sum.txt)" -eq 1 &&
  grep -q -E "^(│|[|]) 4 *(│|[|]) SUCCEEDED *(│|[|]) .* (│|[|]) yes *(│|[|])" sum.txt &&
  test ! -e "$SEEN/stop_a.4.done" &&
  for t in 1 2 3 5; do test -e "$SEEN/stop_a.$t.done" || exit 1; done
'
test_expect_success 'trainingOutput: isTrialStoppedEarly, and the last report as finalMetric' '
  "$PYTHON" - "$J1" <<-\PY
	import json, sys
	o = json.load(open(sys.argv[1]))["trainingOutput"]
	t = {x["trialId"]: x for x in o["trials"]}
	assert sorted(t) == ["1", "2", "3", "4", "5"], sorted(t)
	assert o["completedTrialCount"] == "5", o["completedTrialCount"]
	s = t["4"]
	assert s["state"] == "SUCCEEDED" and s["isTrialStoppedEarly"] is True, s
	step = int(s["finalMetric"]["trainingStep"])
	assert 1 <= step < 12, step
	assert abs(s["finalMetric"]["objectiveValue"] - 0.1 * step / 12) < 1e-12, s["finalMetric"]
	for k in "1235":
	    assert t[k]["isTrialStoppedEarly"] is False and t[k]["finalMetric"]["trainingStep"] == "12", t[k]
	assert o["trials"][0]["trialId"] == "5" and o["trials"][-1]["trialId"] == "4"
	PY
'
test_expect_success 'trainingOutput is recorded after each trial, while the job runs' '
  "$PYTHON" - "$SEEN/stop_a.3.job.json" <<-\PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["state"] == "RUNNING", d["state"]
	t = {x["trialId"]: x["state"] for x in d["trainingOutput"]["trials"]}
	assert t["1"] == "SUCCEEDED" and t["2"] == "SUCCEEDED", t
	assert t["3"] in ("PREPARING", "RUNNING"), t
	PY
'
test_expect_success 'without early stopping every trial runs to its end' '
  stop_job n.json stop_n good1,good2,good3,bad1 "{\"enableTrialEarlyStopping\": false}" &&
  "$TRAINYARD" local train stop_n --config n.json >out 2>err &&
  ! grep -q "early" out && test -e "$SEEN/stop_n.4.done"
'
test_expect_success 'resume: the earlier trials inform the search and are not run again' '
  stop_job b.json stop_b good1,good2,good3,bad1,good4,bad2,good5 "{\"resumePreviousJobId\": \"stop_a\"}" &&
  "$TRAINYARD" local train stop_b --config b.json >out 2>err &&
  grep -q "Resuming the study of job stop_a: 5 succeeded and 0 failed trials inform the search (0 skipped); new trials are numbered from 6." out &&
  test "$(json_get "$J2" "sorted((t[\"trialId\"], t[\"hyperparameters\"][\"q\"]) for t in d[\"trainingOutput\"][\"trials\"])")" = "[('\''6'\'', '\''bad2'\''), ('\''7'\'', '\''good5'\'')]"
'
test_expect_success 'resume: the earlier trials are the reference for early stopping at once' '
  grep -q "Stopping trial 6 early: .* of 4 completed trials" out &&
  test "$(json_get "$J2" "[t[\"isTrialStoppedEarly\"] for t in d[\"trainingOutput\"][\"trials\"]]")" = "[False, True]"
'
test_expect_success 'resume: a grid the earlier trials cover leaves nothing to run, and succeeds' '
  stop_job h.json stop_h good2,good1 "{\"resumePreviousJobId\": \"stop_a\"}" &&
  "$TRAINYARD" local train stop_h --config h.json >out 2>err &&
  grep -q "no trial was left to run (the 2 earlier trials of job stop_a cover every grid point)" out &&
  test "$(grep -c "Hyperparameter tuning completed" out)" -eq 1 &&
  ! grep -q "trials failed" out err &&
  ! grep -q "^TRIAL" out &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/stop_h/job.json" "d[\"state\"]")" = SUCCEEDED
'
test_expect_success 'resume: a covered grid whose earlier trials all failed has no result: FAILED' '
  stop_job fa.json stop_fa fail1,fail2 &&
  set +e; "$TRAINYARD" local train stop_fa --config fa.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  stop_job fb.json stop_fb fail1,fail2 "{\"resumePreviousJobId\": \"stop_fa\"}" &&
  set +e; "$TRAINYARD" local train stop_fb --config fb.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/stop_fb/job.json" "d[\"state\"]")" = FAILED &&
  grep -q "No trial was left to run: the 2 earlier trials of job stop_fa cover every grid point, and none of them succeeded." "$TRAINYARD_HOME/jobs/local/stop_fb/job.json" &&
  ! grep -q "completed" out
'
# Usage: first_trial_recorded JOB: whether local run JOB's record has its trial 1 SUCCEEDED
# (the program's end alone is not enough: the record follows it).
first_trial_recorded() {
  test "$(json_get "$TRAINYARD_HOME/jobs/local/$1/job.json" \
    "[t[\"state\"] for t in d.get(\"trainingOutput\", {}).get(\"trials\", []) if t[\"trialId\"] == \"1\"]")" = "['SUCCEEDED']"
}
# Usage: described_failed JOB: whether `jobs describe --local` shows local run JOB FAILED.
described_failed() {
  "$TRAINYARD" jobs describe "$1" --local --format "value(state)" | grep -qx FAILED
}
test_expect_success 'resume: a run killed without recording its end is resumed (it is FAILED)' '
  stop_job k.json stop_k good1,good2,good3 &&
  { "$TRAINYARD" local train stop_k --config k.json >kout 2>kerr & pid=$!; } &&
  wait_for 30 first_trial_recorded stop_k &&
  kill -KILL $pid && { wait $pid || true; } &&
  wait_for 20 described_failed stop_k &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/stop_k/job.json" "d[\"state\"]")" = RUNNING &&
  stop_job k2.json stop_k2 good1,good2,good3 "{\"resumePreviousJobId\": \"stop_k\"}" &&
  "$TRAINYARD" local train stop_k2 --config k2.json >out 2>err &&
  grep -q "Resuming the study of job stop_k: 1 succeeded and 0 failed trials" out err &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/stop_k2/job.json" "d[\"state\"]")" = SUCCEEDED
'
test_expect_success 'resume: a job cannot resume itself' '
  stop_job s2.json stop_a good1 "{\"resumePreviousJobId\": \"stop_a\"}" &&
  set +e; "$TRAINYARD" local train stop_a --config s2.json >out 2>err; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q "resumePreviousJobId: .stop_a. is this job.s own id; a job resumes an earlier one, so run this one under a new id" err &&
  test ! -e "$TRAINYARD_HOME/jobs/local/stop_a.1"
'
test_expect_success 'resume: a job that does not exist is refused, naming the field' '
  stop_job c.json stop_c good1 "{\"resumePreviousJobId\": \"no_such_job\"}" &&
  set +e; "$TRAINYARD" local train stop_c --config c.json >out 2>err; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q "trainingInput.hyperparameters.resumePreviousJobId: no local job .no_such_job." err &&
  test ! -e "$TRAINYARD_HOME/jobs/local/stop_c"
'
test_expect_success 'resume: another goal, metric or parameter type is refused' '
  stop_job d.json stop_d good1 "{\"resumePreviousJobId\": \"stop_a\", \"goal\": \"MINIMIZE\"}" &&
  set +e; "$TRAINYARD" local train stop_d --config d.json >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "job .stop_a. maximizes its metric and this job minimizes it; the goal must be the same" err &&
  stop_job e.json stop_e good1 "{\"resumePreviousJobId\": \"stop_a\", \"hyperparameterMetricTag\": \"loss\"}" &&
  set +e; "$TRAINYARD" local train stop_e --config e.json >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "job .stop_a. tuned the metric .acc. and this job .loss." err &&
  stop_job f.json stop_f good1 "{\"resumePreviousJobId\": \"stop_a\", \"params\": [{\"parameterName\": \"q\", \"type\": \"INTEGER\", \"minValue\": 1, \"maxValue\": 3}]}" &&
  set +e; "$TRAINYARD" local train stop_f --config f.json >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "parameter .q. is CATEGORICAL in job .stop_a. and INTEGER here" err
'
test_expect_success 'resume: a job that is not a tuning job is refused' '
  write_job plain.json "echo plain" &&
  "$TRAINYARD" local train plain_job --config plain.json >out 2>err &&
  stop_job g.json stop_g good1 "{\"resumePreviousJobId\": \"plain_job\"}" &&
  set +e; "$TRAINYARD" local train stop_g --config g.json >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "job .plain_job. is not a hyperparameter tuning job" err
'
test_expect_success '--dry-run shows the first trial: its id and --name=value arguments' '
  "$TRAINYARD" local train dry_a --config a.json --dry-run >out 2>err &&
  grep -q "^Dry run of trial 1 of up to 10, with {\"q\":\"good1\"}.$" err &&
  test "$(json_get out "d[0][\"args\"]")" = "['\''--job=stop_a'\'', '\''--q=good1'\'']" &&
  test "$(json_get out "d[0][\"env\"][\"CLOUD_ML_TRIAL_ID\"]")" = 1 &&
  test "$(json_get out "d[0][\"env\"][\"CLOUD_ML_HP_METRIC_TAG\"]")" = acc &&
  test "$(json_get out "d[0][\"env\"][\"CLOUD_ML_HP_METRIC_FILE\"]")" = "$TRAINYARD_HOME/jobs/local/dry_a/trials/1/output.metrics"
'
test_expect_success '--dry-run of a resumed study shows its next trial' '
  "$TRAINYARD" local train dry_b --config b.json --dry-run >out 2>err &&
  grep -q "^Dry run of trial 6, the first of up to 10 of this job (it resumes job stop_a), with {\"q\":\"bad2\"}.$" err
'
test_done
