#!/bin/sh
# t4020-container-pytorch: examples/pytorch (DDP, gloo) in containers: its image built
# locally from the host's python3-torch (no registry), 1 master + 2 workers finding each other
# by their advertised names. Skipped without a usable container engine or python3-torch.
. "$(dirname "$0")/../lib/test-lib.sh"

ok=yes
"$TY_SOURCE_DIR/scripts/setup-podman.sh" >/dev/null 2>&1 || ok=no
/usr/bin/python3 -c "import torch" >/dev/null 2>&1 || ok=no
command -v strace >/dev/null 2>&1 || ok=no
if [ $ok = no ]; then
  test_skip "pytorch in containers" "no container engine, python3-torch or strace"
  test_done
fi

test_expect_success 'pytorch in containers' '
  "$TY_SOURCE_DIR/examples/pytorch/build-image.sh" >img.log 2>&1 &&
  "$PYTHON" -c "import json; json.dump({\"trainingInput\": {\"scaleTier\": \"CUSTOM\", \"masterType\": \"n1-standard-4\", \"workerType\": \"n1-standard-4\", \"workerCount\": 2, \"masterConfig\": {\"imageUri\": \"localhost/trainyard/pytorch-digits:latest\"}, \"args\": [\"--epochs\", \"15\"]}}, open(\"pt.json\", \"w\"))" &&
  "$TRAINYARD" local train pt_ctr_$$ --runtime container --config pt.json --job-dir "$TEST_DIR/jd" >log 2>&1 &&
  grep -q "master-replica-0 *rank 0 of 3, rendezvous at cmle-training-master-[0-9a-f]*-0:2222" log &&
  grep -q "master-replica-0 *final test accuracy: 0\.9" log &&
  test -f "$TEST_DIR/jd/model.pt" &&
  test -z "$(podman ps -aq --filter label=trainyard.job=pt_ctr_$$)"
'
test_done
