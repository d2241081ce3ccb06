// A game as the browser knows it: built from a `snapshot`, then moved along by the numbered
// game events. Pure functions over plain objects (no DOM, no socket) so that node tests can
// drive them directly.

export const SEATS = ['one', 'two'];

/**
 * How long both players have to commit in round 1 before the game is called off, counted
 * from the game's start. The server announces its own in `welcome.limits.first_commit_ms`
 * (PROTOCOL.md, "Limits"), which is used; this default serves only before a welcome.
 */
export const FIRST_COMMIT_MS = 30_000;

export function otherSeat(seat) {
  return seat === 'one' ? 'two' : 'one';
}

/** Whether element `a` beats `b`: 1 <= (a - b) mod N <= R. */
export function beats(variant, a, b) {
  const n = variant.number;
  const down = (((a - b) % n) + n) % n;
  return down >= 1 && down <= variant.range;
}

/** The elements `a` beats, highest first. */
export function victims(variant, a) {
  const out = [];
  for (let b = variant.number; b >= 1; b--) if (beats(variant, a, b)) out.push(b);
  return out;
}

/**
 * A game from a snapshot. `seat` is the viewer's seat, or null for a spectator. `now` is the
 * local monotonic time in ms at which the clocks were read (performance.now()).
 */
export function fromSnapshot(snapshot, seat, now) {
  const last = snapshot.rounds.length ? snapshot.rounds[snapshot.rounds.length - 1] : null;
  return {
    id: snapshot.game.game_id,
    info: snapshot.game,
    seat: seat ?? null,
    seq: snapshot.seq,
    round: snapshot.round,
    phase: snapshot.phase,
    committed: { ...snapshot.committed },
    revealed: { ...snapshot.revealed },
    positions: [...snapshot.positions],
    clocks: snapshot.clocks,
    clocksAt: now,
    rounds: [...snapshot.rounds],
    lastMove: last?.outcome?.moved ?? null,
    connected: { ...snapshot.connected },
    spectators: snapshot.spectators,
    drawOffer: snapshot.draw_offer ?? null,
    result: snapshot.result ?? null,
    ratings: null,
    revealDeadline: null,
    // For claiming a win: since when each seat has been away, and has owed a move (the
    // snapshot tells neither, so both count from now: a claim is then offered late, never
    // early), and the grace period (announced in `presence`, else PROTOCOL.md's formula).
    awaySince: { one: snapshot.connected.one ? null : now, two: snapshot.connected.two ? null : now },
    owesSince: {
      one: owesMove(snapshot, 'one') ? now : null,
      two: owesMove(snapshot, 'two') ? now : null,
    },
    graceMs: Math.min(180_000, Math.max(30_000, snapshot.game.time_control.initial_ms / 10)),
  };
}

function owesMove(g, seat) {
  if (g.phase === 'commit') return !g.committed[seat];
  if (g.phase === 'reveal') return !g.revealed[seat];
  return false;
}

/** Whether `id` has a game id's shape (a UUID, PROTOCOL.md "Types"). */
export function isGameId(id) {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id ?? '');
}

/**
 * A finished game from its stored record (`GET /api/games/{id}`), seen by the player named
 * `viewer` (their seat, if they played it) and with `ratings` ({one, two} of {before, after},
 * or null) from the players' histories.
 */
export function fromRecord(record, viewer, ratings, now) {
  const players = {};
  for (const seat of SEATS) {
    const p = record.players[seat];
    players[seat] = { name: p.name, rating: p.rating, guest: p.guest };
  }
  const seat = SEATS.find((s) => viewer && players[s].name.toLowerCase() === viewer.toLowerCase()) ?? null;
  const rounds = record.rounds.map((r) => ({ round: r.round, picks: r.picks, outcome: r.outcome, positions: r.positions }));
  const last = rounds[rounds.length - 1];
  const game = fromSnapshot({
    game: {
      game_id: record.game_id, variant: record.variant, time_control: record.time_control,
      rated: record.rated, players, started_at: record.started_at,
    },
    seq: 0,
    round: last ? last.round : 1,
    phase: 'over',
    committed: { one: false, two: false },
    revealed: { one: false, two: false },
    positions: last ? last.positions : new Array(record.variant.number).fill(0),
    clocks: { one_ms: record.final_clocks_ms.one, two_ms: record.final_clocks_ms.two, running: { one: false, two: false } },
    rounds,
    connected: { one: true, two: true },
    spectators: 0,
    draw_offer: null,
    result: record.result,
  }, seat, now);
  game.ratings = ratings;
  game.fromRecord = true;
  const early = record.ended_at - record.started_at < FIRST_COMMIT_MS - 1000 && !record.time_control.per_phase_ms;
  if (record.result.reason === 'aborted' && early) game.abortedBy = 'record';
  return game;
}

/**
 * Apply one numbered game event (or a `spectators` push) to `game`, in place.
 * Returns 'applied', 'stale' (already included) or 'gap' (events were missed: ask for a
 * fresh snapshot with `sync`).
 */
