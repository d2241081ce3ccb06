// Full games against the real server (server.ts starts it): a live game to its end, a live
// game resumed after a dropped connection, a correspondence game played a visit at a time
// by short-lived clients, aborts and rematches, a player in several games at once, and
// requests paced to a server's message limit, and a stalled server found out by the
// heartbeat.

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { FileNonceStore } from '../src/file-store.js';
import WebSocketImpl from 'ws';

import {
  Client, ClientClosed, RequestTimeout, ServerError, type ClientOptions, type Game, type GameMessage, type Preset,
  type Push, type ServerMessage, type Variant, type WebSocketClass,
} from '../src/index.js';
import { httpUrl } from '../src/client.js';
import { MAX_CORRESPONDENCE_GAMES, startServer, type TestServer } from './server.js';

// Each test has a pool of its own (a pool is a variant, preset and rated flag), so that no
// test's player is paired with another test's.
const LIVE: Variant = { number: 5, range: 2, distance: 3 };
const RESUMED: Variant = { number: 7, range: 3, distance: 2 };
const CORRESPONDENCE: Variant = { number: 3, range: 1, distance: 2 };
const REMATCHED: Variant = { number: 9, range: 4, distance: 2 };
const MANY_LIVE: Variant = { number: 11, range: 5, distance: 2 };
const MANY_CORRESPONDENCE: Variant = { number: 13, range: 6, distance: 2 };
const ENDED_AWAY: Variant = { number: 15, range: 7, distance: 2 };
const STREAMLESS: Variant = { number: 17, range: 8, distance: 2 };
const TEST_TIMEOUT_MS = 60_000;

let server: TestServer;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

const randomPick = (game: Game) => 1 + Math.floor(Math.random() * game.variant.number);

/** Two guests in one pool, and the game it pairs them in. */
async function paired(variant: Variant, preset: Preset, options: ClientOptions = {}) {
  const a = await Client.connect(server.url, options);
  const b = await Client.connect(server.url, options);
  await a.guest();
  await b.guest();
  await a.joinPool(variant, preset);
  await b.joinPool(variant, preset);
  const [gameA, gameB] = await Promise.all([a.nextGame(), b.nextGame()]);
  assert.equal(gameA.gameId, gameB.gameId);
  assert.deepEqual(new Set([gameA.seat, gameB.seat]), new Set(['one', 'two']));
  return { a, b, gameA, gameB };
}

test('a live game is played to its end, one seat escrowing, and watched', { timeout: TEST_TIMEOUT_MS }, async () => {
  const { a, b, gameA, gameB } = await paired(LIVE, 'blitz');
  // A spectator needs no account. It asks for no batches: every frame is one message.
  const spectator = await Client.connect(server.url, { batch: false });
  const watched = await spectator.watch(gameA.gameId);
  assert.equal(watched.seat, null);
  // One seat escrows its reveals with its commits (the server reveals for it), the other
  // reveals itself.
  const [resultA, resultB] = await Promise.all([gameA.play(randomPick), gameB.play(randomPick, { escrow: true })]);
  assert.deepEqual(resultA, resultB);
  assert.equal(resultA.reason, 'edge');
  assert.notEqual(resultA.winner, null);
  // The winner's element stands on its edge: +distance for one, -distance for two.
  assert.ok(gameA.positions.includes(resultA.winner === 'one' ? LIVE.distance : -LIVE.distance));
  assert.deepEqual(gameA.history, gameB.history);
  assert.ok(gameA.history.length >= LIVE.distance);
  assert.equal(gameA.ratedResult, false, 'guests play unrated');
  while (!watched.over) await watched.changed();
  assert.deepEqual(watched.result, resultA);
  assert.deepEqual(watched.history, gameA.history);
  // The players asked for batches: a move's reply came in one frame with the events it
  // caused.
  assert.ok(a.batchesReceived > 0 && b.batchesReceived > 0);
  assert.equal(spectator.batchesReceived, 0);
  await spectator.close();
  await a.close();
  await b.close();
});

