#!/usr/bin/env python3
# isolation-matrix.py: the isolation matrix of trainyardd (t5070-isolation.t). Every row of
# the API table (TYD_API in src/trainyardd/route.h, read from the source so that a new row is
# tried too) is called
#   - with no token, a wrong token, a malformed Authorization header, and the other project's
#     token, on the other project's real jobs;
#   - with a project's own token, on crafted project ids, job ids and task names ("..",
#     "%2F", "%00", "%2e%2e", very long, unicode, raw bytes);
# and every answer must be 400, 401, 403 or 404 in Google's error form
# {"error": {"code", "message", "status"}} (the health check aside), and no answer may hold
# data of a project the caller's token does not grant: its job ids (unless the request itself
# named them), labels or log lines (unique markers planted by the test script). Afterwards the
# jobs must be as they were (no cross-project cancel or patch went through).
# Usage: isolation-matrix.py ROUTE_H HOST PORT MARKERS_JSON
# MARKERS_JSON: {"tokens": {"pa": T, "pb": T}, "jobs": {"pa": [ids], "pb": [ids]},
#                "markers": {"pa": [strings], "pb": [strings]}}
# Prints one line per failure and a summary; exit 1 when anything failed.
import json
import re
import socket
import sys

ROUTE_H, HOST, PORT, MARKERS = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
cfg = json.load(open(MARKERS))
TOKENS, JOBS, MARK = cfg["tokens"], cfg["jobs"], cfg["markers"]
PROJECTS = sorted(TOKENS)
ALLOWED = {400, 401, 403, 404}
failures = []
count = 0


def api_rows():
    """(http_method, pattern) of every row of TYD_API but the health check."""
    text = open(ROUTE_H).read()
    jobs = re.search(r'#define TYD_JOBS "([^"]*)"', text).group(1)
    rows = []
    for m in re.finditer(r'X\("([A-Z*]+)",\s*(TYD_JOBS\s*)?"([^"]*)",\s*(\w+)', text):
        method, prefix, rest, what = m.group(1), m.group(2), m.group(3), m.group(4)
        if what in ("HEALTH", "DASHBOARD", "DASHBOARD_ASSET"):
            continue  # public, and checked apart (3.) to hold nothing of a project
        pattern = (jobs if prefix else "") + rest
        pattern = pattern.replace("/?", "")
        for meth in (["GET", "POST"] if method == "*" else [method]):
            rows.append((meth, pattern))
    if len(rows) < 8:
        sys.exit("isolation-matrix: found only %d rows in %s" % (len(rows), ROUTE_H))
    return rows


def request(method, path, token=None, auth=None, body=None):
    """Send one request on its own connection; returns (status, body bytes)."""
    head = b"%s %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n" % (
        method.encode(), path if isinstance(path, bytes) else path.encode(), HOST.encode(), PORT)
    if token is not None:
        head += b"Authorization: Bearer " + token.encode() + b"\r\n"
    if auth is not None:
        head += b"Authorization: " + auth.encode() + b"\r\n"
    data = json.dumps(body).encode() if body is not None else b""
    if method in ("POST", "PATCH", "PUT"):
        head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
    s = socket.create_connection((HOST, PORT), timeout=10)
    try:
        s.sendall(head + b"\r\n" + data)
        resp = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return (-1, b"(no complete answer within 10 s: a stream that did not end?)")
            if not chunk:
                break
            resp += chunk
    finally:
        s.close()
    head, _, payload = resp.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return (-1, resp[:200])
    if re.search(rb"(?i)\r\ntransfer-encoding:\s*chunked", head):
        out, rest = b"", payload
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size.split(b";")[0] or b"0", 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        payload = out
    return (status, payload)


