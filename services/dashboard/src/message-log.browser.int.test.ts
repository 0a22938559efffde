// Finding any message and understanding its failure, in a real browser (Debian's Chromium, driven by
// playwright-core), in English and Russian, on a laptop (1366 px) and a phone (390 px): the log shows each
// message's text and id with its messenger named and its error in words; one box finds by words of the text
// (any case) or by message id; the whole row opens the message; the timeline explains the failure without
// service names; the overview explains its failures and counts in whole numbers; the CSV export downloads what
// the search found. Screenshots go to test-artifacts/message-log/; axe-core finds nothing serious.
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byTestId, launchChromium, lookAt, signIn, WAIT } from '../test/browser.js';
import {
  bot,
  companyWithOwner,
  eventually,
  messageStory,
  publishStory,
  startDashboardStack,
  type DashboardStack,
} from '../test/support.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'message-log');

let stack: DashboardStack;
let browser: Browser;

beforeAll(async () => {
  stack = await startDashboardStack({ dispatcher: false });
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const signedIn = (language: 'en' | 'ru', width: number, email: string) =>
  signIn(browser, stack.url, language, width, email);
const look = (page: Parameters<typeof lookAt>[0], name: string) => lookAt(page, ARTIFACTS, name);

const WORDS = {
  en: {
    failed: 'Nobody with this number',
    todo: 'share their phone number',
    window: 'messages at a time',
    live: 'Newest first',
  },
  ru: {
    failed: 'Нет клиента с этим номером',
    todo: 'поделиться номером телефона',
    window: 'сообщений за раз',
    live: 'Сначала новые',
  },
};

/** A company with three messages: an order in Russian, a code in English, and one that failed. */
async function companyWithMessages(name: string) {
  const { owner, companyId, email } = await companyWithOwner(stack, name);
  const { botId } = await bot(stack, companyId);
  const start = Date.now() - 30 * 60_000;
  const order = messageStory({ companyId, botId, text: 'Ваш Заказ №1042 отправлен', at: new Date(start) });
  const code = messageStory({
    companyId,
    botId,
    text: 'Your login code is 4711',
    phone: '79031112233',
    at: new Date(start + 60_000),
  });
  const failed = messageStory({
    companyId,
    botId,
    text: 'Your parcel is waiting',
    phone: '79035556677',
    at: new Date(start + 120_000),
    outcome: { sent: false, errorCode: 'CLIENT_NOT_FOUND' },
  });
  for (const s of [order, code, failed]) await publishStory(stack.publisher, s);
  await eventually('three messages decided', async () => {
    const rows = (await owner.call<{ messages: { state: string }[] }>('GET', '/messages')).body.messages;
    return rows.length === 3 && rows.every((r) => r.state !== 'new');
  });
  return { email, order, code, failed };
}

describe('the message log', () => {
  for (const language of ['en', 'ru'] as const) {
    const w = WORDS[language];

    it(`finds a message by text or id, opens it from its row, and explains its failure (${language}, 1366 px)`, async () => {
      const { email, order, code, failed } = await companyWithMessages(`Log ${language}`);
      const page = await signedIn(language, 1366, email);
      await page.goto(`${stack.url}/messages`);
      const table = byTestId(page, 'messages-table');
      await table.waitFor({ timeout: WAIT });
      const failedRow = byTestId(page, `message-${failed.id}`);
      expect(await failedRow.textContent()).toContain('Your parcel is waiting');
      expect(await failedRow.textContent()).toContain(failed.id);
      expect(await failedRow.textContent()).toContain('Telegram');
      expect(await failedRow.textContent()).not.toContain('telegram');
      expect(await failedRow.textContent()).toContain(w.failed);
      await look(page, `${language}-1366-01-log`);

      // Words of the text, in another case: only the order.
      await byTestId(page, 'filter-find').fill('заказ');
      await byTestId(page, 'apply-filters').click();
      await byTestId(page, `message-${order.id}`).waitFor({ timeout: WAIT });
      await expect.poll(() => page.locator('tbody tr').count(), { timeout: WAIT }).toBe(1);
      expect(await byTestId(page, 'text-window').textContent()).toContain(w.window);
      expect(new URL(page.url()).searchParams.get('text')).toBe('заказ');
      // The export takes the same search.
      const href = (await byTestId(page, 'export-csv').getAttribute('href'))!;
      expect(href).toBe(`/api/messages.csv?text=${encodeURIComponent('заказ')}&lang=${language}`);
      const csv = await page.request.get(`${stack.url}${href}`);
      expect(csv.status()).toBe(200);
      const lines = (await csv.text()).trim().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[1]).toContain(order.id);
      await look(page, `${language}-1366-02-found-by-text`);

      // A whole message id: that message only.
      await byTestId(page, 'filter-find').fill(` ${code.id.toUpperCase()} `);
      await byTestId(page, 'apply-filters').click();
      await expect
        .poll(() => new URL(page.url()).searchParams.get('event_id'), { timeout: WAIT })
        .toBe(code.id);
      await expect.poll(() => page.locator('tbody tr').count(), { timeout: WAIT }).toBe(1);
      await byTestId(page, `message-${code.id}`).waitFor({ timeout: WAIT });

      // The whole row is the link: a click on its text opens the message.
      await byTestId(page, 'filter-find').fill('');
      await byTestId(page, 'apply-filters').click();
      await failedRow.locator('[data-testid="message-text"]').click();
      await page.waitForURL(`**/messages/${failed.id}`, { timeout: WAIT });
      const explained = byTestId(page, 'failure-explained');
      await explained.waitFor({ timeout: WAIT });
      expect(await explained.textContent()).toContain(w.failed);
      expect(await explained.textContent()).toContain(w.todo);
      expect(await explained.textContent()).toContain('CLIENT_NOT_FOUND');
      const timeline = (await byTestId(page, 'timeline').textContent())!;
      for (const internal of ['client-registry', 'telegram-sender', 'gateway', 'webhook-dispatcher'])
        expect(timeline).not.toContain(internal);
      expect(await page.locator('main').textContent()).not.toContain('event_id');
      await look(page, `${language}-1366-03-failure-explained`);

      // The overview says what each failure means, and counts in whole numbers.
      await page.goto(`${stack.url}/`);
      const failure = byTestId(page, 'failure-CLIENT_NOT_FOUND');
      await failure.waitFor({ timeout: WAIT });
      expect(await failure.textContent()).toContain(w.failed);
      expect(await failure.textContent()).toContain(w.todo);
      expect(await failure.textContent()).toContain('Telegram');
      const tickLabels = page.locator('.recharts-yAxis-tick-labels text');
      await tickLabels.first().waitFor({ timeout: WAIT });
      const ticks = await tickLabels.allTextContents();
      expect(ticks.length).toBeGreaterThan(0);
      for (const tick of ticks) expect(tick, `axis tick ${tick}`).toMatch(/^\d+$/);
      await look(page, `${language}-1366-04-overview-failures`);
      await page.context().close();
    }, 180_000);

    it(`fits a phone: filters behind one control, a card per message that opens it (${language}, 390 px)`, async () => {
      const { email, failed } = await companyWithMessages(`Phone ${language}`);
      const page = await signedIn(language, 390, email);
      await page.goto(`${stack.url}/messages`);
      const card = byTestId(page, `message-${failed.id}`);
      await card.waitFor({ timeout: WAIT });
      expect(await card.textContent()).toContain(w.failed);
      expect(await card.textContent()).toContain('Your parcel is waiting');
      expect(await byTestId(page, 'filter-find').isVisible()).toBe(false);
      await look(page, `${language}-390-01-log`);
      await byTestId(page, 'filters-toggle').click();
      await byTestId(page, 'filter-find').waitFor({ state: 'visible', timeout: WAIT });
      await look(page, `${language}-390-02-filters-open`);
      await byTestId(page, 'filters-toggle').click();
      await card.locator('[data-testid="message-text"]').click();
      await page.waitForURL(`**/messages/${failed.id}`, { timeout: WAIT });
      await byTestId(page, 'failure-explained').waitFor({ timeout: WAIT });
      await look(page, `${language}-390-03-failure-explained`);
      await page.context().close();
    }, 180_000);
  }
});
