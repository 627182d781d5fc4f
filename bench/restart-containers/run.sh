#!/usr/bin/env bash
# bench/restart-containers/run.sh BUILD_DIR [ROUNDS]: how long does a container replica killed
# from outside stay down before trainyard's container runtime has its program running again,
# against a plain respawn loop on the same engine? (bench/restart does it for processes.)
#
#   trainyard: `trainyard local train --runtime container` of a master and one worker in the
#              testbox image; the worker dies 5 times (exit 137, which trainyard reads as a
#              SIGKILL from outside) and is restarted in place each time, then exits 0; the
#              master waits for that (polling a file every 0.2 s) and ends the job.
#   baseline:  a shell loop doing the same work trainyard does for a restart, and nothing else:
#              `podman --remote run` of the same worker container (same image, command, network
#              with a fixed address, host name, hosts entries, DNS, memory, CPUs, shm, pids and
#              ulimits, bind-mounted job directory), attached, so it returns when the container
#              ends; then `podman --remote rm -f` and `run` again at once. rm + run (create +
#              start) because that is what trainyard does (a restart replaces the container by
#              an identical one: a fresh file system, no replayed log); `podman start` of the
#              exited container again is not the same work (and was no faster on Podman 4.3).
#              `--remote` because the local CLI pays libpod's start-up (database, storage
#              locks) on every command, which no service-based runtime pays.
# Both talk to one `podman system service` this script starts (trainyard through DOCKER_HOST
# and the Docker-compatible API, the baseline through the libpod API on the same socket).
#
# What is measured, per restart: the worker's program running again minus its death, both read
# inside the containers from the kernel's CLOCK_REALTIME with microseconds by busybox
# `adjtimex` (read-only adjtimex(2); the testbox has no libc and its busybox `date` no %N),
# appended to files in the job directory, which both sides bind-mount at the same path.
#   death: read right before the worker's shell forks a child that SIGKILLs itself and then
#          exits with the child's status, 137 (the kernel ignores a SIGKILL from inside a
#          container to its PID 1, so the container's own process cannot die by it);
#   start: read by the first command of the new container's shell.
# Each sample also splits at the moment the death was noticed: trainyard's log record
# "... restarting it (restart N of 5)." (its own timestamp, milliseconds); the baseline's
# `podman run` returning (bash's $EPOCHREALTIME). Medians of the parts need not add up to
# the median of the whole.
# Error sources (a few ms, alike on both sides, against restarts of hundreds of ms): the fork +
# exec of busybox after the death is read and before the start is read; a step of the wall
# clock during a run (none expected; NTP slews at most 0.5 ms/s); load from anything else on the
# machine (rounds interleave and medians are taken); the trainyard side also runs the master.
# Prints medians and the ratio trainyard/baseline. Not a test: nothing passes or fails.
# Needs root and a usable podman (scripts/setup-podman.sh).
set -euo pipefail
build=${1:-build}
rounds=${2:-6}
restarts=5
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/scripts/setup-podman.sh" >/dev/null
"$root/tests/integration/images/build-testbox.sh" >/dev/null
img=localhost/trainyard/testbox:1
scratch=$(mktemp -d /tmp/trainyard-bench-rctr.XXXXXX)
sock=$scratch/podman.sock
net=trainyard-bench-restart-$$
wname=$net-worker
podman system service --time=0 "unix://$sock" >/dev/null 2>&1 &
svc=$!
pod() { podman --remote --url "unix://$sock" "$@"; }
cleanup() {
  pod rm -f -t 0 "$wname" >/dev/null 2>&1 || true
  pod network rm -f "$net" >/dev/null 2>&1 || true
  kill "$svc" 2>/dev/null
  wait "$svc" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
export DOCKER_HOST=unix://$sock TRAINYARD_HOME=$scratch/state

# The worker, on both sides: `sh -c WORKER --job-dir=DIR` (trainyard appends --job-dir=DIR).
# shellcheck disable=SC2016 # expanded by the containers' shells
worker='jd=${0#--job-dir=}
adjtimex >>$jd/start
if [ "$(cat $jd/death 2>/dev/null | grep -c tv_sec)" -lt '"$restarts"' ]; then
  adjtimex >>$jd/death; sh -c "kill -9 \$\$"; exit $?
fi
touch $jd/done'
# trainyard's job: the master (told apart by TF_CONFIG) waits for the worker's last run.
# shellcheck disable=SC2016
job='case "$TF_CONFIG" in *"\"type\":\"worker\""*) ;;
*) while [ ! -e "${0#--job-dir=}/done" ]; do sleep 0.2; done; exit 0;; esac
'"$worker"
/usr/bin/python3 - "$scratch/job.json" "$img" "$job" <<'PY'
import json, sys
f, img, script = sys.argv[1:]
json.dump({"trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
           "workerType": "n1-standard-4", "workerCount": 1,
           "masterConfig": {"imageUri": img, "containerCommand": ["sh", "-c", script]}}},
          open(f, "w"))
