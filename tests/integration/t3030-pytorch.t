#!/bin/sh
# t3030-pytorch: examples/pytorch (torch.distributed DDP, gloo) on 1 master + 2 workers in
# the process runtime, wired from CLUSTER_SPEC and, with --pytorch-env, from the opt-in
# MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK variables.
. "$(dirname "$0")/../lib/test-lib.sh"

if ! /usr/bin/python3 -c "import torch" >/dev/null 2>&1; then
  test_skip "pytorch: DDP from CLUSTER_SPEC" "python3-torch is not installed"
  test_skip "pytorch: DDP from the opt-in variables" "python3-torch is not installed"
  test_done
fi


test_expect_success 'pytorch: DDP from CLUSTER_SPEC' '
  cd "$TY_SOURCE_DIR" && "$TRAINYARD" local train pt_cs --config examples/pytorch/config.yaml --job-dir "$TEST_DIR/jd" \
    -- --epochs 20 >"$TEST_DIR/log" 2>&1 &&
  grep -q "worker-replica-1 *rank 2 of 3" "$TEST_DIR/log" &&
  grep -q "master-replica-0 *final test accuracy: 0\.9[3-9]" "$TEST_DIR/log" &&
  test -f "$TEST_DIR/jd/model.pt"
'
test_expect_success 'pytorch: DDP from the opt-in variables' '
  cd "$TY_SOURCE_DIR" && "$TRAINYARD" local train pt_env --config examples/pytorch/config.yaml --pytorch-env \
    -- --epochs 10 >"$TEST_DIR/log2" 2>&1 &&
  grep -q "master-replica-0 *rank 0 of 3" "$TEST_DIR/log2" &&
  grep -q "final test accuracy: 0\.9" "$TEST_DIR/log2"
'
test_done
