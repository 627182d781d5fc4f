#!/usr/bin/env bash
# bench/container-exit/run.sh BUILD_DIR [ROUNDS]: when a container job's master exits, how long
# until trainyard has ended the job, against what the engine itself lets a client know and do?
# (README.md says what is measured and how to read it.)
#
#   trainyard: `trainyard local train --runtime container` of one master (testbox image) that
#              sleeps 0.5 s, reads the time and exits 0; measured: exit -> the job's endTime
#              as recorded (after teardown: the container and the network removed), and exit ->
#              the CLI's own exit.
#   floors, one container on an Internal network with a fixed address, as trainyard sets up:
#     events:      curl on GET /events (die/died of its label), read line by line: exit -> the
#                  die event; then DELETE the container and the network: exit -> all removed
#                  (the least any client of the engine's API does for the same job end).
#     podman wait: `podman --remote wait` on the same container (its own round, so that its
#                  start-up does not slow the others), started before the exit: exit -> it
#                  returns (Podman's own way to wait for a container, which polls).
#     exit file:   exitfile-floor.py (its own round): inotify on Podman's exit directory, set
#                  up before the start: exit -> conmon's exit file; then DELETE the container
#                  and the network: exit -> all removed (the least any client does, knowing of
#                  the exit at once); and Podman's own died/cleanup/remove from its events log.
#   TY_BENCH_BEFORE=BUILD_DIR adds the trainyard of that build, interleaved (a before/after).
# Every side talks to one `podman system service` this script starts (trainyard through
# DOCKER_HOST). Rounds interleave the sides; round 0 warms up and is not counted.
# The exit time is read inside the container from CLOCK_REALTIME with microseconds by busybox
# `adjtimex` (the testbox has no `date +%N`), written to the job directory that every side
# bind-mounts; the host side reads $EPOCHREALTIME. Prints medians and ratios.
# Not a test: nothing passes or fails. Needs root, curl and a usable podman.
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
root=$(cd "$(dirname "$0")/../.." && pwd)
case $build in /*) bin=$build/bin ;; *) bin=$root/$build/bin ;; esac
"$root/scripts/setup-podman.sh" >/dev/null
"$root/tests/integration/images/build-testbox.sh" >/dev/null
img=localhost/trainyard/testbox:1
scratch=$(mktemp -d /tmp/trainyard-bench-cexit.XXXXXX)
sock=$scratch/podman.sock
net=trainyard-bench-exit-$$
ctr=$net-api
podman system service --time=0 "unix://$sock" >/dev/null 2>&1 &
svc=$!
pod() { podman --remote --url "unix://$sock" "$@"; }
api() { curl -sS -m 60 --unix-socket "$sock" "$@"; }
v=http://d/v1.41
cleanup() {
  pod rm -f -t 0 "$ctr" >/dev/null 2>&1 || true
  pod network rm -f "$net" >/dev/null 2>&1 || true
  kill "$svc" 2>/dev/null
  wait "$svc" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
export DOCKER_HOST=unix://$sock TRAINYARD_HOME=$scratch/state

# The program, on every side: `sh -c PROG --job-dir=DIR` (trainyard appends --job-dir=DIR).
# shellcheck disable=SC2016 # expanded by the container's shell
prog='sleep 0.5; echo bye; adjtimex >"${0#--job-dir=}/exit.t"; exit 0'
/usr/bin/python3 - "$scratch" "$img" "$prog" "$net" <<'PY'
import json, sys, urllib.parse
d, img, prog, net = sys.argv[1:]
json.dump({"trainingInput": {"scaleTier": "BASIC",
           "masterConfig": {"imageUri": img, "containerCommand": ["sh", "-c", prog]}}},
          open(d + "/job.json", "w"))
json.dump({"Image": img, "Entrypoint": ["sh", "-c", prog], "Cmd": ["--job-dir=@DIR@"],
           "Hostname": "master", "Labels": {"trainyard.bench": net},
           "HostConfig": {"ExtraHosts": ["master:198.19.252.2"], "Dns": ["127.0.0.1"],
                          "Binds": ["@DIR@:@DIR@"]},
           "NetworkingConfig": {"EndpointsConfig": {net: {
               "IPAMConfig": {"IPv4Address": "198.19.252.2"}}}}},
          open(d + "/create.json", "w"))
json.dump({"Name": net, "Internal": True,
           "IPAM": {"Config": [{"Subnet": "198.19.252.0/24"}]}}, open(d + "/net.json", "w"))
f = {"type": ["container"], "event": ["die", "died"], "label": ["trainyard.bench=" + net]}
open(d + "/filters", "w").write(urllib.parse.quote(json.dumps(f)))
PY
create_body=$(<"$scratch/create.json")
filters=$(<"$scratch/filters")

ty_round() { # DIR [BIN]: trainyard (of BIN, default this build's)
  local d=$1 rc=0 job
  job=${d##*/}
  job=bench_exit_$$_${job//-/_}
  "${2:-$bin}/trainyard" local train "$job" --runtime container \
    --config "$scratch/job.json" --job-dir "$d" >"$d/log" 2>&1 || rc=$?
  echo "$EPOCHREALTIME" >"$d/cli"
  sed -n 's/^ *"endTime": "\(.*\)Z",*$/\1/p' \
    "$TRAINYARD_HOME/jobs/local/$job/job.json" |
    date -u -f - +%s.%6N >"$d/end" 2>/dev/null || true
  tail -n 3 "$d/log" >"$d/why"
  [ "$rc" -eq 0 ] && grep -q bye "$d/log"
}

