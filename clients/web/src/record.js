// A game that is not live any more, read over HTTP: its stored record
// (`GET /api/games/{id}`, PROTOCOL.md section 12) and, for a rated game, each player's
// rating change from their history (`GET /api/players/{name}`).

import { ProtocolError } from './connection.js';
import { fromRecord } from './game.js';

// A game that has just ended is recorded a moment later: how long to wait between asks.
const RETRY_MS = 700;

/**
 * The finished game `id` as the game model has it, seen by the player named `viewer`, or
 * null if no game with that id was recorded. `tries` asks that many times for a record
 * still missing.
 */
export async function fetchRecord(id, viewer, tries = 1) {
  let res;
  for (let i = 0; i < tries; i++) {
    if (i) await new Promise((ok) => setTimeout(ok, RETRY_MS));
    res = await fetch(`/api/games/${encodeURIComponent(id)}`);
    if (res.status !== 404) break;
  }
  if (res.status === 404) return null;
  if (!res.ok) throw new ProtocolError('http', `The game's record could not be read (HTTP ${res.status}).`);
  const record = await res.json();
  const p = record.players;
  const rated = record.rated && record.result.winner && !p.one.guest && !p.two.guest;
  let ratings = null;
  if (rated) {
    const change = async (seat) => {
      const r = await fetch(`/api/players/${encodeURIComponent(p[seat].name)}`);
      const row = r.ok ? (await r.json()).history?.find((x) => x.game_id === id) : null;
      return row ? { before: row.before, after: row.after } : null;
    };
    const [one, two] = await Promise.all([change('one'), change('two')]);
    ratings = one && two ? { one, two } : null;
  }
  return fromRecord(record, viewer, ratings, performance.now());
}
