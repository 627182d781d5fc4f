#!/bin/sh
# t3070-mxnet-env: MXNet's ps-lite variables (--mxnet-env, the label trainyard-mxnet-env=true):
# examples/digits wires itself from DMLC_* alone through a rendezvous at the scheduler and
# trains (1 master = scheduler, 2 workers, 2 ps = servers, 1 evaluator) in the process runtime;
# what each role gets (the evaluator nothing), a job without the label gets none, the label
# through trainyardd, and both labels at once.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID
# Nothing of the test's own environment may pass for trainyard's work.
unset DMLC_ROLE DMLC_PS_ROOT_URI DMLC_PS_ROOT_PORT DMLC_NUM_WORKER DMLC_NUM_SERVER
unset CLUSTER_SPEC TF_CONFIG
export TZ=UTC XDG_CONFIG_HOME="$TEST_DIR/xdg"
unset TRAINYARD_CONFIG TRAINYARD_PROJECT TRAINYARD_ACCESS_TOKEN TRAINYARD_API_ENDPOINT

# dump_script DIR: a replica that writes its DMLC_* variables (sorted) to DIR/<role>-<index>
# and its CLUSTER_SPEC to DIR/<role>-<index>.cs; the master then waits for all five replicas'
# files, the others sleep until the job is torn down.
dump_script() {
  cat <<EOF
n=\$(printf %s "\$CLUSTER_SPEC" | sed 's/.*"task":{"type":"\([a-z]*\)","index":\([0-9]*\).*/\1-\2/')
printf %s "\$CLUSTER_SPEC" >"$1/\$n.cs"
env | grep "^DMLC_" | sort >"$1/\$n.tmp"; mv "$1/\$n.tmp" "$1/\$n"
[ "\${n%-*}" = master ] || exec sleep 60.$M
i=0; while [ \$(ls "$1" | grep -cv "[.]") -lt 5 ] && [ \$i -lt 300 ]; do sleep 0.05; i=\$((i+1)); done
EOF
}
# var FILE NAME: the value of NAME in a dump ("" when absent)
var() { sed -n "s/^$2=//p" "$1"; }

test_expect_success 'digits trains from DMLC_* alone: 1 scheduler, 2 workers, 1 server, no CLUSTER_SPEC' '
  port=$("$PYTHON" -c "import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])") &&
  export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=$port DMLC_NUM_WORKER=2 DMLC_NUM_SERVER=1 &&
  { DMLC_ROLE=server "$DIGITS" --steps 200 >s0 2>&1 & s0=$!; } &&
  { DMLC_ROLE=worker "$DIGITS" --steps 200 >w0 2>&1 & w0=$!; } &&
  { DMLC_ROLE=worker "$DIGITS" --steps 200 >w1 2>&1 & w1=$!; } &&
  rc=0 && { DMLC_ROLE=scheduler timeout 60 "$DIGITS" --steps 200 >m 2>&1 || rc=$?; } &&
  rw0=0 && { wait $w0 || rw0=$?; } && rw1=0 && { wait $w1 || rw1=$?; } &&
  kill $s0 && wait $s0 &&
  cat m && test $rc = 0 && test $rw0 = 0 && test $rw1 = 0 &&
  grep -q "^scheduler: everyone registered" m && grep -q "^master: 2 worker(s), 1 ps" m &&
  grep -q "^final test accuracy: 0\.9[3-9]" m &&
  grep -q "^server: rank 0 of 1 from the scheduler at 127.0.0.1:$port" s0 &&
  cat w0 w1 | grep -q "^worker: rank 0 of 2" && cat w0 w1 | grep -q "^worker: rank 1 of 2"
'

test_expect_success 'local train --mxnet-env: digits 1+2+2+1 trains, wired from DMLC_*' '
  mkdir env1 &&
  cat >wrap.sh <<EOF &&
env | grep "^DMLC_" | sort >"$TEST_DIR/env1/\$\$"
exec digits "\$@"
EOF
  cat >mx.yaml <<EOF &&
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerType: n1-standard-4
  workerCount: 2
  parameterServerType: n1-highmem-2
  parameterServerCount: 2
  evaluatorType: n1-standard-4
  evaluatorCount: 1
  masterConfig:
    imageUri: localhost/trainyard/digits:latest
    containerCommand: [sh, $TEST_DIR/wrap.sh]
    containerArgs: [--steps, "300", --hidden, "32"]
EOF
  "$TRAINYARD" local train mx_digits --config mx.yaml --mxnet-env --job-dir "$TEST_DIR/jd" >log 2>&1 &&
  acc=$(sed -n "s/.*master-replica-0 *final test accuracy: \(0\.[0-9]*\)$/\1/p" log) &&
  echo "accuracy $acc" &&
  "$PYTHON" -c "import sys; sys.exit(0 if float(\"$acc\") >= 0.93 else 1)" &&
  grep -q "Job completed successfully." log
