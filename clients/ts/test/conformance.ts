// The conformance hook: every frame sent and every frame received on every WebSocket the
// tests open is checked against the protocol's schema (protocol/schema/messages.json), and
// a frame that does not conform fails the test that was running, with the frame and what
// the schema found in its message.
//
// Importing this module (server.ts does, so every test file that starts a server has it)
// wraps the `ws` package's WebSocket, which the SDK runs on in Node (and installs it as the
// global WebSocket, so that the SDK uses it on a Node that has a global one too): its
// `send` checks each client frame and its `message` events each server frame. A root
// `afterEach` fails the test during which a frame did not conform.
//
// The check mirrors the Rust one (`elementals-protocol`'s `conformance` feature,
// protocol/src/conformance.rs), validated by ajv in its JSON Schema 2020-12 mode (the
// schema's `$schema`). How a frame's MessagePack becomes the JSON the schema checks:
// - The frame is decoded by @msgpack/msgpack, the SDK's own library: one value and nothing
//   after it (the library refuses trailing bytes). A text frame does not conform (the
//   protocol's frames are binary).
// - nil is JSON null: an optional field sent as nil is null, an omitted one is missing, and
//   the schema tells them apart.
// - An int is a JSON integer. Ints of 64-bit encodings are read as BigInt and must lie
//   within ±2^53, what a JavaScript number holds exactly: beyond it a frame does not
//   conform here, though Rust's and Python's checks take any u64 or i64 (the protocol keeps
//   its ids to 2^53 for this). A float is a JSON number; NaN and the infinities do not
//   conform. JavaScript cannot tell 3.0 from 3: an integral float passes as an integer, as
//   JSON Schema has it and the other checks do.
// - A str is a JSON string (the library decodes a str that is not UTF-8 leniently, so this
//   check does not refuse one; Rust's and Python's do).
// - A bin is its bytes in base64, as a string that only a schema marked
//   `"x-msgpack": "bin"` accepts, and such a schema accepts nothing but a bin; a bin the
//   schema has no place for does not conform.
// - A map is a JSON object: every key must be a str, and none twice (the decoder is given
//   a key converter that refuses other keys and makes each key unique, so that a repeated
//   key is seen, not overwritten).
// - An ext value (a timestamp included) does not conform.
// - Every object schema that names its properties admits no others (the published server
//   messages stay open so that clients ignore new fields; the check is stricter, so a field
//   the server sends and the schema misses fails too).
// - A client frame must be a `ClientMsg`; a server frame a `ServerMsg`, or on a socket whose
//   `hello` asked for `batch: true`, a `ServerBatch` (an array of two or more) as well.
// - Formats: `uuid` is checked; the integer formats schemars writes (`uint32`, …) are not
//   formats JSON Schema defines and are not checked as formats (their bounds are the
//   schema's `minimum` and `maximum`), as in the Rust and Python checks.

import { readFileSync } from 'node:fs';
import { afterEach } from 'node:test';

import { Decoder, ExtData } from '@msgpack/msgpack';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import WebSocket from 'ws';

// build/test/conformance.js sits four levels below the repository's root.
const SCHEMA = new URL('../../../../protocol/schema/messages.json', import.meta.url);

export type Direction = 'client' | 'server';

/** Why a frame does not conform: the frame as JSON and what the schema found. */
export class Nonconforming extends Error {
  constructor(readonly direction: Direction, readonly frame: unknown, readonly errors: string[]) {
    super([
      `a ${direction} frame does not conform to the schema`,
      ...(frame === undefined ? [] : [`  frame: ${JSON.stringify(frame)}`]),
      ...errors.map((e) => `  - ${e}`),
    ].join('\n'));
  }
}

// Each map key decoded is made unique (a counter, a NUL, the key), so that a repeated key
// shows instead of overwriting the first: `toJson` takes the prefix off.
let keyCount = 0;
const KEY = /^\d+\u0000/;
const decoder = new Decoder({
  useBigInt64: true,
  mapKeyConverter: (key: unknown) => {
    if (typeof key !== 'string') throw new Error('a map key that is not a str');
    return `${keyCount++}\u0000${key}`;
  },
});

const LIMIT = 2n ** 53n;

