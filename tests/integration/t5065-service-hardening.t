#!/bin/sh
# t5065-service-hardening: trainyardd's HTTP front against hostile or careless clients:
# stalled and idle connections are timed out and limited per client (on loopback, per local
# user: another user is served at once); web pages are refused by Host and Origin; bodies must be JSON; HTTPS with
# a self-signed certificate (the CLI verifies it, with a CA file); tokens reloaded on SIGHUP
# on open connections; failed authentications held back; no token ever in a log.
. "$(dirname "$0")/../lib/test-lib.sh"

TRAINYARDD="$TY_BUILD_DIR/bin/trainyardd"
TY="$TY_BUILD_DIR/bin/trainyard"
TOK_A=tokA-$$-0123456789abcdef
TOK_B=tokB-$$-0123456789abcdef
TOK_Q=tokQ-$$-0123456789abcdef
cd "$TEST_DIR" || exit 1
# The CLI's CA file comes from these first (as gcloud's property): the tests set their own.
unset TRAINYARD_CUSTOM_CA_CERTS_FILE CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE
printf '%s p1\n%s p1\n' "$TOK_A" "$TOK_Q" >tokens && chmod 600 tokens

# The plain daemon: small limits so that a few sockets reach them.
trainyardd_start plain --auth-tokens "$TEST_DIR/tokens" --verbose --connection-timeout 2 \
  --max-connections 40 --max-connections-per-address 8 --allowed-hosts trainyard.test
PLAIN_PID=$TYD_PID PLAIN=$TYD_URL PORT=${TYD_URL##*:}

# hold.py PORT N KIND: open N connections from 127.0.0.1 that send half a request (KIND
# half) or nothing (idle), more than the per-client limit; then one more of the same user
# must be refused at once, and a request of another local user (nobody, also from
# 127.0.0.1: local users are told apart by who owns the socket; as root only) answered within
# 1 s; then
# every held connection must be closed by the daemon within 5 s.
cat >hold.py <<'PY'
import os, socket, sys, time
port, n, kind = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held = []
for i in range(n):
    s = socket.socket()
    s.settimeout(6)
    s.connect(("127.0.0.1", port))
    if kind == "half":
        s.sendall(b"POST /v1/projects/p1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
    held.append(s)
time.sleep(0.5)
mine = socket.socket()
mine.settimeout(3)
mine.connect(("127.0.0.1", port))
try:
    mine.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port)
    assert mine.recv(100) == b"", "a connection over the limit was served"
except (ConnectionResetError, BrokenPipeError):
    pass
t = time.time()
if os.geteuid() == 0:  # another user's request: only root can make one
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            c = socket.socket()
            c.settimeout(3)
            c.connect(("127.0.0.1", port))
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % port)
            os.write(wfd, c.recv(100)[:12] or b"-")
        finally:
            os._exit(0)
    os.close(wfd)
    reply = os.read(rfd, 100)
    os.waitpid(pid, 0)
    took = time.time() - t
    assert reply.startswith(b"HTTP/1.1 200"), reply
    assert took < 1, "another user waited %.1f s" % took
t = time.time()
for s in held:
    try:
        assert s.recv(100) == b"", "a held connection got an answer"
    except ConnectionResetError:
        pass  # refused at once: over the per-client limit
took = time.time() - t
assert took < 5, "held connections open %.1f s" % took
print("ok: another user answered, held connections closed after %.1f s" % took)
PY

test_expect_success 'half-sent requests of one local user: another user is served at once, they time out' '
  "$PYTHON" hold.py "$PORT" 40 half
'
test_expect_success 'idle connections of one local user: another user is served at once, they time out' '
  "$PYTHON" hold.py "$PORT" 40 idle
'

# code [CURL ARGS...]: the HTTP status, body in out.json
code() { curl -s -o out.json -w '%{http_code}' -H "Authorization: Bearer $TOK_A" "$@"; }