export function applyEvent(game, msg, now) {
  if (msg.type === 'spectators') {
    game.spectators = msg.count;
    return 'applied';
  }
  if (typeof msg.seq !== 'number') return 'stale';
  if (msg.seq <= game.seq) return 'stale';
  if (msg.seq > game.seq + 1) return 'gap';
  game.seq = msg.seq;
  if (msg.clocks) {
    game.clocks = msg.clocks;
    game.clocksAt = now;
  }
  switch (msg.type) {
    case 'round_start':
      startRound(game, msg.round, now);
      break;
    case 'committed':
      if (msg.round === game.round) {
        game.committed[msg.seat] = true;
        game.owesSince[msg.seat] = null;
      }
      break;
    case 'reveal_phase':
      game.round = msg.round;
      game.phase = 'reveal';
      game.committed = { one: true, two: true };
      game.revealDeadline = now + msg.reveal_ms;
      game.owesSince = { one: game.revealed.one ? null : now, two: game.revealed.two ? null : now };
      break;
    case 'revealed':
      if (msg.round === game.round) {
        game.revealed[msg.seat] = true;
        game.owesSince[msg.seat] = null;
      }
      break;
    case 'round_result': {
      const record = msg.record;
      game.rounds.push(record);
      game.positions = [...record.positions];
      game.lastMove = record.outcome?.moved ?? null;
      // The next round begins at once (`round_start` confirms it), unless an element has
      // reached an edge: then `game_over` follows and no pick may be offered meanwhile.
      const edge = game.info.variant.distance;
      if (game.positions.some((p) => Math.abs(p) >= edge)) game.phase = 'resolved';
      else startRound(game, record.round + 1, now);
      // A standing draw offer lapses when the round resolves.
      game.drawOffer = null;
      break;
    }
    case 'draw_offered':
      game.drawOffer = msg.by;
      break;
    case 'draw_declined':
      game.drawOffer = null;
      break;
    case 'presence':
      game.connected[msg.seat] = msg.connected;
      game.awaySince[msg.seat] = msg.connected ? null : now;
      if (msg.grace_ms) game.graceMs = msg.grace_ms;
      break;
    case 'game_over':
      game.result = msg.result;
      game.phase = 'over';
      game.drawOffer = null;
      game.revealDeadline = null;
      break;
    case 'rating_update':
      game.ratings = msg.ratings;
      break;
    default:
      // A numbered event this client does not know: its seq still counts.
      break;
  }
  return 'applied';
}

function startRound(game, round, now) {
  if (game.phase === 'over') return;
  if (round !== game.round || game.phase !== 'commit') {
    game.committed = { one: false, two: false };
    game.revealed = { one: false, two: false };
    game.owesSince = { one: now, two: now };
  }
  game.round = round;
  game.phase = 'commit';
  game.revealDeadline = null;
}

/** Both banks as they stand `now`: the running one counts down from the last event. */
export function clockNow(game, now) {
  const c = game.clocks;
  const elapsed = Math.max(0, now - game.clocksAt);
  const left = (seat) => {
    const ms = seat === 'one' ? c.one_ms : c.two_ms;
    return Math.max(0, c.running?.[seat] && game.phase !== 'over' ? ms - elapsed : ms);
  };
  return { one: left('one'), two: left('two') };
}

/**
 * Round 1's commit window: the ms left (`nowWall` is Date.now()), or null when it does not
 * apply (a later round, both committed, a bank running, the game over). No bank runs
 * meanwhile, so without this the clocks would stand still and say nothing.
 */
export function firstCommitLeft(game, nowWall, windowMs = FIRST_COMMIT_MS) {
  if (game.round !== 1 || game.phase !== 'commit') return null;
  if (game.committed.one && game.committed.two) return null;
  if (game.clocks.running?.one || game.clocks.running?.two) return null;
  const left = game.info.started_at + windowMs - nowWall;
  return Math.max(0, Math.min(windowMs, left));
}

/**
 * "m:ss", or "s.t" under ten seconds; an empty bank is "0:00", not "0.0". A correspondence
 * game's clock (`long`: the time to a deadline days away) reads "2d 5h", or "5h 07m", from an
 * hour up.
 */
