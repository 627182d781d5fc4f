#!/bin/sh
# t7030-slurm-restarts: restarts and retries (docs/lifecycle.md) on a simulated four-node Slurm
# cluster (tests/lib/slurm-cluster.sh, level 1): a worker that SIGKILLs itself once is run
# again by its launcher on the same node with the same environment; a cancel inside a restart
# loop ends everything at once; a node whose slurmd dies under a running job makes the job a
# new attempt on a new allocation, on the nodes left, after attempt 1's Slurm job has left the
# queue.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/slurm-cluster.sh"

M=$RUN_ID
if ! slurm_cluster_check; then
  test_skip "slurm restarts" "$TY_SLURM_SKIP_REASON"
  test_done
fi
# A node whose slurmd dies is found DOWN after SlurmdTimeout: keep that short here.
export TY_SLURM_EXTRA_CONF="SlurmdTimeout=5
MessageTimeout=2"
if ! slurm_cluster_start; then
  test_skip "slurm restarts" "the test cluster did not start: $TY_SLURM_ERROR"
  test_done
fi
trap 'slurm_cluster_stop >/dev/null 2>&1' EXIT INT TERM
export TRAINYARD_SLURM_MEMORY=none
export TRAINYARD_TASK="$TY_BUILD_DIR/bin/trainyard-task"
rec() { json_get "$TRAINYARD_HOME/jobs/local/$1/job.json" "$2"; }
no_slurm_jobs() { [ -z "$(squeue -h -o %i)" ]; }
no_launchers() { no_procs "trainyard-task --connect"; }

# mkjob FILE MACHINE WORKERS MASTER_SCRIPT WORKER_SCRIPT DIR: a CUSTOM job whose master runs
# `sh MASTER_SCRIPT DIR master` and whose workers `sh WORKER_SCRIPT DIR worker`.
mkjob() {
  mkdir -p "$6" &&
  "$PYTHON" - "$@" <<-\PY
	import json, sys
	f, machine, workers, ms, ws, d = sys.argv[1:]
	ti = {"scaleTier": "CUSTOM", "masterType": machine, "workerType": machine,
	      "workerCount": int(workers),
	      "masterConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", ms, d, "master"]},
	      "workerConfig": {"imageUri": "x/y:1", "containerCommand": ["sh", ws, d, "worker"]}}
	json.dump({"trainingInput": ti}, open(f, "w"))
	PY
}

