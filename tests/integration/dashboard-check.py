# SPDX-License-Identifier: Apache-2.0
"""dashboard-check.py CONFIG.json: the checks of t5120 in headless Chromium against a running
trainyardd. CONFIG names the service (base), the tokens (t1 grants p1, t2 grants p2), the jobs
the test made (ok, fail, run, queue in p1; other in p2) and the artifact directory.

Prints one line per check, "ok - NAME" or "not ok - NAME: why" (t5120 turns them into TAP),
then "# checks done"; exits 1 when a check failed. Every check also asserts that the browser's
console shows no error other than the answers it provokes on purpose (a 401, a 400, a 409).
"""
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dashboard_lib import NARROW, WIDE, Browser, Checks, ServiceApi, expect  # noqa: E402
import dashboard_more as more  # noqa: E402

cfg = json.load(open(sys.argv[1]))
BASE, T1, T2, ART = cfg['base'], cfg['t1'], cfg['t2'], cfg['artifacts']
J = cfg['jobs']
api1 = ServiceApi(BASE, T1)
browser = None


def keys():
    from selenium.webdriver.common.keys import Keys
    return Keys


def check(name, fn, allow=()):
    """Run check @name, then require a console without unexpected errors."""
    def body():
        try:
            fn()
        except Exception as e:
            # What it left in the console is this check's (shown), not the next one's.
            errs = browser.console_errors()
            if errs:
                raise AssertionError(f'{e} (console: {errs})') from e
            raise
        errs = browser.console_errors(allow)
        expect(not errs, f'console errors: {errs}')
    checks.run(name, body)


def job_ids_shown():
    # One script reads them all: the page redraws its table when it refreshes, and elements
    # found before a redraw are stale by the time each one's text is read.
    return browser.js("return Array.from(document.querySelectorAll('table.jobs td.id a'),"
                      " a => a.textContent.trim())")


# --- sign-in -----------------------------------------------------------------------------

def wrong_token():
    status, body = ServiceApi(BASE, 'wrong-token-0123456789abcdef').call('GET', '/v1/projects')
    expect(status == 401, f'GET /v1/projects with a wrong token: {status}, not 401')
    msg = body['error']['message']
    browser.open('#/jobs')
    browser.sign_in('wrong-token-0123456789abcdef')
    browser.wait_text('.signin-status .msg-error', msg)
    expect(not browser.css('table.jobs'), 'the jobs table is shown after a wrong token')
    expect(browser.js("return sessionStorage.getItem('trainyard.token')") is None,
           'the refused token was kept in sessionStorage')
    browser.shot('signin-refused')


def sign_in():
    browser.sign_in(T1)
    browser.wait_css('table.jobs td.id a')
    expect(browser.js("return sessionStorage.getItem('trainyard.token')") == T1,
           'the token is not in sessionStorage')


def jobs_of_p1_only():
    browser.wait(f'the jobs of p1 ({J["ok"]}, {J["fail"]}, {J["run"]}, {J["queue"]})',
                 lambda: {J['ok'], J['fail'], J['run'], J['queue']} <= set(job_ids_shown()))
    expect(J['other'] not in job_ids_shown(), f'p2\'s job {J["other"]} is listed with p1\'s token')
    opts = [o.get_attribute('value') for o in browser.css('#project option')]
    expect(opts == ['p1'], f'project selector offers {opts}, expected only p1')
    expect('project=p1' in browser.driver.current_url, 'the project is not in the URL')
    # Newest first, as the API lists them.
    listed = [j['jobId'] for j in api1.get('/v1/projects/p1/jobs')['jobs']]
    expect(job_ids_shown() == listed, f'order {job_ids_shown()} is not the API\'s {listed}')
    time.sleep(0.3)
    browser.shot('jobs')


def queued_position():
    job = api1.job('p1', J['queue'])
    expect(job['state'] == 'QUEUED', f'{J["queue"]} is {job["state"]}, not QUEUED')
    # The cell is read afresh at each try: the list redraws its rows as it refreshes.
    cell = f'tr[data-job="{J["queue"]}"] td.queue'
    want = (f'#{job["jobPosition"]}', job['stateReason'])
    browser.wait(f'the queue cell to show {want}', lambda: all(w in browser.text(cell) for w in want))


