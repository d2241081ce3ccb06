// The message types are what the protocol's schema generates: src/schema.ts against
// protocol/schema/messages.json (scripts/generate-types.mjs --check). tsc then holds the
// SDK to them.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

// build/test/schema.test.js sits two levels below the package's root.
const PACKAGE = fileURLToPath(new URL('../..', import.meta.url));

test('src/schema.ts is what protocol/schema/messages.json generates', () => {
  const check = spawnSync(process.execPath, ['scripts/generate-types.mjs', '--check'], { cwd: PACKAGE, encoding: 'utf8' });
  assert.equal(check.status, 0, check.stderr);
});
