// SPDX-License-Identifier: Apache-2.0
// jobs.js: the Jobs page (#/jobs?project=P&filter=F&pageSize=N&sort=COL&dir=asc|desc).
// One page of a project's jobs at a time, as jobs.list gives them (newest first; the service
// pages them, so a project of 10,000 jobs costs one page), with the filter of
// `trainyard jobs list --filter` (the service's 400 shown under the box), Next/Previous with
// the page tokens, the columns of the page sortable, and a refresh every 5 s while the tab
// is visible that redraws only rows that changed.
import { jobsPath } from './api.js';
import { badge, between, fill, fmtTime, h, links, message, timeEl } from './format.js';

const PAGE_SIZES = [20, 50, 100];
const REFRESH_MS = 5000;

// The sortable columns: a key for each job, compared as strings or numbers.
const COLUMNS = [
  { id: 'jobId', title: 'Job ID', key: (j) => j.jobId || '' },
  { id: 'state', title: 'State', key: (j) => j.state || '' },
  { id: 'created', title: 'Created', key: (j) => j.createTime || '' },
  { id: 'started', title: 'Started', key: (j) => j.startTime || '' },
  { id: 'duration', title: 'Duration', key: (j) => durationMs(j) },
  { id: 'queue', title: 'Queue', key: (j) => (j.state === 'QUEUED' ? Number(j.jobPosition || 0) : Infinity) },
  { id: 'labels', title: 'Labels', key: (j) => labelText(j) },
];

function durationMs(j) {
  if (j.startTime)
    return (j.endTime ? Date.parse(j.endTime) : Date.now()) - Date.parse(j.startTime);
  return -1;
}

function labelText(j) {
  return Object.entries(j.labels || {}).map(([k, v]) => `${k}=${v}`).join(' ');
}

