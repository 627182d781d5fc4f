#!/bin/sh
# t1000-cli-basics: the CLI's help, usage errors, spec errors and --dry-run.
. "$(dirname "$0")/../lib/test-lib.sh"

test_expect_success 'trainyard --help lists local train' '
  "$TRAINYARD" --help >out && grep -q "local train" out
'
test_expect_success 'local train --help shows gcloud flags' '
  "$TRAINYARD" local train --help >out &&
  grep -q -- "--master-image-uri" out && grep -q -- "--evaluator-count" out &&
  grep -q -- "--dry-run" out
'
test_expect_success '--version takes no arguments; a number flag takes no hexadecimal' '
  set +e; "$TRAINYARD" --version extra 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q -- "--version takes no arguments (got .extra.)" err &&
  set +e; "$TRAINYARD" local train gp0 --config job.json --grace-period=0x10 --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q -- "--grace-period: expected seconds from 0 to 86400 (got .0x10.)" err
'
test_expect_success 'unknown command exits 2' '
  ! "$TRAINYARD" jobs frobnicate 2>err; test $? -ne 0; grep -q "unknown command" err
'
test_expect_success 'unknown flag exits 2 naming the flag' '
  set +e; "$TRAINYARD" local train --bogus-flag 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q -- "--bogus-flag" err
'
test_expect_success 'missing master image is a spec error naming the field' '
  set +e; "$TRAINYARD" local train --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "trainingInput.masterConfig.imageUri: required" err
'
test_expect_success 'bad job id is refused with the rule' '
  set +e; "$TRAINYARD" local train 9lives --master-image-uri=x --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "jobId: must start with a letter" err
'
test_expect_success 'a message quoting the user'"'"'s bytes writes no terminal control' '
  esc=$(printf "\033") &&
  set +e; "$TRAINYARD" local train "a${esc}[2JRED" --master-image-uri=x --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "(got .a?\[2JRED.)" err && ! grep -q "$esc" err &&
  printf "%s\n" "trainingInput: {masterConfig: {imageUri: x}}" "labels: {\"k\\e[2J\": v}" >esc.yaml &&
  set +e; "$TRAINYARD" local train esc_job --config esc.yaml --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "labels: key .k?\[2J." err && ! grep -q "$esc" err &&
  printf "%s\n" "trainingInput: {masterConfig: {imageUri: x}}" "labels: {\"k\\u009b2J\": v}" >c1.yaml &&
  set +e; "$TRAINYARD" local train c1_job --config c1.yaml --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "labels: key .k??2J." err
'
test_expect_success 'worker count without a type is refused' '
  set +e
  "$TRAINYARD" local train j1 --master-image-uri=x --master-machine-type=n1-standard-4 \
    --worker-count=2 --dry-run 2>err; rc=$?
  set -e
  test $rc -eq 2 && grep -q "trainingInput.workerType: required when workerCount is positive" err
'
test_expect_success 'unknown field in --config is refused the Google way' '
  printf "trainingInput:\n  masterConfig:\n    imageUrl: x\n" >bad.yaml
  set +e; "$TRAINYARD" local train --config bad.yaml --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "Unknown name \"imageUrl\" at .trainingInput.masterConfig." err
'
test_expect_success 'bad accelerator flag' '
  set +e
  "$TRAINYARD" local train --master-image-uri=x --master-accelerator=count=0,type=nvidia-tesla-t4 \
    --dry-run 2>err; rc=$?
  set -e
  test $rc -eq 2 && grep -q "must be greater than 0" err &&
  set +e
  "$TRAINYARD" local train --master-image-uri=x --master-accelerator=count=-1,type=nvidia-tesla-t4 \
    --dry-run 2>err; rc=$?
  set -e
  test $rc -eq 2 && grep -q "must be greater than 0" err
'
test_expect_success 'job without a command names the runtime option' '
  set +e; "$TRAINYARD" local train --master-image-uri=x --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "containerCommand" err && grep -q -- "--runtime" err
'
test_expect_success 'a real run without a command is refused up front (exit 2, nothing kept)' '
  set +e; "$TRAINYARD" local train nocmd --master-image-uri=x 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "containerCommand: required by the process runtime" err &&
  ! test -e "$TRAINYARD_HOME/jobs/local/nocmd"
'
test_expect_success '--use-chief-in-tf-config takes a value, as in gcloud' '
  write_job job.json "echo hi" &&
  "$TRAINYARD" local train uc1 --config job.json --use-chief-in-tf-config true --dry-run >out.json &&
  grep -q "chief" out.json &&
  set +e; "$TRAINYARD" local train uc2 --config job.json --use-chief-in-tf-config=maybe --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "expected true, false, yes or no (got .maybe." err &&
  "$TRAINYARD" local train uc3 --config job.json --use-chief-in-tf-config=YES --dry-run >out.json &&
  grep -q "chief" out.json &&
  "$TRAINYARD" local train uc4 --config job.json --use-chief-in-tf-config=no --dry-run >out.json &&
  ! grep -q "chief" out.json
