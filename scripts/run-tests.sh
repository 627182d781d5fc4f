#!/usr/bin/env bash
# run-tests.sh: run every test of trainyard and print one summary line "N passed, N failed".
#   1. unit and integration tests against the normal build
#   2. the same against an AddressSanitizer + UBSan build
#   3. a short libFuzzer run of every fuzz target (clang)
#   4. the house style a machine can check (scripts/check-style.sh: formatting, banned
#      functions, no sleep in src/lib)
# Each test program speaks TAP; every "ok"/"not ok" line counts as one test. A program that
# exits non-zero without a failing TAP line counts as one failure. Output of failing programs
# is shown in full; passing ones print one line.
#
# The programs run JOBS at a time (--jobs, default 2), each with its output in its own log;
# the report is printed in a fixed order (the order above), whatever order they ran in. The
# ASan build, then the (niced) fuzz build, run in the background while the normal build's
# tests run; their programs start once their build is done. Programs that share something
# machine-wide never overlap (docs/internals/testing.md, "Running concurrently"): each script
# holds the locks that locks_of() gives it, Podman's and Slurm's also against other runs of
# this script on the machine (flock). The Podman chain starts first (it is the longest).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

BUILD=build ASAN_BUILD=build-asan FUZZ_BUILD=build-fuzz FUZZ_SECONDS=10
JOBS=${TY_TEST_JOBS:-2}
# The longest a test program may run (the longest takes about 90 s on 2 loaded cores).
PROGRAM_TIMEOUT=${TY_TEST_TIMEOUT:-900}
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --asan-build) ASAN_BUILD=$2; shift 2 ;;
    --fuzz-build) FUZZ_BUILD=$2; shift 2 ;;
    --fuzz-seconds) FUZZ_SECONDS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    *) echo "run-tests: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$JOBS" in '' | *[!0-9]* | 0) echo "run-tests: --jobs: expected a number from 1 (got '$JOBS')" >&2; exit 2 ;; esac

# Integration scripts not run again under the sanitizers: their time goes to the examples'
# own training (PyTorch) or to network namespaces, while the C code they drive is the same
# as in scripts that do run there (t3020/t4000/t4030 for the runtimes, t7010 for slurm).
# t4040's restarts run under the sanitizers in test-container-engine (the fake engine) and
# t3040 (the supervisor's side); its time goes to Podman removing and creating containers.
# t3050's time goes to killing process trees and waiting for cgroups to empty (the cgroup code
# runs under the sanitizers in test-cgroup); t5080's to mounting, filling and checking small
# filesystems (the store's and logs' error paths run there in test-store-ioerr and
# test-logs-full); t5090's to the kill loop's store locks and restarts (the daemon's paths are
# t5000's and t5050's).
# t4050's init (HostConfig.Init) is in every create body of t4000, and its fallback in
# test-container-engine; its time goes to Podman. t0110 tests this script (no C code).
# t5120's and t5130's time goes to Chromium drawing the dashboard; the daemon's code they
# drive (its files, /v1/projects, transitions, replicas) runs under the sanitizers in t5000,
# t5070 and test-route.
ASAN_SKIP=" t0110-run-tests.t t3030-pytorch.t t4020-container-pytorch.t t4040-container-restarts.t t4050-container-init.t"
ASAN_SKIP="$ASAN_SKIP t7020-slurm-netns.t t3050-local-no-escape.t t5080-service-disk-full.t t5090-service-kill-loop.t"
ASAN_SKIP="$ASAN_SKIP t5120-dashboard.t t5130-dashboard-tuning.t "

# locks_of SCRIPT: what the integration script shares machine-wide, one lock each. Podman's
# containers, networks, images and service (t4*, t5020, t7010's replicas in images); the
# simulated Slurm clusters' checks that no launcher, slurmstepd or Slurm job is left (t7*,
# t5040); and the script itself, never run in both builds at once (its fixed names: markers,
# job ids, /tmp files). The browser tests (t5120, t5130) one at a time: a Chromium each is
# most of the machine's CPU.
locks_of() {
  local t=$1 l="script:$1"
  case "$t" in t4*.t | t5020-*.t | t7010-*.t) l="$l podman" ;; esac
  case "$t" in t5120-*.t | t5130-*.t) l="$l browser" ;; esac
  case "$t" in t7*.t | t5040-*.t) l="$l slurm" ;; esac
  echo "$l"
}