/** Draw the Jobs page into @root; returns the function that stops its refresh. */
export function showJobs(root, ctx) {
  const q = ctx.query;
  const st = {
    project: ctx.project,
    filter: q.get('filter') || '',
    pageSize: PAGE_SIZES.includes(Number(q.get('pageSize'))) ? Number(q.get('pageSize')) : 20,
    sort: COLUMNS.some((c) => c.id === q.get('sort')) ? q.get('sort') : '',
    dir: q.get('dir') === 'desc' ? 'desc' : 'asc',
    auto: q.get('auto') !== 'off',
    tokens: [''],          // the page token of each page visited; the last is the current one
    next: '',
    jobs: [],
    lastJson: '',
    loading: false,
  };
  let timer = null;
  let stopped = false;
  let ctl = null;

  const projectSel = h('select', { id: 'project', onchange: () => ctx.go(links.jobs(projectSel.value, keepParams())) });
  const filterIn = h('input', {
    id: 'filter', type: 'search', value: st.filter, spellcheck: 'false', autocomplete: 'off',
    placeholder: 'state:FAILED AND labels.team=vision', 'aria-describedby': 'filter-help filter-error',
  });
  const filterErr = h('div', { id: 'filter-error', 'aria-live': 'polite' });
  const sizeSel = h('select', { id: 'page-size', onchange: () => { st.pageSize = Number(sizeSel.value); restart(); } },
    PAGE_SIZES.map((n) => h('option', { value: n, selected: n === st.pageSize }, String(n))));
  const autoBox = h('input', { type: 'checkbox', id: 'auto', checked: st.auto, onchange: () => { st.auto = autoBox.checked; saveQuery(); } });
  const updated = h('span', { class: 'muted', 'aria-live': 'off' });
  const listErr = h('div', { 'aria-live': 'polite' });
  const thead = h('thead');
  const tbody = h('tbody');
  const prevBtn = h('button', { type: 'button', onclick: () => { st.tokens.pop(); load(false); } }, '← Previous');
  const nextBtn = h('button', { type: 'button', onclick: () => { st.tokens.push(st.next); load(false); } }, 'Next →');
  const pageNo = h('span', { class: 'muted' });
  const count = h('p', { class: 'muted count' });

  const form = h('form', { class: 'toolbar', role: 'search', onsubmit: (ev) => { ev.preventDefault(); st.filter = filterIn.value.trim(); restart(); } },
    h('div', { class: 'field' }, h('label', { for: 'project' }, 'Project'), projectSel),
    h('div', { class: 'field grow' }, h('label', { for: 'filter' }, 'Filter'),
      h('div', { class: 'inline' }, filterIn, h('button', { type: 'submit' }, 'Apply'))),
  );
  fill(root,
    h('h1', {}, 'Jobs'),
    form,
    h('p', { id: 'filter-help', class: 'help' }, 'As ', h('code', {}, 'trainyard jobs list --filter'), ': ',
      h('code', {}, 'state:RUNNING'), ', ', h('code', {}, 'jobId:census*'), ', ', h('code', {}, 'labels.team=vision'),
      ', ', h('code', {}, 'NOT state:SUCCEEDED'), ', joined with AND / OR.'),
    filterErr,
    h('div', { class: 'toolbar small' },
      h('div', { class: 'field' }, h('label', { for: 'page-size' }, 'Per page'), sizeSel),
      h('div', { class: 'field check' }, autoBox, h('label', { for: 'auto' }, 'Refresh every 5 s')),
      updated),
    listErr,
    count,
    h('div', { class: 'table-wrap' }, h('table', { class: 'jobs' }, thead, tbody)),
    h('nav', { class: 'pager', 'aria-label': 'Pages' }, prevBtn, pageNo, nextBtn));

  function keepParams() {
    const p = {};
    if (st.pageSize !== 20)
      p.pageSize = st.pageSize;
    if (!st.auto)
      p.auto = 'off';
    return p;
  }

  function saveQuery() {
    ctx.setQuery({ project: st.project, filter: st.filter, ...keepParams(), sort: st.sort, dir: st.sort ? st.dir : '' });
  }

  function restart() {
    st.tokens = [''];
    saveQuery();
    load(false);
  }

  function drawProjects(list) {
    const ids = list.map((p) => p.projectId);
    if (st.project && !ids.includes(st.project))
      list = [...list, { projectId: st.project, jobCount: '' }];
    fill(projectSel, list.map((p) => h('option', { value: p.projectId, selected: p.projectId === st.project },
      p.jobCount === '' ? p.projectId : `${p.projectId} (${p.jobCount})`)));
  }

  function drawHead() {
    fill(thead, h('tr', {}, COLUMNS.map((c) => {
      const active = st.sort === c.id;
      const sortState = active ? (st.dir === 'asc' ? 'ascending' : 'descending') : 'none';
      return h('th', { scope: 'col', 'aria-sort': sortState },
        h('button', {
          type: 'button', class: 'sort', dataset: { col: c.id },
          title: `Sort this page by ${c.title.toLowerCase()}`,
          onclick: () => {
            if (st.sort === c.id && st.dir === 'desc') {
              st.sort = ''; // third click: back to the service's order
            } else {
              st.dir = st.sort === c.id ? 'desc' : 'asc';
              st.sort = c.id;
            }
            saveQuery();
            drawHead();
            drawRows(true);
            thead.querySelector(`button[data-col="${c.id}"]`).focus();
          },
        }, c.title, h('span', { class: 'arrow', 'aria-hidden': 'true' }, active ? (st.dir === 'asc' ? ' ▲' : ' ▼') : '')));
    })));
  }

  function sorted() {
    if (!st.sort)
      return st.jobs;
    const col = COLUMNS.find((c) => c.id === st.sort);
    const sign = st.dir === 'asc' ? 1 : -1;
    return [...st.jobs].sort((a, b) => {
      const x = col.key(a);
      const y = col.key(b);
      const c = typeof x === 'number' ? (x === y ? 0 : x < y ? -1 : 1) : String(x).localeCompare(String(y));
      return c * sign;
    });
  }

  function row(j) {
    const queue = j.state === 'QUEUED'
      ? [h('span', { class: 'pos' }, Number(j.jobPosition) > 0 ? `#${j.jobPosition}` : 'starting'),
        j.stateReason ? h('span', { class: 'reason' }, ` ${j.stateReason}`) : null]
      : '';
    const started = j.startTime ? between(j.startTime, j.endTime) : '';
    return h('tr', { dataset: { job: j.jobId } },
      h('td', { class: 'id' }, h('a', { href: links.job(st.project, j.jobId) }, j.jobId)),
      h('td', { title: j.errorMessage || null }, badge(j.state)),
      h('td', { class: 'nowrap' }, timeEl(j.createTime)),
      h('td', { class: 'nowrap' }, timeEl(j.startTime)),
      h('td', { class: 'nowrap' }, started),
      h('td', { class: 'queue' }, queue),
      h('td', { class: 'labels' }, Object.entries(j.labels || {}).map(([k, v]) => h('span', { class: 'chip' }, `${k}=${v}`))));
  }

  /** Redraw the rows; keeps the focused link focused (a refresh must not move the user). */
  function drawRows() {
    const focused = document.activeElement && tbody.contains(document.activeElement)
      ? document.activeElement.closest('tr')?.dataset.job : null;
    const rows = sorted().map(row);
    if (!rows.length)
      rows.push(h('tr', {}, h('td', { colspan: COLUMNS.length, class: 'empty' },
        st.filter ? 'No job matches this filter.' : 'No jobs in this project yet.')));
    fill(tbody, rows);
    if (focused)
      tbody.querySelector(`tr[data-job="${CSS.escape(focused)}"] a`)?.focus();
    prevBtn.disabled = st.tokens.length <= 1;
    nextBtn.disabled = !st.next;
    pageNo.textContent = `Page ${st.tokens.length}`;
    const first = (st.tokens.length - 1) * st.pageSize;
    count.textContent = st.jobs.length
      ? `Jobs ${first + 1}–${first + st.jobs.length}${st.next ? '' : ' (the last page)'}, newest first${st.sort ? '; this page sorted by ' + COLUMNS.find((c) => c.id === st.sort).title.toLowerCase() : ''}.`
      : '';
  }

  async function load(quiet) {
    if (!st.project || stopped)
      return;
    if (ctl)
      ctl.abort();
    ctl = new AbortController();
    const my = ctl;
    const params = new URLSearchParams({ pageSize: String(st.pageSize) });
    if (st.filter)
      params.set('filter', st.filter);
    const tok = st.tokens[st.tokens.length - 1];
    if (tok)
      params.set('pageToken', tok);
    if (!quiet)
      root.classList.add('busy');
    try {
      const r = await ctx.api.get(`${jobsPath(st.project)}?${params}`, { signal: my.signal });
      if (my !== ctl || stopped)
        return;
      fill(filterErr);
      fill(listErr);
      const text = JSON.stringify(r);
      st.next = r.nextPageToken || '';
      // Running jobs' durations grow: their rows are redrawn even when nothing else changed.
      const running = (r.jobs || []).some((j) => j.startTime && !j.endTime);
      if (text !== st.lastJson || !quiet || running) {
        st.lastJson = text;
        st.jobs = r.jobs || [];
        drawRows();
      }
      updated.textContent = `Updated ${fmtTime(new Date().toISOString())}`;
    } catch (e) {
      if (e.name === 'AbortError' || my !== ctl || stopped)
        return;
      if (e.httpStatus === 400 && st.filter) {
        fill(filterErr, message('error', e.message));
        st.jobs = [];
        st.next = '';
        st.lastJson = '';
        drawRows();
      } else {
        fill(listErr, message('error', e.message));
      }
    } finally {
      if (my === ctl)
        root.classList.remove('busy');
    }
  }

  function tick() {
    if (st.auto && document.visibilityState === 'visible')
      load(true);
  }

  async function startPage() {
    ctx.setCrumbs([{ text: 'Jobs', href: links.jobs(st.project) }, ...(st.project ? [{ text: st.project }] : [])]);
    drawHead();
    drawProjects(ctx.projects);
    try {
      ctx.projects = await ctx.refreshProjects();
      drawProjects(ctx.projects);
    } catch (e) {
      if (!stopped)
        fill(listErr, message('error', e.message));
    }
    if (stopped)
      return;
    if (!st.project) {
      if (!ctx.projects.length) {
        fill(listErr, message('note', 'No project has jobs yet, or this token grants none. Jobs created with `trainyard jobs submit training` (or the API) appear here.'));
        fill(tbody);
        prevBtn.disabled = nextBtn.disabled = true;
        return;
      }
      st.project = ctx.projects[0].projectId;
      drawProjects(ctx.projects);
      ctx.setCrumbs([{ text: 'Jobs', href: links.jobs(st.project) }, { text: st.project }]);
    }
    saveQuery();
    await load(false);
    timer = setInterval(tick, REFRESH_MS);
  }

  const onVisible = () => tick();
  document.addEventListener('visibilitychange', onVisible);
  startPage();
  return () => {
    stopped = true;
    clearInterval(timer);
    document.removeEventListener('visibilitychange', onVisible);
    if (ctl)
      ctl.abort();
  };
}
