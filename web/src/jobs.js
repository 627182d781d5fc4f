// SPDX-License-Identifier: Apache-2.0
// jobs.js: the Jobs page (#/jobs?project=P&filter=F&pageSize=N&sort=COL&dir=asc|desc&page=T...).
// One page of a project's jobs at a time, as jobs.list gives them (newest first; the service
// pages them, so a project of 10,000 jobs costs one page), with the filter of
// `trainyard jobs list --filter` (the service's 400 shown under the box), Next/Previous with
// the page tokens (kept in the address as page=TOKEN..., so Back and reload return to the
// page), the columns of the page sortable, and a refresh every 5 s while the tab
// is visible that updates the rows in place, only the cells that changed.
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

/** @jobs sorted by the column @sort (an id of COLUMNS; '' keeps the service's order). */
function sortJobs(jobs, sort, dir) {
  const col = COLUMNS.find((c) => c.id === sort);
  if (!col)
    return jobs;
  const sign = dir === 'asc' ? 1 : -1;
  return [...jobs].sort((a, b) => {
    const x = col.key(a);
    const y = col.key(b);
    const c = typeof x === 'number' ? (x === y ? 0 : x < y ? -1 : 1) : String(x).localeCompare(String(y));
    return c * sign;
  });
}

/** The table row of job @j of @project. */
function jobRow(project, j) {
  const queue = j.state === 'QUEUED'
    ? h('span', {}, h('span', { class: 'pos' }, Number(j.jobPosition) > 0 ? `#${j.jobPosition}` : 'starting'),
      j.stateReason ? h('span', { class: 'reason' }, ` ${j.stateReason}`) : null)
    : '';
  const labels = Object.entries(j.labels || {});
  // data-label: the column's title, shown beside the value where rows become cards (narrow).
  return h('tr', { dataset: { job: j.jobId } },
    h('td', { class: 'id', dataset: { label: 'Job ID' } }, h('a', { href: links.job(project, j.jobId) }, j.jobId)),
    h('td', { title: j.errorMessage || null, dataset: { label: 'State' } }, badge(j.state)),
    h('td', { class: 'nowrap', dataset: { label: 'Created' } }, timeEl(j.createTime)),
    h('td', { class: 'nowrap', dataset: { label: 'Started' } }, timeEl(j.startTime)),
    h('td', { class: 'nowrap', dataset: { label: 'Duration' } }, j.startTime ? between(j.startTime, j.endTime) : ''),
    h('td', { class: 'queue', dataset: { label: 'Queue' } }, queue),
    h('td', { class: 'labels', dataset: { label: 'Labels' } },
      labels.length ? h('span', {}, labels.map(([k, v]) => h('span', { class: 'chip' }, `${k}=${v}`))) : ''));
}

/** @fresh's content in @row (the same job's row as drawn before): each cell that differs is
 *  replaced; the others, and the row itself, stay. Returns the row to show (@fresh if none). */
function updateRow(row, fresh) {
  if (!row)
    return fresh;
  const cells = [...fresh.cells];
  cells.forEach((td, i) => {
    if (!row.cells[i].isEqualNode(td))
      row.cells[i].replaceWith(td);
  });
  return row;
}

/** Make @rows the children of @tbody in that order, moving a row only when it is not in its
 *  place (a node moved loses the focus), and removing the others. */
function placeRows(tbody, rows) {
  const keep = new Set(rows);
  for (const tr of [...tbody.rows])
    if (!keep.has(tr))
      tr.remove();
  rows.forEach((tr, i) => {
    if (tbody.rows[i] !== tr)
      tbody.insertBefore(tr, tbody.rows[i] || null);
  });
}

/** The Jobs page: its state, its elements, and what it does. */
class JobsPage {
  constructor(root, ctx) {
    const q = ctx.query;
    this.root = root;
    this.ctx = ctx;
    this.project = ctx.project;
    this.filter = q.get('filter') || '';
    this.pageSize = PAGE_SIZES.includes(Number(q.get('pageSize'))) ? Number(q.get('pageSize')) : 20;
    this.sort = COLUMNS.some((c) => c.id === q.get('sort')) ? q.get('sort') : '';
    this.dir = q.get('dir') === 'desc' ? 'desc' : 'asc';
    this.auto = q.get('auto') !== 'off';
    // the page token of each page up to the one shown ('' for the first); the last is its own
    this.tokens = ['', ...q.getAll('page').filter(Boolean)];
    this.next = '';
    this.shown = false;  // a page has been read: Previous/Next stay disabled until then
    this.paging = false; // a page asked for by the user is being read
    this.refused = false; // the service refused the filter: no rows, and no "no job matches"
    this.jobs = [];
    this.lastJson = '';
    this.timer = null;
    this.stopped = false;
    this.ctl = null;
    this.onVisible = () => this.tick();
    this.layout();
  }

