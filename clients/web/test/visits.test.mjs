// End to end: playing over several visits. A pick committed in one tab is kept in
// localStorage and revealed by a new tab after the first was closed; with the escrow
// setting on, the pick and nonce go with the commitment and no reveal is sent; and the
// server's `your_move` push keeps the "My games" badge and the tab title up to date.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { decode } from '@msgpack/msgpack';

import { newPlayer } from '../testkit/browser.mjs';
import { harness } from '../testkit/harness.mjs';
import { joinPool, pick, roundShown, seatOf, signUp, waitForGame } from '../testkit/scenario.mjs';

const STEP = { timeout: 30_000 };
const h = harness();
let names = 0;

/** Two new people, signed up (`prepare(person)` runs after each signs up), paired in blitz. */
async function newGame(prepare = async () => {}) {
  const [a, b] = await Promise.all([0, 1].map(() => newPlayer(h.browser, h.server.url)));
  for (const [person, prefix] of [[a, 'vera'], [b, 'walt']]) {
    names += 1;
    person.name = `${prefix}-${names}-${process.pid % 1000}`;
    await signUp(person.page, person.name);
    await prepare(person);
  }
  await joinPool(a.page, 'blitz', '5/2/3');
  await a.page.waitForSelector('.queue:not([hidden])', STEP);
  await joinPool(b.page, 'blitz', '5/2/3');
  const gameId = await waitForGame(a.page);
  await waitForGame(b.page);
  const bySeat = { [await seatOf(a.page)]: a, [await seatOf(b.page)]: b };
  return { a, b, bySeat, gameId };
}

/** The picks kept in this page's localStorage, by key. */
function keptPicks(page) {
  return page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('elementals.pick.')));
}

/** The pick a page's list of rounds shows for `seat` in `round`. */
function shownPick(page, round, seat) {
  return page.textContent(`.rounds .round-item[data-round="${round}"] .r-pick.seat-${seat}`);
}

/** Every message this page sends on its WebSockets, decoded, from now on. */
function sentMessages(page) {
  const sent = [];
  page.on('websocket', (ws) => ws.on('framesent', ({ payload }) => {
    if (typeof payload !== 'string') sent.push(decode(payload));
  }));
  return sent;
}

describe('playing over several visits', { timeout: 600_000 }, () => {
  after(() => h.tearDown());

  test('a pick committed in a tab that is closed is revealed by the next tab', async () => {
    await h.setUp();
    const { a, b, bySeat, gameId } = await newGame();
    await h.withDiagnostics({ a, b }, async () => {
      const [one, two] = [bySeat.one, bySeat.two];
      await pick(one.page, 1, 3);
      await one.page.waitForSelector('.player[data-seat="one"] .seat-state.done', STEP);
      assert.deepEqual(await keptPicks(one.page), [`elementals.pick.${gameId}.1`], 'kept before the reveal');
      // The tab goes (sessionStorage would go with it); the reveal phase opens meanwhile.
      await one.page.close();
      await pick(two.page, 1, 2);
      // A new tab of the same browser signs in from the kept token, is back in its game and
      // reveals the kept pick: the round resolves with it.
      const again = await one.context.newPage();
      await again.goto('/#/lobby');
      await again.waitForSelector('.game.playing', STEP);
      await roundShown(again, 1);
      assert.equal(await shownPick(again, 1, 'one'), '3');
      assert.equal(await shownPick(two.page, 1, 'one'), '3');
      // Revealed: no longer kept.
      await again.waitForFunction(() => !Object.keys(localStorage).some((k) => k.startsWith('elementals.pick.')), null, STEP);
    });
    await Promise.all([a.context.close(), b.context.close()]);
  });

  test('with escrow on, the pick and nonce go with the commitment and no reveal follows', async () => {
    await h.setUp();
    const { a, b, bySeat, gameId } = await newGame();
    await h.withDiagnostics({ a, b }, async () => {
      const { one, two } = bySeat;
      // The setting is on "My games", with its price said plainly.
      await one.page.getByRole('link', { name: /My games/ }).click();
      const box = one.page.getByLabel('Reveal for me (escrow)');
      await box.waitFor(STEP);
      assert.match(await one.page.textContent('#escrow-help'), /the server sees your pick as soon as you commit/);
      await box.check();
      // What the page sends from its next connection on.
      const sent = sentMessages(one.page);
      await one.page.goto(`/#/game/${gameId}`);
      await one.page.reload();
      await one.page.waitForSelector('.game.playing', STEP);
      await pick(one.page, 1, 4);
      await pick(two.page, 1, 1);
      await roundShown(one.page, 1);
      assert.equal(await shownPick(two.page, 1, 'one'), '4');
      const commit = sent.find((m) => m.type === 'commit');
      assert.equal(commit.pick, 4);
      assert.equal(commit.nonce.length, 32);
      assert.deepEqual(sent.filter((m) => m.type === 'reveal'), [], 'the server revealed');
      // Turned off again, the next commit keeps its pick here and reveals it.
      await one.page.goto('/#/games');
      await one.page.getByLabel('Reveal for me (escrow)').uncheck();
      await one.page.goto(`/#/game/${gameId}`);
      await pick(one.page, 2, 2);
      await pick(two.page, 2, 1);
      await roundShown(one.page, 2);
      const second = sent.filter((m) => m.type === 'commit')[1];
      assert.equal(second.pick, undefined);
      assert.equal(sent.filter((m) => m.type === 'reveal').length, 1);
    });
    await Promise.all([a.context.close(), b.context.close()]);
  });

  test('your_move brings the "My games" badge back while the player reads another page', async () => {
    await h.setUp();
    const { a, b, bySeat, gameId } = await newGame(async ({ page }) => {
      await page.evaluate(() => {
        window.yourMoves = [];
        window.elementals.conn.addEventListener('push', (e) => {
          if (e.detail.type === 'your_move') window.yourMoves.push(e.detail);
        });
      });
    });
    await h.withDiagnostics({ a, b }, async () => {
      const { one, two } = bySeat;
      const badge = one.page.locator('.my-games-link .badge');
      await pick(one.page, 1, 5);
      await one.page.waitForSelector('.my-games-link .badge[hidden]', { ...STEP, state: 'attached' });
      // Away from the game, on the leaderboard: the next round's move is owed.
      await one.page.getByRole('link', { name: 'Leaderboard' }).click();
      await one.page.waitForSelector('.leaderboard', STEP);
      await pick(two.page, 1, 2);
      await roundShown(two.page, 1);
      await one.page.waitForFunction(() => window.yourMoves.some((m) => m.round === 2), null, STEP);
      await one.page.waitForSelector('.my-games-link .badge:not([hidden])', STEP);
      assert.equal(await badge.textContent(), '1');
      await one.page.waitForFunction(() => document.title.startsWith('(1) '), null, STEP);
      const told = await one.page.evaluate(() => window.yourMoves.map((m) => [m.game_id, m.round, m.action, m.seat, typeof m.deadline]));
      assert.deepEqual(told.filter((t) => t[1] === 2), [[gameId, 2, 'commit', 'one', 'number']]);
      assert.deepEqual(told.filter((t) => t[1] === 1 && t[2] === 'reveal'), [[gameId, 1, 'reveal', 'one', 'number']]);
    });
    await Promise.all([a.context.close(), b.context.close()]);
  });
});
