#!/usr/bin/env bash
# bench/launch-slurm/run.sh BUILD_DIR [RUNS]: how much does trainyard's slurm runtime add to
# starting and ending a job on Slurm, against Slurm's own `srun` of the same tasks?
# See README.md. Not a test: nothing passes or fails. Needs root and Slurm (slurmctld, slurmd,
# munged, clients), like tests/lib/slurm-cluster.sh, whose level-1 cluster it starts.
#
#   trainyard: `trainyard local train --runtime slurm`, 1 master + 7 workers (n1-standard-4:
#              --cpus-per-task=4, two tasks a node on the 4 x 8-CPU nodes): one srun whose
#              tasks are trainyard-task launchers that call back, then start the replicas.
#   srun:      `srun -n 8 --cpus-per-task=4` of the same program from this shell.
#   sbatch:    (for reference) `sbatch --wrap "srun ..."` of the same program, the batch path
#              trainyard used before its srun; its end is seen by polling squeue every 50 ms.
# Every replica/task runs the same bash program: append its start time ($EPOCHREALTIME) to a
# per-run file, wait until the file holds all 8 starts (a barrier, polled every 20 ms), exit 0.
# Measured from just before the command is invoked: (a) the 8th start, (b) the command's exit.
# Runs are interleaved (srun, trainyard, sbatch, srun, ...), each after a random pause of up to
# 1 s (so batch jobs meet the backfill scheduler's 1-s tick at random phases); report.py prints
# medians, ratios and each phase (from slurmctld's log and trainyard's service.log).
# KEEP=1 keeps the scratch directory (logs, cluster state); TY_SLURM_EXTRA_CONF is passed to
# the cluster (tests/lib/slurm-cluster.sh).
set -uo pipefail
build=${1:-build}
runs=${2:-7}
root=$(cd "$(dirname "$0")/../.." && pwd)
ty=$root/$build/bin/trainyard
task=$root/$build/bin/trainyard-task
guardian=$root/$build/bin/trainyard-guardian
name=bench/launch-slurm

# shellcheck source=tests/lib/slurm-cluster.sh disable=SC1091
. "$root/tests/lib/slurm-cluster.sh"
if ! slurm_cluster_check; then
  echo "$name: skipped ($TY_SLURM_SKIP_REASON)"
  exit 0
fi
for b in "$ty" "$task" "$guardian"; do
  [ -x "$b" ] || { echo "$name: $b missing (build first: ninja -C $build)" >&2; exit 1; }
done

