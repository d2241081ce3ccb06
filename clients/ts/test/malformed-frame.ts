// Not a test file of the suite: conformance.test.ts runs it under `node --test` against its
// server (ELEMENTALS_TEST_URL), as a test that sends one frame the schema refuses, which the
// conformance hook must fail.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import './conformance.js';
import { Client, ServerError } from '../src/index.js';

test('a commit without its fields', async () => {
  const client = await Client.connect(process.env.ELEMENTALS_TEST_URL!);
  try {
    await assert.rejects(client.request('commit', {} as never), (e) => e instanceof ServerError && e.code === 'bad_message');
    // The server answers and goes on: the connection still works.
    await client.ping();
  } finally {
    await client.close();
  }
});
