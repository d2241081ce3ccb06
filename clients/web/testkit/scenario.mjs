// Steps a person takes in the browser, shared by the end-to-end tests and the screenshot
// script. Every wait is on a DOM condition, never on a fixed delay.

const STEP = { timeout: 30_000 };

export async function signUp(page, name, password = 'correct horse battery') {
  await page.goto('/#/login');
  await page.waitForSelector('#name', STEP);
  await page.getByLabel('New account').check();
  await page.fill('#name', name);
  await page.fill('#password', password);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForSelector('.lobby .pools', STEP);
}

export async function playAsGuest(page) {
  await page.goto('/#/login');
  await page.getByRole('button', { name: 'Play as guest' }).click();
  await page.waitForSelector('.lobby .pools', STEP);
}

/** Join the quick-pairing pool for a preset with the variant chosen in the lobby. */
export async function joinPool(page, preset = 'blitz', variant = '5/2/3') {
  await page.selectOption('#variant', variant);
  await page.click(`button.pool[data-preset="${preset}"]`);
  await page.waitForSelector('.queue:not([hidden]), .game.playing', STEP);
}

export async function waitForGame(page) {
  await page.waitForSelector('.game.playing', STEP);
  return page.getAttribute('.game', 'data-game-id');
}

/** The seat this page plays, from the card marked "you". */
export async function seatOf(page) {
  return page.locator('.player:has(.tag.you)').getAttribute('data-seat');
}

/** Wait until `round` is open for picking on this page, then click `element`. */
export async function pick(page, round, element) {
  await page.waitForSelector(`.board[data-round="${round}"][data-phase="commit"]`, STEP);
  const button = page.locator(`button.pick[data-element="${element}"]`);
  await button.waitFor(STEP);
  await page.waitForSelector(`button.pick[data-element="${element}"]:not([disabled])`, STEP);
  await button.click();
  // Taken: the button shows the pick, or (when the opponent had already committed) the
  // round has moved on, which may happen within a frame on a fast machine.
  await page.waitForFunction(
    ([round, element]) => {
      const board = document.querySelector('.board');
      if (Number(board.dataset.round) !== round || board.dataset.phase !== 'commit') return true;
      return !!document.querySelector(`button.pick.chosen[data-element="${element}"]`);
    },
    [round, element],
    STEP,
  );
}

/** Wait until this page lists round `round` as resolved. */
export async function roundShown(page, round) {
  await page.waitForSelector(`.rounds .round-item[data-round="${round}"]`, STEP);
}

export async function boardPositions(page) {
  return page.getAttribute('.board', 'data-positions');
}

/** From the live-games list, watch the first game between these two players. */
export async function watchFromList(page, one, two) {
  await page.goto('/#/watch');
  const link = page.getByRole('link', { name: `Watch ${one} against ${two}` });
  await link.waitFor(STEP);
  await link.click();
  await page.waitForSelector('.game.watching .board', STEP);
}
