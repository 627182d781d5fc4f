#!/bin/sh
# t7010-slurm-runtime: `--runtime slurm` on a simulated four-node cluster (tests/lib/
# slurm-cluster.sh, level 1: slurmd n1..n4 on this host): one Slurm job per run, every
# replica a task of trainyard-task; the environment each replica sees, all-pairs TCP at the
# advertised addresses (several replicas per node), master and worker failures, a job QUEUED
# in Slurm with its reason, cancel while queued and while running, and nothing left behind.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/slurm-cluster.sh"

PROBE="$TY_SOURCE_DIR/tests/integration/replica-probe.py"
M=$RUN_ID
if ! slurm_cluster_check; then
  test_skip "slurm runtime" "$TY_SLURM_SKIP_REASON"
  test_done
fi
# A node whose slurmd dies is found DOWN after SlurmdTimeout: keep that short here.
# Each node also has two "GPUs" (generic resources backed by stand-in device files), so
# accelerator requests can be checked without GPUs.
export TY_SLURM_EXTRA_CONF="SlurmdTimeout=5
MessageTimeout=2
GresTypes=gpu"
export TY_SLURM_NODE_EXTRA="Gres=gpu:2 " TY_SLURM_GRES_CONF="AutoDetect=off
NodeName=n[1-4] Name=gpu File=/dev/zero
NodeName=n[1-4] Name=gpu File=/dev/full"
if ! slurm_cluster_start; then
  test_skip "slurm runtime" "the test cluster did not start: $TY_SLURM_ERROR"
  test_done
fi
# If the script dies half-way, the cluster must not outlive it (stop is idempotent).
trap 'slurm_cluster_stop >/dev/null 2>&1' EXIT INT TERM
# The nodes advertise 8 CPUs and 4000 MB: n1-standard-4 replicas (4 vCPUs) fit two a node, but
# not their 15 GB, so these jobs leave memory to the cluster's defaults.
export TRAINYARD_SLURM_MEMORY=none
export TRAINYARD_TASK="$TY_BUILD_DIR/bin/trainyard-task"
rec() { json_get "$TRAINYARD_HOME/jobs/local/$1/job.json" "$2"; }
no_slurm_jobs() { [ -z "$(squeue -h -o %i)" ]; }
no_launchers() { no_procs "trainyard-task --connect"; }

test_expect_success 'a 1+3+2 job runs, one Slurm task per replica, and succeeds' '
  mkdir -p out &&
  "$PYTHON" - probe.json "$PYTHON" "$PROBE" "$TEST_DIR/out" <<-\PY &&
	import json, sys
	f, py, probe, out = sys.argv[1:]
	ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
	      "workerCount": 3, "parameterServerType": "n1-standard-4", "parameterServerCount": 2,
	      "masterConfig": {"imageUri": "x/y:1", "containerCommand": [py, probe, out]}}
	json.dump({"trainingInput": ti}, open(f, "w"))
	PY
  "$TRAINYARD" local train probe_job --runtime slurm --config probe.json >log 2>&1 &&
  grep -q "Submitted as Slurm job [0-9]*\." log &&
  grep -q "master: all 6 replicas reported" log &&
  test "$(rec probe_job "d[\"state\"]")" = SUCCEEDED
'
test_expect_success 'every replica sees the same cluster, its own task, and no launcher secret' '
  "$PYTHON" - out <<-\PY
	import json, os, sys
	recs = {f[:-5]: json.load(open(os.path.join(sys.argv[1], f)))
	        for f in os.listdir(sys.argv[1]) if f.endswith(".json")}
	assert len(recs) == 6, sorted(recs)
	specs = {r["CLUSTER_SPEC"] and json.dumps(json.loads(r["CLUSTER_SPEC"])["cluster"]) for r in recs.values()}
	assert len(specs) == 1, specs
	cluster = json.loads(specs.pop())
	assert len(cluster["master"]) == 1 and len(cluster["worker"]) == 3 and len(cluster["ps"]) == 2
	addrs = [a for v in cluster.values() for a in v]
	assert len(set(addrs)) == 6, addrs
	for name, r in recs.items():
	    t = json.loads(r["TF_CONFIG"])["task"]
	    assert "%s-%d" % (t["type"], t["index"]) == name, (name, t)
	    assert r["CLOUD_ML_JOB_ID"] == "probe_job"
	    assert r["TRAINYARD_TASK_TOKEN"] is None, "the launcher token leaked into " + name
	    assert r["SLURMD_NODENAME"] in ("n1", "n2", "n3", "n4"), r["SLURMD_NODENAME"]
	assert len({r["SLURM_JOB_ID"] for r in recs.values()}) == 1, "one Slurm job"
	nodes = [r["SLURMD_NODENAME"] for r in recs.values()]
	assert len(set(nodes)) >= 3, nodes
	assert max(nodes.count(n) for n in nodes) == 2, ("two replicas share a node", nodes)
	PY
