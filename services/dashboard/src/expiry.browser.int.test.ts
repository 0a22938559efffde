// A message's expiry (ttl_seconds) in a real browser (Debian's Chromium, playwright-core), at 1366 px: the Send
// page offers it, and the message's timeline says when it expires; a message that expired is titled so on its
// timeline, with what EXPIRED means and what to do. Screenshots go to test-artifacts/expiry/.
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byTestId, launchChromium, lookAt, signIn, WAIT } from '../test/browser.js';
import {
  bot,
  companyWithOwner,
  messageStory,
  publishStory,
  startDashboardStack,
  type DashboardStack,
} from '../test/support.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'expiry');

let stack: DashboardStack;
let browser: Browser;
beforeAll(async () => {
  stack = await startDashboardStack({ gateway: true, dispatcher: false });
  browser = await launchChromium();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const look = (page: Page, name: string) => lookAt(page, ARTIFACTS, name);

describe('expiry (ttl_seconds)', () => {
  it('is offered on the Send page, and the timeline says when the message expires', async () => {
    const acme = await companyWithOwner(stack, 'Expiry send');
    const page = await signIn(browser, stack.url, 'en', 1366, acme.email);
    await page.goto(`${stack.url}/send`);
    await byTestId(page, 'send-phone').fill('+7 912 345-67-89');
    await byTestId(page, 'send-text').fill('Your login code: 4711');
    await byTestId(page, 'send-ttl').fill('300');
    await look(page, 'en-1366-01-send-with-ttl');
    await byTestId(page, 'send').click();
    await byTestId(page, 'sent-event-id').waitFor({ timeout: WAIT });
    await byTestId(page, 'follow').click();
    const expires = byTestId(page, 'expires-at');
    await expires.waitFor({ timeout: WAIT });
    expect(await expires.textContent()).toMatch(/^Expires at .+ \(ttl_seconds\)/);
    await look(page, 'en-1366-02-timeline-expires');
    await page.context().close();
  }, 180_000);

  for (const [language, title] of [
    ['en', 'Expired: not sent in time'],
    ['ru', 'Срок истёк: не отправлено вовремя'],
  ] as const) {
    it(`titles an expired message so, and explains EXPIRED (${language})`, async () => {
      const acme = await companyWithOwner(stack, `Expiry timeline ${language}`);
      const { botId } = await bot(stack, acme.companyId);
      const story = messageStory({
        companyId: acme.companyId,
        botId,
        text: 'Your login code: 4711',
        expiresInMs: 300_000,
        outcome: { sent: false, errorCode: 'EXPIRED' },
      });
      await publishStory(stack.publisher, story);
      const page = await signIn(browser, stack.url, language, 1366, acme.email);
      await page.goto(`${stack.url}/messages/${story.id}`);
      const explained = byTestId(page, 'failure-explained');
      await explained.waitFor({ timeout: WAIT });
      expect(await explained.textContent()).toContain('EXPIRED');
      expect(await explained.textContent()).toContain('ttl_seconds');
      await expect
        .poll(() => byTestId(page, 'timeline-type').allTextContents(), { timeout: WAIT })
        .toContain(title);
      // The moment it expires, on its acceptance and on its routing.
      expect(await byTestId(page, 'expires-at').count()).toBe(2);
      await look(page, `${language}-1366-03-expired`);
      await page.context().close();
    }, 180_000);
  }
});
