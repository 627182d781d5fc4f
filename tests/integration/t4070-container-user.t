#!/bin/sh
# t4070-container-user: an image whose USER is not root writes its outputs where AI Platform
# let it (its jobDir, the hypertune metric file): the container runtime gives the directories
# it made for the run to the user the image runs as (container-user.c).
#  - named: USER trainer (1234:1235 in the image's own /etc/passwd, not the host's) writes
#    into the jobDir the run created, which is now 1234:1235's, and the job's log says so; no
#    container is left (the one made to read the image's passwd included);
#  - numeric: USER 4321:4322, the same without a lookup;
#  - existing: a jobDir that existed before the job stays root's (never taken over);
#  - tuning: trials of the named image report their metric through /tmp/hypertune, each
#    trial's jobDir is the user's, the job succeeds with the best trial's value;
#  - mixed: a worker whose image runs as another user is named in a warning;
#  - volumes: an image that declares a VOLUME leaves no anonymous volume (probe, replica).
# Skipped (every test) when no usable container engine is on this machine, and as non-root.
. "$(dirname "$0")/../lib/test-lib.sh"

NAMES="named numeric existing tuning mixed volumes"
[ "$(id -u)" -eq 0 ] || {
  for t in $NAMES; do test_skip "container user: $t" "needs root (rootful containers)"; done
  test_done
}
require_testbox "container user" $NAMES
export TRAINYARD_RUNTIME=container
J=$$ # job ids unique to this run: container labels are machine-wide
BASE_IMG=localhost/trainyard/testbox:1
NAMED=localhost/trainyard/testbox-user:1
NUMERIC=localhost/trainyard/testbox-uid:1

# Usage: build_image TAG USER   an image of the test box running as USER, with a passwd
# that names trainer (the host has no such user)
build_image() {
  mkdir -p "$TEST_DIR/ctx-$2" &&
    printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'trainer:x:1234:1235:Trainer:/:/bin/sh' \
      >"$TEST_DIR/ctx-$2/passwd" &&
    printf 'FROM %s\nCOPY passwd /etc/passwd\nUSER %s\n' "$BASE_IMG" "$2" >"$TEST_DIR/ctx-$2/Containerfile" &&
    podman build -q --pull=never -t "$1" "$TEST_DIR/ctx-$2" >"$TEST_DIR/build-$2.log" 2>&1
}
if ! build_image "$NAMED" trainer || ! build_image "$NUMERIC" 4321:4322; then
  cat "$TEST_DIR"/build-*.log >&2
  for t in $NAMES; do test_skip "container user: $t" "cannot build the test images"; done
  test_done
fi

leftovers() {
  podman ps -a --filter "label=trainyard.job=$1" --format '{{.Names}}'
  podman network ls --filter "label=trainyard.job=$1" --format '{{.Name}}'
}
owner() { stat -c %u:%g "$1"; }

# The program: who it is, then a file in its --job-dir.
WRITE='for a in "$0" "$@"; do case "$a" in --job-dir=*) jd=${a#--job-dir=};; esac; done
id -u >"$jd/who" && echo out >"$jd/out"'

test_expect_success 'container user: named' '
  JOB_IMAGE=$NAMED write_job n.json "$WRITE" &&
  "$TRAINYARD" local train ctr_user_n_$J --config n.json --job-dir "$TEST_DIR/jn" >log 2>&1 &&
  grep -q "Job completed successfully." log &&
  test "$(cat jn/who)" = 1234 && test "$(owner jn)" = 1234:1235 && test "$(owner jn/out)" = 1234:1235 &&
  grep -q "Gave the jobDir $TEST_DIR/jn to uid 1234 (.trainer., the user image $NAMED runs as)" \
    "$TRAINYARD_HOME/jobs/local/ctr_user_n_$J/logs/service.log" &&
  test -z "$(leftovers ctr_user_n_$J)"
' || cat log

test_expect_success 'container user: numeric' '
  JOB_IMAGE=$NUMERIC write_job q.json "$WRITE" &&
  "$TRAINYARD" local train ctr_user_q_$J --config q.json --job-dir "$TEST_DIR/jq" >log 2>&1 &&
  grep -q "Job completed successfully." log &&
  test "$(cat jq/who)" = 4321 && test "$(owner jq)" = 4321:4322 &&
  test -z "$(leftovers ctr_user_q_$J)"
'

