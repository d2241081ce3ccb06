// A player's commit-reveal in the browser. The pick and its nonce are written to
// sessionStorage *before* the commitment is sent, keyed by game and round, so that a
// reload between commit and reveal can still reveal (sessionStorage survives a reload of
// the tab, and never leaves it).

import { bytesToHex, commitment, freshNonce, hexToBytes } from './commitment.js';
import { plainMessage } from './errors.js';
import { canPick, owesReveal } from './game.js';

const PREFIX = 'elementals.pick.';

function key(gameId, round) {
  return `${PREFIX}${gameId}.${round}`;
}

function load(gameId, round) {
  try {
    const raw = sessionStorage.getItem(key(gameId, round));
    if (!raw) return null;
    const { pick, nonce } = JSON.parse(raw);
    return { pick, nonce: hexToBytes(nonce) };
  } catch {
    return null;
  }
}

/** Rounds of one game whose reveal is in flight, so each is sent once. */
const revealing = new Set();

export const play = {
  /** After a snapshot: show the pick this tab committed to in the current round, if any. */
  restore(game) {
    const saved = game.committed[game.seat] ? load(game.id, game.round) : null;
    game.myPick = saved ? { round: game.round, pick: saved.pick } : null;
  },

  /** Commit to `pick` in the current round. */
  async commit(app, game, pick) {
    // Offline, a pick could not be sent, and would be lost with the connection's state.
    if (!canPick(game) || game.committing || !app.conn?.isOpen) return;
    const { id, round, seat } = game;
    const nonce = freshNonce();
    sessionStorage.setItem(key(id, round), JSON.stringify({ pick, nonce: bytesToHex(nonce) }));
    game.committing = true;
    game.myPick = { round, pick };
    app.refresh();
    try {
      const digest = await commitment(id, round, seat, pick, nonce);
      await app.request({ type: 'commit', game_id: id, round, commitment: digest });
      if (game.round === round && game.phase === 'commit') game.committed[seat] = true;
    } catch (e) {
      if (e.code !== 'already_committed' && e.code !== 'closed') {
        game.myPick = null;
        sessionStorage.removeItem(key(id, round));
        app.toast(plainMessage(e), 'error');
      }
    } finally {
      game.committing = false;
      app.refresh();
    }
    // The opponent may have committed first: the reveal phase can already be here.
    if (owesReveal(game)) play.reveal(app, game);
  },

  /** Reveal this round's pick, if this tab holds it. */
  async reveal(app, game) {
    if (!owesReveal(game)) return;
    const tag = `${game.id}.${game.round}`;
    if (revealing.has(tag)) return;
    const saved = load(game.id, game.round);
    if (!saved) {
      game.revealProblem = 'Your pick for this round was made in another tab; reveal it there.';
      return;
    }
    revealing.add(tag);
    try {
      await app.request({
        type: 'reveal',
        game_id: game.id,
        round: game.round,
        pick: saved.pick,
        nonce: saved.nonce,
      });
    } catch (e) {
      if (e.code !== 'already_revealed') app.toast(plainMessage(e), 'error');
    } finally {
      revealing.delete(tag);
      app.refresh();
    }
  },

  /** The game is over: its picks need no keeping. */
  forget(gameId) {
    for (let i = sessionStorage.length - 1; i >= 0; i--) {
      const k = sessionStorage.key(i);
      if (k?.startsWith(`${PREFIX}${gameId}.`)) sessionStorage.removeItem(k);
    }
  },
};
