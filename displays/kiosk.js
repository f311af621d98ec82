// kiosk.js — the eHost kiosk's flow (docs/kiosk.md): the attract screen holds a focused
// input the card reader types into (a keyboard wedge: the card number, then Enter); the
// card opens a visit (POST /kiosk/visits), the PIN pad asks for the member's PIN when the
// daemon says one is needed, then the member's standing in every running draw is shown
// (GET /kiosk/visit, words in kiosk-view.js). "Activate and print" posts
// /kiosk/visit/receipts and shows the receipt; unless the daemon printed it on its own
// printer, the page prints it through receipt.css on 80 mm paper (window.print()).
//
// A visit ends when the player taps "Done", the card is removed (the reader sends Escape),
// another card is read, or nobody touches the screen for the idle time (meta
// bonusd-kiosk-idle, 30 s; `?idle=N` for 5–600 s): the daemon is told (DELETE
// /kiosk/visit) and every node that held the player's data is removed, not hidden; answers
// still on their way when a visit ends are dropped (a generation count). Refusals (a
// locked card, a wrong PIN, a bin closed, too many reprints) are shown in the daemon's
// words. The kiosk token comes as the signage's does (auth.js: `?token=` or typed).

import { getToken, loginForm, param } from './auth.js';
import { byId, fill, setText, show } from './dom.js';
import { neutralNodes, noticeNodes, receiptScreenNodes, sentence, standingsNodes } from './kiosk-view.js';
import { receiptNode } from './receipt.js';

const SCREENS = ['attract', 'reading', 'pin', 'player', 'receipt', 'notice'];
const PIN_MIN = 4;
const PIN_MAX = 8;
const NOTICE_MS = 10000; // a refusal before any visit (locked, unreadable card) stays this long
const WARN_S = 10; // the idle countdown shows for the last seconds
const DESK = 'Please see the promotions desk.';

const el = Object.fromEntries(
  ['card', 'card-form', 'reading-card', 'pin-card', 'pin-dots', 'pin-message', 'pad',
    'player-body', 'receipt-body', 'notice-body', 'print-receipt', 'who', 'done', 'idle', 'login', 'login-error']
    .map((id) => [id, byId(id)]),
);

let visit = null; // the daemon's visit id while a player is here
let pin = '';
let screen = 'attract';
let generation = 0; // bumped at every reset: an answer of an older visit is dropped
let lastTouch = performance.now();
let noticeTimer = null;
let wedge = ''; // keys typed while another screen than the attract shows (a new card)

function idleSeconds() {
  const given = Number(param('idle'));
  if (Number.isFinite(given) && given >= 5 && given <= 600) return given;
  const meta = document.querySelector('meta[name="bonusd-kiosk-idle"]');
  const value = meta ? Number(meta.content) : NaN;
  return Number.isFinite(value) && value >= 5 ? value : 30;
}
const IDLE_S = idleSeconds();

// -- the daemon -------------------------------------------------------------------------

async function call(path, { method = 'GET', body, withVisit = true } = {}) {
  const headers = { Accept: 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (withVisit && visit) headers['X-Kiosk-Visit'] = visit;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store',
    });
  } catch (err) {
    return { ok: false, status: 0, data: null, detail: `the kiosk cannot reach the promotions system (${err})` };
  }
  const data = (response.headers.get('content-type') || '').includes('json')
    ? await response.json().catch(() => null) : null;
  if (response.ok) return { ok: true, status: response.status, data, detail: '' };
  const detail = data && typeof data.detail === 'string' ? data.detail : `HTTP ${response.status}`;
  return { ok: false, status: response.status, data, detail };
}

// -- screens ------------------------------------------------------------------------------

function showScreen(name) {
  screen = name;
  document.body.dataset.screen = name;
  for (const id of SCREENS) show(byId(id), id === name);
  show(el.done, name !== 'attract');
  if (name === 'attract') focusCard();
}

function focusCard() {
  // never while the token form shows: it would take its keystrokes
  if (screen === 'attract' && el.login.hidden && document.activeElement !== el.card) {
    el.card.focus({ preventScroll: true });
  }
}

/** A message on a screen of its own; before any visit it goes back to attract by itself. */
function notice(title, words, next) {
  fill(el['notice-body'], noticeNodes(title, words, next));
  showScreen('notice');
  if (!visit) noticeTimer = setTimeout(() => endVisit('notice shown'), NOTICE_MS);
}

