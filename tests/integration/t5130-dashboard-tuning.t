#!/bin/sh
# t5130-dashboard-tuning: the dashboard's Tuning page in a real browser (headless Chromium
# through chromedriver with Selenium, dashboard-tuning-check.py) against a real trainyardd.
# A tuning job of 6 trials, 2 at a time (each reports its metric at 5 steps through the
# hypertune metric file; trial 4 fails), is opened while it runs: the page follows it to its
# end; then one point per finished trial in the history and slice plots (read from ECharts
# itself), the best trial first and highlighted in the table, sorting, a trial's details
# (parameters, curve, logs link) from a table row and from a point in a plot, a study of
# 1,000 trials drawn (bench/dashboard times it), 1280 and 390 px wide, no console errors.
# Screenshots go to $TY_ARTIFACT_DIR, else $TEST_DIR/artifacts.
. "$(dirname "$0")/../lib/test-lib.sh"

. "$TY_SOURCE_DIR/tests/lib/dashboard.sh"
dashboard_require 'the Tuning page in Chromium'

# No tokens file: on loopback the dashboard needs no sign-in (t5120 tests signing in).
trainyardd_start svc && BASE=$TYD_URL ||
  { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR/svc.log"; exit 1; }

# The trial: reads --lr, --layers, --opt; reports 5 steps of an "accuracy" that rises toward
# a value peaked at lr = 10^-2.5 and 2 layers, in the hypertune file's format, 0.2 s apart;
# trial 4 exits 1 after its second step; trial 6 waits before its last step until the check
# has seen the page of the running study (it creates $TEST_DIR/release; 30 s at most).
cat >"$TEST_DIR/trial.sh" <<'SH'
for a in "$@"; do
  case $a in --lr=*) lr=${a#--lr=} ;; --layers=*) layers=${a#--layers=} ;; --opt=*) opt=${a#--opt=} ;; esac
done
for s in 1 2 3 4 5; do
  if [ "$CLOUD_ML_TRIAL_ID" = 4 ] && [ $s = 3 ]; then echo "trial 4 fails on purpose" >&2; exit 1; fi
  awk -v lr="$lr" -v n="$layers" -v o="$opt" -v s="$s" -v tag="$CLOUD_ML_HP_METRIC_TAG" \
      -v t="$CLOUD_ML_TRIAL_ID" 'BEGIN {
    l = log(lr) / log(10); f = 0.95 - (l + 2.5) ^ 2 / 8 - 0.03 * (n - 2) ^ 2 + (o == "adam" ? 0.02 : 0)
    printf "{\"global_step\": \"%d\", \"%s\": \"%.6f\", \"timestamp\": %d.0, \"trial\": \"%s\"}\n",
      s * 100, tag, f * (1 - 0.5 ^ s), s, t }' >>"$CLOUD_ML_HP_METRIC_FILE"
  echo "trial $CLOUD_ML_TRIAL_ID step $s"
  sleep 0.2
  if [ "$CLOUD_ML_TRIAL_ID" = 6 ] && [ $s = 4 ]; then
    i=0; while [ ! -e "$RELEASE" ] && [ $i -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
  fi
done
SH
"$PYTHON" - "$TEST_DIR/trial.sh" "$TEST_DIR/study.json" "$TEST_DIR/release" <<'PY'
import json, sys
ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
      "masterConfig": {"imageUri": "example.com/test:1",
                       "containerCommand": ["env", "RELEASE=" + sys.argv[3], "sh", sys.argv[1]]},
      "hyperparameters": {
          "goal": "MAXIMIZE", "maxTrials": 6, "maxParallelTrials": 2,
          "algorithm": "RANDOM_SEARCH", "hyperparameterMetricTag": "accuracy",
          "params": [
              {"parameterName": "lr", "type": "DOUBLE", "minValue": 0.0001, "maxValue": 0.1,
               "scaleType": "UNIT_LOG_SCALE"},
              {"parameterName": "layers", "type": "INTEGER", "minValue": 1, "maxValue": 4},
              {"parameterName": "opt", "type": "CATEGORICAL", "categoricalValues": ["adam", "sgd"]}]}}
json.dump({"jobId": "study_job", "trainingInput": ti}, open(sys.argv[2], "w"))
PY

trials_ended() {
  curl -s "$BASE/v1/projects/p1/jobs/study_job" >job.json &&
  test "$(json_get job.json "len([t for t in d.get(\"trainingOutput\", {}).get(\"trials\", []) if t.get(\"endTime\")])")" -ge "$1"
}
cat >"$TEST_DIR/config-empty.json" <<EOF2
{"base": "$BASE", "project": "p1", "job": "study_job", "artifacts": "$DASHBOARD_ART",
 "release": "$TEST_DIR/release", "phase": "empty", "study": "$TEST_DIR/study.json"}
EOF2
dashboard_checks 'empty service' dashboard-tuning-check.py "$TEST_DIR/config-empty.json"
test_expect_success 'a tuning job of 6 trials runs (created by the check above); its first trial ends' '
  curl -s -o job.json "$BASE/v1/projects/p1/jobs/study_job" && grep -q "\"jobId\"" job.json &&
  wait_for 30 trials_ended 1
'

cat >"$TEST_DIR/config.json" <<EOF2
{"base": "$BASE", "project": "p1", "job": "study_job", "artifacts": "$DASHBOARD_ART",
 "release": "$TEST_DIR/release"}
EOF2
dashboard_checks 'tuning page' dashboard-tuning-check.py "$TEST_DIR/config.json"

curl -s -X POST -H 'Content-Type: application/json' --data-binary '{}' \
  "$BASE/v1/projects/p1/jobs/study_job:cancel" >/dev/null
trainyardd_stop svc
test_done
