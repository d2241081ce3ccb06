// The commitment the browser client makes (the TypeScript SDK's, clients/ts) must reproduce
// the vectors pinned in protocol/src/commitment.rs byte for byte. The vectors are read from
// that Rust file, so they cannot drift apart. The SDK's commitment module is loaded from its
// built dist/ on its own: it needs no package.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { commitment, fromHex as hexToBytes, preimage, toHex as bytesToHex } from '../../ts/dist/commitment.js';

const PREIMAGE_LEN = 76;

const source = readFileSync(
  fileURLToPath(new URL('../../../protocol/src/commitment.rs', import.meta.url)),
  'utf8',
);

function rustVectors() {
  const consts = Object.fromEntries(
    [...source.matchAll(/const (\w+): &str = "([^"]*)";/g)].map((m) => [m[1], m[2]]),
  );
  const text = (v) => (v.startsWith('"') ? v.slice(1, -1) : consts[v]);
  // Only the values (`TestVector { game_id: ...`), not the struct's own definition.
  const blocks = [...source.matchAll(/TestVector \{(\s*game_id:[^}]*)\}/g)].map((m) => m[1]);
  return blocks.map((b) => {
    const field = (name) => b.match(new RegExp(`${name}: ([^,]+),`))[1].trim();
    const round = field('round');
    return {
      gameId: text(field('game_id')),
      round: round === 'u32::MAX' ? 0xffffffff : Number(round.replace(/_/g, '')),
      seat: field('seat') === 'Seat::One' ? 'one' : 'two',
      pick: Number(field('pick')),
      nonce: hexToBytes(text(field('nonce_hex'))),
      preimageHex: text(field('preimage_hex')),
      commitmentHex: text(field('commitment_hex')),
    };
  });
}

const vectors = rustVectors();

test('the Rust file yields every pinned vector', () => {
  assert.ok(vectors.length >= 5, `found only ${vectors.length} vectors`);
  for (const v of vectors) {
    assert.match(v.gameId, /^[0-9a-f-]{36}$/);
    assert.equal(v.nonce.length, 32);
  }
});

for (const [i, v] of vectors.entries()) {
  test(`vector ${i + 1}: preimage and commitment match`, async () => {
    const bytes = preimage(v.gameId, v.round, v.seat, v.pick, v.nonce);
    assert.equal(bytes.length, PREIMAGE_LEN);
    assert.equal(bytesToHex(bytes), v.preimageHex);
    const digest = await commitment(v.gameId, v.round, v.seat, v.pick, v.nonce);
    assert.ok(digest instanceof Uint8Array);
    assert.equal(bytesToHex(digest), v.commitmentHex);
  });
}

test('the seat changes the commitment', async () => {
  const nonce = new Uint8Array(32);
  const id = '6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab';
  const one = await commitment(id, 1, 'one', 5, nonce);
  const two = await commitment(id, 1, 'two', 5, nonce);
  assert.notEqual(bytesToHex(one), bytesToHex(two));
});

test('bad input is refused', () => {
  const id = '6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab';
  assert.throws(() => preimage(id, 1, 'one', 5, new Uint8Array(31)));
  assert.throws(() => preimage('not-a-uuid', 1, 'one', 5, new Uint8Array(32)));
  assert.throws(() => preimage(id, 1, 'three', 5, new Uint8Array(32)));
});
