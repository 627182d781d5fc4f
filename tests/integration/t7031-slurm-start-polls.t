#!/bin/sh
# t7031-slurm-start-polls: while the launchers (trainyard-task) are connecting back, the slurm
# runtime runs no squeue of its own (issue 17, bench/launch-slurm): every HELLO and PLACED
# says the job runs, so the periodic poll (once a second) moves past them and does not
# compete with the launchers' start for the CPUs. On a level-1 cluster: a 1+3 job whose four
# launchers start 0.6 s apart (a wrapper sleeps before exec'ing trainyard-task), with squeue
# wrapped to log every call. From the first launcher's HELLO on, the job's id is known and a
# poll asks squeue by id (-j); none may run within 0.9 s of a launcher's start until the last
# has started. Without the deferral the polls of the 1.8 s between the first and the last
# launcher fall within 0.6 s of one.
# The polls before any HELLO (by name) and cleanup's wait after scancel are not counted.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$(dirname "$0")/../lib/slurm-cluster.sh"

if ! slurm_cluster_check; then
  test_skip "slurm start polls" "$TY_SLURM_SKIP_REASON"
  test_done
fi
if ! slurm_cluster_start; then
  test_skip "slurm start polls" "the test cluster did not start: $TY_SLURM_ERROR"
  test_done
fi
trap 'slurm_cluster_stop >/dev/null 2>&1' EXIT INT TERM
export TRAINYARD_SLURM_MEMORY=none

# squeue, logged ("TIME ARGS...") then run; the launcher, started 0.6 s a task apart, its
# start logged ("TIME PROCID").
real_squeue=$(command -v squeue)
mkdir -p "$TEST_DIR/wrap"
cat >"$TEST_DIR/wrap/squeue" <<EOF
#!/bin/sh
echo "\$(date +%s.%N) \$*" >>"$TEST_DIR/squeue.calls"
exec "$real_squeue" "\$@"
EOF
cat >"$TEST_DIR/wrap/task" <<EOF
#!/bin/sh
sleep "\$(awk -v p="\$SLURM_PROCID" 'BEGIN { print p * 0.6 }')"
echo "\$(date +%s.%N) \$SLURM_PROCID" >>"$TEST_DIR/task.starts"
exec "$TY_BUILD_DIR/bin/trainyard-task" "\$@"
EOF
chmod +x "$TEST_DIR/wrap/squeue" "$TEST_DIR/wrap/task"

test_expect_success 'a 1+3 job whose launchers start 0.6 s apart runs and succeeds' '
  "$PYTHON" - job.json <<-\PY &&
	import json, sys
	ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerType": "n1-standard-4",
	      "workerCount": 3, "masterConfig": {"imageUri": "x/y:1", "containerCommand": ["true"]}}
	json.dump({"trainingInput": ti}, open(sys.argv[1], "w"))
	PY
  PATH="$TEST_DIR/wrap:$PATH" TRAINYARD_TASK="$TEST_DIR/wrap/task" \
    "$TRAINYARD" local train polls_job --runtime slurm --config job.json >log 2>&1 &&
  test "$(wc -l <task.starts)" = 4 &&
  grep -q "Submitted as Slurm job [0-9]*\." log
'
# A poll by id during the start must come at least 0.9 s after the launcher that started last
# before it (its HELLO moved the poll a second on). Without the deferral the once-a-second poll
# falls within 0.6 s of some launcher's start. On a loaded machine a launcher may start late
# (its sleep stretched): a poll a second after the one before is then right, and allowed.
test_expect_success 'no squeue of the job by id ran within a second of a launcher start' '
  cat task.starts squeue.calls &&
  { sed "s/^\([0-9.]*\) .*/\1 start/" task.starts
    grep " -j " squeue.calls | sed "s/^\([0-9.]*\) .*/\1 poll/"; } | sort -n >timeline &&
  awk '\''$2 == "start" { s = $1; n++ }
    $2 == "poll" && n > 0 && n < 4 && $1 - s < 0.9 { print "poll during the start: " $0 " (" $1 - s " s after a start)"; bad = 1 }
    END { exit bad }'\'' timeline &&
  grep -q " -j " squeue.calls
'
test_expect_success 'afterwards no Slurm job is left' '
  test -z "$(squeue -h -o %i)"
'
slurm_cluster_stop >/dev/null 2>&1
test_done