test('a dropped connection reconnects, resumes and reveals what it committed', { timeout: TEST_TIMEOUT_MS }, async () => {
  const { a, b, gameA, gameB } = await paired(RESUMED, 'blitz', { backoffMs: [50, 1000] });
  const seat = gameA.seat!;
  const committed = new Map<number, number>();
  const rememberedPick = (game: Game) => {
    const pick = randomPick(game);
    committed.set(game.round, pick);
    return pick;
  };
  /** Until `game`'s player hears that the opponent's connection dropped (or came back). */
  const untilPresence = async (game: Game, connected: boolean) => {
    for (;;) {
      const event: GameMessage = await game.nextEvent();
      if (event.type === 'presence' && event.seat !== game.seat && event.connected === connected) return;
    }
  };
  const playAndDropOnce = async () => {
    let dropRound = 0;
    while (!gameA.over) {
      await gameA.act(rememberedPick);
      const s = gameA.snapshot;
      if (dropRound === 0 && s && s.committed[seat] && !s.revealed[seat]) {
        // Committed, not revealed: the pick must come back from the nonce store.
        dropRound = s.round;
        a.dropConnection();
        await untilPresence(gameB, false);
      }
      if (!gameA.over) await gameA.changed();
    }
    assert.notEqual(dropRound, 0);
    assert.equal(gameA.history[dropRound - 1].picks[seat], committed.get(dropRound));
  };
  await Promise.all([playAndDropOnce(), gameB.play(randomPick)]);
  assert.equal(a.reconnects, 1);
  assert.deepEqual(gameA.result, gameB.result);
  assert.equal(gameA.result?.reason, 'edge');
  assert.deepEqual(gameA.history, gameB.history);
  await a.close();
  await b.close();
});

test('a correspondence game is played in visits that keep their nonces on disk', { timeout: TEST_TIMEOUT_MS }, async () => {
  const { a, b, gameA } = await paired(CORRESPONDENCE, 'corr-1d');
  assert.equal(gameA.info?.time_control.per_phase_ms, 86_400_000);
  const dir = mkdtempSync(join(tmpdir(), 'elementals-visits-'));
  // Element 2 beats 1 (N=3, R=1): the player picking 2 wins every round.
  const players = [
    { token: a.session!.token, store: new FileNonceStore(join(dir, 'a')), pick: 2 },
    { token: b.session!.token, store: new FileNonceStore(join(dir, 'b')), pick: 1 },
  ];
  const winner = gameA.seat;
  const gameId = gameA.gameId;
  await a.close();
  await b.close();
  const moves: string[] = [];
  let result = null;
  while (result === null) {
    for (const { token, store, pick } of players) {
      const visitor = await Client.connect(server.url, { nonces: store });
      try {
        const auth = await visitor.resume(token);
        if (auth.game_id == null) continue;
        const game = await visitor.nextGame();
        assert.equal(game.gameId, gameId);
        assert.ok(game.ready);
        const [mine] = await visitor.myGames();
        for (const owed of mine.owed) {
          assert.notEqual(owed.deadline, null);
          const left = owed.deadline! - Date.now();
          assert.ok(left > 0 && left <= 86_400_000, `a day's deadline, ${left} ms`);
        }
        const action = game.owesCommit ? 'commit' : game.owesReveal ? 'reveal' : null;
        const round = game.round;
        if (await game.act(() => pick)) {
          assert.notEqual(action, null);
          moves.push(action!);
          await settled(game, action!, round);
        }
        if (game.over) {
          result = game.result;
          break;
        }
      } finally {
        await visitor.close();
      }
    }
  }
  assert.deepEqual(result, { winner, reason: 'edge' });
  // Two rounds, each a commit and a reveal per seat, every reveal made by a later client
  // than its commit: the nonces came back from the files.
  assert.deepEqual(moves, ['commit', 'commit', 'reveal', 'reveal', 'commit', 'commit', 'reveal', 'reveal']);
});

/** Until the server has shown this seat's move: its `committed`, or its `revealed` (and, if
 * it was the round's last reveal, the round's end or the game's). */
