#!/bin/sh
# t1010-cli-help-config: -h and `trainyard help VERB`, "did you mean" (commands, flags,
# machine types, enum values, job fields, config keys), `trainyard config set|get|unset|list`
# (against the reader: a jobs verb uses what config set wrote), the man pages (every flag of
# every --help in them), bash completion, and `meson install --destdir` (the files where a
# distribution expects them, the installed programs run, the unit verifies).
. "$(dirname "$0")/../lib/test-lib.sh"

export XDG_CONFIG_HOME="$TEST_DIR/xdg"
unset TRAINYARD_CONFIG TRAINYARD_PROJECT TRAINYARD_ACCESS_TOKEN TRAINYARD_API_ENDPOINT
unset TRAINYARD_GPUS TRAINYARD_GPU_DEVICES TRAINYARD_CUSTOM_CA_CERTS_FILE
CFG="$XDG_CONFIG_HOME/trainyard/config"
VERBS="local.train jobs.submit.training jobs.describe jobs.list jobs.cancel jobs.stream-logs
jobs.update study config.set config.get config.unset config.list"

# ---- help ----------------------------------------------------------------------------------

test_expect_success '-h is --help for the program, every group and every verb' '
  "$TRAINYARD" -h >top && grep -q "local train" top && grep -q "config set" top &&
  "$TRAINYARD" jobs -h >g && grep -q "jobs describe" g && ! grep -q "local train" g &&
  "$TRAINYARD" jobs submit -h >g2 && grep -q "jobs submit training" g2 &&
  for v in $VERBS; do
    v=$(echo "$v" | tr . " ")
    "$TRAINYARD" $v -h >h || { echo "$v -h failed"; exit 1; }
    "$TRAINYARD" $v --help >h2 && cmp h h2 && grep -q "^Usage: trainyard" h || exit 1
  done
'
test_expect_success 'trainyard help GROUP VERB prints that verb'"'"'s help (exit 0)' '
  "$TRAINYARD" help local train >h && "$TRAINYARD" local train --help >h2 && cmp h h2 &&
  grep -q -- "--dry-run" h &&
  "$TRAINYARD" help jobs submit training >h && grep -q -- "--stream-logs" h &&
  "$TRAINYARD" help jobs >h && grep -q "jobs stream-logs" h &&
  "$TRAINYARD" help >h && "$TRAINYARD" --help >h2 && cmp h h2
'
test_expect_success 'trainyard help of an unknown command: exit 2, with the nearest' '
  set +e; "$TRAINYARD" help jobs lsit >out 2>err; rc=$?; set -e
  test $rc -eq 2 && test ! -s out &&
  grep -q "unknown command .jobs lsit. (did you mean .trainyard jobs list.?)" err
'

test_expect_success 'trainyardd: -h is --help; a mistyped option or setting gets the nearest' '
  TYD="$TY_BUILD_DIR/bin/trainyardd" &&
  "$TYD" -h >h && "$TYD" --help >h2 && cmp h h2 && grep -q "^Usage: trainyardd" h &&
  set +e; "$TYD" --listn 127.0.0.1:0 >out 2>err; rc=$?; set -e
  test $rc -eq 2 && test ! -s out &&
  grep -qx "trainyardd: unknown option .--listn. (did you mean .--listen.?)" err &&
  set +e; "$TYD" --state-dri=x 2>err; set -e
  grep -q "unknown option .--state-dri. (did you mean .--state-dir.?)" err &&
  set +e; "$TYD" --max-conn=3 2>err; set -e
  grep -q "ambiguous option .--max-conn.: --max-connections, --max-connections-per-address" err &&
  set +e; "$TYD" --verbose=3 2>err; set -e
  grep -q -- "--verbose takes no value" err &&
  set +e; "$TYD" --frobnicate 2>err; set -e
  grep -q "unknown option .--frobnicate. (see --help)" err &&
  printf "listen = 127.0.0.1:0\nstate-dri = x\n" >tyd.conf &&
  set +e; "$TYD" --config tyd.conf 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "tyd.conf:2: state-dri: unknown setting (did you mean .state-dir.?)" err
