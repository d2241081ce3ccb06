// The commitment scheme against PROTOCOL.md section 8's test vectors, and the nonce stores.

import assert from 'node:assert/strict';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { FileNonceStore } from '../src/file-store.js';
import { commitment, fromHex, LocalStorageNonceStore, MemoryNonceStore, preimage, toHex, type Seat } from '../src/index.js';

const SEQ = Uint8Array.from({ length: 32 }, (_, i) => i);
const VECTORS: Array<[string, number, Seat, number, Uint8Array, string]> = [
  ['6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab', 1, 'one', 5, new Uint8Array(32), '890016950cf8498d753350110eba90d15f68c3754d178089cb1a88056d3ae60c'],
  ['6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab', 1, 'two', 5, new Uint8Array(32), 'b340f16ab1d2a405cdf369d70c405110ae5a5629f50fadac1235f1f33c109459'],
  ['6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab', 2, 'two', 2, SEQ, 'a1be543458a30b436914ec789fc17897d5f7b077304a605bb0076f5b0934a254'],
  ['0190f5e2-7c4b-7d3a-8e1f-a2b3c4d5e6f7', 4294967295, 'one', 99, new Uint8Array(32).fill(0xff), '3d53715fdf49c13a26018b888e99084fd03b359958f2f0451143624b5c072c49'],
  ['00000000-0000-0000-0000-000000000000', 65536, 'two', 1, SEQ, '2e13a5c56a9af3dfe624560ca62f922937f09779cb20235beafc31b76e72f6a2'],
];

test('commitments match the protocol test vectors', async () => {
  for (const [gameId, round, seat, pick, nonce, expected] of VECTORS) {
    assert.equal(preimage(gameId, round, seat, pick, nonce).length, 76);
    assert.equal(toHex(await commitment(gameId, round, seat, pick, nonce)), expected);
  }
  assert.throws(() => preimage(VECTORS[0][0], 1, 'one', 5, new Uint8Array(31)));
});

test('a file store keeps picks privately per account until removed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'elementals-nonces-'));
  const game = '6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab';
  const sealed = { round: 3, pick: 4, nonce: new Uint8Array(32).fill(9) };
  const store = new FileNonceStore(dir);
  await store.save('Alice', game, sealed);
  assert.equal(statSync(join(dir, 'alice', `${game}.json`)).mode & 0o777, 0o600);
  // Another process (a new store on the same directory) reads it; names ignore case.
  assert.deepEqual(await new FileNonceStore(dir).load('alice', game), sealed);
  // A name that is not plain gets a directory of its own inside the store.
  assert.equal(await store.load('../alice', game), null);
  assert.deepEqual(store.games('alice'), [game]);
  assert.equal(await store.prune('alice', new Set([game])), 0);
  assert.equal(await store.prune('alice', new Set()), 1);
  assert.equal(await store.load('alice', game), null);
});

test('memory and Web Storage stores keep picks per account', async () => {
  const game = '6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab';
  const sealed = { round: 1, pick: 2, nonce: fromHex('11'.repeat(32)) };
  const items = new Map<string, string>();
  const storage = {
    getItem: (k: string) => items.get(k) ?? null,
    setItem: (k: string, v: string) => void items.set(k, v),
    removeItem: (k: string) => void items.delete(k),
  };
  for (const store of [new MemoryNonceStore(), new LocalStorageNonceStore(storage)]) {
    await store.save('Bob', game, sealed);
    assert.deepEqual(await store.load('bob', game), sealed);
    assert.equal(await store.load('carol', game), null);
    await store.remove('BOB', game);
    assert.equal(await store.load('bob', game), null);
  }
});

test('a preimage refuses a seat, round or pick it cannot encode', () => {
  const game = '6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab';
  const nonce = new Uint8Array(32);
  assert.throws(() => preimage(game, 1, 'three' as Seat, 5, nonce), /seat/);
  assert.throws(() => preimage(game, -1, 'one', 5, nonce), /round/);
  assert.throws(() => preimage(game, 2 ** 32, 'one', 5, nonce), /round/);
  assert.throws(() => preimage(game, 1.5, 'one', 5, nonce), /round/);
  assert.throws(() => preimage(game, 1, 'one', 65_536, nonce), /pick/);
  assert.throws(() => preimage(game, 1, 'two', 5, new Uint8Array(31)), /nonce/);
});
