// SPDX-License-Identifier: Apache-2.0
// app.js: the dashboard's shell. It asks the service which projects it may see
// (GET /v1/projects, without a token first): a 401 means the service has a tokens file, and
// the sign-in form asks for one. Then it draws the page the URL's hash names:
//   #/jobs?project=P              the jobs of a project          (jobs.js)
//   #/projects/P/jobs/J           one job                        (job.js)
//   #/projects/P/jobs/J/logs?...  its logs                       (logs.js)
//   #/projects/P/jobs/J/tuning    its trials and plots           (tuning.js, loaded lazily)
// Every page gets a root element and returns a function that stops its timers and streams.
import { api, ApiError, getToken, onUnauthorized, setToken } from './api.js';
import { fill, h, links, message } from './format.js';
import { showJob, jobHeader } from './job.js';
import { showJobs } from './jobs.js';
import { showLogs } from './logs.js';

const app = document.getElementById('app');
let main;          // the element pages draw into
let crumbs;        // the breadcrumb navigation in the header
let signOutBtn;
let stopPage = null;
let projects = null; // [{projectId, jobCount}] from GET /v1/projects, once signed in
let routeSeq = 0;    // to ignore a page that finishes loading after the user moved on

function layout() {
  crumbs = h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' });
  signOutBtn = h('button', { type: 'button', class: 'quiet', hidden: true, onclick: signOut },
    'Sign out');
  main = h('main', { id: 'main', tabindex: '-1' });
  fill(app,
    h('header', { class: 'top' },
      h('a', { class: 'brand', href: '#/jobs' }, 'trainyard'), crumbs, signOutBtn),
    main);
}

function stop() {
  if (stopPage) {
    try {
      stopPage();
    } catch (e) {
      console.warn('stopping the page:', e);
    }
  }
  stopPage = null;
}

/** The hash as {segs: ['projects', 'p1', ...] (decoded), query: URLSearchParams}. */
function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/jobs';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  let segs;
  try {
    segs = path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    segs = ['?'];
  }
  return { segs, query: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)) };
}

/** Go to @hash (a page's address, '#/...'). */
function go(hash) {
  if (location.hash === hash)
    route();
  else
    location.hash = hash;
}

/** Change the query of the page shown without drawing it again (sort, filters typed in):
 *  the address stays one a user can copy or reload. A value that is an array gives the
 *  parameter once for each of its items. */
function setQuery(params) {
  const { segs } = parseHash();
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    for (const item of Array.isArray(v) ? v : [v])
      if (item !== '' && item !== null && item !== undefined && item !== false)
        q.append(k, String(item));
  const s = q.toString();
  const path = '#/' + (segs.length ? segs : ['jobs']).map(encodeURIComponent).join('/');
  history.replaceState(null, '', path + (s ? `?${s}` : ''));
}

function setCrumbs(items) {
  fill(crumbs, items.map((it, i) => [
    i ? h('span', { class: 'sep', 'aria-hidden': 'true' }, '/') : null,
    it.href ? h('a', { href: it.href }, it.text) : h('span', { 'aria-current': 'page' }, it.text),
  ]));
  document.title = [...items.map((it) => it.text).reverse(), 'trainyard'].join(' · ');
}

async function route() {
  stop();
  const seq = ++routeSeq;
  if (projects === null)
    return;
  const { segs, query } = parseHash();
  const root = h('div', { class: 'page' });
  fill(main, root);
  const ctx = { api, go, setQuery, query, projects, setCrumbs, refreshProjects };
  if (!segs.length || (segs[0] === 'jobs' && segs.length === 1)) {
    ctx.project = query.get('project') || '';
    stopPage = showJobs(root, ctx);
  } else if (segs[0] === 'projects' && segs.length >= 2 && segs.length <= 3) {
    go(links.jobs(segs[1]));
  } else if (segs[0] === 'projects' && segs[2] === 'jobs' && segs.length >= 4) {
    ctx.project = segs[1];
    ctx.jobId = segs[3];
    const page = segs[4] || '';
    if (segs.length === 4)
      stopPage = showJob(root, ctx);
    else if (segs.length === 5 && page === 'logs')
      stopPage = showLogs(root, ctx);
    else if (segs.length === 5 && page === 'tuning')
      await showTuningPage(root, ctx, seq);
    else
      notFound(root);
  } else {
    notFound(root);
  }
}

