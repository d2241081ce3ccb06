// Launches Debian's Chromium through playwright-core. A browser that cannot start is an
// error, never a skipped test. Every page of every context it makes runs under the
// conformance hook (conformance.mjs): a frame on any of its WebSockets that does not
// conform to the protocol's schema fails the test.

import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

import { hookContext } from './conformance.mjs';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: run clients/web/run-tests.sh, or apt-get install chromium`);
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  // The conformance hook, on every context (`newPage` makes one too, through `newContext`).
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (...args) => {
    const context = await newContext(...args);
    hookContext(context);
    return context;
  };
  return browser;
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

/**
 * The contrast ratio (WCAG 2.x) of each element matched by `selector` against what is
 * behind it: its own background composited over each ancestor's, up to the first opaque
 * one (the page's). Colours are read through a canvas, so any CSS colour syntax the page
 * uses (oklch, color-mix) is measured as the screen shows it. Returns [{ text, ratio }].
 */
export async function contrastRatios(page, selector) {
  return page.$$eval(selector, (els) => {
    const ctx = document.createElement('canvas').getContext('2d', { willReadFrequently: true });
    const rgba = (css) => {
      ctx.clearRect(0, 0, 1, 1);
      ctx.fillStyle = '#000';
      ctx.fillStyle = css;
      ctx.fillRect(0, 0, 1, 1);
      const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
      return { r, g, b, a: a / 255 };
    };
    const over = (top, below) => ({
      r: top.r * top.a + below.r * (1 - top.a),
      g: top.g * top.a + below.g * (1 - top.a),
      b: top.b * top.a + below.b * (1 - top.a),
      a: 1,
    });
    const behind = (el) => {
      const layers = [];
      for (let n = el; n; n = n.parentElement) {
        const c = rgba(getComputedStyle(n).backgroundColor);
        if (c.a > 0) layers.push(c);
        if (c.a === 1) break;
      }
      let colour = { r: 255, g: 255, b: 255, a: 1 };
      for (const layer of layers.reverse()) colour = over(layer, colour);
      return colour;
    };
    const luminance = ({ r, g, b }) => {
      const lin = (v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    };
    return els.map((el) => {
      const bg = behind(el);
      const fg = over(rgba(getComputedStyle(el).color), bg);
      const [hi, lo] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
      return { text: el.textContent, ratio: (hi + 0.05) / (lo + 0.05) };
    });
  });
}

/**
 * What a narrow screen cuts off: whether the page is wider than the viewport, and each
 * element matched by `selector` that is not wholly inside it or that overlaps another.
 */
export async function offScreen(page, selector) {
  return page.evaluate((sel) => {
    const width = document.documentElement.clientWidth;
    const found = [];
    if (document.documentElement.scrollWidth > width) found.push(`the page is ${document.documentElement.scrollWidth} px wide, the screen ${width}`);
    const boxes = [...document.querySelectorAll(sel)].filter((e) => e.offsetParent).map((e) => [e, e.getBoundingClientRect()]);
    for (const [e, b] of boxes) {
      const what = e.textContent.trim() || e.outerHTML.slice(0, 60);
      if (b.left < 0 || b.right > width + 0.5) found.push(`"${what}" is cut off (${Math.round(b.left)}–${Math.round(b.right)})`);
      // Hidden inside its own box (text clipped or scrolled away).
      if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflow !== 'visible') found.push(`"${what}" is clipped`);
    }
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i][1], boxes[j][1]];
        if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) {
          found.push(`"${boxes[i][0].textContent.trim()}" overlaps "${boxes[j][0].textContent.trim()}"`);
        }
      }
    }
    return found;
  }, selector);
}
