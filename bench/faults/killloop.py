#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""killloop.py: the kill -9 loop of trainyardd under create load, and its checker.

Starts trainyardd on a fixed loopback port, creates jobs from THREADS threads through
jobs.create while the daemon is killed with SIGKILL at random moments and started again, CYCLES
times; then lets every job end and checks, from outside, what a user is promised:

  lost        a create answered 200 (or 409 on a retry after an unanswered try) whose job is
              not in jobs.list
  duplicated  a job listed twice, or a job in the store that no request asked for
  run twice   a job whose program ran more times than its attempts (attemptStatus.attempt: a
              job retried after an internal error runs once per attempt, docs/lifecycle.md),
              or ran again after a run of it had ended (no supervisor is killed here, so no
              rule allows that)
  wrong       a job whose final state is not what its program decided: SUCCEEDED for exit 0,
              FAILED with "non-zero status of 1" for exit 1 (an internal-error FAILED counts)
  not ended   a job still not final after the settle time
  left behind a process of the run (a replica, its children, a supervisor) alive at the end

Each job's program appends a marker line ("start ID PID") to one file, sleeps (a few jobs
sleep long enough to run across kills), appends "end ID PID" and exits 0 or 1. Every
LOCK_EVERY cycles the store's write lock is held for LOCK_SECONDS (longer than the store's
busy wait: a stalled disk, a backup) while jobs end, and the daemon is killed right after. Prints the figures
and one RESULT line; exit status 1 when a count is not 0, 2 when the run itself failed.
Usage: killloop.py BUILD_DIR SCRATCH_DIR (options: --help).
"""
import argparse
import http.client
import json
import os
import random
import signal
import socket
import sqlite3
import sys
import threading
import time
import urllib.parse

PROJECT = "faults"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Api:
    def __init__(self, port, timeout=10.0):
        self.port = port
        self.timeout = timeout

    def call(self, method, path, body=None):
        """(status, parsed body or text); raises OSError/HTTPException when no answer."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers=headers)
            r = c.getresponse()
            data = r.read()
            try:
                return r.status, json.loads(data)
            except ValueError:
                return r.status, data.decode(errors="replace")
        finally:
            c.close()


class Daemon:
    def __init__(self, args, port, log):
        self.args, self.port, self.log = args, port, log
        self.pid = 0
        self.starts = 0

    def start(self):
        argv = [os.path.join(self.args.build, "bin", "trainyardd"), "--listen",
                "127.0.0.1:%d" % self.port, "--state-dir", self.args.state, "--grace-period", "1"]
        if os.geteuid() == 0:  # the jobs run as root, as the bench's replicas write its files
            argv += ["--allow-root-jobs"]
        if self.args.max_running:
            argv += ["--max-running-jobs", str(self.args.max_running)]
        fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.pid = os.posix_spawn(argv[0], argv, os.environ,
                                  file_actions=[(os.POSIX_SPAWN_DUP2, fd, 1),
                                                (os.POSIX_SPAWN_DUP2, fd, 2)])
        os.close(fd)
        self.starts += 1

    def ready(self, api, limit=30.0):
        """Wait until /healthz answers; False when the daemon died or the limit passed."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            if os.waitpid(self.pid, os.WNOHANG)[0] == self.pid:
                self.pid = 0
                return False
            try:
                if api.call("GET", "/healthz")[0] == 200:
                    return True
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.02)
        return False

    def kill(self, sig=signal.SIGKILL):
        if self.pid:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = 0


class Load:
    """THREADS threads creating jobs at RATE creates a second in all, until closed."""

    def __init__(self, args, api):
        self.args, self.api = args, api
        self.lock = threading.Lock()
        self.next = 0
        self.closed = threading.Event()
        self.t0 = time.monotonic()
        self.acked = {}  # job id -> "200" or "409"
        self.kinds = {}  # job id -> "ok", "fail", "slow"
        self.tries = 0
        self.unanswered = 0
        self.refused = 0  # 5xx answers (tried again)
        self.unexpected = []  # (job id, status, body) of answers other than 200/409/5xx
        self.threads = [threading.Thread(target=self.run, daemon=True)
                        for _ in range(args.threads)]

    def close(self):
        self.closed.set()

    def take(self):
        """The next request's number, when the rate allows it; None once closed."""
        while not self.closed.is_set():
            with self.lock:
                due = self.t0 + self.next / self.args.rate
                if due <= time.monotonic():
                    self.next += 1
                    return self.next
            self.closed.wait(min(0.05, max(0.0, due - time.monotonic())))
        return None

    def body(self, n, rng):
        jid = "k%d" % n
        r = rng.random()
        kind = "fail" if r < 0.2 else "slow" if r < 0.2 + self.args.slow else "ok"
        nap = "%.2f" % (rng.uniform(1.0, 3.0) if kind == "slow" else rng.uniform(0, 0.2))
        code = 1 if kind == "fail" else 0
        # FAULTS_RUN marks every process of the run (sleep inherits it): the left-behind check.
        script = ("FAULTS_RUN=%s; export FAULTS_RUN; M=%s; printf 'start %%s %%s\\n' "
                  "\"$CLOUD_ML_JOB_ID\" $$ >>$M; sleep %s; printf 'end %%s %%s\\n' "
                  "\"$CLOUD_ML_JOB_ID\" $$ >>$M; exit %d"
                  % (self.args.tag, self.args.markers, nap, code))
        ti = {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "region": "local",
              "masterConfig": {"imageUri": "example.com/faults:1",
                               "containerCommand": ["sh", "-c", script]}}
        return jid, kind, {"jobId": jid, "trainingInput": ti, "labels": {"req": str(n)}}

    def run(self):
        rng = random.Random(self.args.seed * 7919 + threading.get_ident())
        while True:
            n = self.take()
            if n is None:
                return
            jid, kind, body = self.body(n, rng)
            with self.lock:
                self.kinds[jid] = kind
            retried = False
            while True:
                with self.lock:
                    self.tries += 1
                try:
                    st, ans = self.api.call("POST", "/v1/projects/%s/jobs" % PROJECT, body)
                except (OSError, http.client.HTTPException):
                    with self.lock:
                        self.unanswered += 1
                    retried = True
                    time.sleep(0.05)
                    continue
                if st == 200:
                    with self.lock:
                        self.acked[jid] = "200"
                    break
                if st == 409 and retried:
                    with self.lock:  # an earlier try was stored but its answer lost
                        self.acked[jid] = "409"
                    break
                if st >= 500:  # refused for now (the store locked, say): the client tries again
                    with self.lock:
                        self.refused += 1
                    retried = True
                    time.sleep(0.2)
                    continue
                with self.lock:
                    self.unexpected.append((jid, st, str(ans)[:200]))
                break


