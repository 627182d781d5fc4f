#!/bin/sh
# t4060-container-mxnet: --mxnet-env in the container runtime against a real Podman: the
# DMLC_* variables per role (the evaluator none), DMLC_PS_ROOT_URI the master container's IP
# address on the job's network (not its name), and the scheduler reachable there on
# DMLC_PS_ROOT_PORT from a worker's and a server's container.
# Skipped when no usable container engine is on this machine.
. "$(dirname "$0")/../lib/test-lib.sh"

require_testbox "container mxnet" env address reach
export TRAINYARD_RUNTIME=container
J=$$ # job ids unique to this run: container labels are machine-wide
IMG=localhost/trainyard/testbox:1

# Each replica writes its DMLC_* variables and its IPv4 addresses to the job dir; the master
# listens on DMLC_PS_ROOT_PORT until the worker and the server have connected to
# DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT (or given up).
PROBE='jd=${0#--job-dir=}; me=$(hostname); role=${me#cmle-training-}; role=${role%%-*}
env | grep "^DMLC_" | sort >$jd/$role.dmlc
ip -4 -o addr show >$jd/$role.addr
case $role in
master)
  (while true; do nc -l -p $DMLC_PS_ROOT_PORT </dev/null >/dev/null 2>&1; done) &
  i=0; while [ $(ls $jd | grep -c "[.]done$") -lt 2 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
  exit 0;;
evaluator) exec sleep 1000;;
esac
r=no
for i in $(seq 200); do
  if nc -w 2 $DMLC_PS_ROOT_URI $DMLC_PS_ROOT_PORT </dev/null >/dev/null 2>&1; then r=yes; break; fi
  sleep 0.05
done
echo $r >$jd/$role.reach; touch $jd/$role.done
exec sleep 1000'

var() { sed -n "s/^$2=//p" "$1"; }

test_expect_success 'container mxnet: env' '
  JOB_IMAGE=$IMG write_job job.json "$PROBE" 1 1 1 &&
  mkdir -p jd && "$TRAINYARD" local train ctr_mx_$J --config job.json --mxnet-env \
    --job-dir "$TEST_DIR/jd" --grace-period 2 >log 2>&1 &&
  grep -q "Job completed successfully." log &&
  test "$(var jd/master.dmlc DMLC_ROLE)" = scheduler &&
  test "$(var jd/worker.dmlc DMLC_ROLE)" = worker &&
  test "$(var jd/ps.dmlc DMLC_ROLE)" = server &&
  for r in master worker ps; do
    test "$(var jd/$r.dmlc DMLC_PS_ROOT_PORT)" = 2222 &&
    test "$(var jd/$r.dmlc DMLC_NUM_WORKER)" = 1 &&
    test "$(var jd/$r.dmlc DMLC_NUM_SERVER)" = 1 &&
    test "$(var jd/$r.dmlc DMLC_PS_ROOT_URI)" = "$(var jd/master.dmlc DMLC_PS_ROOT_URI)" || exit 1
  done &&
  test -f jd/evaluator.dmlc && test ! -s jd/evaluator.dmlc
'
test_expect_success 'container mxnet: address' '
  uri=$(var jd/master.dmlc DMLC_PS_ROOT_URI) && echo "DMLC_PS_ROOT_URI=$uri" &&
  echo "$uri" | grep -q "^198\.[0-9.]*$" &&
  grep -q "inet $uri/" jd/master.addr &&
  ! grep -q "inet $uri/" jd/worker.addr
'
test_expect_success 'container mxnet: reach' '
  test "$(cat jd/worker.reach)" = yes && test "$(cat jd/ps.reach)" = yes &&
  test -z "$(podman ps -a --filter "label=trainyard.job=ctr_mx_$J" --format "{{.Names}}")"
'
test_done
