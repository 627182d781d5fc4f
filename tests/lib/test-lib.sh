# SPDX-License-Identifier: Apache-2.0
# test-lib.sh: a small sharness-style TAP library for the integration tests.
# Source it from a test script (tests/integration/tNNNN-topic.t), then:
#   test_expect_success "description" 'shell commands'
#   test_done
# Each test runs in a subshell with `set -e`; its output goes to the log, shown on failure.
# Environment: TY_BUILD_DIR (meson build dir), TY_SOURCE_DIR (source tree). Every test script
# gets a fresh scratch directory $TEST_DIR (removed at the end when all tests passed) and a
# private TRAINYARD_HOME inside it.

: "${TY_SOURCE_DIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${TY_BUILD_DIR:=$TY_SOURCE_DIR/build}"
TRAINYARD="$TY_BUILD_DIR/bin/trainyard"
DIGITS="$TY_BUILD_DIR/examples/digits/digits"
TEST_DIR=$(mktemp -d /tmp/trainyard-it.XXXXXX)
export TRAINYARD_HOME="$TEST_DIR/state"
export PATH="$TY_BUILD_DIR/bin:$TY_BUILD_DIR/examples/digits:$PATH"
# Debian's interpreter first: a version-manager shim on PATH can cost a second per start.
if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=$(command -v python3); fi
# RUN_ID: this script's PID in 7 digits, a marker unique to the run (M=$RUN_ID in the scripts,
# put into replicas' command lines). Scripts run concurrently (scripts/run-tests.sh): a bare
# PID could be the start of another run's (123 of 1234), so that `no_procs "sleep 900.$M"`
# would count the other run's processes; PIDs of 7 digits cannot.
RUN_ID=$(printf '%07d' $$)
test_count=0
test_failed=0

# Usage: test_expect_success DESCRIPTION BODY   (after its result line, a comment with the
# seconds it took: what to look at when a script is slow)
test_expect_success() {
  test_count=$((test_count + 1))
  local out="$TEST_DIR/test-$test_count.out" t0 ms
  t0=$(date +%s%N)
  if (cd "$TEST_DIR" && set -e && eval "$2") >"$out" 2>&1; then
    echo "ok $test_count - $1"
  else
    test_failed=$((test_failed + 1))
    echo "not ok $test_count - $1"
    sed 's/^/#   /' "$out"
  fi
  ms=$((($(date +%s%N) - t0) / 1000000))
  printf '# %d.%03d s\n' $((ms / 1000)) $((ms % 1000))
}

# Usage: test_skip DESCRIPTION REASON
test_skip() {
  test_count=$((test_count + 1))
  echo "ok $test_count - $1 # SKIP $2"
}

# Usage: umount_scratch   detach the mounts under $TEST_DIR (a root trainyardd with the
# container runtime makes its state directory and --job-dir-roots nosuid,nodev mounts that
# outlive it), deepest first, so that the directory can be removed
umount_scratch() {
  local pass=0 left
  [ "$(id -u)" -eq 0 ] || return 0
  # (a mount may lie under another one at the same path: as many passes as it takes)
  while left=$(awk -v d="$TEST_DIR/" 'index($5 "/", d) == 1 { print $5 }' /proc/self/mountinfo) &&
        [ -n "$left" ] && [ $pass -lt 10 ]; do
    echo "$left" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || :; done
    pass=$((pass + 1))
  done
}

# Usage: test_done  (prints the plan; exits 1 if any test failed)
test_done() {
  echo "1..$test_count"
  umount_scratch
  if [ "$test_failed" -eq 0 ]; then
    rm -rf "$TEST_DIR"
    exit 0
  fi
  echo "# scratch directory kept: $TEST_DIR"
  exit 1
}

# Usage: wait_for SECONDS COMMAND...   retry COMMAND every 0.1 s until it succeeds, at most
# SECONDS; returns 1 on timeout.
wait_for() {
  local limit=$1; shift
  local i=0 max=$((limit * 10))
  while ! "$@" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -ge $max ]; then return 1; fi
    sleep 0.1
  done
}

# Usage: count_procs MARKER   number of processes whose command line contains MARKER
count_procs() {
  ps -eo args= | grep -F -- "$1" | grep -v -F -e "grep -F" -c || true
}

# Usage: procs_at_least MARKER N   succeeds when at least N processes have MARKER
procs_at_least() {
  [ "$(count_procs "$1")" -ge "$2" ]
}

