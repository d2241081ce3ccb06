// End to end: real browsers (Debian's Chromium via playwright-core) against a real
// elementals-server built from this checkout. Two people sign up, meet in the classic
// blitz pool and play a whole game by clicking; a third watches from the live list; one
// player reloads mid-round and still reveals; the leaderboard shows the new ratings.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newPlayer } from '../testkit/browser.mjs';
import { harness } from '../testkit/harness.mjs';
import {
  boardPositions, joinPool, pick, playAsGuest, roundShown, seatOf, signUp, waitForGame, watchFromList,
} from '../testkit/scenario.mjs';

const STEP = { timeout: 30_000 };

const h = harness();
const withDiagnostics = (players, fn) => h.withDiagnostics(players, fn);
let server;
let browser;

async function setUp() {
  await h.setUp();
  ({ server, browser } = h);
}

describe('the browser client against a real server', { timeout: 600_000 }, () => {
  after(() => h.tearDown());

  test('the server serves the embedded client', async () => {
    await setUp();
    const page = await fetch(`${server.url}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type'), /^text\/html/);
    const html = await page.text();
    const js = html.match(/src="(\/app\.js\?v=[0-9a-f]+)"/)[1];
    const css = html.match(/href="(\/app\.css\?v=[0-9a-f]+)"/)[1];
    const script = await fetch(`${server.url}${js}`);
    assert.match(script.headers.get('content-type'), /^text\/javascript/);
    assert.match(script.headers.get('cache-control'), /immutable/);
    const style = await fetch(`${server.url}${css}`);
    assert.match(style.headers.get('content-type'), /^text\/css/);
  });

  test('what is typed into the sign-in form outlasts a lost connection', { timeout: 120_000 }, async () => {
    await setUp();
    const gina = await newPlayer(browser, server.url);
    await withDiagnostics({ gina }, async () => {
      const { page } = gina;
      const signUpButton = page.getByRole('button', { name: 'Create account' });
      await page.goto('/#/login');
      // The buttons wait for the connection.
      await page.waitForSelector('#auth-submit:not([disabled])', STEP);
      await page.getByLabel('New account').check();
      await page.fill('#name', 'gina');
      await page.fill('#password', 'correct horse battery');
      await page.evaluate(() => window.elementals.conn.drop());
      await page.waitForSelector('.banner:not([hidden])', STEP);
      assert.equal(await signUpButton.isDisabled(), true, 'no sign-up while reconnecting');
      await page.waitForSelector('.banner', { ...STEP, state: 'hidden' });
      // Back online: the form is the same one, still filled in, and it signs up.
      assert.equal(await page.inputValue('#name'), 'gina');
      assert.equal(await page.inputValue('#password'), 'correct horse battery');
      await signUpButton.click();
      await page.waitForSelector('.lobby .pools', STEP);
      assert.deepEqual(gina.errors.map(String), [], "gina's page logged no errors");
    });
    await gina.context.close();
  });

  test('two players are paired in the classic blitz pool and play a full game, watched, with a reload', { timeout: 300_000 }, async () => {
    await setUp();
    const alice = await newPlayer(browser, server.url);
    const bob = await newPlayer(browser, server.url);
    const watcher = await newPlayer(browser, server.url);
    const pages = { alice: alice.page, bob: bob.page, watcher: watcher.page };
    await withDiagnostics({ alice, bob, watcher }, async () => {
      await signUp(alice.page, 'alice');
      await signUp(bob.page, 'bob');
      await joinPool(alice.page, 'blitz', '5/2/3');
      await alice.page.waitForSelector('.queue:not([hidden])', STEP);
      await joinPool(bob.page, 'blitz', '5/2/3');
      const gameId = await waitForGame(alice.page);
      assert.equal(await waitForGame(bob.page), gameId);

      const seats = { alice: await seatOf(alice.page), bob: await seatOf(bob.page) };
      assert.deepEqual(new Set(Object.values(seats)), new Set(['one', 'two']));
      const bySeat = { [seats.alice]: alice.page, [seats.bob]: bob.page };
      const names = { [seats.alice]: 'alice', [seats.bob]: 'bob' };

      await playAsGuest(watcher.page);
      await watchFromList(watcher.page, names.one, names.two);
      assert.equal(await watcher.page.getAttribute('.game', 'data-game-id'), gameId);
      assert.equal(await watcher.page.locator('button.pick').count(), 0, 'a spectator has no pick buttons');
      // The players learn that someone watches (batched pushes).
      await alice.page.waitForFunction(() => document.querySelector('#spectators')?.textContent === '1 watching', null, STEP);

      // Seat one always picks 1 and seat two 2: 2 beats 1, so element 2 walks to -3
      // and seat two wins in three rounds.
      const picks = { one: 1, two: 2 };
      for (let round = 1; round <= 3; round++) {
        if (round === 2) {
          // Seat one commits, reloads before the reveal, and must still reveal.
          const reloader = bySeat.one;
          await pick(reloader, round, picks.one);
          await reloader.waitForSelector('.player[data-seat="one"] .seat-state.done', STEP);
          await reloader.reload();
          await reloader.waitForSelector('.game.playing', STEP);
          await reloader.waitForSelector(`.board[data-round="2"]`, STEP);
          assert.equal(await reloader.locator('button.pick.chosen').getAttribute('data-element'), String(picks.one),
            'after the reload the page still shows the committed pick');
          await pick(bySeat.two, round, picks.two);
        } else {
          await pick(bySeat.one, round, picks.one);
          await pick(bySeat.two, round, picks.two);
        }
        for (const page of Object.values(pages)) await roundShown(page, round);
        const moved = await watcher.page.getAttribute('.lane.moved', 'data-element');
        assert.equal(moved, '2', `round ${round}: element 2 moved`);
        // Each page says what happened, from its own side.
        assert.equal(await bySeat.one.textContent('#last-round'), `Round ${round}: their 2 beat your 1: 2 moves to −${round}${round === 3 ? ', the edge' : ''}.`);
        assert.equal(await bySeat.two.textContent('#last-round'), `Round ${round}: your 2 beat their 1: 2 moves to −${round}${round === 3 ? ', the edge' : ''}.`);
        assert.equal(await watcher.page.textContent('#last-round'), `Round ${round}: ${names.two}'s 2 beat ${names.one}'s 1: 2 moves to −${round}${round === 3 ? ', the edge' : ''}.`);
      }

      for (const page of Object.values(pages)) await page.waitForSelector('.result:not([hidden]) h2', STEP);
      const winner = names.two;
      const loser = names.one;
      const winnerPage = bySeat.two;
      const loserPage = bySeat.one;
      assert.match(await winnerPage.textContent('.result h2'), /You won/);
      assert.match(await loserPage.textContent('.result h2'), /You lost/);
      assert.match(await watcher.page.textContent('.result h2'), new RegExp(`${winner} won`));

      const finalBoard = '0,-3,0,0,0';
      assert.equal(await boardPositions(alice.page), finalBoard);
      assert.equal(await boardPositions(bob.page), finalBoard);
      assert.equal(await boardPositions(watcher.page), finalBoard, 'the spectator sees the same final board');
      assert.equal(await watcher.page.locator('.rounds .round-item').count(), 3);

      // Rated: both players see the rating change once it is recorded.
      await winnerPage.waitForSelector('.result .ratings li', STEP);
      assert.match(await winnerPage.textContent(`.result .ratings li[data-seat="two"]`), /1\.00 → 1\.50 \(\+0\.50\)/);
      assert.match(await winnerPage.textContent(`.result .ratings li[data-seat="one"]`), /1\.00 → 1\.00/);
      await loserPage.waitForSelector('.result .ratings li', STEP);

      // The leaderboard shows both new ratings.
      await watcher.page.goto('/#/leaderboard');
      await watcher.page.waitForSelector(`tr[data-player="${winner}"]`, STEP);
      assert.equal(await watcher.page.textContent(`tr[data-player="${winner}"] .rating`), '1.50');
      assert.equal(await watcher.page.textContent(`tr[data-player="${loser}"] .rating`), '1.00');

      // And the winner's page charts the history.
      await watcher.page.click(`tr[data-player="${winner}"] a`);
      await watcher.page.waitForSelector('.rating-chart polyline', STEP);
      assert.equal(await watcher.page.textContent('#player-rating'), '1.50');

      for (const [name, p] of Object.entries({ alice, bob, watcher })) {
        assert.deepEqual(p.errors.map(String), [], `${name}'s page logged no errors`);
      }
    });
    await Promise.all([alice, bob, watcher].map((p) => p.context.close()));
  });

  test('a player who reloads or loses the connection mid-game gets the game back', { timeout: 180_000 }, async () => {
    await setUp();
    const carol = await newPlayer(browser, server.url);
    const dave = await newPlayer(browser, server.url);
    await withDiagnostics({ carol, dave }, async () => {
      await signUp(carol.page, 'carol');
      await signUp(dave.page, 'dave');
      // A seek this time: dave accepts carol's.
      await carol.page.selectOption('#variant', '5/2/3');
      await carol.page.getByRole('button', { name: 'Create a seek' }).click();
      const accept = dave.page.getByRole('button', { name: "Accept carol's seek" });
      await dave.page.getByRole('button', { name: 'Refresh' }).click();
      await accept.waitFor(STEP);
      await accept.click();
      const gameId = await waitForGame(carol.page);
      await waitForGame(dave.page);
      const seats = { carol: await seatOf(carol.page), dave: await seatOf(dave.page) };
      const bySeat = { [seats.carol]: carol.page, [seats.dave]: dave.page };
      await pick(bySeat.one, 1, 3);
      await pick(bySeat.two, 1, 1);
      await roundShown(carol.page, 1);

      // Reload in round 2 before picking: the page comes back to the same game, round and board.
      await carol.page.reload();
      await carol.page.waitForSelector('.game.playing', STEP);
      assert.equal(await carol.page.getAttribute('.game', 'data-game-id'), gameId);
      assert.equal(await carol.page.getAttribute('.board', 'data-round'), '2');
      assert.equal(await carol.page.getAttribute('.board', 'data-positions'), '0,0,1,0,0');
      assert.equal(await carol.page.locator('.rounds .round-item').count(), 1);
      // Also from the lobby: the link leads back to the game.
      await carol.page.goto('/#/lobby');
      await carol.page.getByRole('link', { name: /return to it/ }).click();
      await carol.page.waitForSelector('.game.playing', STEP);

      // The game goes on, by keyboard this time for carol.
      await carol.page.waitForSelector('button.pick:not([disabled])', STEP);
      const carolPick = seats.carol === 'one' ? 3 : 1;
      await carol.page.keyboard.press(String(carolPick));
      await carol.page.waitForSelector(`button.pick.chosen[data-element="${carolPick}"]`, STEP);
      // Her connection drops after the commit: the page reconnects, resumes, and still
      // reveals when dave has picked.
      await carol.page.evaluate(() => window.elementals.conn.drop());
      await carol.page.waitForSelector('.banner:not([hidden])', STEP);
      await carol.page.waitForSelector('.banner', { ...STEP, state: 'hidden' });
      await pick(dave.page, 2, seats.dave === 'one' ? 3 : 1);
      await roundShown(carol.page, 2);
      await roundShown(dave.page, 2);

      // Carol resigns; dave wins.
      carol.page.once('dialog', (d) => d.accept());
      await carol.page.getByRole('button', { name: 'Resign' }).click();
      await carol.page.waitForSelector('.result:not([hidden]) h2', STEP);
      assert.match(await carol.page.textContent('.result h2'), /You lost \(by resignation\)/);
      await dave.page.waitForSelector('.result:not([hidden]) h2', STEP);
      assert.match(await dave.page.textContent('.result h2'), /You won/);
    });
    await Promise.all([carol, dave].map((p) => p.context.close()));
  });

  test('a challenge by name, a draw by agreement and a rematch with seats swapped', { timeout: 180_000 }, async () => {
    await setUp();
    const erin = await newPlayer(browser, server.url);
    const finn = await newPlayer(browser, server.url);
    await withDiagnostics({ erin, finn }, async () => {
      await signUp(erin.page, 'erin');
      await signUp(finn.page, 'finn');
      await erin.page.fill('#opponent', 'finn');
      // A reconnection rebuilds the lobby; the name typed so far stays.
      await erin.page.evaluate(() => window.elementals.conn.drop());
      await erin.page.waitForSelector('.banner:not([hidden])', STEP);
      await erin.page.waitForSelector('.banner', { ...STEP, state: 'hidden' });
      await erin.page.waitForSelector('.lobby .pools', STEP);
      assert.equal(await erin.page.inputValue('#opponent'), 'finn');
      await erin.page.getByRole('button', { name: 'Challenge', exact: true }).click();
      await erin.page.getByText('You challenged finn').waitFor(STEP);
      const accept = finn.page.getByRole('button', { name: "Accept erin's challenge" });
      await accept.waitFor(STEP);
      await accept.click();
      const first = await waitForGame(erin.page);
      assert.equal(await waitForGame(finn.page), first);
      const erinSeat = await seatOf(erin.page);

      await erin.page.getByRole('button', { name: 'Offer draw' }).click();
      await finn.page.getByRole('button', { name: 'Accept draw' }).click();
      for (const page of [erin.page, finn.page]) {
        await page.waitForSelector('.result:not([hidden]) h2', STEP);
        assert.equal(await page.textContent('.result h2'), 'Draw agreed.');
      }

      await erin.page.getByRole('button', { name: 'Rematch', exact: true }).click();
      await erin.page.getByRole('button', { name: 'Rematch offered' }).waitFor(STEP);
      await finn.page.getByRole('button', { name: 'Accept rematch' }).click();
      // The finished game's view stays up until the new game arrives: wait for a new id.
      await erin.page.waitForSelector(`.game.playing:not([data-game-id="${first}"])`, STEP);
      const second = await waitForGame(erin.page);
      await finn.page.waitForSelector(`.game.playing[data-game-id="${second}"]`, STEP);
      await erin.page.waitForSelector(`.game.playing[data-game-id="${second}"]`, STEP);
      assert.notEqual(second, first);
      assert.notEqual(await seatOf(erin.page), erinSeat, 'the rematch swaps the seats');
      for (const [name, p] of Object.entries({ erin, finn })) {
        assert.deepEqual(p.errors.map(String), [], `${name}'s page logged no errors`);
      }
    });
    await Promise.all([erin, finn].map((p) => p.context.close()));
  });
});