start_ctr() { # DIR: the network and the container, started; prints its id
  local d=$1 body=${create_body//@DIR@/$1} id
  api -X POST -H 'Content-Type: application/json' -d @"$scratch/net.json" \
    "$v/networks/create" >/dev/null
  id=$(api -X POST -H 'Content-Type: application/json' -d "$body" \
    "$v/containers/create?name=$ctr" | grep -o '"Id":"[0-9a-f]*"' | cut -d'"' -f4) || true
  [ -n "$id" ] || { echo "create failed" >"$d/why"; return 1; }
  echo "$id"
}
remove_ctr() { # ID
  api -X DELETE "$v/containers/$1?force=1" >/dev/null
  api -X DELETE "$v/networks/$net" >/dev/null
}

api_round() { # DIR: the same container by hand: its die event, then its teardown
  local d=$1 id evp
  id=$(start_ctr "$d") || return 1
  # The events stream into a file, looked at every 2 ms: the first die line is the notice.
  api -N "$v/events?filters=$filters" >"$d/events" 2>/dev/null &
  evp=$!
  sleep 0.2 # the stream is open before the start
  api -X POST "$v/containers/$id/start" >/dev/null
  for _ in $(seq 2500); do
    [[ $(<"$d/events") == *'"die"'* ]] && echo "$EPOCHREALTIME" >"$d/event" && break
    sleep 0.002
  done
  remove_ctr "$id"
  echo "$EPOCHREALTIME" >"$d/end"
  kill "$evp" 2>/dev/null || true
  wait "$evp" 2>/dev/null || true
  [ -s "$d/event" ] || echo "no die event" >"$d/why"
  [ -s "$d/event" ]
}

tyb_round() { # DIR: the trainyard of $TY_BENCH_BEFORE (another build), for a before/after
  ty_round "$1" "$before_bin"
}

xf_round() { # DIR: the same container by hand: its exit file (inotify), then its teardown
  local d=$1 id fp ready
  id=$(start_ctr "$d") || return 1
  # The watcher holds its inotify watch and its connection before the start.
  coproc XF { exec /usr/bin/python3 "$root/bench/container-exit/exitfile-floor.py" \
    "$sock" "$exit_dir" "$id" "$net" "$d" 2>"$d/why"; }
  fp=$XF_PID
  read -r ready <&"${XF[0]}" || true
  api -X POST "$v/containers/$id/start" >/dev/null
  wait "$fp" || { remove_ctr "$id"; return 1; }
  # The engine's own steps, from its events log: the die recorded by conmon's exit command
  # (`podman container cleanup`), that command's cleanup done, the removal.
  for ev in died cleanup remove; do
    grep -F "\"ID\":\"$id\"" "$events_log" 2>/dev/null | grep -F "\"Status\":\"$ev\"" |
      sed -n 's/.*"Time":"\([^"]*\)Z".*/\1/p' | head -n 1 | date -u -f - +%s.%6N \
      >"$d/$ev" 2>/dev/null || true
  done
  [ "$ready" = ready ]
}

wait_round() { # DIR: the same container, waited for by `podman --remote wait`
  local d=$1 id rc=0
  id=$(start_ctr "$d") || return 1
  api -X POST "$v/containers/$id/start" >/dev/null
  pod wait "$id" >/dev/null 2>"$d/why" || rc=$?
  echo "$EPOCHREALTIME" >"$d/wait"
  remove_ctr "$id"
  [ "$rc" -eq 0 ]
}

exit_time() { # DIR: the program's exit, read inside its container
  awk '/tv_sec/ { s = $2 } /tv_usec/ { printf "%d.%06d\n", s, $2 }' "$1/exit.t" 2>/dev/null
}
since_exit() { # DIR FILE: seconds from the exit to the time in FILE, or nothing
  local x t
  x=$(exit_time "$1") && t=$(cat "$1/$2" 2>/dev/null) && [ -n "$x" ] && [ -n "$t" ] &&
    awk -v a="$x" -v b="$t" 'BEGIN { printf "%.6f\n", b - a }'
}

# Podman's exit files (conmon's --exit-dir) and its events log (the file backend), as root.
exit_dir=/run/libpod/exits
events_log=/run/libpod/events/events.log
sides="api wait ty"
[ -d "$exit_dir" ] && sides="api xf wait ty"
# TY_BENCH_BEFORE=BUILD_DIR: also the trainyard of that build, side by side (before/after).
before_bin=
if [ -n "${TY_BENCH_BEFORE:-}" ]; then
  before_bin=$(cd "$TY_BENCH_BEFORE" && pwd)/bin
  sides="$sides tyb"
fi
declare -A failed=([api]=0 [xf]=0 [wait]=0 [ty]=0 [tyb]=0)
for r in $(seq 0 "$rounds"); do # round 0 warms up and is not counted
  for side in $sides; do
    mkdir "$scratch/$side-$r"
    ok=1 && "${side}_round" "$scratch/$side-$r" || ok=0
    [ "$r" -gt 0 ] || continue
    for f in end cli event wait exitfile ctr_rm died cleanup remove; do
      since_exit "$scratch/$side-$r" "$f" >>"$scratch/$side.$f" || true
    done
    [ $ok = 1 ] && continue
    failed[$side]=$((failed[$side] + 1))
    echo "$side round $r failed: $(tail -c 300 "$scratch/$side-$r/why" 2>/dev/null)" >&2
  done
done

median_ms() { # FILE
  sort -n "$1" 2>/dev/null | awk '{ v[NR] = $1 } END {
    if (NR) printf "%.0f", 1000 * ((NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2);
    else printf "n/a" }'
}
count() { wc -l <"$1" 2>/dev/null || echo 0; }
ratio() { # A B: A/B
  awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "n/a") printf "%.2fx", a / b; else print "n/a" }'
}
row() { # LABEL FILE
  printf '  %-58s %7s ms %4d\n' "$1" "$(median_ms "$2")" "$(count "$2")"
}
printf 'container job: master exits -> job ends, %d rounds, medians (ms after the exit)\n' "$rounds"
printf '  %-58s %10s %4s\n' "" "" "n"
row "trainyard: the job's endTime (recorded, after teardown)" "$scratch/ty.end"
row "trainyard: local train exits" "$scratch/ty.cli"
if [ -n "$before_bin" ]; then
  row "before (TY_BENCH_BEFORE): the job's endTime" "$scratch/tyb.end"
  row "before (TY_BENCH_BEFORE): local train exits" "$scratch/tyb.cli"
