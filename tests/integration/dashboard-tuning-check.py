# SPDX-License-Identifier: Apache-2.0
"""dashboard-tuning-check.py CONFIG.json: the checks of t5130 (the dashboard's Tuning page) in
headless Chromium against a running trainyardd. CONFIG names the service (base), the project
and the tuning job the test started (running when this starts: its last trial waits for the
file `release` to appear), and the artifact directory. With "phase": "empty" it runs one
check before the study exists instead, creating the study from the JSON file `study`.

The page is opened with `?test-hooks` in its URL, so tuning.js exposes window.__trainyardTuning
({echarts, bench}): the plots are read back from ECharts itself (getInstanceByDom/getOption),
and bench() draws a 1,000-trial job built here through the page's own code, timing it.

Prints one line per check, "ok - NAME" or "not ok - NAME: why" (t5130 turns them into TAP),
then "# checks done"; exits 1 when a check failed. Every check also asserts that the browser's
console shows no error.
"""
import json
import math
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dashboard_lib import NARROW, WIDE, Browser, Checks, ServiceApi, expect  # noqa: E402
from dashboard_study import draw_study, load_study, synthetic_job  # noqa: E402

cfg = json.load(open(sys.argv[1]))
BASE, P, J, ART = cfg['base'], cfg['project'], cfg['job'], cfg['artifacts']
api = ServiceApi(BASE)
PAGE = f'?test-hooks#/projects/{P}/jobs/{J}/tuning'
FINAL = ('SUCCEEDED', 'FAILED', 'CANCELLED')
browser = None
state = {}


def check(name, fn):
    """Run check @name, then require a console without errors."""
    def body():
        fn()
        errs = browser.console_errors()
        expect(not errs, f'console errors: {errs}')
    checks.run(name, body)


def finished(job):
    """The job's trials that have an objective, by trial id."""
    trials = job.get('trainingOutput', {}).get('trials', [])
    return {t['trialId']: t for t in trials if 'objectiveValue' in t.get('finalMetric', {})}


def best_of(job):
    """The best trial by the goal (MAXIMIZE here), ties by the lower trial number."""
    fin = finished(job).values()
    return max(fin, key=lambda t: (t['finalMetric']['objectiveValue'], -int(t['trialId'])))


def chart_option(name):
    """ECharts' own option of the page's chart NAME (data-chart attribute), as JSON."""
    return browser.js('''
        const el = document.querySelector(`.tn [data-chart="${arguments[0]}"]`);
        const c = el && window.__trainyardTuning.echarts.getInstanceByDom(el);
        if (!c) return null;
        const o = c.getOption();
        return JSON.parse(JSON.stringify({series: o.series.map((s) => ({id: s.id, type: s.type,
          data: s.data})), xAxis: o.xAxis, parallelAxis: o.parallelAxis}));''', name)


def trial_points(option):
    """The data of a plot's trial series (all but the selection ring) of type scatter."""
    return [d for s in option['series'] if s['type'] == 'scatter' and s.get('id') != 'selected'
            for d in s['data']]


def open_page():
    browser.open(PAGE)
    browser.wait_css('.tn [data-chart="history"] canvas', 15)
    browser.wait('the page to be drawn', lambda: browser.js(
        'return document.querySelector(".tn").parentElement.dataset.renderMs'))


