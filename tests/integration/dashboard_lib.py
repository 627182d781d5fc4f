# SPDX-License-Identifier: Apache-2.0
"""dashboard_lib.py: driving trainyardd's dashboard in a real browser for the tests (t5120,
t5130): Debian's headless Chromium through chromedriver with Selenium's Python client.

    from dashboard_lib import Browser, Checks, missing_tools, ServiceApi
    why = missing_tools()          # '' when chromium, chromedriver and selenium are there
    b = Browser(base_url, artifact_dir)          # 1280x900; b.resize(390, 844) for a phone
    b.open('#/jobs?project=p1'); b.wait_css('table.jobs a[href*="ok_job"]')
    b.shot('jobs')                 # ARTIFACT_DIR/jobs-1280.png
    b.console_errors(allow=[r'401'])   # browser console errors since the last call

Checks gathers named results ("ok - NAME" / "not ok - NAME: why") so a check that fails does
not hide the others; ServiceApi calls the REST API directly (to set things up and to see what
the dashboard did). Only the standard library and selenium; run with Debian's /usr/bin/python3.
"""
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
WIDE = (1280, 900)
NARROW = (390, 844)


def missing_tools():
    """'' when the browser, its driver and selenium are installed, else what is missing."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append('python3-selenium')
    return ', '.join(missing)


def artifact_dir(test_dir):
    """Where screenshots go: $TY_ARTIFACT_DIR when set, else TEST_DIR/artifacts (created)."""
    d = os.environ.get('TY_ARTIFACT_DIR') or os.path.join(test_dir, 'artifacts')
    os.makedirs(d, exist_ok=True)
    return d


# Console errors that are not the page's doing: Chromium aborts the requests it has in flight
# with ERR_NETWORK_CHANGED when the host's network interfaces change, which the tests running
# beside this one do (Podman's networks, the Slurm tests' namespaces). Whether the page then
# shows what it must is still checked by each test's own assertions.
NOT_THE_PAGES = (r'net::ERR_NETWORK_CHANGED',)


class Browser:
    """One headless Chromium, its window @size, console messages collected."""

    def __init__(self, base_url, artifacts, size=WIDE):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.base = base_url.rstrip('/')
        self.artifacts = artifacts
        os.makedirs(artifacts, exist_ok=True)
        self.width = size[0]
        self.profile = tempfile.mkdtemp(prefix='ty-chromium-')
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ('--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                  f'--user-data-dir={self.profile}', f'--window-size={size[0]},{size[1]}',
                  '--force-device-scale-factor=1', '--hide-scrollbars', '--lang=en-US',
                  '--no-first-run', '--no-default-browser-check', '--disable-extensions',
                  '--disable-background-networking', '--disable-component-update',
                  '--disable-sync', '--disable-default-apps', '--mute-audio',
                  '--password-store=basic', '--disable-features=Translate,MediaRouter,'
                  'OptimizationHints,AutofillServerCommunication'):
            opts.add_argument(a)
        opts.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
        service = Service(executable_path=CHROMEDRIVER, log_output=os.devnull)
        self.driver = webdriver.Chrome(service=service, options=opts)
        self.driver.set_page_load_timeout(20)
        self.resize(*size)

    def quit(self):
        """End Chromium and its driver. A failure here (chromedriver slow to answer on a loaded
        machine) is said as a comment, not raised: every check has already run and reported."""
        try:
            self.driver.quit()
        except Exception as e:  # noqa: BLE001
            print(f'# quitting the browser: {type(e).__name__}: {e}'.replace('\n', ' '), flush=True)
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def resize(self, width, height):
        """Make the page's viewport @width x @height (the window is a little larger)."""
        d = self.driver
        d.set_window_size(width, height)
        inner = d.execute_script('return [window.innerWidth, window.innerHeight]')
        # Just after a resize the page may not have its new size yet (0, or larger than the
        # window): then the window's frame cannot be measured and the window stays as asked.
        if 0 < inner[0] <= width and 0 < inner[1] <= height:
            d.set_window_size(width + (width - inner[0]), height + (height - inner[1]))
        self.width = width

    def open(self, hash_path):
        """Load the dashboard at @hash_path ('#/jobs?project=p1'), a fresh page load."""
        self.driver.get(f'{self.base}/{hash_path}')

    def go(self, hash_path):
        """Navigate inside the loaded app (a hash change, as a link does)."""
        self.driver.execute_script('location.hash = arguments[0]', hash_path)

    def wait(self, what, cond, timeout=20.0, every=0.1):
        """Call @cond() until it returns something true (returned); AssertionError naming
        @what when @timeout seconds pass. Exceptions inside count as not yet."""
        end = time.monotonic() + timeout
        last = None
        while True:
            try:
                v = cond()
                if v:
                    return v
            except Exception as e:  # the page is redrawing: try again
                last = e
            if time.monotonic() > end:
                raise AssertionError(f'timed out after {timeout:g} s waiting for {what}'
                                     + (f' (last error: {last!r})' if last else ''))
            time.sleep(every)

    def css(self, sel):
        from selenium.webdriver.common.by import By
        return self.driver.find_elements(By.CSS_SELECTOR, sel)

    def wait_css(self, sel, timeout=20.0):
        """The first element that @sel matches and is displayed, once there is one."""
        return self.wait(f'"{sel}"', lambda: next((e for e in self.css(sel) if e.is_displayed()), None),
                         timeout)

    def wait_text(self, sel, text, timeout=20.0):
        """Wait until an element matching @sel contains @text (or matches the regex @text)."""
        rx = text if isinstance(text, re.Pattern) else re.compile(re.escape(text))
        return self.wait(f'"{sel}" to show {rx.pattern!r}',
                         lambda: next((e for e in self.css(sel) if rx.search(e.text)), None), timeout)

    def text(self, sel='body'):
        return '\n'.join(e.text for e in self.css(sel))

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def shot(self, name):
        """Save a screenshot of the viewport as ARTIFACTS/NAME-WIDTH.png; returns its path."""
        path = os.path.join(self.artifacts, f'{name}-{self.width}.png')
        if not self.driver.save_screenshot(path):
            raise AssertionError(f'cannot save the screenshot {path}')
        return path

    def shot_full(self, name, max_height=2400):
        """A screenshot of the whole page (up to @max_height px tall): the window is made as
        tall as the page for it, then set back."""
        d = self.driver
        w, h = d.get_window_size()['width'], d.get_window_size()['height']
        full = int(self.js('return document.documentElement.scrollHeight'))
        d.set_window_size(w, min(max(full + (h - self.js('return window.innerHeight')), h), max_height))
        time.sleep(0.2)
        try:
            return self.shot(name)
        finally:
            d.set_window_size(w, h)

    def console_errors(self, allow=()):
        """The console's errors (SEVERE) since the last call, less those matching a regex
        of @allow (an expected 401 or 409 answer, which Chromium reports as an error) and
        those of NOT_THE_PAGES."""
        out = []
        for e in self.driver.get_log('browser'):
            if e.get('level') != 'SEVERE':
                continue
            msg = e.get('message', '')
            if any(re.search(a, msg) for a in tuple(allow) + NOT_THE_PAGES):
                continue
            out.append(msg)
        return out

    def body_overflow(self):
        """How many px the page is wider than the viewport (0: no sideways scrolling)."""
        return int(self.js('return Math.max(document.documentElement.scrollWidth,'
                           ' document.body.scrollWidth) - document.documentElement.clientWidth'))

    def sign_in(self, token):
        """Fill the sign-in form with @token and send it."""
        field = self.wait_css('form.signin input[type=password]')
        field.clear()
        field.send_keys(token)
        self.css('form.signin button[type=submit]')[0].click()


