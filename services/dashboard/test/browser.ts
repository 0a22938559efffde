// The dashboard in a real browser for its browser tests: Debian's Chromium driven by playwright-core, a member
// signed in through the sign-in page, and a look at a page (a screenshot, nothing past its right edge, no
// serious accessibility violation by axe-core).
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { PASSWORD } from './support.js';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
export const WAIT = 30_000;

export const byTestId = (page: Page, id: string) => page.locator(`[data-testid="${id}"]`);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
    ],
  });
}

/** A page of a new browser context in `language` at `width` px, signed in as `email` (test password). */
export async function signIn(
  browser: Browser,
  baseUrl: string,
  language: 'en' | 'ru',
  width: number,
  email: string,
): Promise<Page> {
  const context = await browser.newContext({
    locale: language === 'en' ? 'en-US' : 'ru-RU',
    viewport: { width, height: 900 },
    timezoneId: 'Europe/Moscow',
  });
  const page = await context.newPage();
  await page.goto(`${baseUrl}/sign-in`);
  await byTestId(page, 'email').fill(email);
  await byTestId(page, 'password').fill(PASSWORD);
  await byTestId(page, 'sign-in').click();
  // Attached, not visible: on a phone the company's name is in the menu.
  await byTestId(page, 'company-name').waitFor({ state: 'attached', timeout: WAIT });
  return page;
}

/** A full-page screenshot into `dir`, no text past the page's right edge, and no serious accessibility violation. */
export async function lookAt(page: Page, dir: string, name: string): Promise<void> {
  await page.waitForLoadState('networkidle');
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

/** Waits for a dialog to have faded in: axe measures colours as they are on the screen. */
export async function fadedIn(page: Page): Promise<void> {
  await expect
    .poll(() => page.evaluate(`getComputedStyle(document.querySelector('[role="dialog"]')).opacity`), {
      timeout: WAIT,
    })
    .toBe('1');
}