passed=0 failed=0 skipped=0
failures=() not_ok=()
logdir=$(mktemp -d /tmp/trainyard-tests.XXXXXX)
mkdir -p "$logdir/res"
t_start=$(date +%s%N)
busy_total=0 # milliseconds the programs ran, summed

# ---- the jobs ---------------------------------------------------------------------------
# A job is one program (or a build), id 0, 1, ... J_KIND: tap (a TAP executable or script),
# fuzz, style, build, skip (only a line in the report). J_GATE: the build it waits for ("" or
# the section's build name). J_PRIO: higher starts first.
J_NAME=() J_KIND=() J_CMD=() J_BUILD=() J_ASAN=() J_LOCKS=() J_STATE=() J_GATE=() J_PRIO=()
# Sections of the report, printed in order; a section's jobs are known once its build is done.
S_TITLE=() S_JOBS=() S_OPEN=()
declare -A GATE=()     # build name -> pending, ok, failed
declare -A HELD=()     # lock -> job id holding it
declare -A PID_JOB=()  # pid -> job id
running=0
# The locks another run of this script on the same machine (another checkout, another user of
# it) must respect too: held with flock on a file in LOCKDIR (TY_TEST_LOCKDIR: for the test of
# this script), by this script's own process.
MACHINE_LOCKS=" podman slurm "
LOCKDIR=${TY_TEST_LOCKDIR:-/run/lock}
[ -d "$LOCKDIR" ] && [ -w "$LOCKDIR" ] || LOCKDIR=${TMPDIR:-/tmp}
declare -A LOCK_FD=()  # machine-wide lock held -> its file descriptor
declare -A TOLD=()     # machine-wide lock another run held, said once
ext_wait=0 timer=      # a job waits for another run's lock: wake up every 2 s (timer: sleep's pid)

# add_job SECTION NAME KIND CMD BUILD ASAN GATE LOCKS PRIO
add_job() {
  local id=${#J_NAME[@]}
  J_NAME[id]=$2 J_KIND[id]=$3 J_CMD[id]=$4 J_BUILD[id]=$5 J_ASAN[id]=$6 J_GATE[id]=$7
  J_LOCKS[id]=$8 J_PRIO[id]=$9 J_STATE[id]=wait
  [ "$3" = skip ] && J_STATE[id]=ended
  S_JOBS[$1]="${S_JOBS[$1]:-} $id"
}

# add_suite SECTION BUILD LABEL ASAN GATE: the unit tests of BUILD, then every integration
# script. What starts first: the Podman scripts (one after the other, the longest chain: it
# decides when the run ends), then the Slurm ones, then the other scripts, then unit tests
# (short: they fill the gaps at the end); the report's order among equals.
add_suite() {
  local sec=$1 build=$2 label=$3 asan=$4 gate=$5 t b locks prio
  for t in "$build"/tests/test-*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    add_job "$sec" "$label unit/$(basename "$t")" tap "$t" "$build" "$asan" "$gate" "" 0
  done
  for t in tests/integration/t*.t; do
    [ -f "$t" ] || continue
    b=$(basename "$t")
    case "$label:$ASAN_SKIP" in
      asan:*" $b "*) add_job "$sec" "$label $b (see ASAN_SKIP)" skip "" "" 0 "" "" 0; continue ;;
    esac
    locks=$(locks_of "$b") prio=10
    case "$locks" in *browser*) prio=15 ;; esac
    case "$locks" in *slurm*) prio=20 ;; esac
    case "$locks" in *podman*) prio=30 ;; esac
    add_job "$sec" "$label $b" tap "sh $t" "$build" "$asan" "$gate" "$locks" "$prio"
  done
}

# add_fuzz SECTION: one job per fuzz target of FUZZ_BUILD.
add_fuzz() {
  local f
  for f in "$FUZZ_BUILD"/fuzz/fuzz-*; do
    [ -x "$f" ] && [ -f "$f" ] || continue
    add_job "$1" "fuzz/$(basename "$f")" fuzz "$f" "" 0 "" "" 5
  done
}

