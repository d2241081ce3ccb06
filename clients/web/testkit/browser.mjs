// Launches Debian's Chromium through playwright-core. A browser that cannot start is an
// error, never a skipped test.

import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: run clients/web/run-tests.sh, or apt-get install chromium`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

/** A fresh browser context (its own storage: a separate person) with one page. */
export async function newPlayer(browser, baseUrl, viewport = { width: 1280, height: 800 }) {
  const context = await browser.newContext({ baseURL: baseUrl, viewport });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(new Error(m.text()));
  });
  return { context, page, errors };
}