'
test_expect_success 'every replica but the evaluator took its role from DMLC_*, not CLUSTER_SPEC' '
  grep -q "master-replica-0 *scheduler: everyone registered" log &&
  grep -q "worker-replica-[01] *worker: rank 0 of 2" log &&
  grep -q "worker-replica-[01] *worker: rank 1 of 2" log &&
  grep -q "ps-replica-[01] *server: rank 0 of 2" log &&
  grep -q "ps-replica-[01] *server: rank 1 of 2" log &&
  test $(grep -c "DMLC_ROLE is set: wiring from the DMLC_" log) = 5 &&
  ! grep -q "evaluator-replica-0 *digits: DMLC_ROLE" log &&
  grep -q "evaluator-replica-0 *evaluator: watching $TEST_DIR/jd/checkpoints" log &&
  grep -q "ps-replica-0 *ps [01]: terminating" log && no_procs "$TEST_DIR/jd"
'
test_expect_success 'the scheduler listened on the master port the job was given' '
  port=$(sed -n "s/.*master-replica-0 *scheduler: waiting on 127\.0\.0\.1:\([0-9]*\) .*/\1/p" log) &&
  test -n "$port" &&
  grep -l "^DMLC_ROLE=scheduler" env1/* >sched && test $(wc -l <sched) = 1 &&
  test "$(var "$(cat sched)" DMLC_PS_ROOT_PORT)" = "$port"
'

test_expect_success 'the variables per role: scheduler, workers, servers; the evaluator none' '
  mkdir env2 &&
  write_job dump.json "$(dump_script "$TEST_DIR/env2")" 2 1 1 &&
  "$TRAINYARD" local train mx_dump --config dump.json --mxnet-env --grace-period 1 >log2 2>&1 &&
  mport=$(sed "s/.*\"master\":\[\"127\.0\.0\.1:\([0-9]*\)\".*/\1/" env2/master-0.cs) && test -n "$mport" &&
  for f in master-0 worker-0 worker-1 ps-0; do
    test "$(var env2/$f DMLC_PS_ROOT_URI)" = 127.0.0.1 &&
    test "$(var env2/$f DMLC_PS_ROOT_PORT)" = "$mport" &&
    test "$(var env2/$f DMLC_NUM_WORKER)" = 2 &&
    test "$(var env2/$f DMLC_NUM_SERVER)" = 1 &&
    test $(wc -l <env2/$f) = 5 || exit 1
  done &&
  test "$(var env2/master-0 DMLC_ROLE)" = scheduler &&
  test "$(var env2/worker-0 DMLC_ROLE)" = worker && test "$(var env2/worker-1 DMLC_ROLE)" = worker &&
  test "$(var env2/ps-0 DMLC_ROLE)" = server &&
  test -f env2/evaluator-0 && test ! -s env2/evaluator-0 &&
  no_procs "sleep 60.$M"
'
test_expect_success 'a job without the flag or the label: no DMLC_* on any replica' '
  mkdir env3 &&
  write_job plain.json "$(dump_script "$TEST_DIR/env3")" 2 1 1 &&
  "$TRAINYARD" local train mx_plain --config plain.json --pytorch-env --grace-period 1 >log3 2>&1 &&
  test $(ls env3 | grep -cv "[.]") = 5 &&
  for f in master-0 worker-0 worker-1 ps-0 evaluator-0; do test ! -s env3/$f || exit 1; done
'
test_expect_success 'the label alone, and both labels at once (dry run)' '
  "$PYTHON" -c "import json; d=json.load(open(\"dump.json\")); d[\"labels\"]={\"trainyard-mxnet-env\":\"true\",\"trainyard-pytorch-env\":\"true\"}; json.dump(d,open(\"both.json\",\"w\"))" &&
  "$TRAINYARD" local train mx_both --config both.json --dry-run >dry.json &&
  test "$(json_get dry.json "\",\".join(str(r[\"env\"].get(\"DMLC_ROLE\")) for r in d)")" = scheduler,worker,worker,server,None &&
  test "$(json_get dry.json "\",\".join(str(r[\"env\"].get(\"RANK\")) for r in d)")" = 0,1,2,None,None &&
  test "$(json_get dry.json "len([k for k in d[4][\"env\"] if k.startswith(\"DMLC\")])")" = 0
'

trainyardd_start svc && export TRAINYARD_API_ENDPOINT="$TYD_URL" ||
  { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR/svc.log"; exit 1; }
test_expect_success 'jobs submit training --mxnet-env: the label, and DMLC_* in the service job' '
  mkdir env4 &&
  write_job svc.json "$(dump_script "$TEST_DIR/env4")" 2 1 1 &&
  "$TRAINYARD" jobs submit training mx_svc --config svc.json --mxnet-env --stream-logs >out 2>err &&
  grep -q "^state: SUCCEEDED$" out &&
  "$TRAINYARD" jobs describe mx_svc --format json >d.json &&
  test "$(json_get d.json "d[\"labels\"][\"trainyard-mxnet-env\"]")" = true &&
  test "$(var env4/master-0 DMLC_ROLE)" = scheduler && test "$(var env4/ps-0 DMLC_ROLE)" = server &&
  test "$(var env4/worker-1 DMLC_ROLE)" = worker && test "$(var env4/worker-1 DMLC_NUM_SERVER)" = 1 &&
  test "$(var env4/worker-1 DMLC_PS_ROOT_URI)" = 127.0.0.1 &&
  test -f env4/evaluator-0 && test ! -s env4/evaluator-0
'
trainyardd_stop svc
test_done
