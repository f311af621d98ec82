// stream.js — the client side of the live push (docs/push.md): one websocket, the token as
// its first frame, the snapshot then deltas applied in sequence order, and reconnection with
// `resume` after any drop, gap or silence. Owns no DOM: the page gets callbacks.
//
//   const live = new LiveStream({path: '/ws/signage', params: {site, area}, token,
//                                clock, onState, onEvents, onStatus});
//   live.start();
//
// onState(state, changed)  the whole view (sections) and the names of the sections changed
// onEvents(events)         one-shot cues (a winner to announce, an alert to vibrate for)
// onStatus(status, detail) 'connecting' | 'live' | 'reconnecting' | 'denied'
// onClock()                optional: the daemon's clock changed (a jump, pause, resume or
//                          speed; `clock` is told every message's clock): redraw the times
// onRevoked(reason)        optional: the token was refused (4401: revoked, expired); the
//                          stream stops instead of retrying, and the page signs out
//
// Runs for days: one socket at a time (the old one's handlers are detached before a new one
// opens), one watchdog interval, no growing buffers.

const SILENCE_MS = 35000; // no message (not even a ping: the daemon pings every 10 s): reconnect
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 10000;
const DENIED_RETRY_MS = 30000; // a refused token does not heal by itself; try now and then

export class LiveStream {
  constructor({ path, params = {}, token, clock, onState, onEvents, onStatus, onRevoked, onClock }) {
    this.path = path;
    this.params = params;
    this.token = token;
    this.clock = clock;
    this.onState = onState || (() => {});
    this.onEvents = onEvents || (() => {});
    this.onStatus = onStatus || (() => {});
    this.onRevoked = onRevoked || null;
    this.onClock = onClock || (() => {});
    this.state = {};
    this.epoch = null;
    this.seq = null;
    this.ws = null;
    this.attempt = 0;
    this.retryTimer = null;
    this.watchdog = null;
    this.lastMessage = 0;
    this.stopped = true;
    this.connects = 0;
    this.stream = ''; // the stream's name, e.g. "signage:demo:main"
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.watchdog = setInterval(() => this.checkSilence(), 2000);
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearInterval(this.watchdog);
    clearTimeout(this.retryTimer);
    this.drop();
  }

  /** Use another token (after a new login) and reconnect with it. */
  setToken(token) {
    this.token = token;
    this.reconnect('new token', 0);
  }

  url() {
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(this.params)) if (v) query.set(k, v);
    const qs = query.toString();
    return `${scheme}//${location.host}${this.path}${qs ? `?${qs}` : ''}`;
  }

  connect() {
    clearTimeout(this.retryTimer);
    this.drop();
    this.onStatus(this.connects === 0 ? 'connecting' : 'reconnecting', '');
    this.connects += 1;
    let ws;
    try {
      ws = new WebSocket(this.url());
    } catch (err) {
      this.scheduleRetry(String(err));
      return;
    }
    this.ws = ws;
    this.lastMessage = performance.now();
    ws.onopen = () => {
      // a signed-in staff page has no token: the session cookie went with the handshake
      const hello = this.token ? { token: this.token } : {};
      if (this.epoch !== null && this.seq !== null) {
        hello.resume = { epoch: this.epoch, seq: this.seq };
      }
      ws.send(JSON.stringify(hello));
    };
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (ev.code === 4401 && this.onRevoked) {
        this.stop();
        this.onRevoked(ev.reason || 'token refused');
      } else if (ev.code === 4401 || ev.code === 4403) {
        const why = ev.reason || (ev.code === 4401 ? 'token refused' : 'not allowed here');
        this.onStatus('denied', why);
        this.scheduleRetry(why, DENIED_RETRY_MS);
      } else {
        this.scheduleRetry(ev.reason || `connection closed (${ev.code})`);
      }
    };
    ws.onerror = () => {
      // onclose follows and decides
    };
  }

  /** Detach and close the current socket, if any. */
  drop() {
    const ws = this.ws;
    this.ws = null;
    if (!ws) return;
    ws.onopen = null;
    ws.onmessage = null;
    ws.onclose = null;
    ws.onerror = null;
    try {
      ws.close(1000, 'client reconnects');
    } catch {
      // already closing
    }
  }

  reconnect(why, delay) {
    this.drop();
    this.scheduleRetry(why, delay);
  }

  scheduleRetry(why, delay) {
    if (this.stopped) return;
    clearTimeout(this.retryTimer);
    let wait = delay;
    if (wait === undefined) {
      const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt);
      wait = base * (0.7 + Math.random() * 0.6);
      this.attempt += 1;
    }
    if (delay !== DENIED_RETRY_MS) this.onStatus('reconnecting', why);
    this.retryTimer = setTimeout(() => this.connect(), wait);
  }

  checkSilence() {
    if (this.ws && performance.now() - this.lastMessage > SILENCE_MS) {
      this.reconnect(`no message from the daemon for ${SILENCE_MS / 1000} s`);
    }
  }

  receive(raw) {
    this.lastMessage = performance.now();
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch {
      return;
    }
    const moved = this.clock ? this.clock.observe(msg.at, msg.clock, msg.type === 'snapshot') : false;
    this.handle(msg);
    if (moved) this.onClock();
  }

  handle(msg) {
    if (msg.type === 'snapshot') {
      this.stream = msg.stream || '';
      this.epoch = msg.epoch;
      this.seq = msg.seq;
      this.state = { ...(msg.state || {}) };
      this.attempt = 0;
      this.onStatus('live', '');
      this.onState(this.state, Object.keys(this.state));
      if (Array.isArray(msg.events) && msg.events.length) this.onEvents(msg.events);
    } else if (msg.type === 'delta') {
      if (this.seq === null || msg.epoch !== this.epoch) {
        this.reconnect('the daemon restarted', 0);
        return;
      }
      if (msg.seq <= this.seq) return; // already applied (a replay overlapping)
      if (msg.seq !== this.seq + 1) {
        this.reconnect(`missed deltas ${this.seq + 1}..${msg.seq - 1}`, 0);
        return;
      }
      this.seq = msg.seq;
      this.attempt = 0;
      const set = msg.set || {};
      Object.assign(this.state, set);
      const changed = Object.keys(set);
      if (changed.length) this.onState(this.state, changed);
      if (Array.isArray(msg.events) && msg.events.length) this.onEvents(msg.events);
    } else if (msg.type === 'error') {
      this.onStatus('reconnecting', msg.detail || 'the daemon reported an error');
    }
  }
}
