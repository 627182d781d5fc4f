#!/bin/sh
# t5090-service-kill-loop: the short version of bench/faults (the kill -9 loop): jobs created
# from 8 threads while trainyardd is killed with SIGKILL and started again 5 times, once with
# the store's write lock held for longer than three of the store's busy waits (a stalled disk,
# a backup) while jobs end, the daemon killed right after. Then every job ends, and from
# outside: none lost, none duplicated, none run twice, none in the wrong final state, no
# process left behind. Before supervisors kept trying to record their outcome and final state,
# a job that ended during the lock was run a second time (or ended FAILED by internal error).
. "$(dirname "$0")/../lib/test-lib.sh"

test_expect_success 'kill -9 loop under create load: nothing lost, run twice, wrong or left' '
  "$PYTHON" "$TY_SOURCE_DIR/bench/faults/killloop.py" "$TY_BUILD_DIR" "$TEST_DIR/loop" \
    --cycles 5 --rate 10 --slow 0.5 --lock-every 5 --lock-seconds 33 --up-max 1.5 --settle 60 \
    >loop.out 2>&1; rc=$?
  cat loop.out
  test "$rc" -eq 0 &&
  grep -q "^RESULT cycles=5 jobs=[1-9][0-9]* lost=0 duplicated=0 run_twice=0 wrong=0 not_ended=0 left_behind=0 unexpected_answers=0 " loop.out
'

test_done