# Usage: no_procs MARKER   succeeds when no process has MARKER in its command line
no_procs() {
  [ "$(count_procs "$1")" -eq 0 ]
}

# Usage: json_get FILE PYTHON_EXPR   evaluate EXPR with `d` bound to the parsed JSON file
json_get() {
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# Usage: write_job FILE MASTER_SH [WORKERS] [PS] [EVALUATORS] [EXTRA_TRAINING_INPUT_JSON]
# A CUSTOM job whose every role runs `sh -c MASTER_SH` (the script sees $CLUSTER_SPEC etc.),
# in the image $JOB_IMAGE (default example.com/test:1, which the process runtime only records).
write_job() {
  local file=$1 script=$2 w=${3:-0} p=${4:-0} e=${5:-0} extra=${6:-}
  "$PYTHON" - "$file" "$script" "$w" "$p" "$e" "$extra" "${JOB_IMAGE:-example.com/test:1}" <<'PY'
import json, sys
f, script, w, p, e, extra, image = sys.argv[1:]
ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
      "masterConfig": {"imageUri": image, "containerCommand": ["sh", "-c", script]}}
for role, n in (("worker", w), ("parameterServer", p), ("evaluator", e)):
    if int(n):
        ti[role + "Type"] = "n1-standard-4"
        ti[role + "Count"] = n
if extra:
    ti.update(json.loads(extra))
json.dump({"trainingInput": ti}, open(f, "w"))
PY
}

# Usage: require_testbox PREFIX TEST_NAME...   make the container engine usable and the
# testbox image present; when that is impossible, skip the named tests (as "PREFIX: NAME")
# saying why, and end the script.
require_testbox() {
  local prefix=$1 ok=yes reason t; shift
  if [ -x "$TY_SOURCE_DIR/scripts/setup-podman.sh" ]; then
    "$TY_SOURCE_DIR/scripts/setup-podman.sh" >"$TEST_DIR/setup.log" 2>&1 || ok=no
  else
    podman info >/dev/null 2>&1 || ok=no
  fi
  if [ $ok = yes ]; then
    "$TY_SOURCE_DIR/tests/integration/images/build-testbox.sh" >"$TEST_DIR/img.log" 2>&1 || ok=no
  fi
  [ $ok = yes ] && return 0
  reason=$(tail -1 "$TEST_DIR/setup.log" 2>/dev/null)
  for t in "$@"; do test_skip "$prefix: $t" "no container engine: $reason"; done
  test_done
}

# Usage: trainyardd_start NAME [ARGS...]   start trainyardd on a free loopback port with state
# in $TEST_DIR/NAME and its log in $TEST_DIR/NAME.log; sets TYD_URL (http://127.0.0.1:PORT)
# and TYD_PID, and writes the pid to $TEST_DIR/NAME.pid. Call it at the top level of a test
# script (tests run in subshells, whose variables are lost), so the daemon is the script's
# child and `wait $TYD_PID` gives its exit status. Returns 1 when it does not start.
# As root it passes --allow-root-jobs (the tests' jobs run as root, as they always did),
# unless TYD_ALLOW_ROOT_JOBS=no (for the tests of who runs what, t5060).
trainyardd_start() {
  local name=$1 log port root_jobs=; shift
  log="$TEST_DIR/$name.log"
  if [ "$(id -u)" -eq 0 ] && [ "${TYD_ALLOW_ROOT_JOBS:-yes}" != no ]; then
    root_jobs=--allow-root-jobs
  fi
  "$TY_BUILD_DIR/bin/trainyardd" --listen 127.0.0.1:0 --state-dir "$TEST_DIR/$name" \
    --grace-period 1 $root_jobs "$@" >>"$log" 2>&1 &
  TYD_PID=$!
  echo "$TYD_PID" >"$TEST_DIR/$name.pid"
  wait_for 20 grep -q "listening on" "$log" || return 1
  port=$(grep "listening on" "$log" | tail -1 | sed 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/')
  TYD_URL="http://127.0.0.1:$port"
}

# Usage: trainyardd_stop NAME   SIGTERM to the daemon started as NAME; waits until it is gone.
trainyardd_stop() {
  local pid
  pid=$(cat "$TEST_DIR/$1.pid" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  wait_for 20 sh -c "! kill -0 $pid" || kill -KILL "$pid" 2>/dev/null || true
}
