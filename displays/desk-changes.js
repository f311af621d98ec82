// desk-changes.js — four-eyes changes to a draw, on the Draws tab (docs/draws.md, "Changes
// after the freeze"): the exclusion and proxy forms, direct before the pools freeze and
// requests with a written reason after it; closing the entry bin early (asked by an admin);
// and the panel of requests with Approve and Refuse, which a second staff member uses. The
// daemon decides who may do what (the requester may not decide their own request) and its
// refusal is shown word for word.

import { api, path } from './api.js';
import { dayTime } from './clock.js';
import { fill, h } from './dom.js';
import { button, inlineForm, resultLine, stateTag, table } from './ui.js';

const MIN_REASON = 10; // characters, as the daemon requires
const REASON = {
  name: 'reason',
  label: 'Reason (for the record)',
  placeholder: `why, in at least ${MIN_REASON} characters`,
  minlength: MIN_REASON,
  maxlength: 300,
  size: 34,
};
// draw states (GET /promotions/{p}) in which the bin's scheduled close is still to come
const BEFORE_CLOSE = new Set(['upcoming', 'earning', 'activation']);

/** The draw's requests ({frozen, changes}) from the answer `r` of GET …/changes; when it
 * was refused, the refusal is shown and the freeze read from the book (a frozen pool). */
export function changesOf(r, book) {
  if (r.ok) return { ...r.data, failed: null };
  const frozen = book.rounds.some((round) => round.pool_commitment);
  return { frozen, changes: [], failed: r };
}

/** The members the requests name (card -> name), looked up so the approver sees who. */
export async function memberNames(changes) {
  const cards = [...new Set(changes.changes.map((c) => c.card).filter(Boolean))];
  const found = await Promise.all(cards.map((card) => api(path('members', card))));
  return new Map(cards.map((card, i) => [card, found[i].ok && found[i].data.member ? found[i].data.member.name : '']));
}

/** What a request changes, in the desk's words: "exclude Thandi Mokoena (card 6001001001)". */
function what(c, names) {
  const who = names.get(c.card) ? `${names.get(c.card)} (card ${c.card})` : `card ${c.card}`;
  if (c.change === 'exclusion') return `exclude ${who}`;
  if (c.change === 'proxy') return `register proxy ${c.proxy_id}${c.name ? ` (${c.name})` : ''} for ${who}`;
  return 'close the entry bin early';
}

function kind(c) {
  if (c.change === 'exclusion') return 'Exclusion';
  if (c.change === 'proxy') return h('span', {}, `Proxy: ${c.name || 'name not given'}`, h('br'), h('span', { class: 'muted', text: `ID ${c.proxy_id}` }));
  return 'Early close of the entry bin';
}

function member(c, names) {
  if (!c.card) return '';
  return h('span', {}, names.get(c.card) || '', names.get(c.card) ? h('br') : null, h('span', { class: 'muted', text: `card ${c.card}` }));
}

/** What an approval does at once, said before it is given. */
function effect(c) {
  if (c.change === 'exclusion') return 'The member is passed over from the next pick on; picks already made stand.';
  if (c.change === 'proxy') return 'The proxy may present for the member from now on.';
  return 'The entry bin closes and the pools freeze now, before the scheduled close.';
}

/** The panel of requests waiting for (or past) a second staff member's decision. */
export function changesPanel(base, drawName, changes, names, after) {
  const out = h('div', { class: 'result-slot', id: 'draw-changes-result' });
  const waiting = changes.changes.filter((c) => c.state === 'waiting').length;
  const decide = (c, verb) => async () => {
    const done = verb === 'approve' ? 'approved' : 'refused';
    const ask = verb === 'approve'
      ? `Approve request ${c.request}: ${what(c, names)} in ${drawName}?\n\n${effect(c)}\n\nReason given: ${c.reason}\nRequested by ${c.requested_by}.`
      : `Refuse request ${c.request}: ${what(c, names)} in ${drawName}?\n\nNothing changes; the refusal is recorded in your name.`;
    if (!window.confirm(ask)) return;
    const r = await api(path(...base, 'changes', c.request, verb), { method: 'POST' });
    const shown = await after(r, `Request ${c.request} ${done}: ${what(c, names)}.`);
    if (shown) fill(out, shown);
  };
  const explain = changes.frozen
    ? 'The pools are frozen: an exclusion or a proxy is made only when a second staff member approves the request. Nobody decides their own request.'
    : 'Until the pools freeze, exclusions and proxies are made directly (below); an early close of the entry bin needs a second staff member already.';
  return h(
    'div',
    { class: 'panel', id: 'draw-changes' },
    h('h3', {}, 'Changes waiting for a second pair of eyes ', waiting ? h('span', { class: 'state waiting', text: `${waiting} waiting` }) : null),
    h('p', { class: 'muted', text: explain }),
    changes.failed ? resultLine(changes.failed, '') : null,
    table(
      [
        { label: 'No.', num: true, cell: (c) => String(c.request) },
        { label: 'Change', cell: (c) => kind(c) },
        { label: 'Member', cell: (c) => member(c, names) },
        { label: 'Reason', cell: (c) => c.reason },
        { label: 'Requested by', cell: (c) => c.requested_by },
        { label: 'State', cell: (c) => stateTag(c.state) },
        { label: 'Decided by', cell: (c) => c.decided_by || '' },
        {
          label: '',
          cell: (c) => (c.state === 'waiting'
            ? h(
              'div',
              { class: 'actions' },
              button('Approve', decide(c, 'approve'), { primary: true, name: `approve-${c.request}` }),
              button('Refuse', decide(c, 'refuse'), { name: `refuse-${c.request}` }),
            )
            : ''),
        },
      ],
      changes.changes,
      { empty: 'No change requested.', rowClass: (c) => (c.state === 'waiting' ? 'waiting' : '') },
    ),
    out,
  );
}

