// The browser's game model: snapshots, numbered events, clocks and typed picks.
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  applyEvent, beats, canAbort, canPick, claimWin, clockNow, describeResult, describeRound, FIRST_COMMIT_MS, firstCommitLeft, formatClock,
  fromSnapshot, owesReveal, typedPick, victims,
} from '../src/game.js';

const ID = '6f1c2b4a-8d3e-4f5a-9b7c-0123456789ab';
const CLOCKS = { one_ms: 180000, two_ms: 180000, running: { one: true, two: true } };

function snapshot(overrides = {}) {
  return {
    game: {
      game_id: ID,
      variant: { number: 5, range: 2, distance: 3 },
      time_control: { initial_ms: 180000, increment_ms: 2000, reveal_ms: 15000 },
      rated: true,
      players: { one: { name: 'ann', rating: 1, guest: false }, two: { name: 'bob', rating: 1, guest: false } },
      started_at: 0,
    },
    seq: 1,
    round: 1,
    phase: 'commit',
    committed: { one: false, two: false },
    revealed: { one: false, two: false },
    positions: [0, 0, 0, 0, 0],
    clocks: CLOCKS,
    rounds: [],
    connected: { one: true, two: true },
    spectators: 0,
    draw_offer: null,
    result: null,
    ...overrides,
  };
}

const ev = (seq, type, fields = {}) => ({ type, game_id: ID, seq, clocks: CLOCKS, ...fields });

test('beats follows RULES.md for 5/2', () => {
  const v = { number: 5, range: 2 };
  assert.deepEqual(victims(v, 5), [4, 3]);
  assert.deepEqual(victims(v, 2), [5, 1]);
  assert.deepEqual(victims(v, 1), [5, 4]);
  assert.ok(beats(v, 3, 1));
  assert.ok(!beats(v, 3, 3));
  assert.ok(!beats(v, 1, 3));
});

test('a round plays through commit, reveal and result', () => {
  const g = fromSnapshot(snapshot(), 'one', 0);
  assert.ok(canPick(g));
  assert.equal(applyEvent(g, ev(2, 'committed', { round: 1, seat: 'one' }), 10), 'applied');
  assert.ok(!canPick(g));
  applyEvent(g, ev(3, 'committed', { round: 1, seat: 'two' }), 20);
  applyEvent(g, ev(4, 'reveal_phase', { round: 1, reveal_ms: 15000 }), 30);
  assert.ok(owesReveal(g));
  applyEvent(g, ev(5, 'revealed', { round: 1, seat: 'one' }), 40);
  assert.ok(!owesReveal(g));
  applyEvent(g, ev(6, 'revealed', { round: 1, seat: 'two' }), 50);
  const record = {
    round: 1, picks: { one: 5, two: 2 },
    outcome: { winner: 'two', moved: { element: 2, by: 'two', from: 0, to: -1 } },
    positions: [0, -1, 0, 0, 0],
  };
  applyEvent(g, ev(7, 'round_result', { record }), 60);
  assert.deepEqual(g.positions, [0, -1, 0, 0, 0]);
  assert.equal(g.lastMove.element, 2);
  assert.equal(g.round, 2);
  assert.ok(canPick(g), 'the next round opens');
  applyEvent(g, ev(8, 'round_start', { round: 2 }), 70);
  assert.ok(canPick(g));
  assert.equal(describeRound(g, record), 'Round 1: their 2 beat your 5: 2 moves to −1.');
  g.seat = null;
  assert.equal(describeRound(g, record), "Round 1: bob's 2 beat ann's 5: 2 moves to −1.");
  const tie = { round: 2, picks: { one: 3, two: 3 }, outcome: { winner: null, moved: null }, positions: record.positions };
  assert.equal(describeRound(g, tie), 'Round 2: both picked 3: a tie, nothing moves.');
  g.seat = 'two';
  assert.equal(describeRound(g, tie), 'Round 2: you both picked 3: a tie, nothing moves.');
  const edge = { ...record, round: 3, outcome: { winner: 'two', moved: { element: 2, by: 'two', from: -2, to: -3 } } };
  assert.equal(describeRound(g, edge), 'Round 3: your 2 beat their 5: 2 moves to −3, the edge.');
});

