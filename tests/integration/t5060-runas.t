#!/bin/sh
# t5060-runas: who runs what under trainyardd (docs/security.md). As root, a process-runtime
# job of a project with no --project-user (or one mapped to root) is refused at create with a
# 400 naming the settings, nothing stored or queued, with and without a tokens file; container
# jobs are not, slurm jobs (sbatch as root) are; a local jobDir only inside --job-dir-root;
# --allow-root-jobs lets it run as root; an unknown user is a start-up error; the
# config file takes one project-user line per project; the supervisor of a mapped project's
# job gets --run-as=USER (its argv, read through a recording wrapper); and, once the supervisor
# knows --run-as, the replica really runs as the project's user (nobody, uid 65534), in its
# jobDir (one closed to that user fails the replica, naming the directory and the user).
. "$(dirname "$0")/../lib/test-lib.sh"

TRAINYARDD="$TY_BUILD_DIR/bin/trainyardd"
SUPERVISOR="$TY_BUILD_DIR/bin/trainyard-supervisor"
M=$RUN_ID

if [ "$(id -u)" -ne 0 ]; then
  echo "1..0 # SKIP needs root: the user mapping only applies to a trainyardd running as root"
  exit 0
fi
# The tests below start their daemons without --allow-root-jobs unless they say so.
TYD_ALLOW_ROOT_JOBS=no

# api BASE METHOD PATH [BODY_FILE] [TOKEN]: body to out.json, prints the HTTP status
api() {
  set -- "$@" "" ""
  curl -s -o out.json -w '%{http_code}' -X "$2" -H 'Content-Type: application/json' \
    ${5:+-H "Authorization: Bearer $5"} ${4:+--data-binary "@$4"} "$1$3"
}
# job_body FILE JOB_ID MASTER_SH [LABELS_JSON]
job_body() {
  write_job "$1.ti" "$3" &&
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["jobId"]=sys.argv[2]
if sys.argv[4]: d["labels"]=json.loads(sys.argv[4])
json.dump(d, open(sys.argv[3],"w"))' "$1.ti" "$2" "$1" "${4:-}"
}
# refused_well: out.json is a 400 INVALID_ARGUMENT naming both settings
refused_well() {
  json_get out.json 'd["error"]["status"]' | grep -qx INVALID_ARGUMENT &&
  json_get out.json 'd["error"]["message"]' | grep -q -- "--project-user=$1:USER" &&
  json_get out.json 'd["error"]["message"]' | grep -q -- "--allow-root-jobs"
}

cat >"$TEST_DIR/tokens" <<EOF
tok-aaaaaaaaaaaaaaaa pa
tok-bbbbbbbbbbbbbbbb pb
EOF
chmod 600 "$TEST_DIR/tokens"

# --- a root daemon without a mapping ----------------------------------------------------
# The slurm runtime refuses a job when Slurm has no configuration here: an empty one lets the
# checks below reach the rules of running as root (the jobs never run: no slot).
export SLURM_CONF="$TEST_DIR/slurm.conf"
: >"$SLURM_CONF"
trainyardd_start plain --max-running-jobs 0 && PLAIN=$TYD_URL || PLAIN=
test_expect_success 'no project-user: a process job is refused with 400 naming the settings' '
  test -n "$PLAIN" &&
  job_body j.json j_$M "id -u" &&
  test "$(api "$PLAIN" POST /v1/projects/pa/jobs j.json)" = 400 &&
  refused_well pa &&
  grep -q "process-runtime jobs of projects without a project-user are refused" "$TEST_DIR/plain.log"
'
test_expect_success 'nothing was stored or queued' '
  test "$(api "$PLAIN" GET /v1/projects/pa/jobs/j_$M)" = 404 &&
  test "$(api "$PLAIN" GET /v1/projects/pa/jobs)" = 200 && test "$(cat out.json)" = "{}"
'
test_expect_success 'the label trainyard-runtime=process is refused as well' '
  job_body l.json l_$M "id -u" "{\"trainyard-runtime\": \"process\"}" &&
  test "$(api "$PLAIN" POST /v1/projects/pa/jobs l.json)" = 400 && refused_well pa
'
test_expect_success 'a container job is not refused (it runs as the image says)' '
  job_body c.json c_$M "id -u" "{\"trainyard-runtime\": \"container\"}" &&
  test "$(api "$PLAIN" POST /v1/projects/pa/jobs c.json)" = 200 &&
  test "$(api "$PLAIN" POST /v1/projects/pa/jobs/c_$M:cancel)" = 200