/** A JSON pointer's segment, escaped as ajv writes `instancePath`. */
const segment = (key: string | number) => `/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;

function toJson(value: unknown, at: string, bins: Set<string>): unknown {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`the float ${value}, which JSON cannot hold`);
    return value;
  }
  if (typeof value === 'bigint') {
    if (value > LIMIT || value < -LIMIT) throw new Error(`the integer ${value}, beyond 2^53, which a JavaScript number cannot hold exactly`);
    return Number(value);
  }
  if (value instanceof Uint8Array) {
    bins.add(at);
    return Buffer.from(value).toString('base64');
  }
  if (Array.isArray(value)) return value.map((item, i) => toJson(item, at + segment(i), bins));
  if (value instanceof ExtData || value instanceof Date) throw new Error('an ext value');
  if (typeof value === 'object') {
    const map: Record<string, unknown> = {};
    for (const [unique, item] of Object.entries(value)) {
      const key = unique.replace(KEY, '');
      if (Object.hasOwn(map, key)) throw new Error(`the key \`${key}\` twice in one map`);
      map[key] = toJson(item, at + segment(key), bins);
    }
    return map;
  }
  throw new Error(`a value JSON cannot hold (${typeof value})`);
}

/** Every object schema that names its properties admits no others. */
function closeObjects(value: unknown): void {
  if (Array.isArray(value)) {
    value.forEach(closeObjects);
  } else if (value !== null && typeof value === 'object') {
    const map = value as Record<string, unknown>;
    if ('properties' in map && !('additionalProperties' in map)) map.additionalProperties = false;
    Object.values(map).forEach(closeObjects);
  }
}

// The bins of the frame being checked (their instance paths, from `prefix`), and which of
// them a schema marked `x-msgpack: bin` took. Checks are synchronous.
let bins = new Set<string>();
let claimed = new Set<string>();
let prefix = '';

interface Validators {
  unions: Record<'ClientMsg' | 'ServerMsg' | 'ServerBatch', ValidateFunction>;
  /** Each message's own schema, by union and `type`, for a failure's details. */
  messages: Record<'ClientMsg' | 'ServerMsg', Map<string, ValidateFunction>>;
}

let validators: Validators | undefined;

function compile(): Validators {
  const document = JSON.parse(readFileSync(SCHEMA, 'utf8')) as Record<string, unknown> & { $defs: Record<string, any> };
  closeObjects(document.$defs);
  const ajv = new Ajv2020({
    allErrors: true,
    strict: true,
    allowUnionTypes: true,
    formats: {
      uuid: /^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i,
      uint16: true, uint32: true, uint64: true, int16: true, double: true,
    },
  });
  ajv.addKeyword({
    keyword: 'x-msgpack',
    schemaType: 'string',
    errors: true,
    validate: function binOnly(schema: string, data: unknown, _parent?: unknown, cxt?: { instancePath: string }) {
      const fail = (message: string) => {
        (binOnly as { errors?: Partial<ErrorObject>[] }).errors = [{ keyword: 'x-msgpack', message, params: {} }];
        return false;
      };
      if (schema !== 'bin') return fail(`x-msgpack names no type this check knows: ${schema}`);
      const at = prefix + (cxt?.instancePath ?? '');
      if (typeof data !== 'string' || !bins.has(at)) return fail('bytes must be a MessagePack bin, not a str or anything else');
      claimed.add(at);
      return true;
    },
  });
  const { anyOf: _frames, ...defs } = document;
  ajv.addSchema(defs);
  const id = document.$id as string;
  const get = (name: string) => ajv.compile({ $ref: `${id}#/$defs/${name}` });
  const byType = (union: string) => new Map<string, ValidateFunction>(
    (document.$defs[union].oneOf as { $ref: string }[]).map(({ $ref }) => {
      const name = $ref.replace('#/$defs/', '');
      return [document.$defs[name].properties.type.const as string, get(name)];
    }));
  return {
    unions: { ClientMsg: get('ClientMsg'), ServerMsg: get('ServerMsg'), ServerBatch: get('ServerBatch') },
    messages: { ClientMsg: byType('ClientMsg'), ServerMsg: byType('ServerMsg') },
  };
}

const described = (errors: ErrorObject[] | null | undefined, at = '') =>
  (errors ?? []).map((e) => `at \`${at}${e.instancePath}\`: ${e.message ?? e.keyword}${e.keyword === 'additionalProperties' ? ` (${JSON.stringify(e.params)})` : ''}`);

