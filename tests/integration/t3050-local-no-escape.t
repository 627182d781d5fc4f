#!/bin/sh
# t3050-local-no-escape: the process runtime's cgroups (docs/internals/runtime.md). Replicas
# whose children leave their process group or session (`sh -c 'sleep & sleep'`, `setsid
# sleep`) leave nothing behind after a kill -9 of `trainyard local train` or of a
# `trainyard-supervisor` (the guardian ends the job's cgroup); a replica's cgroup carries its
# machine type's CPU and memory limits; a replica killed for memory ends the job as out of
# memory, without a restart; the guardian is the program trainyard-guardian (exec'd, nothing of
# its owner), else a fork with a notice; cgroups left by a run SIGKILLed with its guardian
# (Slurm's end of a step) are swept by the next run; without cgroups (a non-root user on cgroup v1) the job still runs
# and its log says so once; `trainyard-supervisor --run-as=nobody` runs replicas as nobody.
# Needs root and cgroup v1 or a delegated v2 tree; the rest is skipped otherwise.
. "$(dirname "$0")/../lib/test-lib.sh"
cd "$TEST_DIR" || exit 1 # the set-up below writes job files here, not where the test was started

M=$RUN_ID
SUP="$TY_BUILD_DIR/bin/trainyard-supervisor"
FREEZER=/sys/fs/cgroup/freezer
MEMCG=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory:\(.*\)/\1/p' /proc/self/cgroup)

if [ "$(id -u)" != 0 ] || [ ! -d "$FREEZER" ]; then
  test_skip "cgroups: all" "needs root and a cgroup v1 freezer hierarchy"
  test_done
fi