'
test_expect_success 'a slurm job (sbatch runs it as root) is refused, naming --allow-root-jobs' '
  job_body s.json s_$M "id -u" "{\"trainyard-runtime\": \"slurm\"}" &&
  test "$(api "$PLAIN" POST /v1/projects/pa/jobs s.json)" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q -- "slurm-runtime jobs run as its user" &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q -- "--allow-root-jobs"
'
test_expect_success 'a local jobDir is refused without --job-dir-root, a URI is taken' '
  job_body c.json d_$M "id -u" "{\"trainyard-runtime\": \"container\"}" &&
  "$PYTHON" -c "import json,sys; d=json.load(open(\"c.json\")); d[\"trainingInput\"][\"jobDir\"]=sys.argv[1]; json.dump(d,open(\"d.json\",\"w\"))" /etc/tyjobdir_$M &&
  test "$(api "$PLAIN" POST /v1/projects/pa/jobs d.json)" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q -- "trainingInput.jobDir" &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q -- "--job-dir-root" &&
  test ! -e /etc/tyjobdir_$M &&
  "$PYTHON" -c "import json,sys; d=json.load(open(\"c.json\")); d[\"trainingInput\"][\"jobDir\"]=sys.argv[1]; json.dump(d,open(\"g.json\",\"w\"))" gs://bucket/out_$M &&
  test "$(api "$PLAIN" POST /v1/projects/pa/jobs g.json)" = 200 &&
  test "$(api "$PLAIN" POST /v1/projects/pa/jobs/d_$M:cancel)" = 200
'
trainyardd_stop plain

mkdir -p "$TEST_DIR/jobdirs" "$TEST_DIR/elsewhere" && ln -s "$TEST_DIR/elsewhere" "$TEST_DIR/jobdirs/out"
trainyardd_start jd --max-running-jobs 0 --allow-root-jobs --job-dir-root "$TEST_DIR/jobdirs" && JD=$TYD_URL || JD=
# with_dir NAME DIR: a container job d_NAME_M with jobDir DIR in NAME.json
with_dir() {
  job_body c.json "d_$1_$M" "id -u" "{\"trainyard-runtime\": \"container\"}" &&
  "$PYTHON" -c "import json,sys; d=json.load(open(\"c.json\")); d[\"trainingInput\"][\"jobDir\"]=sys.argv[1]; json.dump(d,open(sys.argv[2],\"w\"))" "$2" "$1.json"
}
test_expect_success '--job-dir-root: a jobDir inside is taken (a trailing / too); the root itself, outside, with .. or through a link out, 400' '
  test -n "$JD" &&
  with_dir in "$TEST_DIR/jobdirs/run1" && test "$(api "$JD" POST /v1/projects/pa/jobs in.json)" = 200 &&
  with_dir slash "$TEST_DIR/jobdirs/run2/" &&
  test "$(api "$JD" POST /v1/projects/pa/jobs slash.json)" = 200 &&
  with_dir root "$TEST_DIR/jobdirs" && test "$(api "$JD" POST /v1/projects/pa/jobs root.json)" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q -- "is not below a directory this service lets jobs write to (--job-dir-root: " &&
  with_dir out "/tmp/tyjobdir_$M" && test "$(api "$JD" POST /v1/projects/pa/jobs out.json)" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q "is not below a directory this service lets jobs write to" &&
  with_dir dots "$TEST_DIR/jobdirs/../elsewhere" && test "$(api "$JD" POST /v1/projects/pa/jobs dots.json)" = 400 &&
  with_dir link "$TEST_DIR/jobdirs/out/x" && test "$(api "$JD" POST /v1/projects/pa/jobs link.json)" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q "symbolic link"
'
trainyardd_stop jd

mkdir -p "$TEST_DIR/pa_dir" "$TEST_DIR/pb_dir"
trainyardd_start pj --max-running-jobs 0 --allow-root-jobs --job-dir-root "pa:$TEST_DIR/pa_dir" \
  --job-dir-root "pb:$TEST_DIR/pb_dir" && PJ=$TYD_URL || PJ=
