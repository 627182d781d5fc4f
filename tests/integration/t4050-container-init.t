#!/bin/sh
# t4050-container-init: containers run with the engine's init as PID 1 (Podman's catatonit,
# HostConfig.Init; docs/container-runtime.md), so that a program without a SIGTERM handler
# stops when the job is cancelled, not when the grace period ends, and orphaned children
# that exit are reaped instead of staying zombies.
#  - sigterm: a master that is only `sleep 300` (busybox: no handler), `local train` given
#    SIGTERM with a 20 s grace period, ends within a few seconds, and leaves nothing;
#  - service: the same through trainyardd, cancelled by the API;
#  - zombies: PID 1 is the init; a replica whose orphaned child exits under a program that
#    never waits (`exec sleep`): no zombie is seen in the container a second later.
# Skipped (every test) when no usable container engine is on this machine.
. "$(dirname "$0")/../lib/test-lib.sh"

require_testbox "container init" sigterm service zombies
export TRAINYARD_RUNTIME=container
J=$$ # job ids unique to this run: container labels are machine-wide
IMG=localhost/trainyard/testbox:1

export JOB_IMAGE=$IMG
ctr_job() {
  write_job "$@"
}

leftovers() {
  podman ps -a --filter "label=trainyard.job=$1" --format '{{.Names}}'
  podman network ls --filter "label=trainyard.job=$1" --format '{{.Name}}'
}

running_at_least() {
  [ "$(podman ps -q --filter "label=trainyard.job=$1" | wc -l)" -ge "$2" ]
}

# Usage: elapsed START   seconds (with decimals) since START (date +%s.%N)
elapsed() {
  awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}

# The master is `sleep 300` itself (exec): PID 1 without an init, and busybox sleep has no
# SIGTERM handler. Without the init it ends only at the grace period's SIGKILL (20 s).
test_expect_success 'container init: sigterm' '
  ctr_job sl.json "exec sleep 300" 1 || exit 1
  "$TRAINYARD" local train ctr_term_$J --config sl.json --grace-period 20 >log 2>&1 &
  pid=$!
  { wait_for 60 running_at_least ctr_term_$J 2 || { kill -KILL $pid; false; }; } &&
  t0=$(date +%s.%N) && kill -TERM $pid &&
  set +e; wait $pid; rc=$?; set -e
  took=$(elapsed $t0) && echo "ended $took s after SIGTERM (rc $rc)" &&
  test $rc -ne 0 && grep -q "Job cancelled." log &&
  awk -v t="$took" "BEGIN { exit !(t < 8) }" &&
  test -z "$(leftovers ctr_term_$J)"
'

# The service with a 20 s grace period (its last --grace-period wins over the library's 1).
trainyardd_start svc --runtime container --grace-period 20
BASE=$TYD_URL
state_is() {
  [ "$(curl -s "$BASE/v1/projects/p/jobs/$1" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin).get("state"))')" = "$2" ]
}
test_expect_success 'container init: service' '
  write_job svc.ti "exec sleep 300" &&
  "$PYTHON" -c "import json,sys; d=json.load(open(\"svc.ti\")); d[\"jobId\"]=\"ctr_svc_$J\"; print(json.dumps(d))" |
    curl -s -o svc.out -w "%{http_code}" -X POST -H "Content-Type: application/json" --data-binary @- \
      "$BASE/v1/projects/p/jobs" | grep -q 200 &&
  wait_for 120 state_is ctr_svc_$J RUNNING &&
  wait_for 60 running_at_least ctr_svc_$J 1 &&
  t0=$(date +%s.%N) &&
  curl -s -X POST -H "Content-Type: application/json" -d "{}" "$BASE/v1/projects/p/jobs/ctr_svc_$J:cancel" | grep -q "{}" &&
  wait_for 60 state_is ctr_svc_$J CANCELLED &&
  took=$(elapsed $t0) && echo "CANCELLED $took s after the cancel" &&
  awk -v t="$took" "BEGIN { exit !(t < 8) }" &&
  test -z "$(leftovers ctr_svc_$J)"
'
trainyardd_stop svc

# PID 1 is the init, the program's shell its child. The orphan: `sleep 0.2` whose parent
# subshell exits at once, adopted by PID 1; the shell then becomes `sleep 3` (exec), which
# never waits. A background watcher counts the zombies.
ZOMBIE='jd=${0#--job-dir=}
tr "\\0" " " </proc/1/cmdline >$jd/pid1
(sleep 0.2 &)
(sleep 1.5; grep -l "^State:.*Z" /proc/[0-9]*/status 2>/dev/null | wc -l >$jd/zombies) &
exec sleep 3'
test_expect_success 'container init: zombies' '
  ctr_job zz.json "$ZOMBIE" &&
  mkdir -p jz && "$TRAINYARD" local train ctr_zz_$J --config zz.json --job-dir "$TEST_DIR/jz" >log 2>&1 &&
  grep -q "Job completed successfully." log &&
  cat jz/pid1 && grep -q "^/run/podman-init -- sh -c" jz/pid1 &&
  echo "zombies: $(cat jz/zombies)" && test "$(cat jz/zombies)" -eq 0
'
test_done
