import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Where Debian's Chromium is (`.ci/run` installs it): the browser tests drive it, nothing is downloaded. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Debian's Chromium, headless, as every browser test drives it (playwright-core): no sandbox (tests run as
 * root in CI), no GPU, and none of its own traffic (first-run pages, component updates, sync, QUIC probes),
 * so a test's network is only what the page under test asks for.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * Waits until the page has loaded, its fonts are in, no part of it says it is busy (`aria-busy`: the dashboard
 * marks its main region so while anything it shows loads for the first time), and no transition runs. Not
 * Playwright's `networkidle`: a page polling live data every half second never goes 500 ms without a request.
 * The transitions: a panel opening (a collapse, a dialog, a menu) is measured once open, since half-way its box
 * clips its text, and on a loaded machine "half-way" lasts long enough to be looked at.
 */
export async function settled(page: Page): Promise<void> {
  await page.waitForLoadState('load');
  await page.evaluate('document.fonts.ready.then(() => undefined)');
  await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });
  // Those running now, and any a cut-short one handed over to; not a spinner's, which never ends.
  await page.evaluate(`(async () => {
    for (let round = 0; round < 20; round++) {
      const running = document
        .getAnimations()
        .filter((a) => (a.playState === 'running' || a.playState === 'pending') && a.effect?.getTiming().iterations !== Infinity);
      if (running.length === 0) return;
      await Promise.all(running.map((a) => a.finished.catch(() => undefined)));
    }
  })()`);
}

/** A full-page screenshot into `dir`, no text past the page's right edge, and no serious accessibility violation. */
export async function lookAt(page: Page, dir: string, name: string): Promise<void> {
  // A dialog opening or closing is looked at once its transitions are over (axe measures colours as drawn).
  await settled(page);
  // From the top: the page's fixed header would otherwise be drawn across the middle of the full page.
  await page.evaluate('window.scrollTo(0, 0)');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
  const overflow = await page.evaluate(
    `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`,
  );
  const [scrollWidth, clientWidth] = overflow as [number, number];
  expect({ page: name, scrollWidth: scrollWidth <= clientWidth }).toEqual({ page: name, scrollWidth: true });
  await page.evaluate(AXE);
  const serious = await page.evaluate<{ id: string; targets: string[] }[]>(`axe.run(document, {
      resultTypes: ['violations'] }).then((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))`);
  expect({ page: name, serious }).toEqual({ page: name, serious: [] });
}
