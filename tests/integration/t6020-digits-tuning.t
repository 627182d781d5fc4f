#!/bin/sh
# t6020-digits-tuning: the digits example tuned (examples/digits/tuning.yaml, what
# `make demo-tuning` runs) with the process runtime through `local train`: 8 trials, 2 at a
# time, each a 1 master + 1 worker + 1 ps cluster. Every trial's master reports its held-out
# accuracy like cloudml-hypertune (intermediate reports and the final one) into the trial's
# own metric file; the trials table and trainingOutput list every trial, best first; trials
# really run two at a time; each trial has its own job dir. Also: plain runs of digits write
# no metric file, and --optimizer is validated.
. "$(dirname "$0")/../lib/test-lib.sh"

CONFIG="$TY_SOURCE_DIR/examples/digits/tuning.yaml"
JOB="$TRAINYARD_HOME/jobs/local/dtune"
export JOB

test_expect_success 'the digits tuning job runs 8 trials and succeeds' '
  "$TRAINYARD" local train dtune --runtime process --config "$CONFIG" \
    --job-dir "$TEST_DIR/jd" >out 2>err &&
  grep -q "Hyperparameter tuning completed: 8 of 8 trials succeeded." out &&
  test "$(json_get "$JOB/job.json" "d[\"state\"]")" = SUCCEEDED
'
test_expect_success 'every trial master reported like cloudml-hypertune, into its own file' '
  "$PYTHON" - <<-\PY
	import json, os
	job = os.environ["JOB"]
	for t in range(1, 9):
	    lines = open(f"{job}/trials/{t}/output.metrics").read().splitlines()
	    assert len(lines) == 10, (t, lines)
	    for i, line in enumerate(lines):
	        r = json.loads(line)
	        # json.dumps(record, sort_keys=True), as the library writes it
	        assert json.dumps(r, sort_keys=True) == line, line
	        assert sorted(r) == ["accuracy", "checkpoint_path", "global_step", "timestamp", "trial"], r
	        assert r["trial"] == str(t) and r["checkpoint_path"] == "", r
	        assert r["global_step"] == str(100 * (i + 1)), r
	        assert isinstance(r["timestamp"], float) and r["timestamp"] > 1.6e9, r
	        assert 0.0 <= float(r["accuracy"]) <= 1.0 and str(float(r["accuracy"])) == r["accuracy"], r
	    # the master prints the same final accuracy (to 3 places)
	    log = open(f"{job}/logs/master-replica-0.{t}.log").read()
	    assert "final test accuracy: %.3f" % float(r["accuracy"]) in log, (t, r)
	    assert f"master: trial {t}: reporting test accuracy as \x27accuracy\x27 to " in log
	PY
'
test_expect_success 'each trial got its hyperparameters as arguments' '
  "$PYTHON" - <<-\PY
	import json, os, re
	job = os.environ["JOB"]
	d = json.load(open(f"{job}/job.json"))
	for t in d["trainingOutput"]["trials"]:
	    hp, tid = t["hyperparameters"], t["trialId"]
	    assert 0.01 <= float(hp["learning_rate"]) <= 1.0, hp
	    assert 8 <= int(hp["hidden"]) <= 64, hp
	    assert hp["optimizer"] in ("sgd", "momentum"), hp
	    log = open(f"{job}/logs/master-replica-0.{tid}.log").read()
	    assert "(hidden %s)" % hp["hidden"] in log, (tid, hp)
	    assert "optimizer %s," % hp["optimizer"] in log, (tid, hp)
	    m = re.search(r"learning rate ([0-9.e+-]+),", log)
	    assert abs(float(m.group(1)) / float(hp["learning_rate"]) - 1) < 1e-5, (tid, hp)
	PY
'
test_expect_success 'the trials table lists all 8 trials, best first, as trainingOutput does' '
  sed -n "/^TRIAL  *STATE  *OBJECTIVE  *learning_rate  *hidden  *optimizer *$/,/^\$/p" out >table &&
  test "$(grep -c " SUCCEEDED " table)" = 8 &&
  awk "NR > 1 && NF { print \$1 }" table >table-ids &&
  json_get "$JOB/job.json" "\"\\n\".join(t[\"trialId\"] for t in d[\"trainingOutput\"][\"trials\"])" >json-ids &&
  cmp table-ids json-ids &&
  sort -n table-ids | tr "\n" " " | grep -qx "1 2 3 4 5 6 7 8 "
'
test_expect_success 'trainingOutput: 8 completed trials, sorted best first, sensible values' '
  "$PYTHON" - <<-\PY
	import json, os
	job = os.environ["JOB"]
	d = json.load(open(f"{job}/job.json"))
	o = d["trainingOutput"]
	assert o["completedTrialCount"] == "8", o
	assert o["isHyperparameterTuningJob"] is True and o["hyperparameterMetricTag"] == "accuracy"
	trials = o["trials"]
	assert sorted(int(t["trialId"]) for t in trials) == list(range(1, 9))
	vals = [t["finalMetric"]["objectiveValue"] for t in trials]
	assert vals == sorted(vals, reverse=True), vals
	assert vals[0] >= 0.9, vals  # the best trial learned the digits
	for t in trials:
	    assert t["state"] == "SUCCEEDED" and t["isTrialStoppedEarly"] is False, t
	    assert t["finalMetric"]["trainingStep"] == "1000", t
	    steps = [m["trainingStep"] for m in t["allMetrics"]]
	    assert steps == [str(100 * i) for i in range(1, 11)], steps
	    assert t["allMetrics"][-1]["objectiveValue"] == t["finalMetric"]["objectiveValue"]
	    tid = t["trialId"]
	    last = json.loads(open(f"{job}/trials/{tid}/output.metrics").read().splitlines()[-1])
	    assert float(last["accuracy"]) == t["finalMetric"]["objectiveValue"], (t, last)
	    assert t["startTime"] < t["endTime"], t
	PY
