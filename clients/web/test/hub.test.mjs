// The correspondence player's hub: deadlines dated when more than 12 h away, the order of
// My games (the player's move first, then by deadline), and a correspondence game's page
// with its deadline, the escrow setting and whether escrow is on, on a phone; a live game
// started beside a correspondence game, and switching between them.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { decode } from '@msgpack/msgpack';

import { fmtDeadline } from '../src/dom.js';
import { hubOrder } from '../src/my-games.js';
import { axeViolations, newPlayer, offScreen } from '../testkit/browser.mjs';
import { harness } from '../testkit/harness.mjs';
import { joinPool, pick, roundShown, signUp, waitForGame } from '../testkit/scenario.mjs';

const STEP = { timeout: 30_000 };
const HOUR = 3_600_000;

test('a deadline more than 12 h away says its date; a nearer one its time alone', () => {
  const now = Date.UTC(2026, 11, 3, 11, 0, 0);
  const near = now + 12 * HOUR;
  assert.equal(fmtDeadline(near, now), new Date(near).toLocaleTimeString());
  const far = now + 12 * HOUR + 60_000;
  const text = fmtDeadline(far, now);
  assert.notEqual(text, new Date(far).toLocaleTimeString());
  assert.ok(text.includes(new Date(far).toLocaleDateString(undefined, { month: 'short', day: 'numeric' })), text);
});

test("My games lists the games owing the player's move first, then each by its nearest deadline", () => {
  const game = (id, seat, owed) => ({ game_id: id, seat, owed });
  const games = [
    game('held', 'one', [{ seat: 'one', action: 'commit', deadline: null }]),
    game('theirs-soon', 'one', [{ seat: 'two', action: 'commit', deadline: 1_000 }]),
    game('mine-late', 'two', [{ seat: 'two', action: 'reveal', deadline: 9_000 }]),
    game('resolving', 'one', []),
    game('mine-soon', 'one', [{ seat: 'two', action: 'commit', deadline: 500 }, { seat: 'one', action: 'commit', deadline: 2_000 }]),
    game('theirs-late', 'two', [{ seat: 'one', action: 'commit', deadline: 5_000 }]),
  ];
  assert.deepEqual(hubOrder(games).map((g) => g.game_id), ['mine-soon', 'mine-late', 'held', 'theirs-soon', 'theirs-late', 'resolving']);
  assert.equal(games[0].game_id, 'held', 'the list given is left as it was');
});

