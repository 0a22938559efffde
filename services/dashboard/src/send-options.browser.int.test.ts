// What the Send page offers beyond the text, and how a message's timeline shows it, in a real browser (Debian's
// Chromium, playwright-core) at 1366 px, on one stack: metadata rows sent through the gateway and shown in the
// request it accepted; an expiry (ttl_seconds) and a message that expired, titled so with what EXPIRED means;
// a time (send_at) and a scheduled message that was canceled, with what CANCELED means; fallback channels,
// and a message that Telegram could not deliver and MAX did, each step on its timeline (English and Russian,
// 1366 and 390 px). Screenshots go to test-artifacts/metadata/, expiry/, schedule/ and fallback/.
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

const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts');

let stack: DashboardStack;
let browser: Browser;
beforeAll(async () => {
  stack = await startDashboardStack({ gateway: true, personKeys: true, dispatcher: false });
  browser = await launchChromium();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** Sends the Send page's message, follows it to its timeline, and gives back the request it shows. */
async function sendAndFollow(page: Page): Promise<Record<string, unknown>> {
  await byTestId(page, 'send').click();
  const eventId = (await byTestId(page, 'sent-event-id').textContent({ timeout: WAIT }))!.trim();
  await byTestId(page, 'follow').click();
  await page.waitForURL(`**/messages/${eventId}`, { timeout: WAIT });
  const body = byTestId(page, 'request-body');
  await body.waitFor({ timeout: WAIT });
  return JSON.parse((await body.textContent())!) as Record<string, unknown>;
}

const look = (page: Page, folder: 'metadata' | 'expiry' | 'schedule' | 'fallback', name: string) =>
  lookAt(page, join(ARTIFACTS, folder), name);

describe('metadata', () => {
  it('sends metadata from the Send page and shows it on the timeline', async () => {
    const acme = await companyWithOwner(stack, 'Metadata');
    const page = await signIn(browser, stack.url, 'en', 1366, acme.email);
    await page.goto(`${stack.url}/send`);
    await byTestId(page, 'send-phone').fill('+7 912 345-67-89');
    await byTestId(page, 'send-text').fill('Your order has shipped');
    for (const [i, [key, value]] of [
      ['order_id', 'A-1042'],
      ['campaign.name', 'autumn sale'],
    ].entries()) {
      await byTestId(page, 'add-metadata').click();
      await byTestId(page, `metadata-key-${i}`).fill(key!);
      await byTestId(page, `metadata-value-${i}`).fill(value!);
    }
    await look(page, 'metadata', 'en-1366-01-send-metadata');
    expect(await sendAndFollow(page)).toMatchObject({
      text: 'Your order has shipped',
      metadata: { order_id: 'A-1042', 'campaign.name': 'autumn sale' },
    });
    await look(page, 'metadata', 'en-1366-02-timeline-metadata');
    await page.context().close();
  }, 120_000);
});

describe('expiry (ttl_seconds)', () => {
  it('is offered on the Send page, and the timeline says when the message expires', async () => {
    const acme = await companyWithOwner(stack, 'Expiry send');
    const page = await signIn(browser, stack.url, 'en', 1366, acme.email);
    await page.goto(`${stack.url}/send`);
    await byTestId(page, 'send-phone').fill('+7 912 345-67-89');
    await byTestId(page, 'send-text').fill('Your login code: 4711');
    await byTestId(page, 'send-ttl').fill('300');
    await look(page, 'expiry', 'en-1366-01-send-with-ttl');
    await byTestId(page, 'send').click();
    await byTestId(page, 'sent-event-id').waitFor({ timeout: WAIT });
    await byTestId(page, 'follow').click();
    const expires = byTestId(page, 'expires-at');
    await expires.waitFor({ timeout: WAIT });
    expect(await expires.textContent()).toMatch(/^Expires at .+ \(ttl_seconds\)/);
    await look(page, 'expiry', 'en-1366-02-timeline-expires');
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
      await look(page, 'expiry', `${language}-1366-03-expired`);
      await page.context().close();
    }, 180_000);
  }
});

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
    await look(page, 'schedule', 'en-1366-01-send-with-time');
    await byTestId(page, 'send').click();
    await byTestId(page, 'sent-event-id').waitFor({ timeout: WAIT });
    await byTestId(page, 'follow').click();
    const sendAt = byTestId(page, 'send-at');
    await sendAt.waitFor({ timeout: WAIT });
    expect(await sendAt.textContent()).toMatch(/^Scheduled for .+ \(send_at\)/);
    await look(page, 'schedule', 'en-1366-02-timeline-scheduled');
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
      await look(page, 'schedule', `${language}-1366-03-canceled`);
      await page.context().close();
    }
  }, 180_000);
});