test_expect_success '--job-dir-root PROJECT:DIR: only that project'"'"'s jobs may write there' '
  test -n "$PJ" &&
  with_dir own "$TEST_DIR/pa_dir/run1" && test "$(api "$PJ" POST /v1/projects/pa/jobs own.json)" = 200 &&
  with_dir theirs "$TEST_DIR/pb_dir/run1" && test "$(api "$PJ" POST /v1/projects/pa/jobs theirs.json)" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q "is not below a directory this service lets jobs write to" &&
  ! json_get out.json "d[\"error\"][\"message\"]" | grep -q "pb:" &&
  test "$(api "$PJ" POST /v1/projects/pb/jobs theirs.json)" = 200
'
trainyardd_stop pj
test_expect_success 'a --job-dir-root that does not exist stops the start, naming the option' '
  set +e; "$TRAINYARDD" --state-dir "$TEST_DIR/sd_$M" --listen 127.0.0.1:0 --job-dir-root "$TEST_DIR/none" 2>err; rc=$?; set -e
  test "$rc" -ne 0 && grep -q -- "--job-dir-root" err
'

trainyardd_start auth --max-running-jobs 0 --auth-tokens "$TEST_DIR/tokens" && AUTH=$TYD_URL || AUTH=
test_expect_success 'the same with a tokens file: a valid token does not make it root' '
  test -n "$AUTH" &&
  job_body j.json j_$M "id -u" &&
  test "$(api "$AUTH" POST /v1/projects/pa/jobs j.json tok-aaaaaaaaaaaaaaaa)" = 400 &&
  refused_well pa &&
  test "$(api "$AUTH" GET /v1/projects/pa/jobs/j_$M "" tok-aaaaaaaaaaaaaaaa)" = 404
'
trainyardd_stop auth

# --- mappings -----------------------------------------------------------------------------
trainyardd_start mapped --max-running-jobs 0 --project-user=pa:nobody --project-user=pr:root \
  && MAPPED=$TYD_URL || MAPPED=
test_expect_success 'a mapped project is accepted; one mapped to root and an unmapped one are not' '
  test -n "$MAPPED" &&
  job_body j.json j_$M "id -u" &&
  test "$(api "$MAPPED" POST /v1/projects/pa/jobs j.json)" = 200 &&
  test "$(api "$MAPPED" POST /v1/projects/pr/jobs j.json)" = 400 &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q "which is root (uid 0)" &&
  test "$(api "$MAPPED" POST /v1/projects/pb/jobs j.json)" = 400 && refused_well pb &&
  grep -q "process-runtime jobs of project .pa. run as nobody (uid 65534)" "$TEST_DIR/mapped.log"
'
trainyardd_stop mapped

test_expect_success 'an unknown user is a start-up error naming the option' '
  set +e; "$TRAINYARDD" --state-dir "$TEST_DIR/x" --project-user=pa:no_such_user_$M 2>err; rc=$?; set -e
  test $rc = 2 && grep -q -- "--project-user: unknown user .no_such_user_$M." err &&
  set +e; "$TRAINYARDD" --state-dir "$TEST_DIR/x" --project-user=nobody 2>err; rc=$?; set -e
  test $rc = 2 && grep -q -- "--project-user: expected PROJECT:USER" err &&
  set +e; "$TRAINYARDD" --state-dir "$TEST_DIR/x" --allow-root-jobs=maybe 2>err; rc=$?; set -e
  test $rc = 2 && grep -q -- "--allow-root-jobs: expected true or false (got .maybe.)" err
'

cat >"$TEST_DIR/users.conf" <<EOF
project-user = pa:nobody
project-user = *:nobody
project-user = pr:root
allow-root-jobs = false
EOF
cat >"$TEST_DIR/users-bad.conf" <<EOF
project-user = pa:nobody
project-user = pb:no_such_user_$M
EOF
test_expect_success 'the config file: an unknown user names the file and line' '
  set +e; "$TRAINYARDD" --state-dir "$TEST_DIR/x" --config "$TEST_DIR/users-bad.conf" 2>err; rc=$?; set -e
  test $rc = 2 && grep -q "users-bad.conf:2: project-user: unknown user" err
'
trainyardd_start conf --max-running-jobs 0 --config "$TEST_DIR/users.conf" && CONF=$TYD_URL || CONF=
test_expect_success 'the config file: one project-user line per project, * for the others' '
  test -n "$CONF" &&
  job_body j.json j_$M "id -u" &&
  test "$(api "$CONF" POST /v1/projects/pa/jobs j.json)" = 200 &&
  test "$(api "$CONF" POST /v1/projects/pz/jobs j.json)" = 200 &&
  test "$(api "$CONF" POST /v1/projects/pr/jobs j.json)" = 400
