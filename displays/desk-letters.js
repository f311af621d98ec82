// desk-letters.js — the Prize letters tab: look a letter up by its number, redeem it, and
// print it (the letter sheet is laid out here and printed with desk.css's print stylesheet:
// letter number, winner, prize, issue and expiry dates). The daemon's own printable page
// (GET /letters/{number}/print) can be saved as a file too.

import { api, path } from './api.js';
import { postAction, splitSubject } from './claims.js';
import { day, dayTime, hhmm } from './clock.js';
import { byId, fill, h } from './dom.js';
import { button, resultLine, stateTag } from './ui.js';

export function initLetters(ctx) {
  const form = byId('letter-find');
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const number = String(new FormData(form).get('number') || '').trim();
    if (number) lookUp(number);
  });

  function open() {}

  async function fetchLetter(number) {
    return api(path('letters', number));
  }

  async function lookUp(number) {
    ctx.show('letters');
    form.elements.number.value = number;
    const slot = byId('letter');
    const r = await fetchLetter(number);
    if (!r.ok) {
      fill(slot, resultLine(r, ''));
      return;
    }
    const letter = await withName(r.data);
    const out = h('div', { class: 'result-slot' });
    const { promotion } = splitSubject(letter.draw);
    fill(
      slot,
      sheet(letter, await promotionName(promotion)),
      h(
        'div',
        { class: 'actions' },
        button('Print letter', () => printLetter(number), { primary: true, name: 'print-letter' }),
        letter.state === 'letter_issued'
          ? button('Redeem at the cash desk', async () => {
            const res = await postAction('draw', letter.draw, letter.claim, 'redeem');
            ctx.toast(res.ok ? `Letter ${number} redeemed.` : `Refused: ${res.detail}`, !res.ok);
            fill(out, resultLine(res, `Letter ${number} redeemed.`));
            if (res.ok) await lookUp(number);
          }, { name: 'redeem-letter' })
          : null,
        button('Save printable page (A5)', () => savePrintable(number, 'A5', out), { name: 'printable' }),
      ),
      out,
    );
  }

  async function promotionName(id) {
    const r = await api(path('promotions', id));
    return r.ok ? r.data.name : id;
  }

  /** The letter is in the winner's name: the member record's, beside the card. */
  async function withName(letter) {
    const r = await api(path('members', letter.winner));
    const name = r.ok && r.data.member ? r.data.member.name : '';
    return { ...letter, winnerText: name ? `${name} (card ${letter.winner})` : `card ${letter.winner}` };
  }

  /** Lay the letter out on the print sheet and open the browser's print dialog. */
  async function printLetter(number) {
    const r = await fetchLetter(number);
    if (!r.ok) {
      ctx.toast(`Cannot print: ${r.detail}`, true);
      return false;
    }
    const target = byId('print-letter');
    const { promotion } = splitSubject(r.data.draw);
    fill(target, sheet(await withName(r.data), await promotionName(promotion)));
    target.hidden = false;
    target.dataset.letter = number;
    window.print();
    return true;
  }

  /**
   * The daemon's own printable letter (A5 or A4, GET /letters/{number}/print), saved as a
   * file to open and print: it carries its own inline stylesheet, which this page's
   * Content-Security-Policy would refuse in a window opened from here.
   */
  async function savePrintable(number, paper, out) {
    const r = await api(`${path('letters', number, 'print')}?paper=${paper}`, { accept: 'text/html' });
    if (!r.ok) {
      fill(out, resultLine(r, ''));
      return;
    }
    const url = URL.createObjectURL(new Blob([r.data], { type: 'text/html' }));
    const a = h('a', { href: url, download: `prize-letter-${number}-${paper}.html` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    fill(out, resultLine(r, `Saved prize-letter-${number}-${paper}.html: open it and print.`));
  }

  return { open, lookUp, printLetter };
}

/** The letter as printed: in the winner's name, with the prize and its dates. */
function sheet(letter, promotionName) {
  return h(
    'div',
    { class: 'letter-sheet', id: `letter-${letter.number}` },
    h('h2', { text: 'Prize letter' }),
    h('p', { text: `${promotionName} — ${letter.draw}` }),
    h(
      'dl',
      {},
      h('dt', { text: 'Letter number' }), h('dd', { class: 'mono', text: letter.number }),
      h('dt', { text: 'Winner' }), h('dd', { text: letter.winnerText }),
      h('dt', { text: 'Prize' }), h('dd', { text: letter.prize }),
      h('dt', { text: 'Issued' }), h('dd', { text: dayTime(letter.issued_at, true) }),
      h('dt', { text: 'Redeem by' }), h('dd', { text: redeemBy(letter.expires_at) }),
      h('dt', { text: 'Claim' }), h('dd', { text: String(letter.claim) }),
      h('dt', { class: 'no-print', text: 'State' }), h('dd', { class: 'no-print' }, stateTag(letter.state)),
    ),
    h('p', { text: 'Redeem this letter at the Cash Desk with your ID before the date above.' }),
    h('p', { class: 'signature', text: 'Issued by: ______________________    Received by: ______________________' }),
  );
}

/** A letter runs to the end of a day: "end of Sun 22 Nov 2026" rather than "Mon 00:00". */
function redeemBy(iso) {
  const ms = Date.parse(iso);
  if (hhmm(iso) === '00:00' && !Number.isNaN(ms)) return `end of ${day(new Date(ms - 1).toISOString())}`;
  return dayTime(iso, true);
}
