// SPDX-License-Identifier: Apache-2.0
// tuning.js: the Tuning page of a hyperparameter-tuning job (#/projects/P/jobs/J/tuning): a
// summary, the plots of charts.js, the trials table (best first, sortable, the best marked)
// and the selected trial's details (parameters, curve, link to its logs); `?trial=N` in the
// page's hash selects trial N. While the job runs the page re-reads it every 5 s;
// showTuning() resolves to the function that stops that (the router calls it when the page
// is left); ctx.onJob(job), when the router gives one, is told of each job read. With
// `?test-hooks` in the page's URL (before the hash) it exposes window.__trainyardTuning for
// the browser test (t5130): ECharts itself, and bench(root, job), which draws a whole job
// given to it through this same code and reports the time.
// The page's styles, as text (esbuild's text loader), put in a <style> when the page is first
// shown: the page is a lazily loaded chunk, and index.html links only the app's own CSS.
import TUNING_CSS from './tuning.css' with { type: 'text' };
import {
  createChart,
  curvesOption,
  drawn,
  echarts,
  esc,
  fmtNum,
  historyOption,
  parallelOption,
  selectedData,
  sliceOption,
  trialCurveOption,
  useTheme,
} from './charts.js';
import { fmtTime } from './format.js';

const FINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
const REFRESH_MS = 5000;
const PAGE_ROWS = 100; // table rows shown at first, and added by "Show more"
const DEFAULT_TAG = 'training/hptuning/metric';

// makeStudy(job): the page's model of a tuning job: goal, metric, parameters (from
// trainingInput.hyperparameters.params), trials (trainingOutput.trials, values parsed),
// the finished ones (with an objective), the best, and helpers to rank objectives.
function makeStudy(job) {
  const hp = (job.trainingInput && job.trainingInput.hyperparameters) || {};
  const out = job.trainingOutput || {};
  const goal = hp.goal === 'MINIMIZE' ? 'MINIMIZE' : 'MAXIMIZE';
  const raw = Array.isArray(out.trials) ? out.trials : [];
  const params = paramsOf(hp, raw);
  const trials = raw.map((t) => trialOf(t, params));
  const better = goal === 'MINIMIZE' ? (a, b) => a < b : (a, b) => a > b;
  const finished = trials.filter((t) => t.objective !== null);
  const study = {
    goal,
    metric: hp.hyperparameterMetricTag || out.hyperparameterMetricTag || DEFAULT_TAG,
    params,
    trials,
    finished,
    better,
    byId: new Map(trials.map((t) => [t.id, t])),
    maxTrials: Number(hp.maxTrials) || 1, // absent or 0: the API's default, one trial
  };
  study.best = sortTrials(finished, 'objective', 1, study)[0] || null;
  const objs = finished.map((t) => t.objective);
  study.range = objs.length ? [Math.min(...objs), Math.max(...objs)] : [0, 1];
  const [lo, hi] = study.range;
  study.quality = (v) => (hi > lo ? (goal === 'MINIMIZE' ? hi - v : v - lo) / (hi - lo) : 1);
  study.curveExtent = curveExtent(trials);
  return study;
}

function paramsOf(hp, trials) {
  const specs = Array.isArray(hp.params) ? hp.params : [];
  const params = specs.map((p) => {
    const cat = p.type === 'CATEGORICAL';
    const values = (cat ? p.categoricalValues : p.discreteValues) || [];
    const nums = cat ? [] : values.map(Number).filter(Number.isFinite);
    const min = p.minValue !== undefined ? Number(p.minValue) : nums.length ? Math.min(...nums) : NaN;
    const max = p.maxValue !== undefined ? Number(p.maxValue) : nums.length ? Math.max(...nums) : NaN;
    return {
      name: String(p.parameterName),
      kind: cat ? 'cat' : 'num',
      int: p.type === 'INTEGER',
      log: p.scaleType === 'UNIT_LOG_SCALE',
      values: cat ? values.map(String) : values,
      min,
      max,
    };
  });
  // A parameter a trial reports that the spec does not name (should not happen): show it too.
  const known = new Set(params.map((p) => p.name));
  for (const t of trials) {
    for (const name of Object.keys(t.hyperparameters || {})) {
      if (known.has(name)) continue;
      known.add(name);
      params.push({ name, kind: 'cat', int: false, log: false, values: [], min: NaN, max: NaN });
    }
  }
  for (const p of params) {
    if (p.kind !== 'cat' || p.values.length) continue;
    const seen = new Set(trials.map((t) => (t.hyperparameters || {})[p.name]).filter((v) => v !== undefined));
    p.values = [...seen].map(String).sort();
  }
  return params;
}

