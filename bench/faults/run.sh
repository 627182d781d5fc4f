#!/usr/bin/env bash
# bench/faults/run.sh BUILD_DIR: the kill -9 loop of trainyardd under create load (see README.md
# here and killloop.py). Exits non-zero when a job was lost, duplicated, run twice, ended in the
# wrong state, did not end, or left a process behind.
# Environment: CYCLES (200), RATE (12 creates/s), SLOW (0.1), THREADS (8), LOCK_EVERY (20), LOCK_SECONDS
# (35), MAX_RUNNING (0: no --max-running-jobs), SEED (the time), KEEP=1 keeps the scratch dir.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
for b in trainyardd trainyard-supervisor; do
  [ -x "$build/bin/$b" ] || { echo "bench/faults: $build/bin/$b is missing; build first" >&2; exit 2; }
done
if [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; else py=$(command -v python3); fi
scratch=$(mktemp -d /tmp/trainyard-bench-faults.XXXXXX)
status=0
"$py" "$root/bench/faults/killloop.py" "$build" "$scratch" --cycles "${CYCLES:-200}" \
  --rate "${RATE:-12}" --slow "${SLOW:-0.1}" --threads "${THREADS:-8}" --lock-every "${LOCK_EVERY:-20}" \
  --lock-seconds "${LOCK_SECONDS:-35}" --max-running "${MAX_RUNNING:-0}" \
  ${SEED:+--seed "$SEED"} | tee "$scratch/faults.out" || status=$?
# make bench's table (bench/report.py): the RESULT line's counts; every one must be 0
bad=$(sed -n 's/^RESULT //p' "$scratch/faults.out" | tr ' ' '\n' | awk -F= '
  $1 != "cycles" && $1 != "jobs" && $1 != "seconds" { n += $2; seen = 1 } END { if (seen) print n }')
python3 "$root/bench/report.py" add faults "kill -9 loop: jobs lost, duplicated, run twice, wrong, not ended, left behind" \
  "$bad" jobs --goal "= 0"
if [ "${KEEP:-0}" = 1 ] || [ "$status" -ne 0 ]; then
  echo "bench/faults: scratch kept: $scratch (daemon.log, state/trainyardd.log, markers)"
else
  rm -rf "$scratch"
fi
exit "$status"
