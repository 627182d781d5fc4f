// SPDX-License-Identifier: Apache-2.0
// logs.js: the Logs page (#/projects/P/jobs/J/logs?task=T&severity=S&q=TEXT&trial=N&end=1).
// It reads the job's log in pages of 1000 (one task, through the API's taskName, or all),
// then, while the job runs, follows it: logs?follow=true from the last page's token, read as
// it arrives. A broken connection is picked up again from that token, skipping the entries
// already shown, so nothing is lost or repeated. Severity, text search (highlighted) and a
// tuning job's trial are filters in the page. At most the last 20,000 lines are kept.
import { jobPath, readStream } from './api.js';
import { FINAL_STATES, fill, fmtTimeMs, h, isTuning, links, message } from './format.js';
import { jobHeader } from './job.js';

const MAX_LINES = 20000;
const PAGE = 1000;
const SEVERITIES = ['DEFAULT', 'DEBUG', 'INFO', 'NOTICE', 'WARNING', 'ERROR', 'CRITICAL', 'ALERT', 'EMERGENCY'];
const sevRank = (s) => Math.max(0, SEVERITIES.indexOf(s || 'DEFAULT'));
const entryKey = (e) => `${e.timestamp}\u0000${e.taskName}\u0000${e.trialId || ''}\u0000${e.message}`;

