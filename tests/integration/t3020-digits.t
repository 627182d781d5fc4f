#!/bin/sh
# t3020-digits: the examples/digits parameter-server job end to end through `local train`
# (1 master, 2 workers, 2 ps, 1 evaluator), and the same program alone (1 replica).
. "$(dirname "$0")/../lib/test-lib.sh"

CONFIG="$TY_SOURCE_DIR/examples/digits/config.yaml"

test_expect_success 'the digits data set is installed' '
  test -f /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
'
test_expect_success 'digits 1+2+2+1 converges to >= 0.93 and exits 0' '
  "$TRAINYARD" local train digits_it --config "$CONFIG" --job-dir "$TEST_DIR/jd" >log 2>&1 &&
  acc=$(sed -n "s/.*master-replica-0 *final test accuracy: \(0\.[0-9]*\)$/\1/p" log) &&
  echo "accuracy $acc" &&
  "$PYTHON" -c "import sys; sys.exit(0 if float(\"$acc\") >= 0.93 else 1)" &&
  grep -q "Job completed successfully." log
'
test_expect_success 'final accuracy is the master last stdout line' '
  tail -1 "$TRAINYARD_HOME/jobs/local/digits_it/logs/master-replica-0.log" |
    grep -q "INFO final test accuracy: 0\.9"
'
test_expect_success 'checkpoints were written under the job dir' '
  ls "$TEST_DIR/jd/checkpoints" | grep -q ckpt
'
test_expect_success 'parameter servers and evaluator were torn down' '
  grep -q "ps-replica-0 *ps 0: terminating" log &&
  no_procs "$TEST_DIR/jd"
'
test_expect_success 'a single-replica digits job (master only) works' '
  "$TRAINYARD" local train digits_one --master-image-uri=x --job-dir "$TEST_DIR/jd1" \
    --config /dev/stdin >log1 2>&1 <<EOT &&
trainingInput:
  masterConfig:
    containerCommand: [digits]
    containerArgs: [--steps, "300"]
EOT
  grep -q "final test accuracy: 0\.9[3-9]" log1
'
test_done