# ---- running one job (in a background subshell) ------------------------------------------

# build_tree NAME: configure (on first use) and build the ASan or fuzz tree (of the latter, its
# fuzz targets alone). The ASan build gates half of the Podman chain: it runs at full
# priority. The fuzz build (its programs are short) is niced, to take the time the tests
# leave free.
build_tree() {
  case "$1" in
    asan)
      if [ ! -f "$ASAN_BUILD/build.ninja" ]; then
        meson setup "$ASAN_BUILD" -Db_sanitize=address,undefined -Db_lundef=false \
          -Dbuildtype=debug || return 1
      fi
      ninja -C "$ASAN_BUILD"
      ;;
    fuzz)
      if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
        # fuzzer-no-link instruments the library too, so coverage guides the search through it.
        CC=clang meson setup "$FUZZ_BUILD" -Dfuzz=true -Db_lundef=false \
          -Db_sanitize=address,undefined -Dc_args=-fsanitize=fuzzer-no-link || return 1
      fi
      # Only the fuzz targets (and what they link): the tree's programs and unit tests are
      # not run from it, and building them too took more than half of its time. A tree that
      # names none builds what it builds by default.
      local targets
      targets=$(ninja -C "$FUZZ_BUILD" -t targets all | sed -n 's|^\(fuzz/fuzz-[A-Za-z0-9_-]*\): .*|\1|p')
      nice -n 10 ninja -C "$FUZZ_BUILD" $targets
      ;;
  esac
}

# fuzz_one TARGET: run TARGET for FUZZ_SECONDS on its corpus (new inputs to a scratch dir).
fuzz_one() {
  local f=$1 name corpus work dict=()
  name=$(basename "$f") corpus="fuzz/corpus/${name#fuzz-}"
  if [ -f "fuzz/${name#fuzz-}.dict" ]; then dict=(-dict="fuzz/${name#fuzz-}.dict"); fi
  work=$(mktemp -d "$logdir/corpus.XXXXXX")
  "$f" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "${dict[@]}" -artifact_prefix="$logdir/$name-" "$work" "$corpus"
}

# watch_program CMD...: run CMD in a process group of its own and return its status; past
# PROGRAM_TIMEOUT seconds it is a failure: a "not ok" line names the limit, the group gets
# SIGTERM (the scripts' traps clean up what they started) and, 10 s later, SIGKILL. A test
# that hangs (a wait on a job that never ends) so costs one failure, not CI's whole time.
# This job's own SIGTERM (stop_all) is passed on to the group.
watch_program() {
  local tpid wpid trc
  set -m
  "$@" &
  tpid=$!
  {
    sleep "$PROGRAM_TIMEOUT"
    echo "not ok 9999 - run-tests: still running after ${PROGRAM_TIMEOUT}s (TY_TEST_TIMEOUT): ended"
    kill -TERM -- "-$tpid" 2>/dev/null
    sleep 10
    kill -KILL -- "-$tpid" 2>/dev/null
  } &
  wpid=$!
  set +m
  trap 'kill -TERM -- "-$tpid" 2>/dev/null' TERM
  wait "$tpid"
  trc=$?
  while kill -0 "$tpid" 2>/dev/null; do wait "$tpid"; trc=$?; done # a trap ran mid-wait
  trap - TERM
  kill -- "-$wpid" 2>/dev/null
  return "$trc"
}

