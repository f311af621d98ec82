// desk-jackpots.js — the Jackpots tab: each promotion's RAPS sessions; one session's
// jackpots (run one now, verify it, the crew's reselections and, once they are used up,
// approving one more with a reason), its claims with the desk's actions (announce, declined
// register, reselect with a reason) and the decline register (sign a member in before the
// session starts). `refresh` (desk-live.js, on a change pushed by the daemon) fetches the
// list and the open session again, keeping typed values.

import { api, path } from './api.js';
import { describeAction, postAction } from './claims.js';
import { dayTime } from './clock.js';
import { keeping } from './desk-live.js';
import { byId, fill, h } from './dom.js';
import { button, inlineForm, resultLine, stateTag, table, timer } from './ui.js';

const DESK_RAPS = {
  not_at_device: ['announce'],
  announced: ['declined_register', 'reselect'],
  not_owner: ['reselect'],
};

export function initJackpots(ctx) {
  let current = null;

  async function open() {
    await showList();
    if (current) await openSession(current.promotion, current.session);
  }

  async function refresh() {
    await showList();
    if (current) await openSession(current.promotion, current.session, null, true);
  }

  async function showList() {
    const slot = byId('sessions');
    const promotions = await api('/promotions');
    if (!promotions.ok) {
      fill(slot, resultLine(promotions, ''));
      return;
    }
    const panels = [];
    for (const p of promotions.data) {
      const sessions = await api(path('promotions', p.id, 'jackpots'));
      if (!sessions.ok || !sessions.data.length) continue;
      panels.push(h(
        'div',
        { class: 'panel' },
        h('h3', {}, `${p.name} `, h('span', { class: 'muted', text: p.id })),
        table(
          [
            { label: 'Session', cell: (s) => h('code', { text: s.id }) },
            { label: 'Name', cell: (s) => s.name },
            { label: 'Date', cell: (s) => s.date },
            { label: 'Hours', cell: (s) => `${s.start}–${s.end}` },
            { label: 'Areas', cell: (s) => s.areas.join(', ') },
            { label: '', cell: (s) => button('Open', () => openSession(p.id, s.id), { name: `open-${s.id}` }) },
          ],
          sessions.data,
        ),
      ));
    }
    const none = h('p', { class: 'muted', text: 'No RAPS sessions at this site.' });
    keeping(slot, () => fill(slot, h('h2', { text: 'RAPS jackpots' }), panels.length ? panels : none));
  }

  async function openSession(promotion, session, message, quiet = false) {
    current = { promotion, session };
    const slot = byId('session');
    const r = await api(path('promotions', promotion, 'jackpots', session));
    if (!r.ok) {
      fill(slot, h('div', { class: 'panel' }, resultLine(r, '')));
      return;
    }
    if (current.promotion !== promotion || current.session !== session) return; // another opened meanwhile
    if (!quiet) {
      fill(slot, sessionPanel(promotion, session, r.data, message));
      if (!message) slot.scrollIntoView({ block: 'start' });
      return;
    }
    keeping(slot, () => fill(slot, sessionPanel(promotion, session, r.data, null)));
  }

  function sessionPanel(promotion, session, s, message) {
    const base = ['promotions', promotion, 'jackpots', session];
    const out = h('div', { class: 'result-slot', id: 'session-result' }, message);
    const after = async (result, okText) => {
      ctx.toast(result.ok ? okText : `Refused: ${result.detail}`, !result.ok);
      if (!result.ok) return resultLine(result, okText);
      await openSession(promotion, session, resultLine(result, okText));
      return null;
    };
    // the crew's reselections of a jackpot; once used up, the desk may approve one more
    const reselections = (j) => {
      const count = `${j.reselections} of ${j.reselections_allowed}`;
      if (j.reselections < j.reselections_allowed) return count;
      return h('div', {}, count, inlineForm(
        [{ name: 'reason', label: 'Reason', size: 24 }],
        'Approve one more',
        async (v) => after(
          await api(path(...base, j.number, 'reselections', 'approve'), { method: 'POST', body: { reason: v.reason } }),
          `Jackpot ${j.number}: one more crew reselection approved.`,
        ),
        { name: `approve-reselection-${j.number}` },
      ));
    };
    return h(
      'div',
      { class: 'panel', id: 'session-panel', dataset: { subject: s.session } },
      h('h2', {}, 'Session ', h('code', { text: s.session })),
      h('div', { class: 'actions' }, button('Refresh', () => openSession(promotion, session))),
      out,
      h('h3', { text: 'RAPS jackpots' }),
      table(
        [
          { label: '#', num: true, cell: (j) => String(j.number) },
          { label: 'At', cell: (j) => dayTime(j.at) },
          { label: 'Id', cell: (j) => h('code', { text: j.id }) },
          { label: 'Attempt', num: true, cell: (j) => String(j.attempt) },
          { label: 'Crew reselections', cell: (j) => reselections(j) },
          {
            label: '',
            cell: (j) => h(
              'div',
              { class: 'actions' },
              button('Run now', async () => {
                const res = await api(path(...base, j.number, 'run'), { method: 'POST' });
                const shown = await after(res, `Jackpot ${j.number} run.`);
                if (shown) fill(out, shown);
              }, { primary: true, name: `run-jackpot-${j.number}` }),
              button('Verify', async () => {
                const res = await api(path(...base, j.number, 'verify'));
                fill(out, res.ok
                  ? h('p', { class: res.data.ok ? 'ok' : 'refused', text: `${res.data.ok ? 'Verified' : 'NOT verified'} — ${res.data.chain}; ${res.data.attempts.map((a) => `attempt ${a.attempt}: ${a.result}`).join('; ')}` })
                  : resultLine(res, ''));
              }),
            ),
          },
        ],
        s.jackpots,
        { empty: 'No jackpot committed yet (seeds are committed when the session starts).' },
      ),
      h('h3', { text: 'Claims' }),
      table(
        [
          { label: 'Claim', num: true, cell: (c) => String(c.claim) },
          { label: 'Jackpot', num: true, cell: (c) => String(c.jackpot) },
          { label: 'Card', cell: (c) => c.card },
          { label: 'Where', cell: (c) => [c.area, c.bank, c.device].filter(Boolean).join(' · ') },
          { label: 'State', cell: (c) => stateTag(c.state) },
          { label: 'Won', cell: (c) => (c.won ? 'yes' : '') },
          { label: 'Claim time', cell: (c) => (c.deadline ? timer(c.deadline, ctx.clock) : '') },
          {
            label: 'Desk',
            cell: (c) => h('div', { class: 'actions' }, (DESK_RAPS[c.state] || []).map((action) => {
              const { label, ask } = describeAction('raps', action);
              const done = async (res) => after(res, `Claim ${c.claim}: ${res.state || 'done'}.`);
              if (ask === 'reason') {
                return inlineForm([{ name: 'reason', label: 'Reason', size: 24 }], label, async (v) =>
                  done(await postAction('raps', s.session, c.claim, action, { reason: v.reason })), { name: `${action}-${c.claim}` });
              }
              return button(label, async () => done(await postAction('raps', s.session, c.claim, action)));
            })),
          },
        ],
        s.claims,
        { empty: 'No winner selected yet.' },
      ),
      h('h3', { text: 'Decline register' }),
      h('p', { class: 'muted', text: s.declined.length ? s.declined.join(', ') : 'Nobody has signed it.' }),
      inlineForm(
        [{ name: 'card', label: 'Member card', size: 14 }],
        'Sign the register',
        async (v) => after(await api(path(...base, 'declines'), { method: 'POST', body: { card: v.card } }), `${v.card} signed the decline register.`),
        { name: 'decline' },
      ),
    );
  }

  return { open, openSession, refresh };
}
