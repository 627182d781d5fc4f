#!/bin/sh
# t6010-local-tuning: hyperparameter-tuning jobs in `local train` (docs/lifecycle.md,
# "Hyperparameter tuning"): what each trial gets (trial id, --name=value arguments, job dir,
# metric file), parallel trials, the metric collected per trial, trainingOutput, failed
# trials, maxFailedTrials, grid search, and cancellation.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID # a marker unique to this test run, put into sleeping replicas' command lines
export SEEN="$TEST_DIR/seen"

# The training program: records what it got in $SEEN/<trial>.json, then reports
# (x - 0.3)^2 as the metric (a first report that must not count, then the final one).
# --mode=nometric reports nothing; --mode=nan reports nan last (as cloudml-hypertune writes a
# diverged loss); --mode=fail exits 1; --mode=sleep sleeps forever.
cat >"$TEST_DIR/prog.py" <<'PY'
import json, os, sys, time
args = sys.argv[1:]
opt = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
tid = os.environ["CLOUD_ML_TRIAL_ID"]
seen = os.environ["SEEN"]
run = os.path.join(seen, "running")
os.makedirs(run, exist_ok=True)
open(os.path.join(run, tid), "w").close()
rec = {"args": args, "trial": tid,
       "cs": json.loads(os.environ["CLUSTER_SPEC"])["task"],
       "tf": json.loads(os.environ["TF_CONFIG"])["task"],
       "file": os.environ.get("CLOUD_ML_HP_METRIC_FILE"),
       "tag": os.environ.get("CLOUD_ML_HP_METRIC_TAG"),
       "at_start": len(os.listdir(run))}
end = time.time() + float(opt.get("wait2", "0"))
while time.time() < end and len(os.listdir(run)) < 2:
    time.sleep(0.05)
rec["peak"] = len(os.listdir(run))
mode = opt.get("mode", "ok")
if "job-dir" in opt:
    os.makedirs(opt["job-dir"], exist_ok=True)
    open(os.path.join(opt["job-dir"], "model"), "w").write(tid)
json.dump(rec, open(os.path.join(seen, tid + ".json"), "w"))
print("training trial", tid, flush=True)
if mode == "sleep":
    os.execvp("sleep", ["sleep", opt["marker"]])
time.sleep(0.2)
os.remove(os.path.join(run, tid))
if mode == "fail":
    sys.exit(1)
if mode in ("ok", "nan"):
    x = float(opt.get("x", opt.get("a", "0")))
    tag = rec["tag"]
    with open(rec["file"], "w") as f:
        last = float("nan") if mode == "nan" else (x - 0.3) ** 2
        for step, v in ((1, 99.0), (10, last)):
            f.write(json.dumps({"global_step": str(step), tag: str(v), "timestamp": 1.0, "trial": tid}, sort_keys=True) + "\n")
PY

# Usage: tuning_job FILE MODE HYPERPARAMETERS_JSON [EXTRA_ARG]
tuning_job() {
  "$PYTHON" - "$@" <<'PYJ'
import json, os, sys
f, mode, hp = sys.argv[1:4]
extra = sys.argv[4:]
ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
      "workerCount": 1, "jobDir": os.environ["TEST_DIR"] + "/jd/" + os.path.basename(f),
      "masterConfig": {"imageUri": "x/y:1", "containerArgs": ["--mode=" + mode] + extra,
          "containerCommand": ["sh", "-c",
          'if echo "$CLUSTER_SPEC" | grep -q "\\"type\\":\\"worker\\""; then exec sleep 1000.$M; fi; exec "$0" "$@"',
          os.environ["PYTHON"], os.environ["TEST_DIR"] + "/prog.py"]},
      "hyperparameters": json.loads(hp)}
json.dump({"trainingInput": ti}, open(f, "w"))
PYJ
}
export TEST_DIR PYTHON M
RAND='{"goal": "MINIMIZE", "maxTrials": 4, "maxParallelTrials": 2, "algorithm": "RANDOM_SEARCH", "hyperparameterMetricTag": "loss", "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}, {"parameterName": "c", "type": "CATEGORICAL", "categoricalValues": ["p", "q"]}]}'

test_expect_success 'a random-search tuning job runs 4 trials and succeeds' '
  tuning_job rand.json ok "$RAND" --wait2=5 &&
  "$TRAINYARD" local train rand_job --config rand.json >out 2>err &&
  grep -q "Trial 4 started" out &&
  grep -q "^TRIAL  *STATE  *OBJECTIVE  *x  *c" out &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/rand_job/job.json" "d[\"state\"]")" = SUCCEEDED
'
test_expect_success 'the job is said to be queued once, not again by each trial' '
  test "$(grep -c "Job rand_job is queued\." out)" -eq 1 &&
  test "$(grep -c "Job creation request has been successfully validated" out)" -eq 1