'
test_expect_success 'gcloud'"'"'s recorded-only flags: --service-account, --enable-web-access, --kms-key, --staging-bucket' '
  "$TRAINYARD" local train rec1 --config job.json --service-account sa@p.iam.gserviceaccount.com \
    --enable-web-access --kms-key k1 --kms-keyring r1 --kms-location us-central1 --kms-project p1 \
    --staging-bucket gs://b --dry-run >out.json &&
  test "$(json_get out.json "json.loads(d[0][\"env\"][\"CLUSTER_SPEC\"])[\"job\"][\"serviceAccount\"]")" = sa@p.iam.gserviceaccount.com &&
  test "$(json_get out.json "json.loads(d[0][\"env\"][\"CLUSTER_SPEC\"])[\"job\"][\"enableWebAccess\"]")" = True &&
  test "$(json_get out.json "json.loads(d[0][\"env\"][\"CLUSTER_SPEC\"])[\"job\"][\"encryptionConfig\"][\"kmsKeyName\"]")" = projects/p1/locations/us-central1/keyRings/r1/cryptoKeys/k1 &&
  "$TRAINYARD" local train rec2 --config job.json --kms-key projects/a/locations/b/keyRings/c/cryptoKeys/d --dry-run >out.json &&
  grep -q "projects/a/locations/b/keyRings/c/cryptoKeys/d" out.json &&
  set +e; "$TRAINYARD" local train rec3 --config job.json --kms-key k1 --kms-keyring r1 --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "kms-key: .k1. is a key id: give --kms-keyring, --kms-location and --kms-project too (--kms-location is missing)" err &&
  set +e; "$TRAINYARD" local train rec4 --config job.json --kms-project p1 --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "kms-project: needs --kms-key" err
'
test_expect_success 'dry run prints every replica, flags override the config' '
  write_job job.json "echo hi" 2 1 1 &&
  "$TRAINYARD" local train dry1 --config job.json --worker-count=3 --dry-run >out.json &&
  test "$(json_get out.json "len(d)")" = 6 &&
  test "$(json_get out.json "[r[\"taskName\"] for r in d][3]")" = worker-replica-2 &&
  test "$(json_get out.json "d[0][\"env\"][\"CLOUD_ML_JOB_ID\"]")" = dry1 &&
  test "$(json_get out.json "len(set(r[\"address\"] for r in d))")" = 6
'
test_expect_success 'dry run runs nothing and leaves no job behind' '
  "$TRAINYARD" local train dry2 --config job.json --dry-run >/dev/null &&
  ! test -e "$TRAINYARD_HOME/jobs/local/dry2"
'
test_expect_success 'USER_ARGS reach the program (as containerArgs for command jobs)' '
  "$TRAINYARD" local train dry3 --config job.json --dry-run -- --epochs 5 >out.json &&
  test "$(json_get out.json "\" \".join(d[0][\"args\"])")" = "--epochs 5" &&
  test "$(json_get out.json "\" \".join(d[2][\"args\"])")" = "--epochs 5"
'
test_expect_success '--job-dir is passed as --job-dir=DIR' '
  "$TRAINYARD" local train dry4 --config job.json --job-dir=/tmp/jd --dry-run >out.json &&
  test "$(json_get out.json "d[1][\"args\"][-1]")" = "--job-dir=/tmp/jd"
'
test_expect_success 'an image that is no image reference is refused with the job, naming the field' '
  set +e; "$TRAINYARD" local train img1 --config job.json --master-image-uri=Gcr.io/P/img --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q "trainingInput.masterConfig.imageUri: .Gcr.io/P/img. is not a container image reference" err &&
  grep -q "P. is not a path component: lowercase letters and digits" err &&
  ! test -e "$TRAINYARD_HOME/jobs/local/img1"
'
test_expect_success 'an empty --job-dir is refused; an empty jobDir is no job directory' '
  set +e; "$TRAINYARD" local train dry5 --config job.json --job-dir= --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "^ERROR: (trainyard.local.train) --job-dir: the directory is empty" err &&
  write_job jd0.json "echo hi" 0 0 0 "{\"jobDir\": \"\"}" &&
  "$TRAINYARD" local train dry6 --config jd0.json --dry-run >out.json &&
  test "$(json_get out.json "d[0][\"args\"]")" = None
'
test_expect_success 'an argument that is not UTF-8 is refused, not dropped (USER_ARGS and flags)' '
  set +e; "$TRAINYARD" local train u8a --config job.json --dry-run -- --input "$(printf "caf\351.csv")" --epochs 5 >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "the argument .caf?.csv. is not valid UTF-8" err && ! test -s out &&
  set +e; "$TRAINYARD" local train u8b --config job.json --dry-run --job-dir="$(printf "/tmp/j\377")" >out 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "the argument .--job-dir=/tmp/j?. is not valid UTF-8" err
'
test_expect_success 'an empty --state-dir is refused (it wrote under /)' '
  set +e; "$TRAINYARD" local train sd0 --config job.json --state-dir= 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "^ERROR: (trainyard.local.train) --state-dir: the directory is empty" err &&
  ! test -e /jobs/local/sd0
'
test_expect_success 'a flag given the next flag as its value is refused, as argparse does' '
  set +e; "$TRAINYARD" local train nf0 --config job.json --region --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 &&
  grep -q "argument --region: expected one argument, not the flag .--dry-run." err &&
  ! test -e "$TRAINYARD_HOME/jobs/local/nf0" &&
  "$TRAINYARD" local train nf1 --config job.json --region=--odd --dry-run >/dev/null
'
test_expect_success 'POSIXLY_CORRECT does not stop flags after the job id' '
  POSIXLY_CORRECT=1 "$TRAINYARD" local train px0 --config job.json --dry-run >out.json &&
  ! test -e "$TRAINYARD_HOME/jobs/local/px0"
'
test_expect_success 'gcloud-wide --quiet and --verbosity are taken anywhere before --' '
  "$TRAINYARD" --quiet local train gq0 --config job.json -q --dry-run >out.json &&
  "$TRAINYARD" local train gq1 --config job.json --verbosity info --dry-run >/dev/null &&
  set +e; "$TRAINYARD" local train gq2 --config job.json --verbosity=error --bogus 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "unknown flag .--bogus." err &&
  set +e; "$TRAINYARD" local train gq3 --config job.json --verbosity=none --bogus 2>err; rc=$?; set -e
  test $rc -eq 2 && ! test -s err &&
  set +e; "$TRAINYARD" local train gq4 --verbosity=loud 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q -- "--verbosity: expected one of debug, info, warning, error, critical, none (got .loud.)" err &&
  "$TRAINYARD" local train gq5 --config job.json --dry-run -- --quiet -q --verbosity=x >out.json &&
  test "$(json_get out.json "\" \".join(d[0][\"args\"])")" = "--quiet -q --verbosity=x"
'
test_expect_success 'the labels trainyard reads are checked by local train as by the service' '
  set +e; "$TRAINYARD" local train lb0 --config job.json --labels=trainyard-runtime=bogus --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "labels.trainyard-runtime: unknown runtime .bogus." err &&
  set +e; "$TRAINYARD" local train lb1 --config job.json --labels=trainyard-pytorch-env=yes --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "labels.trainyard-pytorch-env: expected true or false (got .yes.)" err &&
  "$TRAINYARD" local train lb2 --config job.json --labels=trainyard-mxnet-env=false --dry-run >/dev/null
'
test_expect_success 'the container runtime refuses a local jobDir it cannot mount, before anything runs' '
  set +e; "$TRAINYARD" local train cjd --runtime container --master-image-uri=x/y:1 --job-dir rel/dir --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "trainingInput.jobDir: the container runtime mounts a local job directory at the same path in its containers, so it must be absolute (got .rel/dir." err &&
  set +e; "$TRAINYARD" local train cjd --runtime container --master-image-uri=x/y:1 --job-dir "$TEST_DIR/a:b" --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "whose path has a .:." err &&
  "$TRAINYARD" local train cjd --runtime container --master-image-uri=x/y:1 --job-dir gs://b/d --dry-run >/dev/null 2>&1 &&
  set +e; TRAINYARD_CONTAINER_MAX_MEMORY=1.5g "$TRAINYARD" local train cjd --runtime container --master-image-uri=x/y:1 --dry-run 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "TRAINYARD_CONTAINER_MAX_MEMORY: expected a whole number of bytes" err
'
test_expect_success 'a job id cannot be reused' '
  write_job ok.json "true" &&
  "$TRAINYARD" local train same_id --config ok.json >/dev/null 2>&1 &&
  set +e; "$TRAINYARD" local train same_id --config ok.json 2>err; rc=$?; set -e
  test $rc -eq 2 && grep -q "already exists" err
'
test_expect_success 'a command on no directory of a long PATH: whole directories named, then ...' '
  long=$(i=0; while [ $i -lt 30 ]; do printf "/opt/not-here/directory-%02d:" $i; i=$((i + 1)); done)
  set +e; PATH="$long$PATH" "$TRAINYARD" local train lp_1 --master-image-uri=x --master-command=no-such-program-$M >out 2>err; rc=$?; set -e
  test $rc -eq 1 &&
  grep -q "cannot run .no-such-program-$M.: not found on the replica.s PATH (set by trainyard.s environment): /opt/not-here/directory-00:/opt/not-here/directory-01:" err &&
  grep -q "/opt/not-here/directory-[0-9][0-9]:\.\.\." err
'
test_done
