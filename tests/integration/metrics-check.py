#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# metrics-check.py: reads trainyardd's GET /metrics with Prometheus' own parser
# (python3-prometheus-client) for t5110-service-metrics. Subcommands:
#   format FILE                 the text parses; every family has HELP and TYPE (no untyped),
#                               no series twice, histograms have cumulative buckets ending at
#                               +Inf with _count equal to it and a _sum
#   jobs FILE BASE PROJECT...   trainyard_jobs, the retries, internal retries and replica
#                               restarts of each PROJECT equal what the API's jobs.list says
#   value FILE SAMPLE LABELS    print a sample's value (LABELS: k=v,k=v; 0 when absent)
#   dump FILE                   print every sample as "NAME{k=v,...} VALUE", labels sorted by
#                               name (VALUE an integer when it is one), for quick lookups
#   families FILE               print the family names, one a line
# Exits 1 with the reason on the first mismatch.
import json
import math
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

STATES = ["QUEUED", "PREPARING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLING", "CANCELLED"]


def fail(msg):
    print("metrics-check: " + msg, file=sys.stderr)
    sys.exit(1)


def parse(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return list(text_string_to_metric_families(text))
    except Exception as e:  # the parser's own error names the bad line
        fail("%s does not parse: %r" % (path, e))


def labels_key(labels):
    return tuple(sorted(labels.items()))


def check_histogram(fam):
    series = {}
    for s in fam.samples:
        base = {k: v for k, v in s.labels.items() if k != "le"}
        entry = series.setdefault(labels_key(base), {"buckets": [], "sum": None, "count": None})
        if s.name == fam.name + "_bucket":
            entry["buckets"].append((float(s.labels["le"]), s.value))
        elif s.name == fam.name + "_sum":
            entry["sum"] = s.value
        elif s.name == fam.name + "_count":
            entry["count"] = s.value
        else:
            fail("%s: unexpected sample %s" % (fam.name, s.name))
    for key, e in series.items():
        b = e["buckets"]
        if not b or b[-1][0] != math.inf:
            fail("%s%s: no +Inf bucket last" % (fam.name, key))
        if [x[0] for x in b] != sorted(x[0] for x in b):
            fail("%s%s: bounds not increasing" % (fam.name, key))
        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            fail("%s%s: buckets not cumulative: %s" % (fam.name, key, b))
        if e["count"] != b[-1][1]:
            fail("%s%s: _count %s != +Inf bucket %s" % (fam.name, key, e["count"], b[-1][1]))
        if e["sum"] is None or e["sum"] < 0:
            fail("%s%s: no _sum" % (fam.name, key))


def cmd_format(path):
    fams = parse(path)
    seen_fam, seen = set(), set()
    for fam in fams:
        if fam.name in seen_fam:
            fail("family %s twice (its lines are not together)" % fam.name)
        seen_fam.add(fam.name)
        if fam.type == "unknown" or fam.type == "untyped":
            fail("family %s has no TYPE" % fam.name)
        if not fam.documentation:
            fail("family %s has no HELP" % fam.name)
        for s in fam.samples:
            key = (s.name, labels_key(s.labels))
            if key in seen:
                fail("series %s twice" % (key,))
            seen.add(key)
            if fam.type == "counter" and s.value < 0:
                fail("counter %s below 0" % (key,))
        if fam.type == "histogram":
            check_histogram(fam)
    print("%d families, %d series" % (len(fams), len(seen)))


def sample_map(path):
    out = {}
    for fam in parse(path):
        for s in fam.samples:
            out[(s.name, labels_key(s.labels))] = s.value
    return out


def api_jobs(base, project):
    jobs, token = [], ""
    while True:
        url = "%s/v1/projects/%s/jobs?pageSize=100" % (base, project)
        if token:
            url += "&pageToken=" + token
        with urllib.request.urlopen(url) as r:
            d = json.load(r)
        jobs += d.get("jobs", [])
        token = d.get("nextPageToken")
        if not token:
            return jobs


def cmd_jobs(path, base, projects):
    got = sample_map(path)
    for p in projects:
        jobs = api_jobs(base, p)
        for st in STATES:
            want = sum(1 for j in jobs if j["state"] == st)
            have = got.get(("trainyard_jobs", labels_key({"project": p, "state": st})))
            if have != want:
                fail("trainyard_jobs{project=%s,state=%s} is %s; the API lists %d" % (p, st, have, want))
        status = [j.get("attemptStatus", {}) for j in jobs]
        status += [t.get("attemptStatus", {}) for j in jobs
                   for t in j.get("trainingOutput", {}).get("trials", [])]
        want = {
            "trainyard_job_retries_total": sum(max(a.get("attempt", 1), 1) - 1 for a in status),
            "trainyard_job_internal_retries_total": sum(a.get("internalRetries", 0) for a in status),
            "trainyard_replica_restarts": sum(sum(a.get("replicaRestarts", {}).values()) for a in status),
        }
        for name, w in want.items():
            have = got.get((name, labels_key({"project": p})))
            if have != w:
                fail("%s{project=%s} is %s; the API's attemptStatus says %d" % (name, p, have, w))
        print("%s: %d jobs, %s" % (p, len(jobs), want))


def number(v):
    return str(int(v)) if float(v).is_integer() else repr(v)


def cmd_value(path, name, labels):
    lab = dict(kv.split("=", 1) for kv in labels.split(",")) if labels else {}
    print(number(sample_map(path).get((name, labels_key(lab)), 0)))


def cmd_dump(path):
    for (name, labels), v in sample_map(path).items():
        print("%s{%s} %s" % (name, ",".join("%s=%s" % kv for kv in labels), number(v)))


def main(argv):
    if len(argv) >= 2 and argv[0] == "format":
        cmd_format(argv[1])
    elif len(argv) >= 4 and argv[0] == "jobs":
        cmd_jobs(argv[1], argv[2], argv[3:])
    elif len(argv) in (3, 4) and argv[0] == "value":
        cmd_value(argv[1], argv[2], argv[3] if len(argv) == 4 else "")
    elif len(argv) == 2 and argv[0] == "dump":
        cmd_dump(argv[1])
    elif len(argv) == 2 and argv[0] == "families":
        for fam in parse(argv[1]):
            print(fam.name)
    else:
        fail("usage: format FILE | jobs FILE BASE PROJECT... | value FILE SAMPLE [LABELS] | "
             "dump FILE | families FILE")


if __name__ == "__main__":
    main(sys.argv[1:])
