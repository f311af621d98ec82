// signin.js — staff sign-in for the crew handheld and the promotions desk (docs/security.md,
// "Staff sign-in"): the form (staff number, then the PIN on a pad; a badge reader types the
// number and Enter), who is signed in (GET /staff/me), activity reported while the person
// works (POST /staff/session/keepalive, at most once a minute: a GET never changes state),
// and signing out. The session itself is an HttpOnly cookie: no script here ever sees it,
// and nothing secret is ever put in a URL or in storage.
//
//   startSignIn({ form, who, logout, bar, onSignedIn(me) });
//   endSession(reason)   // the session was refused: clear the cookie, show the form again

import { api, whenSessionRefused } from './api.js';
import { clearToken, signOut } from './auth.js';
import { h, setText } from './dom.js';

const KEEPALIVE_MS = 60000; // the daemon ends a session after BONUSD_STAFF_IDLE_S (15 min)
let lastReport = 0;
let ending = false;

/** The person's words for why the daemon refused the session. */
export function friendly(detail) {
  const text = String(detail || '');
  if (/inactivity/.test(text)) return 'Signed out after a while without activity. Sign in again.';
  if (/expired/.test(text)) return 'Your sign-in ended with the shift. Sign in again.';
  if (/account disabled/.test(text)) return 'Signed out: this staff account was disabled. Ask a supervisor.';
  if (/PIN reset/.test(text)) return 'Signed out: your PIN was reset. Sign in with the new PIN.';
  if (/signed out|revoked/.test(text)) return 'Signed out.';
  return text ? `Signed out: ${text}` : 'Signed out.';
}

/**
 * The session ended (revoked, disabled, idle, the shift over): ask the daemon why, clear the
 * dead cookie, and reload to the sign-in form so nothing the page showed stays on screen.
 */
export async function endSession(reason) {
  if (ending) return;
  ending = true;
  for (const id of ['main', 'tabs']) { // what the page showed goes at once
    const el = document.getElementById(id);
    if (el) el.hidden = true;
  }
  const me = await api('/staff/me');
  const why = me.status === 401 ? me.detail : reason;
  await api('/staff/sign-out', { method: 'POST' });
  signOut(friendly(why));
}

/** Sign out on purpose (the page is not for this account) and say why on the form. */
export async function signOutWith(message) {
  ending = true;
  await api('/staff/sign-out', { method: 'POST' });
  signOut(message);
}

/** Report that the person is working, at most once a minute; a refusal ends the page. */
async function activity() {
  const now = performance.now();
  if (ending || now - lastReport < KEEPALIVE_MS) return;
  lastReport = now;
  await api('/staff/session/keepalive', { method: 'POST' }); // a 401 ends the page (api.js)
}

function pinPad(form) {
  const pin = form.elements.pin;
  // the pad does not focus the PIN field: on a handheld that would raise the on-screen
  // keyboard over the pad
  const key = (label, action, extra = {}) => h('button', { type: 'button', text: label, onclick: action, ...extra });
  const digits = ['1', '2', '3', '4', '5', '6', '7', '8', '9'].map((d) =>
    key(d, () => { if (pin.value.length < 8) pin.value += d; }, { dataset: { digit: d } }));
  return h(
    'div',
    { class: 'pinpad', role: 'group', 'aria-label': 'PIN pad' },
    digits,
    key('Clear', () => { pin.value = ''; }, { class: 'soft', dataset: { key: 'clear' } }),
    key('0', () => { if (pin.value.length < 8) pin.value += '0'; }, { dataset: { digit: '0' } }),
    key('⌫', () => { pin.value = pin.value.slice(0, -1); }, { class: 'soft', dataset: { key: 'back' }, 'aria-label': 'Delete the last digit' }),
  );
}

function wireForm(form, onSignedIn) {
  const staff = form.elements.staff;
  const pin = form.elements.pin;
  const error = form.querySelector('.refused');
  form.querySelector('.pinpad-slot').replaceWith(pinPad(form));
  // a badge reader types the number and Enter: go on to the PIN, do not submit yet
  staff.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && staff.value.trim() && !pin.value) {
      ev.preventDefault();
      pin.focus();
    }
  });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { staff: staff.value.trim(), pin: pin.value };
    if (!body.staff) {
      staff.focus();
      return;
    }
    if (!body.pin) {
      pin.focus();
      return;
    }
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    setText(error, '');
    const r = await api('/staff/sign-in', { method: 'POST', body });
    button.disabled = false;
    pin.value = '';
    if (!r.ok) {
      const said = r.status === 422 ? 'check the staff number: letters and digits only.' : r.detail;
      setText(error, said.charAt(0).toUpperCase() + said.slice(1));
      pin.focus();
      return;
    }
    staff.value = '';
    lastReport = performance.now();
    onSignedIn(r.data);
  });
}

/**
 * Wire the page: `form` is the sign-in form (inputs staff and pin, a .pinpad-slot, a
 * .refused line), `who` shows the name, `logout` signs out (`bar`, if given, holds both).
 * Calls onSignedIn(me) at once when the browser holds a live session, else after a sign-in.
 */
export async function startSignIn({ form, who, logout, bar = null, onSignedIn }) {
  // a token in the address bar would stay in the browser's history, and one a tab kept
  // from before staff sign-in would stand in for a person: never use one here
  clearToken();
  const query = new URLSearchParams(location.search);
  if (query.has('token')) {
    query.delete('token');
    const rest = query.toString();
    history.replaceState(null, '', `${location.pathname}${rest ? `?${rest}` : ''}${location.hash}`);
  }
  const signedIn = (me) => {
    setText(who, me.staff ? `${me.name.replace(/ \(staff [^)]*\)$/, '')} · staff ${me.staff}` : me.name);
    for (const el of [bar, who, logout]) if (el) el.hidden = false;
    for (const ev of ['pointerdown', 'keydown']) document.addEventListener(ev, activity, { passive: true });
    whenSessionRefused(endSession); // any call refused from now on: the session is over
    onSignedIn(me);
  };
  logout.addEventListener('click', () => signOutWith('Signed out.'));
  wireForm(form, signedIn);
  const me = await api('/staff/me');
  if (me.ok) {
    signedIn(me.data);
    return;
  }
  form.hidden = false;
  form.elements.staff.focus();
}
