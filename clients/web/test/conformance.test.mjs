// The conformance hook (testkit/conformance.mjs) can fail: a page that sends one frame the
// schema refuses (a `commit` without its fields) on its connection has it reported, with
// the frame and what the schema found, while the server answers the frame with an error
// and goes on. And what the MessagePack-to-JSON mapping refuses.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { encode } from '@msgpack/msgpack';

import { newPlayer } from '../testkit/browser.mjs';
import { check, Nonconforming, take } from '../testkit/conformance.mjs';
import { harness } from '../testkit/harness.mjs';

const STEP = { timeout: 30_000 };
const h = harness();

function refused(direction, bytes, batching = false) {
  try {
    check(direction, bytes, batching);
  } catch (e) {
    assert.ok(e instanceof Nonconforming);
    return e.message;
  }
  return assert.fail(`conforms: ${Buffer.from(bytes).toString('hex')}`);
}

test('what the mapping refuses', () => {
  const hex = (text) => Buffer.from(text, 'hex');
  check('client', encode({ type: 'ping', id: 1 }));
  assert.match(refused('client', hex('82a474797065a470696e67a2696401' + '00')), /Extra/);
  assert.match(refused('client', hex('82a474797065a470696e670101')), /not a str/);
  assert.match(refused('client', hex('83a474797065a470696e67a2696401a2696402')), /twice/);
  const pong = encode({ type: 'pong', id: 1 });
  const batch = Buffer.concat([hex('92'), pong, pong]);
  assert.match(refused('server', batch), /does not conform/);
  check('server', batch, true);
  assert.match(refused('client', encode({ type: 'resume', id: 1, token: new Uint8Array(3) })), /bin/);
});

describe('the conformance hook in the browser', { timeout: 120_000 }, () => {
  after(() => h.tearDown());

  test("a frame that does not conform on a page's connection is reported, and the server goes on", async () => {
    await h.setUp();
    const v = await newPlayer(h.browser, h.server.url);
    await h.withDiagnostics({ v }, async () => {
      await v.page.goto('/');
      await v.page.waitForFunction(() => window.elementals?.conn?.isOpen, null, STEP);
      const answer = await v.page.evaluate(() => window.elementals.conn.request({ type: 'commit' }).then(() => 'ok', (e) => e.code));
      assert.equal(answer, 'bad_message');
      // The server answers and goes on: the connection still works.
      assert.equal((await v.page.evaluate(() => window.elementals.conn.request({ type: 'ping' }))).type, 'pong');
      const reported = take();
      assert.equal(reported.length, 1, reported.map((n) => n.message).join('\n'));
      const [nonconforming] = reported;
      assert.equal(nonconforming.direction, 'client');
      assert.equal(nonconforming.frame.type, 'commit');
      assert.match(nonconforming.message, /a client frame does not conform to the schema/);
      assert.match(nonconforming.message, /frame: \{"type":"commit","id":\d+\}/);
      assert.match(nonconforming.message, /as `commit`: at ``: must have required property 'game_id'/);
    });
    await v.context.close();
  });
});
