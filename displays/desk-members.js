// desk-members.js — the Members tab: find a member by card; the member record and flags,
// where they play now, a kiosk PIN lock to lift, their standing in every draw (qualified, tickets, activation, the
// reasons when not), their recent gaming days, and their records in the audit trail.

import { api, path } from './api.js';
import { dayTime, points, rand } from './clock.js';
import { byId, fill, h } from './dom.js';
import { button, inlineForm, resultLine, table } from './ui.js';

const HISTORY_DAYS = 14;

export function initMembers(ctx) {
  const form = byId('member-find');
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const card = String(new FormData(form).get('card') || '').trim();
    if (card) find(card);
  });

  function open() {}

  async function find(card) {
    const slot = byId('member');
    fill(slot, h('p', { class: 'muted', text: `Looking up ${card}…` }));
    const r = await api(path('members', card));
    if (!r.ok) {
      fill(slot, resultLine(r, ''));
      return;
    }
    const [standings, days] = await Promise.all([standingsOf(card), historyOf(card)]);
    fill(
      slot,
      memberPanel(r.data),
      r.data.kiosk_pin_locked_s > 0 ? unlockPanel(card, r.data.kiosk_pin_locked_s, () => find(card)) : null,
      h('div', { class: 'panel' }, h('h3', { text: 'Standing in each draw' }), standingsTable(standings)),
      h('div', { class: 'panel' }, h('h3', { text: `Gaming days (last ${HISTORY_DAYS})` }), daysTable(days)),
      h('div', { class: 'actions' }, button('Audit records of this card', () => ctx.searchAudit(card), { name: 'member-audit' })),
    );
  }

  async function standingsOf(card) {
    const promotions = await api('/promotions');
    if (!promotions.ok) return [];
    const jobs = [];
    for (const p of promotions.data) {
      const detail = await api(path('promotions', p.id));
      if (!detail.ok) continue;
      for (const d of detail.data.draws) {
        jobs.push(api(path('promotions', p.id, 'draws', d.id, 'standings', card)).then((s) => ({ p, d, s })));
      }
    }
    return Promise.all(jobs);
  }

  async function historyOf(card) {
    const health = await api('/health');
    if (!health.ok) return [];
    const today = Date.parse(`${health.data.gaming_day}T12:00:00Z`);
    const days = [];
    for (let i = 0; i < HISTORY_DAYS; i++) {
      days.push(new Date(today - i * 86400000).toISOString().slice(0, 10));
    }
    const rows = await Promise.all(days.map((day) => api(path('members', card, 'days', day))));
    return rows.filter((x) => x.ok).map((x) => x.data);
  }

  return { open, find };
}

function memberPanel(m) {
  const rec = m.member;
  const facts = [];
  const fact = (label, value) => facts.push(h('dt', { text: label }), h('dd', { text: value }));
  fact('Card', m.card);
  if (rec) {
    fact('Name', rec.name);
    fact('Tier', rec.tier);
    fact('App user', rec.app_user ? 'yes' : 'no');
    fact('SMS', rec.sms_opt_in ? 'opted in' : 'not opted in');
    fact('Date of birth', rec.date_of_birth || 'unknown');
    fact('Last visit (record)', rec.last_visit || '—');
    fact('Excluded', rec.excluded ? `YES — ${rec.exclusion_reason || 'no reason given'}` : 'no');
  } else {
    fact('Registered', m.flagged_unregistered ? 'no — seen on the floor, not in the member registry' : 'no');
  }
  const a = m.active;
  fact('On the floor now', a ? `${a.kind} ${a.device}${a.seat ? ` seat ${a.seat}` : ''}, area ${a.area}, since ${dayTime(a.since || '')}` : 'not carded in');
  return h('div', { class: 'panel', id: 'member-record' }, h('h2', { text: rec ? rec.name : `Card ${m.card}` }), h('dl', { class: 'facts' }, facts));
}

// a card locked at the kiosks after wrong PINs: the desk lifts it once it has seen the
// member's ID, and says what it checked (the audit trail keeps it with who lifted it)
function unlockPanel(card, lockedS, reload) {
  const minutes = Math.ceil(lockedS / 60);
  return h(
    'div',
    { class: 'panel', id: 'pin-lock' },
    h('h3', { text: 'Kiosk PIN locked' }),
    h('p', { text: `Wrong PINs locked this card at the kiosks for ${minutes} more minute(s). Check the member's ID before you lift the lock.` }),
    inlineForm(
      [{ name: 'reason', label: 'What you checked', placeholder: 'ID book checked at the desk', minlength: 10, maxlength: 200, size: 40 }],
      'Lift the lock',
      async (values) => {
        const r = await api(path('members', card, 'kiosk-pin', 'unlock'), { method: 'POST', body: { reason: values.reason } });
        if (!r.ok) return resultLine(r, '');
        await reload();
        return null;
      },
      { name: 'unlock-pin' },
    ),
  );
}

function standingsTable(rows) {
  return table(
    [
      { label: 'Draw', cell: (x) => `${x.d.name} (${x.p.id})` },
      { label: 'Date', cell: (x) => x.d.date },
      { label: 'Eligible', cell: (x) => (x.s.ok ? yes(x.s.data.eligible) : '') },
      { label: 'Qualified', cell: (x) => (x.s.ok ? yes(x.s.data.qualified) : '') },
      { label: 'Activated', cell: (x) => (x.s.ok ? yes(x.s.data.activated) : '') },
      { label: 'Tickets', num: true, cell: (x) => (x.s.ok ? String(x.s.data.tickets) : '') },
      { label: 'Entries', num: true, cell: (x) => (x.s.ok ? String(x.s.data.entries) : '') },
      { label: 'Visits', num: true, cell: (x) => (x.s.ok ? String(x.s.data.visits) : '') },
      { label: 'Points (slots / tables)', num: true, cell: (x) => (x.s.ok ? sides(x.s.data.sides) : '') },
      { label: 'Why not', cell: (x) => (x.s.ok ? x.s.data.reasons.join('; ') : x.s.detail) },
    ],
    rows,
    { empty: 'No draws.' },
  );
}

function daysTable(days) {
  const played = days.filter((d) => d.visit || d.games || d.ratings || d.slots_points || d.tables_points);
  return table(
    [
      { label: 'Gaming day', cell: (d) => d.gaming_day },
      { label: 'Slots points', num: true, cell: (d) => points(d.slots_points) },
      { label: 'Tables points', num: true, cell: (d) => points(d.tables_points) },
      { label: 'Spend', num: true, cell: (d) => rand(d.spend_cents) },
      { label: 'Games', num: true, cell: (d) => points(d.games) },
      { label: 'Ratings', num: true, cell: (d) => points(d.ratings) },
    ],
    played,
    { empty: 'No rated play on these days.' },
  );
}

function yes(flag) {
  return flag ? 'yes' : 'no';
}

function sides(s) {
  const side = (name) => (s[name] ? points(s[name].points) : '—');
  return `${side('slots')} / ${side('tables')}`;
}
