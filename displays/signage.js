// signage.js — a public floor screen, live from /ws/signage (docs/push.md). Renders each
// section of the view into fixed places of signage.html: the promotion's title, logo and
// colours, the next draw with its countdown, the multiplier strip and the RAPS banner here;
// the attract loop's slides in signage-attract.js; what takes the whole screen (a draw's
// winners revealed one by one, then their grid and outcomes; a RAPS winner called; a RAPS
// jackpot won) in signage-stage.js; the words in signage-words.js; the optional sound cue
// in signage-sound.js.
//
// Screen settings, on the screen's URL (docs/screens/README.md): `sound=on` plays a cue per
// event (off by default), `dwell=N` shows each slide N seconds (4–120, default 12),
// `show=boards|upcoming|multiplier|enter` pins the attract loop to one slide.
//
// Runs for days: every section renders by replacing the children of one fixed container
// (old nodes go with their contents; no listener is ever added after start), one ticker
// interval updates the clocks in place, and the stream keeps one socket at a time.
// Shows only what the daemon sends: names and cards arrive masked and stay as they are.
//
// The screen's credential is its own, from pairing (pairing.js): kept in localStorage, never
// in its URL. A new screen shows its pairing code until the desk pairs it; a credential the
// daemon refuses (revoked, expired) is forgotten and the screen shows a new code. The area
// is the credential's (a screen moved on the desk switches streams by itself); `?area=`
// is only for a credential without one.

import { param, site as pageSite } from './auth.js';
import { Pairing, credential, forget, hello } from './pairing.js';
import { ServerClock, countdown, dayTime, hhmm } from './clock.js';
import { byId, setText, show } from './dom.js';
import { LiveStream } from './stream.js';
import { Attract, renderBoards, renderEnter, renderMultiplierSlide, renderUpcoming } from './signage-attract.js';
import { SoundCues } from './signage-sound.js';
import { Stage } from './signage-stage.js';
import { jackpotAmount, jackpotState, roundPrizes } from './signage-words.js';

const TICK_MS = 250;
const LOGO = /^\/signage\/logo\/[a-z0-9-]+$/;
const COLOURS = { background: '--bg', panel: '--panel', ink: '--ink', accent: '--accent', on_accent: '--on-accent' };

function setting(name, low, high, fallback) {
  const value = Number(param(name));
  return Number.isFinite(value) && value >= low && value <= high ? value : fallback;
}

const clock = new ServerClock();
const cues = new SoundCues(param('sound') === 'on');
const stage = new Stage({ clock, cues });
const attract = new Attract({ dwellMs: setting('dwell', 4, 120, 12) * 1000, pinned: param('show') });
let view = {};
let live = null;
let firstView = true;
let multiplierOn = false;

const el = {
  body: document.body,
  name: byId('promotion-name'),
  logo: byId('logo'),
  area: byId('area'),
  clock: byId('clock'),
  multiplier: byId('multiplier'),
  multiplierFactor: byId('multiplier-factor'),
  multiplierText: byId('multiplier-text'),
  multiplierLeft: byId('multiplier-left'),
  nextName: byId('next-name'),
  nextRound: byId('next-round'),
  nextWhen: byId('next-when'),
  nextCountdown: byId('next-countdown'),
  nextPrizes: byId('next-prizes'),
  commitment: byId('commitment'),
  commitmentHash: byId('commitment-hash'),
  jackpot: byId('jackpot'),
  jackpotWhat: byId('jackpot-what'),
  jackpotState: byId('jackpot-state'),
  jackpotLeft: byId('jackpot-left'),
  connection: byId('connection'),
};

const RENDER = {
  promotion: renderPromotion,
  next_draw: renderNextDraw,
  multiplier: renderMultiplier,
  boards: (b) => attract.offer('boards', renderBoards(b)),
  announcements: (a) => stage.setAnnouncements(a, performance.now()),
  jackpot: renderJackpot,
  upcoming: (rows) => {
    attract.offer('upcoming', renderUpcoming(rows, clock));
    renderNextDraw(view.next_draw);
  },
};

function onState(state, changed) {
  view = state;
  // a screen whose token fixes its area may be opened without ?area=: the stream says it
  if (!param('area') && live && live.stream) setText(el.area, `Area ${live.stream.split(':').pop()}`);
  for (const name of changed) if (RENDER[name]) RENDER[name](state[name]);
  firstView = false;
  tick();
}

function onStatus(status, detail) {
  el.body.className = status;
  const words = {
    connecting: 'Connecting to the floor…',
    reconnecting: 'Reconnecting to the floor… (showing the last known state)',
    denied: `This screen's credential was refused: ${detail}`,
    live: '',
  };
  setText(el.connection, words[status] ?? status);
}

function renderPromotion(p) {
  setText(el.name, p ? p.title || p.name : 'No promotion running');
  document.title = p ? `${p.title || p.name} · floor signage` : 'Floor signage';
  const root = document.documentElement.style;
  for (const [key, property] of Object.entries(COLOURS)) {
    const colour = p && p.colours ? String(p.colours[key] || '') : '';
    const wanted = /^#[0-9a-f]{6}$/i.test(colour) ? colour : '';
    if (root.getPropertyValue(property) === wanted) continue; // a delta rarely changes them
    if (wanted) root.setProperty(property, wanted);
    else root.removeProperty(property);
  }
  const logo = p && typeof p.logo === 'string' && LOGO.test(p.logo) ? p.logo : '';
  if (logo && el.logo.getAttribute('src') !== logo) el.logo.setAttribute('src', logo);
  el.logo.alt = p ? `${p.title || p.name} logo` : '';
  show(el.logo, Boolean(logo) && el.logo.dataset.failed !== logo);
  renderEnter(p && p.how_to_enter);
}

