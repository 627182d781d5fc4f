#!/bin/sh
# t5040-service-slurm: trainyardd with the slurm runtime on a simulated four-node cluster
# (tests/lib/slurm-cluster.sh): a job created through the API runs as one Slurm job and its
# replicas' output reaches the logs endpoint; a job waiting in Slurm is QUEUED and `describe`
# shows Slurm's reason (stateReason); cancelling it ends the Slurm job; the daemon's
# --slurm-* settings reach sbatch; a replica's environment is the service's defined one
# (PATH from --job-path) plus Slurm's SLURM_*, nothing else of the daemon's, and it starts in
# / (no jobDir), not in the daemon's directory, while `local train --runtime slurm` keeps the
# user's environment and directory.
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
# A program on the replicas' PATH (--job-path) only, one on the daemon's PATH only, and a
# variable of the daemon's that no replica may see.
JOBPATH="$TEST_DIR/jobbin:/usr/bin:/bin"
mkdir -p "$TEST_DIR/jobbin" "$TEST_DIR/daemonbin"
# Each replica writes its environment (whole, by rename); the master then waits for the
# worker's, since its exit ends the job and would stop a worker that had not written yet.
cat >"$TEST_DIR/jobbin/dumpenv_$M" <<EOT
#!/bin/sh
env >"$TEST_DIR/env.\$SLURM_PROCID.tmp" && mv "$TEST_DIR/env.\$SLURM_PROCID.tmp" "$TEST_DIR/env.\$SLURM_PROCID"
[ "\$SLURM_PROCID" = 0 ] || exit 0
i=0; while [ ! -e "$TEST_DIR/env.1" ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done
EOT
printf '#!/bin/sh\necho daemon-only\n' >"$TEST_DIR/daemonbin/onlydaemon_$M"
chmod +x "$TEST_DIR/jobbin/dumpenv_$M" "$TEST_DIR/daemonbin/onlydaemon_$M"
SAVED_PATH=$PATH
PATH="$TEST_DIR/daemonbin:$PATH"
export TY_DAEMON_ONLY_$M=leak
if ! trainyardd_start svc --runtime slurm --slurm-memory none --slurm-partition debug \
    --slurm-sbatch-args "--comment=trainyard-test-$M" --job-path "$JOBPATH"; then
  slurm_cluster_stop
  echo "Bail out! trainyardd did not start"; exit 1
fi
PATH=$SAVED_PATH
unset TY_DAEMON_ONLY_$M
export TRAINYARD_API_ENDPOINT="$TYD_URL" TRAINYARD_PROJECT=p1
state_of() {
  "$TRAINYARD" jobs describe "$1" --format json 2>/dev/null |
    "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin).get("state"))'
}
state_is() { [ "$(state_of "$1")" = "$2" ]; }
ended() { case $(state_of "$1") in SUCCEEDED|FAILED|CANCELLED) ;; *) false ;; esac; }
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
test_expect_success 'a replica gets the service'"'"'s environment and Slurm'"'"'s, not the daemon'"'"'s' '
  write_job env.json "exec dumpenv_$M" 1 &&
  "$TRAINYARD" jobs submit training svc_env --config env.json --async >out 2>&1 &&
  wait_for 60 ended svc_env && state_is svc_env SUCCEEDED &&
  grep -qx "PATH=$JOBPATH" env.0 && grep -qx "PATH=$JOBPATH" env.1 &&
  grep -qx "SLURM_PROCID=0" env.0 && grep -q "^SLURMD_NODENAME=n[1-4]$" env.0 &&
  grep -q "^SLURM_JOB_ID=[0-9]" env.0 &&
  grep -qx "HOME=$(getent passwd "$(id -un)" | cut -d: -f6)" env.0 &&
  grep -qx "TZ=UTC" env.0 && grep -q "^TRAINYARD_SUPERVISOR_KEY=." env.0 &&
  grep -q "^CLUSTER_SPEC=" env.0 && grep -qx "CLOUD_ML_JOB_ID=svc_env" env.0 &&
  ! grep -q "TY_DAEMON_ONLY" env.0 env.1 && ! grep -q "^XDG_CONFIG_HOME=" env.0 &&
  ! grep -q "^TRAINYARD_TASK_TOKEN=" env.0 &&
  grep -qx "PWD=/" env.0 && grep -qx "PWD=/" env.1 &&
  sed "s/=.*//" env.0 env.1 | sort -u >names &&
  for n in $(cat names); do
    case $n in
      PATH|HOME|USER|LOGNAME|LANG|TZ|CLUSTER_SPEC|TF_CONFIG|CLOUD_ML_JOB_ID|TRAINYARD_RUN_ID|TRAINYARD_SUPERVISOR_KEY|SLURM_*|SLURMD_*|PWD|OLDPWD|SHLVL|_) ;;
      *) echo "unexpected variable $n"; exit 1 ;;
    esac
  done
'
test_expect_success 'a command on the daemon'"'"'s PATH only is not found: the error names the PATH and the setting' '
  write_job nf.json "" 0 0 0 "{\"masterConfig\": {\"imageUri\": \"example.com/test:1\", \"containerCommand\": [\"onlydaemon_$M\"]}}" &&
  "$TRAINYARD" jobs submit training svc_nf --config nf.json --async >out 2>&1 &&
  wait_for 60 ended svc_nf && state_is svc_nf FAILED &&
  "$TRAINYARD" jobs describe svc_nf --format json >d.json &&
  json_get d.json "d[\"errorMessage\"]" >msg &&
  grep -q "cannot run .onlydaemon_$M.: not found on the replica.s PATH (set by trainyardd.s --job-path setting): $JOBPATH" msg