def rows_kept_on_refresh():
    """While a job runs the list refreshes every 5 s and its duration changes: the rows are
    updated in place, not drawn again, so a text selected in another row stays selected."""
    browser.open('#/jobs?project=p1')
    duration = f'tr[data-job="{J["run"]}"] td[data-label="Duration"]'
    browser.wait_css(duration)
    before = browser.js("""
        document.querySelectorAll('table.jobs tbody tr').forEach((r) => { r.tyKept = true; });
        const range = document.createRange();
        range.selectNodeContents(document.querySelector(`tr[data-job="${arguments[0]}"] td.id a`));
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        return document.querySelector(arguments[1]).textContent;""", J['ok'], duration)
    browser.wait('a refresh showing the running job\'s new duration',
                 lambda: browser.text(duration) not in ('', before), timeout=15)
    replaced = browser.js("return Array.from(document.querySelectorAll('table.jobs tbody tr'),"
                          " (r) => r.tyKept ? null : r.dataset.job).filter((j) => j !== null)")
    expect(not replaced, f'rows drawn again by the refresh: {replaced}')
    sel = browser.js('return getSelection().toString()')
    expect(sel == J['ok'], f'the selection is now "{sel}", not "{J["ok"]}"')


def counts_follow_the_list():
    """The project selector's job counts are read again with the list: a job made meanwhile
    counts, as it appears in the list."""
    browser.open('#/jobs?project=p1')
    browser.wait_css('table.jobs td.id a')
    n = next(int(p['jobCount']) for p in api1.get('/v1/projects')['projects'] if p['projectId'] == 'p1')
    browser.wait(f'the count p1 ({n})', lambda: browser.text('#project option') == f'p1 ({n})', timeout=6)
    submit('count_job', 'true')  # QUEUED behind the running job; cancelled below
    try:
        browser.wait('the new job listed', lambda: 'count_job' in job_ids_shown(), timeout=12)
        browser.wait(f'the count p1 ({n + 1})', lambda: browser.text('#project option') == f'p1 ({n + 1})',
                     timeout=6)
    finally:
        api1.call('POST', '/v1/projects/p1/jobs/count_job:cancel', {})


def filter_and_bad_filter():
    box = browser.wait_css('#filter')
    box.clear()
    box.send_keys('state:FAILED', keys().ENTER)
    browser.wait('only the failed job', lambda: job_ids_shown() == [J['fail']])
    expect('filter=state%3AFAILED' in browser.driver.current_url, 'the filter is not in the URL')
    status, body = api1.call('GET', '/v1/projects/p1/jobs?filter=state%3A')
    expect(status == 400, f'a bad filter is answered {status}')
    box.clear()
    box.send_keys('state:', keys().ENTER)
    browser.wait_text('#filter-error .msg-error', body['error']['message'])
    expect(not browser.text('table.jobs tbody'), f'a refused filter lists "{browser.text("table.jobs tbody")}"')
    box.clear()
    box.send_keys(keys().ENTER)
    browser.wait('every job again', lambda: len(job_ids_shown()) >= 4)
    expect(not browser.css('#filter-error .msg-error'), 'the filter error stays after a good filter')


def sort_by_keyboard():
    btn = browser.wait_css('button.sort[data-col="jobId"]')
    btn.click()
    ids = job_ids_shown()
    expect(ids == sorted(ids), f'not sorted by id ascending: {ids}')
    # The same button with the keyboard (it keeps the focus): descending.
    focused = browser.driver.switch_to.active_element
    expect(focused.get_attribute('data-col') == 'jobId', 'the sort button lost the focus')
    focused.send_keys(keys().ENTER)
    browser.wait('descending order', lambda: job_ids_shown() == sorted(job_ids_shown(), reverse=True))
    expect(browser.css('th[aria-sort="descending"] button[data-col="jobId"]'), 'aria-sort not set')
    focused = browser.driver.switch_to.active_element
    focused.send_keys(keys().ENTER)  # third press: the service's order again
    browser.wait('the API order', lambda: not browser.css('th[aria-sort="descending"]'))


