#!/usr/bin/env bash
# bench/restart-containers/run.sh BUILD_DIR [ROUNDS]: how long does a container replica killed
# from outside stay down before trainyard's container runtime has its program running again,
# against plain respawn loops on the same engine? (bench/restart does it for processes.)
#
#   trainyard: `trainyard local train --runtime container` of a master and one worker in the
#              testbox image; the worker dies 5 times (exit 137, which trainyard reads as a
#              SIGKILL from outside) and is restarted in place each time, then exits 0; the
#              master waits for that (polling a file every 0.2 s) and ends the job.
#   baselines: the same worker container (image, command, internal isolated network with a
#              fixed address and alias, host name, hosts entries, DNS, memory, CPUs, shm, pids
#              and ulimits, bind-mounted job directory), respawned by a loop that does the work
#              trainyard does for a restart and nothing else: remove the dead container, create
#              an identical one, start it. (Not `podman start` of the exited container again:
#              that is less work than trainyard does, which replaces the container so that a
#              restart gets a fresh file system and no replayed log.)
#     API:     the least a restart costs on this engine: curl on the Docker-compatible API, as
#              trainyard uses it: create, attach (its stream ends as the container does: the
#              quickest notice of an exit), start, inspect for the status (again every 10 ms
#              while the engine still says running), force-remove, again.
#     CLI:     what a user's shell loop gets: `podman --remote run` (attached: it returns with
#              the container's status), `podman --remote rm -f`, again. `--remote` because the
#              local CLI pays libpod's start-up (database, storage locks) on every command,
#              which no service-based runtime pays.
# All talk to one `podman system service` this script starts (trainyard through DOCKER_HOST).
# Rounds interleave the three; a first round warms up and is not counted.
#
# What is measured, per restart: the worker's program running again minus its death, both read
# inside the containers from the kernel's CLOCK_REALTIME with microseconds by busybox
# `adjtimex` (read-only adjtimex(2); the testbox has no libc and its busybox `date` no %N),
# appended to files in the job directory, which every side bind-mounts at the same path.
#   death: read right before the worker's shell forks a child that SIGKILLs itself and then
#          exits with the child's status, 137 (the kernel ignores a SIGKILL from inside a
#          container to its PID 1, so the container's own process cannot die by it);
#   start: read by the first command of the new container's shell.
# Each sample also splits where the loop knew the exit status: trainyard's log record "...
# restarting it (restart N of 5)." (its own timestamp, milliseconds); the baselines' bash
# $EPOCHREALTIME after the inspect (API) or after `podman run` returned (CLI). Medians of the
# parts need not add up to the median of the whole.
# Error sources (a few ms, alike on every side, against restarts of hundreds of ms): the fork +
# exec of busybox after the death is read and before the start is read; a step of the wall
# clock during a run (none expected; NTP slews at most 0.5 ms/s); load from anything else on the
# machine, which slows the CLI baseline most (two Go programs start per restart): rounds
# interleave and medians are taken, but read figures from a quiet machine. The trainyard side
# also runs the master container.
# Prints medians and the ratios trainyard/baseline (about 1.5 min on a quiet 2-core machine).
# Not a test: nothing passes or fails.
# Needs root, curl and a usable podman (scripts/setup-podman.sh).
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
restarts=5
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/scripts/setup-podman.sh" >/dev/null
"$root/tests/integration/images/build-testbox.sh" >/dev/null
img=localhost/trainyard/testbox:1
scratch=$(mktemp -d /tmp/trainyard-bench-rctr.XXXXXX)
sock=$scratch/podman.sock
net=trainyard-bench-restart-$$
aname=$net-api cname=$net-cli
podman system service --time=0 "unix://$sock" >/dev/null 2>&1 &
svc=$!
pod() { podman --remote --url "unix://$sock" "$@"; }
api() { curl -sS -m 120 --unix-socket "$sock" "$@"; }
v=http://d/v1.41
cleanup() {
  pod rm -f -t 0 "$aname" "$cname" >/dev/null 2>&1 || true
  pod network rm -f "$net" >/dev/null 2>&1 || true
  kill "$svc" 2>/dev/null
  wait "$svc" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
export DOCKER_HOST=unix://$sock TRAINYARD_HOME=$scratch/state

# The worker, on every side: `sh -c WORKER --job-dir=DIR` (trainyard appends --job-dir=DIR).
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
# The network and settings trainyard gives the worker (container-prepare.c, container-config.c;
# an n1-standard-4 on this host); the API baseline's create body (@DIR@: the job directory).
cpus=$(($(nproc) < 4 ? $(nproc) : 4))
/usr/bin/python3 - "$scratch" "$img" "$job" "$worker" "$net" "$cpus" <<'PY'
import json, sys
d, img, job, worker, net, cpus = sys.argv[1:]
json.dump({"trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
           "workerType": "n1-standard-4", "workerCount": 1,
           "masterConfig": {"imageUri": img, "containerCommand": ["sh", "-c", job]}}},
          open(d + "/job.json", "w"))