  layout() {
    const e = (this.el = {});
    e.project = h('select', { id: 'project', onchange: () => this.ctx.go(links.jobs(e.project.value, this.keepParams())) });
    e.filter = h('input', {
      id: 'filter', type: 'search', value: this.filter, spellcheck: 'false', autocomplete: 'off',
      placeholder: 'state:FAILED AND labels.team=vision', 'aria-describedby': 'filter-help filter-error',
    });
    e.filterErr = h('div', { id: 'filter-error', 'aria-live': 'polite' });
    e.size = h('select', { id: 'page-size', onchange: () => { this.pageSize = Number(e.size.value); this.restart(); } },
      PAGE_SIZES.map((n) => h('option', { value: n, selected: n === this.pageSize }, String(n))));
    e.auto = h('input', { type: 'checkbox', id: 'auto', checked: this.auto, onchange: () => { this.auto = e.auto.checked; this.saveQuery(); } });
    e.updated = h('span', { class: 'muted', 'aria-live': 'off' });
    e.listErr = h('div', { 'aria-live': 'polite' });
    e.thead = h('thead');
    e.tbody = h('tbody');
    e.prev = h('button', { type: 'button', disabled: true, onclick: () => this.load(false, this.tokens.slice(0, -1)) }, '← Previous');
    e.next = h('button', { type: 'button', disabled: true, onclick: () => this.load(false, [...this.tokens, this.next]) }, 'Next →');
    e.pageNo = h('span', { class: 'muted' });
    e.count = h('p', { class: 'muted count' });
    const submit = (ev) => {
      ev.preventDefault();
      this.filter = e.filter.value.trim();
      this.restart();
    };
    const code = (t) => h('code', {}, t);
    fill(this.root,
      h('h1', {}, 'Jobs'),
      h('form', { class: 'toolbar', role: 'search', onsubmit: submit },
        h('div', { class: 'field' }, h('label', { for: 'project' }, 'Project'), e.project),
        h('div', { class: 'field grow' }, h('label', { for: 'filter' }, 'Filter'),
          h('div', { class: 'inline' }, e.filter, h('button', { type: 'submit' }, 'Apply')))),
      h('p', { id: 'filter-help', class: 'help' }, 'As ', code('trainyard jobs list --filter'), ': ',
        code('state:RUNNING'), ', ', code('jobId:census*'), ', ', code('labels.team=vision'), ', ',
        code('NOT state:SUCCEEDED'), ', joined with AND / OR.'),
      e.filterErr,
      h('div', { class: 'toolbar small' },
        h('div', { class: 'field' }, h('label', { for: 'page-size' }, 'Per page'), e.size),
        h('div', { class: 'field check' }, e.auto, h('label', { for: 'auto' }, 'Refresh every 5 s')),
        e.updated),
      e.listErr,
      e.count,
      h('div', { class: 'table-wrap' }, h('table', { class: 'jobs cards' }, e.thead, e.tbody)),
      h('nav', { class: 'pager', 'aria-label': 'Pages' }, e.prev, e.pageNo, e.next));
  }

  /** The settings that survive a change of project. */
  keepParams() {
    const p = {};
    if (this.pageSize !== 20)
      p.pageSize = this.pageSize;
    if (!this.auto)
      p.auto = 'off';
    return p;
  }

  saveQuery() {
    this.ctx.setQuery({
      project: this.project, filter: this.filter, ...this.keepParams(), sort: this.sort, dir: this.sort ? this.dir : '',
      page: this.tokens.slice(1),
    });
  }

  restart() {
    this.tokens = [''];
    this.saveQuery();
    this.load(false);
  }

  /** The project selector: the projects of @list with their job counts. When they are the
   *  projects shown already, only the texts that changed are set (the selector stays open). */
  drawProjects(list) {
    if (this.project && !list.some((p) => p.projectId === this.project))
      list = [...list, { projectId: this.project, jobCount: '' }];
    const text = (p) => (p.jobCount === '' ? p.projectId : `${p.projectId} (${p.jobCount})`);
    const opts = [...this.el.project.options];
    if (opts.length === list.length && opts.every((o, i) => o.value === list[i].projectId)) {
      opts.forEach((o, i) => {
        if (o.textContent !== text(list[i]))
          o.textContent = text(list[i]);
      });
      return;
    }
    fill(this.el.project, list.map((p) => h('option', { value: p.projectId, selected: p.projectId === this.project }, text(p))));
  }