def keyboard_to_a_job():
    from selenium.webdriver.common.action_chains import ActionChains
    browser.open('#/jobs?project=p1')
    browser.wait_css('table.jobs td.id a')
    browser.js("document.querySelector('.brand').focus()")
    # Read the focused element in the page (the table may be redrawn by its refresh meanwhile:
    # the focus then stays on the same job's link, a new element).
    focused = 'const a = document.activeElement; return [a.tagName, a.textContent, getComputedStyle(a).outlineStyle]'
    for _ in range(60):
        tag, text, outline = browser.js(focused)
        if tag == 'A' and text == J['fail']:
            break
        ActionChains(browser.driver).send_keys(keys().TAB).perform()
    else:
        raise AssertionError(f'Tab never reached the link of {J["fail"]}')
    expect(outline not in ('none', ''), f'the focused link has no visible outline ({outline})')
    ActionChains(browser.driver).send_keys(keys().ENTER).perform()
    browser.wait_css('pre.errmsg')


# --- the job page ------------------------------------------------------------------------

def failed_job_page():
    job = api1.job('p1', J['fail'])
    browser.open(f'#/projects/p1/jobs/{J["fail"]}')
    err = browser.wait_css('pre.errmsg')
    expect(err.text == job['errorMessage'], f'errorMessage shown "{err.text}" != "{job["errorMessage"]}"')
    row = browser.wait_css('table.replicas tr.failing')
    expect(row.get_attribute('data-task') == 'worker-replica-0',
           f'the failing replica marked is {row.get_attribute("data-task")}')
    expect('non-zero status of 3' in row.text, f'the failing row does not show the exit: "{row.text}"')
    expect(len(browser.css('table.replicas tbody tr')) == 2, 'not two replicas')
    expect(browser.css('ol.timeline li'), 'no timeline')
    time.sleep(0.3)
    browser.shot_full('job-failed')


def last_lines_link():
    link = browser.wait_css('table.replicas tr.failing a')
    link.click()
    browser.wait_text('.logbox', 'worker-dies')
    expect('task=worker-replica-0' in browser.driver.current_url, 'the logs page is not filtered to the task')
    tasks = {e.text for e in browser.css('.logbox .ln .task')}
    expect(tasks == {'worker-replica-0'}, f'lines of other tasks shown: {tasks}')
    box = browser.css('.logbox')[0]
    at_end = browser.js('const b = arguments[0]; return b.scrollTop + b.clientHeight >= b.scrollHeight - 8', box)
    expect(at_end, 'the logs are not scrolled to the end')


LAST_LINE_SHOWN = """
    const b = document.querySelector('.logbox');
    const ls = b && b.querySelectorAll('.ln');
    if (!ls || !ls.length || !/\\bwide-end-/.test(b.textContent)) return false;
    const r = ls[ls.length - 1].getBoundingClientRect(), box = b.getBoundingClientRect();
    return b.scrollTop + b.clientHeight >= b.scrollHeight - 8 && r.top >= box.top && r.bottom <= box.bottom + 1;"""


def at_the_real_end(what):
    """The log box shows its last line, and stays there: its blocks are laid out only near
    the view, at heights (long lines wrapped) that the first estimate did not know."""
    browser.wait(f'{what}: the last line in view', lambda: browser.js(LAST_LINE_SHOWN), timeout=5)
    time.sleep(1)
    expect(browser.js(LAST_LINE_SHOWN), f'{what}: the view left the last line')


def end_of_wrapped_lines():
    """A log of 500 lines of 1,500 characters (wrapped into many rows each, so more than 3
    blocks of lines whose heights the page cannot guess): "last lines" and "Jump to end"
    reach its last line, wide and narrow."""
    for size in (WIDE, NARROW):
        browser.resize(*size)
        browser.open(f'#/projects/p1/jobs/{J["wide"]}')
        browser.wait_css('table.replicas a[href*="end=1"]').click()
        browser.wait_text('.live', 'Ended')
        at_the_real_end(f'"last lines" at {size[0]} px')
        browser.js('document.querySelector(".logbox").dataset.before = "1"')
        browser.go(f'#/projects/p1/jobs/{J["wide"]}/logs')
        browser.wait('the log opened again', lambda: browser.css('.logbox:not([data-before])') and
                     'Ended' in browser.text('.live'))
        expect(browser.js('return document.querySelector(".logbox").scrollTop') == 0, 'the log did not open at its start')
        next(b for b in browser.css('button') if b.text == 'Jump to end').click()
        at_the_real_end(f'"Jump to end" at {size[0]} px')
    browser.resize(*WIDE)