'
trainyardd_stop conf

trainyardd_start allow --max-running-jobs 0 --project-user=pa:nobody --allow-root-jobs \
  && ALLOW=$TYD_URL || ALLOW=
test_expect_success '--allow-root-jobs: unmapped projects are accepted (they run as root)' '
  test -n "$ALLOW" &&
  job_body j.json j_$M "id -u" &&
  test "$(api "$ALLOW" POST /v1/projects/pb/jobs j.json)" = 200 &&
  grep -q -- "--allow-root-jobs: process-runtime jobs of projects without" "$TEST_DIR/allow.log"
'
trainyardd_stop allow

# --- the supervisor's argv ----------------------------------------------------------------
# trainyardd runs the trainyard-supervisor next to its own binary: a copy of trainyardd next to
# a wrapper that records its arguments, then runs the real supervisor with them.
mkdir -p "$TEST_DIR/wbin" && cp "$TRAINYARDD" "$TEST_DIR/wbin/trainyardd"
cat >"$TEST_DIR/wbin/trainyard-supervisor" <<EOF
#!/bin/sh
if [ "\$1" = supervise-job ]; then printf '%s\n' "\$@" >"$TEST_DIR/argv.\$\$"; fi
exec "$SUPERVISOR" "\$@"
EOF
chmod +x "$TEST_DIR/wbin/trainyard-supervisor"
"$TEST_DIR/wbin/trainyardd" --listen 127.0.0.1:0 --state-dir "$TEST_DIR/wrap" --grace-period 1 \
  --project-user=pa:nobody --allow-root-jobs >"$TEST_DIR/wrap.log" 2>&1 &
WPID=$!
wait_for 20 grep -q "listening on" "$TEST_DIR/wrap.log" &&
WRAP="http://127.0.0.1:$(grep "listening on" "$TEST_DIR/wrap.log" | sed 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/')" || WRAP=
test_expect_success 'the supervisor of an unmapped project (--allow-root-jobs) gets no --run-as' '
  test -n "$WRAP" &&
  job_body b.json b_$M "true" &&
  test "$(api "$WRAP" POST /v1/projects/pb/jobs b.json)" = 200 &&
  wait_for 20 sh -c "ls $TEST_DIR/argv.* >/dev/null 2>&1" &&
  cat "$TEST_DIR"/argv.* && ! grep -q -- --run-as "$TEST_DIR"/argv.* &&
  sed -n 2p "$TEST_DIR"/argv.* | grep -qx -- "$TEST_DIR/wrap"
'
test_expect_success 'the supervisor of a mapped project gets --run-as=USER before its arguments' '
  test -n "$WRAP" &&
  job_body a.json a_$M "true" &&
  test "$(api "$WRAP" POST /v1/projects/pa/jobs a.json)" = 200 &&
  wait_for 20 sh -c "grep -q -- --run-as=nobody $TEST_DIR/argv.*" &&
  a=$(grep -l -- --run-as=nobody "$TEST_DIR"/argv.* | head -1) && cat "$a" &&
  sed -n 1p "$a" | grep -qx supervise-job &&
  sed -n 2p "$a" | grep -qx -- "--run-as=nobody" &&
  sed -n 3p "$a" | grep -qx -- "$TEST_DIR/wrap"
'
kill -TERM "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null

# --- end to end: the replicas run as the project's user -------------------------------------
# A job-dir root nobody can reach (the test's own directory is private to root).
JR=$(mktemp -d /tmp/t5060-jr.XXXXXX) && chmod 755 "$JR"
trainyardd_start e2e --project-user=pa:nobody --job-dir-root "$JR" && E2E=$TYD_URL || E2E=
test_expect_success 'a replica of a project mapped to nobody runs as uid 65534' '
  test -n "$E2E" &&
  job_body u.json u_$M "echo uid-\$(id -u)-$M" &&
  test "$(api "$E2E" POST /v1/projects/pa/jobs u.json)" = 200 &&
  wait_for 30 sh -c "curl -s $E2E/v1/projects/pa/jobs/u_$M | grep -q SUCCEEDED" &&
  test "$(api "$E2E" GET /v1/projects/pa/jobs/u_$M/logs)" = 200 &&
  grep -q "uid-65534-$M" out.json