async function settled(game: Game, action: string, round: number): Promise<void> {
  const seat = game.seat!;
  const other = seat === 'one' ? 'two' : 'one';
  while (!game.over) {
    const s = game.snapshot!;
    if (s.round > round) return;
    if (action === 'commit' && (s.committed[seat] || s.phase !== 'commit')) return;
    if (action === 'reveal' && s.revealed[seat] && !s.revealed[other]) return;
    await game.changed();
  }
}

test('a superseded client stops and does not reconnect', { timeout: TEST_TIMEOUT_MS }, async () => {
  const first = await Client.connect(server.url, { backoffMs: [50, 1000] });
  const auth = await first.guest();
  const second = await Client.connect(server.url);
  await second.resume(auth.token);
  const notice = await first.nextPush();
  assert.equal(notice.type, 'notice');
  assert.equal(notice.type === 'notice' && notice.code, 'superseded');
  // Reconnecting would supersede the newer connection in turn: the client stops.
  await assert.rejects(first.nextGame(), ClientClosed);
  await assert.rejects(first.ping(), ClientClosed);
  assert.equal(first.reconnects, 0);
  assert.ok((await second.ping()) >= 0);
  await second.close();
});

/** The next push of this type, those before it skipped. */
async function nextPushOf<K extends Push['type']>(client: Client, type: K): Promise<Extract<Push, { type: K }>> {
  for (;;) {
    const push = await client.nextPush();
    if (push.type === type) return push as Extract<Push, { type: K }>;
  }
}

async function untilOver(game: Game): Promise<void> {
  while (!game.over) await game.changed();
}

/** Until the game's first snapshot (which follows `game_start`) has come. */
async function untilReady(game: Game): Promise<void> {
  while (!game.ready) await game.changed();
}

/** Runs `work`, which must fail with a `ServerError` of this code. */
async function refused(work: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(work, (err) => err instanceof ServerError && err.code === code);
}

test('an abort, a declined rematch and an accepted one', { timeout: TEST_TIMEOUT_MS }, async () => {
  const { a, b, gameA, gameB } = await paired(REMATCHED, 'blitz');
  await untilReady(gameA);
  // Nobody has committed: the game can be called off.
  await gameA.abort();
  await Promise.all([untilOver(gameA), untilOver(gameB)]);
  assert.deepEqual(gameA.result, { winner: null, reason: 'aborted' });
  assert.deepEqual(gameB.result, gameA.result);
  assert.equal(gameA.ratedResult, false);

  const first = gameA.gameId;
  await a.offerRematch(first);
  assert.deepEqual(await nextPushOf(b, 'rematch_offered'), { type: 'rematch_offered', game_id: first, by: gameA.seat });
  await b.declineRematch(first);
  assert.deepEqual(await nextPushOf(a, 'rematch_declined'), { type: 'rematch_declined', game_id: first, by: gameB.seat });
  await refused(b.declineRematch(first), 'no_rematch');

  // Offered again, and accepted: the new game has the seats swapped.
  await a.offerRematch(first);
  await nextPushOf(b, 'rematch_offered');
  await b.offerRematch(first);
  const [againA, againB] = await Promise.all([a.nextGame(), b.nextGame()]);
  assert.equal(againA.gameId, againB.gameId);
  assert.notEqual(againA.gameId, first);
  assert.deepEqual([againA.seat, againB.seat], [gameB.seat, gameA.seat]);
  await Promise.all([untilReady(againA), untilReady(againB)]);
  // Once both have committed in round 1, it can no longer be aborted.
  await againA.commit(1);
  await againB.commit(2);
  await refused(againB.abort(), 'abort_not_allowed');
  await againA.resign();
  await Promise.all([untilOver(againA), untilOver(againB)]);
  assert.deepEqual(againA.result, { winner: againB.seat, reason: 'resignation' });
  await a.close();
  await b.close();
});

