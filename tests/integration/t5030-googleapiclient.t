#!/bin/sh
# t5030-googleapiclient: trainyardd driven by Google's own Python client (googleapiclient,
# Debian's python3-googleapi) built from the ml v1 discovery document, as a user migrating
# from AI Platform Training would run it: only the endpoint and the credentials change, the
# calls (ml.projects().jobs().create(...).execute(), list_next, HttpError) stay as they were.
# Covers create, get, list with a filter, list pagination, cancel, patch of labels with the
# etag, 409 for a duplicate and for a stale etag, 404, and 401 without the bearer token; and
# what the clients tunnel: a long GET as a POST with its query in a form body, and (as Google's
# Java client sends them) gzip bodies and a PATCH as a POST with X-HTTP-Method-Override.
. "$(dirname "$0")/../lib/test-lib.sh"

TRAINYARDD="$TY_BUILD_DIR/bin/trainyardd"
if [ ! -x "$TRAINYARDD" ]; then
  echo "1..0 # SKIP trainyardd is not built ($TRAINYARDD)"
  rm -rf "$TEST_DIR"
  exit 0
fi
if ! "$PYTHON" -c 'import googleapiclient.discovery, httplib2' 2>/dev/null; then
  echo "1..0 # SKIP googleapiclient is not installed (apt-get install python3-googleapi)"
  rm -rf "$TEST_DIR"
  exit 0
fi

export DISCOVERY="$TY_SOURCE_DIR/tests/data/ml.v1.discovery.json"
export TOKEN="t5030-token-$$-0123456789abcdef"
printf '# the one token of this test\n%s *\n' "$TOKEN" >"$TEST_DIR/tokens"
chmod 600 "$TEST_DIR/tokens"

# The daemon runs at the top level (tests run in subshells); nothing runs: jobs stay QUEUED.
trainyardd_start svc --auth-tokens "$TEST_DIR/tokens" --max-running-jobs 0 || true
DPID=$TYD_PID
trap 'kill -TERM "$DPID" 2>/dev/null' EXIT
export ENDPOINT="$TYD_URL"

# client.py STEP: one step of a migrating user's script; exits non-zero when a check fails.
cat >"$TEST_DIR/client.py" <<'PY'
import json, os, sys

import httplib2
from googleapiclient import discovery
from googleapiclient.errors import HttpError


class BearerHttp(httplib2.Http):
    """httplib2.Http that sends the service's bearer token with every request."""

    def __init__(self, token, **kw):
        super().__init__(**kw)
        self.token = token

    def request(self, uri, method="GET", body=None, headers=None, *args, **kwargs):
        headers = dict(headers or {})
        headers["Authorization"] = "Bearer " + self.token
        return super().request(uri, method, body, headers, *args, **kwargs)


def build(http):
    with open(os.environ["DISCOVERY"]) as f:
        doc = json.load(f)
    endpoint = os.environ["ENDPOINT"]
    try:  # googleapiclient >= 1.8
        return discovery.build_from_document(
            doc, http=http, client_options={"api_endpoint": endpoint + "/"})
    except TypeError:  # 1.7 (Debian 12): no client_options, and base= is ignored
        doc["rootUrl"] = endpoint + "/"
        return discovery.build_from_document(doc, http=http)


ml = build(BearerHttp(os.environ["TOKEN"]))
jobs = ml.projects().jobs()
PARENT = "projects/p"


def job(job_id, labels=None):
    body = {"jobId": job_id,
            "trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
                              "masterConfig": {"imageUri": "example.com/test:1",
                                               "containerCommand": ["sh", "-c", "true"]},
                              "region": "local"}}
    if labels:
        body["labels"] = labels
    return body


def expect_error(call, status, reason=None):
    try:
        got = call.execute()
    except HttpError as e:
        assert e.resp.status == status, (e.resp.status, e.content)
        err = json.loads(e.content)["error"]
        assert err["code"] == status, err
        if reason:
            assert err["status"] == reason, err
        return err
    raise AssertionError("expected HTTP %d, got a success: %r" % (status, got))


