#!/bin/sh
# t0110-run-tests: scripts/run-tests.sh itself, on a tree of stand-in programs that record when
# they start and end: the report in its fixed order whatever order the programs ran in, with
# the counts and the summary last, a failing program's log in full; two programs at a time,
# and never two Podman scripts, nor one script in both builds, at once; the ASan programs
# after their build; a machine-wide lock another run holds makes its scripts wait, not the
# others; a program that runs past TY_TEST_TIMEOUT fails and its process group is ended.
. "$(dirname "$0")/../lib/test-lib.sh"

T="$TEST_DIR/tree"
EV="$TEST_DIR/events"
mkdir -p "$T/scripts" "$T/tests/integration" "$T/build/tests" "$T/build-asan/tests" \
  "$T/build-fuzz/fuzz" "$T/fuzz/corpus/x" "$TEST_DIR/locks"
cp "$TY_SOURCE_DIR/scripts/run-tests.sh" "$T/scripts/"
printf '#!/bin/sh\necho style-ok\n' >"$T/scripts/check-style.sh"
# A build that takes half a second (ninja runs it: the trees are configured already).
for b in build-asan build-fuzz; do
  printf 'rule slow\n  command = sleep 0.5 && touch $out\nbuild stamp: slow\ndefault stamp\n' >"$T/$b/build.ninja"
done
printf '#!/bin/sh\necho "stat::number_of_executed_units: 7"\n' >"$T/build-fuzz/fuzz/fuzz-x"
chmod +x "$T/scripts/check-style.sh" "$T/build-fuzz/fuzz/fuzz-x"
# stand_in FILE NAME [fail]: a program that records "start|end NAME BUILD NANOSECONDS" in EV,
# takes 0.3 s, and passes one test and skips one (or fails the second).
stand_in() {
  cat >"$1" <<EOF
#!/bin/sh
b=normal; [ -n "\${ASAN_OPTIONS:-}" ] && b=asan
echo "start $2 \$b \$(date +%s%N)" >>"$EV"
sleep 0.3
echo "end $2 \$b \$(date +%s%N)" >>"$EV"
echo "ok 1 - one"
if [ "${3:-}" = fail ]; then echo "not ok 2 - boom-$RUN_ID"; exit 1; fi
echo "ok 2 - two # SKIP not here"
EOF
  chmod +x "$1"
}
for u in test-u1 test-u2; do
  stand_in "$T/build/tests/$u" "$u" && cp "$T/build/tests/$u" "$T/build-asan/tests/$u"
done
for s in t1000-plain t3030-pytorch t4000-pod1 t4010-pod2 t7000-slurm; do
  stand_in "$T/tests/integration/$s.t" "$s"
done
stand_in "$T/tests/integration/t5000-fails.t" t5000-fails fail

# The run, while "another run" holds the machine-wide Podman lock until t1000-plain (which
# needs none) has run.
: >"$EV"
(
  flock 9 && echo "held $(date +%s%N)" >>"$EV" && i=0 &&
    while ! grep -q "^end t1000-plain normal" "$EV" && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done &&
    echo "released $(date +%s%N)" >>"$EV"
) 9>"$TEST_DIR/locks/trainyard-tests-podman.lock" &
wait_for 10 grep -q held "$EV"
(cd "$T" && TY_TEST_LOCKDIR="$TEST_DIR/locks" TY_TEST_JOBS=2 scripts/run-tests.sh) \
  >"$TEST_DIR/out" 2>"$TEST_DIR/err"
RC=$?
wait

test_expect_success 'it fails (one program failed); the summary is the last line, counted' '
  cat out err &&
  test "$RC" = 1 &&
  test "$(tail -1 out)" = "17 passed, 2 failed, 13 skipped" &&
  grep -q "^wall: [0-9]*s (2 at a time" out &&
  grep -q "^failed: build t5000-fails.t asan t5000-fails.t$" out
'
test_expect_success 'the report is in its fixed order, whatever order the programs ran in' '
  grep -E "^(ok|FAIL|skip) " out | sed -E "s/^(ok|FAIL|skip) +//; s/ +[0-9]+ passed.*//; s/ \(.*//; s/ +built.*//" >order &&
  printf "%s\n" "build unit/test-u1" "build unit/test-u2" "build t1000-plain.t" \
    "build t3030-pytorch.t" "build t4000-pod1.t" "build t4010-pod2.t" "build t5000-fails.t" \
    "build t7000-slurm.t" "asan build" "asan unit/test-u1" "asan unit/test-u2" \
    "asan t1000-plain.t" "asan t3030-pytorch.t" "asan t4000-pod1.t" "asan t4010-pod2.t" \
    "asan t5000-fails.t" "asan t7000-slurm.t" "fuzz build" "fuzz/fuzz-x" \
    "style: formatting, banned functions, no sleep in src/lib" >want &&
  diff want order &&
  grep -q "^skip  asan t3030-pytorch.t (see ASAN_SKIP)$" out &&
  "$PYTHON" - "$EV" <<-\PY
	import sys
	starts = [l.split()[1:3] for l in open(sys.argv[1]) if l.startswith("start ")]
	order = [n + "/" + b for n, b in starts]
	# the Podman scripts ran late (the lock was held), the others did not wait for them
	assert order.index("t1000-plain/normal") < order.index("t4000-pod1/normal"), order
	PY
