// SPDX-License-Identifier: Apache-2.0
// job.js: the Job page (#/projects/P/jobs/J): the state and a timeline of the job's
// transitions, its errorMessage in full, every replica of the current attempt (the failing
// one marked, with a link to its last log lines), the labels (edited and saved with
// jobs.patch and the job's etag), the spec (trainingInput) readable and as raw JSON, and a
// Cancel button while the job can be cancelled. It reloads the job every 2 s until the job
// has ended. Also the header (title, state, tabs) shared by the job's Logs and Tuning pages.
import { jobPath } from './api.js';
import {
  badge, between, CANCELLABLE, FINAL_STATES, fill, fmtDuration, h, isTuning, links, message, patch, timeEl,
} from './format.js';

const REFRESH_MS = 2000;

/** The title, state and tabs of job @job's pages (@current: 'job', 'logs' or 'tuning');
 *  also sets the breadcrumbs. */
export function jobHeader(ctx, job, current) {
  const p = ctx.project;
  const j = ctx.jobId;
  const names = { job: 'Overview', logs: 'Logs', tuning: 'Tuning' };
  ctx.setCrumbs([
    { text: 'Jobs', href: links.jobs(p) }, { text: p, href: links.jobs(p) },
    current === 'job' ? { text: j } : { text: j, href: links.job(p, j) },
    ...(current === 'job' ? [] : [{ text: names[current] }]),
  ]);
  const tabs = [['job', links.job(p, j)], ['logs', links.logs(p, j)]];
  if (isTuning(job))
    tabs.push(['tuning', links.tuning(p, j)]);
  return h('div', { class: 'jobhead' },
    h('h1', {}, h('span', { class: 'jobid' }, j), ' ', job ? badge(job.state) : null),
    h('nav', { class: 'tabs', 'aria-label': 'Job pages' }, tabs.map(([id, href]) =>
      h('a', { href, 'aria-current': id === current ? 'page' : null }, names[id]))));
}

/** The job's events oldest first: each recorded state change (transitions), with the
 *  creation, start and end times noted on the change they came with (QUEUED, RUNNING, the
 *  final state), or as events of their own when no change matches. */
function timeline(job) {
  const ev = (job.transitions || []).map((t) => ({ state: t.state, time: t.time, notes: [] }));
  const near = (a, b) => Math.abs(Date.parse(a) - Date.parse(b)) < 1000;
  const note = (what, time, fits) => {
    if (!time)
      return;
    const e = ev.find((x) => x.state && fits(x.state) && near(x.time, time) && !x.notes.includes(what));
    if (e)
      e.notes.push(what);
    else
      ev.push({ what: what[0].toUpperCase() + what.slice(1), time, notes: [] });
  };
  note('created', job.createTime, (s) => s === 'QUEUED');
  note('started', job.startTime, (s) => s === 'RUNNING');
  note('ended', job.endTime, (s) => FINAL_STATES.has(s));
  ev.sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
  return ev;
}

function drawTimeline(job) {
  const ev = timeline(job);
  if (!ev.length)
    return h('p', { class: 'muted' }, 'No times recorded yet.');
  const items = ev.map((e, i) => h('li', {},
    h('span', { class: 'what' }, e.state ? badge(e.state) : e.what,
      e.notes.length ? h('span', { class: 'note' }, ` ${e.notes.join(', ')}`) : null),
    h('span', { class: 'when' }, timeEl(e.time)),
    i ? h('span', { class: 'gap' }, `+${fmtDuration(Date.parse(e.time) - Date.parse(ev[i - 1].time))}`) : null));
  const last = ev[ev.length - 1].time;
  const total = job.createTime
    ? h('p', { class: 'muted' }, FINAL_STATES.has(job.state)
      ? `From creation to the end: ${between(job.createTime, job.endTime || last)}` +
        (job.startTime ? `; running ${between(job.startTime, job.endTime)}.` : '.')
      : `${job.state} for ${between(last)} so far; created ${between(job.createTime)} ago.`)
    : null;
  return [h('ol', { class: 'timeline' }, items), total];
}