# run_job ID (in the background): run the job, then write what the report needs (here, in
# parallel, not in the loop that starts the next jobs) to res/ID: exit status, start and end
# (ns), CPU seconds, its TAP counts (passed, skipped, failed) and a fuzzer's executions.
run_job() {
  local id=$1 start rc fd log="$logdir/$1.log"
  # the locks stay with this script's process, not with the tests' daemons
  for fd in "${LOCK_FD[@]}"; do exec {fd}>&-; done
  start=$(date +%s%N)
  case "${J_KIND[id]}" in
    tap)
      if [ "${J_ASAN[id]}" = 1 ]; then
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
        export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
      fi
      # shellcheck disable=SC2086 # "sh SCRIPT" or a path
      # TY_ARTIFACT_DIR: what a test keeps (the browser tests' screenshots), in the log dir
      TY_BUILD_DIR="$(abspath "${J_BUILD[id]}")" TY_SOURCE_DIR="$PWD" \
        TY_ARTIFACT_DIR="$logdir/artifacts/$id" watch_program ${J_CMD[id]} </dev/null
      ;;
    fuzz) fuzz_one "${J_CMD[id]}" </dev/null ;;
    style) scripts/check-style.sh </dev/null ;;
    build) build_tree "${J_CMD[id]}" </dev/null ;;
  esac >"$log" 2>&1
  rc=$?
  # the CPU seconds of the job's processes (those it waited for), for times.txt: `times` in
  # this shell (in a pipe or $(...) it would be a child's, with no children)
  times >"$logdir/res/$id.cpu"
  echo "$rc $start $(date +%s%N) $(tail -1 "$logdir/res/$id.cpu" | awk '{ gsub(/[ms]/, " "); printf "%.1f", $1 * 60 + $2 + $3 * 60 + $4 }') $(
    awk '/^ok [0-9]+/ { p++; if (/# *(SKIP|skip)/) s++ } /^not ok [0-9]+/ { f++ }
         /stat::number_of_executed_units: [0-9]+/ { x = $NF }
         END { print p - s, s + 0, f + 0, x + 0 }' "$log")" >"$logdir/res/$id.tmp"
  mv "$logdir/res/$id.tmp" "$logdir/res/$id"
}

# ---- scheduling -------------------------------------------------------------------------

# ready ID: the job may start now (its build done, its locks free).
ready() {
  local id=$1 l
  [ "${J_STATE[id]}" = wait ] || return 1
  if [ -n "${J_GATE[id]}" ] && [ "${GATE[${J_GATE[id]}]}" != ok ]; then return 1; fi
  for l in ${J_LOCKS[id]}; do [ -z "${HELD[$l]:-}" ] || return 1; done
}

# take_machine ID: take the machine-wide locks of the job without waiting; false (holding none
# of them) when another run holds one.
take_machine() {
  local id=$1 l t fd f taken=
  for l in ${J_LOCKS[id]}; do
    case "$MACHINE_LOCKS" in *" $l "*) ;; *) continue ;; esac
    f="$LOCKDIR/trainyard-tests-$l.lock"
    [ -e "$f" ] || (umask 0 && : >>"$f") 2>/dev/null # every user's runs lock it
    # a lock file this user cannot read: this run's own lock only
    { exec {fd}<"$f"; } 2>/dev/null || continue
    if ! flock -n "$fd"; then
      exec {fd}>&-
      for t in $taken; do drop_machine "$t"; done
      return 1
    fi
    LOCK_FD[$l]=$fd taken="$taken $l"
  done
}

drop_machine() {
  local fd=${LOCK_FD[$1]:-}
  [ -n "$fd" ] || return 0
  exec {fd}>&-
  unset "LOCK_FD[$1]"
}

start_job() {
  local id=$1 l
  for l in ${J_LOCKS[id]}; do HELD[$l]=$id; done
  J_STATE[id]=run
  run_job "$id" &
  PID_JOB[$!]=$id
  # builds run beside the tests: they do not take a place of JOBS
  [ "${J_KIND[id]}" = build ] || running=$((running + 1))
}

