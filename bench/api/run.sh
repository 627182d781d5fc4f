#!/usr/bin/env bash
# bench/api/run.sh BUILD_DIR: the REST API benchmark of trainyardd (see README.md here).
# Measures, in one run on loopback with wrk, against bare floors built from the same parts:
#   jobs.get     trainyardd vs. baseline-server (libmicrohttpd in the daemon's threading mode
#                + one SQLite point lookup), alternating ROUNDS times; medians
#   jobs.create  trainyardd vs. seq-commit (sequential durable single-row SQLite commits)
#   jobs.list    p99 of the default page, of filter=state:QUEUED and of a pageToken page
#   RSS          the daemon's VmRSS idle with an empty store, after the reads of the JOBS
#                jobs, and its growth per job over the jobs.create run
# over a project of JOBS jobs created through the API. Prints a table of figures, ratios and
# goals; nothing passes or fails (exit status is non-zero only when the bench cannot run).
# Environment: JOBS (10000), ROUNDS (3), GET_SECONDS (10), CREATE_SECONDS (10),
# COMMIT_SECONDS (5), LIST_SECONDS (5), LIST_CONNECTIONS (10), KEEP=1 keeps the scratch dir.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
here="$root/bench/api"
daemon_bin="$build/bin/trainyardd"
baseline_bin="$build/bench/api/baseline-server"
seq_bin="$build/bench/api/seq-commit"
JOBS=${JOBS:-10000} ROUNDS=${ROUNDS:-3}
GET_SECONDS=${GET_SECONDS:-10} CREATE_SECONDS=${CREATE_SECONDS:-10}
COMMIT_SECONDS=${COMMIT_SECONDS:-5} LIST_SECONDS=${LIST_SECONDS:-5}
LIST_CONNECTIONS=${LIST_CONNECTIONS:-10}
PROJECT=bench

if ! command -v wrk >/dev/null; then
  echo "bench/api: skipped (wrk is not installed: apt-get install wrk)"
  exit 0
fi
for b in "$daemon_bin" "$baseline_bin" "$seq_bin"; do
  [ -x "$b" ] || { echo "bench/api: $b is missing; build first (ninja -C $build)" >&2; exit 2; }
done

scratch=$(mktemp -d /tmp/trainyard-bench-api.XXXXXX)
daemon_pid='' baseline_pid='' wrk_pid=''
stop_pid() { # stop_pid PID: SIGTERM, then SIGKILL after 10 s; reaps it
  local pid=$1 i=0
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  stop_pid "$wrk_pid"
  stop_pid "$baseline_pid"
  stop_pid "$daemon_pid"
  if [ "${KEEP:-0}" = 1 ]; then echo "bench/api: scratch kept: $scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "bench/api: $*" >&2
  for f in "$scratch"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}

