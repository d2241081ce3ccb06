// Checking a signed transcript in the browser (PROTOCOL.md, "Signed transcripts"): the
// Ed25519 signature over the transcript's exact bytes, with the server's public key as
// `GET /api/transcript-key` gives it (fetched once a page load), by Web Crypto's Ed25519;
// then every commitment against its pick and nonce. What `elementals verify` also checks
// (the rules, the result, the ratings) is left to it: the page replays what it shows.

import { commitment, fromHex, toHex } from './sdk.js';

let serverKey = null;

/** The server's transcript key, `{ algorithm, public_key, key_id }`, asked for once. */
function transcriptKey() {
  serverKey ??= fetch('/api/transcript-key').then((r) => {
    if (!r.ok) throw new Error(`the server's key could not be read (HTTP ${r.status})`);
    return r.json();
  });
  serverKey.catch(() => {
    serverKey = null;
  });
  return serverKey;
}

export function base64Bytes(text) {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/**
 * Checks `signed` (the transcript endpoint's JSON); resolves to `{ ok: true }` or
 * `{ ok: false, why }` with a sentence for the page. Never throws.
 */
export async function checkSignature(signed) {
  try {
    const key = await transcriptKey();
    if (key.algorithm !== 'ed25519') return fail(`the server names an unknown algorithm (${key.algorithm})`);
    if (signed.public_key !== key.public_key) return fail('it is signed with a key other than this server\'s');
    const keyBytes = base64Bytes(key.public_key);
    const id = toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', keyBytes)).slice(0, 8));
    if (id !== key.key_id || signed.key_id !== key.key_id) return fail('its key id does not match the key');
    let publicKey;
    try {
      publicKey = await crypto.subtle.importKey('raw', keyBytes, { name: 'Ed25519' }, false, ['verify']);
    } catch {
      return fail('this browser cannot check Ed25519 signatures; use elementals verify');
    }
    const ok = await crypto.subtle.verify({ name: 'Ed25519' }, publicKey, base64Bytes(signed.signature), base64Bytes(signed.transcript));
    return ok ? { ok: true } : fail('the signature does not match the transcript\'s bytes');
  } catch (e) {
    return fail(e.message);
  }
}

/** Whether every round's commitments open with its picks and nonces; a sentence if not. */
export async function checkCommitments(record) {
  for (const r of record.rounds) {
    for (const seat of ['one', 'two']) {
      const want = await commitment(record.game_id, r.round, seat, r.picks[seat], fromHex(r.nonces[seat]));
      if (toHex(want) !== r.commitments[seat].toLowerCase()) {
        return fail(`round ${r.round}'s commitment of player ${seat} does not open with its pick`);
      }
    }
  }
  return { ok: true };
}

function fail(why) {
  return { ok: false, why };
}