  /** Read the projects' job counts again, with each refresh of the list (jobs are made and
   *  deleted meanwhile). A failure is left to the list's own read to report. */
  async refreshCounts() {
    try {
      const list = await this.ctx.refreshProjects();
      if (!this.stopped) {
        this.ctx.projects = list;
        this.drawProjects(list);
      }
    } catch {
      // the list's read says what is wrong
    }
  }

  /** Sort by column @id: ascending, then descending, then the service's order again. */
  sortBy(id) {
    if (this.sort === id && this.dir === 'desc') {
      this.sort = '';
    } else {
      this.dir = this.sort === id ? 'desc' : 'asc';
      this.sort = id;
    }
    this.saveQuery();
    this.drawHead();
    this.drawRows();
    this.el.thead.querySelector(`button[data-col="${id}"]`).focus();
  }

  drawHead() {
    fill(this.el.thead, h('tr', {}, COLUMNS.map((c) => {
      const active = this.sort === c.id;
      const arrow = active ? (this.dir === 'asc' ? ' ▲' : ' ▼') : '';
      return h('th', { scope: 'col', 'aria-sort': active ? (this.dir === 'asc' ? 'ascending' : 'descending') : 'none' },
        h('button', {
          type: 'button', class: 'sort', dataset: { col: c.id },
          title: `Sort this page by ${c.title.toLowerCase()}`, onclick: () => this.sortBy(c.id),
        }, c.title, h('span', { class: 'arrow', 'aria-hidden': 'true' }, arrow)));
    })));
  }

  /** Show the rows of the page's jobs, in order. A job's row is kept and only its cells that
   *  changed are replaced (keyed by job id), so that a refresh leaves a text selection, the
   *  focus and the pointer's hover where they were; rows are moved only when the order changed. */
  drawRows() {
    const { tbody, pageNo, count } = this.el;
    const active = document.activeElement;
    const focused = active && tbody.contains(active) ? active.closest('tr')?.dataset.job : null;
    const jobs = sortJobs(this.jobs, this.sort, this.dir);
    const old = new Map([...tbody.rows].filter((tr) => tr.dataset.job !== undefined).map((tr) => [tr.dataset.job, tr]));
    const rows = jobs.map((j) => updateRow(old.get(j.jobId), jobRow(this.project, j)));
    if (!rows.length && !this.refused)
      rows.push(h('tr', {}, h('td', { colspan: COLUMNS.length, class: 'empty' },
        this.filter ? 'No job matches this filter.' : 'No jobs in this project yet.')));
    placeRows(tbody, rows);
    // A row moved (the order changed) lost the focus: back to the same job's link.
    if (focused && !tbody.contains(document.activeElement))
      tbody.querySelector(`tr[data-job="${CSS.escape(focused)}"] a`)?.focus();
    this.drawPager();
    pageNo.textContent = `Page ${this.tokens.length}`;
    const first = (this.tokens.length - 1) * this.pageSize;
    const sorted = this.sort ? `; this page sorted by ${COLUMNS.find((c) => c.id === this.sort).title.toLowerCase()}` : '';
    count.textContent = this.jobs.length
      ? `Jobs ${first + 1}–${first + this.jobs.length}${this.next ? '' : ' (the last page)'}, newest first${sorted}.`
      : '';
  }

  /** Previous and Next: enabled only for a page read, and not while another is being read. */
  drawPager() {
    const { prev, next } = this.el;
    prev.disabled = !this.shown || this.paging || this.tokens.length <= 1;
    next.disabled = !this.shown || this.paging || !this.next;
  }

  /** Read a page of jobs: the page of @tokens (the page tokens up to it; by default the page
   *  shown), which becomes the page shown once it is read. @quiet: a refresh, which redraws
   *  only what changed, and leaves alone a page being read for the user. */
  async load(quiet, tokens = this.tokens) {
    if (!this.project || this.stopped || (quiet && this.paging))
      return;
    if (this.ctl)
      this.ctl.abort();
    const my = (this.ctl = new AbortController());
    const params = new URLSearchParams({ pageSize: String(this.pageSize) });
    if (this.filter)
      params.set('filter', this.filter);
    const tok = tokens[tokens.length - 1];
    if (tok)
      params.set('pageToken', tok);
    if (!quiet) {
      this.root.classList.add('busy');
      this.paging = true;
      this.drawPager();
    }
    try {
      const r = await this.ctx.api.get(`${jobsPath(this.project)}?${params}`, { signal: my.signal });
      if (my === this.ctl && !this.stopped) {
        this.paging = false;
        if (tokens !== this.tokens) {
          this.tokens = tokens;
          this.saveQuery();
        }
        this.loaded(r, quiet);
      }
    } catch (e) {
      if (e.name !== 'AbortError' && my === this.ctl && !this.stopped) {
        this.paging = false;
        this.failed(e, tokens);
      }
    } finally {
      if (my === this.ctl) {
        this.root.classList.remove('busy');
        this.paging = false;
      }
    }
  }

