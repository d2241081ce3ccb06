// End to end: what a person sees and is told in a game and around it, beyond playing it
// (e2e.test.mjs): a lost connection, a disconnected opponent, draw offers, the end screens,
// phones, accessibility, the lobby, signing in, the rules page, alerts.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { axeViolations, contrastRatios, newPlayer, offScreen } from '../testkit/browser.mjs';
import { harness } from '../testkit/harness.mjs';
import { joinPool, pick, playAsGuest, roundShown, seatOf, signUp, waitForGame } from '../testkit/scenario.mjs';

const STEP = { timeout: 30_000 };
const h = harness();
let names = 0;

/** A fresh account name for each game, so that tests do not meet each other's players. */
function freshName(prefix) {
  names += 1;
  return `${prefix}-${names}-${process.pid % 1000}`;
}

/**
 * Two new accounts paired in the classic blitz pool (or `variant`):
 * { bySeat: { one, two } (each { page, context, errors, name }), gameId }.
 */
async function newGame(a, b, variant = '5/2/3') {
  a.name = freshName('ann');
  b.name = freshName('bob');
  await signUp(a.page, a.name);
  await signUp(b.page, b.name);
  await joinPool(a.page, 'blitz', variant);
  await a.page.waitForSelector('.queue:not([hidden])', STEP);
  await joinPool(b.page, 'blitz', variant);
  const gameId = await waitForGame(a.page);
  await waitForGame(b.page);
  const bySeat = { [await seatOf(a.page)]: a, [await seatOf(b.page)]: b };
  return { bySeat, gameId };
}

/**
 * Lets the test cut this page's connection and keep it cut: `cut()` closes the socket and
 * makes new ones fail (they are pointed at a closed port) until `blocked` is cleared.
 * Install before the page first loads.
 */
async function cuttable(page) {
  await page.addInitScript(() => {
    const Real = window.WebSocket;
    window.blockSockets = false;
    window.WebSocket = class extends Real {
      constructor(url, protocols) {
        super(window.blockSockets ? 'ws://127.0.0.1:9/ws' : url, protocols);
      }
    };
  });
  const line = {
    async cut() {
      await page.evaluate(() => {
        window.blockSockets = true;
        window.elementals.conn.drop();
      });
      await page.waitForSelector('.banner:not([hidden])', STEP);
    },
    async restore() {
      await page.evaluate(() => (window.blockSockets = false));
    },
  };
  return line;
}

async function people(n, options) {
  return Promise.all(Array.from({ length: n }, () => newPlayer(h.browser, h.server.url, undefined, options)));
}

async function closeAll(list) {
  await Promise.all(list.map((p) => p.context.close()));
}

