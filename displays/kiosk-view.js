// kiosk-view.js — what the kiosk shows a player, built from the daemon's answers: the
// member's standing in every running draw in plain words (PlayerViewOut: the tickets and
// how they were earned, whether they are activated and until when, the draw times, the
// places on the published leaderboards, the receipt printed so far), the neutral message a
// card that may not take part gets (nothing else: no name, no reason), and the receipt
// screen. Pure rendering: nodes out, no state; kiosk.js puts them on screen and removes
// them when the visit ends.

import { day, dayTime, hhmm, points } from './clock.js';
import { h } from './dom.js';
import { receiptNode } from './receipt.js';

const CHANNELS = { kiosk: 'at an eHost', app: 'in the app', desk: 'at the promotions desk' };
const SIDES = { slots: 'Slots leaderboard', tables: 'Tables leaderboard' };
// statuses with tickets a receipt can be printed for
const PRINTABLE = new Set(['entered', 'not_activated']);

/** "19:00" today, else "Sat 07 Nov 19:00" (the floor's clocks; `asOf` is the daemon's now). */
export function when(iso, asOf) {
  if (!iso) return '';
  return asOf && day(iso) === day(asOf) ? `today ${hhmm(iso)}` : dayTime(iso);
}

function plural(n, one, many = `${one}s`) {
  return `${points(n)} ${n === 1 ? one : many}`;
}

/** The activation in words: needed or not, done (how, when), open until, opens at, closed. */
export function activationWords(a, asOf) {
  if (!a || !a.required) return { text: 'No activation needed: your tickets go into the draw as they are', state: 'ok' };
  if (a.activated) {
    const how = CHANNELS[a.channel] ? ` ${CHANNELS[a.channel]}` : '';
    return { text: `Activated${how}${a.at ? ` ${when(a.at, asOf)}` : ''}`, state: 'ok' };
  }
  if (a.open_now) {
    return { text: `Not activated yet — activate before ${when(a.closes, asOf)} to enter the draw`, state: 'todo' };
  }
  if (a.opens && asOf && Date.parse(a.opens) > Date.parse(asOf)) {
    return { text: `Not activated yet — activation opens ${when(a.opens, asOf)}`, state: 'wait' };
  }
  return { text: `Activation closed${a.closes ? ` ${when(a.closes, asOf)}` : ''}`, state: 'closed' };
}

function boardWords(b) {
  const side = SIDES[b.side] || `${String(b.side)} leaderboard`;
  return b.position ? `${side}: you are number ${b.position}` : `${side}: not on the published board`;
}

function ticketsLine(d) {
  const per = Object.entries(d.per_tombola || {}).filter(([, n]) => n > 0);
  const split = per.length > 1 ? per.map(([name, n]) => `${points(n)} ${name}`).join(' · ') : '';
  return h(
    'p',
    { class: 'tickets' },
    h('span', { class: 'count', text: points(d.tickets || 0) }),
    h('span', { class: 'unit', text: d.tickets === 1 ? ' ticket' : ' tickets' }),
    split ? h('span', { class: 'split', text: ` (${split})` }) : null,
  );
}

/** "today at 19:00, 20:00 and 21:00", "Sat 28 Nov at 19:00": the rounds, by day. */
export function drawTimes(times, asOf) {
  const days = new Map();
  for (const iso of times || []) {
    const label = asOf && day(iso) === day(asOf) ? 'today' : dayTime(iso).replace(/ \d\d:\d\d$/, '');
    if (!days.has(label)) days.set(label, []);
    days.get(label).push(hhmm(iso));
  }
  const and = (list) => (list.length > 1 ? `${list.slice(0, -1).join(', ')} and ${list[list.length - 1]}` : list[0]);
  return [...days].map(([label, hours]) => `${label} at ${and(hours)}`).join('; ');
}

/** The button's words, or null when no receipt can be printed now (no tickets, not open). */
function printLabel(d) {
  if (!PRINTABLE.has(d.status) || !(d.tickets > 0)) return null;
  const a = d.activation || {};
  if (d.receipt) return 'Print my receipt again';
  if (!a.required || a.activated) return 'Print my receipt';
  return a.open_now ? 'Activate and print' : null;
}