'
test_expect_success 'a failing program is shown in full, indented' '
  grep -q "^FAIL  build t5000-fails.t (1 passed, 1 failed, exit 1, [0-9.]*s)$" out &&
  grep -q "^    not ok 2 - boom-" out && grep -q "^    ok 1 - one$" out
'
test_expect_success 'the failing checks are named again under the summary' '
  sed -n "/^failed: /,\$p" out >tail.out &&
  grep -q "^  build t5000-fails.t: not ok 2 - boom-$RUN_ID$" tail.out
'
test_expect_success 'two at a time; never two Podman scripts, nor a script in both builds, at once' '
  "$PYTHON" - "$EV" <<-\PY
	import sys
	spans = {}
	for line in open(sys.argv[1]):
	    w = line.split()
	    if w[0] in ("start", "end"):
	        spans.setdefault((w[1], w[2]), {})[w[0]] = int(w[3])
	spans = {k: (v["start"], v["end"]) for k, v in spans.items()}
	assert len(spans) == 15, sorted(spans)
	def overlap(a, b):
	    return a[0] < b[1] and b[0] < a[1]
	most = max(sum(1 for s in spans.values() if s[0] <= t[0] < s[1]) for t in spans.values())
	assert most == 2, most
	pods = [k for k in spans if k[0].startswith("t40")]
	for a in pods:
	    for b in pods:
	        assert a == b or not overlap(spans[a], spans[b]), (a, b)
	for (n, b), s in spans.items():
	    if n[1].isdigit() and b == "asan" and (n, "normal") in spans:
	        assert not overlap(s, spans[(n, "normal")]), n
	PY
'
test_expect_success 'the ASan programs start after the ASan build' '
  built=$(awk "\$5 == \"asan\" && \$6 == \"build\" { print \$2 }" "$(sed -n "s/^logs: \([^ ]*\).*/\1/p" out)/times.txt") &&
  test -n "$built" &&
  "$PYTHON" - "$(sed -n "s/^logs: \([^ ]*\).*/\1/p" out)/times.txt" "$built" <<-\PY
	import sys
	built = float(sys.argv[2])
	for line in open(sys.argv[1]):
	    w = line.split()
	    if w[4] == "asan" and w[5] != "build":
	        assert float(w[0]) >= built, line
	PY
'
test_expect_success 'a lock another run holds: its scripts waited for it, said once' '
  test "$(grep -c "another run holds .*trainyard-tests-podman.lock: its podman scripts wait" err)" = 1 &&
  "$PYTHON" - "$EV" <<-\PY
	import sys
	released = [int(l.split()[1]) for l in open(sys.argv[1]) if l.startswith("released ")][0]
	for l in open(sys.argv[1]):
	    w = l.split()
	    if w[0] == "start" and w[1].startswith("t40"):
	        assert int(w[3]) >= released, l
	PY
'
test_expect_success '--jobs takes a number from 1' '
  set +e; "$T/scripts/run-tests.sh" --jobs 0 2>e; rc=$?; set -e
  test $rc = 2 && grep -q -- "--jobs: expected a number from 1" e
'

# A program that hangs (it and a child of its own would sleep 5 minutes): past the limit it
# fails with a line naming the limit, and its whole process group is gone.
T2="$TEST_DIR/tree2"
cp -r "$T" "$T2"
rm -f "$T2"/tests/integration/*.t "$T2"/build/tests/* "$T2"/build-asan/tests/*
cat >"$T2/build/tests/test-hang" <<EOF
#!/bin/sh
echo "ok 1 - started"
sh -c "sleep 300; : hang-child-$RUN_ID" &
wait
EOF
chmod +x "$T2/build/tests/test-hang"
stand_in "$T2/build/tests/test-u1" test-u1
t0=$(date +%s)
(cd "$T2" && TY_TEST_LOCKDIR="$TEST_DIR/locks" TY_TEST_TIMEOUT=2 scripts/run-tests.sh) \
  >"$TEST_DIR/out2" 2>"$TEST_DIR/err2"
RC2=$? T2_SECS=$(($(date +%s) - t0))

test_expect_success 'a program past TY_TEST_TIMEOUT fails, named, and all it started is ended' '
  cat out2 err2 &&
  echo "exit $RC2 after ${T2_SECS}s" && test "$RC2" = 1 && test "$T2_SECS" -lt 60 &&
  grep -q "^FAIL  build unit/test-hang " out2 &&
  grep -q "^  build unit/test-hang: not ok 9999 - run-tests: still running after 2s (TY_TEST_TIMEOUT): ended$" out2 &&
  grep -q "^ok    build unit/test-u1 " out2 &&
  wait_for 10 no_procs "hang-child-$RUN_ID" && wait_for 10 no_procs "$T2/build/tests/test-hang"
'
rm -rf "$(sed -n "s/^logs: \([^ ]*\).*/\1/p" "$TEST_DIR/out")"
rm -rf "$(sed -n "s/^logs: \([^ ]*\).*/\1/p" "$TEST_DIR/out2")"
test_done
