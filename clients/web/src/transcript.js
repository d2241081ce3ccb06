// A finished game's signed transcript (`GET /api/games/{id}/transcript`, PROTOCOL.md
// section 12), read for what it holds: the stored record and the ratings around it. The
// page checks its signature (signature.js), shows the key id and links the file.

import { base64Bytes } from './signature.js';

/**
 * The transcript's signed body: { format, game, ratings }, with the key id and the endpoint's
 * answer as it came (`signed`, for the signature check); null if none.
 */
export async function fetchTranscript(id) {
  const res = await fetch(`/api/games/${encodeURIComponent(id)}/transcript`);
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`The game's transcript could not be read (HTTP ${res.status}).`);
  const signed = await res.json();
  const body = JSON.parse(new TextDecoder().decode(base64Bytes(signed.transcript)));
  return { ...body, keyId: signed.key_id, signed };
}

/** One game of a player's list (`GET /api/players/{name}/games`), newest first. */
export async function fetchGames(name, limit) {
  const res = await fetch(`/api/players/${encodeURIComponent(name)}/games?limit=${limit}`);
  if (res.status === 404) return [];
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res.json();
}