def labels_edit_and_stale():
    browser.open(f'#/projects/p1/jobs/{J["ok"]}')
    browser.wait_css('form.labels .label-row')
    val = browser.css('form.labels .lval')[0]
    val.clear()
    val.send_keys('speech')
    browser.css('form.labels button')[-2].click()  # Add label
    browser.driver.switch_to.active_element.send_keys('owner')
    browser.css('form.labels .lval')[-1].send_keys('ci')
    browser.css('form.labels button[type=submit]')[0].click()
    browser.wait_text('form.labels .msg-ok', 'Labels saved')
    job = api1.job('p1', J['ok'])
    expect(job.get('labels') == {'team': 'speech', 'owner': 'ci'}, f'labels in the API: {job.get("labels")}')
    # Someone else changes them; the page still holds the old etag.
    status, _ = api1.call('PATCH', f'/v1/projects/p1/jobs/{J["ok"]}?updateMask=labels',
                          {'labels': {'team': 'other'}, 'etag': job['etag']})
    expect(status == 200, f'PATCH from the test: {status}')
    val = browser.css('form.labels .lval')[0]
    val.clear()
    val.send_keys('mine')
    browser.css('form.labels button[type=submit]')[0].click()
    browser.wait_text('form.labels .msg-error', 'changed since you loaded')
    browser.wait('the current labels shown',
                 lambda: [e.get_attribute('value') for e in browser.css('form.labels .lval')] == ['other'])
    expect(api1.job('p1', J['ok'])['labels'] == {'team': 'other'}, 'the stale save changed the labels')
    browser.shot_full('job-labels')


def labels_save_survives_broken_connection():
    # The browser drops a request when its network changes (Chromium's ERR_NETWORK_CHANGED),
    # and a save carries its etag, so the page sends it once more: one broken before it was
    # sent, and one whose answer was lost after it landed (the repeat is then refused as
    # stale, and the page finds the labels as asked).
    for landed in (False, True):
        want = 'answer-lost' if landed else 'not-sent'
        browser.open(f'#/projects/p1/jobs/{J["ok"]}')
        browser.wait_css('form.labels .label-row')
        break_first('PATCH', landed)
        val = browser.css('form.labels .lval')[0]
        val.clear()
        val.send_keys(want)
        browser.css('form.labels button[type=submit]')[0].click()
        browser.wait_text('form.labels .msg-ok', 'Labels saved')
        sent = unbreak()
        expect(sent == 2, f'{want}: PATCH sent {sent} times, not twice')
        labels = api1.job('p1', J['ok']).get('labels')
        expect(labels == {'team': want}, f'{want}: labels in the API: {labels}')


def break_first(method, landed):
    """Make the page's first @method request fail as a broken connection does (TypeError from
    fetch): before it is sent, or after it @landed. Counted in window.__tyCalls. "Landed" is
    made sure of: Chromium itself drops requests in flight when the host's interfaces change
    (other tests make namespaces and bridges meanwhile), so the request is sent again, here,
    until the service has answered it (at most 5 tries: a dropped request that reached the
    service is a repeat the service refuses, the state the same)."""
    browser.js("""
        const [method, landed] = arguments;
        const real = window.__tyRealFetch || window.fetch;
        window.__tyRealFetch = real;
        window.__tyCalls = 0;
        window.fetch = async (path, init) => {
          if (init && init.method === method && window.__tyCalls++ === 0) {
            for (let tries = 1; landed; tries++) {
              try {
                await real(path, init);
                break;
              } catch (e) {
                if (tries === 5)
                  throw e;
                await new Promise((done) => setTimeout(done, 200));
              }
            }
            throw new TypeError('Failed to fetch');
          }
          return real(path, init);
        };""", method, landed)


def unbreak():
    """Undo break_first; returns how many requests of its method the page sent."""
    return browser.js('const n = window.__tyCalls; window.fetch = window.__tyRealFetch; return n;')