def step_create():
    for jid in ("census_1", "census_2", "mnist_1"):
        got = jobs.create(parent=PARENT, body=job(jid, {"team": "t5030"})).execute()
        assert got["jobId"] == jid, got
        assert got["state"] == "QUEUED", got
        assert got["etag"] and got["createTime"], got
        assert got["labels"] == {"team": "t5030"}, got


def step_get():
    got = jobs.get(name=PARENT + "/jobs/census_1").execute()
    assert got["jobId"] == "census_1", got
    assert got["state"] == "QUEUED", got
    ti = got["trainingInput"]
    assert ti["scaleTier"] == "CUSTOM" and ti["masterType"] == "n1-standard-4", ti
    assert ti["masterConfig"]["containerCommand"] == ["sh", "-c", "true"], ti


def step_filter():
    got = jobs.list(parent=PARENT, filter="jobId:census*").execute()
    ids = sorted(j["jobId"] for j in got.get("jobs", []))
    assert ids == ["census_1", "census_2"], got
    assert "nextPageToken" not in got, got
    got = jobs.list(parent=PARENT, filter="jobId:nothing_like_this*").execute()
    assert got.get("jobs", []) == [], got


def step_pages():
    for i in range(4):
        jobs.create(parent=PARENT, body=job("page_%d" % i)).execute()
    seen, pages = [], 0
    request = jobs.list(parent=PARENT, pageSize=2)
    while request is not None:
        page = request.execute()
        pages += 1
        assert len(page.get("jobs", [])) <= 2, page
        seen += [j["jobId"] for j in page.get("jobs", [])]
        request = jobs.list_next(previous_request=request, previous_response=page)
        assert pages < 20, "pagination does not end"
    want = ["census_1", "census_2", "mnist_1"] + ["page_%d" % i for i in range(4)]
    assert len(seen) == len(set(seen)), seen
    assert sorted(seen) == sorted(want), seen
    assert pages >= 4, pages
    # A filtered listing pages too, and the token keeps the filter.
    seen = []
    request = jobs.list(parent=PARENT, pageSize=1, filter="jobId:page_*")
    while request is not None:
        page = request.execute()
        seen += [j["jobId"] for j in page.get("jobs", [])]
        request = jobs.list_next(previous_request=request, previous_response=page)
    assert sorted(seen) == ["page_%d" % i for i in range(4)], seen


def step_cancel():
    got = jobs.cancel(name=PARENT + "/jobs/census_2", body={}).execute()
    assert got == {}, got
    got = jobs.get(name=PARENT + "/jobs/census_2").execute()
    assert got["state"] == "CANCELLED", got
    got = jobs.list(parent=PARENT, filter="state:CANCELLED").execute()
    assert [j["jobId"] for j in got.get("jobs", [])] == ["census_2"], got


def step_patch():
    name = PARENT + "/jobs/census_1"
    before = jobs.get(name=name).execute()
    got = jobs.patch(name=name, updateMask="labels",
                     body={"labels": {"team": "vision", "owner": "ann"},
                           "etag": before["etag"]}).execute()
    assert got["labels"] == {"team": "vision", "owner": "ann"}, got
    assert got["etag"] != before["etag"], got
    assert jobs.get(name=name).execute()["labels"] == got["labels"]
    # The old etag is stale now: the change is refused, the labels stay.
    expect_error(jobs.patch(name=name, updateMask="labels",
                            body={"labels": {"team": "late"}, "etag": before["etag"]}), 409)
    assert jobs.get(name=name).execute()["labels"] == got["labels"]


def step_duplicate():
    err = expect_error(jobs.create(parent=PARENT, body=job("census_1")), 409, "ALREADY_EXISTS")
    assert "census_1" in err["message"], err


def step_unknown():
    expect_error(jobs.get(name=PARENT + "/jobs/no_such_job"), 404, "NOT_FOUND")
    expect_error(jobs.cancel(name=PARENT + "/jobs/no_such_job", body={}), 404, "NOT_FOUND")