json.dump({"Image": img, "Entrypoint": ["sh", "-c", worker], "Cmd": ["--job-dir=@DIR@"],
           "Hostname": "worker",
           "HostConfig": {"ExtraHosts": ["master:198.19.253.2", "worker:198.19.253.3"],
                          "Dns": ["127.0.0.1"], "Binds": ["@DIR@:@DIR@"],
                          "Memory": 15 << 30, "ShmSize": 2 << 30,
                          "NanoCpus": int(cpus) * 10**9, "PidsLimit": 32768,
                          "Ulimits": [{"Name": "nofile", "Soft": 20000, "Hard": 20000},
                                      {"Name": "nproc", "Soft": 32768, "Hard": 32768}]},
           "NetworkingConfig": {"EndpointsConfig": {net: {
               "IPAMConfig": {"IPv4Address": "198.19.253.3"}, "Aliases": ["worker"]}}}},
          open(d + "/create.json", "w"))
PY
create_body=$(<"$scratch/create.json")
pod network create --internal --opt isolate=true --subnet 198.19.253.0/24 "$net" >/dev/null
cli_opts=(--name "$cname" --network "$net" --ip 198.19.253.3 --network-alias worker
  --hostname worker --add-host master:198.19.253.2 --add-host worker:198.19.253.3
  --dns 127.0.0.1 --memory 15g --shm-size 2g --cpus "$cpus" --pids-limit 32768
  --ulimit nofile=20000:20000 --ulimit nproc=32768:32768)

api_round() { # DIR: the worker, respawned through the API after each death
  local d=$1 body=${create_body//@DIR@/$1} id att state code=none out
  api -X DELETE "$v/containers/$aname?force=1" >/dev/null 2>&1 || true
  for _ in $(seq 0 "$restarts"); do
    out=$(api -X POST -H 'Content-Type: application/json' -d "$body" \
      "$v/containers/create?name=$aname" 2>&1) || true
    if ! id=$(grep -o '"Id":"[0-9a-f]*"' <<<"$out" | cut -d'"' -f4); then
      echo "create: $out" >"$d/why"
      break
    fi
    api -X POST "$v/containers/$id/attach?stream=1&stdout=1&stderr=1" >/dev/null 2>&1 &
    att=$!
    if ! out=$(api -X POST "$v/containers/$id/start" 2>&1) || [ -n "$out" ]; then
      echo "start: $out" >"$d/why"
      kill "$att"
      break
    fi
    wait "$att" || true
    # The stream can end a moment before the engine has the exit status.
    while state=$(api "$v/containers/$id/json") && [[ $state == *'"Running":true'* ]]; do
      sleep 0.01
    done
    code=$(grep -o '"ExitCode":-\{0,1\}[0-9]*' <<<"$state" | cut -d: -f2)
    if [ "$code" != 137 ]; then
      echo "exit status ${code:-unknown}: $state" | cut -c1-300 >"$d/why"
      break
    fi
    echo "$EPOCHREALTIME" >>"$d/noticed"
    api -X DELETE "$v/containers/$id?force=1" >/dev/null
  done
  api -X DELETE "$v/containers/$aname?force=1" >/dev/null 2>&1 || true
  [ "$code" = 0 ] && [ -e "$d/done" ]
}

cli_round() { # DIR: the worker, respawned by the podman CLI after each death
  local d=$1 rc
  pod rm -f -t 0 "$cname" >/dev/null 2>&1 || true
  for _ in $(seq 0 "$restarts"); do
    rc=0
    pod run "${cli_opts[@]}" -v "$d:$d" "$img" sh -c "$worker" "--job-dir=$d" >/dev/null \
      2>"$d/why" || rc=$?
    [ "$rc" -eq 137 ] || break
    echo "$EPOCHREALTIME" >>"$d/noticed"
    pod rm -f -t 0 "$cname" >/dev/null 2>&1 || break
  done
  pod rm -f -t 0 "$cname" >/dev/null 2>&1 || true
  [ "$rc" -eq 0 ]
}

ty_round() { # DIR: the same worker as a trainyard job's
  local d=$1 rc=0
  "$root/$build/bin/trainyard" local train "bench_restart_$$_${d##*-}" --runtime container \
    --config "$scratch/job.json" --job-dir "$d" >"$d/log" 2>&1 || rc=$?
  grep 'restarting it (restart' "$d/log" | cut -d' ' -f1 | date -u -f - +%s.%3N >"$d/noticed"
  grep -v 'Logs: ' "$d/log" | tail -n 2 >"$d/why"
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
  paste "$d/d.t" "$d/s.t" "$d/noticed" | awk -F'\t' '$1 != "" && $2 != "" && $3 != "" {
    printf "%.6f %.6f %.6f\n", $2 - $1, $3 - $1, $2 - $3 }'
}

