// The session websocket: stored events in seq order exactly once, streamed partials,
// run status; reconnects with backoff and resumes after the last seq it has.
//
// Frames from the server:
//   {"type": "event", "event": {...}}                       a stored event (seq set)
//   {"type": "event", "event": {partial: true}, "after_seq"} a streamed chunk (not stored)
//   {"type": "status", "run": {...} | null, "waiting_for"}  on connect and on change
//   {"type": "error", "code", "detail"}                     a bad client frame

const FATAL = {
  4400: "The timeline request was malformed.",
  4401: "Your sign-in expired. Reload the page to sign in again.",
  4404: "This session no longer exists.",
};
const BACKOFF_START_MS = 500;
const BACKOFF_MAX_MS = 10_000;

export class SessionSocket {
  /**
   * @param {string} sessionId
   * @param {{after?: number, onEvent?: Function, onPartial?: Function, onStatus?: Function,
   *          onState?: Function, onError?: Function}} handlers
   */
  constructor(sessionId, { after = 0, onEvent, onPartial, onStatus, onState, onError } = {}) {
    this.sessionId = sessionId;
    this.lastSeq = after;
    this.handlers = { onEvent, onPartial, onStatus, onState, onError };
    this.ws = null;
    this.attempts = 0;
    this.retryTimer = null;
    this.stopped = false;
    this.state = "idle";
    this.fatal = FATAL;
    this._online = () => this.reconnectNow();
    this._offline = () => this._goOffline();
  }

  start() {
    window.addEventListener("online", this._online);
    window.addEventListener("offline", this._offline);
    if (navigator.onLine === false) this._goOffline();
    else this._connect();
    return this;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    window.removeEventListener("online", this._online);
    window.removeEventListener("offline", this._offline);
    this._drop();
    this._setState("closed");
  }

  /** Connect again at once (after the network came back, or to resynchronise). */
  reconnectNow() {
    if (this.stopped) return;
    clearTimeout(this.retryTimer);
    this.attempts = 0;
    this._drop();
    this._connect();
  }

  _connect() {
    this._setState(this.attempts ? "reconnecting" : "connecting");
    const ws = new WebSocket(this._url());
    this.ws = ws;
    ws.addEventListener("open", () => {
      if (this.ws !== ws) return;
      this.attempts = 0;
      this._setState("live");
    });
    ws.addEventListener("message", (message) => {
      if (this.ws === ws) this._message(ws, message.data);
    });
    ws.addEventListener("close", (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.fatal[event.code]) {
        this.stopped = true;
        this._setState("closed", this.fatal[event.code]);
      } else if (!this.stopped && navigator.onLine !== false) {
        this._schedule();
      }
    });
  }

  /** Where to connect (a subclass for another kind of live page gives its own). The
   * session socket sends its frames in batches: a message is an array of them. */
  _url() {
    const id = encodeURIComponent(this.sessionId);
    return wsUrl(`/ws/sessions/${id}/?after=${this.lastSeq}&batch=1`);
  }

  _message(ws, raw) {
    let parsed;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return;
    }
    for (const frame of Array.isArray(parsed) ? parsed : [parsed]) {
      if (this.ws !== ws) return; // a frame made it reconnect: the rest comes again
      if (frame && typeof frame === "object") this._frame(frame);
    }
  }

  _frame(frame) {
    if (frame.type === "event" && frame.event) this._event(frame.event, frame.after_seq);
    else if (frame.type === "status") this.handlers.onStatus?.(frame);
    else if (frame.type === "error") this.handlers.onError?.(frame);
  }

  _event(event, afterSeq) {
    if (event.partial || event.seq === null || event.seq === undefined) {
      this.handlers.onPartial?.(event, afterSeq ?? this.lastSeq);
      return;
    }
    if (event.seq <= this.lastSeq) return; // already have it (a resumed backlog overlaps)
    if (event.seq !== this.lastSeq + 1) {
      // Seqs are dense: a jump means something was missed. Resume from what we have.
      this.reconnectNow();
      return;
    }
    this.lastSeq = event.seq;
    this.handlers.onEvent?.(event);
  }

  _schedule() {
    const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_START_MS * 2 ** this.attempts);
    const delay = Math.round(ceiling * (0.5 + Math.random() / 2));
    this.attempts += 1;
    this._setState("reconnecting", `Reconnecting in ${Math.ceil(delay / 1000)} s…`);
    this.retryTimer = setTimeout(() => this._connect(), delay);
  }

  _goOffline() {
    clearTimeout(this.retryTimer);
    this._drop();
    if (!this.stopped) this._setState("offline", "Offline: waiting for the network…");
  }

  _drop() {
    const ws = this.ws;
    this.ws = null;
    if (ws && ws.readyState <= WebSocket.OPEN) ws.close(1000);
  }

  _setState(state, detail = "") {
    this.state = state;
    this.handlers.onState?.(state, detail);
  }
}

/** ``path`` on this page's host, over wss: when the page came over https:. */
export function wsUrl(path) {
  const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${window.location.host}${path}`;
}

export const CONNECTION_LABELS = {
  idle: "Not connected",
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  offline: "Offline",
  closed: "Disconnected",
};

/** Keep a .conn indicator element in step with a SessionSocket's state. */
export function showConnection(el, state, detail) {
  el.dataset.state = state;
  el.textContent = detail || CONNECTION_LABELS[state] || state;
  el.title = detail || "";
}

/** Whether ``run`` is not over: queued, executing, paused, or parked on a person. */
export function isActiveRun(run) {
  return Boolean(run) && ["queued", "running", "paused", "waiting"].includes(run.status);
}

/** Whether ``run`` executes somewhere now, so it can be paused (a parked one cannot). */
export function isExecuting(run) {
  return Boolean(run) && (run.status === "running" || run.status === "paused");
}

export const WAITING_LABELS = {
  model: "waiting for the model",
  tool: "waiting for a tool",
  approval: "waiting for your approval",
  answer: "waiting for your answer",
  paused: "paused until resumed",
  rate_limit: "waiting for the model's rate limit",
  retry: "retrying the model after a failure",
  elsewhere: "running elsewhere: each step shows once it ends", // an ingested trace
};
