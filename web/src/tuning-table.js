// tuning-table.js: the Tuning page's trials table: the order of the trials (best first by the
// study's goal, or by any column) and its HTML. Column headers are buttons (keyboard sorting,
// aria-sort); each row's trial id is a button that selects the trial; the best row is marked.
import { esc, fmtNum } from './charts.js';

// fmtDuration(ms): "4.2 s", "3 min 05 s", "2 h 07 min" ("" when unknown).
export function fmtDuration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '';
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

// durationOf(t, now): how long trial t ran (or has run so far, while it runs), in ms.
export function durationOf(t, now) {
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
export function sortTrials(trials, key, dir, study) {
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
export function tableHtml(study, sort, body) {
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
  return `<table class="tn-table"><caption class="tn-sr">${n} trials; sort by a column with its header</caption>` +
    `<thead><tr>${heads.join('')}</tr></thead><tbody>${body}</tbody></table>`;
}

// rowsHtml(rows, study, sel, now): one <tr> per trial, the best marked, sel selected.
export function rowsHtml(rows, study, sel, now) {
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
