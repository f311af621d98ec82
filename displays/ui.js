// ui.js — the desk page's small building blocks: tables, buttons that show they are busy,
// inline forms, result lines and the toast. No state of its own beyond the toast timer.

import { countdown } from './clock.js';
import { h, fill } from './dom.js';

let toastTimer = null;

/** Show a short message bottom right; refusals in red and for longer. */
export function toast(text, refused = false) {
  const el = document.getElementById('toast');
  if (!el) return;
  el.textContent = text;
  el.className = refused ? 'toast refused' : 'toast';
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, refused ? 12000 : 5000);
}

/** A line saying what an API call did: `okText` or the server's refusal. */
export function resultLine(result, okText) {
  if (result.ok) return h('p', { class: 'result ok', role: 'status', text: okText });
  return h('p', { class: 'result refused', role: 'alert', text: `Refused: ${result.detail}` });
}

/** A button that stays disabled while its (async) action runs. */
export function button(label, action, { primary = false, title, name } = {}) {
  const el = h('button', { type: 'button', class: primary ? 'primary' : '', title, name, text: label });
  el.addEventListener('click', async () => {
    el.disabled = true;
    try {
      await action(el);
    } finally {
      el.disabled = false;
    }
  });
  return el;
}

/**
 * A table. columns: [{label, num, cell(row) -> Node|string}] ; rows: array.
 * `empty` is said when there are no rows.
 */
export function table(columns, rows, { empty = 'none', rowClass } = {}) {
  if (!rows.length) return h('p', { class: 'muted', text: empty });
  return h(
    'table',
    {},
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.num ? 'num' : '', text: c.label })))),
    h(
      'tbody',
      {},
      rows.map((row) =>
        h(
          'tr',
          { class: rowClass ? rowClass(row) : '' },
          columns.map((c) => h('td', { class: c.num ? 'num' : '' }, c.cell(row))),
        ),
      ),
    ),
  );
}

/**
 * An inline form: fields [{name, label, type, value, placeholder, required, size, min,
 * minlength, maxlength}], a submit label, and onSubmit(values, form) (async). The result
 * goes under the form.
 */
export function inlineForm(fields, submitLabel, onSubmit, { name } = {}) {
  const out = h('div', { class: 'result-slot' });
  const submit = h('button', { type: 'submit', class: 'primary', text: submitLabel });
  const form = h(
    'form',
    { class: 'inline', name },
    fields.map((f) =>
      h(
        'label',
        {},
        f.label,
        f.type === 'select'
          ? h('select', { name: f.name }, (f.options || []).map((o) => h('option', { value: o, text: o })))
          : h('input', {
            name: f.name,
            type: f.type || 'text',
            value: f.value ?? '',
            placeholder: f.placeholder,
            required: f.required !== false,
            size: f.size,
            min: f.min,
            minlength: f.minlength,
            maxlength: f.maxlength,
            spellcheck: 'false',
          }),
      ),
    ),
    submit,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    try {
      const values = Object.fromEntries(new FormData(form).entries());
      const shown = await onSubmit(values, form);
      if (shown) fill(out, shown);
    } finally {
      submit.disabled = false;
    }
  });
  return h('div', {}, form, out);
}

/** A claim state as a coloured tag. */
export function stateTag(state) {
  return h('span', { class: `state ${state || ''}`, text: String(state || '—').replace(/_/g, ' ') });
}

/** A long hash, shortened on screen, whole in the tooltip and when copied. */
export function hash(value, keep = 16) {
  if (!value) return '—';
  const text = String(value);
  return h('span', { class: 'mono', title: text, text: text.length > keep ? `${text.slice(0, keep)}…` : text });
}

/** A countdown to an ISO deadline on the daemon's clock; the page's ticker keeps it going. */
export function timer(deadline, clock) {
  return h('span', { class: 'timer', dataset: { deadline }, text: countdown(clock.left(deadline)) });
}