test('one connection plays a live game and correspondence games at once', { timeout: TEST_TIMEOUT_MS }, async () => {
  const { a, b, gameA: liveA, gameB: liveB } = await paired(MANY_LIVE, 'blitz');
  const gamesB = [liveB];
  for (let i = 0; i < MAX_CORRESPONDENCE_GAMES; i++) {
    await a.joinPool(MANY_CORRESPONDENCE, 'corr-1d');
    await b.joinPool(MANY_CORRESPONDENCE, 'corr-1d');
    const [corrA, corrB] = await Promise.all([a.nextGame(), b.nextGame()]);
    assert.equal(corrA.gameId, corrB.gameId);
    gamesB.push(corrB);
  }
  await refused(a.joinPool(MANY_CORRESPONDENCE, 'corr-1d'), 'too_many_games');

  // A new connection signs in with the token: every game comes back to it, ready.
  const a2 = await Client.connect(server.url);
  const auth = await a2.resume(a.session!.token);
  const ids = gamesB.map((game) => game.gameId).sort();
  assert.equal(auth.game_id, liveA.gameId);
  assert.equal(auth.games?.[0], liveA.gameId);
  assert.deepEqual([...(auth.games ?? [])].sort(), ids);
  const gamesA2: Game[] = [];
  for (const _ of ids) gamesA2.push(await a2.nextGame());
  assert.deepEqual(gamesA2.map((game) => game.gameId).sort(), ids);
  assert.deepEqual(a2.games.map((game) => game.gameId).sort(), ids);
  assert.ok(gamesA2.every((game) => game.ready));
  await assert.rejects(a.nextGame(), ClientClosed);

  // All three are played at once, their moves interleaved on the two connections.
  const results = await Promise.all([...gamesA2, ...gamesB].map((game) => game.play(randomPick)));
  assert.ok(results.every((result) => result.reason === 'edge'));
  for (const game of gamesB) assert.deepEqual(a2.game(game.gameId)?.result, game.result);
  await a2.close();
  await b.close();
});

test('a game that ends while the client is away ends with its record', { timeout: TEST_TIMEOUT_MS }, async () => {
  // A reconnects a second or two after its drop: by then B has resigned.
  const { a, b, gameA, gameB } = await paired(ENDED_AWAY, 'blitz', { backoffMs: [2000, 2000] });
  await Promise.all([untilReady(gameA), untilReady(gameB)]);
  a.dropConnection();
  await gameB.resign();
  await untilOver(gameB);
  // A hears no game_over: after its resume the game is not among its seats, its sync
  // answers game_over, and the result comes from the game's record.
  const result = await gameA.play(randomPick);
  assert.equal(a.reconnects, 1);
  assert.deepEqual(result, { winner: gameA.seat, reason: 'resignation' });
  assert.deepEqual(gameB.result, result);
  assert.ok(gameA.endedAway);
  await a.close();
  await b.close();
});

test('the HTTP server behind a WebSocket URL', () => {
  assert.equal(httpUrl('ws://127.0.0.1:7878/ws', '/api/games/x'), 'http://127.0.0.1:7878/api/games/x');
  assert.equal(httpUrl('wss://example.org/elementals/ws', '/api/games/x'), 'https://example.org/elementals/api/games/x');
  assert.equal(httpUrl('wss://example.org/', '/api/games/x'), 'https://example.org/api/games/x');
});

test('requests are paced to the server\'s message limit', { timeout: TEST_TIMEOUT_MS }, async () => {
  // A server allowing 10 messages a second, in bursts of 20: 40 pings sent at once would
  // have some refused (an error with no id, the ping never answered).
  const slow = await startServer(10);
  try {
    const client = await Client.connect(slow.url, { requestTimeoutMs: 10_000 });
    assert.equal(client.welcome?.limits.max_messages_per_s, 10);
    const started = Date.now();
    const rtts = await Promise.all(Array.from({ length: 40 }, () => client.ping()));
    assert.equal(rtts.length, 40);
    // The first ten go at once, the other thirty at ten a second.
    assert.ok(Date.now() - started >= 2_500, `40 pings in ${Date.now() - started} ms`);
    await client.close();
  } finally {
    await slow.stop();
  }
});

