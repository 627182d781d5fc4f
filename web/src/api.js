// SPDX-License-Identifier: Apache-2.0
// api.js: every call the dashboard makes to trainyardd's REST API. It sends the token kept in
// sessionStorage as `Authorization: Bearer`, bodies as application/json (the service refuses
// other bodies), turns an error answer in Google's form ({"error": {code, message, status}})
// into an ApiError carrying the service's message, and reads a followed log stream
// (application/x-ndjson) as it arrives. A 401 also goes to the handler the app sets, which
// shows the sign-in form again.

const TOKEN_KEY = 'trainyard.token';

/** The token of this browser tab, or '' (none, or storage refused). */
export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

/** Keep @t for this tab (sessionStorage: gone when the tab closes); '' forgets it. */
export function setToken(t) {
  try {
    if (t)
      sessionStorage.setItem(TOKEN_KEY, t);
    else
      sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage refused (a private mode): the token then lasts until the page is reloaded.
  }
  memoryToken = t;
}
let memoryToken = '';

function token() {
  return getToken() || memoryToken;
}

/** An error answer of the service: httpStatus (0 when it did not answer), status (Google's
 *  status word, e.g. ABORTED), and the service's message as the Error's message. */
export class ApiError extends Error {
  constructor(httpStatus, status, message) {
    super(message);
    this.name = 'ApiError';
    this.httpStatus = httpStatus;
    this.status = status;
  }
}

let unauthorized = null;

/** Call @fn(err) whenever a request is answered 401 (no token, or one the service refuses). */
export function onUnauthorized(fn) {
  unauthorized = fn;
}

function headers(hasBody, extra) {
  const h = { Accept: 'application/json', ...extra };
  const t = token();
  if (t)
    h.Authorization = `Bearer ${t}`;
  if (hasBody)
    h['Content-Type'] = 'application/json';
  return h;
}

async function errorOf(res) {
  let text = '';
  try {
    text = await res.text();
  } catch {
    // the body did not arrive: the status line is all there is
  }
  let message = '';
  let status = '';
  try {
    const j = JSON.parse(text);
    if (j && j.error) {
      message = j.error.message || '';
      status = j.error.status || '';
    }
  } catch {
    // not Google's form (a proxy's page?): fall back to the status line
  }
  if (!message)
    message = `The service answered ${res.status} ${res.statusText || ''}`.trim() + '.';
  const err = new ApiError(res.status, status, message);
  if (res.status === 401 && unauthorized)
    unauthorized(err);
  return err;
}

async function send(method, path, body, signal, extraHeaders) {
  const init = {
    method,
    headers: headers(body !== undefined, extraHeaders),
    cache: 'no-store',
    credentials: 'omit',
    signal,
  };
  if (body !== undefined)
    init.body = JSON.stringify(body);
  // A write that carries the etag it was read at is conditional: the service applies it only
  // while the resource is unchanged, so sending it twice cannot apply it twice (a second copy
  // of one that landed is refused as ABORTED, 409, and the caller looks at what is there).
  const repeatable = method === 'GET' || (typeof body?.etag === 'string' && body.etag !== '');
  for (let attempt = 0; ; attempt++) {
    try {
      return await fetch(path, init);
    } catch (e) {
      if (e && e.name === 'AbortError')
        throw e;
      // A request whose connection broke (the browser's network changed under it: Chromium's
      // ERR_NETWORK_CHANGED) is asked once more if that is safe; another write is not: it may
      // have been done.
      if (!repeatable || attempt > 0)
        throw new ApiError(0, 'UNAVAILABLE', `The service did not answer (${e.message || e}).`);
    }
  }
}

/** @method @path [@body]: the parsed JSON answer ({} for an empty one); throws ApiError. */
export async function request(method, path, body, { signal } = {}) {
  const res = await send(method, path, body, signal);
  if (!res.ok)
    throw await errorOf(res);
  const text = await res.text();
  return text ? JSON.parse(text) : {};
}

export const api = {
  get: (path, opts) => request('GET', path, undefined, opts),
  post: (path, body, opts) => request('POST', path, body === undefined ? {} : body, opts),
  patch: (path, body, opts) => request('PATCH', path, body, opts),
};

/** Read the NDJSON stream at @path (a logs URL with follow=true): calls @onEntries(array)
 *  with the objects of each piece that arrives: entries, and the stream's position lines
 *  ({nextPageToken}); heartbeats, empty lines, are skipped.
 *  Resolves when the service ends the stream; rejects with an ApiError for an error answer,
 *  a TypeError when the connection breaks, an AbortError when @signal aborts. */
export async function readStream(path, onEntries, signal) {
  const res = await send('GET', path, undefined, signal, { Accept: 'application/x-ndjson' });
  if (!res.ok)
    throw await errorOf(res);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let rest = '';
  const flush = (text) => {
    const lines = text.split('\n');
    rest = lines.pop();
    const got = [];
    for (const line of lines)
      if (line.trim())
        got.push(JSON.parse(line));
    if (got.length)
      onEntries(got);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done)
      break;
    flush(rest + decoder.decode(value, { stream: true }));
  }
  flush(rest + decoder.decode() + '\n');
}

/** The API path of project @p's job @j (and of a method or sub-resource: @tail). */
export function jobPath(p, j, tail = '') {
  return `/v1/projects/${encodeURIComponent(p)}/jobs/${encodeURIComponent(j)}${tail}`;
}

/** The API path of project @p's job list. */
export function jobsPath(p) {
  return `/v1/projects/${encodeURIComponent(p)}/jobs`;
}
