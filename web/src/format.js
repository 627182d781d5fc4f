// SPDX-License-Identifier: Apache-2.0
// format.js: what every page needs to show things: a tiny DOM builder (h, fill, patch),
// times in the browser's time zone, durations, the state badge, hash links to the pages, and
// the job states that can still change or be cancelled.

/** h('a', {href, class, onclick, ...}, children...): a new element. Props starting with "on"
 *  are listeners, `class` the class name, booleans set/unset attributes, `dataset` an object;
 *  children are nodes or strings (null/false skipped, arrays flattened). */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false)
      continue;
    if (k.startsWith('on') && typeof v === 'function')
      el.addEventListener(k.slice(2), v);
    else if (k === 'class')
      el.className = v;
    else if (k === 'dataset')
      Object.assign(el.dataset, v);
    else if (k === 'value' || k === 'checked' || k === 'selected')
      el[k] = v;
    else
      el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false || c === '')
      continue;
    if (Array.isArray(c))
      append(el, c);
    else
      el.append(c instanceof Node ? c : String(c));
  }
}

/** Replace everything in @el by @children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Make @el's content that of fill(@el, ...@children), changing only the nodes that differ:
 *  those that are the same stay, and with them a text selected in them. (No listeners: the
 *  nodes of @children that are kept are the old ones.) */
export function patch(el, ...children) {
  morph(el, fill(document.createElement(el.tagName), ...children));
  return el;
}

function sameAttributes(a, b) {
  return a.attributes.length === b.attributes.length &&
    [...a.attributes].every((at) => b.getAttribute(at.name) === at.value);
}

/** @el's child nodes made equal to @fresh's. */
function morph(el, fresh) {
  const old = [...el.childNodes];
  const now = [...fresh.childNodes];
  now.forEach((n, i) => {
    const o = old[i];
    if (!o)
      el.append(n);
    else if (o.isEqualNode(n))
      return;
    else if (o.nodeType === Node.TEXT_NODE && n.nodeType === Node.TEXT_NODE)
      o.data = n.data;
    else if (o.nodeType === Node.ELEMENT_NODE && o.tagName === n.tagName && sameAttributes(o, n))
      morph(o, n);
    else
      o.replaceWith(n);
  });
  for (const o of old.slice(now.length))
    o.remove();
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

/** An RFC 3339 time as "2026-05-01 14:03:07" in the browser's zone; '' for none. */
export function fmtTime(rfc) {
  if (!rfc)
    return '';
  const d = new Date(rfc);
  if (Number.isNaN(d.getTime()))
    return String(rfc);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** The same with milliseconds, for log lines. */
export function fmtTimeMs(rfc) {
  const d = new Date(rfc);
  if (!rfc || Number.isNaN(d.getTime()))
    return rfc || '';
  return `${fmtTime(rfc)}.${pad(d.getMilliseconds(), 3)}`;
}

/** A <time> element showing @rfc, with the exact UTC time as its tooltip. */
export function timeEl(rfc) {
  if (!rfc)
    return '';
  return h('time', { datetime: rfc, title: rfc }, fmtTime(rfc));
}

/** Milliseconds as "850 ms", "12.3 s", "4 min 05 s", "2 h 03 min", "3 d 4 h". */
export function fmtDuration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms))
    return '';
  if (ms < 0)
    ms = 0;
  if (ms < 1000)
    return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60)
    return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60)
    return `${m} min ${pad(Math.floor(s % 60))} s`;
  const hr = Math.floor(m / 60);
  if (hr < 48)
    return `${hr} h ${pad(m % 60)} min`;
  return `${Math.floor(hr / 24)} d ${hr % 24} h`;
}

/** The time from @a to @b (RFC 3339; @b missing: now), formatted; '' without @a. */
export function between(a, b) {
  if (!a)
    return '';
  const t0 = Date.parse(a);
  const t1 = b ? Date.parse(b) : Date.now();
  return fmtDuration(t1 - t0);
}

export const FINAL_STATES = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
export const CANCELLABLE = new Set(['QUEUED', 'PREPARING', 'RUNNING']);

/** A job's or replica's state as a coloured badge (the word is always there: colour is not
 *  the only sign). */
export function badge(state) {
  const s = state || 'STATE_UNSPECIFIED';
  return h('span', { class: `badge st-${s.toLowerCase()}` }, s);
}

const enc = encodeURIComponent;

/** Hash links to the pages. */
export const links = {
  jobs: (project, params) => {
    const q = new URLSearchParams(params || {});
    if (project)
      q.set('project', project);
    const s = q.toString();
    return `#/jobs${s ? `?${s}` : ''}`;
  },
  job: (p, j) => `#/projects/${enc(p)}/jobs/${enc(j)}`,
  logs: (p, j, params) => {
    const s = new URLSearchParams(params || {}).toString();
    return `#/projects/${enc(p)}/jobs/${enc(j)}/logs${s ? `?${s}` : ''}`;
  },
  tuning: (p, j) => `#/projects/${enc(p)}/jobs/${enc(j)}/tuning`,
};

/** A message box: kind 'error' (role=alert), 'note' or 'ok'. */
export function message(kind, text) {
  return h('p', { class: `msg msg-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

/** Is this a hyperparameter tuning job? */
export function isTuning(job) {
  return !!(job && job.trainingInput && job.trainingInput.hyperparameters);
}
