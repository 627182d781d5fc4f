#!/usr/bin/env bash
# bench/launch-containers/run.sh BUILD_DIR [RUNS]: how much does trainyard's container
# runtime add to starting and tearing down a job, against the podman CLI doing the same?
#
#   trainyard: `trainyard local train --runtime container`, a 1 master + 7 worker job whose
#              replicas wait for SIGTERM; timed from the CLI's start to every replica running
#              (the job's startTime), then from SIGINT (cancel) to the CLI's exit (teardown:
#              every container and the network removed).
#   baseline:  8 parallel `podman run -d` of the same image on an internal network with fixed
#              addresses and host entries (what trainyard sets up), timed until all 8 ran;
#              teardown: 8 parallel `podman rm -f -t 0` and the network's removal.
# Both talk to the same engine: a `podman system service` this script starts once (so
# trainyard does not start its own each run). Prints medians and ratios (goal <= 1.2x).
# Not a test: nothing passes or fails. Needs root and a usable podman (scripts/setup-podman.sh).
set -euo pipefail
build=${1:-build}
runs=${2:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/scripts/setup-podman.sh" >/dev/null
"$root/tests/integration/images/build-testbox.sh" >/dev/null
img=localhost/trainyard/testbox:1
scratch=$(mktemp -d /tmp/trainyard-bench-ctr.XXXXXX)
sock=$scratch/podman.sock
podman system service --time=0 "unix://$sock" >/dev/null 2>&1 &
svc=$!
cleanup() { kill "$svc" 2>/dev/null; wait "$svc" 2>/dev/null; rm -rf "$scratch"; }
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
export DOCKER_HOST=unix://$sock TRAINYARD_HOME=$scratch/state

now() { date +%s.%N; }
script='trap "exit 0" TERM; sleep 600 & wait'
cat >"$scratch/job.yaml" <<EOT
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerType: n1-standard-4
  workerCount: 7
  masterConfig:
    imageUri: $img
    containerCommand: [sh, -c, '$script']
EOT

ty_run() { # prints "start teardown" seconds
  local id=bench_$1 t0 started tsig tend
  t0=$(now)
  "$root/$build/bin/trainyard" local train "$id" --runtime container \
    --config "$scratch/job.yaml" >"$scratch/$id.log" 2>&1 &
  local pid=$!
  local rec=$TRAINYARD_HOME/jobs/local/$id/job.json
  until grep -q '"startTime"' "$rec" 2>/dev/null; do sleep 0.01; done
  started=$(/usr/bin/python3 -c 'import json,sys,datetime; d=json.load(open(sys.argv[1])); print(datetime.datetime.strptime(d["startTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp())' "$rec")
  tsig=$(now)
  kill -INT "$pid"
  wait "$pid" || true
  tend=$(now)
  awk -v a="$t0" -v b="$started" -v c="$tsig" -v d="$tend" 'BEGIN{printf "%.3f %.3f\n", b-a, d-c}'
}

base_run() { # prints "start teardown" seconds
  local n=trainyard-bench-$1 t0 t1 t3 hosts="" i pids=""
  for i in 0 1 2 3 4 5 6 7; do hosts="$hosts --add-host h$i:198.19.254.$((i + 2))"; done
  podman rm -f -t 0 $(podman ps -aq --filter "network=$n") >/dev/null 2>&1 || true
  podman network rm -f "$n" >/dev/null 2>&1 || true
  podman network create --internal --subnet 198.19.254.0/24 "$n" >/dev/null
  t0=$(now)
  for i in 0 1 2 3 4 5 6 7; do
    podman run -d --name "$n-$i" --network "$n" --ip "198.19.254.$((i + 2))" --hostname "h$i" \
      $hosts --dns 127.0.0.1 --memory 15g --cpus 2 "$img" sh -c "$script" >/dev/null 2>&1 &
    pids="$pids $!"
  done
  wait $pids   # not a bare wait: the podman service is a background job too
  pids=""
  t1=$(now)
  for i in 0 1 2 3 4 5 6 7; do podman rm -f -t 0 "$n-$i" >/dev/null 2>&1 & pids="$pids $!"; done
  wait $pids
  pids=""
  podman network rm "$n" >/dev/null
  t3=$(now)
  awk -v a="$t0" -v b="$t1" -v c="$t1" -v d="$t3" 'BEGIN{printf "%.3f %.3f\n", b-a, d-c}'
}

median() { sort -n | awk '{v[NR]=$1} END{print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
: >"$scratch/ty" ; : >"$scratch/base"
base_run warm >/dev/null; ty_run warm >/dev/null
for i in $(seq "$runs"); do
  base_run "$i" >>"$scratch/base"
  ty_run "$i" >>"$scratch/ty"
done
bs=$(cut -d' ' -f1 "$scratch/base" | median); bt=$(cut -d' ' -f2 "$scratch/base" | median)
ts=$(cut -d' ' -f1 "$scratch/ty" | median); tt=$(cut -d' ' -f2 "$scratch/ty" | median)
printf 'container launch benchmark: 1 master + 7 workers, %d runs, medians\n' "$runs"
printf '  %-38s %10s %10s\n' "" "running" "teardown"
printf '  %-38s %8.0f ms %8.0f ms\n' "baseline (8 parallel podman run/rm)" "$(awk -v x="$bs" 'BEGIN{print x*1000}')" "$(awk -v x="$bt" 'BEGIN{print x*1000}')"
printf '  %-38s %8.0f ms %8.0f ms\n' "trainyard local train --runtime container" "$(awk -v x="$ts" 'BEGIN{print x*1000}')" "$(awk -v x="$tt" 'BEGIN{print x*1000}')"
printf '  %-38s %9.2fx %9.2fx   (goal: running <= 1.2x)\n' "ratio" "$(awk -v a="$ts" -v b="$bs" 'BEGIN{print a/b}')" "$(awk -v a="$tt" -v b="$bt" 'BEGIN{print a/b}')"

# make bench's table (bench/report.py): the medians printed above
ms() { awk -v x="$1" 'BEGIN { print x * 1000 }'; }
python3 "$root/bench/report.py" add launch-containers "1+7 containers, to all running" \
  "$(ms "$ts")" ms --floor "$(ms "$bs")" --goal "<= 1.2x"
python3 "$root/bench/report.py" add launch-containers "1+7 containers, teardown" \
  "$(ms "$tt")" ms --floor "$(ms "$bt")"