# smuggle.py PORT KIND: one connection with a request whose end is ambiguous and a second
# request after it; prints the status of every answer the daemon gives on it.
cat >smuggle.py <<'PY'
import socket, sys
port, kind = int(sys.argv[1]), sys.argv[2]
host = "Host: 127.0.0.1:%d\r\n" % port
second = "GET /healthz HTTP/1.1\r\n" + host + "\r\n"
heads = {"lengths": "Content-Length: 2\r\nContent-Length: %d\r\n" % (2 + len(second)),
         "blank": "Content-Length : 2\r\n",
         "both": "Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % (2 + len(second))}[kind]
body = "{}" if kind != "both" else "0\r\n\r\n"
req = "POST /v1/projects/p1/jobs/x:cancel HTTP/1.1\r\n" + host + heads + "\r\n" + body + second
s = socket.create_connection(("127.0.0.1", port), timeout=3)
s.sendall(req.encode())
got = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
except socket.timeout:
    pass
print(" ".join(l.split()[1] for l in got.decode("latin-1").split("\r\n") if l.startswith("HTTP/1.")))
PY
test_expect_success 'a request whose end is ambiguous is refused (400), and nothing is read as a next request' '
  for k in lengths blank both; do
    "$PYTHON" smuggle.py "$PORT" $k >codes || exit 1
    test "$(cat codes)" = 400 || { echo "$k: answers $(cat codes)"; exit 1; }
  done
'
test_expect_success 'the --verbose request log shows a path'"'"'s control characters as ?, forging no line' '
  curl -s -o /dev/null "$PLAIN/healthz%0A2026-12-07T09:12:00.000Z%20trainyardd:%20forged_$RUN_ID" &&
  wait_for 5 grep -q "healthz?2026-12-07T09:12:00.000Z trainyardd: forged_$RUN_ID -> " plain.log &&
  ! grep -q "^2026-12-07T09:12:00.000Z trainyardd: forged_$RUN_ID" plain.log
'
test_expect_success 'a Host that is not the daemon'"'"'s (DNS rebinding) gets 403 naming it' '
  test "$(code -H "Host: evil.example:$PORT" "$PLAIN/v1/projects/p1/jobs")" = 403 &&
  grep -q PERMISSION_DENIED out.json && grep -q "Host header .evil.example:$PORT" out.json &&
  test "$(code -H "Host: localhost:$PORT" "$PLAIN/v1/projects/p1/jobs")" = 200 &&
  test "$(code -H "Host: trainyard.test:$PORT" "$PLAIN/v1/projects/p1/jobs")" = 200 &&
  test "$(code -H "Host: localhost:1" "$PLAIN/v1/projects/p1/jobs")" = 403
'
test_expect_success 'an Origin of another site gets 403; the daemon'"'"'s own passes' '
  test "$(code -H "Origin: http://evil.example" -X POST -H "Content-Type: application/json" \
    -d "{}" "$PLAIN/v1/projects/p1/jobs")" = 403 &&
  grep -q "Origin header .http://evil.example" out.json && grep -q PERMISSION_DENIED out.json &&
  test "$(code -H "Origin: null" "$PLAIN/v1/projects/p1/jobs")" = 403 &&
  test "$(code -H "Origin: http://127.0.0.1:$PORT" "$PLAIN/v1/projects/p1/jobs")" = 200
'
test_expect_success 'a page served from another IP address with the daemon'"'"'s port is another site (403)' '
  test "$(code -H "Origin: http://93.184.216.34:$PORT" -X POST \
    "$PLAIN/v1/projects/p1/jobs/nosuch:cancel")" = 403 &&
  grep -q "Origin header .http://93.184.216.34:$PORT" out.json &&
  test "$(code -H "Origin: http://localhost:$PORT" "$PLAIN/v1/projects/p1/jobs")" = 403 &&
  test "$(code -H "Host: localhost:$PORT" -H "Origin: http://localhost:$PORT" \
    "$PLAIN/v1/projects/p1/jobs")" = 200
'
test_expect_success 'API answers are data, never a page: no framing, sniffing or caching' '
  curl -s -D hdr -o /dev/null -H "Authorization: Bearer $TOK_A" "$PLAIN/v1/projects/p1/jobs" &&
  grep -qi "^Cache-Control: no-store" hdr && grep -qi "^X-Content-Type-Options: nosniff" hdr &&
  grep -qi "^Content-Security-Policy: default-src .none.; frame-ancestors .none." hdr &&
  grep -qi "^X-Frame-Options: DENY" hdr &&
  curl -s -D hdr -o /dev/null "$PLAIN/v1/projects/p1/jobs" && grep -q "^HTTP/1.1 401" hdr &&
  grep -qi "^Cache-Control: no-store" hdr &&
  curl -s -D hdr -o /dev/null "$PLAIN/" &&
  test "$(grep -ci "^Content-Security-Policy:" hdr)" -eq 1 && grep -qi "script-src .self." hdr