def cancel(job_id, landed):
    # The first cancel's connection breaks (before it is sent, or after it landed): the page
    # looks at the job and sends it again only if it did not land.
    browser.open(f'#/projects/p1/jobs/{job_id}')
    break_first('POST', landed)
    browser.wait_css('button.danger').click()
    alert = browser.wait('the confirmation', lambda: browser.driver.switch_to.alert)
    alert.accept()
    browser.wait(f'{job_id} to be CANCELLING or CANCELLED in the API',
                 lambda: api1.job('p1', job_id)['state'] in ('CANCELLING', 'CANCELLED'))
    browser.wait('the page to show CANCELLED', lambda: 'CANCELLED' in browser.text('.jobhead .badge'), timeout=15)
    expect(api1.job('p1', job_id)['state'] == 'CANCELLED', 'the API does not say CANCELLED')
    expect(not browser.css('button.danger'), 'the Cancel button is still there')
    expect('Cancel requested' in browser.text(), 'no "Cancel requested" shown')
    where = browser.js('const a = document.activeElement; return `${a.tagName} ${a.textContent.slice(0, 40)}`')
    expect(where == 'DIV Cancel requested.', f'after Cancel the focus is on {where}')
    # The user's cancel is a note, not an error.
    why = api1.job('p1', job_id).get('errorMessage')
    expect(why and not browser.css('.error-box') and why in browser.text('.msg-note'),
           f'"{why}" is not shown as a note (error box: {bool(browser.css(".error-box"))})')
    sent = unbreak()
    expect(sent == (1 if landed else 2), f'cancel sent {sent} times (landed: {landed})')


# --- logs ----------------------------------------------------------------------------------

def ticks():
    return [int(m.group(1)) for m in re.finditer(r'tick-(\d+)', browser.text('.logbox'))]


def logs_stream():
    browser.open(f'#/projects/p1/jobs/{J["run"]}/logs')
    browser.wait_text('.live', 'Live')
    browser.wait('the first lines', lambda: ticks())
    opened = max(ticks())
    # The job prints a line every 0.3 s: new ones must appear without reloading.
    browser.wait('lines written after the page opened', lambda: max(ticks()) >= opened + 4, timeout=8)
    seen = ticks()
    expect(seen == sorted(seen) and len(seen) == len(set(seen)), 'lines repeated or out of order')
    expect(seen[0] == 1 and seen[-1] - seen[0] + 1 == len(seen), f'lines missing: {seen[:3]}...{seen[-3:]}')
    box = browser.wait_css('#search')
    box.send_keys(f'tick-{opened}')
    browser.wait('the search to filter', lambda: browser.css('.logbox mark') and
                 all(f'tick-{opened}' in e.text for e in browser.css('.logbox .ln')))
    box.clear()
    box.send_keys(' ', keys().BACKSPACE)
    browser.wait('every line again', lambda: len(browser.css('.logbox .ln')) > 3)
    time.sleep(0.5)
    browser.shot('logs')


def overview_error_clears():
    """A read of the job that fails (twice: a GET is asked again once) says so; the next one
    that works clears it, instead of leaving the error beside a page that updates again."""
    browser.open(f'#/projects/p1/jobs/{J["run"]}')
    browser.wait_css('.jobhead .badge')
    browser.js("""
        const real = window.__tyRealFetch || window.fetch;
        window.__tyRealFetch = real;
        window.__tyCalls = 0;
        window.fetch = async (path, init) => {
          if ((!init || !init.method || init.method === 'GET') && window.__tyCalls++ < 2)
            throw new TypeError('Failed to fetch');
          return real(path, init);
        };""")
    browser.wait('the failed read said so', lambda: 'did not answer' in browser.text(), timeout=10)
    browser.wait('the next read clearing it', lambda: 'did not answer' not in browser.text(), timeout=10)
    unbreak()


def refused_job_not_polled():
    """A job id the service refuses (400: not a valid id) is said once and not asked again
    every 2 s, and the page shows only that: no sections of a job, no labels editor."""
    browser.open('#/projects/p1/jobs/bad-id')
    browser.wait_css('.msg-error')
    time.sleep(4.5)  # two refresh periods
    asked = browser.js("return performance.getEntriesByType('resource')"
                       ".filter(e => e.name.endsWith('/v1/projects/p1/jobs/bad-id')).length")
    expect(asked <= 2, f'the job was asked for {asked} times')  # a GET is asked again once
    shown = [e.text for e in browser.css('h2') if e.is_displayed()]
    expect(not shown, f'sections of the job shown under the error: {shown}')


def search_marks_the_match():
    """The match is marked where it is, also after characters that change length when
    lower-cased ("İ" is two characters in lower case)."""
    browser.open(f'#/projects/p1/jobs/{J["ok"]}/logs?q=ERROR-MARK')
    browser.wait('the match marked', lambda: browser.css('.logbox mark'))
    marks = [e.text for e in browser.css('.logbox mark')]
    expect(marks == ['error-mark'], f'marked {marks}, not the match')