function notFound(root) {
  setCrumbs([{ text: 'Not found' }]);
  fill(root, h('h1', {}, 'No such page'),
    h('p', {}, 'This address names no page of the dashboard. ', h('a', { href: '#/jobs' }, 'See the jobs.')));
}

/** The tuning page (the tune helper's tuning.js) is a chunk of its own, with the charts: it is
 *  loaded only when a tuning page is opened. */
async function showTuningPage(root, ctx, seq) {
  const head = h('div');
  const body = h('div', { class: 'tuning-root' });
  fill(root, head, body);
  try {
    const job = await api.get(`/v1/projects/${encodeURIComponent(ctx.project)}/jobs/${encodeURIComponent(ctx.jobId)}`);
    if (seq !== routeSeq)
      return;
    fill(head, jobHeader(ctx, job, 'tuning'));
    const m = await import('./tuning.js');
    if (seq !== routeSeq)
      return;
    // The header (state, Cancel) follows the job as the page reads it again while it runs.
    let shown = job.state;
    const onJob = (j) => {
      if (seq !== routeSeq || j.state === shown)
        return;
      shown = j.state;
      fill(head, jobHeader(ctx, j, 'tuning'));
    };
    const stopTuning = await m.showTuning(body, { api, project: ctx.project, jobId: ctx.jobId, job, go, onJob });
    if (seq !== routeSeq) {
      if (typeof stopTuning === 'function')
        stopTuning();
      return;
    }
    if (typeof stopTuning === 'function')
      stopPage = stopTuning;
  } catch (e) {
    if (seq === routeSeq)
      fill(body, message('error', e.message));
  }
}

/** Ask for the projects again (after a sign-in, or when the jobs page opens). */
async function refreshProjects() {
  const r = await api.get('/v1/projects');
  projects = r.projects || [];
  return projects;
}

function signInForm(why) {
  stop();
  projects = null;
  signOutBtn.hidden = true;
  setCrumbs([{ text: 'Sign in' }]);
  const input = h('input', {
    type: 'password', id: 'token', name: 'token', autocomplete: 'current-password',
    required: true, spellcheck: 'false', 'aria-describedby': 'token-help',
  });
  const status = h('div', { class: 'signin-status', 'aria-live': 'polite' },
    why ? message('error', why) : null);
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h('form', { class: 'signin', novalidate: true },
    h('h1', {}, 'Sign in'),
    h('p', { id: 'token-help' },
      'This service needs a token: one of the lines of its tokens file (',
      h('code', {}, '--auth-tokens'), '). It is kept in this tab only.'),
    h('label', { for: 'token' }, 'Token'), input, button, status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    if (!t) {
      fill(status, message('error', 'Enter a token.'));
      input.focus();
      return;
    }
    button.disabled = true;
    fill(status, message('note', 'Signing in…'));
    setToken(t);
    try {
      await signedIn();
    } catch (e) {
      setToken('');
      fill(status, message('error', e.message));
      button.disabled = false;
      input.select();
      input.focus();
    }
  });
  fill(main, h('div', { class: 'page' }, form));
  input.focus();
}

/** Load the projects (throws the ApiError of a refused token) and show the page. */
async function signedIn() {
  unauthorizedQuiet = true;
  try {
    await refreshProjects();
  } finally {
    unauthorizedQuiet = false;
  }
  signOutBtn.hidden = !getToken();
  route();
}

function signOut() {
  setToken('');
  signInForm('');
}

let unauthorizedQuiet = false;

onUnauthorized((err) => {
  // During a sign-in the form shows the error itself; later, a token that stopped working
  // (removed from the tokens file) brings the form back, saying so in the service's words.
  // The refused token is forgotten, as Sign out does.
  if (!unauthorizedQuiet) {
    setToken('');
    signInForm(`The service refused the token: ${err.message}`);
  }
});

async function start() {
  layout();
  window.addEventListener('hashchange', () => route());
  try {
    await signedIn();
  } catch (e) {
    if (e instanceof ApiError && e.httpStatus === 401) {
      const had = getToken();
      setToken('');
      signInForm(had ? e.message : '');
      return;
    }
    setCrumbs([{ text: 'Error' }]);
    fill(main, h('div', { class: 'page' },
      h('h1', {}, 'The service cannot be reached'), message('error', e.message),
      h('button', { type: 'button', onclick: () => location.reload() }, 'Try again')));
  }
}

start();
