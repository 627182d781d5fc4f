#!/bin/sh
# t5080-service-disk-full: trainyardd with its state directory on a 3 MiB tmpfs that fills up
# (docs/service.md, "When the disk fills"). While full: writes are refused with 429
# RESOURCE_EXHAUSTED naming the full filesystem (never a 500, never a crash), accepted jobs wait
# in the queue at their place (jobPosition >= 1); once space returns, without a restart, every
# accepted job runs to SUCCEEDED; the store passes PRAGMA integrity_check, every acknowledged job
# is there, nothing refused is (no row, no directory). A log directory that fills while a job
# runs: the job goes on, lost lines are counted and said once space returns, the job ends
# SUCCEEDED (its final state waits for room). `local train` on a full filesystem fails cleanly.
# I/O errors beyond ENOSPC: an ext4 image forced read-only (EROFS) answers 503 UNAVAILABLE and
# stays intact. Needs root (mount); skipped otherwise.
. "$(dirname "$0")/../lib/test-lib.sh"

NAMES="full-refused space-returns store-consistent log-dir-fills local-train-full queued-not-forgotten erofs"
if [ "$(id -u)" != 0 ] || ! command -v mount >/dev/null; then
  for t in $NAMES; do test_skip "$t" "needs root to mount a small filesystem"; done
  test_done
fi

M=$RUN_ID
SVC="$TEST_DIR/svc"
EXT="$TEST_DIR/ext"
mkdir -p "$SVC" "$EXT"
if ! mount -t tmpfs -o size=3m tmpfs "$SVC"; then
  for t in $NAMES; do test_skip "$t" "cannot mount a tmpfs"; done
  test_done
