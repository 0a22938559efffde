// The dashboard in a real browser for its browser tests: Debian's Chromium driven by playwright-core, a member
// signed in through the sign-in page, and a look at a page (a screenshot, nothing past its right edge, no
// serious accessibility violation by axe-core).
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { PASSWORD } from './support.js';

export { launchChromium, lookAt, settled } from '@mds/testkit/browser';
export const WAIT = 30_000;

export const byTestId = (page: Page, id: string) => page.locator(`[data-testid="${id}"]`);

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

/** Waits for a dialog to have faded in: axe measures colours as they are on the screen. */
export async function fadedIn(page: Page): Promise<void> {
  await expect
    .poll(() => page.evaluate(`getComputedStyle(document.querySelector('[role="dialog"]')).opacity`), {
      timeout: WAIT,
    })
    .toBe('1');
}