/** The failing replicas: those that FAILED, else (a failed job) those whose exit the
 *  errorMessage quotes or that ended with a non-zero status. */
function failing(job, reps) {
  const failed = reps.filter((r) => r.state === 'FAILED');
  if (failed.length || job.state !== 'FAILED')
    return new Set(failed);
  const msg = job.errorMessage || '';
  const quoted = reps.filter((r) => (r.exit && msg.includes(r.exit)) ||
    (r.exitCode !== undefined && Number(r.exitCode) !== 0) || r.signal !== undefined);
  if (quoted.length)
    return new Set(quoted);
  // The service's wording names the replica: "The replica worker 0 exited with ...".
  const m = /\bThe replica (\w+) (\d+)\b/.exec(msg);
  return new Set(m ? reps.filter((r) => r.role === m[1] && Number(r.index) === Number(m[2])) : []);
}

/** The replicas of an attemptStatus (a job's, or a trial's); from a service without
 *  attemptStatus.replicas, the task names of replicaRestarts. */
function replicasOf(as) {
  if (Array.isArray(as.replicas))
    return as.replicas;
  return Object.entries(as.replicaRestarts || {}).map(([taskName, restarts]) => {
    const m = /^(.*)-replica-(\d+)$/.exec(taskName);
    return { taskName, role: m ? m[1] : '', index: m ? Number(m[2]) : '', restarts };
  });
}

function exitText(r) {
  if (r.exit)
    return r.exit;
  if (r.signal !== undefined)
    return `signal ${r.signal}`;
  if (r.exitCode !== undefined)
    return `exit status ${r.exitCode}`;
  return '';
}

/** A tuning job's replicas belong to its trials: those of the trials that did not succeed
 *  (running, failed), each with its trialId, at most TRIAL_REPLICAS; {reps, bad}: bad, the
 *  replicas that failed their trial. */
const TRIAL_REPLICAS = 50;
function trialReplicas(job) {
  const reps = [];
  const bad = new Set();
  for (const t of (job.trainingOutput && job.trainingOutput.trials) || []) {
    if (t.state === 'SUCCEEDED' || t.state === 'CANCELLED' || reps.length >= TRIAL_REPLICAS)
      continue;
    const mine = replicasOf(t.attemptStatus || {}).map((r) => ({ ...r, trialId: String(t.trialId) }));
    for (const r of failing(t, mine))
      bad.add(r);
    reps.push(...mine);
  }
  return { reps: reps.slice(0, TRIAL_REPLICAS), bad };
}

function replicaRow(ctx, r, bad, trials) {
  const key = `${r.trialId || ''}/${r.taskName}`;
  const logs = { task: r.taskName, ...(r.trialId ? { trial: r.trialId } : {}), end: '1' };
  return h('tr', { class: bad ? 'failing' : null, dataset: { task: r.taskName, trial: r.trialId || null } },
    trials ? h('td', { class: 'num', dataset: { label: 'Trial' } }, r.trialId) : null,
    h('td', { dataset: { label: 'Role' } }, r.role), h('td', { class: 'num', dataset: { label: 'Index' } }, String(r.index ?? '')),
    h('td', { class: 'mono', dataset: { label: 'Task' } }, r.taskName),
    h('td', { class: 'mono', dataset: { label: 'Address' } }, r.address || ''),
    h('td', { dataset: { label: 'State' } }, r.state ? badge(r.state) : '',
      bad ? h('span', { class: 'failmark' }, r.trialId ? ' failed the trial' : ' failed the job') : null),
    h('td', { class: 'exit', dataset: { label: 'Exit' } }, exitText(r) ? h('span', {}, exitText(r)) : ''),
    h('td', { class: 'num', dataset: { label: 'Restarts' } }, String(r.restarts ?? '')),
    h('td', { class: 'nowrap' }, h('a', { href: links.logs(ctx.project, ctx.jobId, logs), dataset: { focus: `logs-${key}` } },
      'last lines')));
}

