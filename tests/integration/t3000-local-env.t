#!/bin/sh
# t3000-local-env: what replicas of a `local train` job see: CLUSTER_SPEC, TF_CONFIG,
# CLOUD_ML_JOB_ID, the opt-in PyTorch variables, their arguments, and working addresses.
. "$(dirname "$0")/../lib/test-lib.sh"

PROBE="$TY_SOURCE_DIR/tests/integration/replica-probe.py"

# Usage: probe_job FILE EXTRA_JSON  (1 master, 2 workers, 2 ps, 1 evaluator running the probe)
probe_job() {
  "$PYTHON" - "$1" "$PYTHON" "$PROBE" "$TEST_DIR/out" "${2:-}" <<'PY'
import json, sys
f, py, probe, out, extra = sys.argv[1:]
ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
      "workerCount": "2", "parameterServerType": "n1-highmem-2", "parameterServerCount": 2,
      "evaluatorType": "n1-standard-4", "evaluatorCount": 1,
      "masterConfig": {"imageUri": "example.com/probe:1",
                       "containerCommand": [py, probe, out], "containerArgs": ["--epochs", "5"]}}
if extra:
    ti.update(json.loads(extra))
json.dump({"jobId": "probe_job", "labels": {"team": "ml"}, "trainingInput": ti}, open(f, "w"))
PY
}

# The contract's variables in the caller's environment: none may reach a replica the job does
# not give it to (local train passes the rest of its environment on).
LEAK="RANK=5 WORLD_SIZE=8 MASTER_ADDR=198.18.0.9 MASTER_PORT=1 DMLC_ROLE=server CLOUD_ML_TRIAL_ID=7 CLOUD_ML_HP_METRIC_TAG=old CLOUD_ML_HP_METRIC_FILE=/nonexistent/m"