test('the final round offers no pick before game_over', () => {
  const g = fromSnapshot(snapshot({ positions: [0, -2, 0, 0, 0], round: 3 }), 'two', 0);
  const record = {
    round: 3, picks: { one: 1, two: 2 },
    outcome: { winner: 'two', moved: { element: 2, by: 'two', from: -2, to: -3 } },
    positions: [0, -3, 0, 0, 0],
  };
  applyEvent(g, ev(2, 'round_result', { record }), 0);
  assert.ok(!canPick(g));
  applyEvent(g, ev(3, 'game_over', { result: { winner: 'two', reason: 'edge' }, rated: true }), 0);
  assert.equal(g.phase, 'over');
  applyEvent(g, { type: 'rating_update', game_id: ID, seq: 4, ratings: { one: { before: 1, after: 1 }, two: { before: 1, after: 1.5 } } }, 0);
  assert.equal(g.ratings.two.after, 1.5);
});

test('stale events are ignored and gaps detected', () => {
  const g = fromSnapshot(snapshot({ seq: 5 }), null, 0);
  assert.equal(applyEvent(g, ev(5, 'committed', { round: 1, seat: 'one' }), 0), 'stale');
  assert.equal(g.committed.one, false);
  assert.equal(applyEvent(g, ev(7, 'committed', { round: 1, seat: 'one' }), 0), 'gap');
  assert.equal(applyEvent(g, { type: 'spectators', game_id: ID, count: 3 }, 0), 'applied');
  assert.equal(g.spectators, 3);
});

test('running clocks count down locally; stopped ones do not', () => {
  const g = fromSnapshot(snapshot({ clocks: { one_ms: 5000, two_ms: 9000, running: { one: true, two: false } } }), null, 1000);
  const now = clockNow(g, 3500);
  assert.equal(now.one, 2500);
  assert.equal(now.two, 9000);
  assert.equal(clockNow(g, 99999).one, 0);
  assert.equal(formatClock(180000), '3:00');
  assert.equal(formatClock(61500), '1:02');
  assert.equal(formatClock(9450), '9.4');
  assert.equal(formatClock(99), '0.0', 'under a tenth left is still time');
  assert.equal(formatClock(0), '0:00', 'an empty bank');
});

test('digits typed toward a pick', () => {
  assert.deepEqual(typedPick(0, 3, 5), { pick: 3, pending: 0 });
  assert.deepEqual(typedPick(0, 7, 5), { pick: null, pending: 0 });
  assert.deepEqual(typedPick(0, 1, 12), { pick: null, pending: 1 });
  assert.deepEqual(typedPick(1, 2, 12), { pick: 12, pending: 0 });
  assert.deepEqual(typedPick(1, 0, 12), { pick: 10, pending: 0 });
  assert.deepEqual(typedPick(0, 2, 12), { pick: 2, pending: 0 });
  assert.deepEqual(typedPick(1, 5, 12), { pick: 5, pending: 0 }, 'an impossible pair starts over');
});

test("round 1's commit window counts down from the start while no bank runs", () => {
  const stopped = { ...CLOCKS, running: { one: false, two: false } };
  const game = fromSnapshot(snapshot({ clocks: stopped }), 'one', 0);
  assert.equal(firstCommitLeft(game, 4_200), FIRST_COMMIT_MS - 4_200);
  assert.equal(firstCommitLeft(game, 40_000), 0);
  // A wall clock behind the server's never shows more than the window.
  assert.equal(firstCommitLeft(game, -5_000), FIRST_COMMIT_MS);
  game.committed.one = true;
  assert.equal(firstCommitLeft(game, 1_000), FIRST_COMMIT_MS - 1_000, 'one commit is not enough');
  game.committed.two = true;
  assert.equal(firstCommitLeft(game, 1_000), null);
  const later = fromSnapshot(snapshot({ round: 2, clocks: stopped }), 'one', 0);
  assert.equal(firstCommitLeft(later, 1_000), null);
  const running = fromSnapshot(snapshot(), 'one', 0);
  assert.equal(firstCommitLeft(running, 1_000), null, 'a running bank means the window is over');
});

test('a game called off in round 1 says who did not pick', () => {
  const aborted = { winner: null, reason: 'aborted' };
  const game = fromSnapshot(snapshot({ phase: 'over', result: aborted, committed: { one: true, two: false } }), 'one', 0);
  assert.equal(describeResult(game), 'Game called off: bob did not pick in time in round 1. No rating changes.');
  game.seat = 'two';
  assert.match(describeResult(game), /you did not pick in time/);
  game.seat = null;
  game.committed.one = false;
  assert.match(describeResult(game), /neither player picked/);
});

