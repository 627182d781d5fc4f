#!/bin/sh
# t5140-service-job-env: the replicas of a service job start from the service's defined
# environment (PATH from --job-path, HOME/USER of the user they run as, LANG, TZ; nothing
# else of the daemon's) and working directory (the jobDir, else /), a command not on that PATH is reported with the PATH and the setting,
# examples/digits runs submitted as the README shows, and `jobs submit training` makes a
# relative --job-dir absolute.
. "$(dirname "$0")/../lib/test-lib.sh"

M=$RUN_ID
JOBPATH="$TY_BUILD_DIR/examples/digits:/usr/bin:/bin"
export TZ=UTC
export XDG_CONFIG_HOME="$TEST_DIR/xdg"
unset TRAINYARD_CONFIG TRAINYARD_PROJECT TRAINYARD_ACCESS_TOKEN TRAINYARD_API_ENDPOINT
mkdir -p "$TEST_DIR/jobs"
# Something of the daemon's own that no replica may see.
export TY_DAEMON_ONLY_$M=leak
echo "daemon-only-secret-$M" >"$TEST_DIR/secret"
# (fd 7: something the daemon inherited, which no job may read)
trainyardd_start svc --job-dir-root "$TEST_DIR/jobs" --job-path "$JOBPATH" 7<"$TEST_DIR/secret" ||
  { echo "Bail out! trainyardd did not start"; cat "$TEST_DIR/svc.log"; exit 1; }
unset TY_DAEMON_ONLY_$M
export TRAINYARD_API_ENDPOINT="$TYD_URL"
IMG=--master-image-uri=example.com/none:1

test_expect_success 'a replica gets the defined environment, not the daemon'"'"'s' '
  "$TRAINYARD" jobs submit training env_1 "$IMG" \
    --master-command=sh,-c,"env >$TEST_DIR/env.txt; pwd >$TEST_DIR/pwd.txt" \
    --stream-logs >/dev/null 2>&1 &&
  grep -qx "PATH=$JOBPATH" env.txt &&
  home=$(getent passwd "$(id -un)" | cut -d: -f6) &&
  grep -qx "HOME=$home" env.txt && grep -qx "USER=$(id -un)" env.txt &&
  grep -q "^LANG=." env.txt && grep -qx "TZ=UTC" env.txt &&
  grep -q "^CLUSTER_SPEC=" env.txt && grep -qx "CLOUD_ML_JOB_ID=env_1" env.txt &&
  ! grep -q "TY_DAEMON_ONLY" env.txt && ! grep -q "^TRAINYARD_HOME=" env.txt &&
  ! grep -q "^XDG_CONFIG_HOME=" env.txt &&
  sed "s/=.*//" env.txt | sort -u >names &&
  for n in $(cat names); do
    case $n in
      PATH|HOME|USER|LOGNAME|LANG|TZ|CLUSTER_SPEC|TF_CONFIG|CLOUD_ML_JOB_ID|TRAINYARD_RUN_ID|TRAINYARD_SUPERVISOR_KEY|PWD|OLDPWD|SHLVL|_) ;;
      *) echo "unexpected variable $n"; exit 1 ;;
    esac
  done
'
test_expect_success 'the process runtime says nothing of nosuid mounts (t5175: the container runtime)' '
  ! grep -q "nosuid" svc.log
'
test_expect_success 'a descriptor the daemon inherited reaches no replica' '
  "$TRAINYARD" jobs submit training fd_1 "$IMG" \
    --master-command=sh,-c,"cat <&7 >$TEST_DIR/leak.txt 2>&1; ls /proc/self/fd >$TEST_DIR/fds.txt" \
    --stream-logs >/dev/null 2>&1 &&
  ! grep -q "daemon-only-secret" leak.txt && ! grep -qx 7 fds.txt
'
test_expect_success 'a replica starts in its local jobDir, else in /, never in the daemon'"'"'s directory' '
  test "$(cat pwd.txt)" = / &&
  "$TRAINYARD" jobs submit training env_2 "$IMG" --job-dir "$TEST_DIR/jobs/env_2" \
    --master-command=sh,-c,"pwd >$TEST_DIR/pwd.txt" --stream-logs >/dev/null 2>&1 &&
  test "$(cat pwd.txt)" = "$TEST_DIR/jobs/env_2" &&
  "$TRAINYARD" jobs submit training env_3 "$IMG" --job-dir gs://b/env_3 \
    --master-command=sh,-c,"pwd >$TEST_DIR/pwd.txt" --stream-logs >/dev/null 2>&1 &&
  test "$(cat pwd.txt)" = /
'
test_expect_success 'a command not on the PATH (even on the daemon'"'"'s): the error names the PATH and the setting' '
  set +e; "$TRAINYARD" jobs submit training nf_1 "$IMG" --master-command=nosuch_$M --stream-logs >/dev/null 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "cannot run .nosuch_$M.: not found on the replica.s PATH (set by trainyardd.s --job-path setting): $JOBPATH" err &&
  set +e; "$TRAINYARD" jobs submit training nf_2 "$IMG" --master-command=trainyard,--version --stream-logs >/dev/null 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "cannot run .trainyard.: not found on the replica.s PATH" err
