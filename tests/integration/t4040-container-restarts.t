#!/bin/sh
# t4040-container-restarts: restarts in place and job retries on the container runtime, with
# real Podman containers (docs/lifecycle.md, "Restarts and retries"): a replica that SIGKILLs
# itself once comes back with the same environment; a master crashing on the first attempt
# gets the whole job retried with the same host names and addresses; `podman kill` of a
# memory-limited container is a kill from outside (restarted), a real OOM is not (fails at
# once); teardown after success restarts nothing; the podman service trainyard started dying
# under a job loses its replicas, which run again on a new one; no container or network is
# left.
# Every replica appends to files in the job directory, one line per run: the hash of its
# CLUSTER_SPEC + TF_CONFIG (.env), its start time (.up, /proc/uptime), address (.ip) and MAC
# address (.mac: a container restarted in place keeps it, so its peers reach it at once).
# Skipped (every test) when no usable container engine is on this machine.
. "$(dirname "$0")/../lib/test-lib.sh"

require_testbox "container restarts" kill-once crash-retry podman-kill oom teardown engine
export TRAINYARD_RUNTIME=container
J=$$ # job ids unique to this run: container labels are machine-wide
IMG=localhost/trainyard/testbox:1

ctr_job() {
  JOB_IMAGE=$IMG write_job "$@"
}

# Usage: leftovers JOB_ID   prints containers and networks still labelled with the job
leftovers() {
  podman ps -a --filter "label=trainyard.job=$1" --format '{{.Names}}'
  podman network ls --filter "label=trainyard.job=$1" --format '{{.Name}}'
}

# Usage: lines FILE   its number of lines (0 when missing)
lines() {
  if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi
}