'
test_expect_success 'a parameter reads the same in its trial log line and in the table' '
  for t in 1 2 3 4; do
    x=$(sed -n "s/.*Trial $t started with {\"x\":\([^,]*\),.*/\1/p" out) &&
    echo "trial $t: x=$x" && test -n "$x" &&
    grep "^ *$t  *SUCCEEDED " out | grep -q -F " $x " || exit 1
  done
'
test_expect_success 'describe --format json writes each objective value in its shortest form' '
  "$TRAINYARD" jobs describe rand_job --local --format json >desc.json &&
  "$PYTHON" - desc.json <<-\PY
	import re, sys
	text = open(sys.argv[1]).read()
	def sig(t):
	    return len(t.lstrip("-").lower().split("e")[0].replace(".", "").strip("0"))
	nums = re.findall(r"(?<=: )-?[0-9][0-9.eE+-]*(?=,?\n)", text)
	reals = [t for t in nums if re.search("[.eE]", t)]
	assert reals, text
	for t in reals:
	    assert sig(t) == sig(repr(float(t))), (t, repr(float(t)))
	PY
'
# A DISCRETE value of 0.1 (a double that %.17g writes 0.10000000000000001): the trial's log
# line and the table show the same text, whatever the random draw.
DISC='{"goal": "MINIMIZE", "maxTrials": 2, "algorithm": "RANDOM_SEARCH", "hyperparameterMetricTag": "loss", "params": [{"parameterName": "d", "type": "DISCRETE", "discreteValues": [0.1]}, {"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}'
test_expect_success 'a DISCRETE 0.1 reads 0.1 in its trial log line and in the table' '
  tuning_job disc.json ok "$DISC" &&
  SEEN="$TEST_DIR/seen-disc" "$TRAINYARD" local train disc_job --config disc.json >out 2>err &&
  for t in 1 2; do
    grep -q "Trial $t started with {\"d\":0\.1,\"x\":" out &&
    grep -q "^$t  *SUCCEEDED  *[^ ]*  *0\.1  *0\.[0-9]" out || exit 1
  done &&
  grep -q "^TRIAL  *STATE  *OBJECTIVE  *d  *x$" out &&
  json_get "$TEST_DIR/seen-disc/2.json" "\" \".join(d[\"args\"])" | grep -q " --d=0\.1 --x="
'
# Long names and values: the table local train ends with, and describe --summarize, fit 80
# columns (stdout is no terminal); the hyperparameters that do not fit go below, after TRIAL.
WIDE='{"goal": "MINIMIZE", "maxTrials": 2, "algorithm": "RANDOM_SEARCH", "hyperparameterMetricTag": "loss", "params": [{"parameterName": "learning_rate_of_the_optimizer", "type": "DOUBLE", "minValue": 0.0001, "maxValue": 0.1, "scaleType": "UNIT_LOG_SCALE"}, {"parameterName": "momentum_of_the_optimizer", "type": "DOUBLE", "minValue": 0, "maxValue": 1}, {"parameterName": "dropout_rate_of_each_layer", "type": "DOUBLE", "minValue": 0, "maxValue": 1}, {"parameterName": "optimizer", "type": "CATEGORICAL", "categoricalValues": ["adam_with_warmup_and_decay", "sgd"]}, {"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}'
test_expect_success 'the trials table of local train fits 80 columns, TRIAL starting each part' '
  tuning_job wide.json ok "$WIDE" &&
  SEEN="$TEST_DIR/seen-wide" "$TRAINYARD" local train wide_job --config wide.json >out 2>err &&
  sed -n "/^TRIAL /,\$p" out >table && cat table &&
  "$PYTHON" - table <<-\PY
	import sys
	lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
	assert max(len(l) for l in lines) <= 80, [l for l in lines if len(l) > 80]
	heads = [l.split() for l in lines if l.startswith("TRIAL ")]
	assert len(heads) >= 2, heads
	names = [h for part in heads for h in part[1:]]
	for n in ("STATE", "OBJECTIVE", "learning_rate_of_the_optimizer", "momentum_of_the_optimizer",
	          "dropout_rate_of_each_layer", "optimizer", "x"):
	    assert names.count(n) == 1, (n, names)
	parts = "\n".join(lines).strip("\n").split("\n\n")
	assert len(parts) == len(heads), parts
	for p in parts:
	    assert sorted(r.split()[0] for r in p.split("\n")[1:]) == ["1", "2"], p
	PY
'
test_expect_success 'describe --summarize of a tuning job fits 80 columns (trials, hyperparameters)' '
  "$TRAINYARD" jobs describe wide_job --local --summarize >sum 2>/dev/null && cat sum &&
  grep -q "Training Output Trials" sum && grep -q "HYPERPARAMETERS" sum &&
  grep -q "Training Output Trial Attempts" sum &&
  "$PYTHON" - sum <<-\PY
	import sys
	lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
	assert max(len(l) for l in lines) <= 80, [l for l in lines if len(l) > 80]
	PY
