#!/bin/sh
# t4000-container: the container runtime against a real Podman (Docker Engine API): the
# environment inside containers, every replica reaching every other by its advertised name
# from the start, limits in the cgroup, OOM wording, failure and cancel leaving no container
# or network, a missing image, GPUs (a job that never fits; stand-in devices: the variables,
# no device file), and the digits example in containers.
# Skipped (every test) when no usable container engine is on this machine.
. "$(dirname "$0")/../lib/test-lib.sh"

require_testbox "container" env reach two limits oom fail sweep cancel paused image gpus digits
export TRAINYARD_RUNTIME=container
J=$$ # job ids unique to this run: container labels are machine-wide
IMG=localhost/trainyard/testbox:1

# Usage: ctr_job FILE SCRIPT [WORKERS] [PS] [EVALUATORS] [EXTRA_JSON]  (write_job, in testbox)
ctr_job() {
  JOB_IMAGE=$IMG write_job "$@"
}

# Usage: leftovers JOB_ID   prints containers and networks still labelled with the job
leftovers() {
  podman ps -a --filter "label=trainyard.job=$1" --format '{{.Names}}'
  podman network ls --filter "label=trainyard.job=$1" --format '{{.Name}}'
}

# Usage: running_at_least JOB_ID N   succeeds when N containers of the job are running
running_at_least() {
  [ "$(podman ps -q --filter "label=trainyard.job=$1" | wc -l)" -ge "$2" ]
}

PROBE='jd=${0#--job-dir=}; me=$(hostname)
echo "$CLUSTER_SPEC" >$jd/$me.cs; echo "$TF_CONFIG" >$jd/$me.tf; echo "$CLOUD_ML_JOB_ID" >$jd/$me.id
cat /etc/hosts >$jd/$me.hosts
cat /sys/fs/cgroup/memory/memory.limit_in_bytes >$jd/$me.mem 2>/dev/null
cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us >$jd/$me.cpu 2>/dev/null
(while true; do nc -l -p 2222 </dev/null >/dev/null 2>&1; done) &
for p in $(echo "$CLUSTER_SPEC" | grep -o "cmle-training-[a-z]*-[0-9a-f]*-[0-9]*:2222"); do
  h=${p%:2222}; r=no
  for i in $(seq 200); do
    if out=$(nc -w 2 $h 2222 </dev/null 2>&1); then r=yes; break; fi
    case "$out" in *"bad address"*) r=dns; break;; esac
    sleep 0.05
  done
  echo "$h $r" >>$jd/$me.reach