def follows_running_job():
    try:
        job = api.job(P, J)
        expect(job['state'] not in FINAL, f'the job is already {job["state"]}: too late to see it run')
        open_page()
        shown = int(browser.js('return document.querySelector(".tn").parentElement.dataset.finished'))
        print(f'# opened while {job["state"]} with {shown} finished trials shown', flush=True)
    finally:
        open(cfg['release'], 'w').close()  # the last trial may end now
    end = browser.wait('the job to end', lambda: (lambda j: j if j['state'] in FINAL else None)(
        api.job(P, J)), 40, 0.5)
    state['job'] = end
    expect(end['state'] == 'SUCCEEDED', f'the job ended {end["state"]}: {end.get("errorMessage")}')
    want = len(finished(end))
    expect(want == 5, f'{want} trials finished, not 5 (trial 4 fails)')
    # The page re-reads the job every 5 s: it catches up on its own, with no reload.
    browser.wait(f'the page to show {want} finished trials', lambda: browser.js(
        'const r = document.querySelector(".tn").parentElement;'
        'return r.dataset.finished === arguments[0] && r.dataset.trials === "6"', str(want)), 15)
    browser.wait_text('.tn-summary', 'SUCCEEDED', 10)
    expect(shown < want, f'the page showed {shown} finished trials at first, not fewer than {want}')


def one_point_per_trial():
    job = state['job']
    fin = finished(job)
    hist = chart_option('history')
    pts = trial_points(hist)
    got = sorted((int(x), y) for x, y in pts)
    want = sorted((int(i), t['finalMetric']['objectiveValue']) for i, t in fin.items())
    expect(len(pts) == len(fin), f'history: {len(pts)} points for {len(fin)} finished trials')
    expect(all(g[0] == w[0] and abs(g[1] - w[1]) < 1e-9 for g, w in zip(got, want)),
           f'history points {got} are not the trials {want}')
    line = next(s for s in hist['series'] if s.get('id') == 'best-so-far')['data']
    expect(abs(line[-1][1] - best_of(job)['finalMetric']['objectiveValue']) < 1e-9,
           f'best-so-far ends at {line[-1]}, not the best trial')
    params = job['trainingInput']['hyperparameters']['params']
    for i, p in enumerate(params):
        name = p['parameterName']
        opt = chart_option(f'slice-{i}')
        pts = trial_points(opt)
        expect(len(pts) == len(fin), f'slice {name}: {len(pts)} points for {len(fin)} trials')
        cats = opt['xAxis'][0].get('data')
        def xval(v, cats=cats):
            return cats[v] if cats and isinstance(v, int) else v
        got = {round(y, 9): str(xval(x)) for x, y in pts}
        want = {round(t['finalMetric']['objectiveValue'], 9): t['hyperparameters'][name]
                for t in fin.values()}
        same = got.keys() == want.keys() and all(
            got[k] == want[k] or math.isclose(float(got[k]), float(want[k])) for k in want)
        expect(same, f'slice {name}: points {got} are not the trials {want}')
        if p.get('scaleType') == 'UNIT_LOG_SCALE':
            expect(opt['xAxis'][0]['type'] == 'log', f'slice {name}: a {opt["xAxis"][0]["type"]} axis')
    par = chart_option('parallel')
    lines = next(s for s in par['series'] if s.get('id') != 'selected')['data']
    expect(len(lines) == len(fin), f'parallel: {len(lines)} lines for {len(fin)} trials')
    types = [a['type'] for a in par['parallelAxis']]
    expect(types == ['log', 'value', 'category', 'value'], f'parallel axes {types}')
    curves = sum(len(s['data']) for s in chart_option('curves')['series']
                 if s['type'] == 'lines' or s.get('id') == 'single')
    # a curve for each trial that reported: the finished ones, and a failed or cancelled one
    # whose reports allMetrics keeps (grey: it has no objective)
    reported = [t for t in job['trainingOutput']['trials'] if t.get('allMetrics') or t.get('finalMetric')]
    expect(curves == len(reported), f'intermediate values: {curves} curves for {len(reported)} trials')
    shown = browser.js('return [...document.querySelectorAll(".tn [data-chart]")]'
                       '.map((e) => [e.dataset.chart, e.dataset.points])')
    expect(all(n == str(len(reported) if chart == 'curves' else len(fin)) for chart, n in shown),
           f'data-points {shown}')