'
test_expect_success 'all pairs of replicas reach each other at the advertised addresses' '
  for f in out/*.json; do
    json_get "$f" "all(v is True for v in d[\"reach\"].values()) and len(d[\"reach\"]) == 6" | grep -q True || { cat "$f"; exit 1; }
  done
'
test_expect_success 'afterwards nothing is left: no Slurm job, no launcher' '
  wait_for 20 no_slurm_jobs && no_launchers
'
test_expect_success 'a worker that fails fails the job, naming it' '
  write_job wf.json "if [ \"\$(echo \$CLUSTER_SPEC | grep -c \\\"type\\\":\\\"worker\\\",\\\"index\\\":1)\" = 1 ]; then exit 3; fi; exec sleep 913.$M" 2 &&
  set +e; "$TRAINYARD" local train wf_job --runtime slurm --config wf.json --grace-period 2 >log 2>&1; rc=$?; set -e
  test $rc -eq 1 &&
  test "$(rec wf_job "d[\"errorMessage\"]")" = "The replica worker 1 exited with a non-zero status of 3." &&
  wait_for 20 no_slurm_jobs && no_procs "sleep 913.$M" && no_launchers
'
test_expect_success 'the master decides: a master exiting 5 fails the job' '
  write_job mf.json "if echo \"\$CLUSTER_SPEC\" | grep -q \"\\\"type\\\":\\\"master\\\"\"; then exit 5; fi; exec sleep 914.$M" 1 &&
  set +e; "$TRAINYARD" local train mf_job --runtime slurm --config mf.json --grace-period 2 >log 2>&1; rc=$?; set -e
  test $rc -eq 1 &&
  test "$(rec mf_job "d[\"errorMessage\"]")" = "The replica master 0 exited with a non-zero status of 5." &&
  wait_for 20 no_slurm_jobs && no_procs "sleep 914.$M"
'
test_expect_success 'TRAINYARD_SLURM_RENDEZVOUS: a name is resolved (on the loop), an address used as is' '
  write_job rv.json "true" 1 &&
  TRAINYARD_SLURM_RENDEZVOUS=localhost "$TRAINYARD" local train rv_name --runtime slurm --config rv.json >log 2>&1 &&
  test "$(rec rv_name "d[\"state\"]")" = SUCCEEDED &&
  TRAINYARD_SLURM_RENDEZVOUS=127.0.0.1 "$TRAINYARD" local train rv_addr --runtime slurm --config rv.json >log 2>&1 &&
  test "$(rec rv_addr "d[\"state\"]")" = SUCCEEDED
'
test_expect_success 'a job that cannot fit is refused by sbatch: Slurm'"'"'s reason, what was asked, the fix' '
  write_job big.json "true" 1 &&
  set +e; TRAINYARD_SLURM_MEMORY=machine "$TRAINYARD" local train big_job --runtime slurm --config big.json >log 2>&1; rc=$?; set -e
  test $rc -eq 1 &&
  rec big_job "d[\"errorMessage\"]" >msg && cat msg &&
  grep -q "^Preparing the slurm runtime failed: Slurm refused the job: Requested node configuration is not available; trainyard asked for 2 tasks (on any nodes), each 4 CPUs (master n1-standard-4), 15.0 GiB of memory (master n1-standard-4; --mem-per-cpu=3840M), in the cluster.s default partition\. " msg &&
  grep -q "leave memory to the cluster (TRAINYARD_SLURM_MEMORY=none; the service: slurm-memory = none)" msg &&
  grep -q "(TRAINYARD_SLURM_PARTITION; the service: slurm-partition)\.$" msg && ! grep -q "\.\.$" msg &&
  grep -q "Slurm refused the job: Requested node configuration" log
'
test_expect_success 'refusals of CPUs, GPUs and a partition name what was asked and the setting' '
  write_job cpus.json "true" 0 0 0 "{\"masterType\": \"n1-standard-16\"}" &&
  set +e; "$TRAINYARD" local train cpu_job --runtime slurm --config cpus.json >log 2>&1; rc=$?; set -e
  test $rc -eq 1 && rec cpu_job "d[\"errorMessage\"]" >msg && cat msg &&
  grep -q "Slurm refused the job: .*; trainyard asked for 1 task (on any nodes), each 16 CPUs (master n1-standard-16), the cluster.s default memory, in the cluster.s default partition\. .*smaller machine types" msg &&
  ! grep -q TRAINYARD_SLURM_MEMORY msg &&
  write_job gpus.json "true" 1 0 0 "{\"workerConfig\": {\"acceleratorConfig\": {\"count\": \"4\", \"type\": \"NVIDIA_TESLA_T4\"}}}" &&
  set +e; "$TRAINYARD" local train gpu4_job --runtime slurm --config gpus.json >log 2>&1; rc=$?; set -e
  test $rc -eq 1 && rec gpu4_job "d[\"errorMessage\"]" >msg && cat msg &&
  grep -q "Slurm refused the job: .*; trainyard asked for 2 tasks .* and 4 GPUs (worker 0 acceleratorConfig; --gpus-per-task)" msg &&
  set +e; TRAINYARD_SLURM_PARTITION=nope "$TRAINYARD" local train part_job --runtime slurm --config rv.json >log 2>&1; rc=$?; set -e
  test $rc -eq 1 && rec part_job "d[\"errorMessage\"]" >msg && cat msg &&
  grep -q "Slurm refused the job: invalid partition specified: nope; .*in the partition .nope.\. The partition is TRAINYARD_SLURM_PARTITION (the service: slurm-partition); .sinfo -s. lists the cluster.s partitions\.$" msg
'
test_expect_success 'a job waiting for resources is QUEUED with Slurm'"'"'s reason; Ctrl-C cancels it' '
  blocker=$(sbatch --parsable -N 4 --exclusive --output=/dev/null --wrap "sleep 300") &&
  write_job q.json "echo never-$M" &&
  { : >log; "$TRAINYARD" local train q_job --runtime slurm --config q.json >>log 2>&1 & pid=$!; } &&
  queued() { grep -q "Waiting in the slurm queue: Resources." log; } &&
  wait_for 30 queued &&
  test "$(rec q_job "d[\"state\"]")" = QUEUED &&
  kill -INT $pid &&
  set +e; wait $pid; rc=$?; set -e
  test $rc -eq 1 &&
  test "$(rec q_job "d[\"state\"]")" = CANCELLED &&
  ! grep -q "never-$M" log &&
  test "$(squeue -h -o %i)" = "$blocker" &&
  scancel "$blocker" && wait_for 20 no_slurm_jobs
'
test_expect_success 'a supervisor killed with SIGKILL while QUEUED leaves no job once Slurm can run it' '
  blocker=$(sbatch --parsable -N 4 --exclusive --output=/dev/null --wrap "sleep 300") &&
  write_job qk.json "echo never-$M" &&
  { : >log; "$TRAINYARD" local train qk_job --runtime slurm --config qk.json >>log 2>&1 & pid=$!; } &&
  queued() { grep -q "Waiting in the slurm queue: Resources." log; } &&
  wait_for 30 queued &&
  test "$(squeue -h -t PD -o %j | grep -c "^trainyard-qk_job-")" = 1 &&
  kill -KILL $pid && { wait $pid || true; } &&
  scancel "$blocker" &&
  wait_for 30 no_slurm_jobs && wait_for 10 no_launchers &&
  wait_for 10 no_procs "srun --quiet --job-name=trainyard-qk_job" &&
  ! grep -q "never-$M" log
'
test_expect_success 'Ctrl-C of a running job ends it and its Slurm job, leaving nothing' '
  write_job run.json "exec sleep 915.$M" 2 &&
  { : >log; "$TRAINYARD" local train run_job --runtime slurm --config run.json --grace-period 2 >>log 2>&1 & pid=$!; } &&
  wait_for 30 procs_at_least "sleep 915.$M" 3 &&
  kill -INT $pid &&
  set +e; wait $pid; rc=$?; set -e
  test $rc -eq 1 &&
  test "$(rec run_job "d[\"state\"]")" = CANCELLED &&
  wait_for 20 no_slurm_jobs && no_procs "sleep 915.$M" && no_launchers
'
test_expect_success 'a tuning job runs parallel trials on Slurm; each metric comes back from its node' '
  "$PYTHON" - tune.json <<-\PY &&
	import json, sys
	prog = ("for a in \"$@\"; do case $a in --x=*) x=${a#--x=};; esac; done; "
	        "printf \"{\\\"%s\\\": \\\"%s\\\", \\\"global_step\\\": \\\"7\\\"}\\n\" "
	        "\"$CLOUD_ML_HP_METRIC_TAG\" \"$x\" >\"$CLOUD_ML_HP_METRIC_FILE\"; echo on $SLURMD_NODENAME")
	ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
	      "workerCount": 1,
	      "masterConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", "-c", prog, "prog"]},
	      "hyperparameters": {"goal": "MAXIMIZE", "maxTrials": 4, "maxParallelTrials": 2,
	                          "algorithm": "RANDOM_SEARCH",
	                          "params": [{"parameterName": "x", "type": "DOUBLE",
	                                      "minValue": 0, "maxValue": 1}]}}
	json.dump({"trainingInput": ti}, open(sys.argv[1], "w"))
	PY
  "$TRAINYARD" local train tune_job --runtime slurm --config tune.json >log 2>&1 &&
  test "$(rec tune_job "d[\"trainingOutput\"][\"completedTrialCount\"]")" = 4 &&
  "$PYTHON" - "$TRAINYARD_HOME/jobs/local/tune_job/job.json" <<-\PY &&
	import json, sys
	o = json.load(open(sys.argv[1]))["trainingOutput"]
	for t in o["trials"]:
	    assert abs(t["finalMetric"]["objectiveValue"] - float(t["hyperparameters"]["x"])) < 1e-12, t
	    assert t["finalMetric"]["trainingStep"] == "7", t
	PY
  test "$(grep -c "Submitted as Slurm job" log)" = 4 &&
  wait_for 20 no_slurm_jobs && no_launchers
'
test_expect_success 'the last report written decides, not the last to reach the supervisor' '
  "$PYTHON" - last.json <<-\PY &&
	import json, sys
	rep = ("printf \"{\\\"timestamp\\\": %s, \\\"loss\\\": \\\"%s\\\", \\\"global_step\\\": \\\"%s\\\"}\\n\" "
	       "\"$(date +%s.%N)\" \"$1\" \"$2\" >\"$CLOUD_ML_HP_METRIC_FILE\"")
	# the worker reports first and runs on; the master reports later and ends the trial at once,
	# before the worker'"'"'s launcher forwards its (older) file
	worker = "set -- 0.9 1; " + rep + "; exec sleep 30"
	master = "sleep 0.4; set -- 0.2 100; " + rep
	ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
	      "workerCount": 1,
	      "masterConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", "-c", master]},
	      "workerConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", "-c", worker]},
	      "hyperparameters": {"goal": "MINIMIZE", "maxTrials": 1, "hyperparameterMetricTag": "loss",
	                          "algorithm": "RANDOM_SEARCH",
	                          "params": [{"parameterName": "x", "type": "DOUBLE",
	                                      "minValue": 0, "maxValue": 1}]}}
	json.dump({"trainingInput": ti}, open(sys.argv[1], "w"))
	PY
  "$TRAINYARD" local train last_job --runtime slurm --config last.json --grace-period 1 >log 2>&1 &&
  test "$(rec last_job "d[\"trainingOutput\"][\"trials\"][0][\"finalMetric\"][\"objectiveValue\"]")" = 0.2 &&
  test "$(rec last_job "d[\"trainingOutput\"][\"trials\"][0][\"finalMetric\"][\"trainingStep\"]")" = 100 &&
  wait_for 20 no_slurm_jobs && no_launchers
'
test_expect_success 'machine type, maxRunningTime (plus 5 minutes to prepare) and priority become Slurm requests' '
  write_job req.json "true" 1 0 0 "{\"scheduling\": {\"maxRunningTime\": \"150s\", \"priority\": 800}}" &&
  "$TRAINYARD" local train req_job --runtime slurm --config req.json >log 2>&1 &&
  id=$(sed -n "s/.*Submitted as Slurm job \([0-9]*\)\..*/\1/p" log) &&
  scontrol show job "$id" >sj &&
  grep -q "NumTasks=2 " sj && grep -q "CPUs/Task=4 " sj &&
  grep -q "TimeLimit=00:08:00 " sj && grep -q "Nice=200 " sj