def check(what, method, path, granted, status, body, sent=b""):
    """granted: the projects the caller's token grants (their data may appear)."""
    global count
    count += 1
    if status == 200 and granted and method == "GET" and path == "/v1/projects":
        # the projects list answers every valid token, with what that token grants
        seen = sorted(p["projectId"] for p in json.loads(body).get("projects", []))
        if seen != sorted(granted):
            failures.append("%s: GET /v1/projects -> %r, want exactly %r"
                            % (what, seen, sorted(granted)))
        return
    if status not in ALLOWED:
        failures.append("%s: %s %r -> %d (want 400, 401, 403 or 404): %r"
                        % (what, method, path, status, body[:300]))
        return
    try:
        j = json.loads(body)
        e = j["error"]
        ok = (set(j) == {"error"} and e["code"] == status and isinstance(e["message"], str)
              and isinstance(e["status"], str) and e["status"].isupper())
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        failures.append("%s: %s %r -> %d without Google's error body: %r"
                        % (what, method, path, status, body[:300]))
    if ok and status == 403 and granted and "Permission denied on project" in e["message"]:
        # a valid token for another project: the answer names what the token grants, so that a
        # mistyped --project is told apart from a missing permission
        named = sorted(set(re.findall(r"'([^']*)'", e["message"].split("grants", 1)[-1])))
        if "grants" not in e["message"] or named != sorted(granted):
            failures.append("%s: %s %r -> 403 does not name the token's projects %r: %r"
                            % (what, method, path, sorted(granted), e["message"]))
    request_text = (path if isinstance(path, bytes) else path.encode()) + sent
    for p in PROJECTS:
        if p in granted:
            continue
        for m in MARK[p] + JOBS[p]:
            if m.encode() in body and m.encode() not in request_text:
                failures.append("%s: %s %r -> %d shows %s's data %r: %r"
                                % (what, method, path, status, p, m, body[:300]))


def body_for(method, pattern):
    if method == "POST" and pattern.endswith("/jobs"):
        return {"jobId": "iso_new_job", "trainingInput": {
            "scaleTier": "BASIC", "masterConfig": {"imageUri": "example.com/x:1",
                                                   "containerCommand": ["true"]}}}
    if method == "PATCH":
        return {"labels": {"stolen": "yes"}}
    if method == "POST":
        return {}
    return None


def query_for(method, pattern):
    if method == "PATCH":
        return "?updateMask=labels"
    return ""


def fill(pattern, project, job):
    return pattern.replace("{project}", project).replace("{job}", job)


rows = api_rows()

# 1. Credentials: the other project's real jobs, without a token that grants them.
for victim in PROJECTS:
    others = [p for p in PROJECTS if p != victim]
    creds = [("no token", None, None, set()),
             ("wrong token", "x" * 24, None, set()),
             ("malformed header", None, "Basic " + TOKENS[victim], set()),
             ("empty bearer", None, "Bearer ", set())]
    creds += [("%s's token" % o, TOKENS[o], None, {o}) for o in others]
    for meth, pattern in rows:
        # A wrong token's backoff is reset only by a good one for the project it asked for
        # (docs/security.md, "Guessing"); a row that names none (the projects list, /metrics)
        # gets the wrong credentials once, in 4.
        mine = [c for c in creds if c[3]] if "{project}" not in pattern else creds
        for job in JOBS[victim]:
            for suffix in ("", "?follow=true", "?taskName=master-replica-0"):
                if suffix and not pattern.endswith("/logs"):
                    continue
                path = fill(pattern, victim, job) + (suffix or query_for(meth, pattern))
                for what, tok, auth, granted in mine:
                    b = body_for(meth, pattern)
                    st, resp = request(meth, path, tok, auth, b)
                    check(what, meth, path, granted, st, resp,
                          json.dumps(b).encode() if b is not None else b"")
                    if st == 401:
                        # a good token for the project asked for resets the wrong-token
                        # backoff (docs/security.md, "Guessing"); another project's does not
                        request("GET", "/v1/projects/%s/jobs" % victim, TOKENS[victim])

# 2. Crafted ids and task names, with a project's own token.
LONG = "a" * 3000
crafted_jobs = ["..", "%2e%2e", "%2E%2E%2F..", "%2F", "..%2F..%2F", "a%2Fb", "%00", "a%00",
                "%00a", "x" + LONG, "j%C3%B6b", "%E2%80%AE", "j%20b", "%25", "..%5C..",
                "a;b", "a%0Ab", "a%0D%0AX-Injected:%201"]
crafted_projects = ["..", "%2e%2e", "%2F", "%00", "a%00", "p" + LONG, "pr%C3%B6j", "%2E%2E%2F",
                    "a%2Fb", "%20", "a%0Ab"]
crafted_tasks = ["..", "%2e%2e", "..%2F..%2Fetc%2Fpasswd", "%00", "master-replica-0%00",
                 "t" + LONG, "m%C3%A4ster", "%2F", "*", "master-replica-0%2F..", "Master-replica-0"]
