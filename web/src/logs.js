// SPDX-License-Identifier: Apache-2.0
// logs.js: the Logs page (#/projects/P/jobs/J/logs?task=T&severity=S&q=TEXT&trial=N&end=1).
// It reads the job's log in pages of 1000 (one task, through the API's taskName, or all; an
// ended job's to the page that says logComplete), then, while the job runs, follows it:
// logs?follow=true&positions=true from the last page's token, read as it arrives, the
// stream's position lines moving the token on. A broken connection is picked up again from the last token, skipping
// the entries already shown after it, so nothing is lost or repeated. Severity, text search
// (highlighted) and a tuning job's trial are filters in the page. At most the last 20,000
// lines are kept.
import { jobPath, readStream } from './api.js';
import { FINAL_STATES, fill, fmtTimeMs, h, isTuning, links, message } from './format.js';
import { jobHeader } from './job.js';

const MAX_LINES = 20000;
const PAGE = 1000;
const CHUNK = 200;
const POLL_MS = 2000; // how often the job is read while its log is followed
const SEVERITIES = ['DEFAULT', 'DEBUG', 'INFO', 'NOTICE', 'WARNING', 'ERROR', 'CRITICAL', 'ALERT', 'EMERGENCY'];
const sevRank = (s) => Math.max(0, SEVERITIES.indexOf(s || 'DEFAULT'));
const entryKey = (e) => `${e.timestamp}\u0000${e.taskName}\u0000${e.trialId || ''}\u0000${e.message}`;
const esc = (t) => t.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));

/** The entries of @list not shown yet: those that @skip counts (shown before, read again)
 *  are dropped, one for each count; the others are counted in @shown and returned. */
function unshown(list, skip, shown) {
  return list.filter((e) => {
    const k = entryKey(e);
    const n = skip.get(k) || 0;
    if (n) {
      if (n > 1)
        skip.set(k, n - 1);
      else
        skip.delete(k);
      return false;
    }
    shown.set(k, (shown.get(k) || 0) + 1);
    return true;
  });
}

/** @text escaped, with each match of @search (case-insensitive) marked. */
function highlighted(text, search) {
  if (!search)
    return esc(text);
  // found in the text itself, ignoring case: lower-casing first can change a string's length
  // ("İ" becomes two characters), which put every later mark beside its match
  const re = new RegExp(search.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'giu');
  let out = '';
  let at = 0;
  for (const m of text.matchAll(re)) {
    if (!m[0]) break;
    out += `${esc(text.slice(at, m.index))}<mark>${esc(m[0])}</mark>`;
    at = m.index + m[0].length;
  }
  return out + esc(text.slice(at));
}