'
J="$TRAINYARD_HOME/jobs/local/rand_job/job.json"
test_expect_success 'each trial sees its id in CLUSTER_SPEC, TF_CONFIG and CLOUD_ML_TRIAL_ID' '
  for t in 1 2 3 4; do
    test "$(json_get $SEEN/$t.json "d[\"trial\"]")" = $t &&
    test "$(json_get $SEEN/$t.json "d[\"cs\"][\"trial\"]")" = $t &&
    test "$(json_get $SEEN/$t.json "d[\"tf\"][\"trial\"]")" = $t || exit 1
  done
'
test_expect_success 'each trial gets --name=value arguments after the job args, and its job dir' '
  for t in 1 2 3 4; do
    json_get $SEEN/$t.json "\" \".join(d[\"args\"])" >args &&
    grep -q "^--mode=ok --wait2=5 --job-dir=$TEST_DIR/jd/rand.json/$t --x=[0-9.e-]* --c=[pq]\$" args &&
    test "$(cat "$TEST_DIR/jd/rand.json/$t/model")" = $t || exit 1
  done
'
test_expect_success 'the metric file and tag are per trial' '
  for t in 1 2 3 4; do
    test "$(json_get $SEEN/$t.json "d[\"file\"]")" = "$TRAINYARD_HOME/jobs/local/rand_job/trials/$t/output.metrics" &&
    test "$(json_get $SEEN/$t.json "d[\"tag\"]")" = loss || exit 1
  done
'
test_expect_success 'maxParallelTrials 2 runs two trials at once, never more' '
  test "$(json_get $SEEN/1.json "d[\"peak\"]")" -eq 2 &&
  test "$(json_get $SEEN/2.json "d[\"peak\"]")" -eq 2 &&
  for t in 1 2 3 4; do test "$(json_get $SEEN/$t.json "d[\"at_start\"]")" -le 2 || exit 1; done
'
test_expect_success 'trainingOutput: each trial its own final metric, sorted best first' '
  "$PYTHON" - "$J" <<-\PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	o = d["trainingOutput"]
	assert o["completedTrialCount"] == "4", o
	assert o["isHyperparameterTuningJob"] is True and o["hyperparameterMetricTag"] == "loss"
	ids = sorted(t["trialId"] for t in o["trials"])
	assert ids == ["1", "2", "3", "4"], ids
	vals = [t["finalMetric"]["objectiveValue"] for t in o["trials"]]
	assert vals == sorted(vals), vals
	for t in o["trials"]:
	    x = float(t["hyperparameters"]["x"])
	    assert t["hyperparameters"]["c"] in ("p", "q")
	    assert abs(t["finalMetric"]["objectiveValue"] - (x - 0.3) ** 2) < 1e-12, t
	    assert t["finalMetric"]["trainingStep"] == "10" and len(t["allMetrics"]) == 2
	    assert t["state"] == "SUCCEEDED" and t["isTrialStoppedEarly"] is False
	    assert t["startTime"] <= t["endTime"]
	PY
'
test_expect_success 'trial records in the logs carry the trial id' '
  test -s "$TRAINYARD_HOME/jobs/local/rand_job/logs/master-replica-0.3.log" &&
  grep -q "master-replica-0  *\[trial 2\]" out
'
test_expect_success 'a trial that reports no metric is a failed trial, with the message' '
  tuning_job nom.json nometric "{\"maxTrials\": 1, \"algorithm\": \"RANDOM_SEARCH\", \"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 0, \"maxValue\": 1}]}" &&
  set +e; "$TRAINYARD" local train nom_job --config nom.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  msg="The trial succeeded but reported no value of the metric '\''training/hptuning/metric'\'' in $TRAINYARD_HOME/jobs/local/nom_job/trials/1/output.metrics." &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/nom_job/job.json" "d[\"trainingOutput\"][\"trials\"][0][\"errorMessage\"]")" = "$msg" &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/nom_job/job.json" "d[\"trainingOutput\"][\"trials\"][0][\"state\"]")" = FAILED &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/nom_job/job.json" "d[\"trainingOutput\"][\"completedTrialCount\"]")" = 0 &&
  grep -qF "$msg" err
'
test_expect_success 'a trial whose last report is nan is a failed trial, not its earlier value' '
  tuning_job nan.json nan "{\"maxTrials\": 1, \"algorithm\": \"RANDOM_SEARCH\", \"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 0, \"maxValue\": 1}]}" &&
  set +e; "$TRAINYARD" local train nan_job --config nan.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  msg="The trial succeeded but its last report of the metric '\''training/hptuning/metric'\'' (step 10) is NaN, not a number the search can use: its training may have diverged." &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/nan_job/job.json" "d[\"trainingOutput\"][\"trials\"][0][\"errorMessage\"]")" = "$msg" &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/nan_job/job.json" "d[\"trainingOutput\"][\"trials\"][0][\"state\"]")" = FAILED