'
test_expect_success 'the internal programs answer -h and --help too (exit 0), a wrong call exit 2' '
  for p in trainyard-supervisor trainyard-task trainyard-guardian; do
    "$TY_BUILD_DIR/bin/$p" -h >h && "$TY_BUILD_DIR/bin/$p" --help >h2 && cmp h h2 &&
    grep -q "^usage: $p " h && grep -q "Not for direct use\|not for direct use" h || exit 1
    set +e; "$TY_BUILD_DIR/bin/$p" --bogus >out 2>err; rc=$?; set -e
    test $rc -eq 2 && test ! -s out && cmp h err || exit 1
  done
'

# ---- did you mean --------------------------------------------------------------------------

test_expect_success 'a mistyped command gets the nearest, word by word' '
  set +e; "$TRAINYARD" jobs sumbit 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown command .jobs sumbit. (did you mean .trainyard jobs submit.?)" err &&
  set +e; "$TRAINYARD" job submit trainig x 2>err; set -e
  grep -q "did you mean .trainyard jobs submit training.?" err &&
  set +e; "$TRAINYARD" confg st project x 2>err; set -e
  grep -q "did you mean .trainyard config set.?" err &&
  set +e; "$TRAINYARD" jobs frobnicate 2>err; set -e
  grep -q "unknown command .jobs frobnicate.$" err
'
test_expect_success 'a mistyped flag gets the nearest flag of that verb' '
  set +e; "$TRAINYARD" local train --job-dirr=/tmp/x --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown flag .--job-dirr. (did you mean .--job-dir.?)" err &&
  set +e; "$TRAINYARD" jobs list --fliter x 2>err; set -e
  grep -q "(trainyard.jobs.list) unknown flag .--fliter. (did you mean .--filter.?)" err &&
  set +e; "$TRAINYARD" jobs describe j --sumarize 2>err; set -e
  grep -q "did you mean .--summarize.?" err &&
  set +e; "$TRAINYARD" study --jsnl 2>err; set -e
  grep -q "did you mean .--jsonl.?" err &&
  set +e; "$TRAINYARD" config list --al 2>err; set -e
  grep -q "did you mean .--all.?" err &&
  set +e; "$TRAINYARD" local train --worker=2 2>err; set -e
  grep -q "ambiguous flag .--worker.: --worker-machine-type, --worker-image-uri" err &&
  set +e; "$TRAINYARD" local train --dry-run=yes 2>err; set -e
  grep -q -- "--dry-run takes no value" err &&
  set +e; "$TRAINYARD" local train --bogus-flag 2>err; set -e
  grep -q "unknown flag .--bogus-flag. (see --help)" err