function finite(v) {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : null;
}

function trialOf(t, params) {
  const raw = t.hyperparameters || {};
  const values = {};
  for (const p of params) {
    const v = raw[p.name];
    values[p.name] = p.kind === 'cat' || v === undefined ? v : (finite(v) ?? v);
  }
  const fm = t.finalMetric || null;
  const objective = fm ? finite(fm.objectiveValue) : null;
  let curve = (Array.isArray(t.allMetrics) ? t.allMetrics : [])
    .map((m, i) => [finite(m.trainingStep) ?? i + 1, finite(m.objectiveValue)])
    .filter((pt) => pt[1] !== null)
    .sort((a, b) => a[0] - b[0]);
  if (!curve.length && objective !== null) curve = [[finite(fm.trainingStep) ?? 1, objective]];
  const start = Date.parse(t.startTime || '');
  const end = Date.parse(t.endTime || '');
  return {
    id: String(t.trialId),
    num: finite(t.trialId) ?? 0,
    raw,
    values,
    objective,
    step: fm ? (fm.trainingStep ?? '') : '',
    curve,
    state: t.state || 'STATE_UNSPECIFIED',
    early: t.isTrialStoppedEarly === true,
    start,
    end,
    error: t.errorMessage || '',
  };
}

function curveExtent(trials) {
  let x0 = Infinity;
  let x1 = -Infinity;
  let y0 = Infinity;
  let y1 = -Infinity;
  for (const t of trials) {
    for (const [x, y] of t.curve) {
      if (x < x0) x0 = x;
      if (x > x1) x1 = x;
      if (y < y0) y0 = y;
      if (y > y1) y1 = y;
    }
  }
  if (x0 > x1) return { x: [0, 1], y: [0, 1] };
  return { x: [x0, x1 > x0 ? x1 : x0 + 1], y: [y0, y1] };
}

// The trials table: the order of the trials and its HTML. Column headers are buttons
// (keyboard sorting, aria-sort); each row's trial id is a button that selects the trial.

// fmtDuration(ms): "4.2 s", "3 min 05 s", "2 h 07 min" ("" when unknown).
function fmtDuration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '';
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

// durationOf(t, now): how long trial t ran (or has run so far, while it runs), in ms.
function durationOf(t, now) {
  if (!Number.isFinite(t.start)) return NaN;
  if (Number.isFinite(t.end)) return t.end - t.start;
  return t.state === 'RUNNING' ? now - t.start : NaN;
}

function missing(v) {
  return v === undefined || v === null || (typeof v === 'number' && Number.isNaN(v));
}

