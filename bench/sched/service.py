#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""service.py: jobs admitted per second by trainyardd when capacity frees.

Runs trainyardd (process runtime) twice, interleaved ROUNDS times, on the same load:

  gpus      --capacity gpus=NVIDIA_TESLA_T4:4 with stand-in devices; every job needs one
            T4 (acceleratorConfig on n1-standard-4), so at most 4 run at once and each
            admission locks a device and hands it to the job's supervisor.
  baseline  --max-running-jobs=4 and jobs without GPUs: the same 4 at once, counted as
            running-job slots only (no device, no lock, no grant to pass).

Each round queues DEEP jobs of a project limited to 4 vCPUs, the first of which runs (it
sleeps) while the others wait behind the limit, so every pass walks past them; then JOBS
jobs whose program is `true` (the baseline's --max-running-jobs is 5: the 4, and the deep
queue's running job; the jobs are created faster than they end). The admission rate is the number of jobs started divided by the time between the
first and the last job's startTime. Prints both rates and their ratio per round and the
medians; nothing passes or fails on time (machines are noisy: the project's rule).
Usage: service.py BUILD_DIR [--jobs N] [--deep N] [--rounds N].
"""
import argparse
import importlib.util
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime

PROJECT = "bench"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def call(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        data = json.dumps(body) if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        text = r.read().decode()
        return r.status, json.loads(text) if text else {}
    finally:
        c.close()


def job(job_id, gpu, command=("true",)):
    master = {"imageUri": "example.com/bench:1", "containerCommand": list(command)}
    if gpu:
        master["acceleratorConfig"] = {"type": "NVIDIA_TESLA_T4", "count": "1"}
    return {
        "jobId": job_id,
        "trainingInput": {
            "scaleTier": "CUSTOM",
            "masterType": "n1-standard-4",
            "masterConfig": master,
        },
    }


def epoch(ts):
    return datetime.strptime(ts[:26].rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def one_run(build, scratch, kind, njobs, deep):
    state = os.path.join(scratch, kind)
    os.makedirs(state)
    port = free_port()
    args = [
        os.path.join(build, "bin", "trainyardd"),
        "--listen=127.0.0.1:%d" % port,
        "--state-dir=" + state,
        "--project-limit=deep:cpus=4",
    ]
    if kind == "gpus":
        args += ["--capacity=gpus=NVIDIA_TESLA_T4:4", "--gpu-devices=stand-in"]
    else:
        args += ["--max-running-jobs=5"]  # 4, and the deep queue's holder
    if os.geteuid() == 0:
        args.append("--allow-root-jobs")
    log = open(os.path.join(scratch, kind + ".log"), "w")
    d = subprocess.Popen(args, stdout=log, stderr=log)
    try:
        for _ in range(200):
            try:
                if call(port, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        # The deep queue: its first job holds its project's room (4 vCPUs) while the others
        # wait behind the project's limit, walked by every pass.
        for i in range(deep):
            cmd = ("sleep", "600") if i == 0 else ("true",)
            st, b = call(port, "POST", "/v1/projects/deep/jobs", job("deep_%d" % i, False, cmd))
            if st != 200:
                raise RuntimeError("create deep_%d: %d %s" % (i, st, b))
        for i in range(njobs):
            st, b = call(port, "POST", "/v1/projects/%s/jobs" % PROJECT, job("j_%d" % i, kind == "gpus"))
            if st != 200:
                raise RuntimeError("create j_%d: %d %s" % (i, st, b))
        deadline = time.time() + 600
        starts = []
        while time.time() < deadline:
            jobs, token = [], ""
            while True:
                st, b = call(port, "GET", "/v1/projects/%s/jobs?pageSize=100%s" % (PROJECT, token))
                jobs += b.get("jobs", [])
                if not b.get("nextPageToken"):
                    break
                token = "&pageToken=" + b["nextPageToken"]
            done = [j for j in jobs if j["state"] in ("SUCCEEDED", "FAILED", "CANCELLED")]
            if len(done) == njobs:
                bad = [j["jobId"] for j in done if j["state"] != "SUCCEEDED"]
                if bad:
                    raise RuntimeError("jobs did not succeed: %s" % bad[:5])
                starts = sorted(epoch(j["startTime"]) for j in jobs)
                break
            time.sleep(0.5)
        if not starts:
            raise RuntimeError("the jobs did not end in 600 s")
        span = starts[-1] - starts[0]
        return (len(starts) - 1) / span if span > 0 else float("inf")
    finally:
        try:
            call(port, "POST", "/v1/projects/deep/jobs/deep_0:cancel", {})
            for _ in range(300):
                if call(port, "GET", "/v1/projects/deep/jobs/deep_0")[1].get("state") == "CANCELLED":
                    break
                time.sleep(0.1)
        except OSError:
            pass
        d.send_signal(signal.SIGTERM)
        d.wait()
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--deep", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    rates = {"gpus": [], "baseline": []}
    print("bench/sched service: %d jobs of `true`, 4 at once, %d jobs queued that cannot start, %d rounds"
          % (a.jobs, a.deep, a.rounds))
    print("%-6s %22s %22s %8s" % ("round", "gpus (admitted/s)", "baseline (admitted/s)", "ratio"))
    for r in range(a.rounds):
        got = {}
        for kind in (("gpus", "baseline") if r % 2 == 0 else ("baseline", "gpus")):
            scratch = tempfile.mkdtemp(prefix="trainyard-bench-sched.")
            try:
                got[kind] = one_run(build, scratch, kind, a.jobs, a.deep)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            rates[kind].append(got[kind])
        print("%-6d %22.1f %22.1f %7.2fx" % (r + 1, got["gpus"], got["baseline"], got["baseline"] / got["gpus"]))
    g, b = statistics.median(rates["gpus"]), statistics.median(rates["baseline"])
    print("%-6s %22.1f %22.1f %7.2fx" % ("median", g, b, b / g))
    # make bench's table (bench/report.py; nothing without $TY_BENCH_RESULTS): no goal stated
    spec = importlib.util.spec_from_file_location(
        "bench_report", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "report.py"))
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    report.add("sched service", "jobs admitted/s as capacity frees, GPU grants; floor: slots only",
               g, "1/s", b)
    return 0


if __name__ == "__main__":
    sys.exit(main())
