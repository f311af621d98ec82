// claims.js — claim actions as the crew and desk pages post them: for each action the
// claim's HTTP endpoint (docs/draws.md; bonusd/api/draws.py, bonusd/api/jackpots.py), the
// button's words, and what it needs asked first (a RAPS reselection: its reason). Shared
// by crew.js and desk.js.

import { api, path } from './api.js';

// action -> [path segment, button label, what to ask]
const DRAW = {
  present: ['present', 'Presented', 'proxy'],
  verify: ['verify', 'Verified (ID + receipt)', 'checks'],
  pick_reveal: ['reveal', 'Reveal picked', 'reveal'],
  no_show: ['no-show', 'No-show', ''],
  issue_letter: ['letter', 'Issue prize letter', ''],
  redeem: ['redeem', 'Redeemed', ''],
  lapse: ['lapse', 'Lapse', ''],
};
const RAPS = {
  crew_arrived: ['at-device', 'At device', ''],
  verify_at_device: ['verified-at-device', 'Verified at device', ''],
  not_at_device: ['not-at-device', 'Not at device', ''],
  not_owner: ['not-owner', 'Not the card owner', 'reason'],
  announce: ['announce', 'Announce (90 s)', ''],
  present: ['present', 'Presented', ''],
  verify: ['verify', 'Verified', ''],
  declined_register: ['declined-register', 'Declined register', ''],
  reselect: ['reselect', 'Reselect', 'reason'],
};
// the actions a crew member may take; the desk's are the rest
export const CREW_ACTIONS = new Set([
  'present', 'verify', 'pick_reveal', 'no_show', 'crew_arrived', 'verify_at_device',
  'not_at_device', 'not_owner', 'announce', 'declined_register', 'reselect',
]);

/** The action's entry by its name ("no_show") or its path segment ("no-show"). */
export function describeAction(kind, action) {
  const table = kind === 'raps' ? RAPS : DRAW;
  const name = String(action).replace(/-/g, '_');
  if (table[name]) {
    const [segment, label, ask] = table[name];
    return { name, segment, label, ask };
  }
  for (const [key, [segment, label, ask]] of Object.entries(table)) {
    if (segment === action) return { name: key, segment, label, ask };
  }
  return { name, segment: String(action), label: name.replace(/_/g, ' '), ask: '' };
}

/**
 * The parts of a claim's subject: "promotion.draw" for a draw; "promotion.session" or
 * "promotion.session.jN" for RAPS. Promotion ids hold no dots.
 */
export function splitSubject(subject) {
  const [promotion, rest = '', jackpot = ''] = String(subject).split('.');
  return { promotion, owner: rest, jackpot };
}

/** POST a claim action. `extra` is the body ({proxy_id}, {reveal}, {id_checked, ...}). */
export async function postAction(kind, subject, claim, action, extra) {
  const { promotion, owner } = splitSubject(subject);
  const { segment } = describeAction(kind, action);
  const base = kind === 'raps' ? 'jackpots' : 'draws';
  const url = path('promotions', promotion, base, owner, 'claims', claim, segment);
  const result = await api(url, { method: 'POST', body: extra && Object.keys(extra).length ? extra : undefined });
  let state = '';
  if (result.ok && result.data && Array.isArray(result.data.claims)) {
    const found = result.data.claims.find((c) => String(c.claim) === String(claim));
    if (found) state = found.state;
  }
  return { ...result, state };
}

/** A readable name for a claim state. */
export function stateLabel(state) {
  const names = {
    announced: 'announced — waiting to present',
    presented: 'presented',
    verified: 'verified',
    reveal_picked: 'reveal picked',
    letter_issued: 'prize letter issued',
    redeemed: 'redeemed',
    no_show: 'no-show',
    lapsed: 'lapsed',
    alerted: 'crew alerted',
    crew_at_device: 'crew at the device',
    won: 'won',
    reselected: 'reselected',
  };
  return names[state] || String(state || '').replace(/_/g, ' ');
}