function cmpValues(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

// sortTrials(trials, key, dir, study): a sorted copy. key 'objective' with dir 1 is best first
// by study.goal (dir -1 worst first), trials without an objective last either way; other keys:
// 'trial', 'state', 'early', 'duration', 'p:NAME' (a parameter), ascending for dir 1. Ties go
// by trial number.
function sortTrials(trials, key, dir, study) {
  const now = Date.now();
  let get;
  let sign = dir;
  if (key === 'objective') {
    get = (t) => t.objective;
    sign = study.goal === 'MINIMIZE' ? dir : -dir;
  } else if (key === 'trial') get = (t) => t.num;
  else if (key === 'state') get = (t) => t.state;
  else if (key === 'early') get = (t) => (t.early ? 1 : 0);
  else if (key === 'duration') get = (t) => durationOf(t, now);
  else get = (t) => t.values[key.slice(2)];
  const keyed = trials.map((t) => [get(t), t]);
  keyed.sort((x, y) => {
    const mx = missing(x[0]);
    const my = missing(y[0]);
    if (mx || my) return mx === my ? x[1].num - y[1].num : mx ? 1 : -1; // missing last
    return sign * cmpValues(x[0], y[0]) || x[1].num - y[1].num;
  });
  return keyed.map((k) => k[1]);
}

function columns(study) {
  return [
    { key: 'trial', label: 'Trial', num: true },
    ...study.params.map((p) => ({ key: `p:${p.name}`, label: p.name, num: p.kind !== 'cat' })),
    { key: 'objective', label: study.metric, num: true },
    { key: 'state', label: 'State' },
    { key: 'early', label: 'Stopped early' },
    { key: 'duration', label: 'Duration', num: true },
  ];
}

// tableHtml(study, sort, body): the table, its headers showing the current sort, around the
// rows' HTML body (rowsHtml).
function tableHtml(study, sort, body) {
  const heads = columns(study).map((c) => {
    let aria = 'none';
    let mark = '';
    if (c.key === sort.key) {
      // Best first is descending when maximizing, ascending when minimizing.
      const asc = c.key === 'objective' ? (study.goal === 'MINIMIZE') === sort.dir > 0 : sort.dir > 0;
      aria = asc ? 'ascending' : 'descending';
      mark = asc ? ' ▲' : ' ▼';
    }
    const cls = c.num ? ' class="tn-num"' : '';
    return `<th scope="col" aria-sort="${aria}"${cls}><button type="button" data-sort="${esc(c.key)}">` +
      `${esc(c.label)}<span aria-hidden="true">${mark}</span></button></th>`;
  });
  const n = study.trials.length;
  return `<table class="tn-table"><caption class="tn-sr">${n} ${n === 1 ? 'trial' : 'trials'}; sort by a column with its header</caption>` +
    `<thead><tr>${heads.join('')}</tr></thead><tbody>${body}</tbody></table>`;
}

// rowsHtml(rows, study, sel, now): one <tr> per trial, the best marked, sel selected.
function rowsHtml(rows, study, sel, now) {
  const out = [];
  for (const t of rows) {
    const cls = [t === study.best ? 'tn-best' : '', t.id === sel ? 'tn-selected' : ''].filter(Boolean);
    const best = t === study.best ? ' <span class="tn-badge">best</span>' : '';
    const params = study.params
      .map((p) => {
        const v = t.values[p.name];
        const text = typeof v === 'number' ? fmtNum(v) : (v ?? '');
        return `<td${p.kind !== 'cat' ? ' class="tn-num"' : ''}>${esc(text)}</td>`;
      })
      .join('');
    const state = `<span class="tn-state tn-${esc(t.state.toLowerCase())}">${esc(t.state)}</span>`;
    out.push(
      `<tr data-tid="${esc(t.id)}"${cls.length ? ` class="${cls.join(' ')}"` : ''}>` +
        `<td class="tn-num"><button type="button" class="tn-trial" aria-label="Show trial ${esc(t.id)}">${esc(t.id)}</button>${best}</td>` +
        `${params}<td class="tn-num">${t.objective === null ? '' : fmtNum(t.objective)}</td>` +
        `<td>${state}</td><td>${t.early ? 'yes' : ''}</td>` +
        `<td class="tn-num">${esc(fmtDuration(durationOf(t, now)))}</td></tr>`,
    );
  }
  return out.join('');
}

function skeleton() {
  return `
<div class="tn">
  <p class="tn-summary" data-role="summary"></p>
  <p class="tn-error" data-role="error" role="alert" hidden></p>
  <p class="tn-note" data-role="empty" hidden>No trial has reported its metric yet: the plots fill in as trials end.</p>
  <div class="tn-plots">
    <section class="tn-card"><h3>Optimization history</h3>
      <p class="tn-note">Objective of each finished trial; the line is the best so far.</p>
      <div class="tn-chart" data-chart="history"></div></section>
    <section class="tn-card"><h3>Intermediate values</h3>
      <p class="tn-note">Each trial's reported objective by step; dashed and crossed: stopped early.</p>
      <div class="tn-chart" data-chart="curves"></div></section>
    <section class="tn-card tn-wide"><h3>Parallel coordinates</h3>
      <p class="tn-note">One line per finished trial, coloured by its objective (the scale on the right). Drag along an axis to filter.</p>
      <div class="tn-chart tn-tall" data-chart="parallel"></div></section>
    <section class="tn-card tn-wide"><h3>Slices</h3>
      <p class="tn-note">The objective against each parameter, one point per finished trial; later trials in stronger colours.</p>
      <div class="tn-slices" data-role="slices"></div></section>
  </div>
  <div class="tn-lower">
    <section class="tn-card tn-trials"><h3>Trials</h3>
      <div class="tn-scroll" data-role="table"></div></section>
    <section class="tn-card tn-detail" data-role="detail" aria-live="polite" tabindex="-1"></section>
  </div>
</div>`;
}

function summaryText(job, study) {
  const parts = [job.state || ''];
  const max = study.maxTrials ? ` of up to ${study.maxTrials}` : '';
  const n = study.trials.length;
  parts.push(`${n} ${n === 1 ? 'trial' : 'trials'}${max}, ${study.finished.length} finished`);
  parts.push(`${study.goal === 'MINIMIZE' ? 'minimizing' : 'maximizing'} ${study.metric}`);
  if (study.best) parts.push(`best: trial ${study.best.id} (${fmtNum(study.best.objective)})`);
  return parts.filter(Boolean).join(' · ');
}

class TuningPage {
  constructor(root, ctx) {
    this.root = root;
    this.ctx = ctx;
    this.sort = { key: 'objective', dir: 1 };
    this.shown = PAGE_ROWS; // how many rows of the table are shown
    this.sel = new URLSearchParams((location.hash.split('?')[1] || '')).get('trial');
    this.charts = new Map(); // name -> ECharts instance
    this.timer = 0;
    this.stopped = false;
    this.sig = '';
    root.innerHTML = skeleton();
    this.q = (role) => root.querySelector(`[data-role="${role}"]`);
    this.observer = new ResizeObserver((entries) => this.resized(entries));
    this.q('table').addEventListener('click', (e) => this.tableClick(e));
  }

  // chart(name, el, size): the chart called name, on el, created at size if it is new.
  chart(name, el, size) {
    let c = this.charts.get(name);
    if (!c) {
      c = createChart(el, size, (tid) => this.select(tid, true));
      this.charts.set(name, c);
      this.observer.observe(el);
    }
    return c;
  }

  resized(entries) {
    const sizes = entries.map((e) => [e.target, e.contentRect.width, e.contentRect.height]);
    requestAnimationFrame(() => {
      for (const [el, width, height] of sizes) {
        const c = echarts.getInstanceByDom(el);
        if (c && !c.isDisposed() && (c.getWidth() !== width || c.getHeight() !== height)) {
          c.resize({ width, height });
        }
      }
    });
  }

  // render(job): draws everything from job; records the time taken in root's data-render-ms
  // (from the job's arrival to the table laid out and every chart painted).
  async render(job) {
    const t0 = performance.now();
    this.job = job;
    const study = makeStudy(job);
    this.study = study;
    useTheme(this.root);
    if (this.sel !== null && !study.byId.has(this.sel)) this.sel = null;
    this.q('summary').textContent = summaryText(job, study);
    this.q('empty').hidden = study.finished.length > 0;
    const s = this.q('slices');
    if (s.childElementCount !== study.params.length) {
      s.innerHTML = study.params
        .map((p, i) => `<figure><figcaption>${esc(p.name)}${p.log ? ' (log scale)' : ''}</figcaption>` +
          `<div class="tn-chart tn-small" data-chart="slice-${i}"></div></figure>`)
        .join('');
    }
    // Every size is read at once (one layout), before the charts change the page.
    const plots = [
      ['history', historyOption(study, this.sel)],
      ['parallel', parallelOption(study, this.sel)],
      ['curves', curvesOption(study, this.sel)],
      ...study.params.map((p, i) => [`slice-${i}`, sliceOption(study, p, this.sel)]),
    ].map(([name, plot]) => {
      const el = this.root.querySelector(`[data-chart="${name}"]`);
      return { name, plot, el, size: { width: el.clientWidth, height: el.clientHeight } };
    });
    const drawing = plots.map((p) => drawn(this.chart(p.name, p.el, p.size), p.plot));
    for (const p of plots) p.el.dataset.points = String(p.plot.count);
    this.drawTable();
    await Promise.all(drawing);
    if (this.stopped) return; // the page was left meanwhile
    await this.drawDetail();
    this.root.getBoundingClientRect(); // the layout of the table and details, counted too
    const ms = performance.now() - t0;
    this.root.dataset.renderMs = ms.toFixed(1);
    this.root.dataset.trials = String(study.trials.length);
    this.root.dataset.finished = String(study.finished.length);
  }

  // drawTable(): the trials in the current order, the first this.shown of them (a study of
  // thousands of trials lays out fast), with buttons that show more.
  drawTable() {
    const box = this.q('table');
    const { study, sort } = this;
    if (!study.trials.length) {
      box.innerHTML = '<p class="tn-note">No trial has started yet.</p>';
      return;
    }
    this.rows = sortTrials(study.trials, sort.key, sort.dir, study);
    const shown = this.rows.slice(0, this.shown);
    const left = this.rows.length - shown.length;
    const more = left > 0
      ? `<p class="tn-more">Showing ${shown.length} of ${this.rows.length} trials. ` +
        `<button type="button" data-more="${PAGE_ROWS}">Show ${Math.min(PAGE_ROWS, left)} more</button> ` +
        `<button type="button" data-more="all">Show all</button></p>`
      : '';
    box.innerHTML = tableHtml(study, sort, rowsHtml(shown, study, this.sel, Date.now())) + more;
  }

  tableClick(e) {
    const head = e.target.closest('button[data-sort]');
    if (head) {
      const key = head.dataset.sort;
      this.sort = { key, dir: this.sort.key === key ? -this.sort.dir : 1 };
      this.drawTable();
      const again = this.q('table').querySelector(`button[data-sort="${CSS.escape(key)}"]`);
      if (again) again.focus();
      return;
    }
    const more = e.target.closest('button[data-more]');
    if (more) {
      const n = more.dataset.more;
      const next = this.rows[this.shown];
      this.shown = n === 'all' ? Infinity : this.shown + Number(n);
      this.drawTable();
      // Focus moves to the first new row's trial button (the clicked button is gone).
      const row = next && this.q('table').querySelector(`tr[data-tid="${CSS.escape(next.id)}"] button`);
      if (row) row.focus();
      return;
    }
    const row = e.target.closest('tr[data-tid]');
    if (row) this.select(row.dataset.tid, false);
  }

  // select(tid, fromPlot): shows trial tid's details and marks it in the table and plots.
  async select(tid, fromPlot) {
    const { study } = this;
    if (!study || !study.byId.has(tid)) return;
    this.sel = tid;
    const t = study.byId.get(tid);
    // The address names the trial (a reload or a shared link shows it again); no navigation.
    const [path, query] = location.hash.split('?');
    if (path.endsWith('/tuning')) {
      const q = new URLSearchParams(query || '');
      q.set('trial', tid);
      history.replaceState(history.state, '', `${path}?${q}`);
    }
    const at = this.rows ? this.rows.indexOf(t) : -1;
    if (at >= this.shown) {
      this.shown = Math.ceil((at + 1) / PAGE_ROWS) * PAGE_ROWS;
      this.drawTable();
    }
    for (const r of this.root.querySelectorAll('tr.tn-selected')) r.classList.remove('tn-selected');
    const row = this.root.querySelector(`tr[data-tid="${CSS.escape(tid)}"]`);
    if (row) {
      row.classList.add('tn-selected');
      if (fromPlot) row.scrollIntoView({ block: 'nearest' });
    }
    const patch = (name, data) => {
      const c = this.charts.get(name);
      if (c) c.setOption({ series: [{ id: 'selected', data }] });
    };
    patch('history', selectedData('history', study, t));
    patch('parallel', selectedData('parallel', study, t));
    patch('curves', selectedData('curves', study, t));
    study.params.forEach((p, i) => patch(`slice-${i}`, selectedData('slice', study, t, p)));
    await this.drawDetail();
    const detail = this.q('detail');
    const box = detail.getBoundingClientRect();
    if (box.top < 0 || box.top > window.innerHeight) detail.scrollIntoView({ block: 'start' });
  }

  async drawDetail() {
    const detail = this.q('detail');
    const t = this.sel !== null ? this.study.byId.get(this.sel) : null;
    const old = this.charts.get('trial');
    if (old) {
      this.charts.delete('trial');
      this.observer.unobserve(old.getDom());
      old.dispose();
    }
    if (!t) {
      detail.innerHTML = '<h3>Trial details</h3><p class="tn-note">Select a trial in the table or in a plot.</p>';
      return;
    }
    detail.innerHTML = detailHtml(t, this.study, this.ctx);
    if (t.curve.length && !this.stopped) {
      const el = detail.querySelector('[data-chart="trial"]');
      const size = { width: el.clientWidth, height: el.clientHeight };
      await drawn(this.chart('trial', el, size), trialCurveOption(t, this.study));
    }
  }

  // refresh(): re-reads the job every 5 s while it is not final and the page is shown.
  schedule() {
    if (this.stopped || FINAL.has(this.job.state)) return;
    this.timer = setTimeout(() => this.refresh(), REFRESH_MS);
  }

  async refresh() {
    if (this.stopped) return;
    if (!this.root.isConnected) return this.destroy();
    if (!document.hidden) {
      const err = this.q('error');
      try {
        const path = `/v1/projects/${encodeURIComponent(this.ctx.project)}/jobs/${encodeURIComponent(this.ctx.jobId)}`;
        const job = await this.ctx.api.get(path);
        err.hidden = true;
        if (this.stopped) return;
        const sig = signature(job);
        if (typeof this.ctx.onJob === 'function') this.ctx.onJob(job); // e.g. the app's header
        if (sig !== this.sig) {
          this.sig = sig;
          await this.render(job);
        } else if (this.study.trials.some((t) => t.state === 'RUNNING')) {
          this.drawTable(); // the running trials' durations
        }
      } catch (e) {
        err.textContent = `Could not refresh the job: ${e.message}`;
        err.hidden = false;
      }
    }
    this.schedule();
  }

  destroy() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.observer.disconnect();
    for (const c of this.charts.values()) c.dispose();
    this.charts.clear();
  }
}