/** Throws `Nonconforming` unless `bytes` is a frame `direction` may send; `batching`: the
 * client asked for batches in its `hello`. */
export function check(direction: Direction, bytes: Uint8Array, batching = false): void {
  validators ??= compile();
  const found = new Set<string>();
  let frame: unknown;
  try {
    frame = toJson(decoder.decode(bytes), '', found);
  } catch (e) {
    throw new Nonconforming(direction, undefined, [`not MessagePack JSON can hold: ${(e as Error).message}`]);
  }
  let union: 'ClientMsg' | 'ServerMsg' | 'ServerBatch' = direction === 'client' ? 'ClientMsg' : 'ServerMsg';
  if (direction === 'server' && batching && Array.isArray(frame)) union = 'ServerBatch';
  [bins, claimed, prefix] = [found, new Set(), ''];
  const validate = validators.unions[union];
  const errors: string[] = [];
  // (Validated as `checked`: a guard that failed would leave `frame` typed `never`.)
  const checked: unknown = frame;
  if (!validate(checked)) {
    // Each message's own errors, which say more than the union's (with all its branches').
    const detail: string[] = [];
    const member = union === 'ServerBatch' ? 'ServerMsg' : union;
    const items: [string, unknown][] = Array.isArray(frame) ? frame.map((item, i) => [segment(i), item]) : [['', frame]];
    for (const [at, item] of items) {
      const kind = (item as { type?: unknown } | null)?.type;
      const message = typeof kind === 'string' ? validators.messages[member].get(kind) : undefined;
      prefix = at;
      if (message && !message(item)) detail.push(...described(message.errors, at).map((e) => `as \`${kind}\`: ${e}`));
    }
    errors.push(...(detail.length > 0 ? [`not a ${union}`, ...detail] : new Set(described(validate.errors))));
  } else if ([...found].some((at) => !claimed.has(at))) {
    errors.push('a bin where the schema has no bytes');
  }
  if (errors.length > 0) throw new Nonconforming(direction, frame, errors);
}

// What did not conform since the last `take`.
const found: Nonconforming[] = [];

/** What did not conform since the last call, which the hook then forgets. */
export function take(): Nonconforming[] {
  return found.splice(0);
}

function bytesOf(data: unknown): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data as Buffer[]);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data as Uint8Array;
}

const batching = new WeakSet<object>();

function record(socket: object, direction: Direction, data: unknown, binary: boolean): void {
  if (!binary) {
    found.push(new Nonconforming(direction, undefined, ["a text frame: the protocol's frames are binary"]));
    return;
  }
  const bytes = bytesOf(data);
  try {
    check(direction, bytes, batching.has(socket));
  } catch (e) {
    if (!(e instanceof Nonconforming)) throw e;
    found.push(e);
  }
  if (direction === 'client') {
    try {
      const msg = new Decoder().decode(bytes) as { type?: unknown; batch?: unknown };
      if (msg?.type === 'hello' && msg.batch === true) batching.add(socket);
    } catch {
      // Not a hello: already reported.
    }
  }
}

// The hook: every `ws` socket, whoever makes it, checks what it sends and receives.
type Emit = (this: WebSocket, event: string | symbol, ...args: unknown[]) => boolean;
type Send = (this: WebSocket, data: unknown, ...rest: unknown[]) => void;
const proto = WebSocket.prototype as unknown as { emit: Emit; send: Send };
const { emit, send } = proto;
proto.send = function checkedSend(data, ...rest) {
  const text = typeof data === 'string' || (rest[0] as { binary?: boolean } | undefined)?.binary === false;
  record(this, 'client', typeof data === 'string' ? new TextEncoder().encode(data) : data, !text);
  send.call(this, data, ...rest);
};
proto.emit = function checkedEmit(event, ...args) {
  if (event === 'message') record(this, 'server', args[0], args[1] !== false);
  return emit.call(this, event, ...args);
};
(globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;

afterEach((t) => {
  const nonconforming = take();
  if (nonconforming.length === 0) return;
  const report = nonconforming.map((n) => n.message).join('\n');
  // Also said when the test fails for its own reason, which the runner reports instead.
  if ('diagnostic' in t) t.diagnostic(report);
  throw new Error(report);
});