fi
row "floor: the engine's die event (GET /events)" "$scratch/api.event"
row "floor: die event, then container + network removed (API)" "$scratch/api.end"
row "floor: podman --remote wait returns" "$scratch/wait.wait"
row "floor: conmon's exit file seen (inotify)" "$scratch/xf.exitfile"
row "floor: exit file, then the container's DELETE answered" "$scratch/xf.ctr_rm"
row "floor: exit file, then container + network removed (API)" "$scratch/xf.end"
row "  engine, that round: die recorded (by podman cleanup)" "$scratch/xf.died"
row "  engine, that round: podman container cleanup done" "$scratch/xf.cleanup"
row "  engine, that round: removal recorded" "$scratch/xf.remove"
ty_end=$(median_ms "$scratch/ty.end")
printf '  %-58s %10s\n' "ratio trainyard endTime / API floor (event + removal)" \
  "$(ratio "$ty_end" "$(median_ms "$scratch/api.end")")"
printf '  %-58s %10s\n' "ratio trainyard endTime / exit file floor (file + removal)" \
  "$(ratio "$ty_end" "$(median_ms "$scratch/xf.end")")"
printf '  %-58s %10s\n' "ratio trainyard endTime / podman wait" \
  "$(ratio "$ty_end" "$(median_ms "$scratch/wait.wait")")"
for side in $sides; do
  [ "${failed[$side]}" = 0 ] || echo "  ($side: ${failed[$side]} failed rounds)"
done

# make bench's table (bench/report.py): the job's end against the exit-file floor (issue 17's
# goal: <= 50 ms after the exit)
if [ -n "${TY_BENCH_RESULTS:-}" ] && [ "$ty_end" != n/a ]; then
  xf_end=$(median_ms "$scratch/xf.end")
  floor=()
  [ "$xf_end" != n/a ] && floor=(--floor "$xf_end")
  python3 "$root/bench/report.py" add container-exit "container job: master exits -> job's endTime" \
    "$ty_end" ms "${floor[@]}" --goal "<= 50ms" \
    --note "floor: exit file seen, then DELETE container + network (Podman's removal waits for its cleanup)"
fi