'
test_expect_success 'a long flag must be typed in full: an abbreviation is refused, naming the flag' '
  set +e; "$TRAINYARD" local train --conf /dev/null --dry-run >out 2>err; rc=$?; set -e
  test $rc -eq 2 && test ! -s out &&
  grep -qx "ERROR: (trainyard.local.train) unknown flag .--conf. (did you mean .--config.? flags are not abbreviated)" err &&
  set +e; "$TRAINYARD" local train --config=/dev/null --dry-r 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown flag .--dry-r. (did you mean .--dry-run.?" err &&
  set +e; "$TRAINYARD" jobs list --proj p 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "(trainyard.jobs.list) unknown flag .--proj. (did you mean .--project.?" err &&
  set +e; "$TRAINYARD" study --json </dev/null 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown flag .--json. (did you mean .--jsonl.?" err &&
  set +e; "$TRAINYARD" --vers >out 2>err; rc=$?; set -e
  test $rc -eq 2 && test ! -s out && grep -q "unknown flag .--vers. (did you mean .--version.?" err &&
  set +e; "$TY_BUILD_DIR/bin/trainyardd" --state "$PWD/sd" 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown option .--state. (did you mean .--state-dir.? options are not abbreviated)" err &&
  "$TRAINYARD" config list --all >out && grep -q "^project = " out
'
test_expect_success 'a mistyped flag of the program itself gets --help or --version' '
  set +e; "$TRAINYARD" --verison >out 2>err; rc=$?; set -e
  test $rc -eq 2 && test ! -s out &&
  grep -qx "ERROR: (trainyard) unknown flag .--verison. (did you mean .--version.?)" err &&
  set +e; "$TRAINYARD" --hlep jobs list 2>err; set -e
  grep -qx "ERROR: (trainyard) unknown flag .--hlep. (did you mean .--help.?)" err &&
  set +e; "$TRAINYARD" --version=2 2>err; set -e
  grep -q -- "--version takes no value" err &&
  set +e; "$TRAINYARD" --project=p 2>err; set -e
  grep -qx "ERROR: (trainyard) unknown flag .--project. (see --help)" err
'
test_expect_success 'machine types, enum values and job fields get the nearest' '
  set +e
  "$TRAINYARD" local train --master-image-uri=x --master-machine-type=n1-standrd-4 --dry-run 2>e1
  "$TRAINYARD" local train --master-image-uri=x --master-machine-type=STANDARD_GPU --dry-run 2>e2
  "$TRAINYARD" local train --master-image-uri=x --scale-tier=standard1 --dry-run 2>e3
  printf "trainingInput:\n  masterconfig:\n    imageUri: x\n" >f1.yaml
  "$TRAINYARD" local train --config f1.yaml --dry-run 2>e4
  printf "trainingInput:\n  masterConfig:\n    image_ur: x\n" >f2.yaml
  "$TRAINYARD" local train --config f2.yaml --dry-run 2>e5
  printf "trainingInput:\n  masterConfig:\n    zzzzzz: x\n" >f3.yaml
  "$TRAINYARD" local train --config f3.yaml --dry-run 2>e6
  "$TRAINYARD" local train --master-image-uri=x --runtime=contianer --dry-run 2>e7
  TRAINYARD_RUNTIME=contianer "$TRAINYARD" local train --master-image-uri=x --dry-run 2>e9
  "$TY_BUILD_DIR/bin/trainyardd" --runtime=slurn 2>e8
  set -e
  grep -q "unknown machine type .n1-standrd-4. (did you mean .n1-standard-4.? see" e1 &&
  grep -q "did you mean .standard_gpu.?" e2 &&
  grep -q -- "--scale-tier: .standard1. is not a valid choice: expected one of basic, standard-1, .* (did you mean .standard-1.?)" e3 &&
  grep -q "Unknown name \"masterconfig\" at .trainingInput.: Cannot find field. Did you mean \"masterConfig\"?" e4 &&
  grep -q "Did you mean \"imageUri\"?" e5 &&
  grep -q "Cannot find field.$" e6 &&
  grep -q "(trainyard.local.train) --runtime: unknown runtime .contianer. (did you mean .container.? this build has: process, container, slurm)" e7 &&
  grep -q "(trainyard.local.train) TRAINYARD_RUNTIME: unknown runtime .contianer. (did you mean .container.?" e9 &&
  grep -qx "trainyardd: --runtime: unknown runtime .slurn. (did you mean .slurm.? this build has: process, container, slurm)" e8
'
test_expect_success 'the values of enum-like flags and settings get the nearest' '
  TYD="$TY_BUILD_DIR/bin/trainyardd"
  set +e
  "$TRAINYARD" jobs list --limit=unlimted 2>e1; r1=$?
  "$TRAINYARD" local train --master-image-uri=x --use-chief-in-tf-config=treu --dry-run 2>e2
  "$TRAINYARD" local train --master-image-uri=x --master-accelerator=cont=1,type=nvidia-tesla-t4 \
    --dry-run 2>e3
  XDG_CONFIG_HOME="$TEST_DIR/enum-xdg" "$TRAINYARD" config set gpu_devices standin 2>e4
  XDG_CONFIG_HOME="$TEST_DIR/enum-xdg" "$TRAINYARD" config set gpus nvidia-tesla-t5:1 2>e5
  "$TYD" --gpu-devices=nvdia 2>e6; r6=$?
  "$TYD" --capacity=gpus=NVIDIA_TESLA_V10:2 2>e7
  "$TYD" --slurm-memory=nnoe 2>e8
  "$TYD" --slurm-replicas=contaner 2>e9
  set -e
  test $r1 -eq 2 && test $r6 -eq 2 &&
  grep -q "(got .unlimted.; did you mean .unlimited.?)" e1 &&
  grep -q "expected true, false, yes or no (got .treu.; did you mean .true.?)" e2 &&
  grep -q "unknown key .cont. in .cont=1. (did you mean .count.? expected count=COUNT,type=TYPE)" e3 &&
  grep -q "gpu_devices: expected nvidia .* (got .standin.; did you mean .stand-in.?)" e4 &&
  grep -q "unknown GPU type .nvidia-tesla-t5. (did you mean NVIDIA_TESLA_T4? known: NVIDIA_TESLA_K80," e5 &&
  grep -q "^trainyardd: --gpu-devices: expected nvidia .* (got .nvdia.; did you mean .nvidia.?)" e6 &&
  grep -q "unknown GPU type .NVIDIA_TESLA_V10. (did you mean NVIDIA_TESLA_V100?" e7 &&
  grep -qx "trainyardd: --slurm-memory: expected .machine. or .none. (got .nnoe.; did you mean .none.?)" e8 &&
  grep -q "expected .auto., .process. or .container. (got .contaner.; did you mean .container.?)" e9
'

# ---- config --------------------------------------------------------------------------------

test_expect_success 'config set writes the file the CLI reads: 0600, comments kept' '
  mkdir -p "$(dirname "$CFG")" &&
  printf "# my settings\nproject = old\n\n# the end\n" >"$CFG" && chmod 644 "$CFG" &&
  "$TRAINYARD" config set project vision 2>err &&
  grep -q "Updated property \[project\] in $CFG" err &&
  printf "# my settings\nproject = vision\n\n# the end\n" >want && cmp want "$CFG" &&
  test "$(stat -c %a "$CFG")" = 600 &&
  "$TRAINYARD" config set api_endpoint http://127.0.0.1:9 &&
  tail -1 "$CFG" | grep -qx "api_endpoint = http://127.0.0.1:9" &&
  test "$("$TRAINYARD" config get project)" = vision &&
  ls "$(dirname "$CFG")" >files && test "$(wc -l <files)" = 1
'
test_expect_success 'what config set wrote is what the jobs verbs use' '
  set +e; "$TRAINYARD" jobs list 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "127.0.0.1:9" err &&
  "$TRAINYARD" config set api_endpoint http://127.0.0.1:8 &&
  set +e; "$TRAINYARD" jobs list 2>err; set -e
  grep -q "127.0.0.1:8" err
'
test_expect_success 'config: unknown keys get the nearest; bad values are refused as when read' '
  cp "$CFG" before &&
  set +e; "$TRAINYARD" config set projcet x 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown key .projcet. (did you mean .project.?" err &&
  set +e; "$TRAINYARD" config get api-endpoint 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "did you mean .api_endpoint.?" err &&
  set +e; "$TRAINYARD" config set api_endpoint ftp://h 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "api_endpoint: .ftp://h. is not an http:// or https:// URL" err &&
  set +e; "$TRAINYARD" config set api_endpoint http://h:99999999 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "the port must be a number from 1 to 65535" err &&
  TRAINYARD_CONFIG="$TEST_DIR/v6.cfg" "$TRAINYARD" config set api_endpoint "http://[::1]:8080" 2>err &&
  set +e; "$TRAINYARD" config set project "" 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "project name is empty" err &&
  set +e; "$TRAINYARD" config set project " " 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "project: invalid project id . .: use only letters" err &&
  set +e; "$TRAINYARD" config set project ../x 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "invalid project id .\.\./x." err &&
  set +e; "$TRAINYARD" config set access_token "a b" 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "blank" err &&
  set +e; "$TRAINYARD" config set access_token_file nosuchfile 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "nosuchfile" err &&
  set +e; "$TRAINYARD" config set gpus nvidia-tesla-t5:1 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown GPU type" err &&
  set +e; "$TRAINYARD" config set gpu_devices standin 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "expected nvidia" err &&
  cmp before "$CFG"
'
test_expect_success 'a project the service would refuse is refused before a request, naming its source' '
  set +e; "$TRAINYARD" jobs list --project "a/b" 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "^ERROR: (trainyard.jobs.list) --project: invalid project id .a/b." err &&
  set +e; TRAINYARD_PROJECT=.. "$TRAINYARD" jobs describe j1 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "TRAINYARD_PROJECT: invalid project id .\.\.." err &&
  printf "project = p q\n" >badproj.cfg &&
  set +e; TRAINYARD_CONFIG=$TEST_DIR/badproj.cfg "$TRAINYARD" jobs list 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "badproj.cfg:1: project: invalid project id .p q." err
'
test_expect_success 'config get of an unset key: (unset) on stderr, exit 1' '
  set +e; "$TRAINYARD" config get access_token >out 2>err; rc=$?; set -e
  test $rc -eq 1 && test ! -s out && grep -qx "(unset)" err
'
test_expect_success 'config verbs on a malformed config file: exit 2 as every verb, not 1 as (unset)' '
  printf "bogus\n" >malformed.cfg &&
  for v in "get project" "list" "set project p" "unset project"; do
    set +e; TRAINYARD_CONFIG=$TEST_DIR/malformed.cfg "$TRAINYARD" config $v >out 2>err; rc=$?; set -e
    test $rc -eq 2 && grep -q "malformed.cfg:1" err || { echo "config $v: rc $rc"; cat err; exit 1; }
  done &&
  printf "projct = p\n" >unknown.cfg &&
  set +e; TRAINYARD_CONFIG=$TEST_DIR/unknown.cfg "$TRAINYARD" config list >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown.cfg:1" err
'
test_expect_success 'a TRAINYARD_CONFIG that does not exist: read verbs refuse it, set creates it' '
  for v in "get project" "list"; do
    set +e; TRAINYARD_CONFIG=$TEST_DIR/typo.cfg "$TRAINYARD" config $v >out 2>err; rc=$?; set -e
    test $rc -eq 2 && grep -q "config file $TEST_DIR/typo.cfg (from TRAINYARD_CONFIG) does not exist" err ||
      { echo "config $v: rc $rc"; cat err; exit 1; }
  done &&
  TRAINYARD_CONFIG=$TEST_DIR/typo.cfg "$TRAINYARD" config set project p1 &&
  test "$(TRAINYARD_CONFIG=$TEST_DIR/typo.cfg "$TRAINYARD" config get project)" = p1
'
test_expect_success 'config list masks the token; a relative token file is made absolute' '
  echo "tok-0123456789abcdefghij" >tokfile &&
  "$TRAINYARD" config set access_token_file tokfile &&
  grep -qx "access_token_file = $TEST_DIR/tokfile" "$CFG" &&
  "$TRAINYARD" config set access_token tok-0123456789abcdefghij &&
  "$TRAINYARD" config list >out &&
  grep -qx "project = vision" out &&
  grep -qx "access_token = tok-\*\*\*\*\*\*\*\* (24 characters)" out &&
  ! grep -q 0123456789 out &&
  ! grep -q "gpus" out &&
  "$TRAINYARD" config list --all >all && grep -qx "gpus = (unset)" all &&
  test "$("$TRAINYARD" config get access_token)" = tok-0123456789abcdefghij
'
test_expect_success 'config unset removes every line of the key, nothing else' '
  printf "project = a\n" >>"$CFG" &&
  "$TRAINYARD" config unset project 2>err && grep -q "Unset property \[project\]" err &&
  ! grep -q "^project" "$CFG" && grep -q "^# my settings" "$CFG" &&
  set +e; "$TRAINYARD" config get project 2>/dev/null; rc=$?; set -e
  test $rc -eq 1 &&
  "$TRAINYARD" config unset project 2>err && grep -q "(it was not set)" err
'
test_expect_success 'config set: TRAINYARD_CONFIG names the file; the environment is said to win' '
  TRAINYARD_CONFIG="$TEST_DIR/other/cfg" TRAINYARD_PROJECT=envp \
    "$TRAINYARD" config set project filep 2>err &&
  grep -qx "project = filep" "$TEST_DIR/other/cfg" &&
  grep -q "TRAINYARD_PROJECT is set in the environment and overrides project" err &&
  set +e; "$TRAINYARD" config set project 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "VALUE is required" err
'
test_expect_success 'config set replaces only a file: a device is refused, a chain of links followed' '
  mknod "$TEST_DIR/null" c 1 3 &&
  set +e; TRAINYARD_CONFIG="$TEST_DIR/null" "$TRAINYARD" config set project x 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "null is not a regular file: refusing to replace it" err &&
  test -c "$TEST_DIR/null" &&
  mkdir "$TEST_DIR/links" && ln -s l2 "$TEST_DIR/links/l1" && ln -s real "$TEST_DIR/links/l2" &&
  TRAINYARD_CONFIG="$TEST_DIR/links/l1" "$TRAINYARD" config set project chained 2>err &&
  test -L "$TEST_DIR/links/l1" && test -L "$TEST_DIR/links/l2" &&
  grep -qx "project = chained" "$TEST_DIR/links/real" &&
  ln -s loop "$TEST_DIR/links/loop" &&
  set +e; TRAINYARD_CONFIG="$TEST_DIR/links/loop" "$TRAINYARD" config set project x 2>err; rc=$?; set -e
  test $rc -eq 1 && grep -q "more than 40 symbolic links in a row" err
'
test_expect_success 'config set run twice at once: both land' '
  for i in 1 2 3 4 5 6 7 8 9 10; do
    rm -f "$TEST_DIR/cc.cfg" || exit 1
    TRAINYARD_CONFIG="$TEST_DIR/cc.cfg" "$TRAINYARD" config set project p$i 2>/dev/null & a=$!
    TRAINYARD_CONFIG="$TEST_DIR/cc.cfg" "$TRAINYARD" config set gpu_devices stand-in 2>/dev/null & b=$!
    wait $a && wait $b &&
    grep -qx "project = p$i" "$TEST_DIR/cc.cfg" && grep -qx "gpu_devices = stand-in" "$TEST_DIR/cc.cfg" || exit 1
  done
'

# ---- man pages -----------------------------------------------------------------------------

# flags_missing MAN PROGRAM ARGS...: the flags of PROGRAM ARGS --help that MAN does not name
flags_missing() {
  man=$1; shift
  sed 's/\\-/-/g; s/\\f[BIRP]//g' "$man" >man.txt
  "$@" --help | grep -oE -- "--[a-z][a-z0-9-]+" | sort -u | while read -r f; do
    grep -qE -- "$f([^a-z0-9-]|\$)" man.txt || echo "$man: $* --help: $f"
  done
}
test_expect_success 'every flag of every --help is in the man pages' '
  for v in $VERBS; do
    flags_missing "$TY_SOURCE_DIR/dist/man/trainyard.1" "$TRAINYARD" $(echo "$v" | tr . " ")
  done >missing &&
  flags_missing "$TY_SOURCE_DIR/dist/man/trainyardd.8" "$TY_BUILD_DIR/bin/trainyardd" >>missing &&
  cat missing && test ! -s missing
'
test_expect_success 'every command is in trainyard(1)' '
  sed "s/\\\\-/-/g; s/\\\\f[BIRP]//g" "$TY_SOURCE_DIR/dist/man/trainyard.1" >man1.txt &&
  "$TRAINYARD" --help | awk -F"  +" "/^  [a-z]/ { print \$2 }" >paths &&
  test "$(wc -l <paths)" -ge 12 &&
  while read -r p; do grep -qF "$p" man1.txt || { echo "no $p"; exit 1; }; done <paths
'
if command -v man >/dev/null 2>&1; then
  test_expect_success 'the man pages render without warnings' '
    for m in "$TY_SOURCE_DIR"/dist/man/trainyard.1 "$TY_SOURCE_DIR"/dist/man/trainyardd.8; do
      MANWIDTH=80 man --warnings -l "$m" >out 2>err && test ! -s err && grep -q "NAME" out || exit 1
    done
  '
else
  test_skip 'the man pages render without warnings' 'no man'
fi

# ---- bash completion -----------------------------------------------------------------------

# complete WORDS...: what the completion offers for the last word
complete_words() {
  bash -c '. "$1"/dist/bash-completion/trainyard; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _trainyard; echo "${COMPREPLY[*]}"' \
    -- "$TY_SOURCE_DIR" "$@"
}
if command -v bash >/dev/null 2>&1; then
  test_expect_success 'bash completion: commands, flags per verb, values, config keys' '
    test "$(complete_words trainyard "")" = "config help jobs local study" &&
    test "$(complete_words trainyard jobs s)" = "stream-logs submit" &&
    test "$(complete_words trainyard jobs submit "")" = training &&
    test "$(complete_words trainyard jobs list --f)" = "--filter --format" &&
    test "$(complete_words trainyard local train --runtime = c)" = container &&
    test "$(complete_words trainyard local train --runtime "")" = "process container slurm" &&
    test "$(complete_words trainyard config get access_t)" = "access_token access_token_file" &&
    test "$(complete_words trainyard help jobs stream)" = stream-logs &&
    test -z "$(complete_words trainyard local train -- --d)" &&
    test "$(complete_words trainyard local train --l)" = --labels &&
    test -z "$(complete_words trainyard local train --module)" &&
    test "$(complete_words trainyard local train --worker-c)" = "--worker-command --worker-count" &&
    test "$(complete_words trainyard jobs list --q)" = --quiet &&
    test "$(complete_words trainyard config set --verb)" = --verbosity &&
    test "$(complete_words trainyard --)" = "--access-token-file --api-endpoint --format --help --project --quiet --verbosity --version" &&
    test "$(complete_words trainyard --project vision "")" = "config help jobs local study" &&
    test "$(complete_words trainyard --project vision jobs l)" = list &&
    test "$(complete_words trainyard --api-endpoint http://127.0.0.1:1 jobs l)" = list &&
    test "$(complete_words trainyard --verbosity e)" = error &&
    test -z "$(complete_words trainyard --project "")" &&
    test "$(complete_words trainyard jobs list --format c)" = "csv(" &&
    test "$(complete_words trainyard jobs list --format = f)" = flattened
  '
  if trainyardd_start svc --max-running-jobs 0; then
    test_expect_success 'bash completion: job ids from the service' '
      export TRAINYARD_API_ENDPOINT=$TYD_URL &&
      write_job job.json "true" &&
      "$TRAINYARD" jobs submit training compl_1 --config job.json >/dev/null &&
      "$TRAINYARD" jobs submit training compl_2 --config job.json >/dev/null &&
      test "$(complete_words trainyard jobs describe compl)" = "compl_2 compl_1" &&
      test "$(complete_words trainyard jobs cancel --project default compl_1)" = compl_1 &&
      test -z "$(complete_words trainyard jobs describe --project nosuch compl)" &&
      test -z "$(complete_words trainyard jobs describe --project=nosuch compl)" &&
      test -z "$(complete_words trainyard jobs describe --api-endpoint http://127.0.0.1:1 compl)"
    '
    test_expect_success 'the service suggests the runtime of a mistyped trainyard-runtime label' '
      export TRAINYARD_API_ENDPOINT=$TYD_URL
      set +e; "$TRAINYARD" jobs submit training compl_3 --config job.json --runtime=contianer 2>err
      rc=$?; set -e
      test $rc -eq 1 &&
      grep -q "INVALID_ARGUMENT: labels.trainyard-runtime: unknown runtime .contianer. (did you mean .container.?" err
    '
    trainyardd_stop svc
  else
    test_skip 'bash completion: job ids from the service' 'trainyardd did not start'
  fi
else
  test_skip 'bash completion' 'no bash'
fi

# ---- install -------------------------------------------------------------------------------

if command -v meson >/dev/null 2>&1; then
  test_expect_success 'meson install --destdir: files where a distribution expects them' '
    meson install -C "$TY_BUILD_DIR" --no-rebuild --quiet --destdir "$TEST_DIR/dest" >log 2>&1 ||
      { cat log; exit 1; }
    prefix=$(meson introspect "$TY_BUILD_DIR" --buildoptions |
      "$PYTHON" -c "import json,sys; print([o[\"value\"] for o in json.load(sys.stdin) if o[\"name\"] == \"prefix\"][0])")
    D="$TEST_DIR/dest$prefix" &&
    programs="bin/trainyard bin/trainyardd bin/trainyard-task
      libexec/trainyard/trainyard-supervisor libexec/trainyard/trainyard-guardian" &&
    for f in $programs; do
      test -x "$D/$f" || { echo "missing $f"; exit 1; }
    done &&
    # Every file installed, anywhere under the destdir, is one of these (and each is there):
    # a file added to the install must be added here, where it is checked.
    for f in $programs share/man/man1/trainyard.1 share/man/man8/trainyardd.8 \
      share/bash-completion/completions/trainyard lib/systemd/system/trainyardd.service \
      lib/tmpfiles.d/trainyard.conf; do
      echo "${prefix#/}/$f"
    done | sort >want &&
    (cd "$TEST_DIR/dest" && find . ! -type d | sed "s|^\./||" | sort) >got &&
    { cmp want got || { diff want got; exit 1; }; } &&
    grep -qx "ExecStart=$prefix/bin/trainyardd \$TRAINYARDD_OPTS" "$D/lib/systemd/system/trainyardd.service" &&
    test "$("$D/bin/trainyard" --version)" = "trainyard 0.1.0" &&
    "$D/bin/trainyard" help config set | grep -q "trainyard config set KEY VALUE" &&
    "$D/bin/trainyardd" --version | grep -q 0.1.0 &&
    "$D/bin/trainyard-task" --help | grep -q "^usage: trainyard-task" &&
    "$D/libexec/trainyard/trainyard-supervisor" -h | grep -q "^usage: trainyard-supervisor" &&
    "$D/libexec/trainyard/trainyard-guardian" -h | grep -q "^usage: trainyard-guardian" &&
    echo "$D" >destdir && echo "$prefix" >prefix
  '
  test_expect_success 'installed, trainyardd looks for its supervisor where it was installed' '
    D=$(cat destdir) prefix=$(cat prefix) &&
    if test -x "$prefix/libexec/trainyard/trainyard-supervisor"; then
      echo "# $prefix is installed here: nothing to show"; exit 0
    fi
    set +e; timeout 20 "$D/bin/trainyardd" --listen 127.0.0.1:0 --state-dir "$TEST_DIR/ist" 2>err
    rc=$?; set -e
    test $rc -ne 0 && grep -q "then in $prefix/libexec/trainyard" err
  '
  if command -v systemd-analyze >/dev/null 2>&1; then
    test_expect_success 'systemd-analyze verify: the unit is clean' '
      D=$(cat destdir) prefix=$(cat prefix) &&
      sed "s|$prefix/bin/trainyardd|$D/bin/trainyardd|" "$D/lib/systemd/system/trainyardd.service" \
        >trainyardd.service &&
      systemd-analyze verify --man=no ./trainyardd.service >out 2>&1; rc=$?
      cat out; test $rc -eq 0 && ! grep -v "^$" out | grep -q .
    '
  else
    test_skip 'systemd-analyze verify' 'no systemd-analyze'
  fi
  if command -v systemd-tmpfiles >/dev/null 2>&1; then
    test_expect_success 'the tmpfiles.d entry makes /run/trainyard sticky and writable by all' '
      D=$(cat destdir) &&
      systemd-tmpfiles --create --root="$TEST_DIR/root" "$D/lib/tmpfiles.d/trainyard.conf" &&
      test "$(stat -c %a "$TEST_DIR/root/run/trainyard")" = 1777
    '
  else
    test_skip 'the tmpfiles.d entry' 'no systemd-tmpfiles'
  fi
else
  test_skip 'meson install --destdir' 'no meson'
fi

test_done