'
test_expect_success 'its jobDir, made for it, is its own to write in' '
  job_body w.json w_$M "touch $JR/out_$M/model && echo wrote-$M" &&
  "$PYTHON" -c "import json,sys; d=json.load(open(\"w.json\")); d[\"trainingInput\"][\"jobDir\"]=sys.argv[1]; json.dump(d,open(\"w.json\",\"w\"))" "$JR/out_$M" &&
  test "$(api "$E2E" POST /v1/projects/pa/jobs w.json)" = 200 &&
  wait_for 30 sh -c "curl -s $E2E/v1/projects/pa/jobs/w_$M | grep -q -E \"SUCCEEDED|FAILED\"" &&
  curl -s "$E2E/v1/projects/pa/jobs/w_$M" | grep -q SUCCEEDED &&
  test "$(stat -c %u "$JR/out_$M/model")" = 65534 &&
  test "$(stat -c %u "$JR")" = 0
'
# with_job_dir FILE DIR: set the jobDir of the job body FILE
with_job_dir() {
  "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); d[\"trainingInput\"][\"jobDir\"]=sys.argv[2]; json.dump(d,open(sys.argv[1],\"w\"))" "$1" "$2"
}
test_expect_success 'it starts in its jobDir; a jobDir closed to its user fails it, naming both' '
  job_body c.json cwd_$M "touch here && echo cwd-\$(pwd)-$M" && with_job_dir c.json "$JR/cwd_$M" &&
  test "$(api "$E2E" POST /v1/projects/pa/jobs c.json)" = 200 &&
  wait_for 30 sh -c "curl -s $E2E/v1/projects/pa/jobs/cwd_$M | grep -q -E \"SUCCEEDED|FAILED\"" &&
  test "$(api "$E2E" GET /v1/projects/pa/jobs/cwd_$M/logs)" = 200 &&
  grep -q "cwd-$JR/cwd_$M-$M" out.json && test "$(stat -c %u "$JR/cwd_$M/here")" = 65534 &&
  mkdir -m 700 "$JR/closed_$M" &&
  job_body x.json closed_$M "true" && with_job_dir x.json "$JR/closed_$M" &&
  test "$(api "$E2E" POST /v1/projects/pa/jobs x.json)" = 200 &&
  wait_for 30 sh -c "curl -s $E2E/v1/projects/pa/jobs/closed_$M | grep -q -E \"SUCCEEDED|FAILED\"" &&
  test "$(api "$E2E" GET /v1/projects/pa/jobs/closed_$M)" = 200 && cat out.json &&
  json_get out.json "d[\"state\"]" | grep -qx FAILED &&
  json_get out.json "d[\"errorMessage\"]" | grep -q "cannot enter its working directory $JR/closed_$M as user nobody: Permission denied"
'
trainyardd_stop e2e
rm -rf "$JR"

