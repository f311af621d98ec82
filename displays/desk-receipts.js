// desk-receipts.js — on the desk's "Letters & receipts" tab: a kiosk receipt looked up by its
// number (GET /receipts/{number}, desk token): what it says (draw, member with the full card,
// tickets and their breakdown, the tombola ticket numbers, activation), every print (the
// original and each reprint: when, at which kiosk) and every check made of it at a claim
// with its verdict. Loaded by desk.html beside desk.js; it needs only the form and the
// slot it fills, and the desk's token (api.js).

import { api, path } from './api.js';
import { dayTime, points, stamp } from './clock.js';
import { byId, fill, h } from './dom.js';
import { resultLine, table } from './ui.js';
import { VERDICTS } from './receipt-check.js';

const form = byId('receipt-find');
const slot = byId('receipt-record');

function ranges(tombolas) {
  return (tombolas || []).map((t) => `${t.tombola}: ${t.ranges.map(([a, b]) => (a === b ? `${a}` : `${a}–${b}`)).join(', ')}`);
}

function facts(r) {
  const rows = [
    ['Casino', r.casino],
    ['Promotion', `${r.promotion_name} (${r.promotion})`],
    ['Draw', `${r.draw_name} (${r.draw}) · ${(r.draw_times || []).map((t) => dayTime(t)).join(', ')}`],
    ['Member', `${r.masked_name} · card ${r.card}`],
    ['Tickets', `${points(r.tickets)}${(r.breakdown || []).length ? ` — ${r.breakdown.join('; ')}` : ''}`],
    ['Ticket numbers', ranges(r.tombola_tickets).join(' · ') || '—'],
    ['Activated', r.activated_at ? stamp(r.activated_at) : 'no activation needed'],
    ['First printed', `${stamp(r.printed_at)} at ${r.kiosk}`],
  ];
  return h('dl', {}, rows.map(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })]));
}

function verdictTag(verdict) {
  const known = VERDICTS[verdict];
  return h('span', { class: `verdict-tag ${known && known.good ? 'good' : 'bad'}`, text: known ? known.title : verdict });
}

function record(r) {
  const prints = Array.isArray(r.prints) ? r.prints : [];
  const checks = Array.isArray(r.checks) ? r.checks : [];
  return h(
    'div',
    { class: 'receipt-record panel', dataset: { number: String(r.number) } },
    h('h3', { text: `Receipt no. ${r.number}` }),
    facts(r),
    h('h4', { text: `Prints (${prints.length})` }),
    table(
      [
        { label: 'Print', cell: (p) => (p.reprint ? `REPRINT ${p.reprint}` : 'original') },
        { label: 'At', cell: (p) => stamp(p.at) },
        { label: 'Kiosk', cell: (p) => p.kiosk },
      ],
      prints,
      { empty: 'never printed' },
    ),
    h('h4', { text: `Checks at claims (${checks.length})` }),
    table(
      [
        { label: 'At', cell: (c) => stamp(c.at) },
        { label: 'Draw', cell: (c) => c.draw },
        { label: 'Claim', num: true, cell: (c) => String(c.claim) },
        { label: 'Verdict', cell: (c) => verdictTag(c.verdict) },
        { label: 'By', cell: (c) => c.by },
      ],
      checks,
      { empty: 'not checked at any claim yet' },
    ),
  );
}

async function lookUp(number) {
  fill(slot, h('p', { class: 'muted', text: `Looking up receipt ${number}…` }));
  const r = await api(path('receipts', number));
  fill(slot, r.ok && r.data ? record(r.data) : resultLine(r, ''));
}

form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  const typed = String(new FormData(form).get('number') || '').trim();
  // the number alone, or a receipt's short code ("R123-0-…"): its number
  const match = /^R?(\d{1,10})\b/i.exec(typed);
  if (match) lookUp(match[1]);
  else fill(slot, h('p', { class: 'result refused', role: 'alert', text: 'Type the receipt number (as printed: "Receipt no. 12").' }));
});