PY

# The settings trainyard gives the worker (container-config.c; n1-standard-4 on this host).
pod network create --internal --subnet 198.19.253.0/24 "$net" >/dev/null
ctr_opts=(--name "$wname" --network "$net" --ip 198.19.253.3 --hostname worker
  --add-host master:198.19.253.2 --add-host worker:198.19.253.3 --dns 127.0.0.1
  --memory 15g --shm-size 2g --cpus "$(($(nproc) < 4 ? $(nproc) : 4))" --pids-limit 32768
  --ulimit nofile=20000:20000 --ulimit nproc=32768:32768)

base_round() { # DIR: run the worker, respawning it after each death
  local d=$1 rc
  pod rm -f -t 0 "$wname" >/dev/null 2>&1 || true
  for _ in $(seq 0 "$restarts"); do
    rc=0
    pod run "${ctr_opts[@]}" -v "$d:$d" "$img" sh -c "$worker" "--job-dir=$d" >/dev/null 2>&1 ||
      rc=$?
    [ "$rc" -eq 137 ] || break
    echo "$EPOCHREALTIME" >>"$d/noticed"
    pod rm -f -t 0 "$wname" >/dev/null 2>&1
  done
  pod rm -f -t 0 "$wname" >/dev/null 2>&1 || true
  [ "$rc" -eq 0 ]
}

ty_round() { # DIR ID: the same worker as a trainyard job's
  local d=$1 rc=0
  "$root/$build/bin/trainyard" local train "bench_restart_$$_$2" --runtime container \
    --config "$scratch/job.json" --job-dir "$d" >"$d/log" 2>&1 || rc=$?
  grep 'restarting it (restart' "$d/log" | cut -d' ' -f1 | date -u -f - +%s.%3N >"$d/noticed"
  [ "$rc" -eq 0 ] && [ "$(wc -l <"$d/noticed")" -eq "$restarts" ]
}

epochs() { # FILE of adjtimex reports: one time a line
  awk '/tv_sec/ { s = $2 } /tv_usec/ { printf "%d.%06d\n", s, $2 }' "$1" 2>/dev/null || true
}

samples() { # DIR: "whole noticed relaunch" seconds, one restart a line
  local d=$1
  epochs "$d/death" >"$d/d.t"
  epochs "$d/start" | tail -n +2 >"$d/s.t"
  touch "$d/noticed"
  paste "$d/d.t" "$d/s.t" "$d/noticed" |
    awk -F'\t' '$1 != "" && $2 != "" && $3 != "" { printf "%.6f %.6f %.6f\n", $2 - $1, $3 - $1, $2 - $3 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else print 0 }'; }
col_ms() { cut -d' ' -f"$2" "$1" | median | awk '{ printf "%.0f", $1 * 1000 }'; }

: >"$scratch/base" && : >"$scratch/ty"
bfail=0 tfail=0
for r in $(seq 0 "$rounds"); do # round 0 warms both up and is not counted
  mkdir "$scratch/b$r" "$scratch/t$r"
  ok=1 && base_round "$scratch/b$r" || ok=0
  if [ "$r" -gt 0 ]; then samples "$scratch/b$r" >>"$scratch/base"; [ $ok = 1 ] || bfail=$((bfail + 1)); fi
  ok=1 && ty_round "$scratch/t$r" "$r" || ok=0
  if [ "$r" -gt 0 ]; then samples "$scratch/t$r" >>"$scratch/ty"; [ $ok = 1 ] || tfail=$((tfail + 1)); fi
done

bw=$(cut -d' ' -f1 "$scratch/base" | median) tw=$(cut -d' ' -f1 "$scratch/ty" | median)
printf 'container restart latency (replica death to its program running again),\n'
printf '%d rounds x %d restarts, medians\n' "$rounds" "$restarts"
printf '  %-44s %9s %9s %9s %s\n' "" "noticed" "relaunch" "whole" "samples"
printf '  %-44s %6s ms %6s ms %6s ms %d%s\n' "baseline (podman --remote rm -f + run)" \
  "$(col_ms "$scratch/base" 2)" "$(col_ms "$scratch/base" 3)" "$(col_ms "$scratch/base" 1)" \
  "$(wc -l <"$scratch/base")" "$([ $bfail = 0 ] || echo ", $bfail failed rounds")"
printf '  %-44s %6s ms %6s ms %6s ms %d%s\n' "trainyard local train --runtime container" \
  "$(col_ms "$scratch/ty" 2)" "$(col_ms "$scratch/ty" 3)" "$(col_ms "$scratch/ty" 1)" \
  "$(wc -l <"$scratch/ty")" "$([ $tfail = 0 ] || echo ", $tfail failed jobs")"
printf '  %-44s %31s\n' "ratio trainyard/baseline (whole)" \
  "$(awk -v a="$tw" -v b="$bw" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }')"
