// signage.js — a public floor screen, live from /ws/signage (docs/push.md). Renders each
// section of the view into fixed places of signage.html; the full-screen winner
// announcement shows the current round's winners with their 90-second claim timers and,
// once known, each outcome, and stays up a while after the last change.
//
// Runs for days: every section renders by replacing the children of one fixed container
// (old nodes go with their contents; no listener is ever added after start), one ticker
// interval updates the clocks in place, and the stream keeps one socket at a time.
// Shows only what the daemon sends: names and cards arrive masked and stay as they are.

import { getToken, loginForm, param, site as pageSite } from './auth.js';
import { ServerClock, countdown, dayTime, hhmm, points, rand } from './clock.js';
import { byId, fill, h, setText, show } from './dom.js';
import { LiveStream } from './stream.js';

const HOLD_MS = 60000; // the announcement stays this long after its last change
const TICK_MS = 250;
const OUTCOME_WORDS = {
  presented: 'Presented ✓',
  verified: 'Verified ✓',
  won: 'Winner ✓',
  no_show: 'Not claimed — redraw',
};

const clock = new ServerClock();
let view = {};
let winnersKey = ''; // which round the announcement shows, and each claim's state
let winnersChangedAt = -Infinity;
let live = null;

const el = {
  body: document.body,
  name: byId('promotion-name'),
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
  commitment: byId('commitment'),
  commitmentHash: byId('commitment-hash'),
  slots: byId('board-slots'),
  tables: byId('board-tables'),
  published: byId('boards-published'),
  jackpot: byId('jackpot'),
  jackpotWhat: byId('jackpot-what'),
  jackpotState: byId('jackpot-state'),
  jackpotLeft: byId('jackpot-left'),
  winners: byId('winners'),
  winnersTitle: byId('winners-title'),
  winnersSub: byId('winners-sub'),
  winnersList: byId('winners-list'),
  connection: byId('connection'),
};

const RENDER = {
  promotion: renderPromotion,
  next_draw: renderNextDraw,
  multiplier: renderMultiplier,
  boards: renderBoards,
  announcements: renderWinners,
  jackpot: renderJackpot,
};

function onState(state, changed) {
  view = state;
  // a screen whose token fixes its area may be opened without ?area=: the stream says it
  if (!param('area') && live && live.stream) setText(el.area, `Area ${live.stream.split(':').pop()}`);
  for (const name of changed) if (RENDER[name]) RENDER[name](state[name]);
  tick();
}

function onStatus(status, detail) {
  el.body.className = status;
  const words = {
    connecting: 'Connecting to the floor…',
    reconnecting: 'Reconnecting to the floor… (showing the last known state)',
    denied: `This screen's token was refused: ${detail}`,
    live: '',
  };
  setText(el.connection, words[status] ?? status);
}

function renderPromotion(p) {
  setText(el.name, p ? p.name : 'No promotion running');
  document.title = p ? `${p.name} · floor signage` : 'Floor signage';
}

function renderNextDraw(d) {
  if (!d) {
    setText(el.nextName, 'No draw scheduled');
    setText(el.nextRound, '');
    setText(el.nextWhen, '');
    el.nextCountdown.removeAttribute('data-deadline');
    setText(el.nextCountdown, '');
    show(el.commitment, false);
    return;
  }
  setText(el.nextName, d.name);
  setText(el.nextRound, `Round ${d.round}`);
  setText(el.nextWhen, `${dayTime(d.at)}${d.place ? ` · ${d.place}` : ''}`);
  el.nextCountdown.dataset.deadline = d.at;
  show(el.commitment, Boolean(d.commitment));
  setText(el.commitmentHash, d.commitment ? String(d.commitment).replace(/(.{16})(?=.)/g, '$1 ') : '');
}

function renderMultiplier(m) {
  show(el.multiplier, Boolean(m));
  if (!m) return;
  setText(el.multiplierFactor, `${m.factor}×`);
  const sides = Array.isArray(m.sides) && m.sides.length === 1 ? `${m.sides[0]} ` : '';
  setText(el.multiplierText, `points on all ${sides}play until ${hhmm(m.ends_at)}`);
  el.multiplierLeft.dataset.deadline = m.ends_at;
}

function boardRows(rows) {
  if (!rows || !rows.length) return h('li', { class: 'empty', text: 'Not published yet' });
  return rows.slice(0, 10).map((r) =>
    h(
      'li',
      {},
      h('span', { class: 'rank', text: String(r.rank) }),
      h('span', { class: 'name', text: r.name || '' }),
      h('span', { class: 'card mono', text: r.card || '' }),
      h('span', { class: 'pts mono', text: points(r.points) }),
    ));
}

