#!/bin/sh
# t0100-layers: the layers of docs/internals/layers.md hold, and the build enforces them: a
# wrong-way #include does not compile, and trainyardd links no runtime.
. "$(dirname "$0")/../lib/test-lib.sh"

SRC=$TY_SOURCE_DIR
CC_DB="$TY_BUILD_DIR/compile_commands.json"

# compile_as FILE.c OBJ_OF: compile FILE.c with the flags the build uses for the source
# OBJ_OF (a path under src/), so it sees exactly the headers that library sees.
compile_as() {
  "$PYTHON" - "$CC_DB" "$2" "$1" <<'PY'
import json, shlex, subprocess, sys
db, of, probe = sys.argv[1:4]
for e in json.load(open(db)):
    if e["file"].endswith(of):
        args = shlex.split(e["command"])
        out, skip = [], False
        for a in args:
            if skip:
                skip = False
            elif a in ("-MQ", "-MF", "-MT"):
                skip = True
            elif a != "-MD" and not a.startswith("-fdiagnostics-color"):
                out.append(a)
        out[out.index("-c") + 1] = probe
        out[out.index("-o") + 1] = "/dev/null"
        sys.exit(subprocess.run(out, cwd=e["directory"]).returncode)
sys.exit(99)
PY
}

test_expect_success 'every #include points down the layers' '
  "$SRC/scripts/check-layers.py"
'
test_expect_success 'the checker names a wrong-way include and its rule' '
  mkdir -p fake/src && cp -r "$SRC/src/." fake/src/ && mkdir -p fake/scripts &&
  cp "$SRC/scripts/check-layers.py" fake/scripts/ &&
  printf "#include \"supervise.h\"\n" >>fake/src/lib/store/jobfilter.c &&
  ! fake/scripts/check-layers.py >out &&
  grep -q "jobfilter.c.*supervise.h of src/lib/run, which src/lib/store may not use" out
'
test_expect_success 'the build refuses the store including the supervisor' '
  printf "#include \"supervise.h\"\n" >probe.c &&
  ! compile_as "$PWD/probe.c" src/lib/store/jobfilter.c 2>err &&
  grep -q "supervise.h" err
'
test_expect_success 'the build refuses a runtime including another runtime' '
  printf "#include \"container-internal.h\"\n" >probe.c &&
  ! compile_as "$PWD/probe.c" src/lib/exec/slurm/slurm.c 2>err &&
  grep -q "container-internal.h" err
'
test_expect_success 'the build refuses trainyardd including a runtime' '
  printf "#include \"process.h\"\n" >probe.c &&
  ! compile_as "$PWD/probe.c" src/trainyardd/api-jobs.c 2>err &&
  grep -q "process.h" err
'
test_expect_success 'the same probe compiles where the layers allow it' '
  printf "#include \"process.h\"\n" >probe.c &&
  compile_as "$PWD/probe.c" src/trainyard-task/main.c
'
test_expect_success 'trainyardd carries no runtime and no libcurl' '
  ! nm "$TY_BUILD_DIR/bin/trainyardd" | grep -E " ty_runtime_(process|container|slurm)$" &&
  ! ldd "$TY_BUILD_DIR/bin/trainyardd" | grep -q libcurl &&
  nm "$TY_BUILD_DIR/bin/trainyard-supervisor" | grep -q " ty_runtime_container$"
'
test_expect_success 'every program is in one folder' '
  for p in trainyard trainyardd trainyard-supervisor trainyard-task; do
    test -x "$TY_BUILD_DIR/bin/$p" || { echo "missing bin/$p"; exit 1; }
  done
'
test_done