test('a player may abort until both have committed in round 1, and the result says who did', () => {
  const game = fromSnapshot(snapshot({ committed: { one: true, two: false } }), 'one', 0);
  assert.equal(canAbort(game), true, 'one commitment is not both');
  game.committed.two = true;
  assert.equal(canAbort(game), false);
  assert.equal(canAbort(fromSnapshot(snapshot({ phase: 'reveal' }), 'one', 0)), false);
  assert.equal(canAbort(fromSnapshot(snapshot({ round: 2 }), 'one', 0)), false);
  assert.equal(canAbort(fromSnapshot(snapshot(), null, 0)), false, 'a spectator aborts nothing');

  const over = fromSnapshot(snapshot({ phase: 'over', result: { winner: null, reason: 'aborted' } }), 'one', 0);
  over.abortedBy = 'one';
  assert.equal(describeResult(over), 'You aborted the game. No rating changes.');
  over.abortedBy = 'player';
  assert.equal(describeResult(over), 'bob aborted the game. No rating changes.');
  over.seat = null;
  assert.equal(describeResult(over), 'The game was aborted in round 1. No rating changes.');
});

test('a win can be claimed a grace period after the opponent left, counted from their turn', () => {
  const game = fromSnapshot(snapshot({ seq: 1, round: 2 }), 'one', 0);
  assert.equal(claimWin(game, 0), null, 'the opponent is here');
  applyEvent(game, ev(2, 'presence', { seat: 'two', connected: false, grace_ms: 30_000 }), 1_000);
  assert.deepEqual(claimWin(game, 1_000), { owes: true, leftMs: 30_000 });
  assert.deepEqual(claimWin(game, 31_000), { owes: true, leftMs: 0 });
  // They had committed before leaving: nothing is held up until the reveal phase.
  const away = fromSnapshot(snapshot({ seq: 1, round: 2 }), 'one', 0);
  applyEvent(away, ev(2, 'committed', { round: 2, seat: 'two' }), 500);
  applyEvent(away, ev(3, 'presence', { seat: 'two', connected: false, grace_ms: 30_000 }), 1_000);
  assert.deepEqual(claimWin(away, 5_000), { owes: false, leftMs: null });
  applyEvent(away, ev(4, 'committed', { round: 2, seat: 'one' }), 9_000);
  applyEvent(away, ev(5, 'reveal_phase', { round: 2, reveal_ms: 15_000 }), 9_000);
  assert.deepEqual(claimWin(away, 10_000), { owes: true, leftMs: 29_000 }, 'counted from their turn');
  applyEvent(away, ev(6, 'presence', { seat: 'two', connected: true, grace_ms: 30_000 }), 11_000);
  assert.equal(claimWin(away, 11_000), null);
});

test('a correspondence game shows days and hours, and offers no claim', () => {
  assert.equal(formatClock(2 * 86_400_000 + 5 * 3_600_000 + 59_000, true), '2d 5h');
  assert.equal(formatClock(5 * 3_600_000 + 7 * 60_000 + 30_000, true), '5h 07m');
  assert.equal(formatClock(59 * 60_000, true), '59:00', 'under an hour reads as a live clock');
  assert.equal(formatClock(2 * 3_600_000), '120:00', 'a live bank keeps its minutes');
  const corr = snapshot({ seq: 1, round: 2 });
  corr.game.time_control = { initial_ms: 0, increment_ms: 0, reveal_ms: 0, per_phase_ms: 86_400_000 };
  const game = fromSnapshot(corr, 'one', 0);
  applyEvent(game, ev(2, 'presence', { seat: 'two', connected: false, grace_ms: 0 }), 1_000);
  assert.equal(claimWin(game, 1_000_000), null);
});

test('a draw offer lapses when the round resolves', () => {
  const game = fromSnapshot(snapshot({ seq: 1, draw_offer: 'two' }), 'one', 0);
  applyEvent(game, ev(2, 'round_result', {
    record: { round: 1, picks: { one: 1, two: 1 }, outcome: { winner: null, moved: null }, positions: [0, 0, 0, 0, 0] },
  }), 0);
  assert.equal(game.drawOffer, null);
});
