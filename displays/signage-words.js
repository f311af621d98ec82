// signage-words.js — what the floor screen says, in players' words: outcomes, subtitles
// that follow a round's state (winners called, being verified, the outcomes once every
// claim is settled), the RAPS jackpot's states, prizes as people read them (R5,000, never
// an internal id) and claim deadlines to the second ("by 19:01:30", as the PA says them).
// Pure functions of the view's rows; no DOM, no clock of their own.

import { floorZone, rand } from './clock.js';

const OUTCOME_WORDS = {
  presented: 'Presented ✓',
  verified: 'Verified ✓',
  won: 'Winner ✓',
  no_show: 'Not claimed — redrawn',
};

let hmsFormat = null;

/** "19:01:30" of an ISO time, on the floor's clocks. */
export function hms(iso) {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return '';
  if (!hmsFormat) {
    const options = { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' };
    try {
      hmsFormat = new Intl.DateTimeFormat('en-GB', { ...options, timeZone: floorZone() });
    } catch {
      hmsFormat = new Intl.DateTimeFormat('en-GB', options);
    }
  }
  return hmsFormat.format(new Date(ms));
}

/** A claim's deadline as every screen and the PA say it: "by 19:01:30". */
export function byWhen(deadline) {
  const at = hms(deadline);
  return at ? `by ${at}` : '';
}

/** What a settled or running claim came to: "Won R5,000", "Not claimed — redrawn". */
export function outcomeWords(row) {
  const outcome = row.outcome || row.state;
  if (outcome === 'won' && row.prize) return `Won ${row.prize}`;
  return OUTCOME_WORDS[outcome] || String(outcome || '').replace(/_/g, ' ');
}

/** Whether every claim of a round is settled (won or not claimed). */
export function settled(round) {
  return round.length > 0 && round.every((a) => a.outcome === 'won' || a.outcome === 'no_show');
}

/** The round's title and subtitle, as its claims stand. */
export function roundWords(round) {
  const first = round[0];
  const what = `${first.title || 'Draw'} · round ${first.round}`;
  const open = round.filter((a) => a.state === 'announced');
  if (open.length) {
    return {
      title: round.length > 1 ? 'Winners' : 'Winner',
      sub: `${what} — show your ID and ticket receipt before your timer runs out`,
    };
  }
  if (!settled(round)) {
    return { title: 'Winners', sub: `${what} — our hosts are verifying the winners` };
  }
  const won = round.filter((a) => a.outcome === 'won').length;
  const lapsed = round.length - won;
  const parts = [`${won} ${won === 1 ? 'prize' : 'prizes'} won`];
  if (lapsed) parts.push(`${lapsed} not claimed (redrawn)`);
  return { title: 'Results', sub: `${what} — ${parts.join(' · ')}. Congratulations!` };
}

/** "R5,000" (or "2 × R5,000" when prizes were carried over), or "". */
export function jackpotAmount(j) {
  if (!j || typeof j.amount_cents !== 'number') return '';
  const prizes = Number(j.prizes) > 1 ? `${j.prizes} × ` : '';
  return `${prizes}${rand(j.amount_cents)}`;
}

/** The RAPS banner's words for the jackpot's state. */
export function jackpotState(j) {
  const winner = j.winner ? `${j.winner.name} ${j.winner.card}`.trim() : '';
  const words = {
    upcoming: 'next jackpot',
    won: `Won by ${winner}`,
    announced: `${winner}: present yourself now`,
    alerted: 'A winner has been drawn',
    crew_at_device: 'Our crew is on the way',
    not_at_device: 'Calling the winner…',
    presented: `${winner} is with our hosts`,
    reselected: 'Redrawing…',
    retrying: 'Nobody qualified yet — trying again',
    carried_over: 'Carried over to the next jackpot',
    skipped: 'Not drawn',
    nobody_left: 'No qualifying player',
  };
  return words[j.state] || String(j.state || '').replace(/_/g, ' ');
}

/** "5 winners · up to R10,000" of an upcoming draw round, or "". */
export function roundPrizes(row) {
  if (!row) return '';
  const parts = [];
  if (row.winners) parts.push(`${row.winners} ${row.winners === 1 ? 'winner' : 'winners'}`);
  if (typeof row.top_prize_cents === 'number') parts.push(`prizes up to ${rand(row.top_prize_cents)}`);
  return parts.join(' · ');
}
