// The connection to the server, on the TypeScript SDK (clients/ts): the SDK opens the
// socket, says `hello`, numbers the requests, matches their replies, encodes the MessagePack
// frames and keeps the heartbeat. One SDK `Client` serves one socket, with its own
// reconnecting off: this page shows each connection's life (the banner, "superseded", a
// quiet reconnect after 4001) and reopens its views from the server's state on the next one
// (app.js). Added here for a page on a bad network: a request reported timed out whose
// answer is still delivered. Knows nothing of views.

import { Client, RequestTimeout, ServerError } from './sdk.js';

export const SUBPROTOCOL = 'elementals.v1';

/**
 * The connection's timers. A request unanswered for `requestMs` is reported as timed out
 * (the server answers every request it reads; one it cannot attribute to a request is
 * answered with a nil id), and its answer, should it come later, is still delivered (a
 * `late` event). The SDK's heartbeat sends `ping` on a connection quiet for `pingMs` and
 * gives up one silent for `silenceMs`, reporting it closed at once: a socket held by a
 * stalled network stays open and says nothing, so only silence shows it, and a browser
 * would report its close only after a closing handshake that never ends. A request still
 * waiting then may or may not have reached the server: its caller hears `closed` and
 * settles it from the server's state on the next connection. `window.elementalsTimers`
 * may shorten them.
 */
export const TIMERS = { requestMs: 15_000, pingMs: 3_000, silenceMs: 10_000 };

// Timed-out requests whose answer may still come, kept so it can be recognised.
const LATE_KEPT = 32;

function timers() {
  return { ...TIMERS, ...(globalThis.elementalsTimers ?? {}) };
}

/** An `error` reply: `code` is the stable machine-readable code. */
export class ProtocolError extends Error {
  constructor(code, message) {
    super(message || code);
    this.code = code;
  }
}

export function wsUrl(location) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}/ws`;
}

/** What the SDK's rejection means here: the server's error code, else the connection went. */
function plainError(e) {
  if (e instanceof ServerError) return new ProtocolError(e.code, e.serverMessage);
  return new ProtocolError('closed', e?.message ?? 'connection closed');
}

/**
 * One socket. Events: `push` (detail: a server message answering no request), `late`
 * (detail: { request, reply }: the answer to a request that had timed out) and `close`
 * (detail: { code, notice }).
 */
export class Connection extends EventTarget {
  constructor(url) {
    super();
    this.url = url;
    this.client = null;
    this.late = new Map();
    this.notice = null;
    this.welcome = null;
    this.timers = timers();
    this.ended = false;
  }

  /** Open the socket and say hello; resolves with the `welcome`. */
  async open() {
    this.client = new Client(this.url, {
      reconnect: false,
      clientName: 'web',
      protocols: [SUBPROTOCOL],
      requestTimeoutMs: this.timers.requestMs,
      heartbeat: { quietMs: this.timers.pingMs, silentMs: this.timers.silenceMs },
      // Everything comes through onMessage: the SDK keeps no streams for readers.
      streams: false,
      onMessage: (msg) => this.receive(msg),
      onClose: (code) => this.gone(code),
    });
    try {
      this.welcome = await this.client.open();
    } catch (e) {
      // A socket that never opened has no close of its own to report.
      this.gone(1006);
      this.client.close();
      throw plainError(e);
    }
    return this.welcome;
  }

  close() {
    this.client?.close();
  }

  /** Drops the socket as a failing network would (the tests do). */
  drop() {
    this.client?.dropConnection();
  }

  /** The socket is gone (closed, or given up for its silence): say so, once. */
  gone(code) {
    if (this.ended) return;
    this.ended = true;
    this.dispatchEvent(new CustomEvent('close', { detail: { code, notice: this.notice } }));
  }

  get isOpen() {
    return !this.ended && !!this.client?.isOpen;
  }

  /** Send a request; resolves with its reply, or rejects with a ProtocolError. */
  async request(msg) {
    if (!this.isOpen) throw new ProtocolError('closed', 'not connected');
    const { type, ...fields } = msg;
    try {
      return await this.client.request(type, fields);
    } catch (e) {
      if (e instanceof RequestTimeout) {
        if (e.id !== null) {
          this.late.set(e.id, msg);
          if (this.late.size > LATE_KEPT) this.late.delete(this.late.keys().next().value);
        }
        throw new ProtocolError('timeout', 'The server did not answer.');
      }
      throw plainError(e);
    }
  }

  /** Every message the SDK decodes, before it acts on it: replies are the SDK's to match. */
  receive(msg) {
    if (msg.id != null) {
      const request = this.late.get(msg.id);
      if (request) {
        this.late.delete(msg.id);
        this.dispatchEvent(new CustomEvent('late', { detail: { request, reply: msg } }));
      }
      return;
    }
    if (msg.type === 'notice') this.notice = msg;
    this.dispatchEvent(new CustomEvent('push', { detail: msg }));
  }
}