def best_first():
    job = state['job']
    best = best_of(job)
    rows = browser.css('.tn-table tbody tr')
    expect(len(rows) == 6, f'{len(rows)} rows for 6 trials')
    first = rows[0]
    expect(first.get_attribute('data-tid') == best['trialId'],
           f'first row is trial {first.get_attribute("data-tid")}, the best is {best["trialId"]}')
    expect('tn-best' in first.get_attribute('class') and 'best' in first.text,
           f'the best row is not marked: {first.get_attribute("class")!r} {first.text!r}')
    order = [r.get_attribute('data-tid') for r in rows]
    fin = finished(job)
    want = sorted(fin, key=lambda i: (-fin[i]['finalMetric']['objectiveValue'], int(i))) + ['4']
    expect(order == want, f'rows in the order {order}, not {want} (best first, then the failed)')
    expect('FAILED' in rows[-1].text, f'the last row is {rows[-1].text!r}, not the failed trial')


def sorting():
    from selenium.webdriver.common.keys import Keys
    browser.css('.tn-table th button[data-sort="trial"]')[0].click()
    ids = lambda: [r.get_attribute('data-tid') for r in browser.css('.tn-table tbody tr')]
    browser.wait('trial order', lambda: ids() == ['1', '2', '3', '4', '5', '6'])
    head = browser.css('.tn-table th button[data-sort="trial"]')[0]
    expect(head.find_element('xpath', '..').get_attribute('aria-sort') == 'ascending', 'aria-sort')
    # The header keeps the focus after a click: Enter sorts again, the other way.
    browser.driver.switch_to.active_element.send_keys(Keys.ENTER)
    browser.wait('trial order reversed', lambda: ids() == ['6', '5', '4', '3', '2', '1'])
    browser.css('.tn-table th button[data-sort="objective"]')[0].click()
    browser.wait('best first again', lambda: ids()[0] == best_of(state['job'])['trialId'])


