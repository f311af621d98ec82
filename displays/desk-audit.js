// desk-audit.js — the Audit tab: the site's hash-chained audit trail, newest first, with the
// chain's own check, filtered by kind and text (a card, a draw, an actor), page by page; and
// the record of rule changes (who changed what, when).

import { api } from './api.js';
import { stamp } from './clock.js';
import { byId, fill, h } from './dom.js';
import { button, hash, resultLine, table } from './ui.js';

const PAGE = 100;

export function initAudit(ctx) {
  const form = byId('audit-find');
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    load();
  });

  async function open() {
    await Promise.all([load(), changes()]);
  }

  function query(before) {
    const data = new FormData(form);
    const q = new URLSearchParams({ count: String(PAGE) });
    for (const key of ['kind', 'q']) {
      const value = String(data.get(key) || '').trim();
      if (value) q.set(key, value);
    }
    if (before) q.set('before', String(before));
    return `/audit?${q}`;
  }

  async function load(before) {
    const slot = byId('audit');
    const r = await api(query(before));
    if (!r.ok) {
      fill(slot, resultLine(r, ''));
      return;
    }
    const { records } = r.data;
    const last = records.length ? records[records.length - 1].seq : null;
    fill(
      slot,
      h('p', { class: r.data.ok ? 'ok' : 'refused', id: 'chain', text: `${r.data.chain} (${r.data.total} in all)` }),
      table(
        [
          { label: 'Seq', num: true, cell: (x) => String(x.seq) },
          { label: 'Time', cell: (x) => stamp(x.time) },
          { label: 'Actor', cell: (x) => x.actor },
          { label: 'Kind', cell: (x) => x.kind },
          { label: 'What', cell: (x) => h('code', { class: 'mono', text: summary(x.payload) }) },
          { label: 'Hash', cell: (x) => hash(x.hash, 12) },
        ],
        records,
        { empty: 'No record matches.' },
      ),
      records.length === PAGE && last > 1 ? button('Older records', () => load(last)) : null,
    );
  }

  async function changes() {
    const r = await api('/promotions/changes');
    fill(
      byId('changes'),
      r.ok
        ? table(
          [
            { label: 'At', cell: (x) => stamp(x.at) },
            { label: 'By', cell: (x) => x.actor },
            { label: 'Promotion', cell: (x) => x.promotion },
            { label: 'Changes', cell: (x) => h('ul', {}, (x.changes || []).map((c) => h('li', { text: c }))) },
          ],
          r.data,
          { empty: 'No rule has been changed.' },
        )
        : resultLine(r, ''),
    );
  }

  ctx.searchAudit = (text) => {
    form.elements.q.value = text;
    form.elements.kind.value = '';
    ctx.show('audit');
  };

  return { open };
}

/** A record's payload on one line: key=value pairs, long ones cut. */
function summary(payload) {
  const parts = Object.entries(payload || {}).map(([k, v]) => `${k}=${typeof v === 'object' && v !== null ? JSON.stringify(v) : v}`);
  const text = parts.join('  ');
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}