median() {
  sort -n | awk '{ v[NR] = $1 } END {
    if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else print 0 }'
}
col_ms() { cut -d' ' -f"$2" "$scratch/$1" | median | awk '{ printf "%.0f", $1 * 1000 }'; }

declare -A failed=([api]=0 [cli]=0 [ty]=0)
for r in $(seq 0 "$rounds"); do # round 0 warms up and is not counted
  for side in api cli ty; do
    mkdir "$scratch/$side-$r"
    ok=1 && "${side}_round" "$scratch/$side-$r" || ok=0
    [ "$r" -gt 0 ] || continue
    samples "$scratch/$side-$r" >>"$scratch/$side"
    [ $ok = 1 ] && continue
    failed[$side]=$((failed[$side] + 1))
    echo "$side round $r failed: $(tail -c 300 "$scratch/$side-$r/why" 2>/dev/null)" >&2
  done
done

line() { # SIDE LABEL
  printf '  %-42s %6s ms %6s ms %6s ms %4d%s\n' "$2" "$(col_ms "$1" 2)" "$(col_ms "$1" 3)" \
    "$(col_ms "$1" 1)" "$(wc -l <"$scratch/$1")" \
    "$([ "${failed[$1]}" = 0 ] || echo " (${failed[$1]} failed rounds)")"
}
ratio() { # SIDE: trainyard's median whole over SIDE's
  awk -v a="$(col_ms ty 1)" -v b="$(col_ms "$1" 1)" \
    'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'
}
printf 'container restart latency (replica death to its program running again),\n'
printf '%d rounds x %d restarts, medians\n' "$rounds" "$restarts"
printf '  %-42s %9s %9s %9s %s\n' "" "noticed" "relaunch" "whole" "samples"
line api "baseline: API (curl; attach, rm, create)"
line cli "baseline: podman --remote run, rm -f"
line ty "trainyard local train --runtime container"
printf '  %-42s %29s\n' "ratio trainyard/API baseline" "$(ratio api)"
printf '  %-42s %29s\n' "ratio trainyard/CLI baseline" "$(ratio cli)"

# make bench's table (bench/report.py): the medians printed above (no goal stated)
for side in api:"API (curl)" cli:"podman --remote run"; do
  python3 "$root/bench/report.py" add restart-containers \
    "container restart, death to running again; floor: ${side#*:}" "$(col_ms ty 1)" ms \
    --floor "$(col_ms "${side%%:*}" 1)"
done
