#!/bin/sh
# t6040-tuning-limits: a tuning job against its limits and against trial programs that
# misbehave, through `local train` (docs/tuning.md): scheduling.maxRunningTime is the whole
# job's; a retried trial starts from an empty metric file; a FIFO, a link or a huge file at
# the metric path; a study resumed through a chain of jobs (test-study-resume checks the
# chain's early-stopping references).
. "$(dirname "$0")/../lib/test-lib.sh"

# The trial program: --mode=M
#   ok*     report --x after --sleep seconds (oks*: 1.5 s unless --sleep)
#   fail*   exit 1 at once
#   badstep report twice, with a global_step of "3.5" and of "-3"
#   crash1  first run: report 5.0 at step 7 and crash (exit 134); later runs: exit 0 silently
#   diverge report 0.9 at step 1 and 0.7 at step 2, then exit 3
#   fifo    leave a FIFO at the metric path; link: a symbolic link to a file of good reports
#   huge    write 15,000 reports (1.6 MB), the last 0.123
cat >"$TEST_DIR/prog.py" <<'PY'
import json, os, sys, time
opt = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
path, tag = os.environ["CLOUD_ML_HP_METRIC_FILE"], os.environ["CLOUD_ML_HP_METRIC_TAG"]
mode = opt["mode"]
def line(v, step):
    return json.dumps({tag: str(v), "global_step": str(step), "timestamp": time.time()}) + "\n"
if mode.startswith("fail"):
    sys.exit(1)
if mode.startswith("ok"):
    time.sleep(float(opt.get("sleep", "1.5" if mode.startswith("oks") else "0")))
    open(path, "a").write(line(opt.get("x", "0.5"), 1))
elif mode == "badstep":
    open(path, "a").write(json.dumps({tag: "0.5", "global_step": "3.5"}) + "\n" +
                          json.dumps({tag: "0.4", "global_step": "-3"}) + "\n")
elif mode == "crash1":
    marker = os.path.join(os.environ["TEST_DIR"], "crashed." + opt["job"])
    if not os.path.exists(marker):
        open(marker, "w").close()
        open(path, "a").write(line(5.0, 7))
        os._exit(134)
elif mode == "diverge":
    open(path, "a").write(line(0.9, 1) + line(0.7, 2))
    sys.exit(3)
elif mode == "fifo":
    os.mkfifo(path)
elif mode == "link":
    good = os.path.join(os.environ["TEST_DIR"], "good.metrics")
    open(good, "w").write(line(0.25, 1))
    os.symlink(good, path)
elif mode == "huge":
    with open(path, "w") as f:
        for i in range(15000):
            f.write(line(0.5 if i < 14999 else 0.123, i + 1))
PY

# Usage: hp_job FILE JOB HP_JSON [SCHEDULING_JSON]: a job of prog.py with these
# hyperparameters (the parameter "mode" is a CATEGORICAL one of HP_JSON's params).
hp_job() {
  "$PYTHON" - "$@" <<'PYJ'
import json, os, sys
f, job, hp = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
ti = {"scaleTier": "BASIC", "masterConfig": {"imageUri": "x/y:1",
      "containerCommand": [os.environ["PYTHON"], os.environ["TEST_DIR"] + "/prog.py"],
      "containerArgs": ["--job=" + job]}, "hyperparameters": hp}
if len(sys.argv) > 4:
    ti["scheduling"] = json.loads(sys.argv[4])
json.dump({"trainingInput": ti}, open(f, "w"))
PYJ
}
# grid HP_EXTRA MODES...: a GRID_SEARCH over --mode, one trial at a time
grid() {
  "$PYTHON" -c 'import json, sys
hp = {"goal": "MINIMIZE", "hyperparameterMetricTag": "loss", "maxTrials": 20,
      "maxParallelTrials": 1, "algorithm": "GRID_SEARCH",
      "params": [{"parameterName": "mode", "type": "CATEGORICAL", "categoricalValues": sys.argv[2:]}]}
hp.update(json.loads(sys.argv[1]))
print(json.dumps(hp))' "$@"
}
export TEST_DIR PYTHON TRAINYARD_HOME
record() { echo "$TRAINYARD_HOME/jobs/local/$1/job.json"; }