done
touch $jd/$me.done
n=$(echo "$CLUSTER_SPEC" | grep -o "cmle-training-[a-z]*-[0-9a-f]*-[0-9]*:2222" | sort -u | wc -l)
case $me in *-master-*) while [ $(ls $jd/*.done | wc -l) -lt $n ]; do sleep 0.1; done; exit 0;; esac
exec sleep 1000'

test_expect_success 'container: env' '
  ctr_job job.json "$PROBE" 2 1 1 &&
  mkdir -p jd && "$TRAINYARD" local train ctr_env_$J --config job.json --job-dir "$TEST_DIR/jd" --grace-period 2 >log 2>&1 &&
  grep -q "Job completed successfully." log &&
  m=$(ls jd/*-master-*.cs) && w1=$(ls jd/*-worker-*-1.cs) &&
  grep -q "\"task\":{\"type\":\"worker\",\"index\":1}" $w1 &&
  grep -q "{\"cluster\":{\"master\":\[\"cmle-training-master-[0-9a-f]\{10\}-0:2222\"\],\"worker\":\[" $m &&
  grep -q "\"evaluator\":\[\"cmle-training-evaluator-" $m &&
  grep -q "\"chief\":\[\"cmle-training-master-" jd/*-master-*.tf &&
  test "$(cat jd/*-ps-*-0.id)" = ctr_env_$J
'
test_expect_success 'container: reach' '
  test $(cat jd/*.reach | wc -l) = 25 &&
  ! grep -v " yes$" jd/*.reach &&
  grep -q "cmle-training-ps-" jd/*-worker-*-0.hosts
'
test_expect_success 'container: two jobs at once' '
  ctr_job two.json "$PROBE" 1 1
  mkdir -p jda jdb
  "$TRAINYARD" local train ctr_a_$J --config two.json --job-dir "$TEST_DIR/jda" --grace-period 2 >loga 2>&1 &
  a=$!
  "$TRAINYARD" local train ctr_b_$J --config two.json --job-dir "$TEST_DIR/jdb" --grace-period 2 >logb 2>&1 &&
  wait $a &&
  ! cat jda/*.reach jdb/*.reach | grep -v " yes$" &&
  test "$(cat jda/*.reach | wc -l)" = 9 && test "$(cat jdb/*.reach | wc -l)" = 9 &&
  test "$(ls jda | head -1)" != "$(ls jdb | head -1)" &&
  test -z "$(leftovers ctr_a_$J)$(leftovers ctr_b_$J)"
'
test_expect_success 'container: limits' '
  host_cpus=$(nproc) &&
  test "$(cat jd/*-master-*.cpu)" = "$((host_cpus * 100000))" &&
  test "$(cat jd/*-master-*.mem)" -gt 0 &&
  grep -q "this host has" log
'
test_expect_success 'container: oom' '
  ctr_job oom.json "x=\$(head -c 400000000 /dev/zero | tr \"\\\\0\" a); echo \${#x}" &&
  set +e
  TRAINYARD_CONTAINER_MAX_MEMORY=64m "$TRAINYARD" local train ctr_oom_$J --config oom.json >log 2>err; rc=$?
  set -e
  test $rc -eq 1 &&
  grep -q "The replica master 0 ran out of memory and exited with a non-zero status of 137." err &&
  grep -q "this host has [0-9]* CPUs and 64 MiB for a container (TRAINYARD_CONTAINER_MAX_MEMORY), so each master replica is limited to [0-9]* CPUs and 64 MiB." log &&
  test -z "$(leftovers ctr_oom_$J)"
'
test_expect_success 'container: fail' '
  ctr_job fail.json "case \$(hostname) in *-worker-*-1) exit 3;; esac; exec sleep 1000" 2 1 &&
  set +e; "$TRAINYARD" local train ctr_fail_$J --config fail.json --grace-period 2 >log 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "The replica worker 1 exited with a non-zero status of 3." err &&
  test -z "$(leftovers ctr_fail_$J)"
'
test_expect_success 'container: the socket directory of a killed run is swept by the next' '
  dead=/tmp/trainyard-podman.999999999.t4000$J && live=/tmp/trainyard-podman.$$.t4000$J &&
  dead2=/tmp/trainyard-podman.999999998.t4000$J &&
  mkdir -p "$dead" "$dead2" "$live" &&
  "$PYTHON" -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$dead2/podman.sock" &&
  ctr_job sweep.json "exit 0" &&
  "$TRAINYARD" local train ctr_sweep_$J --config sweep.json --grace-period 2 >log 2>&1 &&
  ! test -e "$dead" && ! test -e "$dead2" && test -d "$live" && rmdir "$live"
'
test_expect_success 'container: cancel' '
  ctr_job long.json "exec sleep 1000" 2 1 || exit 1
  "$TRAINYARD" local train ctr_cancel_$J --config long.json --grace-period 2 >log 2>&1 &
  pid=$!
  { wait_for 60 running_at_least ctr_cancel_$J 4 || { kill -KILL $pid; false; }; } &&
  net=$(podman network ls --filter label=trainyard.job=ctr_cancel_$J --format "{{.DNSEnabled}} {{.Internal}}") &&
  kill -INT $pid &&
  test "$net" = "false true" &&
  set +e; wait $pid; rc=$?; set -e
  test $rc -eq 1 && grep -q "Job cancelled." log &&
  test -z "$(leftovers ctr_cancel_$J)"
'
test_expect_success 'container: paused' '
  ctr_job paused.json "exec sleep 1000" || exit 1
  "$TRAINYARD" local train ctr_paused_$J --config paused.json --grace-period 2 >log 2>&1 &
  pid=$!
  { wait_for 60 running_at_least ctr_paused_$J 1 || { kill -KILL $pid; false; }; } &&
  podman pause $(podman ps -q --filter label=trainyard.job=ctr_paused_$J) >/dev/null &&
  kill -INT $pid &&
  { wait_for 30 eval "! kill -0 $pid 2>/dev/null" || { kill -KILL $pid; false; }; } &&
  set +e; wait $pid; rc=$?; set -e
  test $rc -eq 1 && grep -q "Job cancelled." log &&
  test -z "$(leftovers ctr_paused_$J)"
'
test_expect_success 'container: a container made from an image committed from a replica is not taken for a dead run'"'"'s' '
  ctr_job cm.json "exec sleep 1000" || exit 1
  "$TRAINYARD" local train ctr_cm_$J --config cm.json --grace-period 2 >log 2>&1 &
  pid=$!
  { wait_for 60 running_at_least ctr_cm_$J 1 || { kill -KILL $pid; false; }; } &&
  podman commit -q "$(podman ps -q --filter label=trainyard.job=ctr_cm_$J | head -1)" localhost/t4000/committed:$J >/dev/null &&
  kill -INT $pid && { wait $pid || true; } &&
  podman run -d --name t4000-mine-$J localhost/t4000/committed:$J sleep 300 >/dev/null &&
  ctr_job cm2.json "exit 0" &&
  "$TRAINYARD" local train ctr_cm2_$J --config cm2.json >log2 2>&1 &&
  podman container exists t4000-mine-$J &&
  ! grep -q "left by trainyard runs" log2
'
podman rm -f t4000-mine-$J >/dev/null 2>&1
podman rmi -f localhost/t4000/committed:$J >/dev/null 2>&1
test_expect_success 'container: a container of the user'"'"'s attached to the job'"'"'s network is left, and so is the network' '
  ctr_job at.json "exec sleep 1000" || exit 1
  "$TRAINYARD" local train ctr_at_$J --config at.json --grace-period 2 >log 2>&1 &
  pid=$!
  { wait_for 60 running_at_least ctr_at_$J 1 || { kill -KILL $pid; false; }; } &&
  net=$(podman network ls -q --filter label=trainyard.job=ctr_at_$J) && test -n "$net" &&
  podman run -d --name t4000-dbg-$J --network "$net" "$IMG" sleep 300 >/dev/null &&
  kill -INT $pid && { wait $pid || true; } &&
  podman container exists t4000-dbg-$J &&
  grep -q "the network $net is left: containers trainyard did not make are attached to it (t4000-dbg-$J)" log &&
  test -z "$(podman ps -a -q --filter label=trainyard.job=ctr_at_$J)"
'
podman rm -f t4000-dbg-$J >/dev/null 2>&1
for n in $(podman network ls -q --filter label=trainyard.job=ctr_at_$J); do podman network rm "$n" >/dev/null 2>&1; done
test_expect_success 'container: image' '
  ctr_job nx.json "true" 1 &&
  "$PYTHON" -c "import json; d=json.load(open(\"nx.json\")); d[\"trainingInput\"][\"workerConfig\"]={\"imageUri\":\"localhost/trainyard/no-such-image:1\"}; json.dump(d,open(\"nx.json\",\"w\"))" &&
  set +e; "$TRAINYARD" local train ctr_nx_$J --config nx.json >log 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "replica worker 0: image .localhost/trainyard/no-such-image:1. is not present and pulling it failed" err &&
  test -z "$(leftovers ctr_nx_$J)"
'
# Stand-in GPUs: the worker ends first, by itself; the master ends 2 s on. (The master's end
# stops whatever still runs, and a container's end is known at once, from conmon's exit file:
# a worker still printing then would lose its last line.)
if ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  test_skip 'container: gpus' "this host has NVIDIA GPUs"
else
test_expect_success 'container: gpus' '
  ctr_job gpu.json "true" 0 0 0 "{\"masterConfig\": {\"imageUri\": \"$IMG\", \"containerCommand\": [\"true\"], \"acceleratorConfig\": {\"type\": \"NVIDIA_TESLA_T4\", \"count\": \"1\"}}}" &&
  set +e; "$TRAINYARD" local train ctr_gpu_$J --config gpu.json >log 2>err; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q "trainingInput: the job needs 1 × NVIDIA_TESLA_T4 at once, and this machine has none (no NVIDIA GPU devices under /dev)" err &&
  test -z "$(leftovers ctr_gpu_$J)" &&
  S="echo got=\$NVIDIA_VISIBLE_DEVICES/\$CUDA_VISIBLE_DEVICES; ls /dev | grep -c nvidia || true" &&
  ctr_job sgpu.json "$S" 1 1 0 "{\"masterConfig\": {\"imageUri\": \"$IMG\", \"containerCommand\": [\"sh\", \"-c\", \"$S; sleep 2\"], \"acceleratorConfig\": {\"type\": \"NVIDIA_TESLA_T4\", \"count\": \"1\"}}, \"workerConfig\": {\"imageUri\": \"$IMG\", \"containerCommand\": [\"sh\", \"-c\", \"$S\"], \"acceleratorConfig\": {\"type\": \"NVIDIA_TESLA_T4\", \"count\": \"1\"}}}" &&
  TRAINYARD_GPUS=NVIDIA_TESLA_T4:2 TRAINYARD_GPU_DEVICES=stand-in \
    "$TRAINYARD" local train ctr_sgpu_$J --config sgpu.json >log 2>err &&
  grep -q "master-replica-0 *got=0/0" log &&
  grep -q "worker-replica-0 *got=1/0" log &&
  grep -q "ps-replica-0 *got=void/\$" log &&
  test "$(grep -c "replica-0 *0$" log)" = 3 &&
  grep -q "The job.s GPUs are stand-ins (no GPU device)" log &&
  test -z "$(leftovers ctr_sgpu_$J)"
'
fi
test_expect_success 'container: digits' '
  "$TY_SOURCE_DIR/examples/digits/image/build-image.sh" "$TY_BUILD_DIR" >img2.log 2>&1 &&
  "$TRAINYARD" local train ctr_digits_$J --config "$TY_SOURCE_DIR/examples/digits/config.yaml" \
    --job-dir "$TEST_DIR/djd" >log 2>&1 &&
  grep -q "master-replica-0 *final test accuracy: 0\.9[3-9]" log &&
  test -z "$(leftovers ctr_digits_$J)"
'
test_done