'
test_expect_success 'POST and PATCH bodies must be application/json (400 naming the header)' '
  test "$(code -X POST -d "{}" "$PLAIN/v1/projects/p1/jobs")" = 400 &&
  grep -q "Content-Type .application/x-www-form-urlencoded" out.json &&
  grep -q INVALID_ARGUMENT out.json &&
  test "$(code -X POST -H "Content-Type: text/plain" -d "{}" "$PLAIN/v1/projects/p1/jobs")" = 400 &&
  test "$(code -X PATCH -H "Content-Type: text/plain" -d "{}" "$PLAIN/v1/projects/p1/jobs/j?updateMask=labels")" = 400 &&
  test "$(code -X POST -H "Content-Type: application/json; charset=UTF-8" -d "{\"jobId\":\"ct\"}" "$PLAIN/v1/projects/p1/jobs")" = 400 &&
  grep -q trainingInput out.json
'

# timed CURL ARGS...: seconds the request took (status in out.code); timed_as USER CURL ARGS...
# the same as another user (root only)
timed() {
  "$PYTHON" -c 'import subprocess,sys,time; t=time.time(); r=subprocess.run(sys.argv[1:],capture_output=True,text=True); open("out.code","w").write(r.stdout); print("%.2f" % (time.time()-t))' \
    curl -s -o /dev/null -w '%{http_code}' "$@"
}
timed_as() {
  u=$1; shift
  "$PYTHON" -c 'import subprocess,sys,time; t=time.time(); r=subprocess.run(sys.argv[1:],capture_output=True,text=True); open("out.code","w").write(r.stdout); print("%.2f" % (time.time()-t))' \
    setpriv --reuid="$u" --regid="$u" --clear-groups -- curl -s -o /dev/null -w '%{http_code}' "$@"
}
# fast|slow SECONDS [MIN]: the request was answered at once (under 0.8 s, a loaded machine
# included), or held back at least MIN seconds
fast() { "$PYTHON" -c "import sys; t=float(sys.argv[1]); assert t < 0.8, \"%s s: not at once\" % t" "$1"; }
slow() { "$PYTHON" -c "import sys; t=float(sys.argv[1]); assert t >= float(sys.argv[2]), \"%s s: not held back %s s\" % (t, sys.argv[2])" "$1" "$2"; }
test_expect_success 'failed authentications of one client are held back; only its good token resets' '
  for i in 1 2 3 4 5; do
    t=$(timed -H "Authorization: Bearer wrong-token-$$-00000$i" "$PLAIN/v1/projects/p1/jobs") &&
    test "$(cat out.code)" = 401 && fast "$t" || return 1
  done &&
  t=$(timed -H "Authorization: Bearer wrong-token-$$-000006" "$PLAIN/v1/projects/p1/jobs") &&
  test "$(cat out.code)" = 401 && slow "$t" 0.95 &&
  t=$(timed -H "Authorization: Bearer wrong-token-$$-000007" "$PLAIN/v1/projects/p1/jobs") &&
  test "$(cat out.code)" = 401 && slow "$t" 1.95 &&
  if [ "$(id -u)" -eq 0 ]; then
    t=$(timed_as 65534 -H "Authorization: Bearer wrong-token-$$-000008" "$PLAIN/v1/projects/p1/jobs") &&
    test "$(cat out.code)" = 401 && fast "$t" || return 1
  fi &&
  t=$(timed -H "Authorization: Bearer $TOK_A" "$PLAIN/v1/projects/p2/jobs") &&
  test "$(cat out.code)" = 403 && fast "$t" &&
  t=$(timed -H "Authorization: Bearer wrong-token-$$-000018" "$PLAIN/v1/projects/p1/jobs") &&
  test "$(cat out.code)" = 401 && slow "$t" 3.95 &&
  t=$(timed -H "Authorization: Bearer $TOK_A" "$PLAIN/v1/projects/p1/jobs") &&
  test "$(cat out.code)" = 200 && fast "$t" &&
  t=$(timed -H "Authorization: Bearer wrong-token-$$-000009" "$PLAIN/v1/projects/p1/jobs") &&
  test "$(cat out.code)" = 401 && fast "$t"
'