fi
cleanup() {
  for p in $(cat "$TEST_DIR"/*.pid 2>/dev/null); do kill -TERM "$p" 2>/dev/null; done
  sleep 0.3
  mountpoint -q "$SVC" && umount -l "$SVC"
  mountpoint -q "$EXT" && umount -l "$EXT"
  return 0
}
trap cleanup EXIT
trainyardd_start svc || { echo "Bail out! trainyardd did not start"; exit 1; }
BASE=$TYD_URL

# api METHOD PATH [BODY_FILE]: body to out.json, prints the HTTP status
api() {
  if [ -n "${3:-}" ]; then
    curl -s -o out.json -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' --data-binary "@$3" "${URL:-$BASE}$2"
  else
    curl -s -o out.json -w '%{http_code}' -X "$1" "${URL:-$BASE}$2"
  fi
}
get() { curl -s -o "$1.json" "${URL:-$BASE}/v1/projects/p1/jobs/$1"; }
URL=
state_is() { get "$1" && [ "$(json_get "$1.json" 'd.get("state")')" = "$2" ]; }
# body JOB SCRIPT: the create body of a job JOB whose master runs `sh -c SCRIPT`
body() {
  write_job "$1.ti" "$2" &&
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["jobId"]=sys.argv[2]; json.dump(d, open(sys.argv[3],"w"))' "$1.ti" "$1" "$1.body"
}
fill() { dd if=/dev/zero of="$SVC/fill.$1" bs=64k 2>/dev/null || true; }
unfill() { rm -f "$SVC"/fill.*; }
# leave KIB: free that much of the full filesystem again (some creates then fit, and use it up)
leave() { f=$(ls "$SVC"/fill.* | head -1); truncate -s $(($(stat -c %s "$f") - $1 * 1024)) "$f"; }
# is_full_error: out.json is Google's error for a full filesystem
is_full_error() {
  test "$(json_get out.json 'd["error"]["status"]')" = RESOURCE_EXHAUSTED &&
  test "$(json_get out.json 'd["error"]["code"]')" = 429 &&
  json_get out.json 'd["error"]["message"]' | grep -q "state directory is full"
}
all_succeeded() {
  for j in $(cat "$TEST_DIR/acked"); do state_is "$j" SUCCEEDED || return 1; done
}
# every acked job still QUEUED has a place in the queue (jobPosition >= 1)
queued_have_position() {
  for j in $(cat "$TEST_DIR/acked"); do
    get "$j" || return 1
    if [ "$(json_get "$j.json" 'd["state"]')" = QUEUED ]; then
      [ "$(json_get "$j.json" 'int(d.get("jobPosition", "0"))')" -ge 1 ] || return 1
    fi
  done
}

test_expect_success 'full: creates, patches and cancels are refused with 429 RESOURCE_EXHAUSTED' '
  body before "echo before-$M" && test "$(api POST /v1/projects/p1/jobs before.body)" = 200 &&
  wait_for 20 state_is before SUCCEEDED &&
  : >"$TEST_DIR/acked" && : >"$TEST_DIR/refused" &&
  "$PYTHON" - "$M" <<-PY &&
	import json, sys
	for i in range(1, 41):
	    ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "masterConfig": {"imageUri": "example.com/test:1", "containerCommand": ["sh", "-c", "echo hello-%d-%s" % (i, sys.argv[1])]}}
	    json.dump({"jobId": "j%d" % i, "trainingInput": ti}, open("j%d.body" % i, "w"))
	PY
  fill 1 && leave 128 && i=0 && no=0 &&
  while [ $i -lt 40 ] && [ $no -lt 3 ]; do
    i=$((i + 1)) &&
    code=$(api POST /v1/projects/p1/jobs "j$i.body") &&
    case $code in
      200) echo "j$i" >>"$TEST_DIR/acked"; no=0 ;;
      429) is_full_error && echo "j$i" >>"$TEST_DIR/refused" && no=$((no + 1)) ;;
      *) echo "j$i: unexpected $code: $(cat out.json)"; false ;;
    esac
  done &&
  cat out.json && test -s "$TEST_DIR/refused" &&
  echo "{\"labels\": {\"team\": \"x\"}}" >p.json &&
  code=$(api PATCH "/v1/projects/p1/jobs/before?updateMask=labels" p.json) &&
  echo "patch: $code $(cat out.json)" && { test $code = 200 || { test $code = 429 && is_full_error; }; } &&
  body held "sleep 0.1" && code=$(api POST /v1/projects/p1/jobs held.body) && echo "create held: $code" &&
  test "$(curl -s -o /dev/null -w "%{http_code}" "$BASE/healthz")" = 200 &&
  kill -0 "$(cat "$TEST_DIR/svc.pid")"
'

test_expect_success 'space-returns: every accepted job ends SUCCEEDED, with no restart' '
  echo "acked: $(cat "$TEST_DIR/acked" | tr "\n" " ")" &&
  sleep 1 && unfill &&
  wait_for 30 all_succeeded &&
  for j in $(cat "$TEST_DIR/acked"); do
    # its output, or the line saying it was lost (it ran while the disk was full)
    curl -s "$BASE/v1/projects/p1/jobs/$j/logs?pageSize=1000" >"$j.logs" &&
    grep -q -e "hello-${j#j}-$M" -e "log line(s) of this task were lost" "$j.logs" || { echo "no output of $j"; cat "$j.logs"; false; }
  done
'

test_expect_success 'store-consistent: integrity ok, acknowledged jobs there, refused ones nowhere' '
  "$PYTHON" - "$SVC" "$TEST_DIR/acked" "$TEST_DIR/refused" <<-PY
	import os, sqlite3, sys
	svc, acked, refused = sys.argv[1:]
	db = sqlite3.connect("file:%s/trainyard.db?mode=ro" % svc, uri=True)
	assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
	rows = {r[0]: r[1] for r in db.execute("SELECT job_id, state FROM jobs WHERE project = ?", ("p1",))}
	dirs = set(os.listdir(os.path.join(svc, "jobs", "p1")))
	for j in open(acked).read().split():
	    assert rows.get(j) == "SUCCEEDED", (j, rows.get(j))
	    assert j in dirs, j
	for j in open(refused).read().split():
	    assert j not in rows and j not in dirs, j
	assert dirs <= set(rows), dirs - set(rows)
	print("ok", len(rows), "rows")
	PY
'

test_expect_success 'log-dir-fills: the job goes on, lost lines are counted and said, it ends SUCCEEDED' '
  body logger "i=0; while [ \$i -lt 150 ]; do printf \"line-%d-%s-%0400d\\n\" \$i $M 0; i=\$((i+1)); sleep 0.02; done" &&
  test "$(api POST /v1/projects/p1/jobs logger.body)" = 200 &&
  wait_for 20 state_is logger RUNNING &&
  sleep 0.3 && fill 2 && sleep 1.5 && get logger && json_get logger.json "d[\"state\"]" &&
  unfill &&
  wait_for 20 state_is logger SUCCEEDED &&
  curl -s -o logger.logs "$BASE/v1/projects/p1/jobs/logger/logs?pageSize=1000" &&
  "$PYTHON" - logger.logs "$M" <<-PY
	import json, re, sys
	d = json.load(open(sys.argv[1])); m = sys.argv[2]
	msgs = [e["message"] for e in d["entries"]]
	lost = [x for x in msgs if "log line(s) of this task were lost" in x]
	assert lost, "no line about lost lines"
	n = int(lost[0].split()[0])
	seen = [x for x in msgs if x.startswith("line-")]
	good = re.compile(r"line-[0-9]+-" + m + "-0{400}")
	assert all(good.fullmatch(x) for x in seen), [x[:60] for x in seen if not good.fullmatch(x)]
	assert any(x.startswith("line-149-") for x in seen), "the last line is missing"
	assert n >= 150 - len(seen), (n, len(seen))
	print(lost[0], len(seen), "lines kept")
	PY
'

test_expect_success 'local-train-full: trainyard local train on a full filesystem fails cleanly' '
  mkdir -p "$SVC/local" && fill 3 &&
  write_job lt.json "echo local-$M" &&
  set +e; TRAINYARD_HOME="$SVC/local" "$TRAINYARD" local train lt_full --config lt.json >lt.out 2>lt.err; rc=$?; set -e &&
  unfill && cat lt.out lt.err && echo "rc=$rc" &&
  test $rc -lt 128
'

# The second filesystem: ext4 with few inodes. With them used up, the store still has room (its
# files exist) but a job's directory cannot be made (ENOSPC): the supervisor gives the job back.
EXT_OK=no
if command -v mkfs.ext4 >/dev/null && truncate -s 16M "$TEST_DIR/ext.img" &&
   mkfs.ext4 -q -F -N 128 "$TEST_DIR/ext.img" && mount -o loop,errors=remount-ro "$TEST_DIR/ext.img" "$EXT"; then
  EXT_OK=yes
  "$TY_BUILD_DIR/bin/trainyardd" --listen 127.0.0.1:0 --state-dir "$EXT/s" $([ "$(id -u)" -eq 0 ] && echo --allow-root-jobs) >"$TEST_DIR/ro.log" 2>&1 &
  echo $! >"$TEST_DIR/ro.pid"
  wait_for 20 grep -q "listening on" "$TEST_DIR/ro.log"
  URL="http://127.0.0.1:$(sed -n "s/.*127\.0\.0\.1:\([0-9]*\).*/\1/p" "$TEST_DIR/ro.log" | head -1)"
fi
export URL

if [ $EXT_OK = yes ]; then
test_expect_success 'queued-not-forgotten: a job that cannot start waits at its place, and starts when space returns' '
  body first "true" && test "$(api POST /v1/projects/p1/jobs first.body)" = 200 &&
  wait_for 20 state_is first SUCCEEDED &&
  mkdir "$EXT/fill" && i=0 && while touch "$EXT/fill/$i" 2>/dev/null; do i=$((i + 1)); done && echo "$i inodes used up" &&
  for j in k1 k2 k3; do body $j "echo out-$j-$M" && test "$(api POST /v1/projects/p1/jobs $j.body)" = 200 || exit 1; done &&
  wait_for 10 grep -q "its supervisor could not start it" ro.log &&
  # Every 2 s the daemon admits them again (jobPosition 0 while a supervisor tries, longer
  # on a loaded machine) and puts them back: each is seen waiting at its place between.
  at_place() { state_is $1 QUEUED && test "$(json_get $1.json "int(d[\"jobPosition\"])")" -ge "$2"; } &&
  sleep 1 &&
  for j in k1 k2 k3; do wait_for 10 at_place $j 1 || exit 1; done &&
  wait_for 10 at_place k1 1 && test "$(json_get k1.json "int(d[\"jobPosition\"])")" = 1 &&
  test ! -e "$EXT/s/jobs/p1/k1" &&
  rm -rf "$EXT/fill" &&
  for j in k1 k2 k3; do wait_for 20 state_is $j SUCCEEDED || exit 1; done &&
  curl -s "$URL/v1/projects/p1/jobs/k3/logs" | grep -q "out-k3-$M" &&
  test "$(json_get k1.json "d.get(\"attemptStatus\", {}).get(\"internalRetries\", 0)")" = 0
'

test_expect_success 'erofs: a filesystem gone read-only (EROFS, EIO) answers 503 UNAVAILABLE and stays intact' '
  rpid=$(cat "$TEST_DIR/ro.pid") &&
  dev=$(basename "$(findmnt -n -o SOURCE "$EXT")") &&
  test -w "/sys/fs/ext4/$dev/trigger_fs_error" &&
  body b "true" &&
  echo 1 >"/sys/fs/ext4/$dev/trigger_fs_error" &&
  code=$(api POST /v1/projects/p1/jobs b.body) &&
  cat out.json &&
  test "$code" = 503 &&
  test "$(json_get out.json "d[\"error\"][\"status\"]")" = UNAVAILABLE &&
  json_get out.json "d[\"error\"][\"message\"]" | grep -q "state directory cannot be written" &&
  echo "{\"labels\": {\"team\": \"x\"}}" >p.json &&
  test "$(api PATCH "/v1/projects/p1/jobs/k1?updateMask=labels" p.json)" = 503 &&
  test "$(api GET /v1/projects/p1/jobs/k1)" = 200 &&
  kill -TERM $rpid &&
  wait_for 20 sh -c "! kill -0 $rpid" &&
  umount "$EXT" &&
  { e2fsck -fy "$TEST_DIR/ext.img" >fsck.log 2>&1 || test $? -le 1; } &&
  mount -o loop "$TEST_DIR/ext.img" "$EXT" &&
  "$PYTHON" -c "import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); assert db.execute(\"PRAGMA integrity_check\").fetchone()[0]==\"ok\"; r=[x[0] for x in db.execute(\"SELECT job_id FROM jobs ORDER BY job_id\")]; print(r); assert r==[\"first\",\"k1\",\"k2\",\"k3\"]" "$EXT/s/trainyard.db"
'
else
  test_skip "queued-not-forgotten" "no ext4 loop mount here"
  test_skip "erofs" "no ext4 loop mount here"
fi

cleanup
trap - EXIT
test_done