class ServiceApi:
    """The REST API of the service at @base with @token (None: no Authorization header)."""

    def __init__(self, base, token=None):
        self.base = base.rstrip('/')
        self.token = token

    def call(self, method, path, body=None):
        """(HTTP status, parsed JSON answer)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if self.token:
            req.add_header('Authorization', f'Bearer {self.token}')
        if data is not None:
            req.add_header('Content-Type', 'application/json')
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                text = r.read().decode()
                return r.status, json.loads(text) if text.strip() else {}
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, {'raw': text}

    def get(self, path):
        status, body = self.call('GET', path)
        if status != 200:
            raise AssertionError(f'GET {path}: {status} {body}')
        return body

    def job(self, project, job_id):
        return self.get(f'/v1/projects/{project}/jobs/{job_id}')


class Checks:
    """Named checks run one after the other; each failure is reported with its reason (and
    a screenshot of the page as it was), and the others still run."""

    def __init__(self, browser_getter=None):
        self.results = []
        self.browser_getter = browser_getter

    def run(self, name, fn):
        t0 = time.monotonic()
        try:
            fn()
        except Exception as e:
            why = str(e) if isinstance(e, AssertionError) else traceback.format_exc(limit=3)
            why = why.strip().replace('\n', ' | ')
            print(f'not ok - {name}: {why}', flush=True)
            self.results.append((name, False))
            b = self.browser_getter() if self.browser_getter else None
            if b is not None:
                try:
                    slug = re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')[:40]
                    print(f'#   screenshot: {b.shot("failed-" + slug)}', flush=True)
                except Exception:
                    pass
            return False
        print(f'ok - {name} ({time.monotonic() - t0:.1f} s)', flush=True)
        self.results.append((name, True))
        return True

    def failed(self):
        return [n for n, ok in self.results if not ok]


def expect(cond, what):
    """AssertionError(@what) unless @cond."""
    if not cond:
        raise AssertionError(what)


if __name__ == '__main__':
    # `dashboard_lib.py --missing`: prints what is missing, nothing when all is there.
    if sys.argv[1:] == ['--missing']:
        print(missing_tools())
    else:
        print(missing_tools() or 'chromium, chromedriver and selenium are installed')