def step_noauth():
    plain = build(httplib2.Http()).projects().jobs()
    expect_error(plain.get(name=PARENT + "/jobs/census_1"), 401, "UNAUTHENTICATED")
    wrong = build(BearerHttp("not-the-token-0123456789")).projects().jobs()
    expect_error(wrong.list(parent=PARENT), 401, "UNAUTHENTICATED")


def step_long_query():
    # googleapiclient sends a GET whose URL is over 2,048 characters as a POST with
    # X-HTTP-Method-Override: GET and the query as a form body
    flt = "jobId=census_1" + "".join(" OR jobId=census_%d" % i for i in range(3, 100))
    request = jobs.list(parent=PARENT, filter=flt, pageSize=5)
    assert len(request.uri) > 2048, len(request.uri)
    got = request.execute()
    assert [j["jobId"] for j in got.get("jobs", [])] == ["census_1"], got


def raw(method, path, body, headers):
    """One request as Google's Java client sends it (NetHttpTransport has no PATCH)."""
    headers = dict(headers, Authorization="Bearer " + os.environ["TOKEN"])
    return httplib2.Http().request(os.environ["ENDPOINT"] + "/v1/" + path, method, body, headers)


def step_java():
    import gzip
    body = gzip.compress(json.dumps(job("java_1")).encode())
    resp, content = raw("POST", PARENT + "/jobs", body,
                        {"Content-Type": "application/json; charset=UTF-8",
                         "Content-Encoding": "gzip"})
    assert resp.status == 200 and json.loads(content)["jobId"] == "java_1", content
    body = gzip.compress(json.dumps({"labels": {"via": "java"}}).encode())
    resp, content = raw("POST", PARENT + "/jobs/java_1?updateMask=labels", body,
                        {"Content-Type": "application/json; charset=UTF-8",
                         "Content-Encoding": "gzip", "X-HTTP-Method-Override": "PATCH"})
    assert resp.status == 200 and json.loads(content)["labels"] == {"via": "java"}, content
    assert jobs.get(name=PARENT + "/jobs/java_1").execute()["labels"] == {"via": "java"}
    # a body that is not what it says it is
    resp, content = raw("POST", PARENT + "/jobs", b"{}", {"Content-Type": "application/json",
                                                          "Content-Encoding": "gzip"})
    assert resp.status == 400 and b"not valid gzip" in content, content
    resp, content = raw("POST", PARENT + "/jobs", b"{}", {"Content-Type": "application/json",
                                                          "X-HTTP-Method-Override": "HEAD"})
    assert resp.status == 400 and b"X-HTTP-Method-Override" in content, content


globals()["step_" + sys.argv[1]]()
PY

py() { "$PYTHON" "$TEST_DIR/client.py" "$@"; }

test_expect_success 'trainyardd starts with --auth-tokens and --max-running-jobs 0' '
  test -n "$ENDPOINT" && kill -0 "$DPID"
'
test_expect_success 'jobs.create through googleapiclient' 'py create'
test_expect_success 'jobs.get returns the job as created' 'py get'
test_expect_success 'jobs.list with filter jobId:census*' 'py filter'
test_expect_success 'jobs.list pages with pageSize and list_next' 'py pages'
test_expect_success 'jobs.cancel of a queued job: CANCELLED' 'py cancel'
test_expect_success 'jobs.patch of labels with the etag; a stale etag gets 409' 'py patch'
test_expect_success 'a duplicate jobs.create raises HttpError 409' 'py duplicate'
test_expect_success 'an unknown job raises HttpError 404' 'py unknown'
test_expect_success 'no or a wrong bearer token raises HttpError 401' 'py noauth'
test_expect_success 'a list whose URL is over 2,048 characters (sent as a POST)' 'py long_query'
test_expect_success 'the Java client'"'"'s gzip bodies and PATCH sent as POST' 'py java'

kill -TERM "$DPID"
wait "$DPID"
rc=$?
trap - EXIT
test_expect_success 'SIGTERM stops the daemon with status 0' "test $rc -eq 0"
test_done