function renderNextDraw(d) {
  if (!d) {
    setText(el.nextName, 'No draw scheduled');
    setText(el.nextRound, '');
    setText(el.nextWhen, '');
    setText(el.nextPrizes, '');
    el.nextCountdown.removeAttribute('data-deadline');
    setText(el.nextCountdown, '');
    show(el.commitment, false);
    return;
  }
  setText(el.nextName, d.name);
  setText(el.nextRound, `Round ${d.round}`);
  setText(el.nextWhen, `${dayTime(d.at)}${d.place ? ` · ${d.place}` : ''}`);
  const row = (view.upcoming || []).find((u) => u.kind === 'draw' && u.draw === d.draw && u.round === d.round && u.promotion === d.promotion);
  setText(el.nextPrizes, roundPrizes(row));
  el.nextCountdown.dataset.deadline = d.at;
  show(el.commitment, Boolean(d.commitment));
  setText(el.commitmentHash, d.commitment ? String(d.commitment).replace(/(.{16})(?=.)/g, '$1 ') : '');
}

function renderMultiplier(m) {
  show(el.multiplier, Boolean(m));
  attract.offer('multiplier', renderMultiplierSlide(m));
  if (m && !multiplierOn && !firstView) cues.play('multiplier'); // a window opens
  multiplierOn = Boolean(m);
  if (!m) return;
  setText(el.multiplierFactor, `${m.factor}×`);
  const sides = Array.isArray(m.sides) && m.sides.length === 1 ? `${m.sides[0]} ` : '';
  setText(el.multiplierText, `points on all ${sides}play until ${hhmm(m.ends_at)}`);
  el.multiplierLeft.dataset.deadline = m.ends_at;
}

function renderJackpot(j) {
  show(el.jackpot, Boolean(j));
  stage.setJackpot(j, performance.now());
  if (!j) return;
  const amount = jackpotAmount(j);
  setText(el.jackpotWhat, `${j.name || 'Jackpot'} #${j.number} · ${amount ? `${amount} · ` : ''}${hhmm(j.at)}`);
  setText(el.jackpotState, jackpotState(j));
  el.jackpot.classList.toggle('won', j.state === 'won');
  if (j.state === 'upcoming') el.jackpotLeft.dataset.deadline = j.at;
  else if (j.deadline && j.state === 'announced') el.jackpotLeft.dataset.deadline = j.deadline;
  else {
    el.jackpotLeft.removeAttribute('data-deadline');
    setText(el.jackpotLeft, '');
  }
}

function tick() {
  const now = performance.now();
  stage.tick(now);
  if (attract.tick(now) === 'upcoming') renderUpcoming(view.upcoming, clock); // days and times as of now
  setText(el.clock, clock.wallTime());
  for (const node of document.querySelectorAll('[data-deadline]')) {
    const left = clock.left(node.dataset.deadline);
    if (node.dataset.total) {
      const part = Math.max(0, Math.min(1, left / Number(node.dataset.total)));
      node.style.transform = `scaleX(${part.toFixed(3)})`;
    } else {
      setText(node, countdown(left));
    }
  }
  const next = view.next_draw;
  const left = next ? clock.left(next.at) : 0;
  const due = next && left === 0;
  el.nextCountdown.classList.toggle('now', Boolean(due));
  el.nextCountdown.classList.toggle('far', left >= 3600000);
  el.nextCountdown.classList.toggle('days', left >= 86400000);
  if (due) setText(el.nextCountdown, 'Drawing now');
}

async function start(kept) {
  const area = param('area');
  setText(el.area, area || kept.area ? `Area ${area || kept.area}` : '');
  hello(kept.token); // what this screen runs on, for the desk's list
  live = new LiveStream({
    path: '/ws/signage',
    params: { site: await pageSite(), area },
    token: kept.token,
    clock,
    onState,
    onClock: tick, // a jump, pause or change of speed shows at once
    onStatus,
    onRevoked: (reason) => { // revoked or expired: nothing shown stays; pair again
      forget(`This screen’s credential ended (${reason}): pair it again with the code above.`);
      location.reload();
    },
  });
  live.start();
}

el.logo.addEventListener('error', () => { // a logo that cannot be had: the title alone
  el.logo.dataset.failed = el.logo.getAttribute('src') || '';
  show(el.logo, false);
});
setInterval(tick, TICK_MS);
let warning = '';
if (param('token')) { // an old set-up: a token never goes in an address (history, proxy logs)
  const query = new URLSearchParams(location.search);
  query.delete('token');
  history.replaceState(null, '', `${location.pathname}${query.size ? `?${query}` : ''}`);
  warning = 'This screen’s address held a token: it was ignored and removed from the address. '
    + 'Take it out of the screen’s start-up address too, and pair the screen with the code below.';
}
const kept = credential();
if (kept) start(kept);
else new Pairing(start).start(warning);
