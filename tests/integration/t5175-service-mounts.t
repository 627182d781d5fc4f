#!/bin/sh
# t5175-service-mounts: a root trainyardd with the container runtime covers its
# --job-dir-roots and state directory with nosuid,nodev mounts at start (docs/security.md),
# their submounts included, so that a set-user-ID program a container job (root in its
# container) leaves there gives a local user no root; the mounts outlive it and a restart adds
# none; a root with a symbolic link on its way is refused; --leave-mounts and the process
# runtime only warn or say nothing. Needs root and a scratch directory on a mount without
# nosuid.
. "$(dirname "$0")/../lib/test-lib.sh"

NAMES="made below link leave process"
suid=$("$PYTHON" -c "import os,sys; f=os.statvfs(sys.argv[1]).f_flag; print(int(f & (os.ST_NOSUID | os.ST_NODEV) != (os.ST_NOSUID | os.ST_NODEV)))" "$TEST_DIR")
if [ "$(id -u)" -ne 0 ] || [ "$suid" != 1 ]; then
  for t in $NAMES; do test_skip "mounts: $t" "needs root and a scratch directory on a mount without nosuid,nodev"; done
  test_done
fi
chmod 711 "$TEST_DIR" # a local user may reach the job directory, as on a shared machine
mkdir -p "$TEST_DIR/jobs/scratch" "$TEST_DIR/other"
# a file system of its own below a root (the cover must reach it too)
mount -t tmpfs -o size=4m tmpfs "$TEST_DIR/jobs/scratch"

# tyd NAME FLAGS...: run trainyardd on state NAME until it listens, then stop it; NAME.log
tyd() {
  local name=$1 pid; shift
  : >"$TEST_DIR/$name.log" # now: the redirection below is the background process's
  "$TY_BUILD_DIR/bin/trainyardd" --listen 127.0.0.1:0 --state-dir "$TEST_DIR/$name" "$@" \
    >>"$TEST_DIR/$name.log" 2>&1 &
  pid=$!
  wait_for 20 grep -q "listening on" "$TEST_DIR/$name.log" || { kill "$pid"; return 1; }
  kill -TERM "$pid" && wait "$pid"
}
# mounted DIR: the mount options of the mounts at DIR, one line each
mounted() {
  awk -v d="$1" '$5 == d { print $6 }' /proc/self/mountinfo
}

test_expect_success 'mounts: the roots and the state directory are covered nosuid,nodev, once' '
  tyd svc --runtime container --job-dir-root "$TEST_DIR/jobs" --job-dir-root "p:$TEST_DIR/other" &&
  grep -q -- "--job-dir-root $TEST_DIR/jobs: covered it with a nosuid,nodev mount of its own, which stays" svc.log &&
  grep -q -- "--job-dir-root $TEST_DIR/other: covered it with a nosuid,nodev mount" svc.log &&
  grep -q "the state directory (its trials. metric directories) $TEST_DIR/svc: covered it with a nosuid,nodev" svc.log &&
  ! grep -q warning svc.log &&
  for d in jobs other svc; do
    test "$(mounted "$TEST_DIR/$d" | wc -l)" = 1 &&
    mounted "$TEST_DIR/$d" | grep -q "nosuid,nodev" || exit 1
  done &&
  mounted "$TEST_DIR/jobs/scratch" | tail -1 | grep -q "nosuid,nodev" &&
  cp /usr/bin/id jobs/id && chmod 4755 jobs/id && cp /usr/bin/id jobs/scratch/id && chmod 4755 jobs/scratch/id &&
  test "$(setpriv --reuid=65534 --regid=65534 --clear-groups "$TEST_DIR/jobs/id" -u)" = 65534 &&
  test "$(setpriv --reuid=65534 --regid=65534 --clear-groups "$TEST_DIR/jobs/scratch/id" -u)" = 65534 &&
  tyd svc --runtime container --job-dir-root "$TEST_DIR/jobs" &&
  ! grep -q "nosuid" svc.log &&
  test "$(mounted "$TEST_DIR/jobs" | wc -l)" = 1 && test "$(mounted "$TEST_DIR/svc" | wc -l)" = 1
'
test_expect_success 'mounts: a root already nosuid with a mount below it that is not; an unbindable one is left' '
  mkdir -p nsroot ubroot/sub && mount -t tmpfs -o size=4m,nosuid,nodev tmpfs nsroot &&
  mkdir nsroot/sub && mount -t tmpfs -o size=4m tmpfs nsroot/sub &&
  mount -t tmpfs -o size=4m tmpfs ubroot/sub && mount --make-unbindable ubroot/sub && echo kept >ubroot/sub/f &&
  tyd below --runtime container --job-dir-root "$TEST_DIR/nsroot" --job-dir-root "$TEST_DIR/ubroot" &&
  grep -q -- "--job-dir-root $TEST_DIR/nsroot: covered it with a nosuid,nodev mount" below.log &&
  mounted "$TEST_DIR/nsroot/sub" | tail -1 | grep -q "nosuid,nodev" &&
  grep -q -- "warning: --job-dir-root $TEST_DIR/ubroot is on a mount without nosuid and nodev, and is left so (an unbindable mount below it, which a cover would hide)" below.log &&
  test "$(cat ubroot/sub/f)" = kept
'
test_expect_success 'mounts: a root with a symbolic link on its way is refused, naming the real path' '
  ln -s "$TEST_DIR/other" "$TEST_DIR/link" &&
  set +e; "$TY_BUILD_DIR/bin/trainyardd" --listen 127.0.0.1:0 --state-dir "$TEST_DIR/lnk" --runtime container \
    --job-dir-root "$TEST_DIR/link" >lnk.log 2>&1; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q -- "--job-dir-root: .$TEST_DIR/link. has a symbolic link on its way, which is not followed (one who can change it could send jobs anywhere); give the real path, .$TEST_DIR/other." lnk.log
'
test_expect_success 'mounts: --leave-mounts only warns' '
  mkdir -p lj && tyd leave --runtime container --job-dir-root "$TEST_DIR/lj" --leave-mounts &&
  grep -q -- "warning: --job-dir-root $TEST_DIR/lj is on a mount without nosuid and nodev, and is left so (--leave-mounts): a container job" leave.log &&
  grep -q "warning: the state directory (its trials. metric directories) $TEST_DIR/leave is on a mount without" leave.log &&
  test -z "$(mounted "$TEST_DIR/lj")" && test -z "$(mounted "$TEST_DIR/leave")"
'
test_expect_success 'mounts: the process runtime (no job root in a container) leaves them' '
  mkdir -p pj && tyd process --job-dir-root "$TEST_DIR/pj" &&
  ! grep -q "nosuid" process.log &&
  test -z "$(mounted "$TEST_DIR/pj")" && test -z "$(mounted "$TEST_DIR/process")"
'

test_done
