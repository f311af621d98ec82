// clock.js — the daemon's clock as seen from a page, and how the pages write times and money.
//
// Every message of the stream carries the daemon's clock (`clock`, docs/push.md "The
// clock"): its instant at the daemon's wall time of writing (`wall`, Unix ms), its speed,
// whether it stands still, and an epoch that changes at every jump, pause, resume or
// change of speed; a change of the clock arrives as a delta the moment it happens. The page
// runs the clock forward from the last state only, never from a rate it guessed:
//
//   now = instant + (daemon's wall time now - wall) x (paused ? 0 : speed)
//
// The daemon's wall time now is the page's monotonic clock plus an offset learnt from the
// messages: the largest `wall - arrival` of the last 30 to 60 s, i.e. the least delayed
// message, so a message that waited in a queue or a replay is never taken for news, and
// a screen whose own clock is wrong still shows the daemon's time. Deadlines stay instants
// on the daemon's clock (every countdown is deadline - now, never counted down by itself).
// What a page shows never runs backwards: after a change heard a few milliseconds late that
// leaves the daemon behind the page (a pause, a slower speed) the page holds until the
// daemon catches up; only a snapshot (a new stream, a clock set back) starts over. Before
// the first message the page runs at the rate the daemon wrote into it (meta
// bonusd-clock-rate) from its own time; from a daemon that sends no `clock`, from `at`.

const WINDOW_MS = 30000; // the offset is the best of this window and the one before

export class ServerClock {
  constructor() {
    const meta = document.querySelector('meta[name="bonusd-clock-rate"]');
    const given = meta ? Number(meta.content) : NaN;
    this.rate = Number.isFinite(given) && given >= 0 ? given : 1; // until a `clock` arrives
    this.state = null; // {epoch, instant, wall, rate, told}: the last state the daemon sent
    this.offset = null; // the daemon's wall ms minus performance.now()
    this.best = [-Infinity, -Infinity]; // largest offset sample: previous, current window
    this.windowAt = -Infinity;
    this.shown = -Infinity; // the latest now() given: what is shown never runs back
  }

  /** The epoch of the daemon's clock state held (null before the first). */
  get epoch() {
    return this.state && this.state.told ? this.state.epoch : null;
  }

  /**
   * Record what a message said of the daemon's clock: its `clock` state, or only its `at`
   * from a daemon that sends none. `fresh` (a snapshot) starts the page's clock over.
   * True when the clock's epoch changed (the page redraws its times at once).
   */
  observe(at, clock, fresh = false) {
    if (clock && typeof clock === 'object') return this.take(clock, fresh);
    if (this.state && this.state.told) return false;
    const instant = Date.parse(at);
    if (Number.isNaN(instant)) return false;
    this.state = { epoch: 'at', instant, wall: this.daemonWall(), rate: this.rate, told: false };
    return false;
  }

  take(clock, fresh) {
    const instant = Date.parse(clock.instant);
    const wall = Number(clock.wall);
    const speed = Number(clock.speed);
    if (Number.isNaN(instant) || !Number.isFinite(wall) || !(speed >= 0)) return false;
    this.learn(wall - performance.now());
    const held = this.state && this.state.told ? this.state : null;
    if (!fresh && held && wall < held.wall) return false; // older than the state held
    const epoch = String(clock.epoch);
    this.state = { epoch, instant, wall, rate: clock.paused ? 0 : speed, told: true };
    if (fresh) this.shown = -Infinity;
    return !held || held.epoch !== epoch;
  }

  /** One sample of the offset: a message's `wall` minus its arrival, never more than it. */
  learn(sample) {
    const t = performance.now();
    if (t - this.windowAt >= WINDOW_MS) {
      this.best = [this.best[1], -Infinity];
      this.windowAt = t;
    }
    this.best[1] = Math.max(this.best[1], sample);
    this.offset = Math.max(this.best[0], this.best[1]);
  }

  /** The daemon's wall clock now, as far as the page can tell (its own before any message). */
  daemonWall() {
    return this.offset === null ? Date.now() : performance.now() + this.offset;
  }

  /** The daemon's time now, in epoch milliseconds. */
  now() {
    const s = this.state;
    if (!s) return Date.now();
    const ms = s.instant + Math.max(0, this.daemonWall() - s.wall) * s.rate;
    this.shown = Math.max(this.shown, ms);
    return this.shown;
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

// one formatter each, made once: a screen formats every place of every board at each delta
const WHOLE_RAND = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const CENTS_RAND = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const POINTS = new Intl.NumberFormat('en-US');

/** Rand from cents: "R5,000", "R12.50". */
export function rand(cents) {
  if (typeof cents !== 'number') return '';
  return `R${(cents % 100 === 0 ? WHOLE_RAND : CENTS_RAND).format(cents / 100)}`;
}

/** Points with thousands separators. */
export function points(n) {
  return typeof n === 'number' ? POINTS.format(n) : String(n ?? '');
}
