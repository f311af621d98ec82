// clock.js — the daemon's clock as seen from a page, and how the pages write times and money.
//
// The stream carries the daemon's clock (`at`, ISO 8601 with offset) on every message, and
// deadlines rather than remaining seconds (docs/push.md). Between messages the page runs
// the daemon's clock forward from the last `at` at the daemon's rate: 1 for real time, the
// simulated speed in a demo (x60), 0 for a test clock that only moves when told. The daemon
// writes its rate into the page (bonusd/api/pages.py); should two long intervals between messages
// agree on another rate (a daemon restarted at another speed), that rate is taken. One
// jump of a test clock is one interval and changes nothing.

const MIN_INTERVAL_MS = 5000;
const AGREE = 0.02;

export class ServerClock {
  constructor() {
    const meta = document.querySelector('meta[name="bonusd-clock-rate"]');
    const given = meta ? Number(meta.content) : NaN;
    this.rate = Number.isFinite(given) && given >= 0 ? given : 1; // daemon s per local s
    this.serverMs = null; // daemon time at the last message
    this.localMs = 0; // performance.now() at the last message
    this.mark = null; // [localMs, serverMs] where the current interval began
    this.lastRate = null; // the previous long interval's rate
  }

  /** Record the daemon's `at` of a message just received. */
  observe(at) {
    const serverMs = Date.parse(at);
    if (Number.isNaN(serverMs)) return;
    const localMs = performance.now();
    if (!this.mark) this.mark = [localMs, serverMs];
    const span = localMs - this.mark[0];
    if (span >= MIN_INTERVAL_MS) {
      const rate = (serverMs - this.mark[1]) / span;
      const last = this.lastRate;
      if (last !== null && rate >= 0 && Math.abs(rate - last) <= AGREE * Math.max(1, last)) {
        this.rate = Math.min(1000, rate);
      }
      this.lastRate = rate;
      this.mark = [localMs, serverMs];
    }
    this.serverMs = serverMs;
    this.localMs = localMs;
  }

  /** The daemon's time now, in epoch milliseconds. */
  now() {
    if (this.serverMs === null) return Date.now();
    return this.serverMs + (performance.now() - this.localMs) * this.rate;
  }

  /** Milliseconds left until an ISO deadline on the daemon's clock (never negative). */
  left(deadline) {
    const ms = Date.parse(deadline);
    return Number.isNaN(ms) ? 0 : Math.max(0, ms - this.now());
  }

  /** "HH:MM:SS" of the daemon's clock in the floor's own time zone. */
  wallTime() {
    return format(this.now(), { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
  }
}

/** The floor's time zone, which the daemon writes into each page (bonusd/api/pages.py). */
export function floorZone() {
  const meta = document.querySelector('meta[name="bonusd-timezone"]');
  return (meta && meta.content) || undefined;
}

const formats = new Map();

function format(ms, options) {
  const key = JSON.stringify(options);
  let f = formats.get(key);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-GB', { ...options, timeZone: floorZone() });
    } catch {
      f = new Intl.DateTimeFormat('en-GB', options); // an unknown zone: the browser's own
    }
    formats.set(key, f);
  }
  return f.format(new Date(ms));
}

/** A countdown: "1:05" under an hour, "2:03:04" under a day, "3d 02:03:04" beyond. */
export function countdown(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const days = Math.floor(total / 86400);
  const hours = Math.floor((total % 86400) / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  const two = (n) => String(n).padStart(2, '0');
  if (days > 0) return `${days}d ${two(hours)}:${two(minutes)}:${two(seconds)}`;
  if (hours > 0) return `${hours}:${two(minutes)}:${two(seconds)}`;
  return `${minutes}:${two(seconds)}`;
}

/** "19:00" of an ISO time, as the floor's clocks read it. */
export function hhmm(iso) {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? '' : format(ms, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
}

/** "Sat 07 Nov 19:00" (or "Sat 07 Nov 2026 19:00") of an ISO time, on the floor's clocks. */
export function dayTime(iso, withYear = false) {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return '';
  const date = format(ms, { weekday: 'short', day: '2-digit', month: 'short', year: withYear ? 'numeric' : undefined });
  return `${date.replace(/,/g, '')} ${hhmm(iso)}`;
}

/** "Sat 07 Nov 2026 19:00:01" of an ISO time, on the floor's clocks (audit records). */
export function stamp(iso) {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return String(iso || '');
  return `${day(iso)} ${format(ms, { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' })}`;
}

/** "Sun 22 Nov 2026" of an ISO time, on the floor's clocks. */
export function day(iso) {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return '';
  return format(ms, { weekday: 'short', day: '2-digit', month: 'short', year: 'numeric' }).replace(/,/g, '');
}

/** Rand from cents: "R5,000", "R12.50". */
export function rand(cents) {
  if (typeof cents !== 'number') return '';
  const whole = cents % 100 === 0;
  return `R${(cents / 100).toLocaleString('en-US', {
    minimumFractionDigits: whole ? 0 : 2,
    maximumFractionDigits: 2,
  })}`;
}

/** Points with thousands separators. */
export function points(n) {
  return typeof n === 'number' ? n.toLocaleString('en-US') : String(n ?? '');
}