function renderBoards(b) {
  // a promotion without public boards gives the next draw the whole screen
  byId('screen').classList.toggle('no-boards', !b);
  fill(el.slots, boardRows(b && b.slots));
  fill(el.tables, boardRows(b && b.tables));
  setText(el.published, b && b.published_at ? `Published ${dayTime(b.published_at)} · updated every Friday` : '');
}

/** The winners of the newest round: every claim of the same draw and round. */
function currentRound(announcements) {
  if (!announcements || !announcements.length) return [];
  const newest = announcements[0];
  return announcements
    .filter((a) => a.promotion === newest.promotion && a.draw === newest.draw && a.round === newest.round)
    .sort((a, b) => a.claim - b.claim)
    .slice(-10);
}

function renderWinners(announcements) {
  const round = currentRound(announcements);
  const key = JSON.stringify(round.map((a) => [a.draw, a.round, a.claim, a.state, a.prize]));
  if (key !== winnersKey) {
    winnersKey = key;
    winnersChangedAt = round.length ? performance.now() : -Infinity;
  }
  if (!round.length) {
    fill(el.winnersList);
    return;
  }
  const first = round[0];
  setText(el.winnersTitle, round.length > 1 ? 'Winners' : 'Winner');
  setText(el.winnersSub, `${first.title || first.draw} · round ${first.round} — present yourself within 90 seconds with your ID and ticket receipt`);
  el.winners.classList.toggle('many', round.length > 6);
  const portrait = window.matchMedia('(orientation: portrait)').matches;
  const n = round.length;
  const cols = portrait ? Math.min(n, 2) : n <= 3 ? n : n === 4 ? 2 : n <= 9 ? 3 : 4;
  el.winnersList.className = `winner-list cols-${cols}`;
  fill(el.winnersList, round.map(winnerCard));
}

function winnerCard(a) {
  const outcome = a.state === 'announced' ? '' : a.outcome || a.state;
  const words = outcome === 'won' && a.prize ? `Won ${a.prize}` : OUTCOME_WORDS[outcome] || String(outcome).replace(/_/g, ' ');
  return h(
    'div',
    { class: `winner ${outcome}`, dataset: { claim: String(a.claim), state: a.state } },
    h('span', { class: 'name', text: a.name || '****' }),
    h('span', { class: 'card mono', text: a.card ? `card ${a.card}` : '' }),
    a.state === 'announced' && a.deadline
      ? [
        h('span', { class: 'timer mono', dataset: { deadline: a.deadline }, text: countdown(clock.left(a.deadline)) }),
        h('span', { class: 'bar' }, h('span', { dataset: { deadline: a.deadline, total: '90000' } })),
      ]
      : h('span', { class: 'outcome', text: words }),
  );
}

function renderJackpot(j) {
  show(el.jackpot, Boolean(j));
  if (!j) return;
  const amount = typeof j.amount_cents === 'number' ? `${rand(j.amount_cents)} · ` : '';
  setText(el.jackpotWhat, `${j.name || 'Jackpot'} #${j.number} · ${amount}${hhmm(j.at)}`);
  const winner = j.winner ? `${j.winner.name} ${j.winner.card}`.trim() : '';
  const states = {
    upcoming: 'next jackpot',
    won: `Won by ${winner}`,
    announced: `${winner}: present yourself now`,
    alerted: 'A winner has been drawn',
    crew_at_device: 'Our crew is on the way',
    reselected: 'Redrawing…',
  };
  setText(el.jackpotState, states[j.state] || String(j.state || '').replace(/_/g, ' '));
  el.jackpot.classList.toggle('won', j.state === 'won');
  if (j.state === 'upcoming') el.jackpotLeft.dataset.deadline = j.at;
  else if (j.deadline) el.jackpotLeft.dataset.deadline = j.deadline;
  else {
    el.jackpotLeft.removeAttribute('data-deadline');
    setText(el.jackpotLeft, '');
  }
}

function tick() {
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
  const round = currentRound(view.announcements);
  const open = round.some((a) => a.state === 'announced');
  show(el.winners, round.length > 0 && (open || performance.now() - winnersChangedAt < HOLD_MS));
}

async function start(token) {
  show(byId('login'), false);
  const area = param('area');
  setText(el.area, area ? `Area ${area}` : '');
  live = new LiveStream({
    path: '/ws/signage',
    params: { site: await pageSite(), area },
    token,
    clock,
    onState,
    onStatus,
  });
  live.start();
}

setInterval(tick, TICK_MS);
if (getToken()) start(getToken());
else {
  onStatus('denied', 'no token given');
  show(byId('login'), true);
  loginForm(byId('login'), (token) => (live ? live.setToken(token) : start(token)));
}