describe('what the browser client tells and shows', { timeout: 600_000 }, () => {
  after(() => h.tearDown());

  test('picks wait for the connection, visibly, and none is lost', async () => {
    await h.setUp();
    const [a, b] = await people(2);
    const line = await cuttable(a.page);
    await h.withDiagnostics({ a, b }, async () => {
      const { bySeat } = await newGame(a, b);
      const me = a.page;
      await me.waitForSelector('button.pick:not([disabled])', STEP);
      await line.cut();
      assert.equal(await me.locator('button.pick:not([disabled])').count(), 0, 'no pick button is enabled offline');
      assert.match(await me.textContent('#game-status'), /Connection lost\. Reconnecting… You can pick once it is back\./);
      await me.keyboard.press('2');
      await me.locator('button.pick[data-element="2"]').click({ force: true });
      assert.equal(await me.locator('button.pick.chosen').count(), 0, 'nothing looks picked');
      await line.restore();
      await me.waitForSelector('.banner', { ...STEP, state: 'hidden' });
      const mySeat = bySeat.one === a ? 'one' : 'two';
      await pick(me, 1, 2);
      await pick(bySeat[mySeat === 'one' ? 'two' : 'one'].page, 1, 1);
      await roundShown(me, 1);
      assert.equal(await me.textContent(`.rounds .round-item[data-round="1"] .r-pick.seat-${mySeat}`), '2');
    });
    await closeAll([a, b]);
  });

  test('a network stall during a commit loses no pick: the silence is noticed, shown, and the pick revealed', { timeout: 180_000 }, async () => {
    await h.setUp();
    const [a, b] = await people(2);
    await h.withDiagnostics({ a, b }, async () => {
      const { bySeat } = await newGame(a, b);
      const mySeat = bySeat.one === a ? 'one' : 'two';
      const other = bySeat[mySeat === 'one' ? 'two' : 'one'].page;
      const me = a.page;
      await pick(me, 1, 1);
      await pick(other, 1, 2);
      await roundShown(me, 1);
      await me.waitForSelector('.board[data-round="2"][data-phase="commit"]', STEP);
      await me.waitForSelector('button.pick:not([disabled])', STEP);
      // Chromium's offline mode holds the open socket's frames: nothing is closed, nothing arrives.
      const offlineAt = Date.now();
      await a.context.setOffline(true);
      await me.locator('button.pick[data-element="4"]').click();
      assert.equal(await me.textContent('#game-status'), 'Locking in 4…');
      await me.waitForSelector('.banner:not([hidden])', { timeout: 15_000 });
      const noticed = Date.now() - offlineAt;
      assert.ok(noticed < 14_000, `the silence is noticed within ~10 s (took ${noticed} ms)`);
      assert.equal(await me.textContent('#game-status'), 'Connection lost. Reconnecting… Your pick, 4, is kept and goes in once it is back.');
      assert.equal(await me.locator('button.pick:not([disabled])').count(), 0, 'no second pick in the round');
      await pick(other, 2, 1);
      // The stall lasts 30 s in all.
      await me.waitForFunction((until) => Date.now() >= until, offlineAt + 30_000, { timeout: 40_000, polling: 500 });
      await a.context.setOffline(false);
      await me.waitForSelector('.banner', { ...STEP, state: 'hidden' });
      await roundShown(me, 2);
      assert.equal(await me.textContent(`.rounds .round-item[data-round="2"] .r-pick.seat-${mySeat}`), '4');
      await me.waitForSelector('.board[data-round="3"][data-phase="commit"]', STEP);
      assert.equal(await me.locator('.result:not([hidden])').count(), 0, 'the game goes on');
      assert.deepEqual(a.errors.map(String).filter((e) => !/ERR_INTERNET_DISCONNECTED|WebSocket/.test(e)), []);
    });
    await closeAll([a, b]);
  });

  test('the win over an opponent who left can be claimed when the wait is over, counted down', { timeout: 120_000 }, async () => {
    await h.setUp();
    const [a, b] = await people(2);
    await h.withDiagnostics({ a, b }, async () => {
      const { bySeat } = await newGame(a, b);
      await pick(bySeat.one.page, 1, 1);
      await pick(bySeat.two.page, 1, 1);
      const me = bySeat.one.page;
      await roundShown(me, 1);
      // Seat two leaves in round 2 without picking: the game waits for them.
      await bySeat.two.context.close();
      const claim = me.locator('#claim-win');
      await claim.waitFor(STEP);
      assert.equal(await claim.isDisabled(), true, 'not before it can succeed');
      const first = Number((await claim.textContent()).match(/^Claim the win in (\d+) s$/)[1]);
      assert.ok(first > 20 && first <= 30, `a blitz game's grace period is 30 s (shown: ${first})`);
      await me.waitForFunction((n) => /in (\d+) s/.exec(document.querySelector('#claim-win').textContent)?.[1] < n, first, STEP);
      assert.match(await me.textContent('#claim-note'), new RegExp(`${bySeat.two.name} is away\\. If they are not back in \\d+ s, the win is yours to claim\\.`));
      await me.waitForSelector('#claim-win:not([disabled])', { timeout: 45_000 });
      await claim.click();
      await me.waitForSelector('.result:not([hidden]) h2', STEP);
      assert.equal(await me.textContent('.result h2'), 'You won (the opponent left).');
      assert.deepEqual(bySeat.one.errors.map(String), []);
    });
    await a.context.close();
  });

  test('round 1 offers Abort until both have picked, which costs nobody rating; Resign after', async () => {
    await h.setUp();
    const [a, b, c, d] = await people(4);
    await h.withDiagnostics({ a, b, c, d }, async () => {
      const { bySeat } = await newGame(a, b);
      const [one, two] = [bySeat.one.page, bySeat.two.page];
      await pick(one, 1, 3);
      assert.equal(await two.getByRole('button', { name: 'Resign' }).count(), 0, 'no Resign while Abort is offered');
      await two.getByRole('button', { name: 'Abort' }).click();
      await two.waitForSelector('.result:not([hidden]) h2', STEP);
      await one.waitForSelector('.result:not([hidden]) h2', STEP);
      assert.equal(await two.textContent('.result h2'), 'You aborted the game. No rating changes.');
      assert.equal(await one.textContent('.result h2'), `${bySeat.two.name} aborted the game. No rating changes.`);
      assert.equal(await one.locator('.result .ratings').count(), 0);
      assert.equal(await one.locator('.result .replay-link').count(), 0, 'no replay of a game of no rounds');
      await one.goto(`/#/player/${bySeat.one.name}`);
      await one.waitForSelector('.player-games tr[data-game-id]', STEP);
      assert.doesNotMatch(await one.textContent('#view'), /Aborted \(aborted\)/);
      assert.match(await one.textContent('.me .rating'), /1\.00$/);

      // Once both have picked in round 1 it is too late: Resign, not Abort.
      const next = await newGame(c, d);
      await pick(next.bySeat.one.page, 1, 1);
      await pick(next.bySeat.two.page, 1, 2);
      const p1 = next.bySeat.one.page;
      await p1.waitForSelector('.board[data-phase="reveal"], .board[data-round="2"]', STEP);
      await p1.getByRole('button', { name: 'Resign' }).waitFor(STEP);
      assert.equal(await p1.getByRole('button', { name: 'Abort' }).count(), 0);
    });
    await closeAll([a, b, c, d]);
  });

  test('a challenge can be accepted from any page, not only the lobby', async () => {
    await h.setUp();
    const [a, b] = await people(2);
    await h.withDiagnostics({ a, b }, async () => {
      a.name = freshName('asker');
      b.name = freshName('asked');
      await signUp(a.page, a.name);
      await signUp(b.page, b.name);
      await b.page.goto('/#/leaderboard');
      await b.page.waitForSelector('.leaderboard :is(table, p)', STEP);
      await a.page.fill('#opponent', b.name);
      await a.page.getByRole('button', { name: 'Challenge', exact: true }).click();
      const accept = b.page.getByRole('button', { name: `Accept ${a.name}'s challenge` });
      await accept.waitFor(STEP);
      assert.deepEqual(await axeViolations(b.page), []);
      await accept.click();
      const gameId = await waitForGame(b.page);
      assert.equal(await waitForGame(a.page), gameId);
      assert.equal(await b.page.locator('.invites:not([hidden])').count(), 0, 'the answered challenge is gone');
    });
    await closeAll([a, b]);
  });

  test('a rematch offer can be declined, and the one who offered it is told', async () => {
    await h.setUp();
    const [a, b] = await people(2);
    await h.withDiagnostics({ a, b }, async () => {
      const { bySeat } = await newGame(a, b);
      const [one, two] = [bySeat.one.page, bySeat.two.page];
      await pick(one, 1, 1);
      await pick(two, 1, 2);
      await roundShown(one, 1);
      one.once('dialog', (d) => d.accept());
      await one.getByRole('button', { name: 'Resign' }).click();
      await two.waitForSelector('.result:not([hidden]) h2', STEP);
      await one.waitForSelector('.result:not([hidden]) h2', STEP);
      await two.getByRole('button', { name: 'Rematch', exact: true }).click();
      await one.getByRole('button', { name: 'Decline rematch' }).click();
      await two.locator('.toasts .toast', { hasText: 'Your opponent declined the rematch.' }).waitFor(STEP);
      const button = two.getByRole('button', { name: 'Rematch declined' });
      await button.waitFor(STEP);
      assert.equal(await button.isDisabled(), true);
      assert.equal(await one.getByRole('button', { name: 'Decline rematch' }).count(), 0);
      assert.equal(await one.textContent('.result .row button.primary'), 'Rematch');
    });
    await closeAll([a, b]);
  });

  test('a draw offer, and its refusal, are announced to the other player', async () => {
    await h.setUp();
    const [a, b] = await people(2);
    await h.withDiagnostics({ a, b }, async () => {
      const { bySeat } = await newGame(a, b);
      const [one, two] = [bySeat.one.page, bySeat.two.page];
      await one.getByRole('button', { name: 'Offer draw' }).click();
      await two.locator('.toasts .toast', { hasText: `${bySeat.one.name} offers a draw.` }).waitFor(STEP);
      assert.equal(await two.getAttribute('.toasts', 'role'), 'alert', 'toasts are read out');
      assert.equal(await two.textContent('#draw-note'), `${bySeat.one.name} offers a draw.`);
      assert.equal(await one.textContent('#draw-note'), `Waiting for ${bySeat.two.name} to answer.`);
      await two.getByRole('button', { name: 'Decline draw' }).click();
      await one.locator('.toasts .toast', { hasText: `${bySeat.two.name} declined your draw offer.` }).waitFor(STEP);
      await one.getByRole('button', { name: 'Offer draw' }).waitFor(STEP);
    });
    await closeAll([a, b]);
  });

  test("a spectator's end screen says the result once, with one way on", async () => {
    await h.setUp();
    const [a, b, viewer] = await people(3);
    await h.withDiagnostics({ a, b, viewer }, async () => {
      const { bySeat, gameId } = await newGame(a, b);
      const { page } = viewer;
      await page.goto(`/#/game/${gameId}`);
      await page.waitForSelector('.game.watching .board', STEP);
      // Past round 1 (before it, a player aborts rather than resigns).
      await pick(bySeat.one.page, 1, 1);
      await pick(bySeat.two.page, 1, 2);
      await roundShown(bySeat.one.page, 1);
      bySeat.one.page.once('dialog', (d) => d.accept());
      await bySeat.one.page.getByRole('button', { name: 'Resign' }).click();
      await page.waitForSelector('.result:not([hidden]) h2', STEP);
      const result = `${bySeat.two.name} won (by resignation).`;
      assert.equal(await page.textContent('.result h2'), result);
      assert.equal(await page.locator('.game').getByText(result).filter({ visible: true }).count(), 1, 'the result is said once');
      assert.equal(await page.locator('#game-status').isVisible(), false);
      const ways = page.locator('.game a[href="#/watch"]:visible, .game button:visible');
      assert.equal(await ways.count(), 1, 'one way on');
      assert.equal(await ways.textContent(), 'More live games');
    });
    await closeAll([a, b, viewer]);
  });

  test('a malformed or unknown game address says so instead of loading forever', async () => {
    await h.setUp();
    const [v] = await people(1);
    await h.withDiagnostics({ v }, async () => {
      await v.page.goto('/#/game/not-a-real-id');
      await v.page.waitForSelector('#game-missing', STEP);
      assert.match(await v.page.textContent('#game-missing'), /There is no game at this address/);
      await v.page.goto('/#/game/00000000-0000-4000-8000-000000000000');
      await v.page.waitForFunction(() => /none was recorded/.test(document.querySelector('#game-missing')?.textContent), null, STEP);
      // The browser itself logs the record's 404.
      assert.deepEqual(v.errors.map(String).filter((e) => !/404 \(Not Found\)/.test(e)), []);
    });
    await closeAll([v]);
  });

  test('a player whose game ended while away comes back to its result and rating change', async () => {
    await h.setUp();
    const [a, b] = await people(2);
    const line = await cuttable(a.page);
    await h.withDiagnostics({ a, b }, async () => {
      const { bySeat } = await newGame(a, b);
      const other = bySeat.one === a ? bySeat.two : bySeat.one;
      await pick(bySeat.one.page, 1, 1);
      await pick(bySeat.two.page, 1, 1);
      await roundShown(a.page, 1);
      await line.cut();
      other.page.once('dialog', (d) => d.accept());
      await other.page.getByRole('button', { name: 'Resign' }).click();
      await other.page.waitForSelector('.result:not([hidden]) h2', STEP);
      await line.restore();
      await a.page.waitForSelector('.banner', { ...STEP, state: 'hidden' });
      await a.page.waitForSelector('.result:not([hidden]) h2', STEP);
      assert.equal(await a.page.textContent('.result h2'), 'You won (by resignation).');
      await a.page.waitForSelector('.result .ratings li', STEP);
      const mySeat = bySeat.one === a ? 'one' : 'two';
      assert.match(await a.page.textContent(`.result .ratings li[data-seat="${mySeat}"]`), /1\.00 → 1\.50 \(\+0\.50\)/);
      assert.equal(await a.page.locator('.rounds .round-item').count(), 1, 'the rounds played are listed');
      assert.equal(await a.page.textContent('#round-number'), '1 round');
    });
    await closeAll([a, b]);
  });

  test('a nine-element game fits a phone: clocks, board and picks on one screen, no sticky tap, toasts clear', async () => {
    await h.setUp();
    const phone = await newPlayer(h.browser, h.server.url, { width: 390, height: 844 }, { hasTouch: true, isMobile: true });
    const [desk] = await people(1);
    await h.withDiagnostics({ phone, desk }, async () => {
      phone.name = freshName('a_rather_long_name');
      desk.name = freshName('another_long_name');
      await signUp(phone.page, phone.name);
      await signUp(desk.page, desk.name);
      await joinPool(phone.page, 'blitz', '9/4/5');
      await phone.page.waitForSelector('.queue:not([hidden])', STEP);
      await joinPool(desk.page, 'blitz', '9/4/5');
      await waitForGame(phone.page);
      await waitForGame(desk.page);
      const page = phone.page;
      const box = (sel) => page.locator(sel).first().boundingBox();
      const onScreen = (b) => b && b.y >= 0 && b.y + b.height <= 844 && b.x >= 0 && b.x + b.width <= 390;
      for (const sel of ['.me .me-name', '.me button', '#alerts', '.player[data-seat="one"] .clock', '.player[data-seat="two"] .clock', '.board', '#first-commit']) {
        assert.ok(onScreen(await box(sel)), `${sel} is on screen: ${JSON.stringify(await box(sel))}`);
      }
      for (let e = 1; e <= 9; e++) {
        const b = await box(`button.pick[data-element="${e}"]`);
        assert.ok(onScreen(b), `pick ${e} is on screen: ${JSON.stringify(b)}`);
      }
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'nothing wider than the screen');
      const tag = await box('.tag.you');
      const name = await box('.player:has(.tag.you) .player-name');
      assert.ok(tag.x >= name.x && tag.x + tag.width <= name.x + name.width + 0.5, 'the YOU tag is whole');
      assert.equal(await page.locator('.hint').isVisible(), false, 'no keyboard hint on a touch screen');

      // A tapped pick does not stay highlighted into the next round.
      await page.waitForSelector('button.pick:not([disabled])', STEP);
      await page.tap('button.pick[data-element="3"]');
      await pick(desk.page, 1, 1);
      await roundShown(page, 1);
      await page.waitForSelector('.board[data-round="2"][data-phase="commit"]', STEP);
      await page.waitForSelector('button.pick:not([disabled])', STEP);
      // A phone leaves the tapped button hovered (emulated here by the mouse resting on it).
      await page.hover('button.pick[data-element="3"]');
      const bg = (e) => page.$eval(`button.pick[data-element="${e}"]`, (b) => getComputedStyle(b).backgroundColor);
      assert.equal(await bg(3), await bg(5), 'the last tapped pick looks like any other');

      // A toast does not cover the picks.
      await desk.page.getByRole('button', { name: 'Offer draw' }).click();
      const toast = page.locator('.toasts .toast', { hasText: 'offers a draw' });
      await toast.waitFor(STEP);
      const t = await toast.boundingBox();
      const p = await box('.picks');
      assert.ok(t.y + t.height <= p.y || t.y >= p.y + p.height, `the toast (${JSON.stringify(t)}) is clear of the picks (${JSON.stringify(p)})`);
    });
    await closeAll([phone, desk]);
  });

  test('every page fits a 390 px phone, with the whole menu on show', async () => {
    await h.setUp();
    const phoneOpts = { hasTouch: true, isMobile: true };
    const phone = await newPlayer(h.browser, h.server.url, { width: 390, height: 844 }, phoneOpts);
    const [other] = await people(1);
    await h.withDiagnostics({ phone, other }, async () => {
      const page = phone.page;
      // The signed-in name may be shortened (…) to leave the rest whole.
      const menu = '.topbar .brand, .topbar .nav > a, .topbar .alerts, .topbar .me > :not(.me-name)';
      const fits = async (where) => assert.deepEqual(await offScreen(page, menu), [], where);
      await page.goto('/');
      await page.waitForSelector('#welcome-guest:not([disabled])', STEP);
      await fits('the welcome page');
      for (const [hash, ready] of [['#/login', '#auth-submit'], ['#/how', '.how'], ['#/watch', '.live-list :is(ul, #no-live-games)'], ['#/leaderboard', '.leaderboard :is(table, p)']]) {
        await page.goto(`/${hash}`);
        await page.waitForSelector(ready, STEP);
        await fits(hash);
      }
      // Signed in with a long name (up to 20), an open seek from another in the lobby, and
      // a game played and resigned, so that the player's page lists it.
      phone.name = freshName('phone_player');
      other.name = freshName('other_player');
      await signUp(page, phone.name);
      await signUp(other.page, other.name);
      await other.page.selectOption('#seek-preset', 'corr-7d');
      await other.page.getByRole('button', { name: 'Create a seek' }).click();
      await page.getByRole('button', { name: `Accept ${other.name}'s seek` }).waitFor(STEP);
      await fits('the lobby with a seek');
      // A custom variant shows its limits beside the numbers (the range's follows them).
      await page.selectOption('#variant', 'custom');
      await page.fill('#v-number', '7');
      assert.equal(await page.textContent('#variant-limits'), 'Elements 3–99; range 1–3; distance 1–20.');
      await fits('the lobby with a custom variant');
      await page.getByRole('button', { name: `Accept ${other.name}'s seek` }).click();
      await waitForGame(page);
      await fits('a game');
      await pick(page, 1, 1);
      await pick(other.page, 1, 2);
      await roundShown(page, 1);
      const gameId = await page.getAttribute('.game', 'data-game-id');
      page.once('dialog', (d) => d.accept());
      await page.getByRole('button', { name: 'Resign' }).click();
      await page.waitForSelector('.result:not([hidden]) h2', STEP);
      await fits('a finished game');
      for (const [hash, ready] of [[`#/player/${phone.name}`, '.player-games tr[data-game-id] .replay-link'], ['#/leaderboard', '.leaderboard table'],
        [`#/replay/${gameId}`, '#signature-check[data-verified]'], ['#/games', '#view h1']]) {
        await page.goto(`/${hash}`);
        await page.waitForSelector(ready, STEP);
        await fits(hash);
        if (hash.startsWith('#/player/')) {
          const opponents = await page.$$eval('.player-games td.opp', (tds) => tds.map((t) => t.textContent));
          assert.deepEqual(opponents, [other.name], "the opponent's name is whole");
        }
      }
    });
    await closeAll([phone, other]);
  });

  for (const colorScheme of ['light', 'dark']) {
    test(`axe-core finds nothing on the pages, ${colorScheme}; arrow keys move between the picks`, async () => {
      await h.setUp();
      const [a, b] = await people(2, { colorScheme });
      await h.withDiagnostics({ a, b }, async () => {
        const clean = async (page, where) => assert.deepEqual(await axeViolations(page), [], `${where} (${colorScheme})`);
        await a.page.goto('/#/login');
        await a.page.waitForSelector('#auth-submit:not([disabled])', STEP);
        await clean(a.page, 'the sign-in page');
        const { bySeat, gameId } = await newGame(a, b);
        const [one, two] = [bySeat.one.page, bySeat.two.page];
        await clean(one, 'a game about to start');
        // The first tab stop is the skip link, which takes the focus to the picks.
        await one.waitForSelector('button.pick:not([disabled])', STEP);
        const first = await one.evaluate(() => document.querySelector('a[href], button, input, select, [tabindex]:not([tabindex="-1"])').textContent);
        assert.equal(first, 'Skip to the page');
        await one.locator('.skip-link').focus();
        await one.keyboard.press('Enter');
        assert.equal(await one.evaluate(() => document.activeElement.dataset.element), '1');
        await one.locator('button.pick[data-element="1"]').focus();
        await one.keyboard.press('ArrowRight');
        assert.equal(await one.evaluate(() => document.activeElement.dataset.element), '2');
        await one.keyboard.press('ArrowLeft');
        await one.keyboard.press('ArrowLeft');
        assert.equal(await one.evaluate(() => document.activeElement.dataset.element), '5', 'the arrows wrap around');
        await one.keyboard.press('Enter');
        await one.waitForSelector('button.pick.chosen[data-element="5"]', STEP);
        await pick(two, 1, 4);
        await roundShown(one, 1);
        // axe does not judge coloured text on coloured backgrounds: measured here, on every
        // pick and every lane (one of which has just moved, and is tinted).
        await one.waitForSelector('.board[data-round="2"] .lane.moved', STEP);
        await one.waitForSelector('button.pick:not([disabled])', STEP);
        for (const sel of ['button.pick .pick-number', '.lanes .lane-label']) {
          for (const { text, ratio } of await contrastRatios(one, sel)) {
            assert.ok(ratio >= 4.5, `${sel} "${text}" (${colorScheme}): contrast ${ratio.toFixed(2)}:1 is under 4.5:1`);
          }
        }
        await two.getByRole('button', { name: 'Offer draw' }).click();
        await one.locator('#draw-note').waitFor(STEP);
        await clean(one, 'a game in round 2 with a draw offer');
        await one.getByRole('button', { name: 'Accept draw' }).click();
        await one.waitForSelector('.result:not([hidden]) h2', STEP);
        await clean(one, "a player's end screen");
        await one.goto('/#/lobby');
        await one.waitForSelector('.lobby .pools', STEP);
        await clean(one, 'the lobby');
        await one.goto('/#/watch');
        await one.waitForSelector('.live-list :is(ul, #no-live-games)', STEP);
        await clean(one, 'the live games');
        await one.goto('/#/leaderboard');
        await one.waitForSelector('.leaderboard :is(table, p)', STEP);
        await clean(one, 'the leaderboard');
        await one.goto(`/#/game/${gameId}`);
        await one.waitForSelector('.result:not([hidden]) h2', STEP);
        await clean(one, 'a recorded game');
      });
      await closeAll([a, b]);
    });
  }

  test('the queue counts the others, says whom it would pair in words, and offers a seek or the computer when alone', async () => {
    await h.setUp();
    const [a, g] = await people(2);
    await h.withDiagnostics({ a, g }, async () => {
      await signUp(a.page, freshName('queuer'));
      await joinPool(a.page, 'rapid', '7/3/4');
      await a.page.waitForSelector('#queue-status', STEP);
      assert.match(await a.page.textContent('#queue-status'),
        /^No one else waiting · meeting ratings 1\.00–1\.\d\d \(wider the longer you wait\) · \d+ s$/);
      await a.page.getByRole('button', { name: 'Post a seek instead' }).click();
      await a.page.waitForSelector('.queue', { ...STEP, state: 'hidden' });
      await a.page.getByRole('button', { name: 'Cancel your seek' }).waitFor(STEP);
      assert.match(await a.page.textContent('.seeks tbody'), /7\/3\/4 · Rapid 10\+5\s*rated/);

      // A guest waits in the casual pool: no rating talk.
      await playAsGuest(g.page);
      await joinPool(g.page, 'live', '9/4/5');
      await g.page.waitForSelector('#queue-status', STEP);
      assert.match(await g.page.textContent('#queue-status'), /^No one else waiting · \d+ s$/);
      assert.match(await g.page.textContent('#queue-alone'), /anyone can take a casual seek/);
      // Or the computer, at once: the guest leaves the queue for a game.
      await g.page.getByRole('button', { name: 'Play the computer instead' }).click();
      await waitForGame(g.page);
      assert.equal(await g.page.locator(`.player:not([data-seat="${await seatOf(g.page)}"]) .player-name a`).textContent(), 'bot-medium');
      await g.page.locator('button.pick[data-element="9"]').waitFor(STEP);
      assert.equal(await g.page.locator('button.pick').count(), 9, 'the queued variant, 9/4/5');
    });
    await closeAll([a, g]);
  });

  test('the computer plays at once, unrated, and the lobby says how many are online and wait in each pool', async () => {
    await h.setUp();
    const [a, b] = await people(2);
    await h.withDiagnostics({ a, b }, async () => {
      await signUp(a.page, freshName('solo'));
      await signUp(b.page, freshName('waiter'));
      await joinPool(b.page, 'blitz', '7/3/4');
      await b.page.waitForSelector('#queue-status', STEP);
      // The other player sees b waiting, on the pool's button and in the counts.
      await a.page.selectOption('#variant', '7/3/4');
      const waiting = a.page.locator('button.pool[data-preset="blitz"] .pool-waiting');
      await waiting.waitFor(STEP);
      assert.equal(await waiting.textContent(), '1 waiting');
      assert.match(await a.page.textContent('#lobby-counts'), /^\d+ players online · 1 other player waiting in a pool$/);
      // b does not count themself.
      await b.page.waitForFunction(() => /^\d+ players online · no one else waiting in a pool$/.test(document.querySelector('#lobby-counts').textContent), null, STEP);
      assert.equal(await b.page.locator('.pool-waiting:not([hidden])').count(), 0);
      assert.deepEqual(await axeViolations(a.page), [], 'the lobby with its counts and the computer');

      await a.page.selectOption('#bot-preset', 'blitz');
      await a.page.getByRole('button', { name: 'Play Hard' }).click();
      await waitForGame(a.page);
      const seat = await seatOf(a.page);
      const bot = a.page.locator(`.player:not([data-seat="${seat}"])`);
      assert.equal(await bot.locator('.player-name a').textContent(), 'bot-hard');
      assert.equal(await bot.locator('.rating').textContent(), 'computer');
      // The computer picks as soon as a round opens: round 1 resolves once a has picked.
      await pick(a.page, 1, 2);
      await roundShown(a.page, 1);
      assert.deepEqual(await axeViolations(a.page), [], 'a game against the computer');
      // The computer takes no rematch: the end screen offers another game at once.
      const first = await a.page.getAttribute('.game', 'data-game-id');
      a.page.once('dialog', (d) => d.accept());
      await a.page.getByRole('button', { name: 'Resign' }).click();
      await a.page.waitForSelector('.result:not([hidden]) h2', STEP);
      assert.equal(await a.page.getByRole('button', { name: 'Rematch' }).count(), 0);
      assert.equal(await a.page.textContent('.result h2'), 'You lost (by resignation).');
      await a.page.getByRole('button', { name: 'Play again' }).click();
      await a.page.waitForFunction((id) => {
        const game = document.querySelector('.game.playing');
        return game && game.dataset.gameId !== id;
      }, first, STEP);
      assert.equal(await a.page.locator(`.player:not([data-seat="${await seatOf(a.page)}"]) .player-name a`).textContent(), 'bot-hard');
      assert.deepEqual(a.errors.map(String), []);
    });
    await closeAll([a, b]);
  });

  test('the sign-in form does what its button says, Enter included, and says what went wrong plainly', async () => {
    await h.setUp();
    const [a, g] = await people(2);
    await h.withDiagnostics({ a, g }, async () => {
      const { page } = a;
      const name = freshName('newcomer');
      await page.goto('/#/login');
      await page.waitForSelector('#auth-submit:not([disabled])', STEP);
      // A first visit offers a new account: typing a name and a password and pressing Enter makes one.
      assert.equal(await page.textContent('#auth-submit'), 'Create account');
      await page.fill('#name', name);
      await page.fill('#password', 'correct horse battery');
      await page.press('#password', 'Enter');
      await page.waitForSelector('.lobby .pools', STEP);
      await page.getByRole('button', { name: 'Log out' }).click();
      // Back on the form, which now offers to log in; a wrong password is told plainly,
      // with the way out.
      await page.waitForSelector('#auth-submit:not([disabled])', STEP);
      assert.equal(await page.textContent('#auth-submit'), 'Log in');
      await page.fill('#name', name);
      await page.fill('#password', 'not the password');
      await page.press('#password', 'Enter');
      await page.waitForFunction(() => document.querySelector('#auth-error').textContent !== '', null, STEP);
      assert.equal(await page.textContent('#auth-error'), 'That name and password do not match any account.');
      await page.getByRole('button', { name: 'New here? Create this account' }).waitFor(STEP);
      await page.getByLabel('New account').check();
      await page.fill('#password', 'correct horse battery');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForFunction(() => /taken/.test(document.querySelector('#auth-error').textContent), null, STEP);
      assert.equal(await page.textContent('#auth-error'), 'That name is taken. If it is yours, choose "Log in".');
      await page.getByRole('button', { name: 'Log in instead' }).click();
      await page.press('#password', 'Enter');
      await page.waitForSelector('.lobby .pools', STEP);
      assert.equal(await page.getAttribute('.me a.me-name', 'href'), `#/player/${name}`);

      // A guest's own name leads nowhere ("No such player").
      await playAsGuest(g.page);
      assert.equal(await g.page.locator('.me a.me-name').count(), 0);
      assert.match(await g.page.textContent('.me .me-name'), /^guest-/);
    });
    await closeAll([a, g]);
  });

  test('"How to play" gives the rules and a round to try, to anyone', async () => {
    await h.setUp();
    const [v] = await people(1);
    await h.withDiagnostics({ v }, async () => {
      const { page } = v;
      await page.goto('/#/watch');
      await page.getByRole('link', { name: 'How to play' }).click();
      await page.getByRole('heading', { level: 1, name: 'How to play' }).waitFor(STEP);
      assert.match(await page.textContent('.beats-list'), /5 beats 4 and 3/);
      // Player one picks 3, player two 2: 3 beats 2 and moves right.
      await page.getByRole('group', { name: 'Player one picks' }).getByLabel('3').check();
      await page.getByRole('group', { name: 'Player two picks' }).getByLabel('2').check();
      await page.getByRole('button', { name: 'Play the round' }).click();
      assert.equal(await page.textContent('#try-outcome'),
        "Round 1: 3 beats 2: player one's 3 moves one square right, toward +3, from the centre to +1.");
      assert.equal(await page.getAttribute('.try .lane[data-element="3"]', 'data-position'), '1');
      // Then 5 against 2: 2 beats 5 and moves left.
      await page.getByRole('group', { name: 'Player one picks' }).getByLabel('5').check();
      await page.getByRole('button', { name: 'Play the round' }).click();
      assert.match(await page.textContent('#try-outcome'), /^Round 2: 2 beats 5: player two's 2 moves one square left, toward −3, from the centre to −1\.$/);
      await page.getByRole('group', { name: 'Player one picks' }).getByLabel('4').check();
      await page.getByRole('group', { name: 'Player two picks' }).getByLabel('4').check();
      await page.getByRole('button', { name: 'Play the round' }).click();
      assert.equal(await page.textContent('#try-outcome'), 'Round 3: Both picked the same element: a tie, nothing moves.');
      assert.deepEqual(await axeViolations(page), []);
      assert.deepEqual(v.errors.map(String), []);
    });
    await closeAll([v]);
  });

  test('a beep and the tab title say when a round starts or the game ends, unless turned off', async () => {
    await h.setUp();
    const [a, b] = await people(2);
    await h.withDiagnostics({ a, b }, async () => {
      const { bySeat } = await newGame(a, b);
      const [one, two] = [bySeat.one.page, bySeat.two.page];
      const played = (page) => page.evaluate(() => window.elementals.alerts.played);
      // "(1)": one game waits for this player's move (see the "My games" test).
      await one.waitForFunction(() => document.title === '(1) Your move · Elementals', null, STEP);
      assert.deepEqual(await played(one), ['round'], 'the game start beeped');
      await pick(one, 1, 1);
      await one.waitForFunction(() => document.title === 'Elementals', null, STEP);
      await pick(two, 1, 2);
      await roundShown(one, 1);
      await one.waitForFunction(() => document.title === '(1) Your move · Elementals', null, STEP);
      assert.deepEqual(await played(one), ['round', 'round'], 'round 2 beeped');

      // Turned off, and still off after a reload.
      await two.getByLabel('Alerts').uncheck();
      assert.equal(await two.title(), 'Elementals');
      await two.reload();
      await two.waitForSelector('.game.playing', STEP);
      assert.equal(await two.getByLabel('Alerts').isChecked(), false);
      await pick(one, 2, 1);
      await pick(two, 2, 2);
      await roundShown(two, 2);
      await two.waitForSelector('.board[data-round="3"][data-phase="commit"]', STEP);
      assert.equal(await two.title(), 'Elementals', 'no title change when off');
      assert.deepEqual(await played(two), [], 'no beep when off');

      // The end: the winner's tab says so, with a sound.
      one.once('dialog', (d) => d.accept());
      await one.getByRole('button', { name: 'Resign' }).click();
      await one.waitForFunction(() => document.title === 'You lost · Elementals', null, STEP);
      assert.equal((await played(one)).at(-1), 'result');
      assert.equal(await two.title(), 'Elementals');
    });
    await closeAll([a, b]);
  });

  test('"My games" lists the game under way, with a badge and the tab title counting it while the move is yours', async () => {
    await h.setUp();
    const [a, b] = await people(2);
    await h.withDiagnostics({ a, b }, async () => {
      const { bySeat } = await newGame(a, b);
      const [one, two] = [bySeat.one.page, bySeat.two.page];
      const badge = (page) => page.locator('.my-games-link .badge');
      await one.waitForSelector('.my-games-link .badge:not([hidden])', STEP);
      assert.equal(await badge(one).textContent(), '1');
      await one.waitForFunction(() => document.title === '(1) Your move · Elementals', null, STEP);

      // The list: whom against, and that the move is this player's, until when.
      await one.getByRole('link', { name: /My games/ }).click();
      const mine = one.locator('.my-game');
      await one.waitForSelector('.my-game[data-owes="yes"]', STEP);
      assert.equal(await mine.count(), 1);
      assert.match(await mine.textContent(), new RegExp(`Against ${bySeat.two.name}`));
      assert.match(await mine.textContent(), /Your move: commit by \d/);

      // Picked: nothing is owed by this player, and the list says whom it waits for.
      await mine.getByRole('link', { name: `Open the game against ${bySeat.two.name}` }).click();
      await pick(one, 1, 1);
      await one.waitForSelector('.my-games-link .badge[hidden]', { ...STEP, state: 'attached' });
      await one.waitForFunction(() => document.title === 'Elementals', null, STEP);
      await one.getByRole('link', { name: /My games/ }).click();
      await one.waitForSelector('.my-game[data-owes="no"]', STEP);
      assert.match(await mine.textContent(), new RegExp(`Waiting for ${bySeat.two.name} to commit`));

      // Over (aborted: two has not picked in round 1): no game under way.
      await two.getByRole('button', { name: 'Abort' }).click();
      await one.waitForSelector('#no-open-games', STEP);
      assert.equal(await badge(one).isHidden(), true);
      assert.equal(await one.title(), 'Elementals');
    });
    await closeAll([a, b]);
  });
});
