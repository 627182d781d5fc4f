#!/usr/bin/env bash
# demo-dashboard.sh BUILD_DIR: start a trainyardd with a few finished jobs and a tuning study,
# then print the dashboard's address and keep the service running until Ctrl-C.
# The jobs, all of the digits example as local processes, submitted with the trainyard CLI
# as a user would (project "demo"):
#   digits_distributed  1 master, 2 workers, 2 parameter servers, 1 evaluator: SUCCEEDED
#   digits_bad_flag     a worker given a flag it does not know: FAILED, the worker named
#   digits_cancelled    cancelled while it runs: CANCELLED
#   digits_tuning       examples/digits/tuning.yaml, 8 trials, 2 at a time: SUCCEEDED
# The service listens on 127.0.0.1 only, with no tokens file: the dashboard needs no sign-in.
# The replicas find `digits` on the service's --job-path (they do not get the daemon's PATH).
# DASHBOARD_PORT picks the port (default 8470; 0: any free one). The state directory is
# BUILD_DIR/dashboard-demo (made again at each run).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
state=$root/$build/dashboard-demo
port=${DASHBOARD_PORT:-8470}
export PATH="$root/$build/examples/digits:$PATH"
unset TRAINYARD_CONFIG TRAINYARD_ACCESS_TOKEN
export TRAINYARD_PROJECT=demo

rm -rf "$state"
mkdir -p "$state/jobs"
root_jobs=()
if [ "$(id -u)" -eq 0 ]; then root_jobs=(--allow-root-jobs); fi
"$build/bin/trainyardd" --listen "127.0.0.1:$port" --state-dir "$state/service" \
  --runtime process --grace-period 2 --job-dir-root "$state/jobs" \
  --job-path "$root/$build/examples/digits:/usr/local/bin:/usr/bin:/bin" \
  "${root_jobs[@]}" >"$state/trainyardd.log" 2>&1 &
daemon=$!
stop() {
  kill -TERM "$daemon" 2>/dev/null || true
  wait "$daemon" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM
for _ in $(seq 100); do
  grep -q "listening on" "$state/trainyardd.log" && break
  kill -0 "$daemon" 2>/dev/null || { cat "$state/trainyardd.log" >&2; exit 1; }
  sleep 0.1
done
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$state/trainyardd.log" | tail -1)
export TRAINYARD_API_ENDPOINT=$url
ty() { "$build/bin/trainyard" "$@"; }
# submit JOB ARGS...: submit quietly; on a refusal, say why and stop.
submit() {
  ty jobs submit training "$@" >/dev/null 2>"$state/submit.err" || { cat "$state/submit.err" >&2; exit 1; }
}

# The failing job: its evaluator reads a data file that does not exist and exits 1, which fails
# the job with the service's words; the cancelled one trains long enough to be cancelled.
cp examples/digits/config.yaml "$state/bad.yaml"
cat >>"$state/bad.yaml" <<'YAML'
  evaluatorConfig:
    imageUri: localhost/trainyard/digits:latest
    containerCommand: [digits]
    containerArgs: [--data, /nonexistent/digits.csv]
YAML
sed -e 's/"500"/"200000"/' examples/digits/config.yaml >"$state/long.yaml"

echo "trainyardd is at $url (state in $state, log $state/trainyardd.log)."
echo "Submitting the demo jobs to project demo with the trainyard CLI..."
submit digits_distributed --config examples/digits/config.yaml \
  --job-dir "$state/jobs/digits_distributed" --labels team=vision,demo=yes
submit digits_bad_data --config "$state/bad.yaml" \
  --job-dir "$state/jobs/digits_bad_data" --labels team=vision
submit digits_cancelled --config "$state/long.yaml" \
  --job-dir "$state/jobs/digits_cancelled" --labels team=speech
submit digits_tuning --config examples/digits/tuning.yaml \
  --job-dir "$state/jobs/digits_tuning" --labels team=vision,kind=tuning

state_of() { ty jobs describe "$1" 2>/dev/null | sed -n 's/^state: //p'; }
wait_state() { # JOB STATE...: until the job is in one of the states
  local job=$1 s; shift
  for _ in $(seq 1800); do
    s=$(state_of "$job")
    for want in "$@"; do [ "$s" = "$want" ] && return 0; done
    sleep 0.2
  done
  echo "demo-dashboard: $job is still $s" >&2
  return 1
}
wait_state digits_cancelled RUNNING
ty jobs cancel digits_cancelled >/dev/null
echo "Waiting for the jobs to end (the tuning study takes about a minute)..."
for j in digits_distributed digits_bad_data digits_cancelled digits_tuning; do
  wait_state "$j" SUCCEEDED FAILED CANCELLED
  printf '  %-20s %s\n' "$j" "$(state_of "$j")"
done
echo
echo "Dashboard: $url/"
echo "(no sign-in: this service has no tokens file and listens on loopback only)"
echo "Press Ctrl-C to stop the service."
wait "$daemon"
