#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""dashboard.py: what the web dashboard costs a user, in headless Chromium against a real
trainyardd, each figure beside its baseline or goal (nothing passes or fails on time: the
project's rule; the figures are printed).

  first load   the bytes of the page and of what it loads before it draws (index.html, its
               style sheet and scripts, as served: gzip), against the issue's 300 KB budget;
               and the Tuning page's chunk (loaded when that page opens).
  jobs page    a project of JOBS (10,000) queued jobs (the service runs none:
               --max-running-jobs 0): the time from opening the Jobs page (100 a page) to its
               100 rows drawn, and to the next page's, against the API call it makes
               (jobs.list, pageSize=100, timed from Python on the same machine).
  tuning page  a synthetic study of 1,000 trials drawn by the page's own code (table, every
               plot, the layout; tests/integration/dashboard_study.py), ROUNDS times: median
               and best against the issue's goal of 1 s.

Usage: dashboard.py BUILD_DIR [--jobs N] [--rounds N]. Needs chromium, chromium-driver and
python3-selenium (scripts/install-deps.sh).
"""
import argparse
import concurrent.futures
import gzip
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.dont_write_bytecode = True
from dashboard_lib import WIDE, Browser, missing_tools  # noqa: E402
from dashboard_study import draw_study, load_study, synthetic_job  # noqa: E402

BUDGET = 300 * 1024


def start_service(build, state):
    log = open(os.path.join(state, 'trainyardd.log'), 'w')
    p = subprocess.Popen([os.path.join(build, 'bin', 'trainyardd'), '--listen', '127.0.0.1:0',
                          '--state-dir', os.path.join(state, 'svc'), '--max-running-jobs', '0',
                          '--runtime', 'process'] + (['--allow-root-jobs'] if os.getuid() == 0 else []),
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        text = open(log.name).read()
        m = re.search(r'listening on http://127\.0\.0\.1:(\d+)', text)
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            sys.exit('trainyardd did not start:\n' + text)
        time.sleep(0.05)
    sys.exit('trainyardd did not start in 10 s')


def call(port, method, path, body=None, gz=False):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    headers = {'Accept-Encoding': 'gzip'} if gz else {}
    if body is not None:
        headers['Content-Type'] = 'application/json'
    c.request(method, path, json.dumps(body) if body is not None else None, headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def first_load(port):
    """Bytes as served of the page and of what it loads at once; the tuning chunk's."""
    st, page = call(port, 'GET', '/', gz=True)
    html = gzip.decompress(page) if page[:2] == b'\x1f\x8b' else page
    names = re.findall(rb'(?:src|href)="/static/([A-Za-z0-9._-]+)"', html)
    total, rows = len(page), [('index.html', len(page))]
    for n in dict.fromkeys(names):
        st, data = call(port, 'GET', '/static/' + n.decode(), gz=True)
        if st != 200:  # a name in a comment of the page
            continue
        total += len(data)
        rows.append((n.decode(), len(data)))
    app = next((n for n, _ in rows if n.startswith('app-') and n.endswith('.js')), None)
    tuning = 0
    if app:
        st, data = call(port, 'GET', '/static/' + app)
        js = gzip.decompress(data) if data[:2] == b'\x1f\x8b' else data
        for n in set(re.findall(rb'tuning-[A-Z0-9]+\.js', js)):
            tuning += len(call(port, 'GET', '/static/' + n.decode(), gz=True)[1])
    return total, rows, tuning


def make_jobs(port, n):
    body = {'trainingInput': {'scaleTier': 'BASIC', 'region': 'local', 'masterConfig': {
        'imageUri': 'example.com/x:1', 'containerCommand': ['true']}}}

    def one(i):
        b = dict(body, jobId='job_%05d' % i, labels={'team': 'vision' if i % 3 else 'speech'})
        st, data = call(port, 'POST', '/v1/projects/big/jobs', b)
        if st != 200:
            raise RuntimeError('create job_%05d: %d %s' % (i, st, data[:200]))

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(one, range(n)))


def timed_list(port, token=None):
    path = '/v1/projects/big/jobs?pageSize=100' + ('&pageToken=' + token if token else '')
    t0 = time.perf_counter()
    st, data = call(port, 'GET', path)
    return (time.perf_counter() - t0) * 1000, json.loads(data).get('nextPageToken')


