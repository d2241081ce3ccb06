// A player's commit-reveal in the browser. The pick and its nonce are written to
// localStorage *before* the commitment is sent, keyed by game and round, so that a reload,
// a tab closed and opened again, or a browser restarted between commit and reveal can
// still reveal on the next visit (localStorage stays in this browser; nothing of it is sent
// until the reveal). A pick sent but not answered (a stalled network, a dropped connection)
// stays kept, and the server's state settles it (`restore`): nothing but a refusal the
// server read drops it. A kept pick goes once it is revealed or its game is over, and any
// left behind (a game that ended while away) after a month. With escrow on (escrow.js) the
// pick and nonce go with the commitment instead, and the server reveals. The SDK's
// `LocalStorageNonceStore` does not keep them: it is asynchronous and holds a pick alone,
// while the page reads a kept pick as it draws, marks an escrowed one (shown after a
// reload, never revealed) and ages picks out by when they were made.

import { commitment, fromHex, newNonce, toHex } from './sdk.js';
import { escrow } from './escrow.js';
import { plainMessage } from './errors.js';
import { canPick, owesReveal } from './game.js';

const PREFIX = 'elementals.pick.';
/** How long a kept pick whose game was never seen to end is kept. */
const KEEP_MS = 30 * 24 * 3600 * 1000;

function key(gameId, round) {
  return `${PREFIX}${gameId}.${round}`;
}

function load(gameId, round) {
  try {
    const raw = localStorage.getItem(key(gameId, round));
    if (!raw) return null;
    const { pick, nonce, escrowed } = JSON.parse(raw);
    return { pick, nonce: fromHex(nonce), escrowed: !!escrowed };
  } catch {
    return null;
  }
}

/** The kept picks' keys, of one game or of all. */
function keys(gameId = '') {
  const found = [];
  for (let i = 0; i < localStorage.length; i++) {
    const k = localStorage.key(i);
    if (k?.startsWith(PREFIX + gameId)) found.push(k);
  }
  return found;
}

/** Rounds of one game (`game.round`) whose commit, or reveal, is in flight: each is sent once at a time. */
const committing = new Set();
const revealing = new Set();

// Refusals after which the server may hold our commitment after all (an earlier copy of
// it went in), or that say nothing of it (the connection went, the answer is late): the
// pick is kept and the server's state decides. Any other refusal was read and judged.
const UNSETTLED = new Set(['closed', 'timeout', 'already_committed', 'wrong_phase', 'unavailable', 'internal']);

/**
 * Send the commitment of a kept pick. The same pick and nonce, so the same commitment,
 * however often it is sent: a copy held by a stalled network that lands after a resend
 * is refused as `already_committed`, and whichever went in, the kept nonce opens it.
 */
async function send(app, game, saved) {
  const { id, round, seat } = game;
  const tag = `${id}.${round}`;
  if (committing.has(tag)) return;
  committing.add(tag);
  game.myPick = { round, pick: saved.pick };
  app.refresh();
  try {
    const digest = await commitment(id, round, seat, saved.pick, saved.nonce);
    const msg = { type: 'commit', game_id: id, round, commitment: digest };
    if (saved.escrowed) Object.assign(msg, { pick: saved.pick, nonce: saved.nonce });
    await app.request(msg);
    const now = app.games.get(id);
    if (now && now.round === round && now.phase === 'commit') now.committed[seat] = true;
  } catch (e) {
    if (!UNSETTLED.has(e.code)) {
      localStorage.removeItem(key(id, round));
      const now = app.games.get(id);
      if (now?.myPick?.round === round) now.myPick = null;
      app.toast(plainMessage(e), 'error');
    } else if (e.code !== 'closed') {
      // The connection is up: read back whether the commitment went in (a new
      // connection does so by itself).
      const now = app.games.get(id);
      if (now) app.sync(now);
    }
  } finally {
    committing.delete(tag);
    app.refresh();
  }
  app.myGames.refresh();
  // The opponent may have committed first: the reveal phase can already be here.
  const now = app.games.get(id);
  if (now && owesReveal(now)) play.reveal(app, now);
}

export const play = {
  /**
   * After a snapshot: show the pick kept for the current round, if this browser has one,
   * and settle it with the server's state: committed, it is ours (this browser makes one
   * commitment a round); not committed while the round still takes commitments, it never
   * arrived, and is sent again.
   */
  restore(app, game) {
    const saved = game.phase === 'over' ? null : load(game.id, game.round);
    game.myPick = saved ? { round: game.round, pick: saved.pick } : null;
    // Earlier rounds' picks were revealed (or never will be).
    for (const k of keys(`${game.id}.`)) {
      if (Number(k.slice(k.lastIndexOf('.') + 1)) < game.round) localStorage.removeItem(k);
    }
    if (saved && game.phase === 'commit' && !game.committed[game.seat] && app.conn?.isOpen) send(app, game, saved);
  },

  /** The pick kept for the game's current round, sent or on its way: { pick } or null. */
  kept(game) {
    if (!game.seat || game.phase !== 'commit') return null;
    return load(game.id, game.round);
  },

  /**
   * Commit to `pick` in the current round. The pick and its nonce are kept before anything
   * is sent, and a round has one: until the server has settled it, no other pick is made.
   */
  async commit(app, game, pick) {
    // Offline, a pick could not be sent: the buttons wait for the connection.
    if (!canPick(game) || !app.conn?.isOpen || play.kept(game)) return;
    const saved = { pick, nonce: newNonce(), escrowed: escrow.on };
    // Kept even when escrowed, to show the pick after a reload; marked, so it is not revealed.
    localStorage.setItem(key(game.id, game.round), JSON.stringify({ ...saved, nonce: toHex(saved.nonce), at: Date.now() }));
    await send(app, game, saved);
  },

  /** Reveal this round's pick, if this browser holds it (and did not escrow it). */
  async reveal(app, game) {
    if (!owesReveal(game)) return;
    const { id, round } = game;
    const tag = `${id}.${round}`;
    if (revealing.has(tag)) return;
    const saved = load(id, round);
    if (saved?.escrowed) return;
    if (!saved) {
      game.revealProblem = 'Your pick for this round was made in another browser; reveal it there.';
      return;
    }
    revealing.add(tag);
    try {
      await app.request({
        type: 'reveal',
        game_id: id,
        round,
        pick: saved.pick,
        nonce: saved.nonce,
      });
      localStorage.removeItem(key(id, round));
    } catch (e) {
      if (e.code === 'already_revealed') localStorage.removeItem(key(id, round));
      else if (e.code === 'timeout') app.sync(game);
      // Without a connection the reveal is sent again from the next one's snapshot.
      else if (e.code !== 'closed') app.toast(plainMessage(e), 'error');
    } finally {
      revealing.delete(tag);
      app.refresh();
      app.myGames.refresh();
    }
  },

  /** The game is over: its picks need no keeping. */
  forget(gameId) {
    for (const k of keys(`${gameId}.`)) localStorage.removeItem(k);
  },

  /** Drops kept picks older than a month (their games ended while this browser was away). */
  prune(now = Date.now()) {
    for (const k of keys()) {
      try {
        const { at } = JSON.parse(localStorage.getItem(k));
        if (!(now - at < KEEP_MS)) localStorage.removeItem(k);
      } catch {
        localStorage.removeItem(k);
      }
    }
  },
};
