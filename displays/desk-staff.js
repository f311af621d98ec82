// desk-staff.js — the Staff tab (an admin's only): the staff accounts people sign in with at
// the crew handhelds and the desk; add one, disable or enable it, set a new PIN. Disabling
// and a new PIN sign that person out everywhere at once (their open pages close within a
// second). A PIN is typed into a password field, sent once, and never shown.

import { api, path } from './api.js';
import { stamp } from './clock.js';
import { byId, fill, h } from './dom.js';
import { button, resultLine, table } from './ui.js';

export function initStaff(ctx, me) {
  const form = byId('staff-add');
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    const body = Object.fromEntries(['staff', 'name', 'role', 'pin'].map((k) => [k, String(data.get(k) || '').trim()]));
    const r = await api('/staff', { method: 'POST', body });
    fill(byId('staff-result'), resultLine(r, r.ok ? `Added ${r.data.name} (staff ${r.data.staff}), ${r.data.role}.` : ''));
    if (r.ok) {
      form.reset();
      await load();
    }
  });

  async function load() {
    const r = await api('/staff');
    if (!r.ok) {
      fill(byId('staff-list'), resultLine(r, ''));
      return;
    }
    fill(
      byId('staff-list'),
      table(
        [
          { label: 'Staff number', cell: (x) => h('code', { text: x.staff }) },
          { label: 'Name', cell: (x) => x.name },
          { label: 'Role', cell: (x) => x.role },
          { label: 'State', cell: (x) => h('span', { class: `state ${x.disabled ? 'refused' : 'approved'}`, text: x.disabled ? 'disabled' : 'active' }) },
          { label: 'Changed', cell: (x) => stamp(x.changed) },
          { label: '', cell: actions },
        ],
        r.data.staff,
        { empty: 'No staff account yet: add one below (or `bonusd staff add`).', rowClass: (x) => (x.disabled ? 'disabled' : '') },
      ),
    );
  }

  function actions(x) {
    const cell = h('span', { class: 'actions', dataset: { staff: x.staff } });
    const own = x.staff === me.staff;
    const toggle = x.disabled
      ? button('Enable', () => change(x, 'enable'), { name: 'enable' })
      : button('Disable', () => change(x, 'disable'), { name: 'disable', title: own ? 'your own account: ask another admin' : undefined });
    if (own && !x.disabled) toggle.disabled = true;
    fill(cell, toggle, button('New PIN', () => askPin(x, cell), { name: 'new-pin' }));
    return cell;
  }

  async function change(x, what, body) {
    const r = await api(path('staff', x.staff, what), { method: 'POST', body });
    if (!r.ok) {
      ctx.toast(`Refused: ${r.detail}`, true);
      return;
    }
    const ended = r.data.sessions_ended;
    const words = { disable: 'disabled', enable: 'enabled', 'reset-pin': 'has a new PIN' }[what];
    ctx.toast(`${x.name} (staff ${x.staff}) ${words}${ended ? `; ${ended} open sign-in(s) ended` : ''}.`);
    await load();
  }

  function askPin(x, cell) {
    const pin = h('input', { type: 'password', name: 'pin', inputmode: 'numeric', minlength: 6, maxlength: 8, pattern: '[0-9]{6,8}', size: 9, required: true, 'aria-label': `New PIN for staff ${x.staff}` });
    const pinForm = h(
      'form',
      { class: 'inline', name: 'reset-pin' },
      pin,
      h('button', { type: 'submit', class: 'primary', text: 'Set PIN' }),
      button('Cancel', () => load()),
    );
    pinForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      change(x, 'reset-pin', { pin: pin.value });
    });
    fill(cell, pinForm);
    pin.focus();
  }

  return { open: load, refresh: load };
}