# --- the state directory: private, yet a mapped user's trials reach their metric files -----
SD=$(mktemp -d /tmp/t5060-sd.XXXXXX) && chmod 711 "$SD"
trainyardd_start sd --project-user=pa:nobody --state-dir "$SD/state" && SDU=$TYD_URL || SDU=
# as_nobody CMD...: run CMD as uid/gid 65534
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
cat >"$SD/report.sh" <<'EOF'
test "$(id -u)" = 65534 && printf '{"m": "0.5", "global_step": "1"}\n' >"$CLOUD_ML_HP_METRIC_FILE"
EOF
chmod 755 "$SD/report.sh"
test_expect_success 'a mapped project'"'"'s tuning trials run as its user and report their metric' '
  test -n "$SDU" &&
  job_body t.json t_$M "sh $SD/report.sh" &&
  "$PYTHON" -c "import json; d=json.load(open(\"t.json\")); d[\"trainingInput\"][\"hyperparameters\"]={\"goal\": \"MAXIMIZE\", \"hyperparameterMetricTag\": \"m\", \"maxTrials\": 2, \"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 0, \"maxValue\": 1}]}; json.dump(d, open(\"t.json\", \"w\"))" &&
  test "$(api "$SDU" POST /v1/projects/pa/jobs t.json)" = 200 &&
  wait_for 60 sh -c "curl -s $SDU/v1/projects/pa/jobs/t_$M | grep -q -E \"SUCCEEDED|FAILED\"" &&
  test "$(api "$SDU" GET /v1/projects/pa/jobs/t_$M)" = 200 &&
  { json_get out.json "d[\"state\"]" | grep -qx SUCCEEDED || { cat out.json; false; }; } &&
  test "$(json_get out.json "[t[\"finalMetric\"][\"objectiveValue\"] for t in d[\"trainingOutput\"][\"trials\"]]")" = "[0.5, 0.5]"
'
test_expect_success 'no local user lists its jobs or reads their logs or the store' '
  test "$(stat -c %a "$SD/state")" = 711 && test "$(stat -c %a "$SD/state/jobs")" = 711 &&
  test "$(stat -c %a "$SD/state/jobs/pa/t_$M")" = 711 &&
  test "$(stat -c %a "$SD/state/jobs/pa/t_$M/logs")" = 700 &&
  test "$(stat -c %a "$SD/state/trainyard.db")" = 600 &&
  test "$(stat -c %a "$SD/state/trainyardd.log")" = 600 &&
  ! as_nobody ls "$SD/state/jobs" >/dev/null 2>&1 &&
  ! as_nobody ls "$SD/state/jobs/pa/t_$M/logs" >/dev/null 2>&1 &&
  ! as_nobody cat "$SD/state/trainyard.db" >/dev/null 2>&1 &&
  ! as_nobody cat "$SD/state/jobs/pa/t_$M/logs/service.log" >/dev/null 2>&1
'
trainyardd_stop sd
# tyd_once DIR LOG [FLAGS...]: start trainyardd on DIR until it listens, then stop it
tyd_once() {
  local dir=$1 log=$2 pid; shift 2
  "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir "$dir" "$@" >"$log" 2>&1 & pid=$!
  wait_for 20 grep -q "listening on" "$log" || { kill $pid; return 1; }
  kill -TERM $pid && wait $pid
}
test_expect_success 'what an earlier version left readable is made private; other modes are kept' '
  old="$SD/old" && tyd_once "$old" old0.log --project-user=pa:nobody &&
  mkdir -p "$old/jobs/pa/j1/logs" "$old/jobs/pa/j1/trials/1" "$old/jobs/pb/j2/logs" &&
  chmod 755 "$old" "$old/jobs" "$old/jobs/pa" "$old/jobs/pa/j1" "$old/jobs/pa/j1/logs" \
    "$old/jobs/pa/j1/trials" "$old/jobs/pa/j1/trials/1" "$old/jobs/pb" "$old/jobs/pb/j2" &&
  chmod 750 "$old/jobs/pb/j2/logs" && : >"$old/trainyardd.log" && chmod 644 "$old/trainyard.db" "$old/trainyardd.log" &&
  tyd_once "$old" old.log --project-user=pa:nobody &&
  grep -q "state directory $old: made [0-9]* directories and files an earlier version left readable by every local user private" old.log &&
  test "$(stat -c %a "$old/jobs")" = 711 && test "$(stat -c %a "$old/jobs/pa/j1")" = 711 &&
  test "$(stat -c %a "$old/jobs/pa/j1/logs")" = 700 && test "$(stat -c %a "$old/jobs/pa/j1/trials")" = 711 &&
  test "$(stat -c %a "$old/jobs/pa/j1/trials/1")" = 700 && test "$(stat -c %a "$old/jobs/pb/j2/logs")" = 750 &&
  test "$(stat -c %a "$old/trainyard.db")" = 600 && test "$(stat -c %a "$old/trainyardd.log")" = 600 &&
  test "$(stat -c %a "$old")" = 755 &&
  tyd_once "$old" old2.log --project-user=pa:nobody && ! grep -q "earlier version" old2.log
'
test_expect_success 'a state directory out of reach of a project-user: a warning at start; the umask does not narrow the modes' '
  mkdir -m 700 "$SD/closed" && tyd_once "$SD/closed" closed.log --project-user=pa:nobody &&
  grep -q "warning: the state directory $SD/closed is out of reach of project-user nobody ($SD/closed is not searchable by it): its tuning trials cannot reach their metric directories there" closed.log &&
  mkdir -m 711 "$SD/closed/inner" && chmod 711 "$SD/closed" && chmod 700 "$SD" &&
  { tyd_once "$SD/closed/inner" inner.log --project-user=pa:nobody; rc=$?; chmod 711 "$SD"; test $rc -eq 0; } &&
  grep -q "warning: the state directory $SD/closed/inner is out of reach of project-user nobody ($SD is not searchable by it)" inner.log &&
  umask 027 && tyd_once "$SD/um" um.log --project-user=pa:nobody && umask 022 &&
  test "$(stat -c %a "$SD/um")" = 711 && ! grep -q "out of reach" um.log
'
rm -rf "$SD"

test_done