test_expect_success 'maxRunningTime is the whole tuning job'"'"'s: its trials are stopped and it FAILS' '
  hp_job mrt.json mrt "$(grid "{\"maxTrials\": 4, \"params\": [{\"parameterName\": \"mode\", \"type\": \"CATEGORICAL\", \"categoricalValues\": [\"ok\"]}, {\"parameterName\": \"sleep\", \"type\": \"DISCRETE\", \"discreteValues\": [2, 3, 4, 5]}]}" ok)" \
    "{\"maxRunningTime\": \"3s\"}" &&
  start=$(date +%s) &&
  set +e; "$TRAINYARD" local train mrt --config mrt.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 && test $(($(date +%s) - start)) -lt 8 &&
  grep -q "The job exceeded its maximum running time (scheduling.maxRunningTime 3s)." err &&
  test "$(json_get "$(record mrt)" "d[\"state\"]")" = FAILED &&
  test "$(json_get "$(record mrt)" "sorted((t[\"trialId\"], t[\"state\"]) for t in d[\"trainingOutput\"][\"trials\"])")" = \
    "[('\''1'\'', '\''SUCCEEDED'\''), ('\''2'\'', '\''CANCELLED'\'')]" &&
  test "$(json_get "$(record mrt)" "[t.get(\"errorMessage\") for t in d[\"trainingOutput\"][\"trials\"] if t[\"state\"] == \"CANCELLED\"]")" = \
    "['\''The job exceeded its maximum running time (scheduling.maxRunningTime 3s).'\'']"
'
test_expect_success 'the first 3 trials failing fail the job, even when the running ones then succeed' '
  hp_job ff.json ff "$(grid "{\"maxTrials\": 6, \"maxParallelTrials\": 4}" fail_a fail_b fail_c oks_a oks_b oks_c)" &&
  set +e; "$TRAINYARD" local train ff --config ff.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  test "$(json_get "$(record ff)" "d[\"state\"]")" = FAILED &&
  json_get "$(record ff)" "d[\"errorMessage\"]" >msg &&
  grep -q "^3 trials failed: the first 3 trials all failed (maxFailedTrials is unset). The last failure (trial [1-3]): " msg &&
  grep -q "Hyperparameter tuning: up to 6 trials, 4 at a time, minimizing loss." out err &&
  grep -Eq " [1-3] trials? still running then succeeded \(see trainingOutput\); the failures decided the job.$" msg &&
  test "$(json_get "$(record ff)" "sum(t[\"state\"] == \"SUCCEEDED\" for t in d[\"trainingOutput\"][\"trials\"])")" -ge 1
'
test_expect_success 'a retried trial starts from an empty metric file: a crashed attempt'"'"'s report is not its result' '
  hp_job cr.json cr "$(grid "{\"maxTrials\": 1}" crash1)" &&
  set +e; "$TRAINYARD" local train cr --config cr.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  "$PYTHON" - "$(record cr)" <<-\PY
	import json, sys
	t = json.load(open(sys.argv[1]))["trainingOutput"]["trials"][0]
	assert t["state"] == "FAILED", t
	assert t["attemptStatus"]["attempt"] == 2, t["attemptStatus"]
	assert "reported no value of the metric" in t["errorMessage"], t
	assert "finalMetric" not in t and not t.get("allMetrics"), t
	PY
'
test_expect_success 'a failed trial keeps the reports it made in allMetrics, and has no finalMetric' '
  hp_job dv.json dv "$(grid "{\"maxTrials\": 1}" diverge)" &&
  set +e; "$TRAINYARD" local train dv --config dv.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  "$PYTHON" - "$(record dv)" <<-\PY
	import json, sys
	t = json.load(open(sys.argv[1]))["trainingOutput"]["trials"][0]
	assert t["state"] == "FAILED", t
	assert "finalMetric" not in t, t
	assert [(m["trainingStep"], m["objectiveValue"]) for m in t["allMetrics"]] == [("1", 0.9), ("2", 0.7)], t
	PY
'
test_expect_success 'reports whose global_step is not a whole number of at least 0 are not used, and the failure says why' '
  hp_job bs.json bs "$(grid "{\"maxTrials\": 1}" badstep)" &&
  set +e; "$TRAINYARD" local train bs --config bs.json >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  json_get "$(record bs)" "d[\"trainingOutput\"][\"trials\"][0][\"errorMessage\"]" >msg &&
  grep -q "reported no usable value of the metric .loss. in .*/output.metrics: none of its 2 lines is a JSON object with .loss. a finite number (or a string of one), global_step a whole number of at least 0" msg
'
test_expect_success 'a FIFO or a link at the metric path fails its trial; the study goes on' '
  hp_job ff.json ff "$(grid "{}" fifo link ok)" &&
  timeout 60 "$TRAINYARD" local train ff --config ff.json >out 2>err &&
  "$PYTHON" - "$(record ff)" <<-\PY
	import json, sys
	t = {x["hyperparameters"]["mode"]: x for x in json.load(open(sys.argv[1]))["trainingOutput"]["trials"]}
	assert t["fifo"]["state"] == "FAILED" and "is not a regular file" in t["fifo"]["errorMessage"], t["fifo"]
	assert t["link"]["state"] == "FAILED" and "is a symbolic link" in t["link"]["errorMessage"], t["link"]
	assert t["ok"]["state"] == "SUCCEEDED", t["ok"]
	PY
'
test_expect_success 'a metric file over 1 MiB: its last reports are read, the last the result' '
  hp_job hg.json hg "$(grid "{}" huge)" &&
  "$TRAINYARD" local train hg --config hg.json >out 2>err &&
  test "$(json_get "$(record hg)" "d[\"trainingOutput\"][\"trials\"][0][\"finalMetric\"]")" = \
    "{'\''trainingStep'\'': '\''15000'\'', '\''objectiveValue'\'': 0.123}"
'
test_expect_success 'resume through a chain: a job resuming a resumed job continues all their trials' '
  ints() { echo "{\"parameterName\": \"x\", \"type\": \"INTEGER\", \"minValue\": 1, \"maxValue\": $1}"; }
  hp_job g1.json g1 "$(grid "{\"params\": [$(ints 2), {\"parameterName\": \"mode\", \"type\": \"CATEGORICAL\", \"categoricalValues\": [\"ok\"]}]}")" &&
  "$TRAINYARD" local train g1 --config g1.json >out 2>err &&
  hp_job g2.json g2 "$(grid "{\"resumePreviousJobId\": \"g1\", \"params\": [$(ints 3), {\"parameterName\": \"mode\", \"type\": \"CATEGORICAL\", \"categoricalValues\": [\"ok\"]}]}")" &&
  "$TRAINYARD" local train g2 --config g2.json >out 2>err &&
  test "$(json_get "$(record g2)" "[t[\"hyperparameters\"][\"x\"] for t in d[\"trainingOutput\"][\"trials\"]]")" = "['\''3'\'']" &&
  hp_job g3.json g3 "$(grid "{\"resumePreviousJobId\": \"g2\", \"params\": [$(ints 3), {\"parameterName\": \"mode\", \"type\": \"CATEGORICAL\", \"categoricalValues\": [\"ok\"]}]}")" &&
  "$TRAINYARD" local train g3 --config g3.json --dry-run >out 2>err &&
  grep -q "^Dry run: no trial is left to run (the earlier trials of job g2 and the jobs it resumed cover the grid)" err &&
  "$TRAINYARD" local train g3 --config g3.json >out 2>err &&
  grep -q "Resuming the study of job g2 (and the 1 job it resumed in turn): 3 succeeded and 0 failed trials inform the search (0 skipped); new trials are numbered from 4." out &&
  grep -q "no trial was left to run" out &&
  test "$(json_get "$(record g3)" "d[\"state\"]")" = SUCCEEDED
'
test_done