// signature(job): what the page shows of job, in short: when it changes, the page is redrawn.
function signature(job) {
  const trials = (job.trainingOutput && job.trainingOutput.trials) || [];
  const parts = trials.map((t) => {
    const n = Array.isArray(t.allMetrics) ? t.allMetrics.length : 0;
    return `${t.trialId}:${t.state}:${t.endTime || ''}:${n}:${t.finalMetric ? t.finalMetric.objectiveValue : ''}`;
  });
  return `${job.state}|${parts.join(',')}`;
}

function detailHtml(t, study, ctx) {
  const logs = `#/projects/${encodeURIComponent(ctx.project)}/jobs/${encodeURIComponent(ctx.jobId)}` +
    `/logs?trial=${encodeURIComponent(t.id)}`;
  const best = t === study.best ? ' <span class="tn-badge">best</span>' : '';
  const obj = t.objective === null ? '—' : `${fmtNum(t.objective)}${t.step !== '' ? ` at step ${esc(t.step)}` : ''}`;
  const time = (ms) => (Number.isFinite(ms) ? esc(fmtTime(new Date(ms).toISOString())) : '—');
  const params = study.params
    .map((p) => `<tr><th scope="row">${esc(p.name)}</th><td>${esc(t.raw[p.name] ?? '')}</td></tr>`)
    .join('');
  return `<h3>Trial ${esc(t.id)}${best}</h3>
<dl class="tn-facts">
  <dt>State</dt><dd>${esc(t.state)}${t.early ? ' (stopped early)' : ''}</dd>
  <dt>${esc(study.metric)}</dt><dd>${obj}</dd>
  <dt>Started</dt><dd>${time(t.start)}</dd>
  <dt>Ended</dt><dd>${time(t.end)}</dd>
  <dt>Duration</dt><dd>${esc(fmtDuration(durationOf(t, Date.now()))) || '—'}</dd>
</dl>
<table class="tn-params"><caption>Parameters</caption><tbody>${params}</tbody></table>
${t.error ? `<pre class="tn-error-text">${esc(t.error)}</pre>` : ''}
${t.curve.length ? '<div class="tn-chart tn-small" data-chart="trial"></div>' : '<p class="tn-note">No intermediate values reported.</p>'}
<p><a href="${esc(logs)}">Logs of trial ${esc(t.id)}</a></p>`;
}

