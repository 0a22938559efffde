// The dashboard's pages in a real browser (Debian's Chromium, driven by playwright-core), for the browser tests:
// a member signed in, in a language and at a width, and a look at a page (a screenshot, nothing past its right
// edge, no serious accessibility violation by axe-core).
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { PASSWORD } from './support.js';

export const WAIT = 30_000;
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

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

export const byTestId = (page: Page, id: string) => page.locator(`[data-testid="${id}"]`);

/** A new browser context in `language` at `width` px, signed in as `email` on the dashboard at `url`. */
export async function signedIn(
  browser: Browser,
  url: string,
  o: { language: 'en' | 'ru'; width: number; email: string },
): Promise<Page> {
  const context = await browser.newContext({
    locale: o.language === 'en' ? 'en-US' : 'ru-RU',
    viewport: { width: o.width, height: 900 },
    timezoneId: 'Europe/Moscow',
  });
  const page = await context.newPage();
  await page.goto(`${url}/sign-in`);
  await byTestId(page, 'email').fill(o.email);
  await byTestId(page, 'password').fill(PASSWORD);
  await byTestId(page, 'sign-in').click();
  // Attached, not visible: on a phone the company's name is in the menu.
  await byTestId(page, 'company-name').waitFor({ state: 'attached', timeout: WAIT });
  return page;
}

/**
 * A full-page screenshot to `folder`/`name`.png, no text past the page's right edge, and no serious
 * accessibility violation.
 */
export async function look(page: Page, folder: string, name: string): Promise<void> {
  await page.waitForLoadState('networkidle');
  // From the top: the page's fixed header would otherwise be drawn across the middle of the full page.
  await page.evaluate('window.scrollTo(0, 0)');
  mkdirSync(folder, { recursive: true });
  await page.screenshot({ path: join(folder, `${name}.png`), fullPage: true });
  const [scrollWidth, clientWidth] = await page.evaluate<[number, number]>(
    `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`,
  );
  expect({ page: name, scrollWidth: scrollWidth <= clientWidth }).toEqual({ page: name, scrollWidth: true });
  await page.evaluate(AXE);
  const serious = await page.evaluate<{ id: string; targets: string[] }[]>(`axe.run(document, {
      resultTypes: ['violations'] }).then((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))`);
  expect({ page: name, serious }).toEqual({ page: name, serious: [] });
}