test_expect_success 'container user: existing' '
  mkdir -p je && JOB_IMAGE=$NAMED write_job e.json "$WRITE" &&
  set +e; "$TRAINYARD" local train ctr_user_e_$J --config e.json --job-dir "$TEST_DIR/je" >log 2>&1; rc=$?; set -e
  test $rc -ne 0 && grep -q "Permission denied" log && test "$(owner je)" = 0:0 &&
  test -z "$(leftovers ctr_user_e_$J)"
'

# Each trial reports x / 10 at step 1 to the library's default file.
TUNE='for a in "$0" "$@"; do case "$a" in --job-dir=*) jd=${a#--job-dir=};; --x=*) x=${a#--x=};; esac; done
id -u >"$jd/who" &&
printf "{\"acc\": \"0.%s\", \"global_step\": \"1\", \"timestamp\": 1.5, \"trial\": \"%s\"}\n" \
  "$x" "$CLOUD_ML_TRIAL_ID" >/tmp/hypertune/output.metrics'
test_expect_success 'container user: tuning' '
  JOB_IMAGE=$NAMED write_job t.json "$TUNE" 0 0 0 "{\"hyperparameters\": {\"goal\": \"MAXIMIZE\",
    \"hyperparameterMetricTag\": \"acc\", \"maxTrials\": 2, \"maxParallelTrials\": 2,
    \"algorithm\": \"GRID_SEARCH\", \"params\": [{\"parameterName\": \"x\", \"type\": \"INTEGER\",
    \"minValue\": 1, \"maxValue\": 2}]}}" &&
  "$TRAINYARD" local train ctr_user_t_$J --config t.json --job-dir "$TEST_DIR/jt" >log 2>&1 &&
  grep -q "Job completed successfully." log &&
  test "$(cat jt/1/who)" = 1234 && test "$(owner jt/1)" = 1234:1235 && test "$(owner jt/2)" = 1234:1235 &&
  "$PYTHON" -c "import json,sys; t=json.load(open(sys.argv[1]))[\"trainingOutput\"][\"trials\"]
v = sorted(x[\"finalMetric\"][\"objectiveValue\"] for x in t); print(v); sys.exit(v != [0.1, 0.2])" \
    "$TRAINYARD_HOME/jobs/local/ctr_user_t_$J/job.json" &&
  test -z "$(leftovers ctr_user_t_$J)"
' || cat log

# The worker (another user; a role's config gives its own command) writes nothing: the
# jobDir is the master image user's.
test_expect_success 'container user: mixed' '
  JOB_IMAGE=$NAMED write_job m.json "$WRITE" 1 0 0 "{\"workerConfig\": {\"imageUri\": \"$NUMERIC\",
    \"containerCommand\": [\"sh\", \"-c\", \"exit 0\"]}}" &&
  "$TRAINYARD" local train ctr_user_m_$J --config m.json --job-dir "$TEST_DIR/jm" >log 2>&1 &&
  grep -q "Job completed successfully." log && test "$(owner jm)" = 1234:1235 &&
  grep -q "Replica worker 0.s image $NUMERIC runs as .4321:4322., not as .trainer. (image $NAMED)" \
    "$TRAINYARD_HOME/jobs/local/ctr_user_m_$J/logs/service.log" &&
  test -z "$(leftovers ctr_user_m_$J)"
' || cat log

# An image that declares a VOLUME: the probe and the replica each get an anonymous volume
# from the engine, and removing them removes those too (?v=1).
test_expect_success 'container user: volumes' '
  printf "FROM %s\nVOLUME /data\n" "$NAMED" >"$TEST_DIR/ctx-trainer/Containerfile.vol" &&
  podman build -q --pull=never -t localhost/trainyard/testbox-vol:1 \
    -f "$TEST_DIR/ctx-trainer/Containerfile.vol" "$TEST_DIR/ctx-trainer" >build-vol.log 2>&1 &&
  podman volume ls -q | sort >vol.before &&
  JOB_IMAGE=localhost/trainyard/testbox-vol:1 write_job v.json "$WRITE" &&
  "$TRAINYARD" local train ctr_user_v_$J --config v.json --job-dir "$TEST_DIR/jv" >log 2>&1 &&
  grep -q "Job completed successfully." log && test "$(owner jv)" = 1234:1235 &&
  podman volume ls -q | sort >vol.after &&
  comm -13 vol.before vol.after >vol.new && test ! -s vol.new &&
  test -z "$(leftovers ctr_user_v_$J)"
' || { cat log; cat vol.new; }
test_done
