// Launches Debian's Chromium through playwright-core. A browser that cannot start is an
// error, never a skipped test.

import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
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

/**
 * A fresh browser context (its own storage: a separate person) with one page. `options`
 * goes to `browser.newContext` (a phone: `{ viewport, hasTouch: true, isMobile: true }`).
 */
export async function newPlayer(browser, baseUrl, viewport = { width: 1280, height: 800 }, options = {}) {
  const context = await browser.newContext({ baseURL: baseUrl, viewport, ...options });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(new Error(m.text()));
  });
  return { context, page, errors };
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core's findings on the page as it is now: the WCAG 2.1 A and AA rules, axe's best
 * practices, and the check that a control's accessible name contains its visible text.
 * Returns one line per violating node, so that an assertion shows what to fix.
 */
export async function axeViolations(page) {
  const found = await page.evaluate(async (source) => {
    if (!window.axe) new Function(source)();
    const result = await window.axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
      rules: { 'label-content-name-mismatch': { enabled: true } },
      resultTypes: ['violations'],
    });
    return result.violations.flatMap((v) =>
      v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary.replace(/\s+/g, ' ')}`));
  }, AXE);
  return found;
}