for own in PROJECTS:
    tok = TOKENS[own]
    granted = {own}
    real_job = JOBS[own][0]
    other_job = JOBS[[p for p in PROJECTS if p != own][0]][0]
    for meth, pattern in rows:
        cases = []
        if "{job}" in pattern:
            cases += [fill(pattern, own, j) for j in crafted_jobs]
            # the other project's job under this project, truncated, or escaped into it
            cases += [fill(pattern, own, other_job + "%00"),
                      fill(pattern, own, real_job + "%00x"),
                      fill(pattern, own, "..%2F..%2F" + [p for p in PROJECTS if p != own][0]
                           + "%2Fjobs%2F" + other_job)]
        cases += [fill(pattern, p, real_job) for p in crafted_projects]
        cases += [fill(pattern, own + "%00", real_job),
                  fill(pattern, own + "%2F..%2F" + [p for p in PROJECTS if p != own][0],
                       real_job)]
        for path in cases:
            path += query_for(meth, pattern)
            b = body_for(meth, pattern)
            st, resp = request(meth, path, tok, None, b)
            check("crafted id, own token", meth, path, granted, st, resp)
        if pattern.endswith("/logs"):
            for t in crafted_tasks:
                for extra in ("", "&follow=true"):
                    path = fill(pattern, own, real_job) + "?taskName=" + t + extra
                    st, resp = request(meth, path, tok)
                    check("crafted taskName, own token", meth, path, granted, st, resp)
    # raw bytes that are not ASCII in the path (unicode, not percent-encoded)
    for raw in (b"/v1/projects/" + own.encode() + b"/jobs/j\xc3\xb6b",
                b"/v1/projects/pr\xc3\xb6j/jobs",
                b"/v1/projects/" + own.encode() + b"/jobs/" + real_job.encode() + b"\xff"):
        st, resp = request("GET", raw, tok)
        check("raw bytes, own token", "GET", raw, granted, st, resp)

# 3. The health check and the dashboard's files answer anyone, and with nothing of a project.
public = ["/healthz", "/"]
st, page = request("GET", "/")
public += [m.decode() for m in re.findall(rb'(?:src|href)="(/static/[A-Za-z0-9._-]+)"', page)]
if len(public) < 4:
    failures.append("the dashboard's page names fewer than 2 files: %r" % page[:300])
for path in public:
    st, resp = request("GET", path)
    count += 1
    if st != 200 or any(m.encode() in resp for p in PROJECTS for m in MARK[p] + JOBS[p]):
        failures.append("%s: %d %r" % (path, st, resp[:200]))

# 4. The projects list: each token sees its own project with its number of jobs, and nothing
# of the other's; a request without a valid token gets 401 there and at /metrics.
for p in PROJECTS:
    st, resp = request("GET", "/v1/projects", TOKENS[p])
    count += 1
    want = {"projects": [{"projectId": p, "jobCount": str(len(JOBS[p]))}]}
    if st != 200 or json.loads(resp) != want:
        failures.append("GET /v1/projects with %s's token: %d %r, want %r" % (p, st, resp[:300], want))
for path in ("/v1/projects", "/metrics"):
    for what, tok, auth in (("no token", None, None), ("wrong token", "y" * 24, None),
                            ("malformed header", None, "Basic " + TOKENS[PROJECTS[0]])):
        st, resp = request("GET", path, tok, auth)
        count += 1
        if st != 401:
            failures.append("GET %s with %s: %d %r, want 401" % (path, what, st, resp[:200]))

# 5. Nothing crossed: each project's jobs are as they were (not cancelled, not relabelled),
# and no job was created by a refused request.
for p in PROJECTS:
    for j in JOBS[p]:
        st, resp = request("GET", "/v1/projects/%s/jobs/%s" % (p, j), TOKENS[p])
        count += 1
        job = json.loads(resp) if st == 200 else {}
        if st != 200 or "stolen" in job.get("labels", {}) or job.get("state") in (
                "CANCELLING", "CANCELLED"):
            failures.append("%s/%s was changed by a refused request: %d %r" % (p, j, st, resp[:300]))
    st, resp = request("GET", "/v1/projects/%s/jobs/iso_new_job" % p, TOKENS[p])
    count += 1
    if st != 404:
        failures.append("%s/iso_new_job was created by a refused request: %d" % (p, st))

for f in failures[:60]:
    print("FAIL " + f)
print("isolation-matrix: %d requests over %d API rows, %d failures"
      % (count, len(rows), len(failures)))
sys.exit(1 if failures else 0)
