// The conformance hook (conformance.ts) can fail: a test that sends one frame the schema
// refuses (a `commit` without its fields) fails, its message naming the frame and what the
// schema found, while the server answers the frame with an error and goes on. And what the
// MessagePack-to-JSON mapping refuses.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';

import { encode } from '@msgpack/msgpack';

import { check, Nonconforming } from './conformance.js';
import { startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

test('a test that sends a frame that does not conform fails', () => {
  // The child is a test run of its own, not a part of this one.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const inner = spawnSync(process.execPath, ['--test', '--test-reporter=tap', fileURLToPath(new URL('malformed-frame.js', import.meta.url))], {
    env: { ...env, ELEMENTALS_TEST_URL: server.url }, encoding: 'utf8',
  });
  const out = inner.stdout + inner.stderr;
  assert.notEqual(inner.status, 0, out);
  assert.match(out, /# fail 1/, out);
  assert.match(out, /a client frame does not conform to the schema/, out);
  assert.match(out, /frame: \{"type":"commit","id":2\}/, out);
  assert.match(out, /as `commit`: at ``: must have required property 'game_id'/, out);
  // Only that frame: hello, welcome, the error and the ping's round trip conform.
  assert.doesNotMatch(out, /a server frame does not conform/, out);
});

test('what the mapping refuses', () => {
  const refused = (direction: 'client' | 'server', bytes: Uint8Array, batching = false) => {
    try {
      check(direction, bytes, batching);
    } catch (e) {
      assert.ok(e instanceof Nonconforming);
      return e.message;
    }
    assert.fail(`conforms: ${Buffer.from(bytes).toString('hex')}`);
  };
  const hex = (text: string) => Buffer.from(text, 'hex');
  check('client', encode({ type: 'ping', id: 1 }));
  assert.match(refused('client', hex('82a474797065a470696e67a2696401' + '00')), /Extra/);
  assert.match(refused('client', hex('82a474797065a470696e670101')), /not a str/);
  assert.match(refused('client', hex('83a474797065a470696e67a2696401a2696402')), /twice/);
  // An id beyond 2^53 (a u64), which a JavaScript number cannot hold exactly.
  assert.match(refused('client', hex('82a474797065a470696e67a26964cf0020000000000001')), /beyond 2\^53/);
  const pong = encode({ type: 'pong', id: 1 });
  check('server', pong);
  assert.match(refused('client', pong), /does not conform/);
  const batch = Buffer.concat([hex('92'), pong, pong]);
  assert.match(refused('server', batch), /does not conform/);
  check('server', batch, true);
  assert.match(refused('server', Buffer.concat([hex('91'), pong]), true), /does not conform/);
  // A token is a str, a commitment a bin: each the other way round does not conform.
  assert.match(refused('client', encode({ type: 'resume', id: 1, token: new Uint8Array(3) })), /bin/);
  const commit = { type: 'commit', id: 1, game_id: '6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab', round: 1 };
  check('client', encode({ ...commit, commitment: new Uint8Array(32) }));
  assert.match(refused('client', encode({ ...commit, commitment: 'ab'.repeat(32) })), /MessagePack bin/);
});
