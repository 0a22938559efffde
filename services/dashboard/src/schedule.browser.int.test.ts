// Scheduling (send_at) and cancel in a real browser (Debian's Chromium, playwright-core), at 1366 px: the Send
// page offers a time, and the message's timeline says when it is scheduled for; a scheduled message that was
// canceled shows the cancel and is titled so, with what CANCELED means. Screenshots go to
// test-artifacts/schedule/.
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

const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'schedule');

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

/** Picks a day a few days ahead (within 30) in the date-time field's calendar, at its default time. */
async function pickDayAhead(page: Page, testId: string): Promise<void> {
  await byTestId(page, testId).click();
  const today = new Date();
  let day = today.getDate() + 2;
  if (day > 28) {
    await page.locator('[data-direction="next"]').first().click();
    day = 1;
  }
  await page
    .locator('button.mantine-DateTimePicker-day:not([data-outside])')
    .getByText(String(day), { exact: true })
    .click();
  await page.getByRole('button', { name: 'Done' }).click();
}

describe('scheduling (send_at) and cancel', () => {
  it('is offered on the Send page, and the timeline says when the message is scheduled for', async () => {
    const acme = await companyWithOwner(stack, 'Schedule send');
    const page = await signIn(browser, stack.url, 'en', 1366, acme.email);
    await page.goto(`${stack.url}/send`);
    await byTestId(page, 'send-phone').fill('+7 912 345-67-89');
    await byTestId(page, 'send-text').fill('Your table is booked for 19:00 today');
    await pickDayAhead(page, 'send-at-field');
    await look(page, 'en-1366-01-send-with-time');
    await byTestId(page, 'send').click();
    await byTestId(page, 'sent-event-id').waitFor({ timeout: WAIT });
    await byTestId(page, 'follow').click();
    const sendAt = byTestId(page, 'send-at');
    await sendAt.waitFor({ timeout: WAIT });
    expect(await sendAt.textContent()).toMatch(/^Scheduled for .+ \(send_at\)/);
    await look(page, 'en-1366-02-timeline-scheduled');
    await page.context().close();
  }, 180_000);

  it('shows the cancel of a scheduled message, titles it canceled, and explains CANCELED', async () => {
    const acme = await companyWithOwner(stack, 'Schedule cancel');
    const { botId } = await bot(stack, acme.companyId);
    const story = messageStory({
      companyId: acme.companyId,
      botId,
      text: 'Your table is booked for 19:00 today',
      sendInMs: 3_600_000,
      canceled: true,
      outcome: { sent: false, errorCode: 'CANCELED' },
    });
    await publishStory(stack.publisher, story);
    for (const [language, cancelTitle, canceledTitle] of [
      ['en', 'Cancel requested', 'Canceled: never sent'],
      ['ru', 'Запрошена отмена', 'Отменено: не отправлено'],
    ] as const) {
      const page = await signIn(browser, stack.url, language, 1366, acme.email);
      await page.goto(`${stack.url}/messages/${story.id}`);
      const explained = byTestId(page, 'failure-explained');
      await explained.waitFor({ timeout: WAIT });
      expect(await explained.textContent()).toContain('CANCELED');
      await expect
        .poll(() => byTestId(page, 'timeline-type').allTextContents(), { timeout: WAIT })
        .toEqual(expect.arrayContaining([cancelTitle, canceledTitle]));
      expect(await byTestId(page, 'send-at').count()).toBe(2);
      await look(page, `${language}-1366-03-canceled`);
      await page.context().close();
    }
  }, 180_000);
});