'
test_expect_success 'maxParallelTrials 2: trials 1 and 2 ran at the same time, never 3 at once' '
  "$PYTHON" - <<-\PY
	import json, os
	job = os.environ["JOB"]
	d = json.load(open(f"{job}/job.json"))
	trials = d["trainingOutput"]["trials"]
	# the study ran them at once ...
	span = {t["trialId"]: (t["startTime"], t["endTime"]) for t in trials}
	assert span["2"][0] < span["1"][1] and span["1"][0] < span["2"][1], span
	for t in trials:  # ... but never more than 2
	    at = t["startTime"]
	    running = [u for u in trials if u["startTime"] <= at < u["endTime"]]
	    assert len(running) <= 2, (at, running)
	# (Not whether the log records of their masters overlap: a trial trains for half a
	# second, and on a loaded machine all records of one can be read before the first of
	# the other.)
	PY
'
test_expect_success 'each trial has its own job dir with its checkpoints' '
  for t in 1 2 3 4 5 6 7 8; do
    test -s "$TEST_DIR/jd/$t/checkpoints/ckpt-final.bin" &&
    test "$(cat "$TEST_DIR/jd/$t/checkpoints/latest")" = ckpt-1000.bin || exit 1
  done &&
  test "$(ls "$TEST_DIR/jd" | wc -l)" = 8
'
test_expect_success 'no replica is left behind' '
  no_procs "$TEST_DIR/jd"
'
test_expect_success 'a plain run (no trial, no CLOUD_ML_HP_METRIC_FILE) writes no metric file' '
  env -u CLOUD_ML_HP_METRIC_FILE -u CLOUD_ML_TRIAL_ID -u TF_CONFIG -u CLUSTER_SPEC \
    "$DIGITS" --steps 20 --checkpoint-every 10 >plain.log 2>&1 &&
  grep -q "final test accuracy" plain.log && ! grep -q reporting plain.log &&
  if unshare -m true 2>/dev/null; then
    # with an empty private /tmp (the binary opened before, as it may be under /tmp):
    # nothing may appear there
    unshare -m sh -c "exec 3<\"\$0\" && mount -t tmpfs none /tmp &&
      env -u CLOUD_ML_HP_METRIC_FILE -u CLOUD_ML_TRIAL_ID -u TF_CONFIG -u CLUSTER_SPEC \
        /proc/self/fd/3 --steps 20 --checkpoint-every 10 >/dev/null 2>&1 &&
      test -z \"\$(ls -A /tmp)\"" "$DIGITS"
  fi
'
test_expect_success 'CLOUD_ML_HP_METRIC_FILE alone turns reporting on (trial "0", default tag)' '
  env -u CLOUD_ML_TRIAL_ID -u TF_CONFIG -u CLUSTER_SPEC -u CLOUD_ML_HP_METRIC_TAG \
    CLOUD_ML_HP_METRIC_FILE="$TEST_DIR/m/sub/out.metrics" \
    "$DIGITS" --steps 20 --checkpoint-every 10 >m.log 2>&1 &&
  test "$(wc -l <"$TEST_DIR/m/sub/out.metrics")" = 2 &&
  tail -1 "$TEST_DIR/m/sub/out.metrics" | grep -q "^{\"checkpoint_path\": \"\", \"global_step\": \"20\", \"timestamp\": [0-9.]*, \"training/hptuning/metric\": \"0\.[0-9]*\", \"trial\": \"0\"}\$" &&
  ! ls "$TEST_DIR/m/sub" | grep -v "^out.metrics\$"
'
test_expect_success 'digits keeps the last 100 reports' '
  CLOUD_ML_HP_METRIC_FILE="$TEST_DIR/m100" CLOUD_ML_TRIAL_ID=5 \
    "$DIGITS" --steps 220 --checkpoint-every 2 >/dev/null 2>&1 &&
  test "$(wc -l <"$TEST_DIR/m100")" = 100 &&
  head -1 "$TEST_DIR/m100" | grep -q "\"global_step\": \"22\"" &&
  tail -1 "$TEST_DIR/m100" | grep -q "\"global_step\": \"220\", .*\"trial\": \"5\"}"
'
test_expect_success 'digits --optimizer takes sgd or momentum, nothing else' '
  set +e; "$DIGITS" --optimizer=adam >bad.out 2>bad.err; rc=$?; set -e
  test $rc = 2 &&
  grep -q "^digits: --optimizer: expected .sgd. or .momentum., got .adam.\$" bad.err &&
  "$DIGITS" --steps 50 --optimizer momentum --learning-rate 0.1 2>/dev/null | grep -q "optimizer momentum,"
'
test_done