test_expect_success 'a 1+2+2+1 job runs and every replica reports' '
  mkdir -p out && probe_job job.json &&
  env $LEAK "$TRAINYARD" local train --config job.json --grace-period 5 >log 2>&1 &&
  grep -q "master: all 6 replicas reported" log &&
  test $(ls out/*.json | wc -l) = 6
'
test_expect_success 'CLUSTER_SPEC lists all four roles, always "master"' '
  test "$(json_get out/worker-1.json "\",\".join(__import__(\"json\").loads(d[\"CLUSTER_SPEC\"])[\"cluster\"])")" = "master,worker,ps,evaluator"
'
test_expect_success 'TF_CONFIG says chief (the job has an evaluator) and leaves evaluators out' '
  test "$(json_get out/worker-1.json "\",\".join(__import__(\"json\").loads(d[\"TF_CONFIG\"])[\"cluster\"])")" = "chief,worker,ps" &&
  test "$(json_get out/master-0.json "__import__(\"json\").loads(d[\"TF_CONFIG\"])[\"task\"][\"type\"]")" = chief &&
  test "$(json_get out/master-0.json "__import__(\"json\").loads(d[\"CLUSTER_SPEC\"])[\"task\"][\"type\"]")" = master
'
test_expect_success 'evaluators get TF_CONFIG with task type evaluator' '
  test "$(json_get out/evaluator-0.json "__import__(\"json\").loads(d[\"TF_CONFIG\"])[\"task\"][\"type\"]")" = evaluator &&
  test "$(json_get out/evaluator-0.json "__import__(\"json\").loads(d[\"TF_CONFIG\"])[\"task\"][\"index\"]")" = 0
'
test_expect_success 'key order cluster, environment, task, job; compact; no trial' '
  json_get out/ps-1.json "d[\"CLUSTER_SPEC\"]" >cs &&
  grep -q "^{\"cluster\":{\"master\":\[\"127.0.0.1:[0-9]*\"\],\"worker\":" cs &&
  grep -q "},\"environment\":\"cloud\",\"task\":{\"type\":\"ps\",\"index\":1},\"job\":{\"scaleTier\":\"CUSTOM\"" cs &&
  ! grep -q " " cs && ! grep -q trial cs
'
test_expect_success 'job is the TrainingInput object with int64 as strings' '
  test "$(json_get out/ps-1.json "__import__(\"json\").loads(d[\"TF_CONFIG\"])[\"job\"][\"parameterServerCount\"]")" = 2 &&
  json_get out/ps-1.json "d[\"TF_CONFIG\"]" | grep -q "\"parameterServerCount\":\"2\""
'
test_expect_success 'CLOUD_ML_JOB_ID is set; no trial id outside tuning' '
  test "$(json_get out/worker-0.json "d[\"CLOUD_ML_JOB_ID\"]")" = probe_job &&
  test "$(json_get out/worker-0.json "d[\"CLOUD_ML_TRIAL_ID\"]")" = None
'
test_expect_success 'every replica reached every other at its advertised address' '
  for f in out/*.json; do
    test "$(json_get $f "all(v is True for v in d[\"reach\"].values())")" = True || exit 1
  done
'
test_expect_success 'addresses are distinct loopback ports' '
  test "$(json_get out/master-0.json "len(set(a for v in __import__(\"json\").loads(d[\"CLUSTER_SPEC\"])[\"cluster\"].values() for a in v))")" = 6
'
test_expect_success 'containerArgs reach the program' '
  test "$(json_get out/worker-0.json "\" \".join(d[\"argv\"])")" = "--epochs 5"
'
test_expect_success 'no PyTorch variables unless asked, nor the caller'"'"'s' '
  for f in out/*.json; do
    test "$(json_get $f "[d[k] for k in (\"WORLD_SIZE\", \"RANK\", \"MASTER_ADDR\", \"MASTER_PORT\", \"DMLC_ROLE\", \"CLOUD_ML_TRIAL_ID\", \"CLOUD_ML_HP_METRIC_TAG\", \"CLOUD_ML_HP_METRIC_FILE\")]")" = "[None, None, None, None, None, None, None, None]" || exit 1
  done
'
test_expect_success '--pytorch-env sets MASTER_ADDR/PORT, WORLD_SIZE, RANK' '
  rm -rf out && mkdir out && probe_job job2.json "{\"jobDir\": \"$TEST_DIR/jd\"}" &&
  env $LEAK "$TRAINYARD" local train pt_job --config job2.json --pytorch-env >log 2>&1 &&
  test "$(json_get out/worker-1.json "d[\"RANK\"]")" = 2 &&
  test "$(json_get out/master-0.json "d[\"RANK\"]")" = 0 &&
  test "$(json_get out/worker-0.json "d[\"WORLD_SIZE\"]")" = 3 &&
  test "$(json_get out/worker-0.json "d[\"MASTER_ADDR\"]")" = 127.0.0.1 &&
  test "$(json_get out/worker-0.json "d[\"MASTER_PORT\"]")" = "$(json_get out/master-0.json "d[\"CLUSTER_SPEC\"]" | sed "s/.*\"master\":\[\"127.0.0.1:\([0-9]*\)\".*/\1/")" &&
  test "$(json_get out/ps-0.json "d[\"RANK\"]")" = None &&
  test "$(json_get out/evaluator-0.json "[d[\"RANK\"], d[\"MASTER_ADDR\"], d[\"DMLC_ROLE\"]]")" = "[None, None, None]"
'
test_expect_success 'jobDir reaches the program as --job-dir=DIR and is created' '
  test "$(json_get out/worker-0.json "d[\"argv\"][-1]")" = "--job-dir=$TEST_DIR/jd" &&
  test -d "$TEST_DIR/jd"
'
test_expect_success 'useChiefInTfConfig without evaluators' '
  rm -rf out && mkdir out &&
  probe_job job3.json "{\"evaluatorCount\": 0, \"useChiefInTfConfig\": true}" &&
  "$TRAINYARD" local train chief_job --config job3.json >log 2>&1 &&
  test "$(json_get out/master-0.json "__import__(\"json\").loads(d[\"TF_CONFIG\"])[\"task\"][\"type\"]")" = chief &&
  test "$(json_get out/master-0.json "__import__(\"json\").loads(d[\"CLUSTER_SPEC\"])[\"task\"][\"type\"]")" = master
'
test_expect_success 'without evaluators or the flag TF_CONFIG says master' '
  rm -rf out && mkdir out && probe_job job4.json "{\"evaluatorCount\": 0}" &&
  "$TRAINYARD" local train master_job --config job4.json >log 2>&1 &&
  test "$(json_get out/master-0.json "\",\".join(__import__(\"json\").loads(d[\"TF_CONFIG\"])[\"cluster\"])")" = "master,worker,ps"
'
test_expect_success 'logs are kept per task, labelled live' '
  d="$TRAINYARD_HOME/jobs/local/master_job/logs" &&
  test -f "$d/master-replica-0.log" && test -f "$d/service.log" &&
  grep -q "INFO master: all 5 replicas reported" "$d/master-replica-0.log" &&
  grep -q "Z master-replica-0 *master: all 5 replicas reported" log &&
  test "$(json_get "$TRAINYARD_HOME/jobs/local/master_job/job.json" "d[\"state\"]")" = SUCCEEDED
'
test_expect_success 'a replica gets no descriptor of its caller but 0, 1 and 2' '
  write_job fds.json "for n in 3 4 5 6 7 8 9; do test -e /proc/\$\$/fd/\$n && echo leaked \$n; done; echo checked" 1 &&
  (exec 7>leaked 9<fds.json; "$TRAINYARD" local train fds_job --config fds.json >log 2>&1) &&
  test "$(grep -c " checked\$" log)" -eq 2 && ! grep -q "leaked" log
'
test_done