# job FILE MASTER_ARGV_JSON [WORKER_ARGV_JSON] [MACHINE_TYPE]: a CUSTOM job, process runtime.
job() {
  "$PYTHON" - "$@" <<'PY'
import json, sys
f, master = sys.argv[1], json.loads(sys.argv[2])
worker = json.loads(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else None
mt = sys.argv[4] if len(sys.argv) > 4 else "n1-standard-4"
ti = {"scaleTier": "CUSTOM", "masterType": mt,
      "masterConfig": {"imageUri": "example.com/t:1", "containerCommand": master}}
if worker:
    ti.update({"workerType": mt, "workerCount": 1,
               "workerConfig": {"imageUri": "example.com/t:1", "containerCommand": worker}})
json.dump({"trainingInput": ti}, open(f, "w"))
PY
}
record() { json_get "$TRAINYARD_HOME/jobs/local/$1/job.json" "$2"; }
# The job's cgroups of the process PID (trainyard-PID-*) are all gone.
no_cgroups() { ! find /sys/fs/cgroup/ -maxdepth 8 -type d -name "trainyard-$1-*" | grep -q .; }
cat >"$TEST_DIR/limits.sh" <<'SH'
# print this replica's memory limit and CPU quota, and its cgroup
d=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
c=$(sed -n 's/^[0-9]*:cpu://p' /proc/self/cgroup)
echo "mem=$(cat /sys/fs/cgroup/memory$d/memory.limit_in_bytes)" \
  "cpu=$(cat /sys/fs/cgroup/cpu$c/cpu.cfs_quota_us)/$(cat /sys/fs/cgroup/cpu$c/cpu.cfs_period_us) in=$d"
SH
cat >"$TEST_DIR/hog.sh" <<'SH'
# hog.sh RUNS_FILE: count this run, then hold 400 MB in a shell variable
echo run >>"$1"
x=$(head -c 400000000 /dev/zero | tr '\0' a)
echo "${#x}"
SH
ESCAPE_MASTER='["sh", "-c", "sleep 300.'$M'1 & sleep 300.'$M'1"]'
ESCAPE_WORKER='["setsid", "sleep", "300.'$M'2"]'

test_expect_success 'kill -9 of local train: nothing of the job is left (children, setsid)' '
  job esc.json "$ESCAPE_MASTER" "$ESCAPE_WORKER" &&
  { "$TRAINYARD" local train esc --config esc.json >esc.log 2>&1 & } &&
  pid=$! && echo $pid >>owners &&
  wait_for 20 procs_at_least "sleep 300.${M}1" 2 && wait_for 20 procs_at_least "sleep 300.${M}2" 1 &&
  if no_cgroups $pid; then cg=none; else cg=some; fi &&
  kill -9 $pid &&
  test $cg = some &&
  wait_for 5 no_procs "sleep 300.$M" &&
  wait_for 5 no_cgroups $pid
'

# The guardian of a run (a child of its owner named ty-guardian) is the program
# trainyard-guardian, exec'd: it shares no memory with its owner, holds fds 0-2 on /dev/null
# and its lifeline as fd 3 and nothing else, runs in its own session outside the job's
# cgroups, in /, with an empty environment, INT/TERM/HUP/PIPE ignored and nothing caught or
# blocked. Without that program (TRAINYARD_GUARDIAN names none) it is a fork, with a notice,
# and still ends the job after a kill -9 of its owner.
guardian_of() { # guardian_of PID: the pid of PID's child named ty-guardian
  for c in $(ps -o pid= --ppid "$1"); do
    test "$(cat /proc/$c/comm 2>/dev/null)" = ty-guardian && echo "$c" && return 0
  done
  return 1
}
# sigs PID FIELD: the standard signals (1-31) of a Sig* mask of /proc/PID/status, as a number
# (glibc's own 32 and 33, which its posix_spawn leaves ignored, are its business)
sigs() { echo $((0x$(sed -n "s/^$2:[[:space:]]*//p" /proc/$1/status) & 0x7fffffff)); }
# exited PID: PID is gone, or a zombie (its new parent may be slow to reap it)
exited() { st=$(sed -n "s/^State:[[:space:]]*\(.\).*/\1/p" /proc/$1/status 2>/dev/null); test -z "$st" || test "$st" = Z; }
job gone.json '["sleep", "300.'$M'3"]'

# exec_guardian PID: the checks above, on the guardian of PID (an ASan build's own handlers of
# SIGBUS, SIGFPE and SIGSEGV aside)
exec_guardian() {
  g=$(guardian_of "$1") &&
  test "$(readlink /proc/$g/exe)" = "$(readlink -f "$TY_BUILD_DIR/bin/trainyard-guardian")" &&
  test "$(ps -o sid= -p $g | tr -d " ")" = "$g" &&
  test "$(readlink /proc/$g/cwd)" = / &&
  test "$(wc -c </proc/$g/environ)" = 0 &&
  test "$(ls /proc/$g/fd | sort -n | tr "\n" " ")" = "0 1 2 3 " &&
  test "$(readlink /proc/$g/fd/0)" = /dev/null && test "$(readlink /proc/$g/fd/2)" = /dev/null &&
  readlink /proc/$g/fd/3 | grep -q "^pipe:" &&
  ! grep -q trainyard- /proc/$g/cgroup &&
  test "$(sigs $g SigIgn)" = $((0x5003)) &&
  test $(($(sigs $g SigCgt) & ~0x4c0)) = 0 &&
  test "$(sigs $g SigBlk)" = 0
}

test_expect_success 'the guardian is trainyard-guardian, exec d, with nothing of its owner' '
  { "$TRAINYARD" local train gone --config gone.json >gone.log 2>&1 & } &&
  pid=$! && echo $pid >>owners &&
  wait_for 20 procs_at_least "sleep 300.${M}3" 1 &&
  if exec_guardian $pid; then r=0; else r=1; fi &&
  kill -9 $pid &&
  wait_for 5 no_procs "sleep 300.${M}3" &&
  wait_for 5 no_cgroups $pid &&
  wait_for 5 exited $g &&
  test $r = 0
'

test_expect_success 'without the guardian program: a forked guardian, a notice, nothing left' '
  { TRAINYARD_GUARDIAN=/nonexistent/trainyard-guardian \
      "$TRAINYARD" local train fork --config gone.json >fork.log 2>&1 & } &&
  pid=$! && echo $pid >>owners &&
  wait_for 20 procs_at_least "sleep 300.${M}3" 1 &&
  g=$(guardian_of $pid) &&
  test "$(readlink /proc/$g/exe)" = "$(readlink /proc/$pid/exe)" &&
  test "$(ps -o sid= -p $g | tr -d " ")" = "$g" &&
  ! grep -q trainyard- /proc/$g/cgroup &&
  kill -9 $pid &&
  wait_for 5 no_procs "sleep 300.${M}3" &&
  wait_for 5 no_cgroups $pid &&
  cat fork.log &&
  grep -q "guardian is a fork of this process: /nonexistent/trainyard-guardian cannot be run" fork.log
'

# Slurm ends a step after KillWait by SIGKILLing every process in it at once: the owner,
# its guardian and the replicas. Their cgroups stay behind, empty; the next run beside them
# removes them once they are a minute old (here made older with touch).
job swept.json '["sleep", "300.'$M'5"]'
job quick.json '["true"]'
# cgroup_pids PID: the processes in the job cgroups of owner PID
cgroup_pids() { find $FREEZER -path "*/trainyard-$1-*" -name cgroup.procs -exec cat {} + 2>/dev/null; }
test_expect_success 'cgroups left by a run SIGKILLed with its guardian are swept by the next' '
  { "$TRAINYARD" local train swept --config swept.json >swept.log 2>&1 & } &&
  pid=$! && echo $pid >>owners &&
  wait_for 20 procs_at_least "sleep 300.${M}5" 1 && g=$(guardian_of $pid) &&
  kill -9 $pid $g && for p in $(cgroup_pids $pid); do kill -9 $p; done &&
  wait_for 5 exited $g && wait_for 5 no_procs "sleep 300.${M}5" &&
  ! no_cgroups $pid &&
  find /sys/fs/cgroup/ -maxdepth 8 -type d -name "trainyard-$pid-*" -exec touch -d "2 minutes ago" {} + &&
  "$TRAINYARD" local train quick --config quick.json >quick.log 2>&1 &&
  no_cgroups $pid &&
  grep -q "Removed [0-9]* empty cgroup(s) left by trainyard runs that no longer exist." \
    "$TRAINYARD_HOME/jobs/local/quick/logs/service.log"
'

test_expect_success 'a guardian program that does not understand its arguments is named' '
  printf "#!/bin/sh\nexit 2\n" >old-guardian && chmod +x old-guardian &&
  job quick.json "[\"true\"]" &&
  TRAINYARD_GUARDIAN="$PWD/old-guardian" "$TRAINYARD" local train old --config quick.json >old.log 2>&1 &&
  cat old.log &&
  grep -q "guardian $PWD/old-guardian exited with status 2 (it did not understand its arguments" old.log
'

# Service state directories with jobs created by a daemon that runs none of them; the
# supervisor is then run here, directly, as trainyardd would run it. The job killed with its
# supervisor is alone in its directory (svc): no daemon starts there again, to run it anew.
create() { # create JOB_ID FILE: POST it to project p1 of the daemon at $BASE
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["jobId"]=sys.argv[2]; json.dump(d, open(sys.argv[1],"w"))' "$2" "$1" &&
  test "$(curl -s -o /dev/null -w "%{http_code}" -X POST -H "Content-Type: application/json" --data-binary "@$2" "$BASE/v1/projects/p1/jobs")" = 200
}
job sesc.json "$ESCAPE_MASTER" "$ESCAPE_WORKER"
job whoami.json '["sh", "-c", "echo uid=$(id -u) gid=$(id -g) home=$HOME user=$USER; touch /tmp/t3050-'$M'-root-only 2>/dev/null && echo could-write || echo cannot-write; exit 0"]'
job nouser.json '["true"]'
trainyardd_start svc --max-running-jobs=0 && BASE=$TYD_URL && create sesc sesc.json # seq 1
trainyardd_stop svc
trainyardd_start svcb --max-running-jobs=0 && BASE=$TYD_URL &&
  create whoami whoami.json && create nouser nouser.json # seq 1, 2
trainyardd_stop svcb
touch "/tmp/t3050-$M-root-only" && chmod 644 "/tmp/t3050-$M-root-only"

test_expect_success 'kill -9 of a trainyard-supervisor: nothing of the job is left' '
  { "$SUP" supervise-job "$TEST_DIR/svc" 1 1000000 >sup1.log 2>&1 & } &&
  pid=$! && echo $pid >>owners &&
  wait_for 20 procs_at_least "sleep 300.${M}1" 2 && wait_for 20 procs_at_least "sleep 300.${M}2" 1 &&
  kill -9 $pid &&
  wait_for 5 no_procs "sleep 300.$M" &&
  wait_for 5 no_cgroups $pid
'

test_expect_success 'supervise-job --run-as=nobody runs the replica as nobody (uid 65534)' '
  "$SUP" supervise-job --run-as=nobody "$TEST_DIR/svcb" 1 1000000 >sup2.log 2>&1 &&
  logs=$(find "$TEST_DIR/svcb" -path "*whoami*" -name "*.log" -o -path "*whoami*" -name "*.jsonl" | tr "\n" " ") &&
  cat $logs >whoami.out && cat whoami.out &&
  grep -q "uid=65534 gid=65534 home=/nonexistent user=nobody" whoami.out &&
  grep -q cannot-write whoami.out
'

test_expect_success 'supervise-job --run-as with an unknown user fails the job, naming the user' '
  "$SUP" supervise-job --run-as=no-such-user-t3050 "$TEST_DIR/svcb" 2 1000000 >sup3.log 2>&1 || true
  trainyardd_start svc2 --max-running-jobs=0 --state-dir "$TEST_DIR/svcb" &&
  curl -s "$TYD_URL/v1/projects/p1/jobs/whoami" >whoami.json.out &&
  curl -s "$TYD_URL/v1/projects/p1/jobs/nouser" >nouser.json.out &&
  trainyardd_stop svc2 &&
  test "$(json_get whoami.json.out "d[\"state\"]")" = SUCCEEDED &&
  test "$(json_get nouser.json.out "d[\"state\"]")" = FAILED &&
  json_get nouser.json.out "d[\"errorMessage\"]" | grep -q "user .no-such-user-t3050.*no such user"
'

test_expect_success 'a replica runs with its machine type limits (n1-standard-4: 4 CPUs, 15 GiB)' '
  job lim.json "[\"sh\", \"$TEST_DIR/limits.sh\"]" &&
  "$TRAINYARD" local train lim --config lim.json >lim.log 2>&1 &&
  cat lim.log &&
  grep -q "mem=$((15360 * 1024 * 1024)) cpu=400000/100000 in=.*/trainyard-[0-9]*-[0-9a-f]*/master-replica-0" lim.log
'

test_expect_success 'a replica killed for memory ends the job as out of memory, not restarted' '
  test -d "$MEMCG" &&
  job oom.json "[\"sh\", \"$TEST_DIR/hog.sh\", \"$TEST_DIR/oom.runs\"]" &&
  box="$MEMCG/t3050-$M" && mkdir "$box" &&
  echo 128M >"$box/memory.limit_in_bytes" &&
  { ! test -e "$box/memory.memsw.limit_in_bytes" || echo 128M >"$box/memory.memsw.limit_in_bytes"; } &&
  set +e; sh -c "echo \$\$ >$box/cgroup.procs && exec \"$TRAINYARD\" local train oom --config oom.json" >oom.log 2>&1; rc=$?; set -e
  rmdir "$box"; cat oom.log
  test $rc = 1 &&
  test "$(record oom "d[\"state\"]")" = FAILED &&
  test "$(record oom "d[\"errorMessage\"]")" = "The replica master 0 ran out of memory and exited with a non-zero status of 137." &&
  test "$(wc -l <oom.runs)" = 1
'

test_expect_success 'without cgroups (non-root on v1) the job runs and its log says so once' '
  nb=/tmp/t3050-$M-nobody && mkdir -m 777 $nb &&
  job $nb/nb.json "[\"sh\", \"-c\", \"sleep 0.3; echo done-$M\"]" "[\"sh\", \"-c\", \"sleep 60\"]" &&
  chmod 644 $nb/nb.json &&
  # A copy nobody may run: the build may lie in a directory only root can enter.
  cp "$TRAINYARD" $nb/trainyard && chmod 755 $nb/trainyard &&
  set +e; (cd $nb && setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=$nb TRAINYARD_HOME=$nb/state $nb/trainyard local train nb --config nb.json) >nb.log 2>&1; rc=$?; set -e
  rm -rf $nb; cat nb.log
  test $rc = 0 &&
  grep -q done-$M nb.log &&
  test "$(grep -c "run without a cgroup of their own (cannot make cgroup" nb.log)" = 1
'
rm -f "/tmp/t3050-$M-root-only"
# What a failure left (without cgroups, what the kill -9 tests show surviving): the owners this
# script started, then the processes with its marker, by pid.
for p in $(cat "$TEST_DIR/owners" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
ps -eo pid=,args= | grep -F "sleep 300.$M" | grep -v -F grep | while read -r p _; do
  kill -9 "$p" 2>/dev/null || true
done

test_done