/** The proxy and exclusion forms (direct, or requests once frozen) and the early close. */
export function changeForms(base, b, changes, drawState, after) {
  const request = async (body, okText) => {
    const reason = String(body.reason || '').trim();
    if (reason.length < MIN_REASON) {
      return resultLine({ ok: false, detail: `give a reason of at least ${MIN_REASON} characters` }, '');
    }
    const r = await api(path(...base, 'changes'), { method: 'POST', body: { ...body, reason } });
    const made = r.ok ? r.data.changes[r.data.changes.length - 1] : null;
    return after(r, made ? `Request ${made.request}: ${okText} — waiting for a second staff member's approval.` : okText);
  };
  const frozen = changes.frozen;
  const proxies = table(
    [{ label: 'Member', cell: (p) => p.card }, { label: 'Proxy ID', cell: (p) => p.proxy_id }, { label: 'Name', cell: (p) => p.name }],
    b.proxies,
    { empty: 'No proxies recorded.' },
  );
  const proxyFields = [
    { name: 'card', label: 'Member card', size: 12 },
    { name: 'proxy_id', label: 'Proxy ID number', size: 16 },
    { name: 'name', label: 'Proxy name', required: false, size: 20 },
  ];
  const forms = [
    frozen
      ? h('div', { class: 'panel' }, h('h3', { text: 'Request a proxy' }), proxies, frozenNote(), inlineForm(
        [...proxyFields, REASON],
        'Request proxy',
        (v) => request({ change: 'proxy', ...v }, `proxy ${v.proxy_id} for card ${v.card}`),
        { name: 'proxy-request' },
      ))
      : h('div', { class: 'panel' }, h('h3', { text: 'Record a proxy' }), proxies, inlineForm(
        proxyFields,
        'Record proxy',
        async (v) => after(await api(path(...base, 'proxies'), { method: 'POST', body: v }), `Proxy ${v.proxy_id} recorded for ${v.card}.`),
        { name: 'proxy' },
      )),
    frozen
      ? h('div', { class: 'panel' }, h('h3', { text: 'Request an exclusion' }), frozenNote(PICKS_STAND), inlineForm(
        [{ name: 'card', label: 'Member card', size: 12 }, REASON],
        'Request exclusion',
        (v) => request({ change: 'exclusion', card: v.card, reason: v.reason }, `exclude card ${v.card}`),
        { name: 'exclusion-request' },
      ))
      : h('div', { class: 'panel' }, h('h3', { text: 'Exclude a member from this draw' }), inlineForm(
        [
          { name: 'card', label: 'Member card', size: 12 },
          { name: 'note', label: 'Note (for the record)', placeholder: 'why, e.g. self-exclusion form', maxlength: 200, size: 28 },
        ],
        'Exclude',
        async (v) => after(await api(path(...base, 'exclusions'), { method: 'POST', body: v }), `${v.card} excluded from ${b.name}.`),
        { name: 'exclusion' },
      )),
  ];
  if (!frozen && (!drawState || BEFORE_CLOSE.has(drawState.state))) {
    const when = drawState ? dayTime(drawState.bin_closes) : 'its scheduled time';
    forms.push(h(
      'div',
      { class: 'panel' },
      h('h3', { text: 'Close the entry bin early' }),
      h('p', { class: 'muted', text: `The bin closes by itself at ${when}. Closing it before then is asked by an admin, with a reason, and happens when a second staff member approves: the pools freeze at that moment.` }),
      inlineForm([REASON], 'Request early close', (v) => request({ change: 'early_close', reason: v.reason }, 'close the entry bin early'), { name: 'early-close' }),
    ));
  }
  return forms;
}

const PICKS_STAND = ' The member is passed over from the next pick on; a pick made before stands (a winner who must not be paid is not verified: the no-show starts the redraw).';

function frozenNote(more = '') {
  return h('p', { class: 'muted', text: `The pools are frozen: this is made only when a second staff member approves it (Changes, above).${more}` });
}