test('a stalled server: a request times out naming its id, the heartbeat drops the socket, the client comes back', { timeout: TEST_TIMEOUT_MS }, async () => {
  const stalled = await startServer();
  const seen: ServerMessage[] = [];
  let signedIn = 0;
  let resumed!: () => void;
  const resumedOnce = new Promise<void>((resolve) => { resumed = resolve; });
  let closed!: (code: number) => void;
  const closedOnce = new Promise<number>((resolve) => { closed = resolve; });
  let ponged!: () => void;
  const pongedOnce = new Promise<void>((resolve) => { ponged = resolve; });
  const client = await Client.connect(stalled.url, {
    protocols: ['elementals.v1'],
    requestTimeoutMs: 500,
    heartbeat: { quietMs: 200, silentMs: 1500 },
    backoffMs: [50, 200],
    onMessage: (msg) => {
      seen.push(msg);
      if (msg.type === 'authenticated' && ++signedIn === 2) resumed();
      if (msg.type === 'pong') ponged();
    },
    onClose: (code) => closed(code),
  });
  try {
    const auth = await client.guest();
    assert.deepEqual(seen.map((msg) => msg.type), ['welcome', 'authenticated']);
    assert.ok(client.isOpen);
    // The test sends no ping until the stall: a pong answers the heartbeat's, sent because
    // the server was quiet.
    await pongedOnce;

    await stalled.stall();
    const timedOut = await client.ping().then(() => null, (err: unknown) => err);
    assert.ok(timedOut instanceof RequestTimeout, String(timedOut));
    assert.equal(typeof timedOut.id, 'number');
    // Silent past silentMs: the socket is dropped (1006, no closing handshake).
    assert.equal(await closedOnce, 1006);
    assert.equal(client.isOpen, false);

    stalled.unstall();
    await resumedOnce;
    assert.ok((await client.ping()) >= 0);
    assert.ok(client.isOpen);
    assert.equal(client.reconnects, 1);
    assert.equal(client.session?.account.name, auth.account.name);
  } finally {
    await client.close();
    await stalled.stop();
  }
});

test('a browser\'s socket (no terminate) given up by the heartbeat reports its close at once', { timeout: TEST_TIMEOUT_MS }, async () => {
  // The `ws` package without `terminate`, as a browser's WebSocket: its close would wait for
  // a closing handshake the stalled server never answers.
  const BrowserLike = function (url: string, protocols?: string | string[]) {
    const ws = new WebSocketImpl(url, protocols);
    (ws as { terminate?: unknown }).terminate = undefined;
    return ws;
  } as unknown as WebSocketClass;
  const stalled = await startServer();
  let closed!: (code: number) => void;
  const closedOnce = new Promise<number>((resolve) => { closed = resolve; });
  const client = await Client.connect(stalled.url, {
    WebSocket: BrowserLike, reconnect: false, heartbeat: { quietMs: 200, silentMs: 1000 }, onClose: (code) => closed(code),
  });
  try {
    await client.guest();
    await stalled.stall();
    assert.equal(await closedOnce, 1006);
    assert.equal(client.isOpen, false);
    await assert.rejects(client.ping(), ClientClosed);
  } finally {
    await client.close();
    await stalled.stop();
  }
});

test('without streams, only a reader already waiting gets a message', { timeout: TEST_TIMEOUT_MS }, async () => {
  const seen: string[] = [];
  const { a, b, gameA, gameB } = await paired(STREAMLESS, 'blitz', { streams: false, onMessage: (msg) => { seen.push(msg.type); } });
  const [resultA] = await Promise.all([gameA.play(randomPick), gameB.play(randomPick)]);
  assert.equal(resultA.reason, 'edge');
  assert.ok(seen.includes('round_result') && seen.includes('game_over'));
  // Nothing was kept for a reader that was not waiting: the events, and the game_start push.
  const empty = Symbol('empty');
  assert.equal(await Promise.race([gameA.nextEvent(), Promise.resolve(empty)]), empty);
  assert.equal(await Promise.race([a.nextPush(), Promise.resolve(empty)]), empty);
  await a.close();
  await b.close();
});
