// End to end: every finished game has a page with a replay. Two people play a game by
// clicking; the end of the game links its replay, which steps through the rounds with its
// buttons and the keyboard and shows the positions the stored record holds; the player's
// page lists the game with its replay, and so does the leaderboard (the leader's latest
// games, and each row's latest rated game). The page verifies the transcript's signature,
// and says so when a changed one fails. axe-core finds nothing on these pages.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { axeViolations, newPlayer } from '../testkit/browser.mjs';
import { harness } from '../testkit/harness.mjs';
import { joinPool, pick, roundShown, seatOf, signUp, waitForGame } from '../testkit/scenario.mjs';

const STEP = { timeout: 30_000 };
const h = harness();

/** The seed's example game: player two wins at the edge after five rounds. */
const SEED_PICKS = [[5, 2], [1, 2], [2, 3], [3, 2], [5, 2]];

/** Waits until the replay shows step `n` (0 is the start), and returns the board's positions. */
async function atStep(page, n) {
  await page.waitForSelector(`.replay .board[data-step="${n}"]`, STEP);
  return page.getAttribute('.replay .board', 'data-positions');
}

describe('a finished game\'s page and replay', { timeout: 600_000 }, () => {
  after(() => h.tearDown());

  test('the end of a game, the player page and the leaderboard lead to a replay that steps through every round', { timeout: 300_000 }, async () => {
    await h.setUp();
    const a = await newPlayer(h.browser, h.server.url);
    const b = await newPlayer(h.browser, h.server.url);
    await h.withDiagnostics({ a, b }, async () => {
      await signUp(a.page, 'rhea');
      await signUp(b.page, 'theo');
      await joinPool(a.page, 'blitz', '5/2/3');
      await a.page.waitForSelector('.queue:not([hidden])', STEP);
      await joinPool(b.page, 'blitz', '5/2/3');
      const gameId = await waitForGame(a.page);
      await waitForGame(b.page);
      const bySeat = { [await seatOf(a.page)]: a.page, [await seatOf(b.page)]: b.page };
      const names = { [await seatOf(a.page)]: 'rhea', [await seatOf(b.page)]: 'theo' };
      for (const [i, [one, two]] of SEED_PICKS.entries()) {
        await pick(bySeat.one, i + 1, one);
        await pick(bySeat.two, i + 1, two);
        await roundShown(bySeat.one, i + 1);
      }
      const { page } = a;
      await page.waitForSelector('.result:not([hidden]) h2', STEP);
      const record = await (await fetch(`${h.server.url}/api/games/${gameId}`)).json();
      assert.equal(record.rounds.length, 5);
      const positionsAfter = (n) => (n ? record.rounds[n - 1].positions : [0, 0, 0, 0, 0]).join(',');

      // The end of the game links its replay, which opens on the last round.
      await page.getByRole('link', { name: 'Replay this game' }).click();
      assert.equal(await atStep(page, 5), positionsAfter(5));
      assert.equal(await page.textContent('#replay-status'), 'Round 5 of 5');
      assert.equal(await page.textContent('.replay .result h2'), `${names.one === 'rhea' ? 'You lost' : 'You won'} (an element reached the edge).`);
      assert.equal(await page.locator('.replay .ratings li').count(), 2, 'both rating changes');
      assert.equal(await page.getByRole('button', { name: 'Next round' }).isDisabled(), true);

      // The keyboard: Home, →, ←, End.
      await page.keyboard.press('Home');
      assert.equal(await atStep(page, 0), positionsAfter(0));
      assert.equal(await page.getByRole('button', { name: 'Previous round' }).isDisabled(), true);
      await page.keyboard.press('ArrowRight');
      assert.equal(await atStep(page, 1), positionsAfter(1));
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowLeft');
      assert.equal(await atStep(page, 1), positionsAfter(1));
      await page.keyboard.press('End');
      assert.equal(await atStep(page, 5), positionsAfter(5));
      // The buttons, and the list of rounds.
      await page.getByRole('button', { name: 'First: the start' }).click();
      assert.equal(await atStep(page, 0), positionsAfter(0));
      for (let n = 1; n <= 5; n++) {
        await page.getByRole('button', { name: 'Next round' }).click();
        assert.equal(await atStep(page, n), positionsAfter(n), `round ${n}`);
      }
      await page.getByRole('button', { name: 'Previous round' }).click();
      assert.equal(await atStep(page, 4), positionsAfter(4));
      await page.locator('.replay-round[data-step="2"]').click();
      assert.equal(await atStep(page, 2), positionsAfter(2));
      assert.equal(await page.getAttribute('.replay-round[data-step="2"]', 'aria-current'), 'step');
      await page.getByRole('button', { name: 'Last round' }).click();
      assert.equal(await atStep(page, 5), positionsAfter(5));
      // The transcript it links is the server's signed one.
      const href = await page.getAttribute('.transcript-note a', 'href');
      assert.equal(href, `/api/games/${gameId}/transcript`);
      const signed = await (await fetch(`${h.server.url}${href}`)).json();
      assert.equal(await page.textContent('.transcript-note code'), signed.key_id);
      // The page checked its signature against the server's key, and its commitments.
      await page.waitForSelector('#signature-check[data-verified="true"]', STEP);
      assert.match(await page.textContent('#signature-check'), /^✓ Signature verified/);
      assert.deepEqual(await axeViolations(page), [], 'the replay');

      // The player page lists the game, with its replay.
      await page.goto('/#/player/rhea');
      const row = page.locator(`.player-games tr[data-game-id="${gameId}"]`);
      await row.waitFor(STEP);
      assert.match(await row.textContent(), /theo/);
      assert.deepEqual(await axeViolations(page), [], 'the player page');
      await row.getByRole('link', { name: /^Replay/ }).click();
      await atStep(page, 5);
      assert.equal(await page.getAttribute('.replay', 'data-game-id'), gameId);

      // The leaderboard lists its leader's latest games, with their replays.
      await page.goto('/#/leaderboard');
      const leaderRow = page.locator(`.leader-games tr[data-game-id="${gameId}"]`);
      await leaderRow.waitFor(STEP);
      assert.deepEqual(await axeViolations(page), [], 'the leaderboard');
      await leaderRow.getByRole('link', { name: /^Replay/ }).click();
      await atStep(page, 5);
      // Each row links the player's page and the replay of their latest rated game.
      await page.goto('/#/leaderboard');
      const rowOf = (name) => page.locator(`.leaderboard tr[data-player="${name}"]`);
      await rowOf('theo').waitFor(STEP);
      for (const name of ['rhea', 'theo']) {
        assert.equal(await rowOf(name).getByRole('link', { name, exact: true }).getAttribute('href'), `#/player/${name}`);
      }
      await rowOf('theo').getByRole('link', { name: 'Replay theo\'s last rated game' }).click();
      await atStep(page, 5);
      assert.equal(await page.getAttribute('.replay', 'data-game-id'), gameId);

      // A transcript changed on its way (one letter of a name) fails the check, visibly.
      await page.route('**/api/games/*/transcript', async (route) => {
        const real = await (await route.fetch()).json();
        const text = Buffer.from(real.transcript, 'base64').toString('utf8').replace('"theo"', '"thea"');
        await route.fulfill({ json: { ...real, transcript: Buffer.from(text, 'utf8').toString('base64') } });
      });
      await page.goto('/#/leaderboard');
      await page.goto(`/#/replay/${gameId}`);
      await page.waitForSelector('#signature-check[data-verified="false"]', STEP);
      assert.equal(await page.textContent('#signature-check'),
        '✗ Not verified: the signature does not match the transcript\'s bytes. Do not trust this page\'s account of the game.');
      await page.unroute('**/api/games/*/transcript');

      // An unknown game says so.
      await page.goto('/#/replay/00000000-0000-4000-8000-000000000000');
      await page.waitForSelector('#replay-missing', STEP);
      assert.deepEqual(a.errors.map(String).filter((e) => !/404 \(Not Found\)/.test(e)), []);
    });
    await Promise.all([a.context.close(), b.context.close()]);
  });
});
