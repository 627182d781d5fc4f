#!/bin/sh
# t5040-service-slurm: trainyardd with the slurm runtime on a simulated four-node cluster
# (tests/lib/slurm-cluster.sh): a job created through the API runs as one Slurm job and its
# replicas' output reaches the logs endpoint; a job waiting in Slurm is QUEUED and `describe`
# shows Slurm's reason (stateReason); cancelling it ends the Slurm job; the daemon's
# --slurm-* settings reach sbatch.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/slurm-cluster.sh"

M=$RUN_ID
if ! slurm_cluster_check; then
  test_skip "service on slurm" "$TY_SLURM_SKIP_REASON"
  test_done
fi
if ! slurm_cluster_start; then
  test_skip "service on slurm" "the test cluster did not start: $TY_SLURM_ERROR"
  test_done
fi
trap 'trainyardd_stop svc >/dev/null 2>&1; slurm_cluster_stop >/dev/null 2>&1' EXIT INT TERM
export TZ=UTC XDG_CONFIG_HOME="$TEST_DIR/xdg"
unset TRAINYARD_CONFIG TRAINYARD_PROJECT TRAINYARD_ACCESS_TOKEN
if ! trainyardd_start svc --runtime slurm --slurm-memory none --slurm-partition debug \
    --slurm-sbatch-args "--comment=trainyard-test-$M"; then
  slurm_cluster_stop
  echo "Bail out! trainyardd did not start"; exit 1
fi
export TRAINYARD_API_ENDPOINT="$TYD_URL" TRAINYARD_PROJECT=p1
state_of() {
  "$TRAINYARD" jobs describe "$1" --format json 2>/dev/null |
    "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin).get("state"))'
}
state_is() { [ "$(state_of "$1")" = "$2" ]; }
no_slurm_jobs() { [ -z "$(squeue -h -o %i)" ]; }

test_expect_success 'a job submitted to the service runs on Slurm and its output reaches the logs' '
  write_job ok.json "echo hello-\$SLURMD_NODENAME-$M; sleep 2" 2 && # (the master waits for its peers)
  "$TRAINYARD" jobs submit training svc_ok --config ok.json --async >out 2>&1 &&
  wait_for 60 state_is svc_ok SUCCEEDED &&
  "$TRAINYARD" jobs stream-logs svc_ok >logs 2>&1 &&
  test "$(grep -c "hello-n[1-4]-$M" logs)" = 3 &&
  grep -q "Submitted as Slurm job" logs
'
test_expect_success 'the daemon'"'"'s --slurm-* settings reach sbatch' '
  id=$(sed -n "s/.*Submitted as Slurm job \([0-9]*\)\..*/\1/p" logs | head -1) &&
  scontrol show job "$id" >sj &&
  grep -q "Partition=debug" sj && grep -q "Comment=trainyard-test-$M" sj
'
test_expect_success 'a job waiting in Slurm is QUEUED and describe shows Slurm'"'"'s reason' '
  blocker=$(sbatch --parsable -N 4 --exclusive --output=/dev/null --wrap "sleep 300") &&
  write_job q.json "echo never-$M" &&
  "$TRAINYARD" jobs submit training svc_q --config q.json --async >out 2>&1 &&
  has_reason() { "$TRAINYARD" jobs describe svc_q --format json >d.json 2>/dev/null &&
                 json_get d.json "d.get(\"stateReason\")" | grep -q Resources; } &&
  wait_for 30 has_reason &&
  test "$(json_get d.json "d[\"state\"]")" = QUEUED &&
  "$TRAINYARD" jobs describe svc_q >d.yaml 2>&1 && grep -q "^stateReason: Resources" d.yaml &&
  "$TRAINYARD" jobs cancel svc_q >out 2>&1 &&
  wait_for 30 state_is svc_q CANCELLED &&
  "$TRAINYARD" jobs describe svc_q --format json >d.json &&
  test "$(json_get d.json "d.get(\"stateReason\")")" = None &&
  test "$(squeue -h -o %i)" = "$blocker" &&
  scancel "$blocker" && wait_for 20 no_slurm_jobs
'
test_expect_success 'a supervisor that dies: the service cancels its Slurm job and runs the job again' '
  blocker=$(sbatch --parsable -N 4 --exclusive --output=/dev/null --wrap "sleep 300") &&
  write_job d.json "echo never-$M" &&
  "$TRAINYARD" jobs submit training svc_dead --config d.json --async >out 2>&1 &&
  queued() { "$TRAINYARD" jobs describe svc_dead --format json >d.json 2>/dev/null &&
             json_get d.json "d.get(\"stateReason\")" | grep -q Resources; } &&
  wait_for 30 queued &&
  test "$(squeue -h -o %j | grep -c "^trainyard-svc_dead-")" = 1 &&
  first=$(squeue -h -o "%i %j" | sed -n "s/ trainyard-svc_dead-.*//p") && test -n "$first" &&
  sup=$(pgrep -f "supervise-job $TEST_DIR/svc " | head -1) && test -n "$sup" &&
  kill -KILL "$sup" &&
  again() { id=$(squeue -h -o "%i %j" | sed -n "s/ trainyard-svc_dead-.*//p");
            [ -n "$id" ] && [ "$id" != "$first" ] && ! squeue -h -o %i | grep -qx "$first"; } &&
  wait_for 60 again &&
  "$TRAINYARD" jobs describe svc_dead --format json >d.json &&
  test "$(json_get d.json "d[\"attemptStatus\"][\"internalRetries\"]")" = 1 &&
  "$TRAINYARD" jobs cancel svc_dead >/dev/null 2>&1 &&
  wait_for 30 state_is svc_dead CANCELLED &&
  only_blocker() { [ "$(squeue -h -o %i)" = "$blocker" ]; } &&
  wait_for 30 only_blocker &&
  scancel "$blocker" && wait_for 20 no_slurm_jobs
'
trainyardd_stop svc
slurm_cluster_stop
test_expect_success 'nothing of the cluster is left' '
  test -z "$(slurm_cluster_procs)" && no_procs "trainyard-task --connect"
'
test_done
