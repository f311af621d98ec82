// crew.js — the crew handheld, live from /ws/crew (docs/push.md): open alerts by urgency
// (the daemon orders them), each with the name to ask for, where to go, the claim timer,
// the PA text, for a RAPS jackpot the reselections left (and the wait until the next is
// allowed), for a draw claim the receipt check (receipt-check.js: the code typed or
// scanned, the verdict big; a valid one ticks "Receipt seen"), and a big button per
// action the claim's state allows now. An action posts
// to the claim's endpoint in the signed-in crew member's name (signin.js: staff number and
// PIN, the session in an HttpOnly cookie) and the page shows the result or the server's
// refusal. A new alert vibrates and beeps where the browser allows it.
//
// Each alert keeps its DOM node while it stays open (typing a reveal number is not lost
// when another alert changes); nodes of closed alerts are removed.

import { api } from './api.js';
import { signedOutReason, site as pageSite } from './auth.js';
import { CREW_ACTIONS, describeAction, postAction, splitSubject, stateLabel } from './claims.js';
import { ServerClock, countdown, hhmm } from './clock.js';
import { byId, fill, h, setText, show } from './dom.js';
import { receiptCheck } from './receipt-check.js';
import { endSession, startSignIn } from './signin.js';
import { LiveStream } from './stream.js';

const clock = new ServerClock();
const cards = new Map(); // alert key -> {root, parts, actionsKey}
let live = null;
let firstState = true;
let audio = null;
let noticeTimer = null;

const keyOf = (a) => `${a.subject}#${a.claim}`;

function onState(state, changed) {
  if (changed.includes('alerts')) renderAlerts(state.alerts || []);
  if (changed.includes('recent')) renderRecent(state.recent || []);
  firstState = false;
}

function renderAlerts(alerts) {
  const list = byId('alerts');
  const seen = new Set();
  let fresh = 0;
  for (const a of alerts) {
    const key = keyOf(a);
    seen.add(key);
    let entry = cards.get(key);
    if (!entry) {
      entry = createCard(a);
      cards.set(key, entry);
      fresh += 1;
    }
    updateCard(entry, a);
    list.append(entry.root); // moves an existing node into urgency order
  }
  for (const [key, entry] of cards) {
    if (!seen.has(key)) {
      entry.root.remove();
      cards.delete(key);
    }
  }
  setText(byId('count'), alerts.length ? `(${alerts.length})` : '');
  show(byId('none'), alerts.length === 0);
  if (fresh && !firstState) cue();
}

function createCard(a) {
  const parts = {
    title: h('span', { class: 'title' }),
    timer: h('span', { class: 'timer' }),
    who: h('p', { class: 'who' }),
    card: h('span', { class: 'card' }),
    where: h('p', { class: 'where' }),
    state: h('p', { class: 'state' }),
    reselectLeft: h('span', { class: 'left' }),
    reselectWait: h('span', { class: 'wait' }),
    pa: h('p', { class: 'pa' }),
    inputs: h('div', { class: 'inputs' }),
    actions: h('div', { class: 'actions' }),
    result: h('p', { class: 'result', role: 'status' }),
  };
  parts.reselect = h('p', { class: 'reselect' }, parts.reselectLeft, parts.reselectWait);
  if (a.kind !== 'raps') {
    // the receipt the winner presents, checked against this claim (receipt-check.js)
    const { promotion, owner } = splitSubject(a.subject);
    parts.receipt = receiptCheck({
      promotion,
      draw: owner,
      claim: a.claim,
      onVerdict: (r) => {
        // a valid receipt ticks "Receipt seen", now or when "Verified" is offered
        parts.receiptValid = r.verdict === 'valid';
        const seen = parts.inputs.querySelector('[name=receipt_checked]');
        if (seen) seen.checked = parts.receiptValid;
      },
    });
  }
  const root = h(
    'li',
    { class: `alert ${a.kind === 'raps' ? 'raps' : 'draw'}`, dataset: { claim: String(a.claim), subject: a.subject } },
    h('div', { class: 'head' }, parts.title, parts.timer),
    parts.who,
    parts.card,
    parts.where,
    parts.state,
    parts.reselect,
    parts.pa,
    parts.receipt || null,
    parts.inputs,
    parts.actions,
    parts.result,
  );
  return { root, parts, actionsKey: '' };
}

function where(a) {
  const bits = [];
  if (a.area) bits.push(`Area ${a.area}`);
  if (a.bank) bits.push(`bank ${a.bank}`);
  if (a.device) bits.push(a.device);
  if (a.seat !== null && a.seat !== undefined) bits.push(`seat ${a.seat}`);
  return bits.length ? bits.join(' · ') : 'Not carded in now — call them to the draw place';
}