# Usage: runs_each DIR N   every replica's .up file in DIR has N lines (ran N times)
runs_each() {
  for f in "$1"/*.up; do
    [ "$(lines "$f")" -eq "$2" ] || { echo "$f: $(lines "$f") runs, not $2"; return 1; }
  done
}

# Usage: same_each DIR EXT   every replica's DIR/*.EXT has one distinct line (same each run)
same_each() {
  for f in "$1"/*."$2"; do
    [ "$(sort -u "$f" | wc -l)" -eq 1 ] || { echo "$f differs between runs:"; cat "$f"; return 1; }
  done
}

# What every replica does first: record this run.
PRE='jd=${0#--job-dir=}; me=$(hostname)
printf "%s\n%s\n" "$CLUSTER_SPEC" "$TF_CONFIG" | sha256sum | cut -c1-64 >>$jd/$me.env
ip -4 addr show eth0 | grep -o "inet [0-9.]*" >>$jd/$me.ip
cat /sys/class/net/eth0/address >>$jd/$me.mac
cat /sys/fs/cgroup/memory/memory.limit_in_bytes >$jd/$me.mem 2>/dev/null
cut -d" " -f1 /proc/uptime >>$jd/$me.up
'
# Replicas other than the master run until they are told to stop.
IDLE='trap "exit 0" TERM; sleep 1000 & wait'

# (a) worker 0 SIGKILLs itself on its first run (through a child: the kernel ignores a
# SIGKILL from inside a container to its PID 1), so the container exits 137; the master
# waits for its second run.
KILL_ONCE="$PRE"'case $me in *-worker-*-0) if [ ! -e $jd/killed ]; then touch $jd/killed
  cut -d" " -f1 /proc/uptime >$jd/death; sh -c "kill -9 \$\$"; exit $?; fi;; esac
case $me in *-master-*) while [ $(cat $jd/*-worker-*-0.up | wc -l) -lt 2 ]; do sleep 0.1; done; exit 0;; esac
'"$IDLE"
test_expect_success 'container restarts: kill-once' '
  ctr_job once.json "$KILL_ONCE" 2 &&
  mkdir -p jda && "$TRAINYARD" local train ctr_once_$J --config once.json --job-dir "$TEST_DIR/jda" \
    --grace-period 2 >loga 2>&1 &&
  grep -q "Job completed successfully." loga &&
  grep -q "The replica worker 0 was killed by signal 9 (SIGKILL) from outside trainyard; restarting it (restart 1 of 5)." loga &&
  test "$(grep -c "restarting it" loga)" -eq 1 &&
  ! grep -q "Retrying the job" loga &&
  test "$(lines jda/cmle-training-worker-*-0.up)" -eq 2 &&
  test "$(lines jda/cmle-training-worker-*-1.up)" -eq 1 &&
  test "$(lines jda/cmle-training-master-*-0.up)" -eq 1 &&
  same_each jda env && same_each jda ip &&
  same_each jda mac && grep -q "^02:42:c6:1[23]:" jda/cmle-training-worker-*-0.mac &&
  test -z "$(leftovers ctr_once_$J)"
'
# Replica death to its program running again, from the kernel's uptime in both containers.
if [ -f "$TEST_DIR/jda/death" ]; then
  up2=$(sed -n 2p "$TEST_DIR"/jda/cmle-training-worker-*-0.up)
  lat=$(echo "$(cat "$TEST_DIR/jda/death") $up2" | awk '{printf "%.2f", $2 - $1}')
  echo "# restart latency (replica death to its program running again): $lat s"
  test_expect_success 'container restarts: kill-once restarted within 8 s' "
    awk 'BEGIN { exit !($lat < 8) }'
  "
fi

# (b) the master exits 139 once every replica runs in attempt 1: the job is retried, on a
# new runtime, with the same host names (the same environment) and addresses; the first
# attempt's cleanup removed everything (the second finds nothing of it left).
CRASH="$PRE"'case $me in *-master-*)
  if [ ! -e $jd/crashed ]; then while [ $(cat $jd/*.up | wc -l) -lt 3 ]; do sleep 0.1; done
    touch $jd/crashed; exit 139; fi
  while [ $(cat $jd/*.up | wc -l) -lt 6 ]; do sleep 0.1; done; exit 0;; esac
'"$IDLE"
test_expect_success 'container restarts: crash-retry' '
  ctr_job crash.json "$CRASH" 2 &&
  mkdir -p jdb && "$TRAINYARD" local train ctr_crash_$J --config crash.json --job-dir "$TEST_DIR/jdb" \
    --grace-period 2 >logb 2>&1 &&
  grep -q "Job completed successfully." logb &&
  grep -q "Retrying the job (attempt 2 of 4): The replica master 0 exited with a non-zero status of 139." logb &&
  grep -q "Starting attempt 2 of 4." logb &&
  ! grep -q "restarting it" logb &&
  ! grep -q "that the attempt before left" logb &&
  test "$(ls jdb/*.up | wc -l)" -eq 3 && runs_each jdb 2 &&
  same_each jdb env && same_each jdb ip &&
  test -z "$(leftovers ctr_crash_$J)"
'

# (c) a memory-limited worker killed with `podman kill` (exit 137, no OOM kill recorded):
# restarted; then a replica that really runs out of memory: fails at once.
WAIT_WORKER="$PRE"'case $me in *-master-*) while [ $(cat $jd/*-worker-*-0.up | wc -l) -lt 2 ]; do sleep 0.1; done; exit 0;; esac
'"$IDLE"
test_expect_success 'container restarts: podman-kill' '
  ctr_job pk.json "$WAIT_WORKER" 1 &&
  mkdir -p jdc &&
  TRAINYARD_CONTAINER_MAX_MEMORY=64m "$TRAINYARD" local train ctr_pk_$J --config pk.json \
    --job-dir "$TEST_DIR/jdc" --grace-period 2 >logc 2>&1 &
  pid=$!
  { wait_for 60 sh -c "test -s jdc/cmle-training-worker-*-0.up" || { kill -KILL $pid; false; }; } &&
  ctr=$(podman ps -q --filter "label=trainyard.job=ctr_pk_$J" --filter "label=trainyard.task=worker-replica-0") &&
  test -n "$ctr" && podman kill "$ctr" >/dev/null &&
  { wait $pid || { cat logc; false; }; } &&
  grep -q "Job completed successfully." logc &&
  grep -q "The replica worker 0 was killed by signal 9 (SIGKILL) from outside trainyard; restarting it (restart 1 of 5)." logc &&
  ! grep -q "out of memory" logc &&
  test "$(cat jdc/cmle-training-worker-*-0.mem)" -eq 67108864 &&
  test "$(lines jdc/cmle-training-worker-*-0.up)" -eq 2 &&
  same_each jdc env && same_each jdc ip &&
  test -z "$(leftovers ctr_pk_$J)"
'
test_expect_success 'container restarts: oom' '
  ctr_job oom.json "$PRE""x=\$(head -c 400000000 /dev/zero | tr \"\\\\0\" a); echo \${#x}" &&
  mkdir -p jdd &&
  set +e
  TRAINYARD_CONTAINER_MAX_MEMORY=64m "$TRAINYARD" local train ctr_oom_$J --config oom.json \
    --job-dir "$TEST_DIR/jdd" >logd 2>errd; rc=$?
  set -e
  test $rc -eq 1 &&
  grep -q "The replica master 0 ran out of memory and exited with a non-zero status of 137." errd &&
  ! grep -q "restarting it" logd && ! grep -q "Retrying the job" logd &&
  test "$(lines jdd/cmle-training-master-*-0.up)" -eq 1 &&
  test -z "$(leftovers ctr_oom_$J)"
'

# (d) the master succeeds while a worker runs and a ps ignores SIGTERM: the teardown's
# SIGTERM and SIGKILL are trainyard's own, never a reason to restart.
TEARDOWN="$PRE"'case $me in
  *-master-*) while [ $(cat $jd/*.up | wc -l) -lt 3 ]; do sleep 0.1; done; exit 0;;
  *-ps-*) trap "" TERM; while true; do sleep 1; done;;
esac
exec sleep 1000'
test_expect_success 'container restarts: teardown' '
  ctr_job td.json "$TEARDOWN" 1 1 &&
  mkdir -p jde && "$TRAINYARD" local train ctr_td_$J --config td.json --job-dir "$TEST_DIR/jde" \
    --grace-period 1 >loge 2>&1 &&
  grep -q "Job completed successfully." loge &&
  grep -q "Tearing down training program." loge &&
  ! grep -q "restarting it" loge && ! grep -q "Retrying the job" loge &&
  test "$(ls jde/*.up | wc -l)" -eq 3 && runs_each jde 1 &&
  test -z "$(leftovers ctr_td_$J)"
'

# (f) the podman service trainyard started for the job is killed: the replicas are lost and
# restarted in place on a new service (one whose start was still being answered is started
# again there, saying so). The master finishes on its second run, once the
# worker runs again too.
ENGINE="$PRE"'case $me in *-master-*)
  if [ $(cat $jd/$me.up | wc -l) -ge 2 ]; then
    while [ $(cat $jd/*-worker-*-0.up | wc -l) -lt 2 ]; do sleep 0.1; done; exit 0; fi;; esac
'"$IDLE"
test_expect_success 'container restarts: engine' '
  ctr_job engine.json "$ENGINE" 1 &&
  mkdir -p jdf &&
  "$TRAINYARD" local train ctr_engine_$J --config engine.json --job-dir "$TEST_DIR/jdf" \
    --grace-period 2 >logf 2>&1 &
  pid=$!
  { wait_for 60 sh -c "test -s jdf/cmle-training-worker-*-0.up && test -s jdf/cmle-training-master-*-0.up" ||
    { kill -KILL $pid; false; }; } &&
  svc=$(sed -n "s/.*started .*podman system service. (pid \([0-9]*\)).*/\1/p" logf | head -1) &&
  if [ -z "$svc" ]; then
    echo "# the engine is not one trainyard started: nothing to kill"; kill -INT $pid; wait $pid || true
  else
    kill -KILL "$svc" &&
    { wait $pid || { cat logf; false; }; } &&
    grep -q "Job completed successfully." logf &&
    grep -q "went away; reaching it again." logf &&
    for r in worker master; do
      grep -q "The replica $r 0 was lost: .*; restarting it (restart 1 of 5)." logf ||
        grep -q "The replica $r 0 was being started: it is started again once the engine is back." logf ||
        { echo "# replica $r 0: neither lost nor started again"; exit 1; }
    done &&
    runs_each jdf 2 && same_each jdf env && same_each jdf ip
  fi &&
  test -z "$(leftovers ctr_engine_$J)"
'
# An engine of the user's (DOCKER_HOST) that is gone for 3 s, as in a restart of its service:
# trainyard tries it again every second (for 30 s) and the job goes on once it is back.
test_expect_success 'container restarts: an external engine gone for a few seconds' '
  sock="$TEST_DIR/ext.sock" &&
  { podman system service --time=0 "unix://$sock" >ext1.log 2>&1 & } && ext=$! &&
  wait_for 20 test -S "$sock" &&
  ctr_job ext.json "$ENGINE" 1 &&
  mkdir -p jdx &&
  { DOCKER_HOST="unix://$sock" "$TRAINYARD" local train ctr_ext_$J --config ext.json \
      --job-dir "$TEST_DIR/jdx" --grace-period 2 >logx 2>&1 & } && pid=$! &&
  { wait_for 60 sh -c "test -s jdx/cmle-training-worker-*-0.up && test -s jdx/cmle-training-master-*-0.up" ||
    { kill -KILL $pid $ext; false; }; } &&
  kill -TERM $ext && { wait $ext || true; } && sleep 3 &&
  { podman system service --time=0 "unix://$sock" >ext2.log 2>&1 & } && ext=$! &&
  { wait $pid || { cat logx; kill -TERM $ext; false; }; } &&
  grep -q "went away; reaching it again." logx &&
  grep -q "Job completed successfully." logx &&
  ! grep -q "could not be reached again" logx &&
  test -z "$(leftovers ctr_ext_$J)" &&
  kill -TERM $ext && { wait $ext || true; }
'
test_done