# wait_port LOG PID: print the port from the "listening on http://127.0.0.1:PORT" line.
wait_port() {
  local i=0 port
  while [ $i -lt 200 ]; do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$1" | head -n 1)
    if [ -n "$port" ]; then echo "$port"; return 0; fi
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
    i=$((i + 1))
  done
  return 1
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# wrk_run NAME WRK_ARGS...: run wrk, keep its output in NAME.out, check its RESULT line.
wrk_run() {
  local name=$1; shift
  wrk "$@" >"$scratch/$name.out" 2>&1 || fail "wrk $name failed: $(tail -5 "$scratch/$name.out")"
  grep -q '^RESULT ' "$scratch/$name.out" || fail "wrk $name: no result: $(tail -5 "$scratch/$name.out")"
}
# field NAME KEY: a value of NAME's RESULT line.
field() { sed -n "s/^RESULT .*\\b$2=\\([0-9.]*\\).*/\\1/p" "$scratch/$1.out"; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END {
  if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# Errors of a wrk run: socket errors and HTTP statuses >= 400 (none expected anywhere).
errors_total=0
count_errors() {
  local n
  n=$(($(field "$1" socket_errors) + $(field "$1" http_errors)))
  if [ "$n" -gt 0 ]; then
    echo "bench/api: warning: $1: $n failed requests" >&2
    errors_total=$((errors_total + n))
  fi
}

start_time=$(date +%s)
echo "bench/api: trainyardd REST API on loopback ($(nproc) cores); scratch $scratch"

# --- the daemon, idle -------------------------------------------------------------------
# --allow-root-jobs: as root, creates of process jobs are refused without it (none runs here).
"$daemon_bin" --listen 127.0.0.1:0 --state-dir "$scratch/state" --max-running-jobs 0 \
  --allow-root-jobs 2>"$scratch/daemon.log" &
daemon_pid=$!
port=$(wait_port "$scratch/daemon.log" "$daemon_pid") || fail "trainyardd did not start"
url="http://127.0.0.1:$port"
sleep 0.5
rss_idle=$(rss_kb "$daemon_pid")

# --- setup: JOBS jobs through jobs.create ------------------------------------------------
mkdir "$scratch/markers"
t0=$(date +%s.%N)
wrk -t 2 -c 16 -d 600s -s "$here/load.lua" "$url" -- "$PROJECT" "$JOBS" 2 "$scratch/markers" \
  >"$scratch/load.log" 2>&1 &
wrk_pid=$!
deadline=$(($(date +%s) + 240))
while [ ! -f "$scratch/markers/done.1" ] || [ ! -f "$scratch/markers/done.2" ]; do
  kill -0 "$wrk_pid" 2>/dev/null || fail "the job loader (wrk) ended early"
  [ "$(date +%s)" -lt "$deadline" ] || fail "creating $JOBS jobs took more than 240 s"
  sleep 0.1
done
kill -INT "$wrk_pid" 2>/dev/null || true
wait "$wrk_pid" 2>/dev/null || true
wrk_pid=''
t1=$(date +%s.%N)
created=$(cat "$scratch"/markers/done.* | awk '{ ok += $1; bad += $2 } END { print ok + 0 }')
[ "$created" -eq "$JOBS" ] || fail "created $created of $JOBS jobs (see load.log)"
load_secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
echo "bench/api: created $JOBS jobs in ${load_secs}s (16 connections)"

# --- the baseline: the same bodies, read once from the daemon -----------------------------
# A QUEUED job's stateReason is "Waiting to be scheduled" until a scheduling pass has seen it
# (one runs at least every 5 s), then says why it waits: copy the bodies only after that, or
# the daemon's answers would differ from the copies.
deadline=$(($(date +%s) + 30))
while curl -sS "$url/v1/projects/$PROJECT/jobs/job_$JOBS?prettyPrint=false" |
  grep -q '"stateReason":"Waiting to be scheduled'; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "no scheduling pass saw job_$JOBS within 30 s"
  sleep 0.2
done
"$baseline_bin" fill "$scratch/baseline.db" "$url" "$PROJECT" "$JOBS" 2>"$scratch/fill.log" ||
  fail "baseline fill failed"
"$baseline_bin" serve "$scratch/baseline.db" 0 2>"$scratch/baseline.log" &
baseline_pid=$!
bport=$(wait_port "$scratch/baseline.log" "$baseline_pid") || fail "baseline-server did not start"
burl="http://127.0.0.1:$bport"
# Same bytes from both? (Checked on one job; the fill copied every body verbatim.)
cmp -s <(curl -sS "$url/v1/projects/$PROJECT/jobs/job_1") \
  <(curl -sS "$burl/v1/projects/$PROJECT/jobs/job_1") ||
  fail "baseline-server and trainyardd answer job_1 differently"

# --- jobs.get: alternating rounds ---------------------------------------------------------
get_args=(-t 2 -c 50 --latency -s "$here/get.lua")
wrk_run warm-daemon -d 2s "${get_args[@]}" "$url" -- "$PROJECT" "$JOBS"
wrk_run warm-baseline -d 2s "${get_args[@]}" "$burl" -- "$PROJECT" "$JOBS"
d_rps='' d_p99='' b_rps='' b_p99=''
for r in $(seq "$ROUNDS"); do
  wrk_run "get-daemon-$r" -d "${GET_SECONDS}s" "${get_args[@]}" "$url" -- "$PROJECT" "$JOBS"
  wrk_run "get-baseline-$r" -d "${GET_SECONDS}s" "${get_args[@]}" "$burl" -- "$PROJECT" "$JOBS"
  kill -0 "$daemon_pid" 2>/dev/null || fail "trainyardd died during the jobs.get runs"
  kill -0 "$baseline_pid" 2>/dev/null || fail "baseline-server died during the jobs.get runs"
  count_errors "get-daemon-$r"
  count_errors "get-baseline-$r"
  d_rps+=" $(field "get-daemon-$r" rps)" d_p99+=" $(field "get-daemon-$r" p99_us)"
  b_rps+=" $(field "get-baseline-$r" rps)" b_p99+=" $(field "get-baseline-$r" p99_us)"
  echo "bench/api: get round $r: trainyardd $(field "get-daemon-$r" rps) req/s," \
    "p99 $(field "get-daemon-$r" p99_us) us; baseline $(field "get-baseline-$r" rps) req/s," \
    "p99 $(field "get-baseline-$r" p99_us) us"
done
stop_pid "$baseline_pid"
baseline_pid=''
get_d_rps=$(echo "$d_rps" | median) get_d_p99=$(echo "$d_p99" | median)
get_b_rps=$(echo "$b_rps" | median) get_b_p99=$(echo "$b_p99" | median)

# --- jobs.list ------------------------------------------------------------------------------
list_path="/v1/projects/$PROJECT/jobs"
token=$(curl -sS "$url$list_path?prettyPrint=false" |
  sed -n 's/.*"nextPageToken":"\([^"]*\)".*/\1/p')
[ -n "$token" ] || fail "jobs.list of $JOBS jobs gave no nextPageToken"
token=$(printf '%s' "$token" | sed 's/+/%2B/g; s|/|%2F|g; s/=/%3D/g')
list_args=(-t 2 -c "$LIST_CONNECTIONS" -d "${LIST_SECONDS}s" --latency -s "$here/report.lua")
wrk_run list-default "${list_args[@]}" "$url$list_path"
wrk_run list-filter "${list_args[@]}" "$url$list_path?filter=state%3AQUEUED"
wrk_run list-token "${list_args[@]}" "$url$list_path?pageToken=$token"
for n in list-default list-filter list-token; do count_errors "$n"; done

rss_reads=$(rss_kb "$daemon_pid")

# --- jobs.create ------------------------------------------------------------------------------
"$seq_bin" "$scratch/seq1.db" "$COMMIT_SECONDS" >"$scratch/seq1.out" 2>&1 || fail "seq-commit failed"
wrk_run create -t 2 -c 50 -d "${CREATE_SECONDS}s" --latency -s "$here/create.lua" "$url" -- \
  "$PROJECT-create" c1
count_errors create
"$seq_bin" "$scratch/seq2.db" "$COMMIT_SECONDS" >"$scratch/seq2.out" 2>&1 || fail "seq-commit failed"
commits=$(sed -n 's/.*commits_per_s=\([0-9.]*\).*/\1/p' "$scratch/seq1.out" "$scratch/seq2.out" |
  tr '\n' ' ' | median)
creates=$(field create rps)

rss_after=$(rss_kb "$daemon_pid")
created=$(field create requests)
# What the daemon keeps per job it queued (the scheduler's entry, the id index): its growth
# over the creates, in bytes per job (the jobs.create count depends on the machine's speed).
per_job=$(awk -v a="$rss_after" -v b="$rss_reads" -v n="$created" \
  'BEGIN { print (n > 0 ? (a - b) * 1024 / n : 0) }')
stop_pid "$daemon_pid"
daemon_pid=''

# --- the table ------------------------------------------------------------------------------
awk -v jobs="$JOBS" -v rounds="$ROUNDS" -v lc="$LIST_CONNECTIONS" \
  -v gdr="$get_d_rps" -v gdp="$get_d_p99" -v gbr="$get_b_rps" -v gbp="$get_b_p99" \
  -v cr="$creates" -v cp="$(field create p99_us)" -v sc="$commits" \
  -v ld="$(field list-default p99_us)" -v lf="$(field list-filter p99_us)" \
  -v lt="$(field list-token p99_us)" -v ldr="$(field list-default rps)" \
  -v lfr="$(field list-filter rps)" -v ltr="$(field list-token rps)" \
  -v ri="$rss_idle" -v rr="$rss_reads" -v pj="$per_job" -v nc="$created" 'function ms(us) { return sprintf("%.2f ms", us / 1000) }
function row(name, ours, base, ratio, goal, ok) {
  printf "%-36s %18s %12s %7s  %-8s %s\n", name, ours, base, ratio, goal, ok
}
BEGIN {
  printf "\nbench/api: %d jobs in one project; jobs.get: medians of %d alternating rounds\n", jobs, rounds
  row("metric", "trainyardd", "baseline", "ratio", "goal", "")
  r = gdr / gbr
  row("jobs.get req/s (50 connections)", sprintf("%.0f", gdr), sprintf("%.0f", gbr),
    sprintf("%.2fx", r), ">= 1.0x", r >= 1.0 ? "met" : "MISSED")
  row("jobs.get p99 (50 connections)", ms(gdp), ms(gbp), sprintf("%.2fx", gdp / gbp), "< 5 ms",
    gdp < 5000 ? "met" : "MISSED")
  r = cr / sc
  row("jobs.create/s vs seq. commits/s", sprintf("%.0f", cr), sprintf("%.0f", sc),
    sprintf("%.2fx", r), ">= 1x", r >= 1 ? "met" : "MISSED")
  row("jobs.create p99 (50 connections)", ms(cp), "", "", "", "")
  row(sprintf("jobs.list p99, first page (%d conn.)", lc), sprintf("%s @%.0f/s", ms(ld), ldr),
    "", "", "< 10 ms", ld < 10000 ? "met" : "MISSED")
  row("jobs.list p99, filter=state:QUEUED", sprintf("%s @%.0f/s", ms(lf), lfr), "", "",
    "< 10 ms", lf < 10000 ? "met" : "MISSED")
  row("jobs.list p99, pageToken (page 2)", sprintf("%s @%.0f/s", ms(lt), ltr), "", "",
    "< 10 ms", lt < 10000 ? "met" : "MISSED")
  row("RSS idle, empty store", sprintf("%.1f MB", ri / 1024), "", "", "< 8 MB",
    ri < 8192 ? "met" : "MISSED")
  row(sprintf("RSS, %d jobs, after the reads", jobs), sprintf("%.1f MB", rr / 1024), "", "",
    "< 48 MB", rr < 49152 ? "met" : "MISSED")
  row(sprintf("RSS growth per created job (%d)", nc), sprintf("%.0f B", pj), "", "", "< 1 KB",
    pj < 1024 ? "met" : "MISSED")
}'
[ "$errors_total" -eq 0 ] || echo "bench/api: $errors_total requests failed (see above)"
echo "bench/api: done in $(($(date +%s) - start_time))s"

# make bench's table (bench/report.py): the figures of the table above (jobs.get's goal: issue 17)
add() { python3 "$root/bench/report.py" add api "$@"; }
add "jobs.get req/s, 50 connections" "$get_d_rps" req/s --floor "$get_b_rps" --goal ">= 1.0x"
add "jobs.get p99, 50 connections" "$(awk -v x="$get_d_p99" 'BEGIN { print x / 1000 }')" ms \
  --floor "$(awk -v x="$get_b_p99" 'BEGIN { print x / 1000 }')" --goal "< 5 ms"
add "jobs.create/s vs seq. commits/s" "$creates" req/s --floor "$commits" --goal ">= 1.0x"
for n in list-default:"first page" list-filter:"filter=state:QUEUED" list-token:"pageToken page"; do
  add "jobs.list p99, ${n#*:}" "$(awk -v x="$(field "${n%%:*}" p99_us)" 'BEGIN { print x / 1000 }')" \
    ms --goal "< 10 ms"
done
add "RSS idle, empty store" "$(awk -v x="$rss_idle" 'BEGIN { print x / 1024 }')" MB --goal "< 8 MB"
add "RSS, $JOBS jobs, after the reads" "$(awk -v x="$rss_reads" 'BEGIN { print x / 1024 }')" MB \
  --goal "< 48 MB"
add "RSS growth per created job" "$per_job" B --goal "< 1024 B"