function updateCard(entry, a) {
  const { parts, root } = entry;
  root.dataset.state = a.state;
  setText(parts.title, `${a.kind === 'raps' ? 'JACKPOT' : 'DRAW'} · ${a.title || a.subject} · claim ${a.claim}`);
  if (a.deadline) parts.timer.dataset.deadline = a.deadline;
  else {
    parts.timer.removeAttribute('data-deadline');
    setText(parts.timer, '');
  }
  setText(parts.who, a.name ? `Ask for ${a.name}` : 'Name not on record');
  setText(parts.card, `card ${a.card}`);
  setText(parts.where, where(a));
  setText(parts.state, `State: ${stateLabel(a.state)}${a.deadline ? ` · claim time ends ${hhmm(a.deadline)}` : ''}`);
  showReselections(parts, a.kind === 'raps' ? a.reselections : null);
  setText(parts.pa, '');
  if (a.announcement) parts.pa.append(h('b', { text: 'PA announcement' }), a.announcement);
  show(parts.pa, Boolean(a.announcement));
  const actions = (a.actions || []).filter((x) => CREW_ACTIONS.has(String(x).replace(/-/g, '_')));
  const actionsKey = JSON.stringify([a.state, actions]);
  if (actionsKey !== entry.actionsKey) {
    entry.actionsKey = actionsKey;
    buildActions(entry, a, actions);
  }
}

/** A RAPS jackpot's crew reselections: how many are left, and the wait for the next. */
function showReselections(parts, r) {
  show(parts.reselect, Boolean(r));
  if (!r) return;
  const none = r.left === 0;
  parts.reselect.classList.toggle('none-left', none);
  setText(parts.reselectLeft, none
    ? 'No reselections left: only the desk can approve another'
    : `Reselections left: ${r.left} of ${r.allowed}`);
  if (none || !r.from) delete parts.reselectWait.dataset.reselectFrom;
  else parts.reselectWait.dataset.reselectFrom = r.from;
  tickWait(parts.reselectWait);
}

/** " · next allowed in 0:42" while the spacing after the selection runs, then nothing. */
function tickWait(el) {
  const from = el.dataset.reselectFrom;
  const ms = from ? clock.left(from) : 0;
  setText(el, ms > 0 ? ` · next allowed in ${countdown(ms)}` : '');
}

function buildActions(entry, a, actions) {
  const { parts } = entry;
  const kind = a.kind === 'raps' ? 'raps' : 'draw';
  const described = actions.map((x) => describeAction(kind, x));
  const asks = new Set(described.map((d) => d.ask));
  const inputs = [];
  if (kind === 'draw' && asks.has('proxy')) {
    inputs.push(h('label', {}, 'Proxy ID', h('input', { type: 'text', name: 'proxy_id', placeholder: 'if a proxy', autocomplete: 'off' })));
  }
  if (asks.has('checks')) {
    inputs.push(h('label', {}, h('input', { type: 'checkbox', name: 'id_checked' }), 'ID seen'));
    inputs.push(h('label', {}, h('input', { type: 'checkbox', name: 'receipt_checked', checked: parts.receiptValid === true }), 'Receipt seen'));
  }
  if (asks.has('reveal')) {
    inputs.push(h('label', {}, 'Reveal no.', h('input', { type: 'number', name: 'reveal', min: 1, inputmode: 'numeric' })));
  }
  if (kind === 'raps' && asks.has('reason')) {
    inputs.push(h('label', { class: 'reason' }, 'Reason', h('input', { type: 'text', name: 'reason', maxlength: 200, placeholder: 'why reselect (kept in the audit)', autocomplete: 'off' })));
  }
  fill(parts.inputs, inputs);
  show(parts.inputs, inputs.length > 0);
  const negative = new Set(['no_show', 'not_at_device', 'not_owner', 'reselect']);
  fill(parts.actions, described.map((d) =>
    h('button', {
      type: 'button',
      class: negative.has(d.name) ? 'negative' : '',
      dataset: { action: d.name },
      text: d.label,
      onclick: (ev) => act(entry, a, d, ev.currentTarget),
    })));
}

function bodyFor(entry, a, d) {
  const field = (name) => entry.parts.inputs.querySelector(`[name=${name}]`);
  if (a.kind === 'raps') return d.ask === 'reason' ? { reason: field('reason')?.value.trim() || '' } : undefined;
  if (d.ask === 'proxy') {
    const proxy = field('proxy_id');
    return proxy && proxy.value.trim() ? { proxy_id: proxy.value.trim() } : undefined;
  }
  if (d.ask === 'checks') {
    return { id_checked: Boolean(field('id_checked')?.checked), receipt_checked: Boolean(field('receipt_checked')?.checked) };
  }
  if (d.ask === 'reveal') {
    const n = Number(field('reveal')?.value);
    return Number.isInteger(n) && n > 0 ? { reveal: n } : {};
  }
  return undefined;
}