# As another local user (a client of its own): guesses at p2 between requests of its own p1.
test_expect_success 'a good token for another project than the one guessed resets nothing' '
  if [ "$(id -u)" -ne 0 ]; then exit 0; fi
  for i in 1 2 3 4; do
    t=$(timed_as 65534 -H "Authorization: Bearer wrong-token-$$-00002$i" "$PLAIN/v1/projects/p2/jobs") &&
    test "$(cat out.code)" = 401 && fast "$t" &&
    t=$(timed_as 65534 -H "Authorization: Bearer $TOK_A" "$PLAIN/v1/projects/p1/jobs") &&
    test "$(cat out.code)" = 200 && fast "$t" || exit 1
  done &&
  t=$(timed_as 65534 -H "Authorization: Bearer wrong-token-$$-000031" "$PLAIN/v1/projects/p2/jobs") &&
  test "$(cat out.code)" = 401 && slow "$t" 0.95 &&
  t=$(timed_as 65534 -H "Authorization: Bearer $TOK_A" "$PLAIN/v1/projects") &&
  test "$(cat out.code)" = 200 &&
  t=$(timed_as 65534 -H "Authorization: Bearer wrong-token-$$-000032" "$PLAIN/v1/projects/p2/jobs") &&
  test "$(cat out.code)" = 401 && slow "$t" 1.95
'

# reload.py PORT: on one kept-alive connection, TOK_A works; after SIGHUP with a file that
# has TOK_B instead, TOK_A gets 401 and TOK_B 200, still on the same connection.
cat >reload.py <<'PY'
import http.client, os, signal, sys, time
port, pid, a, b = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
def get(tok):
    c.request("GET", "/v1/projects/p1/jobs", headers={"Authorization": "Bearer " + tok})
    r = c.getresponse(); r.read(); return r.status
assert get(a) == 200
sock = c.sock
assert sock is not None
with open("tokens.new", "w") as f:
    f.write(b + " p1\n")
os.chmod("tokens.new", 0o600)
os.rename("tokens.new", "tokens")
os.kill(pid, signal.SIGHUP)
time.sleep(0.5)
assert get(b) == 200
assert c.sock is sock, "the connection was dropped"
assert get(a) == 401
print("ok")
PY
test_expect_success 'SIGHUP reads the tokens file again, on connections kept open' '
  "$PYTHON" reload.py "$PORT" "$PLAIN_PID" "$TOK_A" "$TOK_B" &&
  grep -q "SIGHUP: read 1 token from" plain.log
'
test_expect_success 'SIGHUP with a bad tokens file keeps the tokens in use and says why' '
  printf "short p1\n" >tokens && chmod 600 tokens && kill -HUP "$PLAIN_PID" &&
  wait_for 5 grep -q "SIGHUP: keeping the tokens in use: .*tokens:1: token too short" plain.log &&
  test "$(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $TOK_B" "$PLAIN/v1/projects/p1/jobs")" = 200
'
test_expect_success 'no token is ever written to a log (header, access_token, wrong ones, jobs)' '
  printf "%s p1\n%s p1\n" "$TOK_B" "$TOK_Q" >tokens && chmod 600 tokens && kill -HUP "$PLAIN_PID" &&
  wait_for 5 sh -c "grep -c \"SIGHUP: read 2 tokens\" plain.log | grep -q 1" &&
  write_job job.json "echo hello; echo err >&2" &&
  "$PYTHON" -c "import json; d=json.load(open(\"job.json\")); d[\"jobId\"]=\"logged\"; json.dump(d, open(\"job.json\",\"w\"))" &&
  test "$(curl -s -o out.json -w "%{http_code}" -H "Authorization: Bearer $TOK_B" -H "Content-Type: application/json" --data-binary @job.json "$PLAIN/v1/projects/p1/jobs?access_token=$TOK_Q")" = 200 &&
  wait_for 20 sh -c "curl -s -H \"Authorization: Bearer $TOK_B\" $PLAIN/v1/projects/p1/jobs/logged | grep -q SUCCEEDED" &&
  curl -s -H "Authorization: Bearer $TOK_B" "$PLAIN/v1/projects/p1/jobs/logged/logs?access_token=$TOK_Q" >/dev/null &&
  curl -s -H "Authorization: Bearer $TOK_A" "$PLAIN/v1/projects/p1/jobs?access_token=$TOK_A" >/dev/null &&
  curl -s "$PLAIN/v1/projects/p1/jobs?access_token=$TOK_Q&bogus=1" >/dev/null &&
  grep -q "GET /v1/projects/p1/jobs/logged/logs -> 200" plain.log &&
  ! grep -r -l -e "$TOK_A" -e "$TOK_B" -e "$TOK_Q" plain.log plain/ --exclude=store.db* --exclude=tokens
