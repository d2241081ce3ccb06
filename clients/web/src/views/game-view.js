// A game, played or watched: both players with their clocks and commit/reveal state, the
// track, the pick buttons (players only, also on the keyboard), the rounds so far, and the
// result with rating changes and a rematch (against the computer, another game at once).

import { Board } from '../board.js';
import { fmtDeadline, fmtDelta, fmtGameKind, fmtRating, h, plural, replace } from '../dom.js';
import { escrow, escrowToggle } from '../escrow.js';
import {
  canAbort, canPick, claimWin, clockNow, describeResult, describeRound, FIRST_COMMIT_MS, firstCommitLeft, formatClock, isGameId, otherSeat, SEATS,
  typedPick,
  victims,
} from '../game.js';
import { hubOrder } from '../my-games.js';
import { play } from '../play.js';
import { playAgainButton } from './computer.js';

export function gameView(app, route) {
  const id = route.id;
  const el = h('div', { class: 'game-page' }, h('p', { class: 'loading' }, 'Loading the game…'));
  let parts = null;
  let failed = null;

  const load = () => {
    if (!isGameId(id)) {
      failed = 'There is no game at this address: a game address ends in a game id, like the ones in the list of live games.';
      return;
    }
    app.openGame(id).catch(async (e) => {
      // Not live (any more): the stored record shows how it ended, with the ratings.
      if (e.code === 'unknown_game' || e.code === 'game_over') {
        try {
          if (await app.loadRecord(id, e.code === 'game_over' ? 5 : 1)) return;
          failed = 'No game with this id is being played, and none was recorded.';
        } catch (err) {
          failed = err.message;
        }
      } else {
        failed = e.code === 'timeout' ? 'The server did not answer. Reload the page to try again.' : e.message;
      }
      update();
    });
  };

  const update = () => {
    const game = app.games.get(id);
    if (!game) {
      if (failed) {
        replace(el, h('div', { class: 'card', id: 'game-missing' },
          h('h1', {}, 'Game not found'),
          h('p', {}, failed),
          h('p', { class: 'row wrap' }, h('a', { href: '#/watch' }, 'Live games'), app.account ? h('a', { href: '#/lobby' }, 'Play') : null)));
      }
      return;
    }
    // A new snapshot replaces the game object; the DOM is kept so that tokens slide.
    if (!parts || parts.seat !== game.seat) parts = build(app, game);
    parts.game = game;
    if (!el.contains(parts.root)) replace(el, parts.root);
    render(app, game, parts);
  };

  // Clocks tick locally between events.
  const timer = setInterval(() => {
    const game = app.games.get(id);
    if (game && parts) {
      renderClocks(game, parts);
      renderCountdown(app, game, parts);
      renderDeadline(game, parts);
      renderClaim(app, game, parts);
    }
  }, 100);

  // Digits pick an element: 1-9 at once, or two digits for larger variants.
  let buffer = 0;
  let bufferTimer = null;
  const onKey = (ev) => {
    const game = app.games.get(id);
    if (!game || !game.seat || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (ev.target.closest?.('input, textarea, select')) return;
    if (!/^[0-9]$/.test(ev.key) || !canPick(game)) return;
    ev.preventDefault();
    clearTimeout(bufferTimer);
    const { pick, pending } = typedPick(buffer, Number(ev.key), game.info.variant.number);
    buffer = pending;
    if (pick) play.commit(app, game, pick);
    else if (pending) {
      bufferTimer = setTimeout(() => {
        buffer = 0;
        play.commit(app, game, pending);
      }, 800);
    }
  };
  document.addEventListener('keydown', onKey);

  load();
  update();
  return {
    el,
    update,
    destroy() {
      clearInterval(timer);
      clearTimeout(bufferTimer);
      document.removeEventListener('keydown', onKey);
      app.unwatch(id);
    },
  };
}

function playerCard(game, seat) {
  const info = game.info.players[seat];
  const clock = h('div', { class: 'clock', role: 'timer', 'aria-label': `${info.name}'s clock` });
  const state = h('div', { class: 'seat-state' });
  const rating = h('span', { class: 'rating' });
  const you = game.seat === seat ? h('span', { class: 'tag you' }, 'you') : null;
  const card = h(
    'div',
    { class: `player seat-${seat}`, dataset: { seat } },
    h('div', { class: 'player-name' },
      h('span', { class: 'seat-dot', 'aria-hidden': 'true' }),
      // Guests have no player page.
      info.guest ? h('span', { class: 'plain-name' }, info.name) : h('a', { href: `#/player/${encodeURIComponent(info.name)}` }, info.name),
      ' ', rating, you),
    clock,
    state,
  );
  return { card, clock, state, rating };
}

function build(app, game) {
  const board = new Board(game.info);
  const cards = { one: playerCard(game, 'one'), two: playerCard(game, 'two') };
  const head = h('div', { class: 'game-head' });
  const status = h('p', { class: 'game-status', id: 'game-status', role: 'status' });
  const countdown = h('p', { class: 'countdown', id: 'first-commit', hidden: true });
  // A correspondence game's phase deadline, as a date and time (its clocks say how long).
  const deadline = h('p', { class: 'deadline', id: 'phase-deadline', hidden: true });
  const corr = !!game.info.time_control?.per_phase_ms;
  // A correspondence game's player may turn escrow on here as on My games: one visit a round.
  const parts = {};
  const escrowBox = corr && game.seat ? escrowToggle(() => render(app, parts.game, parts)) : null;
  // Another of this player's games waiting for a move, one click away.
  const nextGame = h('p', { class: 'next-game', hidden: true });
  const picks = h('div', { class: 'picks', role: 'group', 'aria-label': 'Pick an element', 'aria-describedby': 'game-status' });
  const pickButtons = [];
  if (game.seat) {
    const v = game.info.variant;
    for (let e = 1; e <= v.number; e++) {
      const beaten = victims(v, e);
      const button = h(
        'button',
        {
          class: 'pick',
          dataset: { element: String(e) },
          style: { '--hue': board.lanes[e - 1].lane.style.getPropertyValue('--hue') },
          // One tab stop for the group; the arrow keys move between the picks.
          tabindex: e === 1 ? '0' : '-1',
          onclick: () => play.commit(app, app.games.get(game.id) ?? game, e),
        },
        h('span', { class: 'pick-number' }, String(e)),
        h('span', { class: 'pick-beats', 'aria-hidden': 'true' }, `› ${beaten.join(' ')}`),
        h('span', { class: 'sr-only' }, ` beats ${beaten.join(', ')}`),
      );
      pickButtons.push(button);
    }
    replace(picks, pickButtons);
    picks.addEventListener('keydown', (ev) => movePickFocus(ev, pickButtons));
  }
  // The last round in words (the announcer reads it out as it happens).
  const lastRound = h('p', { class: 'last-round', id: 'last-round', hidden: true });
  const controls = h('div', { class: 'controls row wrap' });
  const result = h('section', { class: 'result', 'aria-live': 'polite' });
  // It scrolls: a tab stop lets a keyboard scroll it too.
  const rounds = h('ol', { class: 'rounds', 'aria-label': 'Rounds', tabindex: '0' });
  const p = game.info.players;
  const root = h(
    'div',
    { class: `game ${game.seat ? 'playing' : 'watching'}`, dataset: { gameId: game.id } },
    h('h1', { class: 'sr-only' }, `${p.one.name} against ${p.two.name}`),
    head,
    h('div', { class: 'players' }, cards.one.card, cards.two.card),
    board.el,
    lastRound,
    result,
    game.seat
      ? h('div', { class: 'pick-area', id: 'pick-area' }, status, deadline, countdown, picks, h('p', { class: 'hint muted' }, `Keys 1–${Math.min(9, game.info.variant.number)} pick too.`))
      : h('div', { class: 'pick-area', id: 'pick-area' }, status, deadline, countdown),
    controls,
    nextGame,
    escrowBox,
    h('section', { class: 'history' }, h('h2', {}, 'Rounds'), rounds),
  );
  return Object.assign(parts, {
    root, board, cards, head, status, countdown, deadline, escrowBox, nextGame, lastRound, picks, pickButtons, controls, result, rounds,
    seat: game.seat, game, roundsShown: -1,
  });
}

/** Arrow keys, Home and End move the focus between the pick buttons (a roving tab stop). */
function movePickFocus(ev, buttons) {
  const at = buttons.indexOf(document.activeElement);
  if (at < 0) return;
  const n = buttons.length;
  const to = {
    ArrowRight: (at + 1) % n, ArrowDown: (at + 1) % n, ArrowLeft: (at - 1 + n) % n, ArrowUp: (at - 1 + n) % n,
    Home: 0, End: n - 1,
  }[ev.key];
  if (to === undefined) return;
  ev.preventDefault();
  buttons.forEach((b, i) => b.setAttribute('tabindex', i === to ? '0' : '-1'));
  buttons[to].focus();
}

function renderClocks(game, parts) {
  const now = clockNow(game, performance.now());
  for (const seat of SEATS) {
    const c = parts.cards[seat];
    const text = formatClock(now[seat], !!game.info.time_control?.per_phase_ms);
    if (c.clock.textContent !== text) c.clock.textContent = text;
    const running = !!game.clocks.running?.[seat] && game.phase !== 'over';
    c.clock.classList.toggle('running', running);
    c.clock.classList.toggle('low', now[seat] < 20_000);
  }
}

/** Round 1's window to commit, in seconds, while it runs (no bank runs meanwhile). */
function renderCountdown(app, game, parts) {
  const windowMs = app.conn?.welcome?.limits?.first_commit_ms ?? FIRST_COMMIT_MS;
  const left = firstCommitLeft(game, Date.now(), windowMs);
  parts.countdown.hidden = left === null;
  if (left === null) return;
  const s = Math.ceil(left / 1000);
  const text = `Round 1: ${s} s left for both players to pick, or the game is called off.`;
  if (parts.countdown.textContent !== text) parts.countdown.textContent = text;
  parts.countdown.classList.toggle('low', s <= 10);
}

/** The phase's deadline of a correspondence game, dated when more than 12 h away. */
function renderDeadline(game, parts) {
  const running = SEATS.filter((s) => game.clocks.running?.[s]);
  const show = !!game.info.time_control?.per_phase_ms && game.phase !== 'over' && game.phase !== 'resolved';
  parts.deadline.hidden = !show;
  if (!show) return;
  let text = 'The clocks are held: the deadline is set again once both players are back.';
  if (running.length) {
    // From the clocks as the last event gave them, so that the time does not drift.
    const left = Math.max(...running.map((s) => (s === 'one' ? game.clocks.one_ms : game.clocks.two_ms)));
    const at = Math.round((Date.now() - (performance.now() - game.clocksAt) + left) / 1000) * 1000;
    text = `Round ${game.round}: ${game.phase === 'reveal' ? 'reveals' : 'picks'} are due by ${fmtDeadline(at)}.`;
  }
  if (parts.deadline.textContent !== text) parts.deadline.textContent = text;
}

/** A link to the next of this player's other games waiting for a move, if there is one. */
function renderNextGame(app, game, parts) {
  const next = hubOrder(app.myGames.owing().filter((g) => g.game_id !== game.id))[0];
  const key = next ? `${next.game_id}:${app.myGames.owing().length}` : '';
  if (parts.nextKey === key) return;
  parts.nextKey = key;
  parts.nextGame.hidden = !next;
  const more = app.myGames.owing().filter((g) => g.game_id !== game.id).length;
  replace(parts.nextGame, next
    ? [h('a', { href: `#/game/${next.game_id}`, id: 'next-game' }, `Next game waiting for you: against ${next.opponent.name}`),
        more > 1 ? h('span', { class: 'muted' }, ` (and ${more - 1} more on `, h('a', { href: '#/games' }, 'My games'), ')') : null]
    : []);
}

function seatState(game, seat) {
  // Who is connected to a finished game concerns nobody.
  if (game.phase === 'over') return { text: '', cls: '' };
  if (!game.connected[seat]) return { text: 'disconnected', cls: 'away' };
  if (game.phase === 'reveal') return game.revealed[seat] ? { text: 'revealed', cls: 'done' } : { text: 'revealing…', cls: 'wait' };
  if (game.phase === 'commit') return game.committed[seat] ? { text: 'committed', cls: 'done' } : { text: 'thinking…', cls: 'wait' };
  return { text: '', cls: '' };
}

function render(app, game, parts) {
  const info = game.info;
  replace(
    parts.head,
    h('span', { class: 'kind' }, fmtGameKind(info.variant, info.time_control)),
    h('span', { class: 'tag' }, info.rated ? 'rated' : 'casual'),
    game.seat ? null : h('span', { class: 'tag' }, 'spectating'),
    h('span', { class: 'round', id: 'round-number' }, game.phase === 'over' ? plural(game.rounds.length, 'round') : `Round ${game.round}`),
    h('span', { class: 'spectators', id: 'spectators' }, `${game.spectators} watching`),
    game.seat && escrow.on && game.phase !== 'over'
      ? h('span', { class: 'tag', id: 'escrow-on', title: 'The server reveals your picks (escrow)' }, 'escrow on')
      : null,
  );
  for (const seat of SEATS) {
    const c = parts.cards[seat];
    const s = seatState(game, seat);
    c.state.textContent = s.text;
    c.state.className = `seat-state ${s.cls}`;
    const player = info.players[seat];
    c.rating.textContent = player.bot ? 'computer' : player.guest ? 'guest' : fmtRating(player.rating);
    c.card.classList.toggle('winner', game.result?.winner === seat);
  }
  renderClocks(game, parts);
  renderCountdown(app, game, parts);
  renderDeadline(game, parts);
  renderNextGame(app, game, parts);
  if (parts.escrowBox) parts.escrowBox.hidden = game.phase === 'over';

  const moveKey = game.rounds.length ? `${game.rounds[game.rounds.length - 1].round}` : null;
  parts.board.update(game.positions, game.lastMove, moveKey);
  parts.board.el.dataset.round = String(game.round);
  parts.board.el.dataset.phase = game.phase;

  // The viewer's own state and what to do next. Nothing can be sent without a connection:
  // the picks wait for it, and say so; a pick made is kept until the server has it.
  const online = app.status === 'online' && !!app.conn?.isOpen;
  const kept = play.kept(game);
  const pickable = canPick(game) && !kept && online;
  parts.picks.classList.toggle('offline', !online && canPick(game));
  for (const b of parts.pickButtons) {
    b.disabled = !pickable;
    const mine = game.myPick && game.myPick.round === game.round && Number(b.dataset.element) === game.myPick.pick && game.phase !== 'over';
    b.classList.toggle('chosen', !!mine);
    b.setAttribute('aria-pressed', mine ? 'true' : 'false');
  }
  let status = statusText(game, kept);
  if (!online && game.seat && game.phase !== 'over') {
    status = kept && !game.committed[game.seat]
      ? `Connection lost. Reconnecting… Your pick, ${kept.pick}, is kept and goes in once it is back.`
      : 'Connection lost. Reconnecting… You can pick once it is back.';
  }
  parts.status.textContent = status;
  // Once the game is over the result panel says it all (once); no dead buttons below it.
  parts.root.querySelector('#pick-area')?.toggleAttribute('hidden', game.phase === 'over');

  renderControls(app, game, parts);
  renderResult(app, game, parts);
  if (parts.roundsShown !== game.rounds.length) {
    parts.roundsShown = game.rounds.length;
    const last = game.rounds[game.rounds.length - 1];
    parts.lastRound.hidden = !last;
    parts.lastRound.textContent = last ? describeRound(game, last) : '';
    replace(parts.rounds, [...game.rounds].reverse().map((r) => roundItem(game, r)));
  }
}

function statusText(game, kept) {
  if (game.phase === 'over' || game.phase === 'resolved') return game.result ? describeResult(game) : 'The game is ending…';
  const p = game.info.players;
  if (!game.seat) {
    if (game.phase === 'reveal') return `Round ${game.round}: both committed, revealing…`;
    const waiting = SEATS.filter((s) => !game.committed[s]).map((s) => p[s].name);
    return `Round ${game.round}: waiting for ${waiting.join(' and ')} to pick.`;
  }
  const opp = p[otherSeat(game.seat)].name;
  if (game.revealProblem && game.phase === 'reveal') return game.revealProblem;
  if (game.phase === 'commit') {
    if (!game.committed[game.seat]) return kept ? `Locking in ${kept.pick}…` : `Round ${game.round}: pick an element.`;
    const mine = game.myPick?.round === game.round ? ` ${game.myPick.pick}` : '';
    return `You picked${mine}. Waiting for ${opp}…`;
  }
  if (game.phase === 'reveal') return game.revealed[game.seat] ? `Waiting for ${opp} to reveal…` : 'Revealing your pick…';
  return '';
}

function renderControls(app, game, parts) {
  if (!game.seat) {
    // The result panel has the one way on once the game is over.
    const key = game.phase === 'over' ? 'over' : 'live';
    if (parts.controlsKey !== key) {
      parts.controlsKey = key;
      replace(parts.controls, key === 'live' ? h('a', { href: '#/watch', class: 'button' }, 'All live games') : null);
    }
    return;
  }
  const me = game.seat;
  const opp = otherSeat(me);
  const gid = game.id;
  const buttons = [];
  if (game.phase !== 'over') {
    // Until both have committed in round 1 the game can be called off, costing nobody
    // rating; resigning is offered from then on.
    buttons.push(canAbort(game)
      ? h('button', {
          id: 'abort',
          onclick: async () => {
            // Marked before the answer: the `game_over` it causes may come first.
            const now = app.games.get(gid);
            if (now) now.abortedBy = me;
            if (!(await app.act({ type: 'abort', game_id: gid })) && now) now.abortedBy = null;
          },
        }, 'Abort')
      : h('button', {
          class: 'danger',
          onclick: () => {
            if (confirm('Resign this game?')) app.act({ type: 'resign', game_id: gid });
          },
        }, 'Resign'));
    if (game.drawOffer === opp) {
      buttons.push(
        h('button', { class: 'primary', onclick: () => app.act({ type: 'offer_draw', game_id: gid }) }, 'Accept draw'),
        h('button', { onclick: () => app.act({ type: 'decline_draw', game_id: gid }) }, 'Decline draw'),
        h('span', { class: 'draw-note', id: 'draw-note' }, `${game.info.players[opp].name} offers a draw.`),
      );
    } else if (game.drawOffer === me) {
      buttons.push(
        h('button', { disabled: true }, 'Draw offered'),
        h('span', { class: 'muted', id: 'draw-note' }, `Waiting for ${game.info.players[opp].name} to answer.`),
      );
    } else {
      buttons.push(h('button', { onclick: () => app.act({ type: 'offer_draw', game_id: gid }) }, 'Offer draw'));
    }
    // Kept from one render to the next: its text counts down every second.
    parts.claim ??= {
      button: h('button', { id: 'claim-win', onclick: () => app.act({ type: 'claim_win', game_id: gid }) }, 'Claim the win'),
      note: h('span', { class: 'muted claim-note', id: 'claim-note' }),
    };
    if (claimWin(game, performance.now())) buttons.push(parts.claim.button, parts.claim.note);
  }
  const key = buttons.map((b) => b.id || b.textContent).join('|');
  if (parts.controlsKey !== key) {
    parts.controlsKey = key;
    replace(parts.controls, buttons);
  }
  renderClaim(app, game, parts);
}

/** The claim button counts down to when the claim can succeed, and only then is enabled. */
function renderClaim(app, game, parts) {
  const claim = claimWin(game, performance.now());
  if (!parts.claim || !claim) return;
  const opp = game.info.players[otherSeat(game.seat)].name;
  const s = claim.owes ? Math.ceil(claim.leftMs / 1000) : null;
  const text = !claim.owes ? 'Claim the win' : s > 0 ? `Claim the win in ${s} s` : 'Claim the win';
  const note = !claim.owes
    ? `${opp} is away; a win can be claimed once it is their move and they stay away.`
    : s > 0
      ? `${opp} is away. If they are not back in ${s} s, the win is yours to claim.`
      : `${opp} has been away too long: you may claim the win.`;
  if (parts.claim.button.textContent !== text) parts.claim.button.textContent = text;
  parts.claim.button.disabled = !claim.owes || s > 0;
  if (parts.claim.note.textContent !== note) parts.claim.note.textContent = note;
}

function renderResult(app, game, parts) {
  parts.result.hidden = game.phase !== 'over';
  if (game.phase !== 'over') return;
  const declined = app.rematchDeclined.has(game.id);
  const key = `${game.result?.reason}|${!!game.ratings}|${app.rematchOffers.has(game.id)}|${game.rematchSent}|${declined}|${game.abortedBy}`;
  if (parts.resultKey === key) return;
  parts.resultKey = key;
  const p = game.info.players;
  const ratingLines = game.ratings
    ? SEATS.map((s) => {
        const r = game.ratings[s];
        return h('li', { dataset: { seat: s } }, `${p[s].name}: ${fmtRating(r.before)} → `, h('strong', {}, fmtRating(r.after)), ` (${fmtDelta(r.after - r.before)})`);
      })
    : null;
  const offered = app.rematchOffers.has(game.id);
  replace(
    parts.result,
    h('h2', { id: 'result-title' }, describeResult(game)),
    ratingLines ? h('ul', { class: 'plain ratings', 'aria-label': 'Rating changes' }, ratingLines) : game.result && game.info.rated && game.result.winner && !game.fromRecord ? h('p', { class: 'muted' }, 'Updating ratings…') : null,
    game.fromRecord ? h('p', { class: 'muted', id: 'ended-away' }, 'This game has ended: this is its record.') : null,
    game.seat && game.fromRecord ? h('a', { class: 'button primary', href: '#/lobby' }, 'Back to the lobby') : null,
    game.fromRecord ? null : game.seat
      ? h('div', { class: 'row wrap' },
          playAgainButton(app, game) ?? h('button', {
            class: 'primary',
            disabled: game.rematchSent && !offered,
            onclick: async () => {
              const ok = await app.act({ type: 'offer_rematch', game_id: game.id });
              if (ok) game.rematchSent = true;
              app.refresh();
            },
          }, offered ? 'Accept rematch' : declined ? 'Rematch declined' : game.rematchSent ? 'Rematch offered' : 'Rematch'),
          offered
            ? h('button', {
                onclick: async () => {
                  app.rematchOffers.delete(game.id);
                  await app.act({ type: 'decline_rematch', game_id: game.id });
                },
              }, 'Decline rematch')
            : null,
          h('a', { class: 'button', href: '#/lobby' }, 'Back to the lobby'))
      : h('a', { class: 'button', href: '#/watch' }, 'More live games'),
    // A game of no rounds has nothing to replay.
    game.rounds.length
      ? h('p', { class: 'replay-note' }, h('a', { href: `#/replay/${game.id}`, class: 'replay-link' }, 'Replay this game'), ', round by round')
      : null,
  );
}

function roundItem(game, r) {
  const m = r.outcome?.moved;
  const p = game.info.players;
  const to = m ? (m.to > 0 ? `+${m.to}` : `${m.to}`) : '';
  return h(
    'li',
    { class: 'round-item', dataset: { round: String(r.round) } },
    h('span', { class: 'r-num' }, `R${r.round}`),
    h('span', { class: `r-pick seat-one${r.outcome?.winner === 'one' ? ' won' : ''}`, title: p.one.name }, String(r.picks.one)),
    h('span', { class: 'vs', 'aria-hidden': 'true' }, 'vs'),
    h('span', { class: `r-pick seat-two${r.outcome?.winner === 'two' ? ' won' : ''}`, title: p.two.name }, String(r.picks.two)),
    h('span', { class: 'r-out' }, m ? `${m.element} → ${to}` : 'tie'),
    h('span', { class: 'sr-only' }, `${p.one.name} picked ${r.picks.one}, ${p.two.name} picked ${r.picks.two}; ${m ? `${m.element} moved to ${to}` : 'a tie'}.`),
  );
}