/** Forget the player: every node their data was in, the visit, the PIN typed, the timers. */
function clearPlayer() {
  generation += 1;
  visit = null;
  pin = '';
  wedge = '';
  clearTimeout(noticeTimer);
  for (const id of ['player-body', 'receipt-body', 'notice-body', 'print-receipt']) fill(el[id]);
  for (const id of ['who', 'reading-card', 'pin-card', 'pin-dots', 'pin-message', 'idle']) fill(el[id]);
  el.card.value = '';
  document.adoptedStyleSheets = [];
}

/** End the visit (Done, card removed, idle, another card): tell the daemon, clear, attract. */
function endVisit(reason) {
  const ending = visit;
  clearPlayer();
  if (ending) fetchDelete(ending); // keepalive: heard even while the page reloads
  window.kioskEnded = { reason, at: Date.now() }; // the page tests read why the visit ended
  showScreen('attract');
}

// -- card, PIN, standings -----------------------------------------------------------------

function last4(card) {
  return `card ••••${card.slice(-4)}`;
}

async function beginVisit(card) {
  if (visit || screen !== 'attract') endVisit('another card');
  clearPlayer();
  const mine = generation;
  touch();
  setText(el['reading-card'], last4(card));
  showScreen('reading');
  const r = await call('/kiosk/visits', { method: 'POST', body: { card }, withVisit: false });
  if (mine !== generation) return;
  setText(el['reading-card'], '');
  if (r.ok && r.data && r.data.visit) {
    visit = String(r.data.visit);
    if (r.data.needs_pin) askPin(card);
    else await loadView();
    return;
  }
  if (r.status === 401 || r.status === 403) return needToken(r.detail);
  if (r.status === 423) return notice(sentence(r.detail), '', '');
  if (r.status === 422) return notice('This card could not be read', '', `Please try again. ${DESK}`);
  if (r.status === 429) return notice('Too many tries', r.detail, 'Please wait a moment and try again.');
  return notice('Something went wrong', r.detail, `Please try again. ${DESK}`);
}

function askPin(card) {
  pin = '';
  setText(el['pin-card'], card ? last4(card) : '');
  setText(el['pin-dots'], '');
  setText(el['pin-message'], '');
  showScreen('pin');
}

function onPad(key) {
  if (screen !== 'pin') return;
  if (key === 'ok') {
    submitPin();
    return;
  }
  if (key === 'clear') pin = pin.slice(0, -1);
  else if (/^\d$/.test(key) && pin.length < PIN_MAX) pin += key;
  setText(el['pin-dots'], '●'.repeat(pin.length));
}

async function submitPin() {
  if (pin.length < PIN_MIN) {
    setText(el['pin-message'], `Your PIN has ${PIN_MIN} to ${PIN_MAX} digits.`);
    return;
  }
  const typed = pin;
  pin = '';
  setText(el['pin-dots'], '');
  const mine = generation;
  const r = await call('/kiosk/visit/pin', { method: 'POST', body: { pin: typed } });
  if (mine !== generation) return;
  if (r.ok) {
    setText(el['pin-card'], '');
    await loadView();
  } else if (r.status === 423) {
    locked(r.detail);
  } else if ((r.status === 401 && /PIN/i.test(r.detail)) || r.status === 429) {
    setText(el['pin-message'], sentence(r.detail));
  } else {
    sessionOver(r);
  }
}

/** The card locked by the PIN just typed: the daemon's words; the visit is over. */
function locked(words) {
  const ending = visit;
  visit = null;
  if (ending) fetchDelete(ending);
  fill(el['pin-card']);
  notice(sentence(words), '', '');
}

function fetchDelete(id) {
  fetch('/kiosk/visit', {
    method: 'DELETE',
    headers: { Authorization: `Bearer ${getToken()}`, 'X-Kiosk-Visit': id },
    keepalive: true,
    cache: 'no-store',
  }).catch(() => {});
}

/** The visit the daemon no longer knows (expired), or the kiosk's token refused. */
function sessionOver(r) {
  if (r.status === 403 && /PIN/i.test(r.detail)) return askPin('');
  if (r.status === 401 && !/visit/i.test(r.detail)) return needToken(r.detail);
  visit = null;
  return notice(sentence(r.detail) || 'Your visit has ended', '', 'Please insert your card again.');
}

