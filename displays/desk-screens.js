// desk-screens.js — the Screens tab (desk and admin): pair a new floor screen by the code it
// shows (POST /screens/pair), the paired screens with their area, connection state, last seen,
// size and version (GET /screens), moved to another area or revoked; and every machine
// credential (screens, kiosks, app servers, scripts) with its last use, revocable
// (GET /credentials, POST /credentials/{id}/revoke). While the tab is open it looks again
// every few seconds and redraws only what changed, keeping what is being typed.

import { api, path } from './api.js';
import { dayTime, hhmm } from './clock.js';
import { keeping } from './desk-live.js';
import { byId, fill, h } from './dom.js';
import { button, inlineForm, resultLine, table } from './ui.js';

const LOOK_MS = 4000;
const CONNECTION = {
  connected: 'connected',
  offline: 'offline',
  revoked: 'revoked',
  expired: 'expired',
};

export function initScreens(ctx) {
  const slots = { pair: byId('screens-pair'), list: byId('screens-list'), credentials: byId('credentials') };
  let areas = [];
  let shown = { list: '', credentials: '' };
  let timer = null;

  function ago(iso) { // last use is written at most once a minute
    if (!iso) return 'never';
    const minutes = Math.floor((ctx.clock.now() - Date.parse(iso)) / 60000);
    if (minutes < 2) return 'just now';
    if (minutes < 120) return `${minutes} min ago (${hhmm(iso)})`;
    return dayTime(iso);
  }

  function paired(c) {
    const lines = [c.paired_at ? `${dayTime(c.paired_at)} · ${c.paired_by}` : 'token issued by hand'];
    if (c.moved_at) lines.push(`moved here ${dayTime(c.moved_at)} · ${c.moved_by}`);
    return lines.map((line, n) => h('div', { class: n ? 'muted' : '', text: line }));
  }

  function connectionTag(c) {
    return h('span', { class: `state link-${c.connection}`, text: CONNECTION[c.connection] || c.connection });
  }

  function areaList() {
    return h('datalist', { id: 'screen-areas' }, areas.map((a) => h('option', { value: a })));
  }

  function pairForm() {
    const form = inlineForm(
      [
        { name: 'code', label: 'Code on the screen', placeholder: 'K7M-4QX', size: 9, maxlength: 16 },
        { name: 'area', label: 'Area it shows', placeholder: 'main', size: 12, maxlength: 32 },
        { name: 'name', label: 'Name (where it hangs)', placeholder: 'Bar 3', size: 20, maxlength: 60 },
      ],
      'Pair',
      async (values, el) => {
        const r = await api('/screens/pair', { method: 'POST', body: values });
        if (r.ok) {
          el.reset();
          await refresh(true);
          return resultLine(r, `Paired: “${r.data.name}” shows area ${r.data.area}; it starts within a few seconds.`);
        }
        return resultLine(r, '');
      },
      { name: 'pair-screen' },
    );
    form.querySelector('input[name=area]').setAttribute('list', 'screen-areas');
    form.querySelector('input[name=code]').setAttribute('autocapitalize', 'characters');
    return form;
  }

  function moveControl(c) {
    if (c.state !== 'active') return null;
    const choice = h('select', { name: `move-${c.id}`, 'aria-label': `Move ${c.name} to area` },
      h('option', { value: '', text: 'move to…' }),
      areas.filter((a) => a !== c.area).map((a) => h('option', { value: a, text: a })));
    const go = button('Move', async () => {
      if (!choice.value) return;
      const r = await api(path('screens', c.id, 'move'), { method: 'POST', body: { area: choice.value } });
      ctx.toast(r.ok ? `${c.name} now shows area ${r.data.area}` : `Refused: ${r.detail}`, !r.ok);
      await refresh(true);
    }, { name: `move-${c.id}` });
    return [choice, go];
  }

  function revokeButton(c, what) {
    if (c.state !== 'active') return null;
    return button('Revoke', async () => {
      const ask = `Revoke ${what} “${c.name}”? Its connections close at once; a screen shows a new pairing code.`;
      if (!window.confirm(ask)) return;
      const base = c.kind === 'screen' && what === 'screen' ? 'screens' : 'credentials';
      const r = await api(path(base, c.id, 'revoke'), { method: 'POST' });
      ctx.toast(r.ok ? `${c.name} revoked` : `Refused: ${r.detail}`, !r.ok);
      await refresh(true);
    }, { name: `revoke-${c.id}` });
  }

  function screensTable(screens) {
    const live = screens.filter((c) => c.state === 'active');
    const gone = screens.length - live.length;
    return [
      table(
        [
          { label: 'Name', cell: (c) => h('strong', { text: c.name }) },
          { label: 'Area', cell: (c) => c.area },
          { label: 'Connection', cell: connectionTag },
          { label: 'Last seen', cell: (c) => ago(c.last_used) },
          { label: 'Screen', cell: (c) => h('span', { class: 'nowrap', text: c.width ? `${c.width} × ${c.height}` : '' }) },
          { label: 'Version', cell: (c) => [c.version ? `bonusd ${c.version}` : '', c.agent].filter(Boolean).join(' · ') },
          { label: 'Paired', cell: paired },
          { label: '', cell: (c) => h('span', { class: 'actions nowrap' }, moveControl(c), revokeButton(c, 'screen')) },
        ],
        live,
        { empty: 'No screen is paired yet: open /signage on a screen and pair the code it shows.', rowClass: (c) => `screen-${c.id}` },
      ),
      gone ? h('p', { class: 'muted', text: `${gone} revoked or expired screen(s) are listed under Machine credentials.` }) : null,
    ];
  }

  function credentialsTable(credentials) {
    return table(
      [
        { label: 'Kind', cell: (c) => c.kind },
        { label: 'Name', cell: (c) => c.name },
        { label: 'Role', cell: (c) => c.role },
        { label: 'Area', cell: (c) => c.area || '' },
        { label: 'Last used', cell: (c) => ago(c.last_used) },
        { label: 'Expires', cell: (c) => dayTime(c.expires, true) },
        { label: 'State', cell: (c) => (c.state === 'revoked' ? `revoked ${dayTime(c.revoked)}${c.revoked_by ? ` by ${c.revoked_by}` : ''}` : c.state) },
        { label: '', cell: (c) => revokeButton(c, c.kind) },
      ],
      credentials,
      { empty: 'No machine credential.', rowClass: (c) => `credential-${c.id} ${c.state}` },
    );
  }

  async function refresh(force = false) {
    const [screens, credentials] = await Promise.all([api('/screens'), api('/credentials')]);
    if (!screens.ok) {
      fill(slots.list, resultLine(screens, ''));
      return;
    }
    areas = screens.data.areas;
    const waiting = screens.data.waiting;
    const listed = JSON.stringify([screens.data.screens, waiting, areas]);
    if (force || listed !== shown.list) {
      shown.list = listed;
      keeping(slots.list, () => fill(
        slots.list,
        areaList(),
        h('p', { class: 'muted', text: waiting ? `${waiting} screen(s) show a pairing code now.` : 'No screen is waiting to be paired.' }),
        screensTable(screens.data.screens),
      ));
    }
    const creds = credentials.ok ? JSON.stringify(credentials.data.credentials) : credentials.detail;
    if (force || creds !== shown.credentials) {
      shown.credentials = creds;
      keeping(slots.credentials, () => fill(slots.credentials, credentials.ok ? credentialsTable(credentials.data.credentials) : resultLine(credentials, '')));
    }
  }

  async function open() {
    if (!slots.pair.childNodes.length) fill(slots.pair, pairForm());
    shown = { list: '', credentials: '' };
    await refresh(true);
    clearInterval(timer);
    timer = setInterval(() => {
      if (byId('tab-screens').hidden) clearInterval(timer);
      else refresh();
    }, LOOK_MS);
  }

  return { open, refresh: () => refresh() };
}