def list_all(api):
    jobs, token = [], None
    while True:
        q = {"pageSize": "100"}
        if token:
            q["pageToken"] = token
        st, ans = api.call("GET", "/v1/projects/%s/jobs?%s" % (PROJECT, urllib.parse.urlencode(q)))
        if st != 200:
            raise RuntimeError("jobs.list answered %d: %s" % (st, ans))
        jobs += ans.get("jobs", [])
        token = ans.get("nextPageToken")
        if not token:
            return jobs


FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


def processes_of_run(tag, state_dir):
    """Live processes carrying FAULTS_RUN=tag, or supervisors of our state directory."""
    found = []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if ("FAULTS_RUN=%s" % tag).encode() in env or \
                ("supervise-job %s " % state_dir) in cmd + " ":
            found.append("%s %s" % (d, cmd[:120]))
    return found


def hold_store_lock(db, seconds):
    """Hold the store's write lock (BEGIN IMMEDIATE) for @seconds, then let go."""
    con = sqlite3.connect(db, timeout=30, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        time.sleep(seconds)
        con.execute("ROLLBACK")
    finally:
        con.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("build")
    p.add_argument("scratch")
    p.add_argument("--cycles", type=int, default=200)
    p.add_argument("--rate", type=float, default=12, help="creates a second (all threads)")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--up-min", type=float, default=0.05, help="shortest life of a daemon (s)")
    p.add_argument("--up-max", type=float, default=2.0, help="longest life of a daemon (s)")
    p.add_argument("--slow", type=float, default=0.1,
                   help="share of the jobs that run 1-3 s (the rest: 0-0.2 s; a fifth fail)")
    p.add_argument("--max-running", type=int, default=0, help="--max-running-jobs (0: none)")
    p.add_argument("--lock-every", type=int, default=10,
                   help="every Nth cycle holds the store's write lock (0: never)")
    p.add_argument("--lock-seconds", type=float, default=12,
                   help="for this long: longer than the store's 10 s busy wait")
    p.add_argument("--settle", type=float, default=300, help="time for the jobs to end (s)")
    p.add_argument("--seed", type=int, default=int(time.time()))
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    args.scratch = os.path.abspath(args.scratch)
    args.state = os.path.join(args.scratch, "state")
    args.markers = os.path.join(args.scratch, "markers")
    args.tag = "%d-%d" % (os.getpid(), args.seed)
    os.makedirs(args.scratch, exist_ok=True)
    open(args.markers, "a").close()
    rng = random.Random(args.seed)
    port = free_port()
    api = Api(port)
    log = os.path.join(args.scratch, "daemon.log")
    daemon = Daemon(args, port, log)
    t0 = time.monotonic()
    print("faults: %d cycles, %g creates/s from %d threads, seed %d, port %d, scratch %s"
          % (args.cycles, args.rate, args.threads, args.seed, port, args.scratch), flush=True)

    daemon.start()
    if not daemon.ready(api):
        print("faults: trainyardd did not start (see %s)" % log, file=sys.stderr)
        return 2
    load = Load(args, api)
    for t in load.threads:
        t.start()
    early = locks = 0
    for c in range(args.cycles):
        if args.lock_every and c % args.lock_every == args.lock_every // 2:
            # A store that refuses writes for longer than its busy wait (a stalled disk, a
            # backup holding the lock): jobs end meanwhile, their supervisors must not lose
            # their outcome; the daemon is killed right after.
            time.sleep(rng.uniform(args.up_min, args.up_max))
            hold_store_lock(os.path.join(args.state, "trainyard.db"), args.lock_seconds)
            locks += 1
        # A random moment: often while creates and job ends are in flight, sometimes during
        # the next daemon's start-up and recovery (up_min is short).
        time.sleep(rng.uniform(args.up_min, args.up_max))
        daemon.kill()
        time.sleep(rng.uniform(0, 0.2))
        daemon.start()
        if rng.random() < 0.15:  # killed again before it answers (in recovery)
            time.sleep(rng.uniform(0, 0.1))
            daemon.kill()
            early += 1
            daemon.start()
        if not daemon.ready(api):
            print("faults: trainyardd did not come back in cycle %d (see %s)" % (c + 1, log),
                  file=sys.stderr)
            return 2
        if (c + 1) % 20 == 0:
            print("faults: cycle %d/%d, %d jobs acknowledged, %.0fs"
                  % (c + 1, args.cycles, len(load.acked), time.monotonic() - t0), flush=True)
    load.close()  # the creates in flight get their answer from the last daemon
    for t in load.threads:
        t.join()
    t_load = time.monotonic() - t0

    # Every acknowledged job ends; the last daemon keeps running.
    end = time.monotonic() + args.settle
    while True:
        listed = list_all(api)
        pending = [j for j in listed if j.get("state") not in FINAL]
        if not pending or time.monotonic() > end:
            break
        time.sleep(1)
    time.sleep(2)  # supervisors exit right after the final state
    left_running = processes_of_run(args.tag, args.state)
    daemon.kill(signal.SIGTERM)
    left_after_stop = processes_of_run(args.tag, args.state)

    # Runs of each job's program: "start ID PID" and "end ID PID" lines, in order.
    runs, reran = {}, set()
    with open(args.markers) as f:
        for line in f:
            w = line.split()
            if len(w) != 3:
                continue
            r = runs.setdefault(w[1], {"start": 0, "end": 0})
            if w[0] == "start" and r["end"] > 0:
                reran.add(w[1])  # started again after a run had ended
            r[w[0]] = r.get(w[0], 0) + 1
    seen, dup, unknown, by_id = set(), [], [], {}
    for j in listed:
        jid = j["jobId"]
        if jid in seen:
            dup.append(jid)
        seen.add(jid)
        by_id[jid] = j
        if jid not in load.kinds or j.get("labels", {}).get("req") != jid[1:]:
            unknown.append(jid)
    lost = sorted(set(load.acked) - seen)
    run_twice, wrong, not_ended, retried, states = [], [], [], 0, {}
    for jid, j in by_id.items():
        st = j.get("state")
        states[st] = states.get(st, 0) + 1
        attempt = int(j.get("attemptStatus", {}).get("attempt", 1))
        retried += 1 if attempt > 1 else 0
        n = runs.get(jid, {}).get("start", 0)
        # Nothing here kills a supervisor: a run after one that ended is never by the rules.
        if n > attempt or jid in reran:
            run_twice.append("%s: %d runs, %d attempt(s)%s" % (
                jid, n, attempt, ", one after a run had ended" if jid in reran else ""))
        if st not in FINAL:
            not_ended.append("%s: %s" % (jid, st))
            continue
        kind = load.kinds.get(jid)
        err = j.get("errorMessage", "")
        ok = (st == "SUCCEEDED") if kind in ("ok", "slow") else \
            (st == "FAILED" and "non-zero status of 1" in err)
        if kind and not ok:
            wrong.append("%s (%s): %s %s" % (jid, kind, st, err))
    dup += unknown
    left = sorted(set(left_running + left_after_stop))
    elapsed = time.monotonic() - t0
    counts = dict(lost=len(lost), duplicated=len(dup), run_twice=len(run_twice),
                  wrong=len(wrong), not_ended=len(not_ended), left_behind=len(left),
                  unexpected_answers=len(load.unexpected))
    print("faults: %d cycles (%d daemon starts, %d kills during start-up), %.0fs of load, "
          "%.0fs in all" % (args.cycles, daemon.starts, early, t_load, elapsed))
    print("faults: %d jobs acknowledged (%d after a retry of an unanswered create), %d create "
          "tries, %d unanswered (daemon down or killed), %d refused with 5xx (tried again)"
          % (len(load.acked), sum(1 for v in load.acked.values() if v == "409"), load.tries,
             load.unanswered, load.refused))
    print("faults: final states %s; %d job(s) ran as more than one attempt; %d runs; the store "
          "was locked %d time(s) for %gs"
          % (json.dumps(states, sort_keys=True), retried,
             sum(r["start"] for r in runs.values()), locks, args.lock_seconds))
    for name, items in (("lost", lost), ("duplicated", dup), ("run twice", run_twice),
                        ("wrong final state", wrong), ("not ended", not_ended),
                        ("left behind", left), ("unexpected answer", load.unexpected)):
        for it in items[:10]:
            print("faults:   %s: %s" % (name, it))
    print("RESULT cycles=%d jobs=%d %s seconds=%.0f"
          % (args.cycles, len(load.acked), " ".join("%s=%d" % kv for kv in counts.items()),
             elapsed))
    return 1 if any(counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