async function loadView({ stay = false } = {}) {
  const mine = generation;
  const r = await call('/kiosk/visit');
  if (mine !== generation) return;
  if (!r.ok || !r.data) {
    if (!stay) sessionOver(r);
    return;
  }
  const view = r.data;
  if (view.neutral) {
    fill(el['notice-body'], neutralNodes(view));
    showScreen('notice');
    return;
  }
  setText(el.who, view.member && view.member.card_last4 ? `card ••••${view.member.card_last4}` : '');
  fill(el['player-body'], standingsNodes(view, onPrint));
  if (!stay) {
    showScreen('player');
    el['player-body'].scrollTop = 0;
  }
}

// -- activate and print ------------------------------------------------------------------

async function onPrint(draw, button, result) {
  const buttons = el['player-body'].querySelectorAll('button.print');
  for (const b of buttons) b.disabled = true;
  show(result, false);
  const label = button.textContent;
  setText(button, 'Printing…');
  const mine = generation;
  const r = await call('/kiosk/visit/receipts', {
    method: 'POST',
    body: { promotion: draw.promotion, draw: draw.draw },
  });
  if (mine !== generation) return;
  for (const b of buttons) b.disabled = false;
  setText(button, label);
  if (r.ok && r.data) {
    showReceipt(r.data);
    loadView({ stay: true }); // the draw now reads activated, with its receipt
    return;
  }
  if (r.status === 401 || (r.status === 403 && /PIN/i.test(r.detail))) {
    sessionOver(r);
    return;
  }
  setText(result, sentence(r.detail));
  show(result, true);
}

function showReceipt(r) {
  fill(el['receipt-body'], receiptScreenNodes(r, { onBack: () => showScreen('player') }));
  fill(el['print-receipt'], receiptNode(r, { className: 'receipt print' }));
  showScreen('receipt');
  if (r.printed_to === 'printer') return;
  // the page is as long as the receipt (a thermal printer's paper is a roll)
  const height = el['print-receipt'].getBoundingClientRect().height;
  const mm = Math.ceil((height * 25.4) / 96) + 4;
  try {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(`@page { size: 80mm ${mm}mm; margin: 0; }`);
    document.adoptedStyleSheets = [sheet];
  } catch {
    // an older browser: receipt.css's default page length
  }
  requestAnimationFrame(() => window.print());
}

// -- idle, the card reader, the token -----------------------------------------------------

function touch() {
  lastTouch = performance.now();
  if (el.idle.textContent) fill(el.idle);
}

function idleTick() {
  if (screen === 'attract') {
    focusCard();
    return;
  }
  const left = IDLE_S - (performance.now() - lastTouch) / 1000;
  if (left <= 0) {
    endVisit('idle');
  } else if (left <= WARN_S) {
    setText(el.idle, `Ending in ${Math.ceil(left)} s — touch the screen to stay`);
  }
}

function onKey(ev) {
  touch();
  if (ev.key === 'Escape') {
    if (screen !== 'attract') endVisit('card removed');
    return;
  }
  if (screen === 'attract' || ev.target === el.card) return;
  // another card read while a visit shows: the reader types it, then Enter
  if (ev.key === 'Enter') {
    const card = wedge.trim();
    wedge = '';
    if (card) {
      ev.preventDefault();
      beginVisit(card);
    }
  } else if (ev.key.length === 1) {
    wedge = (wedge + ev.key).slice(-256);
  }
}

function needToken(reason) {
  clearPlayer();
  showScreen('attract');
  show(byId('kiosk'), false);
  show(el.login, true);
  setText(el['login-error'], reason ? `The kiosk token was refused: ${reason}` : '');
}

async function onToken() {
  const check = await call('/promotions', { withVisit: false });
  if (!check.ok) {
    needToken(check.detail);
    return;
  }
  show(el.login, false);
  show(byId('kiosk'), true);
  showScreen('attract');
}

el['card-form'].addEventListener('submit', (ev) => {
  ev.preventDefault();
  const card = el.card.value.trim();
  el.card.value = '';
  if (card) beginVisit(card);
});
el.card.addEventListener('blur', () => setTimeout(focusCard, 0));
el.pad.addEventListener('click', (ev) => {
  const key = ev.target.closest('button[data-key]');
  if (key) onPad(key.dataset.key);
});
el.done.addEventListener('click', () => endVisit('done'));
document.addEventListener('keydown', onKey, true);
document.addEventListener('pointerdown', touch, { passive: true, capture: true });
document.addEventListener('touchstart', touch, { passive: true, capture: true });
setInterval(idleTick, 500);
show(byId('kiosk'), false);
loginForm(el.login, onToken);
if (!getToken()) show(el.login, true);