/** One log entry as the HTML of its line (everything from the service escaped). */
function lineHtml(e, search) {
  const sev = SEVERITIES.includes(e.severity) ? e.severity : 'DEFAULT';
  return `<div class="ln sev-${sev.toLowerCase()}"><span class="t">${esc(fmtTimeMs(e.timestamp))}</span> ` +
    `<span class="sev">${sev}</span> <span class="task">${esc(e.taskName || '')}</span>` +
    (e.trialId ? `<span class="trial"> trial ${esc(String(e.trialId))}</span>` : '') +
    (e.labels && e.labels.attempt ? `<span class="attempt"> [attempt ${esc(String(e.labels.attempt))}]</span>` : '') +
    ` <span class="text">${highlighted(e.message || '', search)}</span></div>`;
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

/** The lines kept (the last MAX_LINES) and the box that shows those the filters let through.
 *  Lines are drawn as HTML text in blocks of CHUNK; the browser lays out only the blocks in
 *  view (content-visibility in app.css), so 20,000 lines cost little. */
class LogView {
  constructor(onCounts) {
    this.box = h('div', { class: 'logbox', role: 'log', tabindex: '0', 'aria-label': 'Log lines' });
    this.entries = [];
    this.dropped = 0;  // entries let go to keep MAX_LINES
    this.shown = 0;    // lines in the box
    this.pending = []; // entries kept, not yet drawn
    this.timer = null;
    this.filters = { severity: '', trial: '', search: '' };
    this.stick = false; // keep the view at the end as lines arrive
    this.onCounts = onCounts;
    // A block's height is known only once the browser lays it out (content-visibility: when
    // near the view), so the end of the box moves as blocks are drawn: whenever one changes
    // size, the view goes to the end again while it sticks there.
    this.sizes = new ResizeObserver(() => {
      if (this.stick)
        this.box.scrollTop = this.box.scrollHeight;
    });
    this.box.addEventListener('scroll', () => {
      const b = this.box;
      this.stick = b.scrollTop + b.clientHeight >= b.scrollHeight - 8;
    });
  }

  visible(e) {
    const f = this.filters;
    return (!f.severity || sevRank(e.severity) >= sevRank(f.severity)) &&
      (!f.trial || String(e.trialId || '') === f.trial) &&
      (!f.search || (e.message || '').toLowerCase().includes(f.search.toLowerCase()));
  }

  clear() {
    clearTimeout(this.timer);
    this.timer = null;
    this.entries = [];
    this.pending = [];
    this.dropped = 0;
    this.shown = 0;
    this.sizes.disconnect();
    this.box.replaceChildren();
  }

  /** Keep @list (entries in order); draw them soon unless @later (then redraw() does). */
  add(list, later) {
    this.entries.push(...list);
    if (this.entries.length > MAX_LINES) {
      const cut = this.entries.length - MAX_LINES;
      this.dropped += cut;
      this.entries.splice(0, cut);
    }
    if (later)
      return;
    this.pending.push(...list);
    if (!this.timer)
      this.timer = setTimeout(() => this.drawPending(), 60); // pieces of a stream drawn together
  }

  drawPending() {
    this.timer = null;
    const stick = this.stick;
    const shown = this.shown;
    this.append(this.pending);
    this.pending = [];
    // "No line matches" stays until a line that matches is drawn
    if (this.shown !== shown)
      this.box.querySelector('.empty')?.remove();
    else
      this.noMatch();
    this.onCounts();
    if (stick)
      this.toEnd();
  }

  /** Append the visible ones of @list, filling the last block first; then drop the oldest
   *  lines over MAX_LINES. */
  append(list) {
    const box = this.box;
    let last = box.lastElementChild && box.lastElementChild.classList.contains('chunk') ? box.lastElementChild : null;
    let room = last ? CHUNK - Number(last.dataset.n) : 0;
    let html = [];
    const flush = () => {
      if (html.length) {
        last.insertAdjacentHTML('beforeend', html.join(''));
        last.dataset.n = String(Number(last.dataset.n) + html.length);
        this.shown += html.length;
        html = [];
      }
    };
    for (const e of list) {
      if (!this.visible(e))
        continue;
      if (room === 0) {
        flush();
        last = box.appendChild(h('div', { class: 'chunk', dataset: { n: '0' } }));
        this.sizes.observe(last);
        room = CHUNK;
      }
      html.push(lineHtml(e, this.filters.search));
      room--;
    }
    flush();
    while (this.shown > MAX_LINES) {
      const first = box.firstElementChild;
      const n = Number(first.dataset.n);
      const over = this.shown - MAX_LINES;
      if (n <= over) {
        this.sizes.unobserve(first);
        first.remove();
        this.shown -= n;
      } else {
        for (let k = over; k > 0; k--)
          first.firstElementChild.remove();
        first.dataset.n = String(n - over);
        this.shown = MAX_LINES;
      }
    }
  }

  /** Draw every kept line again (the filters changed, or the first pages were read). */
  redraw() {
    clearTimeout(this.timer);
    this.timer = null;
    this.pending = [];
    this.sizes.disconnect();
    this.box.replaceChildren();
    this.shown = 0;
    this.append(this.entries);
    this.noMatch();
    this.onCounts();
    if (this.stick)
      this.toEnd();
  }

  /** Say so when lines are kept but the filters let none through. */
  noMatch() {
    if (!this.shown && this.entries.length && !this.box.querySelector('.empty'))
      this.box.append(h('p', { class: 'muted empty' }, 'No line matches these filters.'));
  }

  /** Show the last line. The blocks brought into view are laid out only then, at their real
   *  heights (long lines wrap): the size observer follows them to the real end. */
  toEnd() {
    this.box.scrollTop = this.box.scrollHeight;
  }

  countText() {
    const n = this.entries.length;
    return `${n} lines${this.shown !== n ? `, ${this.shown} shown` : ''}` +
      (this.dropped ? ` (the ${this.dropped} earlier lines are not kept: only the last ${MAX_LINES} are)` : '') + '.';
  }
}

/** The Logs page: the controls, the reading and following of the log. */
class LogsPage {
  constructor(root, ctx) {
    const q = ctx.query;
    this.ctx = ctx;
    this.task = q.get('task') || '';
    this.tasks = new Set();
    this.trials = new Set();
    this.job = null;
    this.loading = false; // reading the first pages
    this.first = true;    // the first load of the page (not a change of task)
    this.stopped = false;
    this.ctl = null;      // aborts the reading of the current task's log
    this.view = new LogView(() => { this.el.counts.textContent = this.view.countText(); });
    Object.assign(this.view.filters, {
      severity: SEVERITIES.includes(q.get('severity')) ? q.get('severity') : '',
      search: q.get('q') || '',
      trial: q.get('trial') || '',
    });
    this.view.stick = q.get('end') === '1';
    this.layout(root);
  }

  layout(root) {
    const e = (this.el = {});
    const f = this.view.filters;
    const refilter = () => { this.save(); this.view.redraw(); };
    e.head = h('div');
    e.task = h('select', { id: 'task', onchange: () => { this.task = e.task.value; this.save(); this.reload(); } });
    e.sev = h('select', { id: 'severity', onchange: () => { f.severity = e.sev.value; refilter(); } },
      h('option', { value: '' }, 'All'),
      ['INFO', 'WARNING', 'ERROR'].map((s) => h('option', { value: s, selected: s === f.severity }, `${s} and worse`)));
    e.search = h('input', { id: 'search', type: 'search', value: f.search, placeholder: 'text in the message', spellcheck: 'false', autocomplete: 'off' });
    e.search.addEventListener('input', () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => { f.search = e.search.value; refilter(); }, 150);
    });
    e.trial = h('select', { id: 'trial', onchange: () => { f.trial = e.trial.value; refilter(); } });
    e.trialField = h('div', { class: 'field', hidden: true }, h('label', { for: 'trial' }, 'Trial'), e.trial);
    e.live = h('span', { class: 'live', 'aria-live': 'polite' });
    const toEnd = () => { this.view.stick = true; this.view.toEnd(); this.view.box.focus({ preventScroll: true }); };
    e.counts = h('p', { class: 'muted count', 'aria-live': 'off' });
    e.note = h('div', { 'aria-live': 'polite' });
    fill(root, e.head,
      h('form', { class: 'toolbar', role: 'search', onsubmit: (ev) => ev.preventDefault() },
        h('div', { class: 'field' }, h('label', { for: 'task' }, 'Task'), e.task),
        h('div', { class: 'field' }, h('label', { for: 'severity' }, 'Severity'), e.sev),
        e.trialField,
        h('div', { class: 'field grow' }, h('label', { for: 'search' }, 'Search'), e.search),
        h('div', { class: 'field end' }, h('button', { type: 'button', onclick: toEnd }, 'Jump to end'), e.live)),
      e.note, e.counts, this.view.box);
  }

  save() {
    const f = this.view.filters;
    this.ctx.setQuery({ task: this.task, severity: f.severity, q: f.search, trial: f.trial });
  }

  setLive(text, cls) {
    this.el.live.textContent = text;
    this.el.live.className = `live ${cls || ''}`.trim();
  }

  drawTasks() {
    const names = [...this.tasks].sort();
    if (this.task && !this.tasks.has(this.task))
      names.unshift(this.task);
    fill(this.el.task, h('option', { value: '' }, 'All tasks'),
      names.map((n) => h('option', { value: n, selected: n === this.task }, n)));
  }

  drawTrials() {
    const trial = this.view.filters.trial;
    this.el.trialField.hidden = !(isTuning(this.job) || this.trials.size || trial);
    const ids = [...this.trials].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
    if (trial && !this.trials.has(trial))
      ids.unshift(trial);
    fill(this.el.trial, h('option', { value: '' }, 'All trials'),
      ids.map((t) => h('option', { value: t, selected: t === trial }, `Trial ${t}`)));
  }

  /** Note the task names and trials of the job's replicas (the selectors list them). */
  learnJob(job) {
    const as = job.attemptStatus || {};
    for (const r of as.replicas || [])
      this.tasks.add(r.taskName);
    for (const name of Object.keys(as.replicaRestarts || {}))
      this.tasks.add(name);
    for (const t of (job.trainingOutput && job.trainingOutput.trials) || []) {
      this.trials.add(String(t.trialId));
      for (const r of (t.attemptStatus && t.attemptStatus.replicas) || [])
        this.tasks.add(r.taskName);
    }
  }

  /** Keep entries read or streamed; new task names and trials join the selectors. */
  add(list) {
    if (this.stopped)
      return;
    const tasks = this.tasks.size;
    const trials = this.trials.size;
    for (const e of list) {
      if (e.taskName)
        this.tasks.add(e.taskName);
      if (e.trialId)
        this.trials.add(String(e.trialId));
    }
    if (this.tasks.size !== tasks)
      this.drawTasks();
    if (this.trials.size !== trials)
      this.drawTrials();
    // The first pages are drawn once, at the end: no drawing of lines that are then cut.
    this.view.add(list, this.loading);
    if (this.loading)
      this.setLive(`Loading… ${this.view.entries.length + this.view.dropped} lines`);
  }

  logsUrl(params) {
    const p = new URLSearchParams(params);
    if (this.task)
      p.set('taskName', this.task);
    return `${jobPath(this.ctx.project, this.ctx.jobId, '/logs')}?${p}`;
  }

  /** Read the pages after @at.token and show their entries, less those @at.shown counts
   *  (shown before, after that token). @at moves on page by page, so that if a read fails it
   *  still says where the reading stands and what was shown after it. Reads to the end of the
   *  log when @toEnd (the job has ended: the page of its last entries says logComplete),
   *  else until a page shorter than asked (a page may also end at about 1 MiB: the
   *  stream followed from the token then sends the rest). */
  async readPages(at, signal, toEnd) {
    for (;;) {
      const r = await this.ctx.api.get(this.logsUrl({ pageSize: PAGE, ...(at.token ? { pageToken: at.token } : {}) }), { signal });
      const fresh = new Map();
      // Entries of this page met in at.shown are not shown again; they come off it only if
      // the page's token moves past them.
      const skip = new Map(at.shown);
      const ents = unshown(r.entries || [], skip, fresh);
      if (ents.length)
        this.add(ents);
      if (r.logComplete || !r.nextPageToken) {
        // The job has ended and this was its last page: the token stays, and what was shown
        // after it is still after it, this page's fresh entries too.
        for (const [k, n] of fresh)
          at.shown.set(k, (at.shown.get(k) || 0) + n);
        return;
      }
      at.shown = skip;
      at.token = r.nextPageToken;
      if (!toEnd && (r.entries || []).length < PAGE)
        return;
    }
  }

  /** Read the job: its replicas' tasks join the selector, and the header is drawn again
   *  when its state changed (not otherwise: the focus on a tab stays). */
  async jobState(signal) {
    this.job = await this.ctx.api.get(jobPath(this.ctx.project, this.ctx.jobId), { signal });
    this.learnJob(this.job);
    const key = `${this.job.state} ${isTuning(this.job)}`;
    if (this.el.head.dataset.key !== key) {
      this.el.head.dataset.key = key;
      fill(this.el.head, jobHeader(this.ctx, this.job, 'logs'));
    }
    return this.job.state;
  }

  /** While the log is followed, read the job every POLL_MS until @signal aborts, as the Job
   *  page does: the header follows its state (the stream says nothing of it), and a 401 brings
   *  the sign-in form back at once. Returns the function that stops it. */
  watchJob(signal) {
    let timer = null;
    const tick = async () => {
      try {
        await this.jobState(signal);
      } catch {
        // a read that failed changes nothing: the stream's reconnection says what is wrong
      }
      if (!signal.aborted && timer !== null)
        timer = setTimeout(tick, POLL_MS);
    };
    timer = setTimeout(tick, POLL_MS);
    return () => {
      clearTimeout(timer);
      timer = null;
    };
  }

  /** Follow the log from @at.token until the job has ended; reconnects after a broken
   *  stream. @at.shown counts the entries shown after @at.token, whichever read showed them:
   *  every read from the token (the stream again, or the pages after a broken stream) skips
   *  them, so that a catch-up that fails too (the service still down) does not make the next
   *  try show them twice. */
  async follow(at, signal) {
    let wait = 500;
    for (;;) {
      this.setLive('● Live', 'on');
      try {
        const skip = new Map(at.shown);
        await readStream(this.logsUrl({ follow: 'true', positions: 'true', ...(at.token ? { pageToken: at.token } : {}) }), (list) => {
          const ents = [];
          for (const e of list) {
            if (e.nextPageToken !== undefined && e.timestamp === undefined) {
              // The stream's position after every entry before it: those shown after it are
              // the ones this connection has not given again yet.
              at.token = e.nextPageToken;
              at.shown = new Map(skip);
            } else {
              ents.push(...unshown([e], skip, at.shown));
            }
          }
          if (ents.length)
            this.add(ents);
          wait = 500;
        }, signal);
        // The service ends the stream when the job has ended and everything was sent.
        if (FINAL_STATES.has(await this.jobState(signal)))
          return;
      } catch (e) {
        if (signal.aborted || (e.httpStatus && e.httpStatus !== 503))
          throw e;
        this.setLive('Reconnecting…', 'warn');
      }
      await sleep(wait, signal);
      wait = Math.min(wait * 2, 10000);
      if (signal.aborted)
        return;
      // Catch up from the token without repeating what was shown.
      try {
        await this.readPages(at, signal, false);
      } catch (e) {
        if (signal.aborted || (e.httpStatus && e.httpStatus !== 503))
          throw e;
      }
    }
  }

  /** Read the log of the task chosen from its start, then follow it while the job runs. */
  async reload() {
    if (this.ctl)
      this.ctl.abort();
    this.ctl = new AbortController();
    const signal = this.ctl.signal;
    this.loading = false;
    this.view.clear();
    fill(this.el.note);
    this.setLive('Loading…');
    try {
      const state = await this.jobState(signal);
      if (this.first && !FINAL_STATES.has(state))
        this.view.stick = true; // a running job: show its newest lines as they come
      this.first = false;
      this.drawTasks();
      this.drawTrials();
      this.loading = true;
      const at = { token: '', shown: new Map() };
      await this.readPages(at, signal, FINAL_STATES.has(state));
      this.loading = false;
      this.view.redraw();
      if (!FINAL_STATES.has(state)) {
        const unwatch = this.watchJob(signal);
        try {
          await this.follow(at, signal);
        } finally {
          unwatch();
        }
      }
      if (signal.aborted)
        return;
      this.setLive(`Ended: the job is ${this.job.state}`);
      if (!this.view.entries.length)
        this.view.box.replaceChildren(h('p', { class: 'muted empty' }, 'No log lines.'));
    } catch (e) {
      if (signal.aborted || e.name === 'AbortError')
        return;
      this.setLive('');
      fill(this.el.note, message('error', e.message));
    }
  }

  start() {
    const { project, jobId } = this.ctx;
    this.ctx.setCrumbs([{ text: 'Jobs', href: links.jobs(project) }, { text: project, href: links.jobs(project) },
      { text: jobId, href: links.job(project, jobId) }, { text: 'Logs' }]);
    this.drawTasks();
    this.drawTrials();
    this.reload();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.searchTimer);
    this.view.clear();
    if (this.ctl)
      this.ctl.abort();
  }
}

/** Draw the Logs page into @root; returns the function that stops its stream. */
export function showLogs(root, ctx) {
  const page = new LogsPage(root, ctx);
  page.start();
  return () => page.stop();
}