# schedule: start the ready jobs of highest priority (the first of equals) while places are
# free; a job whose machine-wide lock another run holds is passed over (ext_wait=1) this time.
schedule() {
  local id best l
  local -A over=() # passed over this time
  ext_wait=0
  while [ "$running" -lt "$JOBS" ]; do
    best=
    for ((id = 0; id < ${#J_NAME[@]}; id++)); do
      [ "${J_KIND[id]}" = build ] && continue
      [ -z "${over[$id]:-}" ] && ready "$id" || continue
      if [ -z "$best" ] || [ "${J_PRIO[id]}" -gt "${J_PRIO[best]}" ]; then best=$id; fi
    done
    [ -n "$best" ] || return 0
    if take_machine "$best"; then
      start_job "$best"
      continue
    fi
    over[$best]=1 ext_wait=1
    for l in ${J_LOCKS[best]}; do
      case "$MACHINE_LOCKS" in *" $l "*) ;; *) continue ;; esac
      if [ -z "${TOLD[$l]:-}" ] && [ -z "${LOCK_FD[$l]:-}" ]; then
        echo "run-tests: another run holds $LOCKDIR/trainyard-tests-$l.lock: its $l scripts wait" >&2
        TOLD[$l]=1
      fi
    done
  done
}

# finish PID: the job of PID ended: free its locks; a build opens its section's programs.
finish() {
  local id=${PID_JOB[$1]} l rc
  unset "PID_JOB[$1]"
  J_STATE[id]=ended
  for l in ${J_LOCKS[id]}; do unset "HELD[$l]"; drop_machine "$l"; done
  if [ "${J_KIND[id]}" != build ]; then
    running=$((running - 1))
    return
  fi
  rc=1
  [ -f "$logdir/res/$id" ] && read -r rc _ <"$logdir/res/$id"
  case "${J_CMD[id]}" in
    asan)
      if [ "$rc" = 0 ]; then GATE[asan]=ok; add_suite 1 "$ASAN_BUILD" asan 1 asan; else GATE[asan]=failed; fi
      S_OPEN[1]=0
      start_job "$FUZZ_JOB" # one build at a time: they compete for the same cores
      ;;
    fuzz)
      if [ "$rc" = 0 ]; then GATE[fuzz]=ok; add_fuzz 2; else GATE[fuzz]=failed; fi
      S_OPEN[2]=0
      ;;
  esac
}

# ---- the report -------------------------------------------------------------------------

# tenths VAR MS: VAR = MS milliseconds as seconds with one decimal (no fork: the report is
# printed by the loop that starts the jobs).
tenths() { printf -v "$1" '%d.%d' $(($2 / 1000)) $(($2 % 1000 / 100)); }

# report ID: the job's line(s), counted.
report() {
  local id=$1 log="$logdir/$1.log" rc=1 t0=$t_start t1=$t_start cpu=0 p=0 s=0 f=0 x=0
  local secs from to skips=
  if [ -f "$logdir/res/$id" ]; then read -r rc t0 t1 cpu p s f x <"$logdir/res/$id"; fi
  tenths secs $(((t1 - t0) / 1000000))
  if [ "${J_KIND[id]}" != skip ]; then
    busy_total=$((busy_total + (t1 - t0) / 1000000))
    tenths from $(((t0 - t_start) / 1000000))
    tenths to $(((t1 - t_start) / 1000000))
    printf '%7s %7s %6s %7s  %s\n' "$from" "$to" "$secs" "$cpu" "${J_NAME[id]}" >>"$logdir/times.txt"
  fi
  case "${J_KIND[id]}" in
    skip) echo "skip  ${J_NAME[id]}" ;;
    build)
      if [ "$rc" = 0 ]; then
        printf 'ok    %-48s      built (%ss)\n' "${J_NAME[id]}" "$secs"
      else
        echo "FAIL  ${J_NAME[id]}"; cat "$log"; failed=$((failed + 1)); failures+=("${J_NAME[id]}")
      fi
      ;;
    tap)
      if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && [ "$rc" -ne 77 ]; then f=1; fi
      passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
      if [ "$f" -gt 0 ]; then
        failures+=("${J_NAME[id]}")
        echo "FAIL  ${J_NAME[id]} ($p passed, $f failed, exit $rc, ${secs}s)"
        sed 's/^/    /' "$log"
        # Repeated under the summary: a long log shown in part elsewhere (CI keeps the head
        # and tail of the output) still names which check failed, and why.
        while IFS= read -r line; do
          not_ok+=("${J_NAME[id]}: ${line:0:400}")
        done < <(grep -m 5 '^not ok' "$log")
      else
        [ "$s" -gt 0 ] && skips=", $s skipped"
        printf 'ok    %-48s %4d passed%s (%ss)\n' "${J_NAME[id]}" "$p" "$skips" "$secs"
      fi
      ;;
    fuzz)
      if [ "$rc" = 0 ]; then
        echo "ok    ${J_NAME[id]} ($x execs)"
        passed=$((passed + 1))
      else
        echo "FAIL  ${J_NAME[id]}"; tail -40 "$log"; failed=$((failed + 1)); failures+=("${J_NAME[id]}")
      fi
      ;;
    style)
      if [ "$rc" = 0 ]; then
        echo "ok    style: formatting, banned functions, no sleep in src/lib"
        passed=$((passed + 1))
      else
        echo "FAIL  style"; sed 's/^/    /' "$log"; failed=$((failed + 1)); failures+=("style")
      fi
      ;;
  esac
}

