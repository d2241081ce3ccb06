// End to end against a server with short timers (sign-in within 2 s, round 1's picks within
// 6 s), for what happens when those run out: a page that never signed in carries on
// without a word, a spectator who never signed in keeps watching, and a game nobody
// opened says why it was called off.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { axeViolations, newPlayer } from '../testkit/browser.mjs';
import { harness } from '../testkit/harness.mjs';
import { joinPool, pick, playAsGuest, roundShown, seatOf, waitForGame } from '../testkit/scenario.mjs';

const STEP = { timeout: 30_000 };
const h = harness({ extraArgs: ['--auth-timeout-secs', '2', '--first-commit-secs', '6'] });

/** Two guests paired in the casual classic blitz pool: { bySeat, names }. */
async function guestGame(a, b) {
  await playAsGuest(a.page);
  await playAsGuest(b.page);
  await joinPool(a.page, 'blitz', '5/2/3');
  await a.page.waitForSelector('.queue:not([hidden])', STEP);
  await joinPool(b.page, 'blitz', '5/2/3');
  await waitForGame(a.page);
  await waitForGame(b.page);
  const bySeat = { [await seatOf(a.page)]: a, [await seatOf(b.page)]: b };
  const name = (p) => p.page.evaluate(() => window.elementals.account.name);
  return { bySeat, names: { one: await name(bySeat.one), two: await name(bySeat.two) } };
}

describe('a server with short timers', { timeout: 300_000 }, () => {
  after(() => h.tearDown());

  test('anyone watches a live game from the list at once, without an account, past the sign-in time', async () => {
    await h.setUp();
    const [a, b, viewer, idler] = await Promise.all([0, 1, 2, 3].map(() => newPlayer(h.browser, h.server.url)));
    await h.withDiagnostics({ a, b, viewer, idler }, async () => {
      const { bySeat, names } = await guestGame(a, b);
      await pick(bySeat.one.page, 1, 1);
      await pick(bySeat.two.page, 1, 2);

      const { page } = viewer;
      await page.goto('/#/watch');
      // Whether the "connection lost" banner ever shows from here on.
      await page.evaluate(() => {
        const banner = document.querySelector('.banner');
        window.bannerShown = false;
        new MutationObserver(() => (window.bannerShown ||= !banner.hidden)).observe(banner, { attributes: true, childList: true });
      });
      // The list needs no account, but the server closes a connection that has neither
      // signed in nor watched after 2 s: the page opens another, without a word.
      await page.waitForFunction(() => window.elementals.opened >= 2, null, STEP);
      await page.getByRole('link', { name: `Watch ${names.one} against ${names.two}` }).click();
      await page.waitForSelector('.game.watching .board', STEP);
      assert.equal(await page.locator('#auth-title').count(), 0, 'no sign-in form');
      await roundShown(page, 1);
      const opened = await page.evaluate(() => window.elementals.opened);
      // Another page, opened after the viewer began watching, is closed for not signing
      // in: by then the viewer has watched past the sign-in time.
      await idler.page.goto('/#/watch');
      await idler.page.waitForFunction(() => window.elementals.opened >= 2, null, STEP);
      await pick(bySeat.one.page, 2, 3);
      await pick(bySeat.two.page, 2, 1);
      await roundShown(page, 2);
      assert.equal(await page.getAttribute('.board', 'data-positions'), '0,-1,1,0,0');
      assert.ok(await page.evaluate(() => window.elementals.opened) <= opened + 1, 'watching keeps the connection (or one quiet reconnect)');
      assert.equal(await page.evaluate(() => window.bannerShown), false, 'nothing said about the reconnections');
      assert.deepEqual(await axeViolations(page), [], 'a watched game');
      assert.deepEqual(viewer.errors.map(String), []);
    });
    await Promise.all([a, b, viewer, idler].map((p) => p.context.close()));
  });

  test('a game whose round 1 is not picked in time says so, and who did not pick', async () => {
    await h.setUp();
    const [a, b] = await Promise.all([0, 1].map(() => newPlayer(h.browser, h.server.url)));
    await h.withDiagnostics({ a, b }, async () => {
      const { bySeat, names } = await guestGame(a, b);
      const one = bySeat.one.page;
      const two = bySeat.two.page;
      // The clocks stand still in round 1: the window is shown counting down instead.
      await one.waitForSelector('#first-commit:not([hidden])', STEP);
      const shown = (await one.textContent('#first-commit')).match(/^Round 1: (\d+) s left for both players to pick, or the game is called off\.$/);
      assert.ok(shown, 'the countdown says what it counts');
      assert.ok(Number(shown[1]) <= 6, `the server's own window (6 s) is counted, not a default (shown: ${shown[1]} s)`);
      await pick(one, 1, 3);
      for (const page of [one, two]) await page.waitForSelector('.result:not([hidden]) h2', STEP);
      assert.equal(await one.textContent('.result h2'), `Game called off: ${names.two} did not pick in time in round 1. No rating changes.`);
      assert.equal(await two.textContent('.result h2'), 'Game called off: you did not pick in time in round 1. No rating changes.');
      assert.equal(await one.isHidden('#first-commit'), true);
    });
    await Promise.all([a, b].map((p) => p.context.close()));
  });
});
