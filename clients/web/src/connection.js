// The WebSocket to the server: MessagePack binary frames, requests matched to their replies
// by `id`, everything else delivered as a push. Knows nothing of views.

import { Decoder, Encoder } from '@msgpack/msgpack';

export const PROTOCOL_VERSION = 1;
export const SUBPROTOCOL = 'elementals.v1';

// A request unanswered this long is given up (the server answers every request it reads;
// one it cannot attribute to a request is answered with a nil id).
const REQUEST_TIMEOUT_MS = 15_000;

const encoder = new Encoder({ ignoreUndefined: true });
// Snapshots of long games can be large; the server caps its frames at 4 MiB.
const decoder = new Decoder({ maxBinLength: 4 << 20, maxStrLength: 4 << 20 });

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

/**
 * One socket. Events: `push` (detail: a server message answering no pending request) and
 * `close` (detail: { code, reason, notice }).
 */
export class Connection extends EventTarget {
  constructor(url) {
    super();
    this.url = url;
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map();
    this.notice = null;
    this.welcome = null;
  }

  /** Open the socket and say hello; resolves with the `welcome`. */
  open() {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.url, [SUBPROTOCOL]);
      ws.binaryType = 'arraybuffer';
      this.ws = ws;
      let opened = false;
      ws.onopen = () => {
        opened = true;
        this.request({ type: 'hello', protocol_version: PROTOCOL_VERSION, client: 'web' })
          .then((welcome) => {
            this.welcome = welcome;
            resolve(welcome);
          })
          .catch(reject);
      };
      ws.onmessage = (ev) => this.receive(ev.data);
      ws.onclose = (ev) => {
        const err = new ProtocolError('closed', `connection closed (${ev.code})`);
        for (const { reject: fail } of this.pending.values()) fail(err);
        this.pending.clear();
        if (!opened) reject(err);
        this.dispatchEvent(
          new CustomEvent('close', { detail: { code: ev.code, reason: ev.reason, notice: this.notice } }),
        );
      };
    });
  }

  close() {
    this.ws?.close(1000, 'bye');
  }

  get isOpen() {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Send a request; resolves with its reply, or rejects with a ProtocolError. */
  request(msg) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
        reject(new ProtocolError('closed', 'not connected'));
        return;
      }
      const timer = setTimeout(() => {
        if (this.pending.delete(id)) reject(new ProtocolError('timeout', 'The server did not answer.'));
      }, REQUEST_TIMEOUT_MS);
      const done = (f) => (v) => {
        clearTimeout(timer);
        f(v);
      };
      this.pending.set(id, { resolve: done(resolve), reject: done(reject) });
      this.ws.send(encoder.encode({ ...msg, id }));
    });
  }

  receive(data) {
    let msg;
    try {
      msg = decoder.decode(new Uint8Array(data));
    } catch (e) {
      console.error('undecodable frame', e);
      return;
    }
    if (!msg || typeof msg !== 'object') return;
    if (msg.type === 'notice') this.notice = msg;
    const waiting = msg.id != null ? this.pending.get(msg.id) : undefined;
    if (waiting) {
      this.pending.delete(msg.id);
      if (msg.type === 'error') waiting.reject(new ProtocolError(msg.code, msg.message));
      else waiting.resolve(msg);
      return;
    }
    this.dispatchEvent(new CustomEvent('push', { detail: msg }));
  }
}