async function act(entry, a, d, button) {
  const { result } = entry.parts;
  const body = bodyFor(entry, a, d);
  if (body && body.reason === '') {
    result.className = 'result refused';
    setText(result, `${d.label}: write the reason first`);
    entry.parts.inputs.querySelector('[name=reason]')?.focus();
    return;
  }
  for (const b of entry.parts.actions.querySelectorAll('button')) b.disabled = true;
  setText(result, `${d.label}…`);
  result.className = 'result';
  const endpoint = a.endpoints && a.endpoints[d.name];
  const r = endpoint
    ? await postTo(endpoint, body, a.claim)
    : await postAction(a.kind === 'raps' ? 'raps' : 'draw', a.subject, a.claim, d.name, body);
  const text = r.ok ? `${d.label} ✓ — claim ${a.claim} is now ${stateLabel(r.state) || 'updated'}` : `Refused: ${r.detail}`;
  result.className = r.ok ? 'result ok' : 'result refused';
  setText(result, text);
  notice(text, !r.ok);
  for (const b of entry.parts.actions.querySelectorAll('button')) b.disabled = false;
  button.blur();
}

async function postTo(endpoint, body, claim) {
  const r = await api(endpoint, { method: 'POST', body });
  let state = '';
  if (r.ok && r.data && Array.isArray(r.data.claims)) {
    const found = r.data.claims.find((c) => String(c.claim) === String(claim));
    if (found) state = found.state;
  }
  return { ...r, state };
}

function notice(text, refused) {
  const el = byId('notice');
  el.textContent = text;
  el.className = refused ? 'notice refused' : 'notice';
  show(el, true);
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => show(el, false), refused ? 15000 : 8000);
}

function renderRecent(recent) {
  fill(byId('recent'), recent.map((a) =>
    h(
      'li',
      { dataset: { claim: String(a.claim), subject: a.subject } },
      h('span', { text: `${a.name || a.card} · ${a.title || a.subject}` }),
      h('span', { class: 'outcome', text: stateLabel(a.state) }),
    )));
}

/** A new alert: vibrate and beep, where the browser allows it. */
function cue() {
  if (typeof navigator.vibrate === 'function') {
    try {
      navigator.vibrate([200, 100, 200]);
    } catch {
      // not allowed without a gesture
    }
  }
  if (!audio || audio.state !== 'running') return;
  const osc = audio.createOscillator();
  const gain = audio.createGain();
  osc.frequency.value = 880;
  gain.gain.setValueAtTime(0.2, audio.currentTime);
  gain.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.35);
  osc.connect(gain).connect(audio.destination);
  osc.start();
  osc.stop(audio.currentTime + 0.35);
}

/** Browsers allow sound only after a touch: open the audio context on the first one. */
function unlockAudio() {
  const Ctx = window.AudioContext || window.webkitAudioContext;
  if (!Ctx) return;
  try {
    audio = audio || new Ctx();
    if (audio.state === 'suspended') audio.resume();
  } catch {
    audio = null;
  }
}

function tick() {
  setText(byId('clock'), clock.wallTime());
  for (const el of document.querySelectorAll('[data-deadline]')) {
    setText(el, countdown(clock.left(el.dataset.deadline)));
  }
  for (const el of document.querySelectorAll('[data-reselect-from]')) tickWait(el);
}

async function onSignedIn() {
  show(byId('login'), false);
  show(byId('main'), true);
  show(byId('clock'), true); // the daemon's clock and the stream's state, once signed in
  show(byId('live'), true);
  unlockAudio();
  if (live) return;
  live = new LiveStream({
    path: '/ws/crew',
    params: { site: await pageSite() },
    token: '', // the session cookie authenticates the socket
    clock,
    onState,
    onClock: tick, // a jump, pause or change of speed shows at once
    onStatus: (status, detail) => {
      const el = byId('live');
      el.className = `status ${status}`;
      el.textContent = { live: 'live', connecting: 'connecting…', reconnecting: 'reconnecting…', denied: 'refused' }[status] || status;
      el.title = detail || '';
    },
    onRevoked: (reason) => endSession(reason),
  });
  live.start();
}

document.addEventListener('pointerdown', unlockAudio, { passive: true });
setInterval(tick, 500);
setText(byId('login-error'), signedOutReason());
startSignIn({ form: byId('login'), who: byId('who'), logout: byId('logout'), bar: byId('who-bar'), onSignedIn });