def logs_after_restart():
    """The service restarts while the page follows the running job's log: the page picks the
    stream up again, without a gap or a repeated line. The service is down for 2 s (restart.sh),
    so that the page's first tries to catch up fail too (answered 503 while the service stops,
    then refused): the lines it had shown must not come again once it is back."""
    browser.open(f'#/projects/p1/jobs/{J["run"]}/logs')
    browser.wait_text('.live', 'Live')
    browser.wait('the first lines', lambda: ticks())
    subprocess.run([cfg['restart']], check=True, timeout=40)
    restarted = max(ticks())
    browser.wait('lines written after the restart', lambda: max(ticks()) >= restarted + 4, timeout=20)
    browser.wait_text('.live', 'Live')
    seen = ticks()
    expect(seen == list(range(1, seen[-1] + 1)), f'lines missing or repeated: {seen[:3]}...{seen[-3:]}')


def logs_long_lines():
    """An ended job's log of long lines fills more than one page of the API (a page ends at
    about 1 MiB, well before 1000 entries): every line is shown, to the last."""
    browser.open(f'#/projects/p1/jobs/{J["long"]}/logs')
    browser.wait_text('.live', 'Ended', timeout=20)
    # A line's message has a class of its own (.msg is a message box's: its padding and border)
    expect(not browser.css('.logbox .msg'), 'log lines with the class of message boxes')
    heads = browser.js("return Array.from(document.querySelectorAll('.logbox .ln .text'),"
                       " e => e.textContent.slice(0, 12).split(' ')[0])")
    longs = [h[:9] if h.startswith('long-end-') else h for h in heads if h.startswith('long-')]
    want = [f'long-{i}' for i in range(24)] + ['long-end-']
    expect(longs == want, f'{len(longs)} long lines shown, not 25: ...{longs[-3:]}')


def submit(job_id, script):
    """Make job @job_id of p1 that runs the shell @script."""
    ti = {'scaleTier': 'CUSTOM', 'masterType': 'n1-standard-4',
          'masterConfig': {'imageUri': cfg['image'], 'containerCommand': ['sh', '-c', script]}}
    status, body = api1.call('POST', '/v1/projects/p1/jobs', {'jobId': job_id, 'trainingInput': ti})
    expect(status == 200, f'submitting {job_id}: {status} {body}')


def logs_header_follows_state():
    """The logs page of a QUEUED job follows its log (an open stream, nothing in it yet); when
    the job starts, its header says RUNNING while the stream goes on, not only once it ends."""
    submit('block_job', 'sleep 60')
    browser.wait('block_job to run', lambda: api1.job('p1', 'block_job')['state'] == 'RUNNING', timeout=20)
    submit('state_job', 'i=0; while [ $i -lt 200 ]; do i=$((i+1)); echo state-tick-$i; sleep 0.3; done')
    try:
        expect(api1.job('p1', 'state_job')['state'] == 'QUEUED', 'state_job is not QUEUED behind block_job')
        browser.open('#/projects/p1/jobs/state_job/logs')
        browser.wait_text('.live', 'Live')
        browser.wait_text('.jobhead .badge', 'QUEUED')
        status, _ = api1.call('POST', '/v1/projects/p1/jobs/block_job:cancel', {})
        expect(status == 200, f'cancelling block_job: {status}')
        browser.wait('state_job to run', lambda: api1.job('p1', 'state_job')['state'] == 'RUNNING', timeout=20)
        browser.wait_text('.jobhead .badge', 'RUNNING', timeout=6)
        browser.wait_text('.logbox', 'state-tick-3')
        expect('Live' in browser.text('.live'), 'the log is no longer followed')
        api1.call('POST', '/v1/projects/p1/jobs/state_job:cancel', {})
        browser.wait_text('.jobhead .badge', 'CANCELLED', timeout=15)
    finally:
        for j in ('block_job', 'state_job'):  # the next checks need p1's one place free
            api1.call('POST', f'/v1/projects/p1/jobs/{j}:cancel', {})