'
test_expect_success 'examples/digits runs as the README shows; a relative --job-dir is made absolute' '
  cd "$TEST_DIR" &&
  "$TRAINYARD" jobs submit training digits_svc --config "$TY_SOURCE_DIR/examples/digits/config.yaml" \
    --job-dir jobs/digits_svc --stream-logs >out 2>log &&
  grep -q "final test accuracy" log &&
  "$TRAINYARD" jobs describe digits_svc --format json >d.json 2>/dev/null &&
  test "$(json_get d.json "d[\"trainingInput\"][\"jobDir\"]")" = "$TEST_DIR/jobs/digits_svc" &&
  test -e "$TEST_DIR/jobs/digits_svc/checkpoints/ckpt-final.bin" &&
  "$TRAINYARD" jobs submit training --help | grep -q "relative --job-dir"
'
test_expect_success 'a relative ./DIR, ../DIR, a//b too (made clean); URIs and absolute paths are sent as they are' '
  cd "$TEST_DIR/jobs" &&
  "$TRAINYARD" jobs submit training rel_2 "$IMG" --master-command=true --job-dir ./r2 --format json >r.json 2>/dev/null &&
  test "$(json_get r.json "d[\"trainingInput\"][\"jobDir\"]")" = "$TEST_DIR/jobs/r2" &&
  mkdir -p sub && cd sub &&
  "$TRAINYARD" jobs submit training rel_4 "$IMG" --master-command=true --job-dir ../r4 --format json >r.json &&
  test "$(json_get r.json "d[\"trainingInput\"][\"jobDir\"]")" = "$TEST_DIR/jobs/r4" &&
  "$TRAINYARD" jobs submit training rel_5 "$IMG" --master-command=true --job-dir ./a//b/./c/../ --format json >r.json &&
  test "$(json_get r.json "d[\"trainingInput\"][\"jobDir\"]")" = "$TEST_DIR/jobs/sub/a/b" &&
  "$TRAINYARD" jobs submit training rel_6 "$IMG" --master-command=true --job-dir ../../jobs/./r6 --format json >r.json &&
  test "$(json_get r.json "d[\"trainingInput\"][\"jobDir\"]")" = "$TEST_DIR/jobs/r6" &&
  cd "$TEST_DIR/jobs" &&
  "$TRAINYARD" jobs submit training rel_3 "$IMG" --master-command=true --job-dir gs://b/x --format json >r.json 2>/dev/null &&
  test "$(json_get r.json "d[\"trainingInput\"][\"jobDir\"]")" = gs://b/x
'
test_expect_success 'a link a job plants where a later run'"'"'s jobDir is, is refused, never followed' '
  mkdir -p "$TEST_DIR/victim" && J="$TEST_DIR/jobs/tune_ln" &&
  "$PYTHON" - ln.json "$J" "$TEST_DIR/victim" <<-\PY &&
	import json, sys
	f, j, victim = sys.argv[1:]
	plant = ("if [ \"$CLOUD_ML_TRIAL_ID\" = 1 ]; then cd / && mv %s %s.moved && ln -s %s %s; fi"
	         % (j, j, victim, j))
	ti = {"masterConfig": {"imageUri": "example.com/none:1", "containerCommand": ["sh", "-c", plant]},
	      "jobDir": j,
	      "hyperparameters": {"goal": "MINIMIZE", "maxTrials": 2, "maxParallelTrials": 1,
	                          "maxFailedTrials": 2, "algorithm": "GRID_SEARCH",
	                          "params": [{"parameterName": "x", "type": "DISCRETE", "discreteValues": [1, 2]}]}}
	json.dump({"trainingInput": ti}, open(f, "w"))
	PY
  { "$TRAINYARD" jobs submit training tune_ln --config ln.json --stream-logs >out 2>log || :; } &&
  test -L "$J" && test ! -e "$TEST_DIR/victim/2" &&
  grep -q "jobDir: cannot create directory .$J/2.: .$J. is a symbolic link, which is not followed" log &&
  { "$TRAINYARD" jobs submit training ln_2 "$IMG" --master-command=true --job-dir "$J/x" >out 2>err || :; } &&
  grep -q "has a symbolic link on its way, .$J., which the service does not follow" err &&
  test ! -e "$TEST_DIR/victim/x"
'
test_expect_success 'trainyardd refuses a --job-path with a relative directory' '
  set +e; "$TY_BUILD_DIR/bin/trainyardd" --state-dir "$TEST_DIR/x" --job-path "bin:/usr/bin" 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q -- "--job-path: .bin. is not an absolute directory" err
'
trainyardd_stop svc
test_done
