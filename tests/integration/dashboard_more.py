# SPDX-License-Identifier: Apache-2.0
"""dashboard_more.py: more checks of t5120 (dashboard-check.py runs them, each with its
browser, the API with p1's token and the test's jobs): the Jobs page's Previous/Next (disabled
until a page is read; the page kept in the address through Back and a reload), the Logs page's
"No line matches" while lines stream, the labels editor (duplicate and refused keys marked,
Remove buttons named after their key, the focus after a save, "Labels saved." gone when the
labels change elsewhere) and a running job's Summary and Timeline updated in place.
"""
import time

from dashboard_lib import expect

# Scripts run in every page the browser loads, before the page's own (Chrome DevTools'
# Page.addScriptToEvaluateOnNewDocument): they wrap fetch, as a change of the service would.
LIST = r'/v1/projects/[^/]+/jobs\?'
FAIL_LISTS = """
  const real = window.fetch;
  window.fetch = (path, init) => (new RegExp(%r).test(String(path)) && !window.__tyListsOk
    ? Promise.reject(new TypeError('Failed to fetch')) : real(path, init));""" % LIST
SMALL_PAGES = """
  const real = window.fetch;
  window.fetch = (path, init) => real(new RegExp(%r).test(String(path))
    ? String(path).replace(/pageSize=20\\b/, () => 'pageSize=2') : path, init);""" % LIST


class OnEveryPage:
    """`with OnEveryPage(browser, SCRIPT):` SCRIPT runs in each page loaded meanwhile."""

    def __init__(self, browser, source):
        self.b, self.source = browser, source

    def __enter__(self):
        r = self.b.driver.execute_cdp_cmd('Page.addScriptToEvaluateOnNewDocument', {'source': self.source})
        self.id = r['identifier']

    def __exit__(self, *exc):
        self.b.driver.execute_cdp_cmd('Page.removeScriptToEvaluateOnNewDocument', {'identifier': self.id})


def ids(b):
    return b.js("return Array.from(document.querySelectorAll('table.jobs td.id a'), a => a.textContent.trim())")


def pager(b):
    """[Previous disabled, Next disabled, the page's number as said]."""
    return b.js("const [p, n] = document.querySelectorAll('nav.pager button');"
                " return [p.disabled, n.disabled, document.querySelector('nav.pager span').textContent];")


def pager_disabled_until_loaded(b):
    """The first read of the list fails: Previous and Next stay disabled (Next would ask for
    the first page again as page 2); they follow the list once a read works."""
    with OnEveryPage(b, FAIL_LISTS):
        b.open('#/jobs?project=p1')
        b.driver.refresh()  # a new page, not only a new hash
        b.wait_text('.msg-error', 'did not answer')
        prev, nxt, page = pager(b)
        expect(prev and nxt, f'before a page is read: Previous disabled {prev}, Next disabled {nxt}')
        expect(page == '', f'before a page is read the pager says "{page}"')
        b.js('window.__tyListsOk = true')
        b.wait('the refresh to read the list', lambda: ids(b), timeout=8)
        expect(pager(b) == [True, True, 'Page 1'], f'one page of jobs: the pager is {pager(b)}')


def page_in_the_address(b):
    """Pages of 2 jobs (the list's requests changed to pageSize=2): Next puts the page's
    token in the address, so Back from a job and a reload show that page again; Previous
    takes it out."""
    with OnEveryPage(b, SMALL_PAGES):
        b.open('#/jobs?project=p1')
        b.driver.refresh()
        b.wait('the first page', lambda: len(ids(b)) == 2)
        first = ids(b)
        expect(pager(b) == [True, False, 'Page 1'], f'page 1: the pager is {pager(b)}')
        b.css('nav.pager button')[1].click()
        b.wait('page 2', lambda: pager(b)[2] == 'Page 2' and ids(b) and ids(b) != first)
        second = ids(b)
        url = b.driver.current_url
        expect('page=' in url, f'the page is not in the address: {url}')
        b.css('table.jobs td.id a')[0].click()
        b.wait_css('.jobhead .badge')
        b.driver.back()
        b.wait('page 2 after Back', lambda: pager(b)[2] == 'Page 2' and ids(b) == second)
        b.driver.refresh()
        b.wait('page 2 after a reload', lambda: pager(b)[2] == 'Page 2' and ids(b) == second)
        expect(pager(b)[0] is False, 'Previous is disabled on page 2')
        b.css('nav.pager button')[0].click()
        b.wait('page 1 again', lambda: pager(b)[2] == 'Page 1' and ids(b) == first)
        expect('page=' not in b.driver.current_url, f'page 1 keeps a page token: {b.driver.current_url}')
    b.driver.refresh()  # the pages as the service makes them again


def counts(b):
    text = b.text('.count')
    return int(text.split(' ')[0]) if text[:1].isdigit() else 0