'
test_expect_success 'accelerators become GPUs per task (GRES), each replica its own' '
  write_job gpu.json "echo gpu=\$CUDA_VISIBLE_DEVICES-\$SLURMD_NODENAME; sleep 2" 1 0 0 "{\"masterConfig\": {\"imageUri\": \"x/y:1\", \"containerCommand\": [\"sh\", \"-c\", \"echo gpu=\$CUDA_VISIBLE_DEVICES-\$SLURMD_NODENAME; sleep 2\"], \"acceleratorConfig\": {\"count\": \"1\", \"type\": \"NVIDIA_TESLA_T4\"}}}" &&
  "$TRAINYARD" local train gpu_job --runtime slurm --config gpu.json >log 2>&1 &&
  id=$(sed -n "s/.*Submitted as Slurm job \([0-9]*\)\..*/\1/p" log) &&
  scontrol show job "$id" | grep -q "TresPerTask=gres:gpu:1" &&
  test "$(grep -o "gpu=[0-9]-n[1-4]" log | sort -u | wc -l)" = 2
'
test_expect_success 'a supervisor killed with SIGKILL takes its replicas and Slurm job with it' '
  write_job k.json "exec sleep 917.$M" 1 &&
  { : >log; "$TRAINYARD" local train k_job --runtime slurm --config k.json >>log 2>&1 & pid=$!; } &&
  wait_for 30 procs_at_least "sleep 917.$M" 2 &&
  kill -KILL $pid && { wait $pid || true; } &&
  wait_for 30 no_procs "sleep 917.$M" && wait_for 20 no_launchers && wait_for 20 no_slurm_jobs