export function formatClock(ms, long = false) {
  if (ms <= 0) return '0:00';
  if (long && ms >= 3_600_000) {
    const minutes = Math.floor(ms / 60_000);
    const [days, hours] = [Math.floor(minutes / 1440), Math.floor((minutes % 1440) / 60)];
    return days > 0 ? `${days}d ${hours}h` : `${hours}h ${String(minutes % 60).padStart(2, '0')}m`;
  }
  if (ms < 10_000) return `${Math.floor(ms / 1000)}.${Math.floor((ms % 1000) / 100)}`;
  const s = Math.ceil(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** Whether the viewer (a player) should pick now. */
export function canPick(game) {
  return game.seat !== null && game.phase === 'commit' && !game.committed[game.seat];
}

/**
 * Whether the viewer may claim the win from an absent opponent: null while the opponent is
 * connected (or the viewer is no player); { owes: false } while the opponent owes no move
 * (the server refuses then); else { owes: true, leftMs } until the claim can succeed: the
 * grace period counted from the later of the disconnect and the opponent's turn.
 */
export function claimWin(game, now) {
  if (!game.seat || game.phase === 'over' || game.phase === 'resolved') return null;
  // A correspondence game is decided by its deadlines: the server refuses every claim.
  if (game.info.time_control?.per_phase_ms) return null;
  const opp = otherSeat(game.seat);
  if (game.connected[opp]) return null;
  const owes = game.owesSince[opp];
  if (owes === null) return { owes: false, leftMs: null };
  const from = Math.max(game.awaySince[opp] ?? now, owes);
  return { owes: true, leftMs: Math.max(0, from + game.graceMs - now) };
}

/** Whether a player may still abort: round 1, before both have committed (PROTOCOL.md `abort`). */
export function canAbort(game) {
  return !!game.seat && game.round === 1 && game.phase === 'commit' && !(game.committed.one && game.committed.two);
}

/** Whether the viewer (a player) has committed and owes a reveal. */
export function owesReveal(game) {
  return game.seat !== null && game.phase === 'reveal' && !game.revealed[game.seat];
}

const REASONS = {
  edge: 'an element reached the edge',
  time: 'on time',
  no_reveal: 'no reveal',
  resignation: 'by resignation',
  abandoned: 'the opponent left',
  draw_agreed: 'draw agreed',
  aborted: 'round 1 was not picked in time',
  server_aborted: 'aborted by the server',
  max_rounds: 'the round limit was reached',
};

/** A sentence for the result, from the viewer's side when seated. */
export function describeResult(game) {
  const r = game.result;
  if (!r) return '';
  const reason = REASONS[r.reason] ?? r.reason;
  if (r.reason === 'aborted') return describeAbort(game);
  if (!r.winner) return r.reason === 'draw_agreed' ? 'Draw agreed.' : `Game ${reason}.`;
  const name = game.info.players[r.winner].name;
  if (game.seat) return `${r.winner === game.seat ? 'You won' : 'You lost'} (${reason}).`;
  return `${name} won (${reason}).`;
}

/**
 * Why round 1 ended the game: aborted by a player (`game.abortedBy`: the viewer's seat when
 * they did; 'player' when a live game ended before round 1's window had run out, so the
 * other player did; 'record' when a stored game did), or called off by the window, naming
 * who did not pick when that is known.
 */
function describeAbort(game) {
  const p = game.info.players;
  const by = game.abortedBy;
  if (by && by === game.seat) return 'You aborted the game. No rating changes.';
  if (by === 'player' && game.seat) return `${p[otherSeat(game.seat)].name} aborted the game. No rating changes.`;
  if (by) return 'The game was aborted in round 1. No rating changes.';
  const late = SEATS.filter((s) => !game.committed[s]);
  let who = 'the players did not both pick';
  if (late.length === 1) who = game.seat === late[0] ? 'you did not pick' : `${p[late[0]].name} did not pick`;
  else if (late.length === 2) who = game.seat ? 'neither of you picked' : 'neither player picked';
  return `Game called off: ${who} in time in round 1. No rating changes.`;
}

/**
 * What happened in one resolved round, in words, from the viewer's side when seated:
 * "Round 3: their 1 beat your 4: 1 moves to +2."
 */
export function describeRound(game, record) {
  const p = game.info.players;
  const whose = (seat) => (game.seat ? (seat === game.seat ? 'your' : 'their') : `${p[seat].name}'s`);
  const pick = (seat) => `${whose(seat)} ${record.picks[seat]}`;
  const m = record.outcome?.moved;
  const head = `Round ${record.round}: `;
  if (!m) {
    if (record.picks.one === record.picks.two) {
      const both = game.seat ? 'you both' : 'both';
      return `${head}${both} picked ${record.picks.one}: a tie, nothing moves.`;
    }
    return `${head}${pick('one')} and ${pick('two')} do not beat each other: nothing moves.`;
  }
  const loser = otherSeat(m.by);
  const to = m.to > 0 ? `+${m.to}` : m.to < 0 ? `−${-m.to}` : '0';
  const edge = Math.abs(m.to) >= game.info.variant.distance ? ', the edge' : '';
  return `${head}${pick(m.by)} beat ${pick(loser)}: ${m.element} moves to ${to}${edge}.`;
}

/** Parses a digit typed toward a pick: returns { pick, pending } for the buffer so far. */
export function typedPick(buffer, digit, number) {
  const value = buffer * 10 + digit;
  if (value < 1 || value > number) {
    // Start over with this digit alone.
    if (digit >= 1 && digit <= number) return typedPick(0, digit, number);
    return { pick: null, pending: 0 };
  }
  // Complete when no further digit could still name an element.
  if (value * 10 > number) return { pick: value, pending: 0 };
  return { pick: null, pending: value };
}
