#!/bin/sh
# t4010-container-registry: images pulled from a registry: a plain-HTTP registry on loopback
# (Debian's docker-registry, started here on 127.0.0.1 and stopped by PID) works when listed
# in TRAINYARD_INSECURE_REGISTRIES and fails clearly otherwise; a listed registry off
# loopback is refused. Skipped without a usable container engine or docker-registry.
. "$(dirname "$0")/../lib/test-lib.sh"

ok=yes
"$TY_SOURCE_DIR/scripts/setup-podman.sh" >"$TEST_DIR/setup.log" 2>&1 || ok=no
[ $ok = yes ] && "$TY_SOURCE_DIR/tests/integration/images/build-testbox.sh" >/dev/null 2>&1 || ok=no
command -v docker-registry >/dev/null 2>&1 || ok=no
if [ $ok = no ]; then
  for t in push pull unlisted offloop; do test_skip "registry: $t" "no container engine or docker-registry"; done
  test_done
fi
export TRAINYARD_RUNTIME=container

# A free loopback port for the registry.
PORT=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
REG=127.0.0.1:$PORT
IMAGE=$REG/trainyard/probe:$$
mkdir -p "$TEST_DIR/reg"
cat >"$TEST_DIR/reg/config.yml" <<EOT
version: 0.1
storage:
  filesystem:
    rootdirectory: $TEST_DIR/reg/data
http:
  addr: $REG
EOT
docker-registry serve "$TEST_DIR/reg/config.yml" >"$TEST_DIR/reg/log" 2>&1 &
REG_PID=$!
stop_registry() {
  kill "$REG_PID" 2>/dev/null; wait "$REG_PID" 2>/dev/null
  podman rmi -f "$IMAGE" >/dev/null 2>&1 || true
}
trap stop_registry EXIT

job() {
  "$PYTHON" - "$1" "$IMAGE" <<'PY'
import json, sys
json.dump({"trainingInput": {"masterConfig": {"imageUri": sys.argv[2],
           "containerCommand": ["sh", "-c", "echo pulled-and-running"]}}}, open(sys.argv[1], "w"))
PY
}

test_expect_success 'registry: push' '
  wait_for 20 "$PYTHON" -c "import socket; socket.create_connection((\"127.0.0.1\", $PORT), 1)" &&
  podman push --tls-verify=false localhost/trainyard/testbox:1 "$IMAGE" >push.log 2>&1 &&
  podman rmi -f "$IMAGE" >/dev/null 2>&1; true
'
test_expect_success 'registry: unlisted' '
  job j.json && set +e
  TRAINYARD_INSECURE_REGISTRIES= "$TRAINYARD" local train reg_no_$$ --config j.json >log 2>err; rc=$?
  set -e
  test $rc -eq 1 &&
  grep -q "replica master 0: image .$IMAGE. is not present and pulling it failed" err
'
test_expect_success 'registry: pull' '
  TRAINYARD_INSECURE_REGISTRIES="$REG" "$TRAINYARD" local train reg_yes_$$ --config j.json >log 2>&1 &&
  grep -q "master-replica-0 *pulled-and-running" log
'
test_expect_success 'registry: offloop' '
  "$PYTHON" -c "import json; json.dump({\"trainingInput\": {\"masterConfig\": {\"imageUri\": \"registry.example.com/x:1\", \"containerCommand\": [\"true\"]}}}, open(\"o.json\", \"w\"))" &&
  set +e
  TRAINYARD_INSECURE_REGISTRIES=registry.example.com "$TRAINYARD" local train reg_off_$$ --config o.json >log 2>err; rc=$?
  set -e
  test $rc -eq 1 && grep -q "plain-HTTP registries are allowed only on loopback" err &&
  for r in localhost.s37.invalid:5000 127.0.0.1.s37.invalid:5000; do
    "$PYTHON" -c "import json, sys; json.dump({\"trainingInput\": {\"masterConfig\": {\"imageUri\": sys.argv[1] + \"/x:1\", \"containerCommand\": [\"true\"]}}}, open(\"n.json\", \"w\"))" "$r" &&
    set +e
    TRAINYARD_INSECURE_REGISTRIES="$r" "$TRAINYARD" local train reg_name_$$ --config n.json >log 2>err; rc=$?
    set -e
    test $rc -eq 1 && grep -q "lists .$r., but plain-HTTP registries are allowed only on loopback" err || exit 1
  done
'
test_done
