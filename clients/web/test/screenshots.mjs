// Takes the screenshots in docs/screenshots/: the lobby, a game in progress, the watch
// view, the live games and how to play, at desktop (1280x800) and phone (390x844) sizes,
// from a real server and Chromium.
//
//   node clients/web/test/screenshots.mjs
//
// Lives beside the tests because it drives the same real server and browser, but it is a
// script: under `node --test` (which runs every file in test/) it does nothing.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { launchBrowser, newPlayer } from '../testkit/browser.mjs';
import { REPO, startServer } from '../testkit/server.mjs';
import {
  joinPool, pick, playAsGuest, roundShown, seatOf, signUp, waitForGame, watchFromList,
} from '../testkit/scenario.mjs';

const SIZES = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
};
const STEP = { timeout: 30_000 };

async function settled(page) {
  // Finite animations (a token sliding, the moved element's bump) have finished.
  await page.waitForFunction(
    () => document.getAnimations().every((a) => a.effect?.getComputedTiming().iterations === Infinity || a.playState !== 'running'),
    null,
    STEP,
  );
}

async function shoot(page, outDir, name) {
  for (const [size, viewport] of Object.entries(SIZES)) {
    await page.setViewportSize(viewport);
    await page.evaluate(() => window.scrollTo(0, 0));
    // No hover highlight from the last click.
    await page.mouse.move(0, 0);
    await settled(page);
    const path = join(outDir, `${name}-${size}.png`);
    await page.screenshot({ path });
    console.log(`wrote ${path}`);
  }
  await page.setViewportSize(SIZES.desktop);
}

async function main() {
  const outDir = join(REPO, 'docs', 'screenshots');
  mkdirSync(outDir, { recursive: true });
  const server = await startServer();
  const browser = await launchBrowser();
  try {
    const [ada, ben, cy, viewer] = await Promise.all([0, 1, 2, 3].map(() => newPlayer(browser, server.url)));
    await signUp(ada.page, 'ada');
    await signUp(ben.page, 'ben');
    await signUp(cy.page, 'cleo');
    // An open seek, so the lobby shows one.
    await cy.page.selectOption('#variant', '7/3/4');
    await cy.page.selectOption('#seek-preset', 'rapid');
    await cy.page.getByRole('button', { name: 'Create a seek' }).click();
    await ada.page.getByRole('button', { name: 'Refresh' }).click();
    await ada.page.waitForSelector('.seeks table', STEP);

    await joinPool(ada.page, 'blitz', '5/2/3');
    await ada.page.waitForSelector('#queue-status', STEP);
    await shoot(ada.page, outDir, 'lobby');

    await joinPool(ben.page, 'blitz', '5/2/3');
    await waitForGame(ada.page);
    await waitForGame(ben.page);
    const bySeat = { [await seatOf(ada.page)]: ada.page, [await seatOf(ben.page)]: ben.page };
    const names = { [await seatOf(ada.page)]: 'ada', [await seatOf(ben.page)]: 'ben' };
    await playAsGuest(viewer.page);
    await watchFromList(viewer.page, names.one, names.two);

    const rounds = [[5, 2], [3, 1], [4, 4], [1, 2]];
    for (const [i, [one, two]] of rounds.entries()) {
      await pick(bySeat.one, i + 1, one);
      await pick(bySeat.two, i + 1, two);
      await roundShown(bySeat.one, i + 1);
      await roundShown(viewer.page, i + 1);
    }
    // Round 5: seat one has committed, seat two is thinking.
    await pick(bySeat.one, 5, 3);
    await viewer.page.waitForSelector('.player[data-seat="one"] .seat-state.done', STEP);
    await bySeat.two.waitForFunction(() => document.querySelector('#spectators')?.textContent === '1 watching', null, STEP);
    await shoot(bySeat.two, outDir, 'game');
    await shoot(viewer.page, outDir, 'watch');
    await viewer.page.goto('/#/watch');
    await viewer.page.waitForSelector('.live-game', STEP);
    await shoot(viewer.page, outDir, 'live-games');
    await viewer.page.goto('/#/how');
    await viewer.page.getByRole('button', { name: 'Play the round' }).click();
    await viewer.page.waitForSelector('.try .lane.moved', STEP);
    await shoot(viewer.page, outDir, 'how-to-play');
  } finally {
    await browser.close();
    await server.stop();
  }
}

if (process.env.NODE_TEST_CONTEXT) {
  console.log('# screenshots.mjs is a script, not a test: run it with node');
} else {
  await main();
}