# Timed inside the page (performance.now, polled each animation frame), so that WebDriver's
# own round trips are not counted: from the navigation (a hash change, as a link makes) or the
# click to the frame in which the 100 new rows are in the document.
IN_PAGE = '''
    const [what, done] = arguments;
    const rows = () => document.querySelectorAll('tr[data-job]');
    const top = rows().length ? rows()[0].dataset.job : '';
    const t0 = performance.now();
    if (what === 'next')
      [...document.querySelectorAll('button')].find((x) => x.textContent.includes('Next')).click();
    else
      location.hash = what;
    (function poll() {
      const r = rows();
      if (r.length === 100 && r[0].dataset.job !== top) done(performance.now() - t0);
      else if (performance.now() - t0 > 60000) done(-1);
      else requestAnimationFrame(poll);
    })();'''


def jobs_page(b, port, rounds):
    """ms to the Jobs page's first 100 rows, and to the next page's; and the API's."""
    page, nxt, api, api_next = [], [], [], []
    b.open('#/')
    b.driver.set_script_timeout(90)
    for _ in range(rounds):
        b.go('#/no-such-page')  # away (the 'No such page' page), so the next visit draws anew
        page.append(b.driver.execute_async_script(IN_PAGE, '#/jobs?project=big&pageSize=100'))
        nxt.append(b.driver.execute_async_script(IN_PAGE, 'next'))
        ms, token = timed_list(port)
        api.append(ms)
        api_next.append(timed_list(port, token)[0])
    if min(page + nxt) < 0:
        sys.exit('bench/dashboard: the jobs page did not draw 100 rows within 60 s')
    return page, nxt, api, api_next


def add(path, value, unit, floor=None, goal=None):
    """One result line of make bench's table (bench/report.py; nothing without
    $TY_BENCH_RESULTS)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'bench_report', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'report.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.add('dashboard', path, value, unit, floor, goal)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build')
    ap.add_argument('--jobs', type=int, default=10000)
    ap.add_argument('--rounds', type=int, default=5)
    a = ap.parse_args()
    why = missing_tools()
    if why:
        print('bench/dashboard: skipped (missing: %s)' % why)
        return
    state = tempfile.mkdtemp(prefix='trainyard-bench-dashboard.')
    svc, port = start_service(os.path.abspath(a.build), state)
    b = None
    try:
        total, rows, tuning = first_load(port)
        print('bench/dashboard: first load %.1f KB as served (%s), budget %d KB: %.2fx of the '
              'budget; the Tuning page adds %.1f KB when it opens'
              % (total / 1024, ', '.join('%s %.1f KB' % (n, s / 1024) for n, s in rows),
                 BUDGET // 1024, total / BUDGET, tuning / 1024))
        add('first load, bytes as served', total / 1024, 'KB', goal='<= %d KB' % (BUDGET // 1024))
        t0 = time.perf_counter()
        make_jobs(port, a.jobs)
        print('bench/dashboard: %d queued jobs created in %.1f s' % (a.jobs, time.perf_counter() - t0))
        b = Browser('http://127.0.0.1:%d' % port, state, WIDE)
        page, nxt, api, api_next = jobs_page(b, port, a.rounds)
        med = statistics.median
        print('bench/dashboard: jobs page of %d jobs, 100 rows drawn after a link to it: median '
              '%.0f ms vs the API call alone %.0f ms (%.1fx); next page %.0f ms vs %.0f ms (%.1fx)'
              % (a.jobs, med(page), med(api), med(page) / med(api), med(nxt), med(api_next),
                 med(nxt) / med(api_next)))
        add('jobs page of %d jobs drawn; floor: its jobs.list call' % a.jobs, med(page), 'ms',
            med(api))
        add('next jobs page drawn; floor: its jobs.list call', med(nxt), 'ms', med(api_next))
        # The Tuning page's code, with its hook for tests (any job's Tuning tab loads it).
        b.open('?test-hooks#/projects/big/jobs/job_00000/tuning')
        b.wait('the tuning hook', lambda: b.js('return !!window.__trainyardTuning'), 30)
        job = synthetic_job(1000)
        load_study(b, job)
        draws = []
        for _ in range(a.rounds):
            r = draw_study(b)
            if 'error' in r:
                sys.exit('bench/dashboard: drawing the study failed: %s' % r['error'])
            draws.append(r['ms'])
        print('bench/dashboard: 1,000-trial study drawn: median %.0f ms, best %.0f ms (first %.0f ms, '
              'compiling included) vs the goal 1000 ms: %.2fx; goal %s'
              % (med(draws[1:]), min(draws), draws[0], med(draws[1:]) / 1000,
                 'met' if med(draws[1:]) < 1000 else 'NOT met'))
        add('1,000-trial study drawn, median', med(draws[1:]), 'ms', goal='< 1000 ms')
    finally:
        if b:
            b.quit()
        svc.terminate()
        svc.wait()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == '__main__':
    main()
