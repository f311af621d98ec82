// signage-stage.js — what takes the whole floor screen, and when. In order of precedence:
//   celebration  a RAPS jackpot won: the amount and the winner, masked (15 s; after 8 s it
//                gives way to winners waiting to be revealed or called)
//   reveal       each new draw winner, one after another (3 s each; 2 s past 6), then
//   winners      the round's grid: claim timers, then each outcome; it stays while a claim
//                runs and a minute after the last change ("Results" once all are settled,
//                for 30 s)
//   call         a RAPS winner called to present, with the claim timer (takes turns with
//                the grid while the grid's claims run; before a grid that only lingers)
// and otherwise the attract loop (signage-attract.js). What is new is found by comparing
// each view with the last (a winner not seen before, a jackpot newly won), so a screen
// that reconnects and gets a fresh snapshot still reveals what it missed; the view a screen
// opens on is shown as it stands, never replayed.

import { countdown } from './clock.js';
import { byId, fill, h, setText } from './dom.js';
import { byWhen, jackpotAmount, outcomeWords, roundWords, settled } from './signage-words.js';

const REVEAL_MS = 3000;
const REVEAL_MANY_MS = 2000; // each of a round of more than 6
const HOLD_MS = 60000; // the grid after its last change, while claims are being verified
const RESULTS_MS = 30000; // the grid after its last change, once every claim is settled
const CELEBRATE_MS = 15000;
const CELEBRATE_AT_LEAST_MS = 8000;
const SWAP_MS = 8000;
const COINS = 18;
const STAGES = ['celebration', 'reveal', 'winners', 'call'];

/** The winners of the newest round: every claim of the same draw and round. */
export function currentRound(announcements) {
  if (!announcements || !announcements.length) return [];
  const newest = announcements[0];
  return announcements
    .filter((a) => a.promotion === newest.promotion && a.draw === newest.draw && a.round === newest.round)
    .sort((a, b) => a.claim - b.claim)
    .slice(-12);
}

const claimKey = (a) => `${a.promotion}|${a.draw}|${a.claim}`;

export class Stage {
  constructor({ clock, cues }) {
    this.clock = clock;
    this.cues = cues;
    this.seen = null; // claims already on screen; null until the first view
    this.queue = [];
    this.revealing = null;
    this.revealUntil = 0;
    this.round = [];
    this.roundKey = '';
    this.roundChangedAt = -Infinity;
    this.jackpot = null;
    this.celebrated = null; // the won jackpot last celebrated; null until the first view
    this.celebratedAt = -Infinity;
    this.celebrateUntil = -Infinity;
    this.showing = null;
    this.el = Object.fromEntries(STAGES.map((name) => [name, byId(name)]));
    fill(byId('coins'), Array.from({ length: COINS }, () => h('span', { class: 'coin' })));
  }

  /** The `announcements` section: new winners of the round queue up to be revealed. */
  setAnnouncements(announcements, nowMs) {
    const round = currentRound(announcements);
    if (this.seen !== null) {
      const fresh = round.filter((a) => !this.seen.has(claimKey(a)));
      if (fresh.length) this.enqueue(fresh, fresh.length < round.length);
    }
    this.seen = new Set((announcements || []).map(claimKey));
    const key = JSON.stringify(round.map((a) => [a.draw, a.round, a.claim, a.state, a.prize]));
    if (key !== this.roundKey) {
      this.roundKey = key;
      this.roundChangedAt = round.length ? nowMs : -Infinity;
    }
    this.round = round;
    this.renderGrid();
  }

  /** Queue winners to reveal; those of a round still being revealed join its count (a
   * round's redraws come one commit at a time). */
  enqueue(rows, redraw) {
    const last = this.queue.length ? this.queue[this.queue.length - 1] : this.revealing;
    const same = last && last.row.draw === rows[0].draw && last.row.round === rows[0].round;
    if (!same) this.queue = []; // a newer round: an older one's are not revealed any more
    const batch = same ? last.batch : { of: 0 };
    for (const row of rows) {
      batch.of += 1;
      this.queue.push({ row, index: batch.of, batch, redraw });
    }
  }

  /** The `jackpot` section: a jackpot newly won is celebrated; a called winner shown. */
  setJackpot(j, nowMs) {
    const won = j && j.state === 'won' ? `${j.session}|${j.number}|${j.won_at}` : '';
    if (won && this.celebrated !== null && won !== this.celebrated) this.celebrate(j, nowMs);
    if (won || this.celebrated === null) this.celebrated = won;
    this.jackpot = j;
    if (j && j.state === 'announced') this.renderCall(j);
  }

  celebrate(j, nowMs) {
    if (this.revealing) this.queue.unshift(this.revealing); // revealed again afterwards
    this.revealing = null;
    setText(byId('celebration-kicker'), `${j.name || 'Bonus jackpot'} #${j.number}`);
    setText(byId('celebration-amount'), jackpotAmount(j) || 'Winner!');
    setText(byId('celebration-winner'), j.winner ? `Congratulations ${j.winner.name}!` : '');
    setText(byId('celebration-card'), j.winner && j.winner.card ? `card ${j.winner.card}` : '');
    this.celebratedAt = nowMs;
    this.celebrateUntil = nowMs + CELEBRATE_MS;
    this.cues.play('jackpot');
  }