def revoked_token_while_streaming():
    """The token is taken out of the tokens file (SIGHUP) while the logs page follows a log:
    the service cuts the stream, which Chromium may notice only at the next heartbeat (30 s);
    the page must notice within seconds, end the stream and say the token was refused."""
    submit('revoke_job', 'i=0; while [ $i -lt 200 ]; do i=$((i+1)); echo revoke-tick-$i; sleep 0.3; done')
    browser.open('#/projects/p1/jobs/revoke_job/logs')
    browser.wait_text('.live', 'Live')
    good = open(cfg['tokens']).read()
    pid = int(open(cfg['pidfile']).read())
    try:
        with open(cfg['tokens'], 'w') as f:
            f.write(f'{T2} p2\n')
        os.kill(pid, signal.SIGHUP)
        browser.wait_text('.signin-status .msg-error', 'refused the token', timeout=6)
        expect(browser.js("return sessionStorage.getItem('trainyard.token')") is None,
               'the refused token was kept in sessionStorage')
        expect(not browser.css('.live'), 'the log is still shown as followed')
        with open(cfg['tokens'], 'w') as f:
            f.write(good)
        os.kill(pid, signal.SIGHUP)
        time.sleep(0.5)
        # Signed in again (the token is good again), the page follows the log again.
        browser.sign_in(T1)
        browser.wait_text('.live', 'Live')
    finally:
        with open(cfg['tokens'], 'w') as f:
            f.write(good)
        os.kill(pid, signal.SIGHUP)
        time.sleep(0.5)
        api1.call('POST', '/v1/projects/p1/jobs/revoke_job:cancel', {})
        browser.driver.refresh()  # whatever happened, the next check starts signed in


# --- a project's first job ---------------------------------------------------------------

def first_job_appears():
    """Signed in with a token of a project that has no jobs yet, the page shows it, empty, and
    refreshes: the project's first job appears without a reload (t5130 checks a service with
    no jobs at all). That job has a 128-character id and long labels, which wrap inside their
    card at 390 px instead of widening it."""
    t3 = f'tok-p3-{os.getpid()}-cccccccccccccccc'
    good = open(cfg['tokens']).read()
    pid = int(open(cfg['pidfile']).read())
    job_id = 'j' + 'x' * 127
    labels = {f'k{i}' + 'k' * 61: 'v' * 63 for i in range(4)}
    try:
        with open(cfg['tokens'], 'w') as f:
            f.write(good + f'{t3} p3\n')
        os.kill(pid, signal.SIGHUP)
        time.sleep(0.5)
        browser.js(f"sessionStorage.setItem('trainyard.token', '{t3}')")
        browser.open('#/jobs')
        browser.driver.refresh()
        browser.wait('p3 to be shown', lambda: browser.js(
            "const s = document.querySelector('#project'); return s && s.value;") == 'p3')
        ti = {'scaleTier': 'CUSTOM', 'masterType': 'n1-standard-4',
              'masterConfig': {'imageUri': cfg['image'], 'containerCommand': ['sh', '-c', 'true']}}
        status, body = ServiceApi(BASE, t3).call(
            'POST', '/v1/projects/p3/jobs', {'jobId': job_id, 'labels': labels, 'trainingInput': ti})
        expect(status == 200, f'creating p3\'s job: {status} {body}')
        browser.wait('the new job to be listed without a reload',
                     lambda: job_id in job_ids_shown(), timeout=15)
        browser.resize(*NARROW)
        time.sleep(0.3)
        over = browser.js("const w = document.querySelector('.table-wrap');"
                          " return w.scrollWidth - w.clientWidth;")
        expect(over <= 0, f'the jobs table scrolls sideways by {over} px at {NARROW[0]} px')
        browser.shot('jobs-long-labels')
    finally:
        browser.resize(*WIDE)
        with open(cfg['tokens'], 'w') as f:
            f.write(good)
        os.kill(pid, signal.SIGHUP)
        time.sleep(0.5)
        browser.js(f"sessionStorage.setItem('trainyard.token', '{T1}')")
        browser.open('#/jobs?project=p1')
        browser.driver.refresh()


# --- narrow screens and size ---------------------------------------------------------------

def narrow():
    browser.resize(*NARROW)
    for name, page, ready in (('jobs', '#/jobs?project=p1', 'table.jobs td.id a'),
                              ('job-failed', f'#/projects/p1/jobs/{J["fail"]}', 'pre.errmsg'),
                              ('logs', f'#/projects/p1/jobs/{J["ok"]}/logs', '.logbox .ln')):
        browser.open(page)
        browser.wait_css(ready)
        time.sleep(0.3)
        over = browser.body_overflow()
        expect(over <= 0, f'{name}: the page scrolls sideways by {over} px at {NARROW[0]} px')
        if name == 'job-failed':
            browser.shot_full(name)
        else:
            browser.shot(name)
    browser.resize(*WIDE)