scratch=$(mktemp -d /tmp/trainyard-bench-slurm.XXXXXX)
cluster=$scratch/cluster
cleanup() {
  trap - EXIT INT TERM
  slurm_cluster_stop "$cluster" || true
  if [ -n "${KEEP:-}" ]; then echo "$name: kept $scratch" >&2; else rm -rf "$scratch"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# copies: a rebuild during the runs (ninja -C build elsewhere) must not mix versions; the
# guardian beside the launcher, where it finds it (else each launcher forks one, with a notice)
mkdir -p "$scratch/bin" && cp "$ty" "$task" "$guardian" "$scratch/bin/" || exit 1
ty=$scratch/bin/trainyard task=$scratch/bin/trainyard-task
if ! slurm_cluster_start "$cluster"; then
  echo "$name: skipped (the test cluster did not start: $TY_SLURM_ERROR)"
  exit 0
fi
export TRAINYARD_HOME=$scratch/state TRAINYARD_SLURM_MEMORY=none TRAINYARD_TASK=$task

n=8
cpus=4
# The replica/task program: record the start, wait for all n starts (30 s at most), exit 0.
# shellcheck disable=SC2016 # expanded by the tasks' bash
prog='echo "$EPOCHREALTIME $SLURM_JOB_ID" >>"$1"; i=0
while mapfile -t l <"$1"; [ ${#l[@]} -lt "$2" ]; do
  i=$((i + 1)); [ $i -lt 1500 ] || exit 1; sleep 0.02
done'
python3 - "$scratch/job.json" "$prog" "$n" <<'PY'
import json, sys
f, prog, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
      "workerCount": n - 1,
      "masterConfig": {"imageUri": "example.com/bench:1",
                       "containerCommand": ["bash", "-c", prog, "bench", "@FILE@", str(n)]}}
json.dump({"trainingInput": ti}, open(f, "w"))
PY

now() { echo "$EPOCHREALTIME"; }
fail() { echo "$name: $*" >&2; exit 1; }
# Batch jobs wait for the backfill scheduler's 1-s tick (see README.md); runs of equal length
# would submit at the same phase of it every time: start each run after a random pause.
pause() { sleep "0.$(printf '%03d' $((RANDOM % 1000)))"; }

# record KIND I T0 T_END: check that all n starts were recorded; note the run for report.py.
record() {
  local f=$scratch/$1_$2.starts c
  c=$(wc -l <"$f" 2>/dev/null || echo 0)
  [ "$c" -eq "$n" ] || fail "$c of $n starts recorded in $f (log: $scratch/$1_$2.log); rerun with KEEP=1"
  [ "$2" = w ] || echo "$1 $2 $3 $4" >>"$scratch/runs"
}

trainyard_run() {
  local id=trainyard_$1 t0 t1 rc
  sed "s|@FILE@|$scratch/$id.starts|" "$scratch/job.json" >"$scratch/$id.json"
  pause
  t0=$(now)
  "$ty" local train "$id" --runtime slurm --config "$scratch/$id.json" >"$scratch/$id.log" 2>&1
  rc=$?
  t1=$(now)
  [ $rc -eq 0 ] || fail "trainyard exited $rc: $(tail -3 "$scratch/$id.log")"
  record trainyard "$1" "$t0" "$t1"
}

srun_run() {
  local id=srun_$1 t0 t1 rc
  pause
  t0=$(now)
  srun -n "$n" --cpus-per-task="$cpus" --mpi=none --kill-on-bad-exit=0 \
    bash -c "$prog" bench "$scratch/$id.starts" "$n" >"$scratch/$id.log" 2>&1
  rc=$?
  t1=$(now)
  [ $rc -eq 0 ] || fail "srun exited $rc: $(tail -3 "$scratch/$id.log")"
  record srun "$1" "$t0" "$t1"
}

# sbatch's end: the job has left squeue's active states (polled every 50 ms)
sbatch_run() {
  local id=sbatch_$1 t0 t1 job q=${prog//\'/\'\\\'\'} # the program quoted for --wrap
  pause
  t0=$(now)
  job=$(sbatch --parsable -n "$n" --cpus-per-task="$cpus" --output="$scratch/$id.log" \
    --wrap "exec srun --mpi=none --kill-on-bad-exit=0 bash -c '$q' bench $scratch/$id.starts $n") ||
    fail "sbatch failed"
  while [ -n "$(squeue -h -j "${job%%;*}" -t PD,CF,R,CG -o %i 2>/dev/null)" ]; do sleep 0.05; done
  t1=$(now)
  record sbatch "$1" "$t0" "$t1"
}

# one warm-up of each (page cache, slurmd's first steps), not counted
srun_run w && trainyard_run w && sbatch_run w || exit 1
: >"$scratch/runs"
for i in $(seq "$runs"); do
  srun_run "$i" && trainyard_run "$i" && sbatch_run "$i" || exit 1
done
python3 "$root/bench/launch-slurm/report.py" "$scratch" "$n" "$cpus" | tee "$scratch/report.out"
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1

# make bench's table (bench/report.py): the medians printed above, goal of issue 17
row() { awk -v k="$1" -v c="$2" 'index($0, k) == 3 { print $(NF - c) }' "$scratch/report.out"; }
for p in "to all started:3" "to the end:1"; do
  goal=; [ "${p#*:}" = 3 ] && goal="<= 1.5x"
  python3 "$root/bench/report.py" add launch-slurm "1+7 on Slurm, ${p%:*}" \
    "$(row "trainyard local train" "${p#*:}")" ms --floor "$(row "srun -n" "${p#*:}")" ${goal:+--goal "$goal"}
done