describe('the correspondence hub, in Chromium', { timeout: 300_000 }, () => {
  const h = harness();
  after(() => h.tearDown());

  test('dates its deadline, offers escrow and shows it on, on a phone; My games dates it too', async () => {
    await h.setUp();
    const phone = await newPlayer(h.browser, h.server.url, { width: 390, height: 844 }, { hasTouch: true, isMobile: true });
    const desk = await newPlayer(h.browser, h.server.url);
    await h.withDiagnostics({ phone, desk }, async () => {
      const page = phone.page;
      const [me, other] = [`hub_phone-${process.pid % 1000}`, `hub_desk-${process.pid % 1000}`];
      await signUp(page, me);
      await signUp(desk.page, other);
      await desk.page.selectOption('#seek-preset', 'corr-7d');
      await desk.page.getByRole('button', { name: 'Create a seek' }).click();
      await page.getByRole('button', { name: `Accept ${other}'s seek` }).click();
      const gameId = await waitForGame(page);
      await waitForGame(desk.page);
      // A week away: the date, in this browser's words, not a time alone.
      const inAWeek = await page.evaluate(() => new Date(Date.now() + 7 * 86_400_000).toLocaleDateString(undefined, { month: 'short', day: 'numeric' }));
      const deadline = await page.textContent('#phase-deadline:not([hidden])');
      assert.match(deadline, /^Round 1: picks are due by /);
      assert.ok(deadline.includes(inAWeek), `${deadline} names ${inAWeek}`);
      // Escrow is offered here, off; turned on, the page says so and the next commit carries the pick.
      assert.equal(await page.locator('#escrow-on').count(), 0);
      const box = page.getByLabel('Reveal for me (escrow)');
      assert.equal(await box.isChecked(), false);
      const sent = [];
      page.on('websocket', (ws) => ws.on('framesent', ({ payload }) => {
        if (typeof payload !== 'string') sent.push(decode(payload));
      }));
      await box.check();
      await page.waitForSelector('#escrow-on', STEP);
      assert.deepEqual(await offScreen(page, '.game-head > *, #phase-deadline, .escrow-setting label, .controls > *'), [], 'the game page on a phone');
      assert.deepEqual(await axeViolations(page), []);
      await page.reload();
      await waitForGame(page);
      await pick(page, 1, 2);
      // The server has the commitment, so the frame went long before.
      await page.waitForSelector('.player:has(.tag.you) .seat-state.done', STEP);
      const commit = sent.find((m) => m.type === 'commit');
      assert.equal(commit?.pick, 2, 'escrowed: the pick went with the commitment');
      // My games dates the opponent's deadline the same way.
      await page.goto('/#/games');
      const owed = page.locator(`.my-game[data-game-id="${gameId}"] .owed`);
      await owed.waitFor(STEP);
      await page.waitForFunction((id) => /Waiting for .* to commit by /.test(document.querySelector(`.my-game[data-game-id="${id}"] .owed`)?.textContent ?? ''), gameId, STEP);
      assert.ok((await owed.textContent()).includes(inAWeek), await owed.textContent());
      assert.deepEqual(await offScreen(page, '.my-game > *'), [], 'My games on a phone');
    });
    await Promise.all([phone.context.close(), desk.context.close()]);
  });

  test('a live game starts while a correspondence game waits, and the player switches between them', async () => {
    await h.setUp();
    const [a, b, c] = await Promise.all([0, 1, 2].map(() => newPlayer(h.browser, h.server.url)));
    await h.withDiagnostics({ a, b, c }, async () => {
      const tag = process.pid % 1000;
      const [me, pen, fast] = [`hub_both-${tag}`, `hub_pen-${tag}`, `hub_fast-${tag}`];
      await signUp(a.page, me);
      await signUp(b.page, pen);
      await signUp(c.page, fast);
      await b.page.selectOption('#seek-preset', 'corr-7d');
      await b.page.getByRole('button', { name: 'Create a seek' }).click();
      await a.page.getByRole('button', { name: `Accept ${pen}'s seek` }).click();
      const corrId = await waitForGame(a.page);
      // Back in the lobby the correspondence game is named, and a live game may start.
      await a.page.getByRole('link', { name: 'Play', exact: true }).click();
      await a.page.waitForSelector('#corr-waiting', STEP);
      assert.match(await a.page.textContent('#corr-waiting'), /^1 correspondence game under way, on My games\./);
      await joinPool(a.page, 'blitz', '5/2/3');
      await a.page.waitForSelector('.queue:not([hidden])', STEP);
      await joinPool(c.page, 'blitz', '5/2/3');
      await a.page.waitForFunction((id) => document.querySelector('.game.playing')?.dataset.gameId !== id, corrId, STEP);
      const liveId = await waitForGame(a.page);
      assert.notEqual(liveId, corrId);
      assert.equal(await waitForGame(c.page), liveId);
      // Both owe this player's pick: the live one, due in minutes, first on My games.
      await a.page.getByRole('link', { name: /My games/ }).click();
      await a.page.waitForFunction(() => document.querySelectorAll('.my-game').length === 2, null, STEP);
      assert.deepEqual(await a.page.$$eval('.my-game', (li) => li.map((x) => [x.dataset.gameId, x.dataset.owes])), [[liveId, 'yes'], [corrId, 'yes']]);
      // From the live game a link leads to the other game waiting, where a pick goes in.
      await a.page.getByRole('link', { name: `Open the game against ${fast}` }).click();
      await a.page.waitForSelector(`.game.playing[data-game-id="${liveId}"]`, STEP);
      await a.page.getByRole('link', { name: `Next game waiting for you: against ${pen}` }).click();
      await a.page.waitForSelector(`.game.playing[data-game-id="${corrId}"]`, STEP);
      await pick(a.page, 1, 3);
      await a.page.waitForSelector('.player:has(.tag.you) .seat-state.done', STEP);
      // And back to the live game, where round 1 is played out on the same connection.
      await a.page.getByRole('link', { name: `Next game waiting for you: against ${fast}` }).click();
      await a.page.waitForSelector(`.game.playing[data-game-id="${liveId}"]`, STEP);
      await pick(a.page, 1, 2);
      await pick(c.page, 1, 4);
      await roundShown(a.page, 1);
      await pick(b.page, 1, 1);
      await roundShown(b.page, 1);
    });
    await Promise.all([a, b, c].map((p) => p.context.close()));
  });
});