  /** Decide what has the screen now and show it; '' for the attract loop. */
  tick(nowMs) {
    const show = this.choose(nowMs);
    if (show !== this.showing) {
      this.showing = show;
      for (const name of STAGES) this.el[name].classList.toggle('on', name === show);
      document.body.dataset.stage = show || 'attract';
    }
    return show;
  }

  choose(nowMs) {
    const called = Boolean(this.jackpot && this.jackpot.state === 'announced');
    const waiting = this.queue.length > 0 || called;
    if (waiting && nowMs - this.celebratedAt >= CELEBRATE_AT_LEAST_MS) {
      this.celebrateUntil = Math.min(this.celebrateUntil, nowMs); // others wait to be shown
    }
    if (nowMs < this.celebrateUntil) return 'celebration';
    if (this.revealing && nowMs >= this.revealUntil) this.revealing = null;
    if (!this.revealing && this.queue.length) this.startReveal(nowMs);
    const item = this.revealing;
    if (item) {
      setText(byId('reveal-count'), `${item.redraw ? 'Redraw · ' : ''}Winner ${item.index} of ${item.batch.of}`);
      return 'reveal';
    }
    const open = this.round.some((a) => a.state === 'announced');
    const hold = settled(this.round) ? RESULTS_MS : HOLD_MS;
    const grid = this.round.length > 0 && (open || nowMs - this.roundChangedAt < hold);
    if (called && open) return Math.floor(nowMs / SWAP_MS) % 2 ? 'call' : 'winners';
    return called ? 'call' : grid ? 'winners' : '';
  }

  startReveal(nowMs) {
    const item = this.queue.shift();
    const a = item.row;
    this.revealing = item;
    this.revealUntil = nowMs + (item.batch.of > 6 ? REVEAL_MANY_MS : REVEAL_MS);
    setText(byId('reveal-kicker'), `${a.title || 'Draw'} · round ${a.round}`);
    const timed = a.state === 'announced' && a.deadline;
    fill(
      byId('reveal-card'),
      h('span', { class: 'name', text: a.name || '****' }),
      h('span', { class: 'card mono', text: a.card ? `card ${a.card}` : '' }),
      timed ? h('span', { class: 'present', text: `Present yourself ${byWhen(a.deadline)} with your ID and ticket receipt` }) : null,
      timed ? h('span', { class: 'timer mono', dataset: { deadline: a.deadline }, text: countdown(this.clock.left(a.deadline)) }) : null,
    );
    byId('reveal').dataset.claim = String(a.claim);
    this.cues.play('winner');
  }

  renderCall(j) {
    const amount = jackpotAmount(j);
    setText(byId('call-kicker'), `${j.name || 'Bonus jackpot'} #${j.number}${amount ? ` · ${amount}` : ''}`);
    setText(byId('call-name'), j.winner ? j.winner.name : '');
    setText(byId('call-card'), j.winner && j.winner.card ? `card ${j.winner.card}` : '');
    setText(byId('call-words'), `Present yourself to a host ${byWhen(j.deadline)} with your ID`);
    const left = byId('call-left');
    if (j.deadline) left.dataset.deadline = j.deadline;
    else left.removeAttribute('data-deadline');
  }

  renderGrid() {
    const round = this.round;
    if (!round.length) {
      fill(byId('winners-list'));
      return;
    }
    const words = roundWords(round);
    setText(byId('winners-title'), words.title);
    setText(byId('winners-sub'), words.sub);
    this.el.winners.classList.toggle('many', round.length > 6);
    const portrait = window.matchMedia('(orientation: portrait)').matches;
    const n = round.length;
    const cols = portrait ? Math.min(n, 2) : n <= 3 ? n : n === 4 ? 2 : n <= 9 ? 3 : 4;
    const list = byId('winners-list');
    list.className = `winner-list cols-${cols}`;
    fill(list, round.map((a) => this.winnerCard(a)));
  }

  winnerCard(a) {
    const running = a.state === 'announced' && a.deadline;
    const outcome = a.state === 'announced' ? '' : a.outcome || a.state;
    return h(
      'div',
      { class: `winner ${outcome}`, dataset: { claim: String(a.claim), state: a.state } },
      h('span', { class: 'name', text: a.name || '****' }),
      h('span', { class: 'card mono', text: a.card ? `card ${a.card}` : '' }),
      running
        ? [
          h('span', { class: 'timer mono', dataset: { deadline: a.deadline }, text: countdown(this.clock.left(a.deadline)) }),
          h('span', { class: 'bar' }, h('span', { dataset: { deadline: a.deadline, total: '90000' } })),
          h('span', { class: 'by', text: byWhen(a.deadline) }),
        ]
        : h('span', { class: 'outcome', text: outcomeWords(a) }),
    );
  }
}