'
test_expect_success '`local train --runtime slurm` keeps the user'"'"'s environment' '
  mkdir -p local &&
  write_job local.json "env >$TEST_DIR/local/env.\$SLURM_PROCID" &&
  TY_USER_ONLY=mine PATH="$TEST_DIR/daemonbin:$PATH" TRAINYARD_SLURM_MEMORY=none \
    "$TRAINYARD" local train local_env --runtime slurm --config local.json >out 2>&1 &&
  grep -qx "TY_USER_ONLY=mine" local/env.0 && grep -q "^PATH=$TEST_DIR/daemonbin:" local/env.0 &&
  grep -qx "SLURM_PROCID=0" local/env.0 && grep -qx "PWD=$PWD" local/env.0
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
# The next attempt of a job whose supervisor died waits until the old Slurm job has ended:
# its replica, spared by the sweep, takes up to 3 s to stop (SIGTERM, or Slurm's SIGKILL after
# KillWait), and the next attempt's replica must find it gone when it starts.
cat >"$TEST_DIR/jobbin/overlap_$M" <<EOT
#!/bin/sh
trap "sleep 3; exit 0" TERM
for p in \$(sed -n "s/^up //p" "$TEST_DIR/runs_$M" 2>/dev/null); do
  if kill -0 "\$p" 2>/dev/null; then echo "overlap \$p" >>"$TEST_DIR/runs_$M"; fi
done
echo "up \$\$" >>"$TEST_DIR/runs_$M"
while :; do sleep 0.2; done
EOT
chmod +x "$TEST_DIR/jobbin/overlap_$M"
test_expect_success 'a supervisor that dies while its job runs: the next attempt starts once the old one is gone' '
  { write_job w.json "exec overlap_$M" &&
  "$TRAINYARD" jobs submit training svc_wait --config w.json --async >out 2>&1 &&
  wait_for 60 grep -q "^up" "runs_$M" &&
  sup=$(pgrep -f "supervise-job $TEST_DIR/svc " | head -1) && test -n "$sup" &&
  kill -KILL "$sup" &&
  second() { test "$(grep -c "^up" "runs_$M")" = 2; } &&
  wait_for 90 second &&
  { ! grep -q overlap "runs_$M" || { cat "runs_$M"; false; }; } &&
  "$TRAINYARD" jobs cancel svc_wait >/dev/null 2>&1 &&
  wait_for 60 ended svc_wait && wait_for 30 no_slurm_jobs; } ||
  { "$TRAINYARD" jobs cancel svc_wait >/dev/null 2>&1; false; }
'
# The service's sweep spares the Slurm tasks on its own host: they end by their launcher's
# loss of the supervisor or by Slurm's cancel, which give the launcher time to remove what it
# made (here the replica's container, which takes a grace period, and the engine it started),
# where a SIGKILL would leave them until another launcher starts on that node (none here: the
# job is cancelled at once).
if "$TY_SOURCE_DIR/scripts/setup-podman.sh" >"$TEST_DIR/setup.log" 2>&1 &&
   "$TY_SOURCE_DIR/tests/integration/images/build-testbox.sh" >"$TEST_DIR/img.log" 2>&1; then
  test_expect_success 'a supervisor that dies: its replica'"'"'s container on a node is removed' '
    { "$PYTHON" -c "import json, sys; json.dump({\"trainingInput\": {\"scaleTier\": \"BASIC\", \"masterConfig\": {\"imageUri\": \"localhost/trainyard/testbox:1\"}, \"args\": [\"sh\", \"-c\", \"exec sleep 300\"]}}, open(sys.argv[1], \"w\"))" img.json &&
    "$TRAINYARD" jobs submit training svc_img --config img.json --async >out 2>&1 &&
    ctr() { podman ps -q --filter label=trainyard.job=svc_img; } &&
    ctr_up() { test -n "$(ctr)"; } &&
    { wait_for 90 ctr_up || { podman ps -a; cat svc/jobs/p1/svc_img/logs/*; false; }; } && first=$(ctr) &&
    engine_dir=$(sed -n "s|.*started .* on \(/tmp/trainyard-podman\.[^/]*\)/podman.sock.*|\1|p" svc/jobs/p1/svc_img/logs/service.log) &&
    test -d "$engine_dir" &&
    sup=$(pgrep -f "supervise-job $TEST_DIR/svc " | head -1) && test -n "$sup" &&
    kill -KILL "$sup" && "$TRAINYARD" jobs cancel svc_img >/dev/null 2>&1 &&
    wait_for 60 ended svc_img && wait_for 30 no_slurm_jobs &&
    { wait_for 30 sh -c "! podman container exists $first" || { podman ps -a; false; }; } &&
    { wait_for 30 test ! -e "$engine_dir" || { ls -la "$engine_dir"; false; }; } &&
    no_ctr() { test -z "$(podman ps -aq --filter label=trainyard.job=svc_img)"; } &&
    wait_for 30 no_ctr; } ||
    { "$TRAINYARD" jobs cancel svc_img >/dev/null 2>&1; false; }
  '
else
  test_skip "a supervisor that dies: its replica's container on a node is removed" "no container engine: $(tail -1 "$TEST_DIR/setup.log" 2>/dev/null)"
fi
trainyardd_stop svc
slurm_cluster_stop
test_expect_success 'nothing of the cluster is left' '
  test -z "$(slurm_cluster_procs)" && no_procs "trainyard-task --connect"
'
test_done
