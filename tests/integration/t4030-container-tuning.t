#!/bin/sh
# t4030-container-tuning: a hyperparameter-tuning job in the container runtime (Podman). The
# programs write their cloudml-hypertune reports to the library's DEFAULT path
# /tmp/hypertune/output.metrics inside the container (CLOUD_ML_HP_METRIC_FILE unset), which
# the runtime mounts from the trial's own metric directory. Two trials run at once
# (maxParallelTrials 2), each a master + 1 worker; each trial's metric is collected from its
# own mount (a value only that trial writes, no record of another trial); a trial that
# reports nothing fails with the message; no container or network is left.
# Skipped (every test) when no usable container engine is on this machine.
. "$(dirname "$0")/../lib/test-lib.sh"

require_testbox "container tuning" job parallel mounts metrics nometric env leftovers
export TRAINYARD_RUNTIME=container
J=tune_$$ # a job id unique to this run: container labels are machine-wide
IMG=localhost/trainyard/testbox:1
ST="$TRAINYARD_HOME/jobs/local/$J"
export ST

# The program (busybox sh). Workers sleep. The master of a trial with --x=1 or 2 writes a
# first report (step 1, value x+10), records what it saw, waits for $jobdir/go, then writes
# the final report (step 2, value "x.0<trial>") and exits 0; --x=3 reports nothing.
PROG='case "$CLUSTER_SPEC" in *"\"type\":\"worker\""*) exec sleep 1000;; esac
for a in "$0" "$@"; do case "$a" in --job-dir=*) jd=${a#--job-dir=};; --x=*) x=${a#--x=};; esac; done
t=$CLOUD_ML_TRIAL_ID
{ echo "trial=$t x=$x"; echo "$CLUSTER_SPEC" | grep -o "\"trial\":\"[0-9]*\""
  echo "env_file=$CLOUD_ML_HP_METRIC_FILE tag=$CLOUD_ML_HP_METRIC_TAG"
  echo "mounts=$(grep -c " /tmp/hypertune " /proc/mounts)"
  echo "before=$(ls -A /tmp/hypertune | tr "\n" " ")"; } >"$jd/seen"
: >"$jd/../from-trial-$t" # the whole jobDir is mounted, not the trial one alone
unset CLOUD_ML_HP_METRIC_FILE
[ "$x" = 3 ] && exit 0
report() { # STEP VALUE...: rewrite the whole file (temp file + rename), as the library does
  f=/tmp/hypertune/output.metrics; : >"$f.tmp"; step=1
  for v in "$@"; do
    printf "{\"%s\": \"%s\", \"checkpoint_path\": \"\", \"global_step\": \"%s\", \"timestamp\": %s.5, \"trial\": \"%s\"}\n" \
      "$CLOUD_ML_HP_METRIC_TAG" "$v" "$step" "$(date +%s)" "$t" >>"$f.tmp"
    step=$((step + 1))
  done
  mv "$f.tmp" "$f"
}
report "$((x + 10)).0"
i=0; while [ ! -e "$jd/go" ]; do sleep 0.1; i=$((i + 1)); [ $i -lt 1200 ] || exit 7; done
report "$((x + 10)).0" "$x.0$t"
ls -A /tmp/hypertune >"$jd/after"'

"$PYTHON" - "$TEST_DIR/job.json" "$PROG" "$IMG" "$TEST_DIR/jd" <<'PY'
import json, sys
f, prog, image, jd = sys.argv[1:]
ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
      "workerCount": 1, "jobDir": jd,
      "masterConfig": {"imageUri": image, "containerCommand": ["sh", "-c", prog]},
      "hyperparameters": {"goal": "MAXIMIZE", "hyperparameterMetricTag": "accuracy",
          "maxTrials": 3, "maxParallelTrials": 2, "algorithm": "GRID_SEARCH",
          "params": [{"parameterName": "x", "type": "INTEGER", "minValue": 1, "maxValue": 3}]}}
json.dump({"trainingInput": ti}, open(f, "w"))
PY

# Usage: leftovers   prints containers and networks still labelled with the job
leftovers() {
  podman ps -a --filter "label=trainyard.job=$J" --format '{{.Names}}'
  podman network ls --filter "label=trainyard.job=$J" --format '{{.Name}}'
}
# Usage: reports N   succeeds when N trials' metric files exist on the host
reports() {
  [ "$(ls "$ST"/trials/*/output.metrics 2>/dev/null | wc -l)" -ge "$1" ]
}

"$TRAINYARD" local train "$J" --config "$TEST_DIR/job.json" --grace-period 1 \
  >"$TEST_DIR/out" 2>"$TEST_DIR/err" &
