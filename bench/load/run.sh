#!/usr/bin/env bash
# bench/load/run.sh BUILD_DIR: 100 concurrent clients mixing every endpoint of trainyardd for
# 10 minutes against 1,000 stored jobs and the jobs they create (see README.md here). Prints
# per endpoint the requests, errors, p50 and p99; the daemon's RSS (start, end, max, growth
# over the second half) and descriptors. Exits non-zero on any error or growth.
# Environment: DURATION (600 s), CLIENTS (100), FOLLOWERS (4), STORED (1000), SOURCES (4
# source addresses 127.0.0.1..N), THINK_MS (20), CREATE_RATE (3/s), SAMPLE_S (5),
# MAX_RUNNING (16: the daemon's --max-running-jobs), KEEP=1 keeps the scratch dir.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
daemon_bin="$build/bin/trainyardd"
client_bin="$build/bench/load-client"
DURATION=${DURATION:-600} CLIENTS=${CLIENTS:-100} FOLLOWERS=${FOLLOWERS:-4}
STORED=${STORED:-1000} MAX_RUNNING=${MAX_RUNNING:-16}
export THINK_MS=${THINK_MS:-20} CREATE_RATE=${CREATE_RATE:-3} SOURCES=${SOURCES:-4}
export SAMPLE_S=${SAMPLE_S:-5}
PROJECT=load

for b in "$daemon_bin" "$client_bin"; do
  [ -x "$b" ] || { echo "bench/load: $b is missing; build first (ninja -C $build)" >&2; exit 2; }
done
scratch=$(mktemp -d /tmp/trainyard-bench-load.XXXXXX)
daemon_pid=''
cleanup() {
  if [ -n "$daemon_pid" ]; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$daemon_pid" 2>/dev/null || true # not ended 10 s after TERM
    wait "$daemon_pid" 2>/dev/null || true
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "bench/load: scratch kept: $scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$daemon_bin" --listen 127.0.0.1:0 --state-dir "$scratch/state" --grace-period 1 \
  --max-running-jobs "$MAX_RUNNING" $([ "$(id -u)" -eq 0 ] && echo --allow-root-jobs) \
  2>"$scratch/daemon.log" &
daemon_pid=$!
port=''
for _ in $(seq 200); do
  # the log may not exist yet (the shell opens it in the daemon's child): no port yet, not
  # an error (under pipefail a failing sed ended the script, and its cleanup then waited
  # forever on a daemon that had missed the TERM sent before its exec)
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$scratch/daemon.log" 2>/dev/null | head -n 1) || port=''
  [ -n "$port" ] && break
  kill -0 "$daemon_pid" 2>/dev/null || break
  sleep 0.05
done
[ -n "$port" ] || { echo "bench/load: trainyardd did not start" >&2; cat "$scratch/daemon.log" >&2; exit 2; }
url="http://127.0.0.1:$port"
echo "bench/load: trainyardd on $url ($(nproc) cores); scratch $scratch"

"$client_bin" fill "$url" "$PROJECT" "$STORED" 16 || { echo "bench/load: storing the jobs failed" >&2; exit 1; }
fd_list() { ls -l "/proc/$daemon_pid/fd" 2>/dev/null | awk 'NR > 1 { print $9, $10, $11 }'; }
fd_list >"$scratch/fds-start.txt"
status=0
"$client_bin" load "$url" "$PROJECT" "$STORED" "$DURATION" "$CLIENTS" "$FOLLOWERS" "$daemon_pid" |
  tee "$scratch/load.out" || status=$?
fd_list >"$scratch/fds-end.txt"
kill -0 "$daemon_pid" 2>/dev/null || { echo "bench/load: trainyardd died" >&2; status=1; }
if grep -q "AddressSanitizer\|runtime error" "$scratch/daemon.log"; then
  echo "bench/load: the daemon's log reports memory errors" >&2; status=1
fi
# make bench's table (bench/report.py): the RESULT line's figures; README.md's verdicts
res() { sed -n 's/^RESULT //p' "$scratch/load.out" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
add() { python3 "$root/bench/report.py" add load "$@"; }
add "$CLIENTS clients, ${DURATION} s: requests/s" \
  "$(awk -v n="$(res requests)" -v d="$DURATION" 'BEGIN { if (n != "") print n / d }')" 1/s
add "$CLIENTS clients: failed requests" "$(res errors)" requests --goal "= 0"
add "RSS growth over the second half, less the jobs.get cache" \
  "$(awk -v k="$(res rss_second_half_kb)" 'BEGIN { if (k != "") print k / 1024 }')" MB \
  --goal "<= 2 MB" --note "flat: <= 2 MiB or 5 %; the cache is bounded (16 MiB)"
add "jobs.get cache at the end" \
  "$(awk -v k="$(res cache_end_kb)" 'BEGIN { if (k != "" && k >= 0) print k / 1024 }')" MB \
  --goal "<= 16 MB"
[ "$status" -eq 0 ] || echo "bench/load: FAILED (see above; daemon log: $scratch/daemon.log)"
[ "$status" -eq 0 ] || KEEP=1
exit "$status"