'
# revoke.py PORT PID TOK_KEEP TOK_GONE: two followed streams of job "streamed", one per token;
# once both have lines, the tokens file keeps only TOK_KEEP and the daemon gets SIGHUP: the
# stream of TOK_GONE must end within 3 s, the other go on.
cat >revoke.py <<'PY'
import os, signal, socket, sys, time
port, pid, keep, gone = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
def stream(tok):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /v1/projects/p1/jobs/streamed/logs?follow=true HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port +
              b"Authorization: Bearer " + tok.encode() + b"\r\n\r\n")
    return s
def read_lines(s, n, secs):
    data, end = b"", time.time() + secs
    while data.count(b"line-") < n and time.time() < end:
        s.settimeout(max(0.1, end - time.time()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            return data, True
        data += chunk
    return data, False
q, b = stream(gone), stream(keep)
for s in (q, b):
    data, eof = read_lines(s, 5, 20)
    assert data.count(b"line-") >= 5 and not eof, data[-300:]
with open("tokens.new", "w") as f:
    f.write(keep + " p1\n")
os.chmod("tokens.new", 0o600)
os.rename("tokens.new", "tokens")
os.kill(pid, signal.SIGHUP)
t, eof = time.time(), False
while time.time() - t < 3 and not eof:
    _, eof = read_lines(q, 10**9, 0.5)
assert eof, "the stream of the removed token went on"
data, eof = read_lines(b, 5, 10)
assert data.count(b"line-") >= 5 and not eof, "the other stream ended"
print("ok: cut after %.2f s" % (time.time() - t))
PY
test_expect_success 'a token removed from the file cuts its followed log streams' '
  write_job job.json "i=0; while [ \$i -lt 300 ]; do echo line-\$i; i=\$((i+1)); sleep 0.1; done" &&
  "$PYTHON" -c "import json; d=json.load(open(\"job.json\")); d[\"jobId\"]=\"streamed\"; json.dump(d, open(\"job.json\",\"w\"))" &&
  test "$(curl -s -o out.json -w "%{http_code}" -H "Authorization: Bearer $TOK_B" -H "Content-Type: application/json" --data-binary @job.json "$PLAIN/v1/projects/p1/jobs")" = 200 &&
  "$PYTHON" revoke.py "$PORT" "$PLAIN_PID" "$TOK_B" "$TOK_Q" &&
  test "$(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $TOK_Q" "$PLAIN/v1/projects/p1/jobs/streamed/logs")" = 401 &&
  curl -s -o /dev/null -X POST -H "Authorization: Bearer $TOK_B" "$PLAIN/v1/projects/p1/jobs/streamed:cancel"
'
test_expect_success 'the store holds no token either' '
  ! grep -a -l -e "$TOK_A" -e "$TOK_B" -e "$TOK_Q" plain/*.db* 2>/dev/null
'
trainyardd_stop plain

# --- TLS -------------------------------------------------------------------------------
test_expect_success 'a self-signed certificate for 127.0.0.1 and localhost' '
  openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 \
    -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2>/dev/null &&
  chmod 600 key.pem &&
  openssl req -x509 -newkey rsa:2048 -nodes -keyout other-key.pem -out other.pem -days 2 \
    -subj /CN=other 2>/dev/null
'
trainyardd_start tls --tls-cert "$TEST_DIR/cert.pem" --tls-key "$TEST_DIR/key.pem" \
  --connection-timeout 2
TLS=https://127.0.0.1:${TYD_URL##*:} TLS_PORT=${TYD_URL##*:}

# tlshold.py PORT: connections that never finish a TLS handshake (silent ones, one with half a
# ClientHello) are closed by the daemon after --connection-timeout
cat >tlshold.py <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(6)]
held[0].sendall(b"\x16\x03\x01\x02\x00\x01")
t = time.time()
for s in held:
    s.settimeout(10)
    try:
        while s.recv(100):  # a TLS alert may come first
            pass
    except ConnectionResetError:
        pass
    except socket.timeout:
        sys.exit("a connection with no handshake was still open after %.1f s" % (time.time() - t))
print("ok: closed after %.1f s" % (time.time() - t))
PY

test_expect_success 'HTTPS: the daemon says so and answers with the certificate' '
  grep -q "listening on https://127.0.0.1:$TLS_PORT" tls.log &&
  test "$(curl -s --cacert cert.pem -o out.json -w "%{http_code}" "$TLS/healthz")" = 200
'
test_expect_success 'HTTPS: connections that never finish the handshake time out' '
  "$PYTHON" tlshold.py "$TLS_PORT" &&
  test "$(curl -s --cacert cert.pem -o out.json -w "%{http_code}" "$TLS/healthz")" = 200
'
test_expect_success 'plain HTTP to the HTTPS port gets no answer' '
  ! curl -s -m 5 -o out.txt "http://127.0.0.1:$TLS_PORT/healthz" &&
  ! grep -q ok out.txt
'
test_expect_success 'the CLI verifies the certificate: with the CA file it works' '
  TRAINYARD_CUSTOM_CA_CERTS_FILE=$TEST_DIR/cert.pem "$TY" jobs list --api-endpoint "$TLS" --project p1 &&
  CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE=$TEST_DIR/cert.pem "$TY" jobs list --api-endpoint "$TLS" --project p1 &&
  printf "api_endpoint = %s\ncustom_ca_certs_file = cert.pem\n" "$TLS" >cli.conf &&
  TRAINYARD_CONFIG=$TEST_DIR/cli.conf "$TY" jobs list --project p1
'
test_expect_success 'without it (or with another CA) a clear certificate error' '
  ! "$TY" jobs list --api-endpoint "$TLS" --project p1 2>err.txt &&
  { grep -q "TLS certificate of trainyardd at $TLS could not be verified" err.txt || { cat err.txt >&2; false; }; } &&
  grep -q custom_ca_certs_file err.txt &&
  ! TRAINYARD_CUSTOM_CA_CERTS_FILE=$TEST_DIR/other.pem "$TY" jobs list --api-endpoint "$TLS" --project p1 2>err.txt &&
  grep -q "could not be verified (CA file from TRAINYARD_CUSTOM_CA_CERTS_FILE)" err.txt &&
  ! TRAINYARD_CUSTOM_CA_CERTS_FILE=$TEST_DIR/nope.pem "$TY" jobs list --api-endpoint "$TLS" 2>err.txt &&
  grep -q "TRAINYARD_CUSTOM_CA_CERTS_FILE: cannot read the CA certificates file" err.txt
'
test_expect_success 'Google'"'"'s Python client over HTTPS with the CA file' '
  "$PYTHON" - "$TLS" "$TEST_DIR/cert.pem" "$TY_SOURCE_DIR" <<-\PY
	import sys, httplib2
	url, ca, src = sys.argv[1:]
	h = httplib2.Http(ca_certs=ca)
	resp, body = h.request(url + "/v1/projects/p1/jobs", "GET")
	assert resp.status == 200, (resp, body)
	resp, body = h.request(url + "/v1/projects/p1/jobs", "POST", body="{}",
	                       headers={"Content-Type": "application/json"})
	assert resp.status == 400 and b"INVALID_ARGUMENT" in body, (resp, body)
	PY
'
trainyardd_stop tls

test_expect_success 'TLS start-up errors name the option' '
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s1 --tls-cert nope.pem --tls-key key.pem 2>err.txt &&
  grep -q "tls-cert: .*nope.pem" err.txt &&
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s1 --tls-cert cert.pem 2>err.txt &&
  grep -q "tls-cert needs --tls-key" err.txt &&
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s1 --tls-cert key.pem --tls-key key.pem 2>err.txt &&
  grep -q "tls-cert: .*key.pem is not a PEM file" err.txt &&
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s1 --tls-cert cert.pem --tls-key other-key.pem 2>err.txt &&
  grep -q "cannot start HTTPS on 127.0.0.1:0: --tls-cert" err.txt
'
test_expect_success 'a tokens or config file that another user could change, or a bad one, or a registry off loopback, is refused' '
  printf "%s p1\n" "$TOK_A" >t-other && chmod 600 t-other &&
  printf "%s p1\n%s p2\n" "$TOK_A" "$TOK_A" >t-twice && chmod 600 t-twice &&
  printf "%s p1,a/b\n" "$TOK_A" >t-badid && chmod 600 t-badid &&
  printf "verbose = true\n" >c-open && chmod 666 c-open &&
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s2 --auth-tokens t-twice 2>err.txt &&
  grep -q "t-twice:2: the token of line 1 again" err.txt &&
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s2 --auth-tokens t-badid 2>err.txt &&
  grep -q "t-badid:1: .a/b. is not a project id" err.txt &&
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s2 --config c-open 2>err.txt &&
  grep -q "config: c-open may be changed by other users (mode 666" err.txt &&
  printf "verbose = on\n" >c-on &&
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s2 --config c-on 2>err.txt &&
  grep -q "c-on:1: verbose: expected true or false (got .on.)" err.txt &&
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s2 --log-file "$TEST_DIR/no/such/dir.log" 2>err.txt &&
  grep -q -- "--log-file: cannot open .*no/such/dir.log" err.txt &&
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s2 --insecure-registries localhost:5000,reg.example.com:5000 2>err.txt &&
  grep -q -- "--insecure-registries: .reg.example.com:5000. is not on loopback: plain-HTTP registries are allowed only on" err.txt &&
  printf "insecure-registries = http://127.0.0.1:5000\n" >c-url && chmod 600 c-url &&
  ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s2 --config c-url 2>err.txt &&
  grep -q "c-url:1: insecure-registries: .http://127.0.0.1:5000. is not a registry.s HOST\[:PORT\]" err.txt &&
  if [ "$(id -u)" -eq 0 ]; then
    chown 65534 t-other &&
    ! "$TRAINYARDD" --listen 127.0.0.1:0 --state-dir s2 --auth-tokens t-other 2>err.txt &&
    grep -q "t-other belongs to uid 65534, not to trainyardd" err.txt || exit 1
  fi
'
# wild.py PORT: 5 idle connections to 127.0.0.1, 5 to 127.0.0.2 and 5 to 127.0.0.1 from
# 127.0.0.3, all of this user; prints how many the daemon kept open.
cat >wild.py <<'PY'
import socket, sys, time
port, held = int(sys.argv[1]), []
for dst, src in (("127.0.0.1", None), ("127.0.0.2", None), ("127.0.0.1", "127.0.0.3")):
    for i in range(5):
        s = socket.socket()
        s.settimeout(3)
        if src:
            s.bind((src, 0))
        s.connect((dst, port))
        held.append(s)
time.sleep(0.5)
kept = 0
for s in held:
    s.setblocking(False)
    try:
        kept += s.recv(1) != b""
    except BlockingIOError:
        kept += 1
    except ConnectionResetError:
        pass
print("held %d of %d" % (kept, len(held)))
PY
test_expect_success 'a wildcard listener: another loopback address does not get past the per-user limit' '
  "$TRAINYARDD" --listen 0.0.0.0:0 --allow-insecure-http --auth-tokens "$TEST_DIR/tokens" \
    --state-dir "$TEST_DIR/wild" --max-connections-per-address 2 --connection-timeout 5 \
    >wild.log 2>&1 & wpid=$!
  wait_for 20 grep -q "listening on" wild.log &&
  wport=$(sed -n "s|.*listening on http://0\.0\.0\.0:\([0-9]*\) .*|\1|p" wild.log | tail -1) &&
  test -n "$wport" && "$PYTHON" wild.py "$wport" >out; rc=$?
  kill -TERM $wpid; wait $wpid
  cat out && test $rc -eq 0 && grep -q "^held 2 of 15$" out
'
test_expect_success 'a non-loopback address needs TLS or --allow-insecure-http (with a warning)' '
  ! "$TRAINYARDD" --listen 192.0.2.1:0 --state-dir s1 --auth-tokens tokens 2>err.txt &&
  grep -q "refusing to listen on 192.0.2.1:0 over plain HTTP.*--allow-insecure-http" err.txt &&
  ! "$TRAINYARDD" --listen 192.0.2.1:0 --state-dir s1 --auth-tokens tokens --allow-insecure-http 2>err.txt &&
  grep -q "warning: serving plain HTTP on the non-loopback address 192.0.2.1:0" err.txt &&
  printf "allow-insecure-http = true\nauth-tokens = %s/tokens\n" "$TEST_DIR" >d.conf &&
  ! "$TRAINYARDD" --listen 192.0.2.1:0 --state-dir s1 --config d.conf 2>err.txt &&
  grep -q "warning: serving plain HTTP" err.txt &&
  ! "$TRAINYARDD" --listen 192.0.2.1:0 --state-dir s1 2>err.txt &&
  grep -q "without --auth-tokens" err.txt
'
test_done
