// signage-attract.js — the floor screen between events: the slides that take turns beside
// the next draw (the leaderboards, what is coming up, the multiplier, how to enter), each
// for the screen's dwell time, cross-faded; a slide with nothing to show is skipped. A
// screen may be pinned to one slide (`&show=boards`). Renders into fixed containers of
// signage.html by replacing their children; countdowns are `data-deadline` nodes that
// signage.js's ticker keeps current.

import { countdown, dayTime, hhmm, points, rand } from './clock.js';
import { byId, fill, h, setText } from './dom.js';

export const SLIDES = ['boards', 'upcoming', 'multiplier', 'enter'];
const DAY_MS = 20 * 3600 * 1000; // further off than this: the day is said too

export class Attract {
  constructor({ dwellMs, pinned }) {
    this.dwellMs = dwellMs;
    this.pinned = SLIDES.includes(pinned) ? pinned : '';
    this.available = new Set(['enter']);
    this.current = '';
    this.key = '';
    this.since = -Infinity;
    this.slides = new Map(SLIDES.map((name) => [name, document.querySelector(`.slide[data-slide="${name}"]`)]));
    this.dots = byId('slide-dots');
  }

  /** Say which slides have something to show. */
  offer(name, has) {
    if (has) this.available.add(name);
    else this.available.delete(name);
  }

  /** Turn to the next slide when the current one has had its time (or cannot show);
   * the slide turned to, or '' when it stays. */
  tick(nowMs) {
    const order = SLIDES.filter((name) => this.available.has(name));
    let next = this.current;
    if (this.pinned && this.available.has(this.pinned)) next = this.pinned;
    else if (!order.includes(this.current)) next = order[0];
    else if (nowMs - this.since >= this.dwellMs) next = order[(order.indexOf(this.current) + 1) % order.length];
    if (next !== this.current) this.since = nowMs;
    const key = `${next}|${order.join(',')}`;
    if (key === this.key) return '';
    this.key = key;
    this.current = next;
    for (const [name, slide] of this.slides) slide.classList.toggle('active', name === next);
    document.body.dataset.attract = next;
    fill(this.dots, order.length > 1 ? order.map((name) => h('li', { class: name === next ? 'on' : '' })) : []);
    return next;
  }
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

/** The slots and tables leaderboards; true when there are any to show. */
export function renderBoards(b) {
  fill(byId('board-slots'), boardRows(b && b.slots));
  fill(byId('board-tables'), boardRows(b && b.tables));
  const published = b && b.published_at ? `Published ${dayTime(b.published_at)} · updated every Friday` : '';
  setText(byId('boards-published'), published);
  return Boolean(b);
}

/** When an event is: its time, with its day above when it is not within the day. */
function when(iso, far) {
  const day = far ? dayTime(iso).slice(0, -6) : '';
  return h('span', { class: 'at' }, day ? h('span', { class: 'day', text: day }) : null, h('span', { class: 'hm mono', text: hhmm(iso) }));
}

function eventRow(row, clock) {
  const draw = row.kind === 'draw';
  const what = draw ? `${row.name} · round ${row.round}` : `${row.name} #${row.number}`;
  const prize = draw
    ? [row.winners ? `${row.winners} winners` : '', typeof row.top_prize_cents === 'number' ? `up to ${rand(row.top_prize_cents)}` : '']
      .filter(Boolean).join(' · ')
    : (typeof row.amount_cents === 'number' ? `${Number(row.prizes) > 1 ? `${row.prizes} × ` : ''}${rand(row.amount_cents)}` : 'bonus jackpot');
  const far = clock.left(row.at) > DAY_MS; // no countdown for another day: its date says it
  return h(
    'li',
    { class: `event-${row.kind}` },
    when(row.at, far),
    h('span', { class: 'what' }, h('span', { class: 'tag', text: draw ? 'Draw' : 'Jackpot' }), what),
    h('span', { class: 'prize', text: prize }),
    far ? h('span', { class: 'in' }) : h('span', { class: 'in mono', dataset: { deadline: row.at }, text: countdown(clock.left(row.at)) }),
  );
}

/** The "coming up" slide: draws and jackpots with their times; true when any. */
export function renderUpcoming(rows, clock) {
  const list = Array.isArray(rows) ? rows : [];
  fill(byId('upcoming-list'), list.map((row) => eventRow(row, clock)));
  return list.length > 0;
}

/** The multiplier slide; true while a window is open. */
export function renderMultiplierSlide(m) {
  if (!m) return false;
  setText(byId('hero-factor'), `${m.factor}×`);
  const sides = Array.isArray(m.sides) && m.sides.length === 1 ? `${m.sides[0]} ` : '';
  setText(byId('hero-what'), `on all ${sides}play until ${hhmm(m.ends_at)}`);
  byId('hero-left').dataset.deadline = m.ends_at;
  return true;
}

/** The "how to enter" slide, from the promotion's steps. */
export function renderEnter(steps) {
  const list = Array.isArray(steps) && steps.length ? steps : ['Activate at any eHost'];
  fill(byId('enter-steps'), list.map((step, i) => h('li', {}, h('span', { class: 'n', text: String(i + 1) }), h('span', { text: step }))));
}