function drawReplicas(ctx, job) {
  const trials = isTuning(job);
  const { reps, bad } = trials ? trialReplicas(job) : { reps: replicasOf(job.attemptStatus || {}) };
  if (!reps.length) {
    if (trials)
      return h('p', { class: 'muted' }, 'A tuning job\'s replicas belong to its trials, and no trial is running or has failed: ',
        'every trial\'s replicas are on the ', h('a', { href: links.tuning(ctx.project, ctx.jobId) }, 'Tuning'), ' tab.');
    return h('p', { class: 'muted' }, job.state === 'QUEUED' ? 'No replica yet: the job is queued.' : 'No replica recorded.');
  }
  const failed = trials ? bad : failing(job, reps);
  const titles = [...(trials ? ['Trial'] : []), 'Role', 'Index', 'Task', 'Address', 'State', 'Exit', 'Restarts', 'Logs'];
  return [
    trials ? h('p', { class: 'muted' }, 'The replicas of the trials running or failed (all trials: the ',
      h('a', { href: links.tuning(ctx.project, ctx.jobId) }, 'Tuning'), ' tab).') : null,
    h('div', { class: 'table-wrap' }, h('table', { class: 'replicas cards' },
      h('thead', {}, h('tr', {}, titles.map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, reps.map((r) => replicaRow(ctx, r, failed.has(r), trials))))),
  ];
}

/** @v as a shell word: as it is when plain, else in single quotes. */
function shellWord(v) {
  const s = String(v);
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

/** trainingInput as rows of "a.b[0].c" → value; an array of plain values is one value, its
 *  items as shell words (a command and its arguments read as on a command line). */
function flatten(obj, prefix, out) {
  if (Array.isArray(obj) && obj.length && obj.every((v) => v === null || typeof v !== 'object')) {
    out.push([prefix, obj.map(shellWord).join(' ')]);
  } else if (obj && typeof obj === 'object') {
    const entries = Array.isArray(obj) ? obj.map((v, i) => [`[${i}]`, v]) : Object.entries(obj);
    if (!entries.length)
      out.push([prefix, Array.isArray(obj) ? '[]' : '{}']);
    for (const [k, v] of entries)
      flatten(v, prefix ? (k.startsWith('[') ? prefix + k : `${prefix}.${k}`) : k, out);
  } else {
    out.push([prefix, String(obj)]);
  }
  return out;
}

function drawSpec(job) {
  const ti = job.trainingInput || {};
  const rows = flatten(ti, '', []);
  return [
    h('div', { class: 'table-wrap' }, h('table', { class: 'kv' },
      h('tbody', {}, rows.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', {}, h('span', { class: 'val' }, v))))))),
    h('details', { class: 'raw' }, h('summary', {}, 'Raw JSON of the job'),
      h('pre', { tabindex: '0' }, JSON.stringify(job, null, 2))),
  ];
}

function drawSummary(job) {
  const as = job.attemptStatus || {};
  const items = [
    ['Created', timeEl(job.createTime)],
    ['Started', job.startTime ? timeEl(job.startTime) : '—'],
    ['Ended', job.endTime ? timeEl(job.endTime) : '—'],
    ['Running for', job.startTime ? between(job.startTime, job.endTime) : '—'],
  ];
  if (job.state === 'QUEUED')
    items.push(['Queue position', Number(job.jobPosition) > 0 ? String(job.jobPosition) : 'starting'],
      ['Why it waits', job.stateReason || '—']);
  if (as.attempt)
    items.push(['Attempt', `${as.attempt} of at most ${as.maxAttempts || '?'}` +
      (as.internalRetries ? ` (${as.internalRetries} internal retries)` : '')]);
  const out = job.trainingOutput || {};
  if (out.isHyperparameterTuningJob)
    items.push(['Trials', `${out.completedTrialCount || 0} completed`]);
  return h('dl', { class: 'summary' }, items.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))));
}

/** Whether the label maps @a and @b hold the same keys and values. */
function sameLabels(a, b) {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && b[k] === a[k]);
}

/** The label field that the service's refusal @msg names, as {key, part: 'key' or 'value'}
 *  ("labels: key 'K' must ...", "labels.K: value 'V' may ...", "labels.K: the service read
 *  it ..."); null when it names none. */
function refusedField(msg) {
  const k = /^labels: key '(.*?)' must /.exec(msg);
  if (k)
    return { key: k[1], part: 'key' };
  const v = /^labels\.(.+?): (value '|the service read it)/.exec(msg);
  return v ? { key: v[1], part: v[2] === 'value \'' ? 'value' : 'key' } : null;
}

/** The labels editor: rows of key/value inputs, Add, Save (jobs.patch with the etag read
 *  with these labels). Returns {el, dirty(), load(job)}. */
function labelsEditor(ctx, reload) {
  const rowsEl = h('div', { class: 'label-rows' });
  // What a save did. The keyboard focus goes there while the Save button is disabled, and
  // stays there when the save draws the rows again (the focus does not fall to the page).
  const status = h('div', { id: 'labels-status', class: 'status', 'aria-live': 'polite', tabindex: '-1' });
  const saveBtn = h('button', { type: 'submit', class: 'primary' }, 'Save labels');
  let etag = '';
  let dirty = false;
  let n = 0;

  /** Mark @input as the field a save is refused for (the status says why), and focus it. */
  const refuse = (input, text) => {
    fill(status, message('error', text));
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-describedby', status.id);
    input.focus();
  };
  const unmark = (input) => {
    input.removeAttribute('aria-invalid');
    input.removeAttribute('aria-describedby');
  };

  const addRow = (k, v) => {
    const i = n++;
    rowsEl.querySelector('.none')?.remove();
    // The Remove button is named after the key, as it is typed.
    const name = () => (key.value.trim() ? `Remove label ${key.value.trim()}` : 'Remove this label');
    const key = h('input', {
      type: 'text', value: k, id: `lk${i}`, 'aria-label': 'Label key', class: 'lkey', spellcheck: 'false',
      oninput: () => { remove.setAttribute('aria-label', name()); unmark(key); touch(); },
    });
    const val = h('input', {
      type: 'text', value: v, id: `lv${i}`, 'aria-label': 'Label value', class: 'lval', spellcheck: 'false',
      oninput: () => { unmark(val); touch(); },
    });
    const remove = h('button', { type: 'button', class: 'quiet', 'aria-label': name(), onclick: () => { row.remove(); touch(); } }, 'Remove');
    const row = h('div', { class: 'label-row' }, key, h('span', { 'aria-hidden': 'true' }, '='), val, remove);
    rowsEl.append(row);
    return key;
  };
  function touch() {
    dirty = true;
  }
  const form = h('form', { class: 'labels', onsubmit: save },
    rowsEl,
    h('div', { class: 'inline' },
      h('button', { type: 'button', onclick: () => { addRow('', '').focus(); touch(); } }, 'Add label'), saveBtn),
    status);

  async function save(ev) {
    ev.preventDefault();
    const labels = {};
    for (const row of rowsEl.querySelectorAll('.label-row')) {
      const key = row.querySelector('.lkey');
      const k = key.value.trim();
      if (k && Object.hasOwn(labels, k)) {
        refuse(key, `Two labels have the key ${k}: a key has one value. Change or remove one of them.`);
        return;
      }
      if (k)
        labels[k] = row.querySelector('.lval').value.trim();
    }
    if (document.activeElement === saveBtn)
      status.focus();
    saveBtn.disabled = true;
    fill(status, message('note', 'Saving…'));
    try {
      const job = await ctx.api.patch(`${jobPath(ctx.project, ctx.jobId)}?updateMask=labels`, { labels, etag });
      dirty = false;
      load(job, true);
      fill(status, message('ok', 'Labels saved.'));
      reload();
    } catch (e) {
      if (e.httpStatus === 409) {
        dirty = false;
        try {
          const now = await ctx.api.get(jobPath(ctx.project, ctx.jobId));
          load(now, true);
          // The same labels as saved: this save landed (its answer was lost and the repeat
          // refused), or someone made the same change. Either way they are as asked.
          if (sameLabels(now.labels || {}, labels))
            fill(status, message('ok', 'Labels saved.'));
          else
            fill(status, message('error', `The labels were changed since you loaded them: now showing the current ones; make your change again. (${e.message})`));
        } catch (e2) {
          fill(status, message('error', e2.message));
        }
        reload();
      } else {
        const f = e.httpStatus === 400 ? refusedField(e.message) : null;
        const row = f && [...rowsEl.querySelectorAll('.label-row')].find((r) => r.querySelector('.lkey').value.trim() === f.key);
        if (row)
          refuse(row.querySelector(f.part === 'key' ? '.lkey' : '.lval'), e.message);
        else
          fill(status, message('error', e.message));
      }
    } finally {
      saveBtn.disabled = false;
      // the rows drawn again took the focus with them
      if (document.activeElement === document.body || !document.activeElement)
        status.focus();
    }
  }

  let shown = null;
  let shownLabels = null;
  function load(job, force) {
    // Not while the user edits (typed, or is in the rows): what they see is what they change,
    // and the etag stays the one read with it.
    const key = JSON.stringify([job.labels || {}, job.etag || '']);
    if (!force && (dirty || key === shown || rowsEl.contains(document.activeElement)))
      return;
    // Labels changed from elsewhere: what the last save said is not about these.
    const labelsKey = JSON.stringify(job.labels || {});
    if (!force && shownLabels !== null && labelsKey !== shownLabels)
      fill(status);
    shown = key;
    shownLabels = labelsKey;
    etag = job.etag || '';
    rowsEl.replaceChildren();
    for (const [k, v] of Object.entries(job.labels || {}))
      addRow(k, v);
    if (!rowsEl.children.length)
      rowsEl.append(h('p', { class: 'muted none' }, 'No labels.'));
  }
  return { el: form, load, dirty: () => dirty };
}

/** Draw the Job page into @root; returns the function that stops its refresh. */
export function showJob(root, ctx) {
  const head = h('div');
  const actions = h('div', { class: 'actions' });
  // What a Cancel did: the keyboard focus goes there (the button is disabled, then gone).
  const note = h('div', { class: 'status', 'aria-live': 'polite', tabindex: '-1' });
  const errBox = h('div');
  const summary = h('div');
  const tl = h('div');
  const reps = h('div');
  const spec = h('div');
  let timer = null;
  let stopped = false;
  let job = null;
  // the note says that a read of the job failed: the next read that works clears it
  let noteFrom = null;
  const editor = labelsEditor(ctx, () => refresh());
  // The job's sections, shown once the job has been read: a job that is missing or not yours
  // shows only the error (and has no labels to edit).
  const sections = h('div', { class: 'job-sections', hidden: true },
    h('div', { class: 'cols' },
      h('section', { 'aria-labelledby': 'h-sum' }, h('h2', { id: 'h-sum' }, 'Summary'), summary),
      h('section', { 'aria-labelledby': 'h-tl' }, h('h2', { id: 'h-tl' }, 'Timeline'), tl)),
    h('section', { 'aria-labelledby': 'h-rep' }, h('h2', { id: 'h-rep' }, 'Replicas'), reps),
    h('section', { 'aria-labelledby': 'h-lab' }, h('h2', { id: 'h-lab' }, 'Labels'), editor.el),
    h('section', { 'aria-labelledby': 'h-spec' }, h('h2', { id: 'h-spec' }, 'Training input'), spec));

  fill(root, head, actions, note, errBox, sections);

  async function cancel(btn) {
    if (!window.confirm(`Cancel job ${ctx.jobId}? Its replicas are stopped.`))
      return;
    if (document.activeElement === btn)
      note.focus();
    btn.disabled = true;
    const path = jobPath(ctx.project, ctx.jobId, ':cancel');
    try {
      try {
        await ctx.api.post(path, {});
      } catch (e) {
        // No answer (the connection broke): the job says whether the request landed, and only
        // one that did not is sent again (cancel is not conditional: a blind repeat of one
        // that landed would be refused).
        if (e.httpStatus !== 0)
          throw e;
        const now = await ctx.api.get(jobPath(ctx.project, ctx.jobId));
        if (now.state !== 'CANCELLING' && now.state !== 'CANCELLED')
          await ctx.api.post(path, {});
      }
      fill(note, message('ok', 'Cancel requested.'));
      noteFrom = null;
    } catch (e) {
      fill(note, message('error', e.message));
      noteFrom = null;
    }
    refresh();
  }

  /** Redraw @el with @make() only when @key changed: a refresh must not close what the
   *  user opened nor move the keyboard focus. */
  function update(el, key, make) {
    if (el.dataset.key === key)
      return;
    const open = el.querySelector('details[open]') !== null;
    const focusKey = el.contains(document.activeElement) ? document.activeElement.dataset.focus : null;
    el.dataset.key = key;
    fill(el, make());
    if (open)
      el.querySelector('details')?.setAttribute('open', '');
    if (focusKey)
      el.querySelector(`[data-focus="${CSS.escape(focusKey)}"]`)?.focus();
  }

  function draw() {
    const canCancel = CANCELLABLE.has(job.state);
    update(head, `${job.state} ${isTuning(job)}`, () => jobHeader(ctx, job, 'job'));
    update(actions, `${canCancel} ${isTuning(job)}`, () => [
      canCancel ? h('button', { type: 'button', class: 'danger', dataset: { focus: 'cancel' }, onclick: (ev) => cancel(ev.currentTarget) }, 'Cancel job') : null,
      isTuning(job) ? h('a', { class: 'button', dataset: { focus: 'tuning' }, href: links.tuning(ctx.project, ctx.jobId) }, 'Tuning: trials and plots') : null]);
    // A cancelled job's message ("Job cancelled by the user.") is a note, not an error.
    const cancelled = job.state === 'CANCELLED';
    update(errBox, `${cancelled} ${job.errorMessage || ''}`, () => {
      if (!job.errorMessage)
        return null;
      if (cancelled)
        return message('note', job.errorMessage);
      return h('section', { class: 'error-box', 'aria-labelledby': 'h-err' },
        h('h2', { id: 'h-err' }, 'Error'), h('pre', { class: 'errmsg' }, job.errorMessage));
    });
    // Only what changed (a running job's times) is replaced: a text selected there stays.
    patch(summary, drawSummary(job));
    patch(tl, drawTimeline(job));
    update(reps, JSON.stringify([job.state, job.errorMessage, job.attemptStatus, isTuning(job) && trialReplicas(job).reps]),
      () => drawReplicas(ctx, job));
    update(spec, JSON.stringify(job), () => drawSpec(job));
    editor.load(job);
    sections.hidden = false;
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const j = await ctx.api.get(jobPath(ctx.project, ctx.jobId));
      if (stopped)
        return;
      job = j;
      draw();
      if (noteFrom === 'refresh') {
        fill(note, null);
        noteFrom = null;
      }
    } catch (e) {
      if (stopped)
        return;
      if (!job)
        fill(head, jobHeader(ctx, null, 'job'));
      fill(note, message('error', e.message));
      noteFrom = 'refresh';
      // a refusal (the id is not valid, the job is not there or not yours) is for good: no
      // more reads; a timeout, a limit or the service's own failure may pass
      if (e.httpStatus >= 400 && e.httpStatus < 500 && e.httpStatus !== 408 && e.httpStatus !== 429)
        return;
    }
    if (!job || !FINAL_STATES.has(job.state))
      timer = setTimeout(refresh, REFRESH_MS);
  }

  refresh();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