'
test_expect_success 'maxFailedTrials stops the job once that many trials failed' '
  tuning_job mf.json fail "{\"maxTrials\": 8, \"maxFailedTrials\": 2, \"algorithm\": \"RANDOM_SEARCH\", \"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 0, \"maxValue\": 1}]}" &&
  set +e; "$TRAINYARD" local train mf_job --config mf.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "2 trials failed, reaching maxFailedTrials (2)" err &&
  grep -q "The replica master 0 exited with a non-zero status of 1." err &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/mf_job/job.json" "len(d[\"trainingOutput\"][\"trials\"])")" = 2 &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/mf_job/job.json" "d[\"state\"]")" = FAILED
'
test_expect_success 'trials failing after maxFailedTrials was reached count in the job'"'"'s error' '
  tuning_job mf1.json fail "{\"maxTrials\": 6, \"maxParallelTrials\": 3, \"maxFailedTrials\": 1, \"algorithm\": \"RANDOM_SEARCH\", \"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 0, \"maxValue\": 1}]}" &&
  set +e; "$TRAINYARD" local train mf1_job --config mf1.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  n=$(json_get "$TRAINYARD_HOME/jobs/local/mf1_job/job.json" "len(d[\"trainingOutput\"][\"trials\"])") &&
  test "$n" -ge 2 &&
  json_get "$TRAINYARD_HOME/jobs/local/mf1_job/job.json" "d[\"errorMessage\"]" >msg &&
  cat msg && grep -q "^$n trials failed, reaching maxFailedTrials (1). The last failure (trial [0-9]*):" msg
'
test_expect_success 'maxFailedTrials unset: the job fails when the first 3 trials all fail' '
  tuning_job df.json fail "{\"maxTrials\": 10, \"maxParallelTrials\": 1, \"algorithm\": \"RANDOM_SEARCH\", \"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 0, \"maxValue\": 1}]}" &&
  set +e; "$TRAINYARD" local train df_job --config df.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "the first 3 trials all failed" err &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/df_job/job.json" "len(d[\"trainingOutput\"][\"trials\"])")" = 3
'
test_expect_success 'GRID_SEARCH covers its grid exactly once, then stops (best first: goal MAXIMIZE)' '
  tuning_job grid.json ok "{\"maxTrials\": 20, \"maxParallelTrials\": 3, \"algorithm\": \"GRID_SEARCH\", \"params\": [{\"parameterName\": \"a\", \"type\": \"INTEGER\", \"minValue\": 1, \"maxValue\": 3}, {\"parameterName\": \"c\", \"type\": \"CATEGORICAL\", \"categoricalValues\": [\"p\", \"q\"]}]}" &&
  "$TRAINYARD" local train grid_job --config grid.json >out 2>err &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/grid_job/job.json" "sorted((t[\"hyperparameters\"][\"a\"], t[\"hyperparameters\"][\"c\"]) for t in d[\"trainingOutput\"][\"trials\"])")" = "[('\''1'\'', '\''p'\''), ('\''1'\'', '\''q'\''), ('\''2'\'', '\''p'\''), ('\''2'\'', '\''q'\''), ('\''3'\'', '\''p'\''), ('\''3'\'', '\''q'\'')]" &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/grid_job/job.json" "d[\"trainingOutput\"][\"trials\"][0][\"hyperparameters\"][\"a\"]")" = 3
'
test_expect_success 'Ctrl-C cancels every running trial and leaves no process' '
  tuning_job cancel.json sleep "$RAND" --marker=907.$M || exit 1
  "$TRAINYARD" local train c_job --config cancel.json --grace-period 2 >out 2>&1 &
  pid=$!
  { wait_for 20 procs_at_least "sleep 907.$M" 2 || { kill -KILL $pid; false; }; } &&
  kill -INT $pid &&
  set +e; wait $pid; rc=$?; set -e
  test $rc -eq 1 &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/c_job/job.json" "d[\"state\"]")" = CANCELLED &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/c_job/job.json" "sorted(t[\"state\"] for t in d[\"trainingOutput\"][\"trials\"])")" = "['\''CANCELLED'\'', '\''CANCELLED'\'']" &&
  no_procs "sleep 907.$M" && no_procs "sleep 1000.$M"
'
test_expect_success '--dry-run of a tuning job prints the replicas' '
  "$TRAINYARD" local train dry_job --config rand.json --dry-run >out &&
  test "$(json_get out "len(d)")" = 2
'
test_done