# (a) The worker kills itself with SIGKILL on its first run; the master waits for its second.
cat >"$TEST_DIR/once-worker.sh" <<EOF
n=\$((\$(ls "\$1" | grep -c "^env\\.") + 1))
env | LC_ALL=C sort >"\$1/env.\$n"
echo "worker run \$n on \$SLURMD_NODENAME"
if [ \$n -eq 1 ]; then kill -KILL \$\$; fi
exec sleep 931.$M
EOF
cat >"$TEST_DIR/once-master.sh" <<EOF
i=0
while [ ! -s "\$1/env.2" ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
test -s "\$1/env.2" && echo "master saw the worker again"
EOF
test_expect_success 'a worker killed from outside once runs again on its node; the job succeeds' '
  mkjob once.json n1-standard-4 1 "$TEST_DIR/once-master.sh" "$TEST_DIR/once-worker.sh" "$TEST_DIR/once" &&
  "$TRAINYARD" local train once_job --runtime slurm --config once.json --grace-period 2 >log 2>&1 &&
  cat log &&
  test "$(rec once_job "d[\"state\"]")" = SUCCEEDED &&
  grep -q "The replica worker 0 was killed by signal 9 (SIGKILL) from outside trainyard; restarting it (restart 1 of 5)\." log &&
  grep -q "master saw the worker again" log &&
  test "$(grep -c "Submitted as Slurm job" log)" = 1 &&
  ! grep -q "Retrying the job" log &&
  test "$(rec once_job "d[\"attemptStatus\"][\"replicaRestarts\"][\"worker-replica-0\"]")" = 1 &&
  test "$(rec once_job "d[\"attemptStatus\"][\"attempt\"]")" = 1
'
test_expect_success 'it ran twice, on the same node, with a byte-identical environment' '
  ls once/env.* >runs && test "$(wc -l <runs)" = 2 &&
  cmp once/env.1 once/env.2 &&
  grep -q "^SLURMD_NODENAME=n[1-4]$" once/env.1 &&
  grep -q "^CLUSTER_SPEC=.*worker" once/env.1 && grep -q "^TF_CONFIG=" once/env.1 &&
  ! grep -q TRAINYARD_TASK_TOKEN once/env.1 &&
  wait_for 20 no_slurm_jobs && no_launchers && no_procs "sleep 931.$M"
'

# (c) A worker that always dies from outside; the job is cancelled while it restarts.
cat >"$TEST_DIR/loop-worker.sh" <<EOF
echo run >>"\$1/runs"
echo "worker dies again"
sleep 0.5
kill -KILL \$\$
EOF
cat >"$TEST_DIR/loop-master.sh" <<EOF
exec sleep 932.$M
EOF
test_expect_success 'cancel inside a restart loop: CANCELLED at once, nothing left' '
  mkjob loop.json n1-standard-4 1 "$TEST_DIR/loop-master.sh" "$TEST_DIR/loop-worker.sh" "$TEST_DIR/loop" &&
  { : >log; "$TRAINYARD" local train loop_job --runtime slurm --config loop.json --grace-period 2 >>log 2>&1 & pid=$!; } &&
  restarting() { grep -q "restarting it (restart 2 of 5)" log; } &&
  wait_for 60 restarting &&
  t0=$(date +%s.%N) &&
  kill -INT $pid &&
  set +e; wait $pid; rc=$?; set -e
  t1=$(date +%s.%N) &&
  cat log &&
  test $rc -eq 1 &&
  test "$(rec loop_job "d[\"state\"]")" = CANCELLED &&
  "$PYTHON" -c "import sys; d = float(sys.argv[2]) - float(sys.argv[1]); print(\"cancel took\", d); assert d < 10" "$t0" "$t1" &&
  no_slurm_jobs && no_launchers && no_procs "sleep 932.$M" &&
  n=$(wc -l <loop/runs) && sleep 1.5 && test "$(wc -l <loop/runs)" = "$n" &&
  ! grep -q "Retrying the job" log
'

# (d) The launcher of worker 0 is killed: its connection is lost, and with it the replica
# (the node's runtime kills a replica whose launcher dies): the job is retried, with the same
# addresses (every node is 127.0.0.1 here, and the ports are free again).
cat >"$TEST_DIR/conn-master.sh" <<EOF
echo "spec: \$CLUSTER_SPEC"
if [ ! -s "\$1/first" ]; then echo "\$SLURM_JOB_ID" >"\$1/first"; fi
if [ "\$(cat "\$1/first")" = "\$SLURM_JOB_ID" ]; then exec sleep 934.$M; fi
echo "master of attempt 2"
EOF
cat >"$TEST_DIR/conn-worker.sh" <<EOF
exec sleep 935.$M
EOF
test_expect_success 'a launcher killed under a running job (connection lost): the job is retried' '
  mkjob conn.json n1-standard-4 1 "$TEST_DIR/conn-master.sh" "$TEST_DIR/conn-worker.sh" "$TEST_DIR/conn" &&
  { : >log; "$TRAINYARD" local train conn_job --runtime slurm --config conn.json --grace-period 2 >>log 2>&1 & pid=$!; } &&
  wait_for 30 procs_at_least "sleep 934.$M" 1 && wait_for 30 procs_at_least "sleep 935.$M" 1 &&
  launcher=$(ps -o ppid= -p "$(pgrep -f "sleep 935.$M")" | tr -d " ") &&
  ps -o args= -p "$launcher" | grep -q "trainyard-task --connect" &&
  kill -KILL "$launcher" &&
  ended() { ! kill -0 $pid 2>/dev/null; } &&
  { wait_for 60 ended || kill -INT $pid; } &&
  set +e; wait $pid; rc=$?; set -e
  cat log &&
  test $rc -eq 0 &&
  grep -q "Retrying the job (attempt 2 of 4): The replica worker 0 was lost: its launcher closed the connection (node n[1-4])\." log &&
  grep -q "master of attempt 2" log && ! grep -q "restarting it" log &&
  grep "spec: " log | sed "s/.*spec: //" | sort -u >specs && cat specs &&
  test "$(wc -l <specs)" = 1 &&
  test "$(rec conn_job "d[\"attemptStatus\"][\"attempt\"]")" = 2 &&
  no_slurm_jobs && wait_for 20 no_launchers && no_procs "sleep 934.$M" && no_procs "sleep 935.$M"
'

# (e) The Slurm job ends before its launchers were placed (cancelled from outside while it
# waits on drained nodes): the allocation was lost, so the job is retried (a new Slurm job).
cat >"$TEST_DIR/gone-master.sh" <<EOF
echo "master in \$SLURM_JOB_ID"
EOF
test_expect_success 'an allocation lost before placement (scancel while queued): the job is retried' '
  r=1
  mkjob gone.json n1-standard-4 1 "$TEST_DIR/gone-master.sh" "$TEST_DIR/conn-worker.sh" "$TEST_DIR/gone" &&
  nodes=$(sinfo -h -o %N | head -1) &&
  scontrol update nodename="$nodes" state=drain reason=t7030 &&
  { : >log; "$TRAINYARD" local train gone_job --runtime slurm --config gone.json --grace-period 2 >>log 2>&1 & pid=$!; } &&
  ended() { ! kill -0 $pid 2>/dev/null; } &&
  first_id() { first=$(sed -n "s/.*Submitted as Slurm job \([0-9]*\)\..*/\1/p" log | head -1) && test -n "$first"; } &&
  wait_for 30 first_id && first_id &&
  scancel "$first" &&
  retrying() { grep -q "Retrying the job (attempt 2 of 4): Preparing the slurm runtime failed: the Slurm job $first ended" log; } &&
  wait_for 60 retrying && r=0
  # Whatever failed above, the nodes come back and the job is not waited for forever.
  set +e; scontrol update nodename="$nodes" state=resume
  wait_for 90 ended || kill -INT $pid
  wait $pid; rc=$?; set -e
  cat log &&
  test $r -eq 0 && test $rc -eq 0 &&
  test "$(rec gone_job "d[\"state\"]")" = SUCCEEDED &&
  test "$(rec gone_job "d[\"attemptStatus\"][\"attempt\"]")" = 2 &&
  grep -q "master in " log && ! grep -q "master in $first" log &&
  no_slurm_jobs && wait_for 20 no_launchers && no_procs "sleep 935.$M"
'

# (b) Three replicas, one a node (n1-standard-8: 8 vCPUs); the slurmd of worker 0's node is
# killed. Attempt 2's master waits until both workers are up (they say so in DIR/up.JOB),
# lists the queue, then succeeds.
cat >"$TEST_DIR/node-master.sh" <<EOF
echo "up on \$SLURMD_NODENAME in \$SLURM_JOB_ID"
if [ ! -s "\$1/first" ]; then echo "\$SLURM_JOB_ID" >"\$1/first"; fi
if [ "\$(cat "\$1/first")" = "\$SLURM_JOB_ID" ]; then exec sleep 933.$M; fi
i=0
while [ "\$(cat "\$1/up.\$SLURM_JOB_ID" 2>/dev/null | wc -l)" -lt 2 ] && [ \$i -lt 600 ]; do
  sleep 0.1; i=\$((i + 1))
done
echo "queue: \$(squeue -h -o %i | tr '\\n' ' ')"
EOF
cat >"$TEST_DIR/node-worker.sh" <<EOF
echo "up on \$SLURMD_NODENAME in \$SLURM_JOB_ID"
echo "\$SLURMD_NODENAME" >>"\$1/up.\$SLURM_JOB_ID"
exec sleep 933.$M
EOF
test_expect_success 'a node that dies under a running job: the job is retried on the nodes left and succeeds' '
  mkjob node.json n1-standard-8 2 "$TEST_DIR/node-master.sh" "$TEST_DIR/node-worker.sh" "$TEST_DIR/node" &&
  { : >log; "$TRAINYARD" local train node_job --runtime slurm --config node.json --grace-period 2 >>log 2>&1 & pid=$!; } &&
  three_up() { [ "$(grep -c "up on n" log)" -ge 3 ]; } &&
  wait_for 30 three_up &&
  victim=$(sed -n "s/.*worker-replica-0 *up on \(n[0-9]\).*/\1/p" log | head -1) &&
  test -n "$victim" && echo "victim: $victim" &&
  kill -KILL "$(cat "$TY_SLURM_DIR/run/slurmd-$victim.pid")" &&
  ended() { ! kill -0 $pid 2>/dev/null; } &&
  { wait_for 150 ended || kill -INT $pid; } &&
  set +e; wait $pid; rc=$?; set -e
  cat log &&
  test $rc -eq 0 &&
  test "$(rec node_job "d[\"state\"]")" = SUCCEEDED &&
  grep -q "Retrying the job (attempt 2 of 4): The replica .* was lost: its node $victim failed" log &&
  grep -q "Starting attempt 2 of 4\." log && ! grep -q "restarting it" log &&
  sed -n "s/.*Submitted as Slurm job \([0-9]*\)\..*/\1/p" log >ids &&
  test "$(wc -l <ids)" = 2 && first=$(head -1 ids) && second=$(tail -1 ids) &&
  test "$first" != "$second" &&
  grep "queue: " log >queue && cat queue &&
  grep -q "queue: .*$second" queue && ! grep -q "queue: .*\b$first\b" queue &&
  test "$(grep "up on n.* in $second" log | grep -c "up on $victim")" = 0 &&
  test "$(grep -c "up on n.* in $second" log)" = 3 &&
  test "$(rec node_job "d[\"attemptStatus\"][\"attempt\"]")" = 2 &&
  no_slurm_jobs && wait_for 20 no_launchers && no_procs "sleep 933.$M" &&
  echo "$victim" >victim && echo "$first" >first_job
'
# The killed slurmd left attempt 1's step on its node (slurmstepd outlives slurmd, and its
# environment carries no marker for slurm_cluster_procs): a new slurmd there ends it.
slurm_node_restart "$(cat "$TEST_DIR/victim" 2>/dev/null || echo n2)"
test_expect_success 'the node comes back and attempt 1'"'"'s orphaned step goes away' '
  node_idle() { sinfo -h -N -n "$(cat victim)" -o %T | grep -q "^idle$"; } &&
  wait_for 30 node_idle &&
  no_stepd() { ! pgrep -a slurmstepd | grep -q "\[$(cat first_job)\."; } &&
  wait_for 30 no_stepd
'
slurm_cluster_stop
test_expect_success 'the cluster stopped: none of its processes is left' '
  test -z "$(slurm_cluster_procs)"
'
test_done
