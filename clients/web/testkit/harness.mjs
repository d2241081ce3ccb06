// What every end-to-end test file shares: one server and one browser, started inside the
// first test that needs them (not in a `before` hook, whose failure the runner reports as
// cancelled tests), and diagnostics added to a failing scenario.

import { readFileSync } from 'node:fs';

import { launchBrowser } from './browser.mjs';
import { startServer } from './server.mjs';

/**
 * Round 1's call-off (30 s in production) would end a scenario that runs slowly on a loaded
 * machine before its players act in round 1 (an Abort, a second pick). Every server the
 * harness starts gives round 1 ten minutes, unless the test file sets its own window
 * (timers.test.mjs tests the call-off with a short one).
 */
const ROUND_ONE_WINDOW = ['--first-commit-secs', '600'];

/** `serverOptions` goes to startServer (extra arguments, say). */
export function harness(serverOptions = {}) {
  const extraArgs = serverOptions.extraArgs ?? [];
  if (!extraArgs.includes('--first-commit-secs')) serverOptions = { ...serverOptions, extraArgs: [...ROUND_ONE_WINDOW, ...extraArgs] };
  const h = {
    server: null,
    browser: null,
    started: null,
    /** Start the server and the browser once: a browser that cannot start fails every test. */
    setUp() {
      h.started ??= (async () => {
        h.server = await startServer(serverOptions);
        h.browser = await launchBrowser();
      })();
      return h.started;
    },
    async tearDown() {
      await h.browser?.close();
      await h.server?.stop();
    },
    /**
     * Run a scenario; on failure, add what each page logged and the server's log tail to
     * the error, and keep a screenshot of each page.
     */
    async withDiagnostics(players, fn) {
      try {
        await fn();
      } catch (e) {
        for (const [name, { page, errors }] of Object.entries(players)) {
          await page.screenshot({ path: `/tmp/elementals-e2e-${name}.png` }).catch(() => {});
          if (errors.length) e.message += `\n--- ${name}'s page logged: ${errors.map(String).join(' | ')}`;
        }
        const log = h.server ? readFileSync(h.server.log, 'utf8').split('\n').slice(-60).join('\n') : '';
        e.message += `\n--- screenshots: /tmp/elementals-e2e-*.png; server log (${h.server?.log}) tail ---\n${log}`;
        throw e;
      }
    },
  };
  return h;
}