// showTuning(root, ctx): fills root with the Tuning page of ctx.job (see the top of the file);
// resolves, once it is drawn, to the function that stops its refreshing and frees its charts.
export async function showTuning(root, ctx) {
  const job = ctx.job;
  if (!job || !job.trainingInput || !job.trainingInput.hyperparameters) {
    root.innerHTML = '<p class="tn-note">This job is not a hyperparameter tuning job.</p>';
    return () => {};
  }
  if (!document.getElementById('tn-style')) {
    const style = document.createElement('style');
    style.id = 'tn-style';
    style.textContent = TUNING_CSS;
    document.head.appendChild(style);
  }
  const page = new TuningPage(root, ctx);
  page.sig = signature(job);
  await page.render(job);
  page.schedule();
  return () => page.destroy();
}

if (new URLSearchParams(location.search).has('test-hooks')) {
  window.__trainyardTuning = {
    echarts,
    // bench(root, job): draws job (a jobs.get object) on root as the page does; the time
    // taken (ms) is returned and left in root's data-render-ms.
    async bench(root, job) {
      const ctx = { api: { get: async () => job }, project: 'bench', jobId: job.jobId || 'bench', job, go() {} };
      const stop = await showTuning(root, ctx);
      return { ms: Number(root.dataset.renderMs), stop };
    },
  };
}