# print_ready: report every ended job not reported yet whose predecessors in the report
# order are reported (the report's order does not depend on the order jobs ended in).
P_SEC=0 P_POS=0 P_HEAD=0
print_ready() {
  local ids id
  while [ "$P_SEC" -lt "${#S_TITLE[@]}" ]; do
    if [ "$P_HEAD" = 0 ]; then echo "${S_TITLE[P_SEC]}"; P_HEAD=1; fi
    read -ra ids <<<"${S_JOBS[P_SEC]:-}"
    while [ "$P_POS" -lt "${#ids[@]}" ]; do
      id=${ids[P_POS]}
      [ "${J_STATE[id]}" = ended ] || return 0
      report "$id"
      P_POS=$((P_POS + 1))
    done
    [ "${S_OPEN[P_SEC]}" = 0 ] || return 0
    P_SEC=$((P_SEC + 1)) P_POS=0 P_HEAD=0
  done
}

# ---- main -------------------------------------------------------------------------------

# Each job in a process group of its own, so that an interrupted run stops whole test trees.
set -m
stop_all() {
  local pid
  for pid in "${!PID_JOB[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  echo "run-tests: interrupted; logs: $logdir" >&2
  exit 130
}
trap stop_all INT TERM

S_TITLE[0]="== normal build ($BUILD)" S_OPEN[0]=0
S_TITLE[1]="== AddressSanitizer + UBSan build ($ASAN_BUILD)" S_OPEN[1]=1
S_TITLE[2]="== fuzz ($FUZZ_BUILD, ${FUZZ_SECONDS}s per target)" S_OPEN[2]=1
S_TITLE[3]="== style (scripts/check-style.sh)" S_OPEN[3]=0
GATE[asan]=pending GATE[fuzz]=pending
add_suite 0 "$BUILD" build 0 ""
add_job 1 "asan build" build asan "" 0 "" "" 0
ASAN_JOB=$((${#J_NAME[@]} - 1))
add_job 2 "fuzz build" build fuzz "" 0 "" "" 0
FUZZ_JOB=$((${#J_NAME[@]} - 1))
add_job 3 style style "" "" 0 "" "" 1

start_job "$ASAN_JOB"
while :; do
  schedule
  print_ready
  if [ "$ext_wait" = 1 ] && [ -z "$timer" ]; then
    (for fd in "${LOCK_FD[@]}"; do exec {fd}>&-; done; exec sleep 2) &
    timer=$!
  fi
  [ "${#PID_JOB[@]}" -gt 0 ] || [ "$ext_wait" = 1 ] || break
  pid=
  wait -n -p pid
  if [ -n "$pid" ] && [ "$pid" = "$timer" ]; then timer=; fi
  if [ -n "$pid" ] && [ -n "${PID_JOB[$pid]:-}" ]; then finish "$pid"; fi
done
[ -z "$timer" ] || kill "$timer" 2>/dev/null
print_ready

if [ ${#failures[@]} -gt 0 ]; then
  echo "failed: ${failures[*]}"
  for line in "${not_ok[@]}"; do echo "  $line"; done
fi
awk -v a="$t_start" -v b="$(date +%s%N)" -v busy="$busy_total" -v j="$JOBS" \
  'BEGIN { printf "wall: %.0fs (%d at a time; the programs and builds ran %.0fs in all)\n", (b - a) / 1e9, j, busy / 1000 }'
echo "logs: $logdir (times.txt: start, end, seconds and CPU seconds of each program;"
echo "  artifacts/: what tests kept, such as the dashboard's screenshots)"
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
