#!/bin/sh
# t1020-docs-examples: the docs cannot drift from the program: scripts/check-docs.py runs every
# console example of README.md and docs/ against the built programs (a throwaway trainyardd for
# the service's), checks every flag they and each verb's --help name, and that every flag of
# --help is documented. Then the checker itself: each kind of mistake named by its doc line.
. "$(dirname "$0")/../lib/test-lib.sh"

CHECK="$TY_SOURCE_DIR/scripts/check-docs.py"
export TMPDIR="$TEST_DIR"

test_expect_success 'README.md and docs/: every example runs as shown, every flag exists' '
  "$PYTHON" "$CHECK" --build-dir "$TY_BUILD_DIR" --source-dir "$TY_SOURCE_DIR" -v >out 2>&1 ||
    { cat out; false; }
'

cat >"$TEST_DIR/bad.md" <<'DOC'
# A doc with mistakes

Filter with `trainyard jobs list --filtre state:FAILED` or `trainyard jobs list --limit 3`.

```
trainyard jobs describe JOB [--summarize] [--format json|yaml] [--bogus]
build/bin/trainyardd --listen 127.0.0.1:0 --no-such-option &
```

<!-- check: file hello.txt -->
```
hello world
```

```console
$ cat hello.txt
hello ...
$ trainyard local train --grace-period abc
$ trainyard local train --grace-period abc   # exit 2
ERROR: (trainyard.local.train) --grace-period: expected minutes
$ printf 'a\nb\nc\n'
a
...
c
$ printf 'a\nb\n'
a
...
c
```

<!-- check: skip -->
```console
$ false
```
DOC

test_expect_success 'the checker names the doc line of each mistake' '
  set +e; "$PYTHON" "$CHECK" --build-dir "$TY_BUILD_DIR" --source-dir "$TY_SOURCE_DIR" "$TEST_DIR/bad.md" >out 2>&1
  rc=$?; set -e; cat out
  test $rc -eq 1 &&
  grep -q "bad.md:3: .trainyard jobs list --filtre.: trainyard jobs list has no flag --filtre" out &&
  ! grep -q -- "--limit" out &&
  grep -q "bad.md:6: .trainyard jobs describe --bogus." out &&
  grep -q "bad.md:7: .trainyardd --no-such-option." out &&
  grep -q "bad.md:18: .\$ trainyard local train --grace-period abc. exited 2, the doc says 0" out &&
  grep -q "bad.md:20: the output of .\$ trainyard local train --grace-period abc   # exit 2. (line 19) does not match" out &&
  grep -q "bad.md:28: the output of .\$ printf .a.nb.n.. (line 25) does not match here: .c." out &&
  grep -q "bad.md:32: a skipped example must say why" out &&
  test "$(grep -c "^/.*bad.md:[0-9]*: " out)" -eq 7
'

test_expect_success 'a flag of --help missing from docs/cli.md is named' '
  mkdir -p src/docs && cp "$TY_SOURCE_DIR"/docs/*.md src/docs/ &&
  sed -i "s/--polling-interval/--polling-period/g" src/docs/cli.md &&
  set +e; "$PYTHON" "$CHECK" --build-dir "$TY_BUILD_DIR" --source-dir src --only flags >out 2>&1
  rc=$?; set -e; cat out
  test $rc -eq 1 &&
  grep -q "^trainyard jobs stream-logs --help: --polling-interval is not documented in docs/cli.md" out &&
  grep -q "^docs/cli.md:[0-9]*: .trainyard jobs stream-logs --polling-period.: trainyard jobs stream-logs has no flag" out &&
  grep -q "^docs/cli.md:[0-9]*: .--polling-period. is in the flags of .trainyard jobs stream-logs." out
'

test_done
