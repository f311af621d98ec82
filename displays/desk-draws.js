// desk-draws.js — the Draws tab: every promotion's draws with their states; one draw's book
// (rounds, commitments, pools, picks and claims), run a round now, load prizes, record
// hand-drawn tickets, the desk's claim actions (issue, redeem, lapse a prize letter), ticket
// lists, the draw report and its verification. Proxies, exclusions, the early close and
// their four-eyes requests are desk-changes.js's. `refresh` (desk-live.js, on a change
// pushed by the daemon) fetches the list and the open draw again, keeping typed values.

import { api, path } from './api.js';
import { describeAction, postAction } from './claims.js';
import { dayTime, hhmm } from './clock.js';
import { changeForms, changesOf, changesPanel, memberNames } from './desk-changes.js';
import { keeping } from './desk-live.js';
import { byId, fill, h } from './dom.js';
import { button, hash, inlineForm, resultLine, stateTag, table, timer } from './ui.js';

const DESK_ACTIONS = { announced: [], verified: [], reveal_picked: ['issue_letter'], letter_issued: ['redeem', 'lapse'] };

export function initDraws(ctx) {
  let current = null; // {promotion, draw}

  async function open() {
    await showList();
    if (current) await openDraw(current.promotion, current.draw);
  }

  // a change pushed by the daemon: the list and the open draw again, where the user is
  async function refresh() {
    await showList();
    if (current) await openDraw(current.promotion, current.draw, null, true);
  }

  async function showList() {
    const list = byId('promotions');
    const promotions = await api('/promotions');
    if (!promotions.ok) {
      fill(list, resultLine(promotions, ''));
      return;
    }
    const panels = [];
    for (const p of promotions.data) {
      const detail = await api(path('promotions', p.id));
      if (!detail.ok) {
        panels.push(h('div', { class: 'panel' }, h('h2', { text: p.name }), resultLine(detail, '')));
        continue;
      }
      panels.push(promotionPanel(detail.data));
    }
    const none = h('p', { class: 'muted', text: 'No promotion runs at this site.' });
    keeping(list, () => fill(list, h('h2', { text: 'Promotions and draws' }), panels.length ? panels : none));
  }

  function promotionPanel(p) {
    return h(
      'div',
      { class: 'panel', dataset: { promotion: p.id } },
      h('h3', {}, `${p.name} `, h('span', { class: 'muted', text: `${p.id} · ${p.start} – ${p.end}` })),
      table(
        [
          { label: 'Draw', cell: (d) => h('strong', { text: d.name }) },
          { label: 'Id', cell: (d) => h('code', { text: d.id }) },
          { label: 'Date', cell: (d) => d.date },
          { label: 'Mode', cell: (d) => d.mode },
          { label: 'State', cell: (d) => stateTag(d.state) },
          { label: 'Bin closes', cell: (d) => dayTime(d.bin_closes) },
          { label: 'Rounds', cell: (d) => d.rounds.map((r) => `${String(r.time).slice(0, 5)} ×${winners(r.winners)}`).join(', ') },
          { label: 'Pool', cell: (d) => hash(d.pool_sha256) },
          { label: '', cell: (d) => button('Open', () => openDraw(p.id, d.id), { name: `open-${d.id}` }) },
        ],
        p.draws,
        {
          empty: 'no draws',
          rowClass: (d) => (current && current.promotion === p.id && current.draw === d.id ? 'selected' : ''),
        },
      ),
    );
  }

  async function openDraw(promotion, draw, message, quiet = false) {
    current = { promotion, draw };
    const slot = byId('draw');
    const base = ['promotions', promotion, 'draws', draw];
    const [book, asked, detail] = await Promise.all(
      [path(...base, 'book'), path(...base, 'changes'), path('promotions', promotion)].map((p) => api(p)),
    );
    if (!book.ok) {
      fill(slot, h('div', { class: 'panel' }, h('h2', { text: `${promotion} / ${draw}` }), resultLine(book, '')));
      return;
    }
    const changes = changesOf(asked, book.data);
    const names = await memberNames(changes);
    // the draw's state and bin close (the promotion's view): whether an early close is still possible
    const state = detail.ok ? detail.data.draws.find((d) => d.id === draw) : null;
    if (current.promotion !== promotion || current.draw !== draw) return; // another draw was opened meanwhile
    const redraw = () => fill(slot, drawPanel(promotion, draw, book.data, { changes, names, state }, message));
    // opening the draw already shown keeps what its result slot says (a report asked meanwhile)
    const same = slot.querySelector(':scope > #draw-panel')?.dataset.subject === book.data.draw;
    if (quiet || (same && !message)) keeping(slot, redraw);
    else redraw();
    if (!message && !quiet) slot.scrollIntoView({ block: 'start' });
  }

  function drawPanel(promotion, draw, b, { changes, names, state }, message) {
    const base = ['promotions', promotion, 'draws', draw];
    const out = h('div', { class: 'result-slot', id: 'draw-result' }, message);
    // an answer lands in the panel shown now: a reload may have replaced this one meanwhile
    const say = (node) => {
      const live = document.querySelector(`#draw-panel[data-subject="${CSS.escape(b.draw)}"] > #draw-result`);
      fill(live || out, node);
    };
    const reload = () => openDraw(promotion, draw);
    // a change redraws the panel with the result on top; a refusal stays where it was asked
    const after = async (result, okText) => {
      ctx.toast(result.ok ? okText : `Refused: ${result.detail}`, !result.ok);
      if (!result.ok) return resultLine(result, okText);
      await openDraw(promotion, draw, resultLine(result, okText));
      return null;
    };
    const roundNumbers = [...new Set(b.rounds.map((r) => r.round))].sort((x, y) => x - y);
    return h(
      'div',
      { class: 'panel', id: 'draw-panel', dataset: { subject: b.draw } },
      h('h2', {}, `${b.name} `, h('code', { text: b.draw }), b.manual ? h('span', { class: 'state', text: 'manual' }) : null),
      h(
        'div',
        { class: 'actions' },
        roundNumbers.map((n) => runButton(n, runBlocked(b, n, state), async () => {
          const due = b.rounds.find((r) => r.round === n);
          const early = due && Date.parse(due.at) > ctx.clock.now();
          const ask = `Round ${n} is due at ${dayTime(due && due.at)}. Run it now, before its time?`;
          if (early && !window.confirm(ask)) return;
          const r = await api(path(...base, 'run'), { method: 'POST', body: { round: n } });
          const shown = await after(r, `Round ${n} run: ${countPicks(r.data, n)} winner(s) on the book.`);
          if (shown) say(shown);
        })),
        button('Refresh', reload),
        button('Draw report', async () => {
          const r = await api(path(...base, 'report'), { accept: 'text/plain' });
          say(r.ok ? h('pre', { class: 'report', id: 'report', text: r.data }) : resultLine(r, ''));
        }, { name: 'report' }),
        button('Verify', async () => {
          const r = await api(path(...base, 'verify'));
          say(r.ok ? verifyResult(r.data) : resultLine(r, ''));
        }, { name: 'verify' }),
      ),
      out,
      h('h3', { text: 'Rounds' }),
      table(
        [
          { label: 'Tombola', cell: (r) => r.tombola },
          { label: 'Round', num: true, cell: (r) => String(r.round) },
          { label: 'At', cell: (r) => dayTime(r.at) },
          { label: 'Winners', num: true, cell: (r) => String(r.winners) },
          { label: 'Seed commitment', cell: (r) => hash(r.seed_commitment, 24) },
          { label: 'Pool', cell: (r) => (r.pool_commitment ? h('span', {}, hash(r.pool_commitment), ` ${r.pool_members} members, ${r.pool_tickets} tickets`) : 'not frozen') },
          { label: 'Seed (revealed)', cell: (r) => hash(r.seed, 24) },
          { label: 'Reveals', num: true, cell: (r) => String(r.reveals) },
          { label: 'Ticket list', cell: (r) => button('CSV', () => downloadTickets(base, r.tombola, r.round)) },
        ],
        b.rounds,
        { empty: 'no rounds' },
      ),
      h('h3', { text: 'Winners and claims' }),
      claimsTable(promotion, draw, b.claims, after),
      b.seats.length ? h('p', {}, 'Seated from the leaderboards: ', b.seats.map((s) => `${s.card} (${s.board})`).join(', ')) : null,
      changesPanel(base, b.name, changes, names, after),
      h('div', { class: 'cols' }, formsFor(promotion, draw, b, after), changeForms(base, b, changes, state, after)),
    );
  }

  function claimsTable(promotion, draw, claims, after) {
    return table(
      [
        { label: 'Claim', num: true, cell: (c) => String(c.claim) },
        { label: 'Card', cell: (c) => c.card },
        { label: 'Tombola / round', cell: (c) => `${c.tombola} / ${c.round}` },
        { label: 'Pick', num: true, cell: (c) => String(c.pick) },
        { label: 'State', cell: (c) => stateTag(c.state) },
        { label: 'Claim time', cell: (c) => (c.state === 'announced' && c.deadline ? timer(c.deadline, ctx.clock) : '') },
        { label: 'Presenter', cell: (c) => c.presenter || '' },
        { label: 'Prize', cell: (c) => c.prize || '' },
        { label: 'Letter', cell: (c) => (c.letter ? h('code', { text: c.letter }) : '') },
        {
          label: 'Desk',
          cell: (c) => h(
            'div',
            { class: 'actions' },
            (DESK_ACTIONS[c.state] || []).map((action) =>
              button(describeAction('draw', action).label, async () => {
                const r = await postAction('draw', `${promotion}.${draw}`, c.claim, action);
                await after(r, `Claim ${c.claim}: ${r.state || 'done'}.`);
              }, { name: `${action}-${c.claim}` })),
            c.letter ? button('Print letter', () => ctx.letters.printLetter(c.letter), { name: `print-${c.claim}` }) : null,
          ),
        },
      ],
      claims,
      { empty: 'No winners drawn yet.' },
    );
  }

  function formsFor(promotion, draw, b, after) {
    const base = ['promotions', promotion, 'draws', draw];
    const tombolas = [...new Set(b.rounds.map((r) => r.tombola))];
    const forms = [
      h('div', { class: 'panel' }, h('h3', { text: 'Load prize values (sealed into reveals)' }), inlineForm(
        [
          { name: 'tombola', label: 'Tombola', type: 'select', options: tombolas },
          { name: 'round', label: 'Round', type: 'number', value: '1', min: 1, size: 3 },
          { name: 'values', label: 'Values in rand, comma separated', placeholder: '500, 1000, 2000', size: 30 },
        ],
        'Load prizes',
        async (v) => {
          const cents = String(v.values).split(/[,\s]+/).filter(Boolean).map((x) => Math.round(Number(x) * 100));
          if (!cents.length || cents.some((x) => !Number.isFinite(x) || x <= 0)) {
            return resultLine({ ok: false, detail: 'give positive amounts in rand, e.g. 500, 1000' }, '');
          }
          const r = await api(path(...base, 'prizes'), { method: 'POST', body: { tombola: v.tombola, round: Number(v.round), values_cents: cents } });
          return after(r, `${cents.length} prize value(s) sealed for ${v.tombola} round ${v.round}.`);
        },
        { name: 'prizes' },
      )),
    ];
    if (b.manual) {
      forms.push(h('div', { class: 'panel' }, h('h3', { text: 'Hand-drawn ticket' }), inlineForm(
        [
          { name: 'tombola', label: 'Tombola', type: 'select', options: tombolas },
          { name: 'round', label: 'Round', type: 'number', value: '1', min: 1, size: 3 },
          { name: 'number', label: 'Ticket number', type: 'number', min: 1, size: 8 },
          { name: 'pool', label: 'Pool hash on the list', required: false, size: 20 },
        ],
        'Record ticket',
        async (v) => {
          const body = { tombola: v.tombola, round: Number(v.round), number: Number(v.number) };
          if (v.pool) body.pool = v.pool;
          return after(await api(path(...base, 'tickets'), { method: 'POST', body }), `Ticket ${v.number} accepted.`);
        },
        { name: 'ticket' },
      )));
    }
    return forms;
  }

  async function downloadTickets(base, tombola, round) {
    const r = await api(`${path(...base, 'tickets', tombola, round)}.csv`, { accept: 'text/csv' });
    if (!r.ok) {
      ctx.toast(`Refused: ${r.detail}`, true);
      return;
    }
    const url = URL.createObjectURL(new Blob([r.data], { type: 'text/csv' }));
    const a = h('a', { href: url, download: `${base[1]}.${base[3]}-${tombola}-round${round}.csv` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  return { open, openDraw, refresh };
}

// "Run round N now", disabled with the reason when running it no longer applies
function runButton(n, blocked, action) {
  const name = `run-round-${n}`;
  const run = button(`Run round ${n} now`, action, { primary: true, name, title: blocked || undefined });
  if (!blocked) return run;
  run.disabled = true;
  return h('span', { class: 'blocked' }, run, h('span', { class: 'muted reason', dataset: { round: n }, text: ` ${blocked}` }));
}

/** Why round `n` cannot be run from the desk now ('' when it can). */
export function runBlocked(b, n, state) {
  if (b.manual) return 'hand-drawn: enter the ticket numbers';
  const rows = b.rounds.filter((r) => r.round === n);
  if (rows.some((r) => r.picks > 0)) {
    const first = rows.map((r) => r.drawn_at).filter(Boolean).sort()[0];
    return first ? `drawn at ${hhmm(first)}` : 'drawn';
  }
  if (state && ['upcoming', 'earning', 'activation'].includes(state.state)) {
    return `the entry bin closes at ${hhmm(state.bin_closes)}`;
  }
  return '';
}

function winners(w) {
  if (typeof w === 'number') return String(w);
  return Object.entries(w || {}).map(([tombola, n]) => `${n} ${tombola}`).join(' + ');
}

function countPicks(book, round) {
  if (!book || !Array.isArray(book.claims)) return 0;
  return book.claims.filter((c) => c.round === round).length;
}

function verifyResult(v) {
  return h(
    'div',
    { class: 'panel', id: 'verify-result' },
    h('p', { class: v.ok ? 'ok' : 'refused' }, h('strong', { text: v.ok ? 'Verified: every pick follows from its seed and pool.' : 'NOT verified.' })),
    h('p', { text: `Audit chain: ${v.chain}` }),
    table([
      { label: 'Tombola', cell: (r) => r.tombola },
      { label: 'Round', num: true, cell: (r) => String(r.round) },
      { label: 'Result', cell: (r) => h('span', { class: r.ok ? 'ok' : 'refused', text: r.result }) },
    ], v.rounds, { empty: 'nothing to verify yet (no round settled)' }),
  );
}
