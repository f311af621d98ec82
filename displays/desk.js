// desk.js — the promotions desk page: staff sign-in (signin.js), tabs, the daemon's clock, and the live panel
// (open claims with their PA announcement text, from the crew stream, which the desk role
// may read), which also carries the desk's change marker: on a change the open tab fetches
// what it shows again (desk-live.js), so the desk never goes stale. Each tab's work is in its own module: desk-draws.js, desk-jackpots.js,
// desk-letters.js, desk-members.js, desk-audit.js; an admin also gets desk-staff.js.

import { api } from './api.js';
import { signedOutReason, site as pageSite } from './auth.js';
import { ServerClock, countdown } from './clock.js';
import { byId, fill, h, setText, show } from './dom.js';
import { endSession, signOutWith, startSignIn } from './signin.js';
import { LiveStream } from './stream.js';
import { stateTag, timer, toast } from './ui.js';
import { initAudit } from './desk-audit.js';
import { initDraws } from './desk-draws.js';
import { DeskWatch } from './desk-live.js';
import { initJackpots } from './desk-jackpots.js';
import { initLetters } from './desk-letters.js';
import { initMembers } from './desk-members.js';
import { initScreens } from './desk-screens.js';
import { initStaff } from './desk-staff.js';

const clock = new ServerClock();
const ctx = { clock, toast, show: showTab, site: '' };
const tabs = {};
let live = null;
let started = false;
let openTab = null;
// a change pushed by the daemon: the open tab (draws, jackpots) fetches what it shows again
const watch = new DeskWatch(async () => {
  const tab = openTab && tabs[openTab];
  if (tab && tab.refresh) await tab.refresh();
});
window.deskWatch = watch; // the page tests read how many refreshes ran

ctx.letters = initLetters(ctx);
tabs.draws = initDraws(ctx);
tabs.jackpots = initJackpots(ctx);
tabs.letters = ctx.letters;
tabs.members = initMembers(ctx);
tabs.audit = initAudit(ctx);
tabs.screens = initScreens(ctx); // floor screens and machine credentials
tabs.live = { open() {} };

async function onSignedIn(me) {
  if (me.role !== 'desk' && me.role !== 'admin') {
    signOutWith(`Staff ${me.staff} is a ${me.role} account: the desk needs a desk or admin sign-in.`);
    return;
  }
  setText(byId('login-error'), '');
  show(byId('login'), false);
  show(byId('tabs'), true);
  show(byId('main'), true);
  if (me.role === 'admin' && !tabs.staff) {
    tabs.staff = initStaff(ctx, me); // staff accounts: the admin's only
    show(byId('tabs').querySelector('[data-tab=staff]'), true);
  }
  ctx.site = await pageSite();
  setText(byId('site'), ctx.site ? `site ${ctx.site}` : '');
  if (!live) startLive();
  if (!started) {
    started = true;
    setInterval(tick, 500);
    setInterval(syncClock, 15000);
    syncClock();
  }
  showTab((location.hash || '#draws').slice(1));
}

function startLive() {
  live = new LiveStream({
    path: '/ws/crew',
    params: { site: ctx.site },
    token: '', // the session cookie authenticates the socket
    clock,
    onClock: tick, // a jump, pause or change of speed shows at once
    onStatus: (status, detail) => {
      const el = byId('live');
      el.className = `status ${status}`;
      const words = { live: 'live', connecting: 'connecting…', reconnecting: 'reconnecting…', denied: 'refused' };
      el.textContent = words[status] || status;
      el.title = detail || '';
    },
    onRevoked: (reason) => endSession(reason),
    onState: (state, changed) => {
      if (changed.includes('alerts')) renderAlerts(state.alerts || []);
      if (changed.includes('recent')) renderRecent(state.recent || []);
      if (changed.includes('desk')) watch.observe(state.desk);
    },
  });
  live.start();
}

async function syncClock() {
  const health = await api('/health');
  if (health.ok && health.data && health.data.clock && !(live && live.seq !== null)) {
    clock.observe(health.data.clock);
  }
}

function tick() {
  setText(byId('clock'), clock.wallTime());
  for (const el of document.querySelectorAll('[data-deadline]')) {
    setText(el, countdown(clock.left(el.dataset.deadline)));
  }
}

function claimPanel(a) {
  const where = [a.area && `area ${a.area}`, a.bank && `bank ${a.bank}`, a.device, a.seat ? `seat ${a.seat}` : ''];
  return h(
    'div',
    { class: 'panel' },
    h(
      'h3',
      {},
      `${a.title || a.subject} · claim ${a.claim} · ${a.name || a.card || ''} `,
      stateTag(a.state),
      a.deadline ? h('span', { class: 'muted' }, ' ', timer(a.deadline, clock)) : null,
    ),
    h('p', { class: 'muted', text: [a.subject, ...where].filter(Boolean).join(' · ') }),
    a.announcement ? h('p', { class: 'pa' }, h('strong', { text: 'PA: ' }), a.announcement) : null,
  );
}

function renderAlerts(alerts) {
  fill(byId('alerts'), alerts.length ? alerts.map(claimPanel) : h('p', { class: 'muted', text: 'No open claims.' }));
}

function renderRecent(recent) {
  fill(byId('recent'), recent.length ? recent.map(claimPanel) : h('p', { class: 'muted', text: 'Nothing settled in the last 30 minutes.' }));
}

function showTab(name) {
  const tab = tabs[name] ? name : 'draws';
  show(byId('toast'), false); // a message belongs to the tab it was said on
  for (const button of byId('tabs').querySelectorAll('button')) {
    button.setAttribute('aria-selected', String(button.dataset.tab === tab));
  }
  for (const section of document.querySelectorAll('main > .tab')) {
    show(section, section.id === `tab-${tab}`);
  }
  if (location.hash !== `#${tab}`) history.replaceState(null, '', `#${tab}`);
  openTab = tab;
  tabs[tab].open();
}

byId('tabs').addEventListener('click', (ev) => {
  const button = ev.target.closest('button[data-tab]');
  if (button) showTab(button.dataset.tab);
});
setText(byId('login-error'), signedOutReason());
startSignIn({ form: byId('login'), who: byId('who'), logout: byId('logout'), onSignedIn });
