// api.js — HTTP calls of the crew and desk pages: every fetch carries the signed-in staff
// member's session cookie (the browser adds it; no script sees it) or, for a page holding a
// machine's token, `Authorization: Bearer`, and every answer comes back as
// {ok, status, data, detail}, where `detail` is the server's own words for a refusal (409),
// a wrong role (403) and so on.

import { getToken } from './auth.js';

let sessionRefused = null;

/** Call `fn(detail)` when the daemon refuses the page's session (401) from now on. */
export function whenSessionRefused(fn) {
  sessionRefused = fn;
}

export async function api(path, { method = 'GET', body, accept = 'application/json' } = {}) {
  const headers = { Accept: accept };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  let payload;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload, cache: 'no-store' });
  } catch (err) {
    return { ok: false, status: 0, data: null, detail: `the daemon did not answer (${err})` };
  }
  const type = response.headers.get('content-type') || '';
  let data = null;
  let text = '';
  if (type.includes('json')) data = await response.json().catch(() => null);
  else text = await response.text().catch(() => '');
  if (response.ok) return { ok: true, status: response.status, data: data ?? text, detail: '' };
  const detail = describe(response.status, data, text);
  if (response.status === 401 && sessionRefused) sessionRefused(detail);
  return { ok: false, status: response.status, data, detail };
}

function describe(status, data, text) {
  const detail = data && data.detail;
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((d) => {
        const where = (d.loc || []).slice(1).join('.');
        return where ? `${where}: ${d.msg}` : d.msg; // a rule's refusal names no field
      })
      .join('; ');
  }
  return `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`;
}

/** Encode each path segment. */
export function path(...segments) {
  return `/${segments.map((s) => encodeURIComponent(String(s))).join('/')}`;
}