/** One running draw: a card with the words above and, when it can print, the button. */
function drawCard(d, asOf, onPrint) {
  const activation = activationWords(d.activation, asOf);
  const result = h('p', { class: 'refusal', role: 'alert', hidden: true });
  const label = printLabel(d);
  const button = label
    ? h('button', {
      type: 'button',
      class: d.receipt ? 'print again' : 'print',
      name: `print-${d.promotion}-${d.draw}`,
      text: label,
      onclick: (ev) => onPrint(d, ev.currentTarget, result),
    })
    : null;
  const times = drawTimes(d.draw_times, asOf);
  // the status's fixed words only where the activation line does not say it already
  const status = PRINTABLE.has(d.status) ? null : h('p', { class: 'status', text: d.message });
  return h(
    'article',
    { class: `draw status-${d.status}`, dataset: { promotion: d.promotion, draw: d.draw } },
    h('p', { class: 'promotion', text: [d.casino, d.promotion_name].filter(Boolean).join(' · ') }),
    h('h2', { text: d.draw_name || d.draw }),
    h('div', { class: 'main' }, ticketsLine(d), button),
    status,
    h('p', { class: `activation ${activation.state}`, text: activation.text }),
    result,
    (d.lines || []).length ? h('ul', { class: 'lines' }, d.lines.map((line) => h('li', { text: line }))) : null,
    times ? h('p', { class: 'times', text: `${(d.draw_times || []).length > 1 ? 'Draws' : 'Draw'}: ${times}` }) : null,
    (d.boards || []).map((b) => h('p', { class: 'board', text: boardWords(b) })),
    d.receipt
      ? h('p', {
        class: 'printed',
        text: `Receipt no. ${d.receipt.number} printed${d.receipt.prints > 1 ? ` (${plural(d.receipt.prints, 'copy', 'copies')})` : ''}`,
      })
      : null,
  );
}

/**
 * The standings screen: a greeting with the masked name and the card's last digits, then
 * a card per running draw. onPrint(draw, button, resultLine) runs "Activate and print".
 */
export function standingsNodes(view, onPrint) {
  const member = view.member || {};
  const draws = view.draws || [];
  return [
    h(
      'div',
      { class: 'greeting' },
      h('h1', { text: member.masked_name ? `Hello, ${member.masked_name}` : 'Hello' }),
      view.as_of ? h('p', { class: 'sub', text: `your tickets as of ${hhmm(view.as_of)}` }) : null,
    ),
    draws.length
      ? h('div', { class: 'draws' }, draws.map((d) => drawCard(d, view.as_of, onPrint)))
      : h('p', { class: 'empty', text: view.message || 'No draw is running now.' }),
  ];
}

/** The daemon's words as a sentence: "wrong PIN …" → "Wrong PIN …". */
export function sentence(words) {
  const text = String(words || '').trim();
  return text ? text[0].toUpperCase() + text.slice(1) : '';
}

/** A card that may not take part: the neutral message and nothing else. */
export function neutralNodes(view) {
  return [
    h('h1', { text: sentence(view.message) || 'Please see the promotions desk' }),
    h('p', { class: 'sub', text: 'Remove your card when you are done.' }),
  ];
}

/** A refusal or a notice in the daemon's words, with what to do next. */
export function noticeNodes(title, words, next) {
  return [h('h1', { text: title }), words ? h('p', { class: 'words', text: words }) : null, next ? h('p', { class: 'sub', text: next }) : null];
}

/** The receipt screen: what happened (printing here, printed by the printer), the receipt. */
export function receiptScreenNodes(r, { onBack }) {
  const printer = r.printed_to === 'printer';
  const reprint = r.reprint > 0;
  const title = printer ? 'Printed — take your receipt from the printer' : 'Your receipt is printing';
  return [
    h(
      'div',
      { class: 'receipt-head' },
      h('h1', { text: title }),
      h('p', {
        class: 'sub',
        text: reprint
          ? `REPRINT ${r.reprint} of receipt no. ${r.number} — your entries are unchanged`
          : `Receipt no. ${r.number} · ${r.draw_name || r.draw}: ${plural(r.tickets, 'ticket')}`,
      }),
      h('p', { class: 'keep', text: 'Keep your receipt: show it with your ID if you win.' }),
    ),
    // the paper's copy on screen is fine print: the player holds the paper itself
    h('div', { class: 'paper fine' }, receiptNode(r, { className: 'receipt on-screen' })),
    h('div', { class: 'receipt-actions' }, h('button', { type: 'button', class: 'back', name: 'back', text: 'Back to my draws', onclick: onBack })),
  ];
}