def no_match_while_streaming(b, job):
    """A running job's log with a severity no line has: "No line matches these filters."
    stays while lines come that the filter hides."""
    b.open(f'#/projects/p1/jobs/{job}/logs?severity=ERROR')
    b.wait_text('.live', 'Live')
    b.wait_text('.logbox .empty', 'No line matches')
    n = counts(b)
    b.wait('new lines (hidden)', lambda: counts(b) >= n + 3, timeout=8)
    expect('No line matches' in b.text('.logbox'), f'the note went; the box shows "{b.text(".logbox")}"')


def label_rows(b):
    return b.js("return Array.from(document.querySelectorAll('form.labels .label-row'), (r) =>"
                " [r.querySelector('.lkey').value, r.querySelector('.lval').value,"
                " r.querySelector('button').getAttribute('aria-label'),"
                " r.querySelector('.lkey').getAttribute('aria-invalid')])")


def add_label(b, key, value):
    next(e for e in b.css('form.labels button') if e.text == 'Add label').click()
    b.driver.switch_to.active_element.send_keys(key)
    b.css('form.labels .lval')[-1].send_keys(value)


def focused(b):
    return b.js('const a = document.activeElement; return [a.tagName, a.id, a.value || a.textContent];')


def labels_editor(b, api, job):
    """On a running job's page (read every 2 s): each Remove button is named after its key as
    typed; two labels of the same key are refused, the second marked and focused, nothing
    sent; a key the service refuses is marked; after a save the focus is on what it said,
    not lost; that "Labels saved." goes once the labels are changed from elsewhere."""
    path = f'/v1/projects/p1/jobs/{job}'
    b.open(f'#/projects/p1/jobs/{job}')
    b.wait_css('form.labels')
    add_label(b, 'team', 'a')
    rows = label_rows(b)
    expect(rows[-1][2] == 'Remove label team', f'the Remove button of team=a is named "{rows[-1][2]}"')
    add_label(b, 'team', 'b')
    b.css('form.labels button[type=submit]')[0].click()
    b.wait_text('form.labels .msg-error', 'Two labels have the key team')
    rows = label_rows(b)
    expect([r[3] for r in rows[-2:]] == [None, 'true'], f'the duplicate is not marked: {rows}')
    expect(focused(b)[2] == 'team' and focused(b)[0] == 'INPUT', f'the focus is on {focused(b)}')
    expect(not api.job('p1', job).get('labels'), f'labels saved: {api.job("p1", job).get("labels")}')
    key = b.driver.switch_to.active_element
    key.send_keys('X')  # teamX: not a lowercase key
    b.css('form.labels button[type=submit]')[0].click()
    b.wait_text('form.labels .msg-error', "key 'teamX'")
    expect(label_rows(b)[-1][3] == 'true' and focused(b)[2] == 'teamX', f'teamX not marked: {label_rows(b)}')
    key = b.driver.switch_to.active_element
    key.clear()
    key.send_keys('owner')
    expect(label_rows(b)[-1][2:] == ['Remove label owner', None], f'after the rename: {label_rows(b)}')
    b.css('form.labels button[type=submit]')[0].click()
    b.wait_text('form.labels .msg-ok', 'Labels saved')
    expect(api.job('p1', job).get('labels') == {'team': 'a', 'owner': 'b'}, f'saved {api.job("p1", job).get("labels")}')
    expect(focused(b)[1] == 'labels-status', f'after the save the focus is on {focused(b)}')
    status, _ = api.call('PATCH', f'{path}?updateMask=labels', {'labels': {'team': 'other'}, 'etag': api.get(path)['etag']})
    expect(status == 200, f'PATCH from the test: {status}')
    b.wait('the labels changed elsewhere shown', lambda: [r[:2] for r in label_rows(b)] == [['team', 'other']],
           timeout=6)
    expect(not b.css('form.labels .msg-ok'), f'"Labels saved." stays beside other labels: {b.text("form.labels")}')
    api.call('PATCH', f'{path}?updateMask=labels', {'labels': {}, 'etag': api.get(path)['etag']})


def summary_kept(b, job):
    """A running job's page is read every 2 s: the Summary and the Timeline are updated in
    place, so a text selected there stays selected."""
    b.open(f'#/projects/p1/jobs/{job}')
    b.wait_css('dl.summary')
    running = 'return [...document.querySelectorAll("dl.summary div")].find((d) => d.firstChild.textContent === "Running for").lastChild.textContent'
    before = b.js("""
        const t = document.querySelector('dl.summary time');
        document.querySelector('ol.timeline li').tyKept = true;
        const range = document.createRange();
        range.selectNodeContents(t);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        return t.textContent;""")
    was = b.js(running)
    b.wait('a refresh (the running time changes)', lambda: b.js(running) != was, timeout=8)
    time.sleep(0.3)
    sel = b.js('return getSelection().toString()')
    expect(sel == before, f'the selection is now "{sel}", not "{before}"')
    expect(b.js("return document.querySelector('ol.timeline li').tyKept === true"), 'the timeline was drawn again')
