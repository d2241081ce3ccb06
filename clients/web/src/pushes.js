// What the server pushes: a game's numbered events (applied to the game, or kept until its
// snapshot lands), game starts and snapshots, and the lobby's news (queue, seeks,
// challenges, rematches, notices). Each push ends in the app's `refresh()`.

import { applyEvent, describeResult, describeRound, FIRST_COMMIT_MS, owesReveal } from './game.js';
import { play } from './play.js';

const GAME_EVENTS = new Set([
  'round_start', 'committed', 'reveal_phase', 'revealed', 'round_result', 'draw_offered',
  'draw_declined', 'presence', 'game_over', 'rating_update', 'spectators',
]);

export function onPush(app, msg) {
  if (GAME_EVENTS.has(msg.type)) {
    onGameEvent(app, msg);
  } else {
    switch (msg.type) {
      case 'game_start':
        app.myGames.refresh();
        app.alerts.beep('round');
        app.myGameId = msg.game.game_id;
        app.early.set(msg.game.game_id, []);
        app.queue = null;
        app.mySeeks.clear();
        app.challengesOut.clear();
        app.go(`#/game/${msg.game.game_id}`);
        break;
      case 'snapshot': {
        const game = app.installSnapshot(msg.snapshot, msg.seat ?? null);
        // Back to a live game at once; a correspondence game waits on My games instead.
        const live = !game.info.time_control?.per_phase_ms;
        if (msg.seat && live && game.phase !== 'over' && app.route?.id !== game.id) app.go(`#/game/${game.id}`);
        break;
      }
      case 'your_move':
        // One of this player's games waits for them (maybe one not open here).
        app.myGames.refresh();
        break;
      case 'queue_status':
        if (app.queue) app.queue.status = msg;
        break;
      case 'challenge_received':
        app.challengesIn.set(msg.challenge.challenge_id, msg.challenge);
        app.toast(`${msg.challenge.from.name} challenges you.`);
        break;
      case 'challenge_declined':
        app.challengesOut.delete(msg.challenge_id);
        app.toast('Your challenge was declined.');
        break;
      case 'challenge_cancelled':
        app.challengesIn.delete(msg.challenge_id);
        app.challengesOut.delete(msg.challenge_id);
        break;
      case 'seek_removed':
        app.mySeeks.delete(msg.seek_id);
        break;
      case 'rematch_offered':
        app.rematchOffers.add(msg.game_id);
        app.toast('Your opponent offers a rematch.');
        break;
      case 'rematch_declined':
        app.rematchDeclined.add(msg.game_id);
        app.toast('Your opponent declined the rematch.');
        break;
      case 'notice':
        app.toast(msg.message);
        break;
      case 'error':
        app.toast(msg.message, 'error');
        break;
      default:
        break;
    }
  }
  app.refresh();
}

function onGameEvent(app, msg) {
  const game = app.games.get(msg.game_id);
  if (!game) {
    const early = app.early.get(msg.game_id);
    if (early && early.length < 256) early.push(msg);
    return;
  }
  const result = applyEvent(game, msg, performance.now());
  if (result === 'gap') {
    app.sync(game);
    return;
  }
  if (result !== 'applied') return;
  if (msg.type === 'round_result') app.announce(describeRound(game, msg.record));
  if (game.seat && msg.type === 'round_start') app.alerts.beep('round');
  if (game.seat && msg.type === 'game_over') app.alerts.beep('result');
  // Draw offers and refusals are said out loud (a toast is an alert), not only shown by
  // the buttons changing.
  const who = (seat) => game.info.players[seat].name;
  if (msg.type === 'draw_offered' && msg.by !== game.seat) app.toast(`${who(msg.by)} offers a draw.`);
  if (msg.type === 'draw_declined' && msg.by !== game.seat) {
    app.toast(game.seat ? `${who(msg.by)} declined your draw offer.` : `${who(msg.by)} declined the draw offer.`);
  }
  if (msg.type === 'game_over') {
    // Ended `aborted` before round 1's window ran out: a player aborted it.
    const windowMs = app.conn?.welcome?.limits?.first_commit_ms ?? FIRST_COMMIT_MS;
    const early = Date.now() < game.info.started_at + windowMs - 1000 && !game.info.time_control?.per_phase_ms;
    if (msg.result.reason === 'aborted' && early) game.abortedBy ??= 'player';
    app.announce(describeResult(game));
    if (game.seat) play.forget(game.id);
  }
  if (msg.type === 'rating_update' && game.seat && app.account) {
    app.account.rating = msg.ratings[game.seat].after;
  }
  // Our own commitment announced, though its answer never came (a stalled network
  // delivered it late): the kept pick is ours, and is shown and revealed.
  if (game.seat && msg.type === 'committed' && msg.seat === game.seat) play.restore(app, game);
  if (game.seat && owesReveal(game)) play.reveal(app, game);
  // The list changes when a game ends; new moves owed come as `your_move`, and this
  // player's own commits and reveals ask again when answered (play.js).
  if (game.seat && msg.type === 'game_over') app.myGames.refresh();
}