def first_load_size():
    def get(path):
        req = urllib.request.Request(BASE + path, headers={'Accept-Encoding': 'gzip'})
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read(), r.headers.get('Content-Encoding')
    html, enc = get('/')
    total = len(html)
    text = gzip.decompress(html).decode() if enc == 'gzip' else html.decode()
    names = re.findall(r'"/static/([^"]+)"', text)
    expect(any(n.endswith('.js') for n in names) and any(n.endswith('.css') for n in names),
           f'index.html names no script and style sheet: {names}')
    for n in names:
        body, _ = get('/static/' + n)
        total += len(body)
    print(f'# first load: {total} bytes as served ({len(names) + 1} files)', flush=True)
    expect(total < 300 * 1024, f'first load is {total} bytes, over 300 KB')


def main():
    global browser, checks
    checks = Checks(lambda: browser)
    print(f'# screenshots in {ART}', flush=True)
    browser = Browser(BASE, ART, WIDE)
    try:
        check('a wrong token is refused with the service\'s message', wrong_token, allow=[r' 401 '])
        check('sign in with the token', sign_in)
        check('the jobs page lists p1\'s jobs, newest first, and not p2\'s', jobs_of_p1_only)
        check('a QUEUED job shows its position and reason', queued_position)
        check('the list\'s refresh updates rows in place (a selection stays)', rows_kept_on_refresh)
        check('the project\'s job count follows the list', counts_follow_the_list)
        check('the filter narrows the list; a bad one shows the service\'s 400', filter_and_bad_filter,
              allow=[r' 400 '])
        check('columns sort by click and keyboard', sort_by_keyboard)
        check('Tab reaches a job link with a visible focus; Enter opens it', keyboard_to_a_job)
        check('Previous and Next are disabled until a page of jobs is read',
              lambda: more.pager_disabled_until_loaded(browser))
        check('the page of jobs is in the address: Back and a reload return to it',
              lambda: more.page_in_the_address(browser))
        check('a failed job\'s page shows its errorMessage and the failing replica', failed_job_page)
        check('"last lines" opens the failing replica\'s logs at the end', last_lines_link)
        check('"last lines" and "Jump to end" reach the real end of a log of long wrapped lines',
              end_of_wrapped_lines)
        check('labels are saved with the etag; a stale etag is reported', labels_edit_and_stale,
              allow=[r' 409 '])
        check('a label save whose connection broke is sent again, safely (its etag)',
              labels_save_survives_broken_connection, allow=[r' 409 '])
        check('the logs page streams a running job\'s new lines; search filters', logs_stream)
        check('a search marks the match, after non-ASCII letters too', search_marks_the_match)
        check('"No line matches" stays while the lines that stream are filtered out',
              lambda: more.no_match_while_streaming(browser, J['run']))
        check('labels: duplicate and refused keys marked, Remove named, focus kept, note cleared',
              lambda: more.labels_editor(browser, api1, J['run']), allow=[r' 400 '])
        check('a running job\'s Summary and Timeline are updated in place (a selection stays)',
              lambda: more.summary_kept(browser, J['run']))
        check('a failed read of the job is said, and cleared by the next that works',
              overview_error_clears, allow=[r'Failed to fetch'])
        check('a job id the service refuses is said once, not polled, and shown alone',
              refused_job_not_polled, allow=[r' 400 '])
        check('the logs page follows again after the service restarts, no line lost or repeated',
              logs_after_restart, allow=[r'net::ERR_', r' 503 '])
        check('an ended job\'s log of long lines is shown whole (more than one page)',
              logs_long_lines)
        check('Cancel cancels a QUEUED job (its first request broken before it was sent)',
              lambda: cancel(J['queue'], False))
        check('Cancel cancels a RUNNING job (its first request broken after it landed)',
              lambda: cancel(J['run'], True))
        check('the logs page\'s header follows the job\'s state while its log streams',
              logs_header_follows_state)
        check('a token revoked while the logs page streams is noticed at once and said',
              revoked_token_while_streaming, allow=[r' 401 ', r'net::ERR_'])
        check('a project\'s first job appears without a reload; long labels wrap at 390 px',
              first_job_appears)
        check('pages are readable at 390 px (no sideways scrolling)', narrow)
        check('the first load is under 300 KB as served', first_load_size)
    finally:
        browser.quit()
    print('# checks done', flush=True)
    return 1 if checks.failed() else 0


if __name__ == '__main__':
    sys.exit(main())