PID=$!
# While the two reporting trials wait for their go file: what is running.
if wait_for 120 reports 2; then
  podman ps --filter "label=trainyard.job=$J" --format '{{.Names}}' >"$TEST_DIR/running"
  podman network ls --filter "label=trainyard.job=$J" --format '{{.Name}}' >"$TEST_DIR/networks"
  ls "$ST"/trials/*/output.metrics >"$TEST_DIR/waiting"
fi
for t in 1 2 3; do mkdir -p "$TEST_DIR/jd/$t" && touch "$TEST_DIR/jd/$t/go"; done
wait_for 120 sh -c "! kill -0 $PID" || kill -TERM $PID
wait $PID
RC=$?

test_expect_success 'container tuning: job' '
  cat out err &&
  test $RC -eq 0 &&
  grep -q "Hyperparameter tuning completed: 2 of 3 trials succeeded." out &&
  test "$(json_get "$ST/job.json" "d[\"state\"]")" = SUCCEEDED &&
  grep -q "^TRIAL  *STATE  *OBJECTIVE  *x *$" out
'
test_expect_success 'container tuning: parallel' '
  cat running networks waiting &&
  test "$(wc -l <waiting)" = 2 &&
  test "$(grep -c -- "-master-replica-0\$" running)" = 2 &&
  test "$(grep -c -- "-worker-replica-0\$" running)" = 2 &&
  test "$(sed "s/-[a-z]*-replica-0\$//" running | sort -u | wc -l)" = 2 &&
  test "$(wc -l <networks)" = 2
'
test_expect_success 'container tuning: mounts' '
  for t in 1 2 3; do
    cat "jd/$t/seen" &&
    grep -qx "trial=$t x=[123]" "jd/$t/seen" &&
    grep -qx "mounts=1" "jd/$t/seen" &&
    grep -qx "before=" "jd/$t/seen" &&
    test -e "jd/from-trial-$t" || exit 1
  done &&
  for t in $(sed -n "s|.*/trials/\([0-9]*\)/output.metrics|\1|p" waiting); do
    test "$(cat "jd/$t/after")" = output.metrics || exit 1
  done
'
test_expect_success 'container tuning: metrics' '
  "$PYTHON" - <<-\PY
	import json, os
	st = os.environ["ST"]
	d = json.load(open(f"{st}/job.json"))
	o = d["trainingOutput"]
	assert o["completedTrialCount"] == "2" and o["hyperparameterMetricTag"] == "accuracy", o
	ok = [t for t in o["trials"] if t["state"] == "SUCCEEDED"]
	assert sorted(t["hyperparameters"]["x"] for t in ok) == ["1", "2"], o
	values = set()
	for t in ok:
	    tid, x = t["trialId"], t["hyperparameters"]["x"]
	    # the value only this trial wrote, from its own mount
	    assert t["finalMetric"] == {"trainingStep": "2", "objectiveValue": float(f"{x}.0{tid}")}, t
	    assert [m["objectiveValue"] for m in t["allMetrics"]] == [int(x) + 10.0, float(f"{x}.0{tid}")], t
	    values.add(t["finalMetric"]["objectiveValue"])
	    lines = open(f"{st}/trials/{tid}/output.metrics").read().splitlines()
	    assert len(lines) == 2 and all(json.loads(l)["trial"] == tid for l in lines), lines
	assert len(values) == 2, values
	assert o["trials"][0]["hyperparameters"]["x"] == "2", o  # best first (MAXIMIZE)
	PY
'
test_expect_success 'container tuning: nometric' '
  t=$(json_get "$ST/job.json" "[t[\"trialId\"] for t in d[\"trainingOutput\"][\"trials\"] if t[\"hyperparameters\"][\"x\"] == \"3\"][0]") &&
  msg="The trial succeeded but reported no value of the metric '\''accuracy'\'' in $ST/trials/$t/output.metrics." &&
  test "$(json_get "$ST/job.json" "[t[\"errorMessage\"] for t in d[\"trainingOutput\"][\"trials\"] if t[\"trialId\"] == \"$t\"][0]")" = "$msg" &&
  test "$(json_get "$ST/job.json" "[t[\"state\"] for t in d[\"trainingOutput\"][\"trials\"] if t[\"trialId\"] == \"$t\"][0]")" = FAILED &&
  grep -qF "$msg" out err &&
  test ! -e "$ST/trials/$t/output.metrics"
'
test_expect_success 'container tuning: env' '
  for t in 1 2 3; do
    grep -qx "\"trial\":\"$t\"" "jd/$t/seen" &&
    grep -qx "env_file=/tmp/hypertune/output.metrics tag=accuracy" "jd/$t/seen" || exit 1
  done
'
test_expect_success 'container tuning: leftovers' '
  test -z "$(leftovers)"
'
test_done