describe('fallback', () => {
  it('is offered on the Send page (up to 3 channels) and sent with the message', async () => {
    const acme = await companyWithOwner(stack, 'Fallback send');
    const maxBot = await bot(stack, acme.companyId, 'max');
    for (const [language, width] of [
      ['ru', 390],
      ['en', 1366],
    ] as const) {
      const page = await signIn(browser, stack.url, language, width, acme.email);
      await page.goto(`${stack.url}/send`);
      await byTestId(page, 'send-phone').fill('+7 912 345-67-89');
      await byTestId(page, 'send-text').fill('Your order has shipped');
      for (let i = 0; i < 3; i++) await byTestId(page, 'add-fallback').click();
      expect(await byTestId(page, 'add-fallback').isDisabled()).toBe(true);
      // A new row starts on the other messenger than the send's own (Telegram): MAX.
      expect(await byTestId(page, 'fallback-service-0').inputValue()).toBe('MAX');
      await byTestId(page, 'fallback-bot-0').click();
      await page.getByRole('option', { name: maxBot.name }).click();
      await look(page, 'fallback', `${language}-${width}-01-send-fallback`);
      if (language === 'en') {
        // Two rows removed: one fallback, to MAX's bot, is sent.
        for (const n of [3, 2]) await page.getByRole('button', { name: `Remove fallback ${n}` }).click();
        expect(await sendAndFollow(page)).toMatchObject({
          service: 'telegram',
          fallback: [{ service: 'max', bot_name: maxBot.name }],
        });
        await look(page, 'fallback', `${language}-${width}-02-timeline-requested`);
      }
      await page.context().close();
    }
  }, 180_000);

  it('shows each step of a fallback on the timeline: Telegram could not reach the person, MAX sent it', async () => {
    const acme = await companyWithOwner(stack, 'Fallback timeline');
    const { botId } = await bot(stack, acme.companyId, 'max');
    const story = messageStory({
      companyId: acme.companyId,
      botId,
      fallback: { botName: 'shop_max_bot', errorCode: 'CLIENT_NOT_LINKED_TO_BOT' },
    });
    await publishStory(stack.publisher, story);
    const says = {
      en: {
        steps: [
          'Accepted by the API',
          'Not reachable there: trying the next channel',
          'Routed to a bot',
          'Sent: the messenger accepted it',
        ],
        step: 'Not reachable on Telegram (shop_bot): CLIENT_NOT_LINKED_TO_BOT, trying MAX (shop_max_bot).',
        decided: 'Decided on MAX (shop_max_bot), after 1 channel that could not reach the person.',
      },
      ru: {
        steps: [
          'Принято API',
          'Недоступен в этом канале: пробуем следующий',
          'Передано боту',
          'Отправлено: мессенджер принял',
        ],
        step: 'Недоступен в Telegram (shop_bot): CLIENT_NOT_LINKED_TO_BOT, пробуем MAX (shop_max_bot).',
        decided: 'Итог решён в MAX (shop_max_bot), после 1 канала, где получатель недоступен.',
      },
    };
    for (const language of ['en', 'ru'] as const)
      for (const width of [1366, 390]) {
        const page = await signIn(browser, stack.url, language, width, acme.email);
        await page.goto(`${stack.url}/messages/${story.id}`);
        const decidedOn = byTestId(page, 'decided-on');
        await decidedOn.waitFor({ timeout: WAIT });
        expect(await decidedOn.textContent()).toBe(says[language].decided);
        expect(await byTestId(page, 'attempt-failed').textContent()).toBe(says[language].step);
        // The message's channel is the one that decided it, not the one asked for first.
        expect(await byTestId(page, 'message-channel').textContent()).toBe('MAX (shop_max_bot)');
        // In order: accepted, the Telegram attempt, routed to MAX, sent.
        await expect
          .poll(() => byTestId(page, 'timeline-type').allTextContents(), { timeout: WAIT })
          .toEqual(says[language].steps);
        expect(JSON.parse((await byTestId(page, 'request-body').textContent())!)).toMatchObject({
          fallback: [{ service: 'max', bot_name: 'shop_max_bot' }],
        });
        await look(page, 'fallback', `${language}-${width}-03-timeline-fallback`);
        await page.context().close();
      }
  }, 180_000);
});
