# SPDX-License-Identifier: Apache-2.0
"""dashboard_more.py: more checks of t5120 (dashboard-check.py runs them, each with its
browser, the API with p1's token and the test's jobs): the Jobs page's Previous/Next (disabled
until a page is read; the page kept in the address through Back and a reload), the Logs page's
"No line matches" while lines stream.
"""
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