/** Draw the Logs page into @root; returns the function that stops its stream. */
export function showLogs(root, ctx) {
  const q = ctx.query;
  const st = {
    task: q.get('task') || '',
    severity: SEVERITIES.includes(q.get('severity')) ? q.get('severity') : '',
    search: q.get('q') || '',
    trial: q.get('trial') || '',
    stick: q.get('end') === '1',   // keep the view at the end as lines arrive
    entries: [],
    dropped: 0,
    tasks: new Set(),
    trials: new Set(),
    job: null,
  };
  let stopped = false;
  let ctl = null;        // aborts the loading of the current task's log
  let pending = [];      // entries received, not yet drawn
  let drawTimer = null;
  let first = true;      // the first load of the page (not a change of task)

  const head = h('div');
  const taskSel = h('select', { id: 'task', onchange: () => { st.task = taskSel.value; save(); reload(); } });
  const sevSel = h('select', { id: 'severity', onchange: () => { st.severity = sevSel.value; save(); redraw(); } },
    h('option', { value: '' }, 'All'),
    ['INFO', 'WARNING', 'ERROR'].map((s) => h('option', { value: s, selected: s === st.severity }, s === 'ERROR' ? 'ERROR and worse' : `${s} and worse`)));
  const searchIn = h('input', { id: 'search', type: 'search', value: st.search, placeholder: 'text in the message', spellcheck: 'false', autocomplete: 'off' });
  let searchTimer = null;
  searchIn.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { st.search = searchIn.value; save(); redraw(); }, 150);
  });
  const trialSel = h('select', { id: 'trial', onchange: () => { st.trial = trialSel.value; save(); redraw(); } });
  const trialField = h('div', { class: 'field', hidden: true }, h('label', { for: 'trial' }, 'Trial'), trialSel);
  const live = h('span', { class: 'live', 'aria-live': 'polite' });
  const endBtn = h('button', { type: 'button', onclick: () => { st.stick = true; toEnd(); box.focus({ preventScroll: true }); } }, 'Jump to end');
  const counts = h('p', { class: 'muted count', 'aria-live': 'off' });
  const note = h('div', { 'aria-live': 'polite' });
  const box = h('div', { class: 'logbox', role: 'log', tabindex: '0', 'aria-label': 'Log lines' });
  box.addEventListener('scroll', () => {
    st.stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
  });

  fill(root, head,
    h('form', { class: 'toolbar', role: 'search', onsubmit: (ev) => ev.preventDefault() },
      h('div', { class: 'field' }, h('label', { for: 'task' }, 'Task'), taskSel),
      h('div', { class: 'field' }, h('label', { for: 'severity' }, 'Severity'), sevSel),
      trialField,
      h('div', { class: 'field grow' }, h('label', { for: 'search' }, 'Search'), searchIn),
      h('div', { class: 'field end' }, endBtn, live)),
    note, counts, box);

  function save() {
    ctx.setQuery({ task: st.task, severity: st.severity, q: st.search, trial: st.trial });
  }

  function drawTasks() {
    const names = [...st.tasks].sort();
    if (st.task && !st.tasks.has(st.task))
      names.unshift(st.task);
    fill(taskSel, h('option', { value: '' }, 'All tasks'),
      names.map((n) => h('option', { value: n, selected: n === st.task }, n)));
  }

  function drawTrials() {
    trialField.hidden = !(isTuning(st.job) || st.trials.size || st.trial);
    const ids = [...st.trials].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
    if (st.trial && !st.trials.has(st.trial))
      ids.unshift(st.trial);
    fill(trialSel, h('option', { value: '' }, 'All trials'),
      ids.map((t) => h('option', { value: t, selected: t === st.trial }, `Trial ${t}`)));
  }

  /** Note the task names and trials of @job's replicas (the selectors list them). */
  function learnJob(job) {
    const reps = (job.attemptStatus && job.attemptStatus.replicas) || [];
    for (const r of reps)
      st.tasks.add(r.taskName);
    for (const name of Object.keys((job.attemptStatus && job.attemptStatus.replicaRestarts) || {}))
      st.tasks.add(name);
    for (const t of (job.trainingOutput && job.trainingOutput.trials) || []) {
      st.trials.add(String(t.trialId));
      for (const r of (t.attemptStatus && t.attemptStatus.replicas) || [])
        st.tasks.add(r.taskName);
    }
  }

  const visible = (e) => (!st.severity || sevRank(e.severity) >= sevRank(st.severity)) &&
    (!st.trial || String(e.trialId || '') === st.trial) &&
    (!st.search || (e.message || '').toLowerCase().includes(st.search.toLowerCase()));

  /** The message with each match of the search marked. */
  function highlighted(text) {
    if (!st.search)
      return text;
    const low = text.toLowerCase();
    const needle = st.search.toLowerCase();
    const out = [];
    let at = 0;
    for (let i = low.indexOf(needle); i >= 0; i = low.indexOf(needle, at)) {
      out.push(text.slice(at, i), h('mark', {}, text.slice(i, i + needle.length)));
      at = i + needle.length;
    }
    out.push(text.slice(at));
    return out;
  }

  function line(e) {
    const sev = e.severity || 'DEFAULT';
    return h('div', { class: `ln sev-${sev.toLowerCase()}` },
      h('span', { class: 't' }, fmtTimeMs(e.timestamp)), ' ',
      h('span', { class: 'sev' }, sev), ' ',
      h('span', { class: 'task' }, e.taskName || ''),
      e.trialId ? h('span', { class: 'trial' }, ` trial ${e.trialId}`) : null,
      e.labels && e.labels.attempt ? h('span', { class: 'attempt' }, ` [attempt ${e.labels.attempt}]`) : null, ' ',
      h('span', { class: 'msg' }, highlighted(e.message || '')));
  }

  function drawCounts() {
    const shown = box.childElementCount;
    counts.textContent = `${st.entries.length} lines${shown !== st.entries.length ? `, ${shown} shown` : ''}` +
      (st.dropped ? ` (the ${st.dropped} earlier lines are not kept: only the last ${MAX_LINES} are)` : '') + '.';
  }

  function toEnd() {
    box.scrollTop = box.scrollHeight;
  }

  function redraw() {
    pending = [];
    const frag = document.createDocumentFragment();
    for (const e of st.entries)
      if (visible(e))
        frag.append(line(e));
    box.replaceChildren(frag);
    if (!box.childElementCount && st.entries.length)
      box.append(h('p', { class: 'muted empty' }, 'No line matches these filters.'));
    drawCounts();
    if (st.stick)
      toEnd();
  }

  /** Keep @list (new entries, in order) and draw them soon (several pieces of a stream are
   *  drawn at once). */
  function add(list) {
    if (stopped)
      return;
    let newTask = false;
    let newTrial = false;
    for (const e of list) {
      if (e.taskName && !st.tasks.has(e.taskName)) {
        st.tasks.add(e.taskName);
        newTask = true;
      }
      if (e.trialId && !st.trials.has(String(e.trialId))) {
        st.trials.add(String(e.trialId));
        newTrial = true;
      }
    }
    st.entries.push(...list);
    if (st.entries.length > MAX_LINES) {
      const cut = st.entries.length - MAX_LINES;
      st.dropped += cut;
      st.entries.splice(0, cut);
    }
    if (newTask)
      drawTasks();
    if (newTrial)
      drawTrials();
    pending.push(...list);
    if (!drawTimer)
      drawTimer = setTimeout(drawPending, 60);
  }

  function drawPending() {
    drawTimer = null;
    const stick = st.stick;
    box.querySelector('.empty')?.remove();
    const frag = document.createDocumentFragment();
    for (const e of pending)
      if (visible(e))
        frag.append(line(e));
    pending = [];
    box.append(frag);
    for (let extra = box.childElementCount - MAX_LINES; extra > 0; extra--)
      box.firstElementChild.remove();
    drawCounts();
    if (stick)
      toEnd();
  }

  function logsUrl(params) {
    const p = new URLSearchParams(params);
    if (st.task)
      p.set('taskName', st.task);
    return `${jobPath(ctx.project, ctx.jobId, '/logs')}?${p}`;
  }

  /** Read the pages after @token, skipping the entries counted in @skip (already shown);
   *  returns the token after the last page. */
  async function readPages(token, skip, signal) {
    for (;;) {
      const r = await ctx.api.get(logsUrl({ pageSize: PAGE, ...(token ? { pageToken: token } : {}) }), { signal });
      let ents = r.entries || [];
      if (skip) {
        ents = ents.filter((e) => {
          const k = entryKey(e);
          const n = skip.get(k) || 0;
          if (!n)
            return true;
          skip.set(k, n - 1);
          return false;
        });
      }
      if (ents.length)
        add(ents);
      token = r.nextPageToken || token;
      if ((r.entries || []).length < PAGE)
        return token;
    }
  }

  const sleep = (ms, signal) => new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });

  async function jobState(signal) {
    st.job = await ctx.api.get(jobPath(ctx.project, ctx.jobId), { signal });
    learnJob(st.job);
    fill(head, jobHeader(ctx, st.job, 'logs'));
    return st.job.state;
  }

  /** Follow the log from @token until the job has ended; reconnects after a broken stream. */
  async function follow(token, signal) {
    let wait = 500;
    for (;;) {
      const seen = new Map(); // entries got from the stream since @token
      live.textContent = '● Live';
      live.className = 'live on';
      try {
        await readStream(logsUrl({ follow: 'true', ...(token ? { pageToken: token } : {}) }), (list) => {
          for (const e of list)
            seen.set(entryKey(e), (seen.get(entryKey(e)) || 0) + 1);
          add(list);
          wait = 500;
        }, signal);
        // The service ends the stream when the job has ended and everything was sent.
        if (FINAL_STATES.has(await jobState(signal)))
          return;
      } catch (e) {
        if (signal.aborted || (e.httpStatus && e.httpStatus !== 503 && e.httpStatus !== 0))
          throw e;
        live.textContent = 'Reconnecting…';
        live.className = 'live warn';
      }
      await sleep(wait, signal);
      wait = Math.min(wait * 2, 10000);
      if (signal.aborted)
        return;
      // Catch up from the same token without repeating what the stream already gave.
      try {
        token = await readPages(token, seen, signal);
      } catch (e) {
        if (signal.aborted || (e.httpStatus && e.httpStatus !== 503))
          throw e;
      }
    }
  }

  async function reload() {
    if (ctl)
      ctl.abort();
    ctl = new AbortController();
    const signal = ctl.signal;
    st.entries = [];
    st.dropped = 0;
    pending = [];
    box.replaceChildren();
    fill(note);
    live.textContent = 'Loading…';
    live.className = 'live';
    try {
      const state = await jobState(signal);
      if (first && !FINAL_STATES.has(state))
        st.stick = true; // a running job: show its newest lines as they come
      first = false;
      drawTasks();
      drawTrials();
      const token = await readPages('', null, signal);
      if (!FINAL_STATES.has(state))
        await follow(token, signal);
      if (signal.aborted)
        return;
      live.textContent = `Ended: the job is ${st.job.state}`;
      live.className = 'live';
      if (!st.entries.length)
        box.replaceChildren(h('p', { class: 'muted empty' }, 'No log lines.'));
    } catch (e) {
      if (signal.aborted || e.name === 'AbortError')
        return;
      live.textContent = '';
      fill(note, message('error', e.message));
    }
  }

  ctx.setCrumbs([{ text: 'Jobs', href: links.jobs(ctx.project) }, { text: ctx.project, href: links.jobs(ctx.project) },
    { text: ctx.jobId, href: links.job(ctx.project, ctx.jobId) }, { text: 'Logs' }]);
  drawTasks();
  drawTrials();
  reload();
  return () => {
    stopped = true;
    clearTimeout(drawTimer);
    clearTimeout(searchTimer);
    if (ctl)
      ctl.abort();
  };
}
