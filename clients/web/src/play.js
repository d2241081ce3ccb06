// A player's commit-reveal in the browser. The pick and its nonce are written to
// localStorage *before* the commitment is sent, keyed by game and round, so that a reload,
// a tab closed and opened again, or a browser restarted between commit and reveal can
// still reveal on the next visit (localStorage stays in this browser; nothing of it is sent
// until the reveal). A kept pick goes once it is revealed or its game is over, and any left
// behind (a game that ended while away) after a month. With escrow on (escrow.js) the
// pick and nonce go with the commitment instead, and the server reveals.

import { bytesToHex, commitment, freshNonce, hexToBytes } from './commitment.js';
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
    return { pick, nonce: hexToBytes(nonce), escrowed: !!escrowed };
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

/** Rounds of one game whose reveal is in flight, so each is sent once. */
const revealing = new Set();

export const play = {
  /** After a snapshot: show the pick committed to in the current round, if this browser has it. */
  restore(game) {
    const saved = game.committed[game.seat] ? load(game.id, game.round) : null;
    game.myPick = saved ? { round: game.round, pick: saved.pick } : null;
    // Earlier rounds' picks were revealed (or never will be).
    for (const k of keys(`${game.id}.`)) {
      if (Number(k.slice(k.lastIndexOf('.') + 1)) < game.round) localStorage.removeItem(k);
    }
  },

  /** Commit to `pick` in the current round. */
  async commit(app, game, pick) {
    // Offline, a pick could not be sent, and would be lost with the connection's state.
    if (!canPick(game) || game.committing || !app.conn?.isOpen) return;
    const { id, round, seat } = game;
    const nonce = freshNonce();
    const escrowed = escrow.on;
    // Kept even when escrowed, to show the pick after a reload; marked, so it is not revealed.
    localStorage.setItem(key(id, round), JSON.stringify({ pick, nonce: bytesToHex(nonce), escrowed, at: Date.now() }));
    game.committing = true;
    game.myPick = { round, pick };
    app.refresh();
    try {
      const digest = await commitment(id, round, seat, pick, nonce);
      const msg = { type: 'commit', game_id: id, round, commitment: digest };
      if (escrowed) Object.assign(msg, { pick, nonce });
      await app.request(msg);
      if (game.round === round && game.phase === 'commit') game.committed[seat] = true;
    } catch (e) {
      if (e.code !== 'already_committed' && e.code !== 'closed') {
        game.myPick = null;
        localStorage.removeItem(key(id, round));
        app.toast(plainMessage(e), 'error');
      }
    } finally {
      game.committing = false;
      app.refresh();
    }
    app.myGames.refresh();
    // The opponent may have committed first: the reveal phase can already be here.
    if (owesReveal(game)) play.reveal(app, game);
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
      else app.toast(plainMessage(e), 'error');
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