  loaded(r, quiet) {
    fill(this.el.filterErr);
    fill(this.el.listErr);
    const text = JSON.stringify(r);
    this.next = r.nextPageToken || '';
    this.shown = true;
    this.refused = false;
    // Running jobs' durations grow: their rows are redrawn even when nothing else changed.
    const running = (r.jobs || []).some((j) => j.startTime && !j.endTime);
    if (text !== this.lastJson || !quiet || running) {
      this.lastJson = text;
      this.jobs = r.jobs || [];
      this.drawRows();
    }
    this.el.updated.textContent = `Updated ${fmtTime(new Date().toISOString())}`;
  }

  /** The read of page @tokens failed: the page shown stays (a refused filter empties it). */
  failed(e, tokens) {
    if (e.httpStatus === 400 && tokens.length > 1 && !this.shown) {
      // The address's page token is one the service refuses (made for another filter, or
      // by an older service): the first page instead, saying so.
      this.tokens = [''];
      this.saveQuery();
      this.load(false).then(() => {
        if (this.shown)
          fill(this.el.listErr, message('note', `The page of this address cannot be read (${e.message}): this is the first page.`));
      });
    } else if (e.httpStatus === 400 && this.filter) {
      fill(this.el.filterErr, message('error', e.message));
      this.jobs = [];
      this.next = '';
      this.lastJson = '';
      this.refused = true;
      this.drawRows();
    } else {
      fill(this.el.listErr, message('error', e.message));
      this.drawPager();
    }
  }

  tick() {
    if (!this.auto || document.visibilityState !== 'visible')
      return;
    if (!this.project) {
      this.awaitProjects();
      return;
    }
    this.load(true);
    this.refreshCounts();
  }

  /** With no project to show yet: read the projects again, and show the first once one has
   *  jobs (the empty page's note says they appear here). */
  async awaitProjects() {
    await this.refreshCounts();
    if (this.stopped || this.project || !this.ctx.projects.length)
      return;
    this.project = this.ctx.projects[0].projectId;
    this.drawProjects(this.ctx.projects);
    this.setCrumbs();
    this.saveQuery();
    fill(this.el.listErr);
    await this.load(false);
  }

  /** The refresh every REFRESH_MS, and at once when the tab is shown again. */
  startRefresh() {
    this.timer = setInterval(() => this.tick(), REFRESH_MS);
    document.addEventListener('visibilitychange', this.onVisible);
  }

  setCrumbs() {
    this.ctx.setCrumbs([{ text: 'Jobs', href: links.jobs(this.project) }, ...(this.project ? [{ text: this.project }] : [])]);
  }

  async start() {
    const ctx = this.ctx;
    this.setCrumbs();
    this.drawHead();
    this.drawProjects(ctx.projects);
    try {
      ctx.projects = await ctx.refreshProjects();
      this.drawProjects(ctx.projects);
    } catch (e) {
      if (!this.stopped)
        fill(this.el.listErr, message('error', e.message));
    }
    if (this.stopped)
      return;
    if (!this.project) {
      if (!ctx.projects.length) {
        fill(this.el.listErr, message('note', 'No project has jobs yet, or this token grants none. Jobs created with `trainyard jobs submit training` (or the API) appear here.'));
        this.el.prev.disabled = this.el.next.disabled = true;
        this.startRefresh();
        return;
      }
      this.project = ctx.projects[0].projectId;
      this.drawProjects(ctx.projects);
      this.setCrumbs();
    }
    this.saveQuery();
    await this.load(false);
    if (!this.stopped)
      this.startRefresh();
  }

  stop() {
    this.stopped = true;
    clearInterval(this.timer);
    document.removeEventListener('visibilitychange', this.onVisible);
    if (this.ctl)
      this.ctl.abort();
  }
}

/** Draw the Jobs page into @root; returns the function that stops its refresh. */
export function showJobs(root, ctx) {
  const page = new JobsPage(root, ctx);
  page.start();
  return () => page.stop();
}