'
# Images on the nodes: a role without containerCommand runs its image through the node's
# container engine, on the host's network, with the contract's variables only (no SLURM_*:
# frameworks that see them assume they were started by srun).
if "$TY_SOURCE_DIR/scripts/setup-podman.sh" >"$TEST_DIR/setup.log" 2>&1 &&
   "$TY_SOURCE_DIR/tests/integration/images/build-testbox.sh" >"$TEST_DIR/img.log" 2>&1; then
  test_expect_success 'replicas without a containerCommand run their image, on the host network' '
    "$PYTHON" - img.json <<-\PY &&
	import json, sys
	# each replica stays 2 s after its line: the exit of the master ends the job, and a worker
	# started a moment later must have printed by then
	ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
	      "workerCount": 2, "masterConfig": {"imageUri": "localhost/trainyard/testbox:1"},
	      "args": ["sh", "-c", "echo in-image slurm=${SLURM_JOB_ID:-none} CS=$CLUSTER_SPEC; sleep 2"]}
	json.dump({"trainingInput": ti}, open(sys.argv[1], "w"))
	PY
    { "$TRAINYARD" local train img_job --runtime slurm --config img.json >log 2>&1 &&
      test "$(grep -c "in-image slurm=none" log)" = 3 &&
      grep -q "Slurm job [0-9]* is running on" log &&
      test "$(grep -c "asks for 4 vCPUs" log)" -le 2 || { cat log; false; }; } &&
    { test -z "$(podman ps -aq --filter label=trainyard.job=img_job)" ||
      { podman ps -a --filter label=trainyard.job=img_job; false; }; } &&
    wait_for 20 no_slurm_jobs && { wait_for 10 no_launchers || { pgrep -af trainyard-task; false; }; }
  '
  test_expect_success 'a replica in an image that fails fails the job, naming it' '
    "$PYTHON" - imgf.json <<-\PY &&
	import json, sys
	ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
	      "workerCount": 1, "masterConfig": {"imageUri": "localhost/trainyard/testbox:1"},
	      "args": ["sh", "-c", "case $CLUSTER_SPEC in *\\\"type\\\":\\\"worker\\\"*) exit 7;; esac; exec sleep 60"]}
	json.dump({"trainingInput": ti}, open(sys.argv[1], "w"))
	PY
    set +e; "$TRAINYARD" local train imgf_job --runtime slurm --config imgf.json --grace-period 2 >log 2>&1; rc=$?; set -e
    test $rc -eq 1 &&
    test "$(rec imgf_job "d[\"errorMessage\"]")" = "The replica worker 0 exited with a non-zero status of 7." &&
    test -z "$(podman ps -aq --filter label=trainyard.job=imgf_job)" &&
    wait_for 20 no_slurm_jobs
  '
  test_expect_success 'a trial in an image reports through the default /tmp/hypertune path' '
    "$PYTHON" - imgt.json <<-\PY &&
	import json, sys
	prog = "printf \"{\\\"loss\\\": \\\"0.25\\\", \\\"global_step\\\": \\\"3\\\"}\\n\" >/tmp/hypertune/output.metrics"
	ti = {"scaleTier": "BASIC", "masterConfig": {"imageUri": "localhost/trainyard/testbox:1"},
	      "args": ["sh", "-c", prog],
	      "hyperparameters": {"goal": "MINIMIZE", "hyperparameterMetricTag": "loss", "maxTrials": 1,
	                          "algorithm": "RANDOM_SEARCH",
	                          "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}}
	json.dump({"trainingInput": ti}, open(sys.argv[1], "w"))
	PY
    "$TRAINYARD" local train imgt_job --runtime slurm --config imgt.json >log 2>&1 &&
    test "$(rec imgt_job "d[\"trainingOutput\"][\"trials\"][0][\"finalMetric\"][\"objectiveValue\"]")" = 0.25
  '
else
  test_skip "replicas in images on the nodes" "no container engine: $(tail -1 "$TEST_DIR/setup.log" 2>/dev/null)"
fi
# (With retries, the job would be retried on the nodes left: t7030.)
test_expect_success 'a node that dies mid-job, retries disabled: the job fails, naming the node' '
  write_job nd.json "echo up on \$SLURMD_NODENAME; exec sleep 916.$M" 2 0 0 "{\"masterType\": \"n1-standard-8\", \"workerType\": \"n1-standard-8\", \"scheduling\": {\"disableRetries\": true}}" &&
  { : >log; "$TRAINYARD" local train nd_job --runtime slurm --config nd.json --grace-period 2 >>log 2>&1 & pid=$!; } &&
  three_up() { [ "$(grep -c "up on n" log)" -eq 3 ]; } &&
  wait_for 30 three_up &&
  victim=$(sed -n "s/.*worker-replica-0 *up on \(n[0-9]\).*/\1/p" log) &&
  test -n "$victim" &&
  kill -KILL "$(cat "$TY_SLURM_DIR/run/slurmd-$victim.pid")" &&
  set +e; wait $pid; rc=$?; set -e
  test $rc -eq 1 &&
  rec nd_job "d[\"errorMessage\"]" >msg && cat msg &&
  grep -q "The replica .* was lost: its node $victim failed" msg &&
  wait_for 20 no_launchers && no_procs "sleep 916.$M" &&
  echo "$victim" >victim &&
  sed -n "s/.*Submitted as Slurm job \([0-9]*\)\..*/\1/p" log >slurm_job && test -s slurm_job
'
# The killed slurmd left its job step behind (slurmstepd outlives slurmd); a new slurmd on that
# node takes it over and ends it, as an administrator would bring the node back.
slurm_node_restart "$(cat "$TEST_DIR/victim" 2>/dev/null || echo n2)"
test_expect_success 'the node comes back and its orphaned step goes away' '
  node_idle() { sinfo -h -N -n "$(cat victim)" -o %T | grep -q "^idle$"; } &&
  wait_for 30 node_idle &&
  no_stepd() { ! pgrep -a slurmstepd | grep -q "\[$(cat slurm_job)\."; } &&
  wait_for 30 no_stepd
'
slurm_cluster_stop
test_expect_success 'the cluster stopped: none of its processes is left' '
  test -z "$(slurm_cluster_procs)"
'
test_done