def detail_from_row():
    job = state['job']
    fin = finished(job)
    worst = min(fin.values(), key=lambda t: t['finalMetric']['objectiveValue'])
    tid = worst['trialId']
    browser.css(f'.tn-table tr[data-tid="{tid}"] button.tn-trial')[0].click()
    detail = browser.wait_text('.tn-detail h3', f'Trial {tid}')
    expect(detail, 'no details')
    text = browser.text('.tn-detail')
    started = browser.js('return document.querySelector(".tn-detail dt + dd + dt + dd + dt + dd").textContent')
    expect(re.fullmatch(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d', started),
           f'the trial started "{started}": not as the other pages write times')
    for name, value in worst['hyperparameters'].items():
        expect(f'{name} {value}' in text.replace('\n', ' '), f'{name} = {value} not in {text!r}')
    opt = chart_option('trial')
    expect(opt and len(opt['series'][0]['data']) == len(worst['allMetrics']),
           f'the curve of trial {tid}: {opt and opt["series"][0]["data"]}')
    row = browser.css(f'.tn-table tr[data-tid="{tid}"]')[0]
    expect('tn-selected' in row.get_attribute('class'), 'the row is not marked selected')
    link = browser.css('.tn-detail a[href*="/logs?trial="]')[0]
    href = link.get_attribute('href')
    expect(href.endswith(f'#/projects/{P}/jobs/{J}/logs?trial={tid}'), f'logs link {href}')
    link.click()
    browser.wait_text('body', f'trial {tid} step 5', 10)
    expect(f'trial {tid} step' in browser.text('body'), 'the logs page shows the trial')


def detail_from_plot():
    from selenium.webdriver.common.action_chains import ActionChains
    open_page()  # from the logs page: the app draws the tuning page again, its header too
    browser.shot_full('tuning')
    job = state['job']
    best = best_of(job)
    x, y = int(best['trialId']), best['finalMetric']['objectiveValue']
    el = browser.css('.tn [data-chart="history"]')[0]
    px = browser.js('const c = window.__trainyardTuning.echarts.getInstanceByDom(arguments[0]);'
                    'return c.convertToPixel({xAxisIndex: 0, yAxisIndex: 0}, [arguments[1], arguments[2]]);',
                    el, x, y)
    size = el.size
    ActionChains(browser.driver).move_to_element_with_offset(
        el, int(px[0] - size['width'] / 2), int(px[1] - size['height'] / 2)).click().perform()
    browser.wait_text('.tn-detail h3', f'Trial {best["trialId"]}', 20)
    ring = next(s for s in chart_option('history')['series'] if s.get('id') == 'selected')['data']
    expect(ring and int(ring[0][0]) == x, f'the selected ring is at {ring}')
    where = browser.js('return location.hash')
    expect(where.endswith(f'/tuning?trial={x}'), f'the address does not name the trial: {where}')
    browser.shot_full('tuning-trial')


def narrow():
    # The window narrows under the page: the charts follow their boxes (ResizeObserver).
    browser.resize(*NARROW)
    right = 'return Math.max(...[...document.querySelectorAll(".tn canvas")].map((c) => c.getBoundingClientRect().right))'
    browser.wait('the charts to fit 390 px', lambda: browser.js(right) <= NARROW[0], 20)
    over = browser.body_overflow()
    expect(over == 0, f'the page is {over} px wider than 390 px')
    browser.shot_full('tuning', 4000)
    browser.resize(*WIDE)


def thousand_trials():
    if not browser.js('return !!window.__trainyardTuning'):
        open_page()
    job = synthetic_job(1000)
    fin = sum(1 for t in job['trainingOutput']['trials'] if 'finalMetric' in t)
    load_study(browser, job)
    r = draw_study(browser)
    expect('error' not in r, f'drawing: {r.get("error")}')
    expect(r['finished'] == str(fin) and r['history'] == str(fin),
           f'drew {r["history"]} history points for {fin} finished trials')
    # Timed by bench/dashboard (make bench), not here: this machine runs other tests meanwhile.
    print(f'# 1000-trial study drawn in {r["ms"]:.0f} ms (the first draw in a page, which also '
          'compiles the code it runs; bench/dashboard times it)', flush=True)
    browser.js('window.scrollTo(0, 0)')
    browser.shot_full('tuning-1000', 2600)


def first_job_appears():
    """On a service without jobs the Jobs page says so and refreshes: the first job (the
    study, created here) appears without a reload."""
    browser.open('#/jobs')
    browser.wait_text('main', 'No project has jobs yet')
    status, body = api.call('POST', f'/v1/projects/{P}/jobs', json.load(open(cfg['study'])))
    expect(status == 200, f'creating the study: {status} {body}')
    browser.wait('the study to be listed without a reload', lambda: browser.js(
        "return Array.from(document.querySelectorAll('table.jobs td.id a'),"
        " a => a.textContent.trim())") == [J], timeout=15)


checks = Checks(lambda: browser)
try:
    try:
        browser = Browser(BASE, ART, WIDE)
    except Exception:
        open(cfg['release'], 'w').close()  # the study ends even when the browser cannot start
        raise
    if cfg.get('phase') == 'empty':  # before the study exists: t5130's first checks
        check('the empty Jobs page lists the first job without a reload', first_job_appears)
        print('# checks done', flush=True)
        sys.exit(1 if checks.failed() else 0)
    check('the page follows the running study to its end', follows_running_job)
    if 'job' in state:
        check('one point per finished trial in the history, slice and other plots', one_point_per_trial)
        check('the table lists the best trial first, highlighted', best_first)
        check('sorting by a header, by click and keyboard', sorting)
        check('a trial row shows its parameters, curve and logs link', detail_from_row)
        check('a point in a plot selects its trial', detail_from_plot)
        check('readable at 390 px', narrow)
    check('a study of 1,000 trials is drawn, one point per finished trial', thousand_trials)
finally:
    if browser:
        browser.quit()
print('# checks done', flush=True)
sys.exit(1 if checks.failed() else 0)
