// pairing.js — a floor screen's own credential (docs/security.md, "Paired screens and machine
// credentials"). It is kept in this screen's localStorage, never in a URL, so a reload (or a
// power cut) keeps it. A screen without one pairs: it asks the daemon for a pairing
// (POST /screens/pairing, no token), shows the 6-character code big with its screen size,
// and polls every few seconds with the pairing secret it was given (POST
// /screens/pairing/claim, the secret in the body) until someone approves the code on the desk
// or with `bonusd screens pair`; then it keeps the credential (given once) and starts. A
// code that expires (10 minutes) is replaced by a new one; a reload while waiting shows the
// same code. A credential the daemon refuses later (revoked, expired) is forgotten and the
// screen pairs again (`forget`).

import { byId, fill, h, setText, show } from './dom.js';

const CREDENTIAL = 'bonusd.screen'; // {token, id, name, area}
const WAITING = 'bonusd.screen.pairing'; // the pairing secret while the code waits
const NOTE = 'bonusd.screen.note'; // why this screen pairs again, shown once
const POLL_MS = 3000;
const RETRY_MS = 5000;

function stored(key) {
  try {
    return localStorage.getItem(key) || '';
  } catch {
    return '';
  }
}

function store(key, value) {
  try {
    if (value) localStorage.setItem(key, value);
    else localStorage.removeItem(key);
  } catch {
    // storage refused (a kiosk browser in private mode): kept only until the page reloads
  }
}

/** The credential this screen holds: {token, id, name, area}, or null. */
export function credential() {
  try {
    const kept = JSON.parse(stored(CREDENTIAL) || 'null');
    return kept && typeof kept.token === 'string' && kept.token ? kept : null;
  } catch {
    return null;
  }
}

/** Forget the credential (the daemon refused it) and say why on the pairing screen. */
export function forget(reason) {
  store(CREDENTIAL, '');
  store(NOTE, String(reason || 'this screen’s credential was refused').slice(0, 200));
}

/** The screen's size in device pixels, as the installer sees it on the box. */
export function screenSize() {
  const ratio = window.devicePixelRatio || 1;
  return { width: Math.round(screen.width * ratio), height: Math.round(screen.height * ratio) };
}

async function post(path, body, token) {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  try {
    const r = await fetch(path, { method: 'POST', headers, body: JSON.stringify(body), cache: 'no-store' });
    const data = await r.json().catch(() => ({}));
    const wait = Number(r.headers.get('Retry-After')) || 0;
    return { status: r.status, data, wait };
  } catch {
    return { status: 0, data: {}, wait: 0 };
  }
}

/** Tell the daemon what this screen runs on (size, browser: the desk's list). Best effort:
 *  whether the credential still holds is the stream's to say. */
export function hello(token) {
  return post('/screens/hello', screenSize(), token);
}

function clockText(seconds) {
  const s = Math.max(0, Math.round(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** The pairing screen: shows the code until approved, then calls onPaired(credential). */
export class Pairing {
  constructor(onPaired) {
    this.onPaired = onPaired;
    this.timer = null;
    this.deadline = 0; // performance.now() when the shown code expires
    this.el = {
      root: byId('pairing'),
      code: byId('pairing-code'),
      size: byId('pairing-size'),
      left: byId('pairing-left'),
      status: byId('pairing-status'),
      note: byId('pairing-note'),
      command: byId('pairing-command'),
    };
  }

  start(extraNote = '') {
    const { width, height } = screenSize();
    document.body.className = 'pairing';
    show(this.el.root, true);
    setText(this.el.size, `${width} × ${height} · ${width >= height ? 'landscape' : 'portrait'}`);
    const note = [stored(NOTE), extraNote].filter(Boolean).join(' ');
    store(NOTE, '');
    setText(this.el.note, note);
    show(this.el.note, Boolean(note));
    setInterval(() => this.tick(), 1000);
    if (stored(WAITING)) this.poll(); // a reload while waiting: the same code
    else this.begin();
  }

  later(step, ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => step.call(this), ms);
  }

  showCode(code, expiresInS) {
    setText(this.el.code, code);
    if (this.el.command.dataset.code !== code) { // wraps between its parts, never inside
      this.el.command.dataset.code = code;
      fill(this.el.command, h('span', { class: 'whole', text: `bonusd screens pair ${code}` }), ' ',
        h('span', { class: 'whole', text: '--area main --name "Bar 3"' }));
    }
    this.deadline = performance.now() + expiresInS * 1000;
    this.tick();
  }

  tick() {
    if (!this.deadline) return;
    const left = (this.deadline - performance.now()) / 1000;
    setText(this.el.left, left > 0 ? `This code changes in ${clockText(left)}` : 'Getting a new code…');
  }

  async begin() {
    setText(this.el.status, 'Asking the daemon for a pairing code…');
    const r = await post('/screens/pairing', screenSize());
    if (r.status === 201 && r.data.secret) {
      store(WAITING, r.data.secret);
      this.showCode(r.data.code, r.data.expires_in_s);
      setText(this.el.status, 'Waiting to be paired…');
      this.later(this.poll, POLL_MS);
    } else {
      this.trouble(r, this.begin);
    }
  }

  async poll() {
    const r = await post('/screens/pairing/claim', { secret: stored(WAITING) });
    if (r.status === 202) {
      this.showCode(r.data.code, r.data.expires_in_s);
      setText(this.el.status, 'Waiting to be paired…');
      this.later(this.poll, POLL_MS);
    } else if (r.status === 200 && r.data.token) {
      const screen = r.data.screen || {};
      store(CREDENTIAL, JSON.stringify({ token: r.data.token, id: screen.id, name: screen.name, area: screen.area }));
      store(WAITING, '');
      clearTimeout(this.timer);
      show(this.el.root, false);
      this.onPaired(credential());
    } else if ([401, 404, 410, 422].includes(r.status)) {
      store(WAITING, ''); // expired, collected or unknown: a new code
      this.begin();
    } else {
      this.trouble(r, this.poll);
    }
  }

  trouble(r, retry) {
    const wait = r.status === 429 ? Math.max(r.wait, 5) * 1000 : RETRY_MS;
    const why = r.status === 0 ? 'The daemon does not answer' : (r.data && r.data.detail) || `HTTP ${r.status}`;
    setText(this.el.status, `${why}; trying again in ${Math.round(wait / 1000)} s`);
    this.later(retry, wait);
  }
}
