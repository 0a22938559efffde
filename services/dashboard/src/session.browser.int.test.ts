// Acting as yourself, in a real browser (Debian's Chromium, playwright-core), in English and Russian, on a laptop
// (1366 px) and a phone (390 px): a developer sends from the Send page with no API key to paste (the phone field
// shows a greyed pattern and the format), the message is theirs in the log; the owner reads it in the audit
// trail and follows the event id to the message; a developer has no audit trail. Screenshots go to
// test-artifacts/session/; axe-core finds no serious accessibility violation.
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byTestId, launchChromium, lookAt, signIn, WAIT } from '../test/browser.js';
import { companyWithOwner, member, startDashboardStack, type DashboardStack } from '../test/support.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'session');

let stack: DashboardStack;
let browser: Browser;
beforeAll(async () => {
  stack = await startDashboardStack({ gateway: true });
  browser = await launchChromium();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const look = (page: Page, name: string) => lookAt(page, ARTIFACTS, name);

const TEXT = {
  en: {
    sent: 'Sent a message',
    audit: 'Audit trail',
    hint: 'With the country code',
    role: 'role: developer',
  },
  ru: {
    sent: 'Отправка сообщения',
    audit: 'Журнал действий',
    hint: 'С кодом страны',
    role: 'роль: разработчик',
  },
};

describe('acting as yourself', () => {
  for (const language of ['en', 'ru'] as const) {
    it(`sends from the Send page with no key to paste, and the owner reads it in the audit trail (${language})`, async () => {
      const acme = await companyWithOwner(stack, `Session ${language}`);
      const developer = await member(stack, acme.owner, 'developer');
      // A viewer made a developer: the trail says the new role in the page's language.
      const viewer = await member(stack, acme.owner, 'viewer');
      const members = await acme.owner.call<{ members: { member_id: string; email: string }[] }>(
        'GET',
        '/members',
      );
      const viewerId = members.body.members.find((m) => m.email === viewer.email)!.member_id;
      expect((await acme.owner.call('PATCH', `/members/${viewerId}`, { role: 'developer' })).status).toBe(
        200,
      );

      const page = await signIn(browser, stack.url, language, 1366, developer.email);
      await page.goto(`${stack.url}/send`);
      const phone = byTestId(page, 'send-phone');
      await phone.waitFor({ timeout: WAIT });
      // Nothing secret asked for; the phone field's pattern is a placeholder, not a value, and the format is said.
      expect(await byTestId(page, 'api-key').count()).toBe(0);
      expect(await phone.inputValue()).toBe('');
      expect(await phone.getAttribute('placeholder')).toBe('+7 900 000-00-00');
      const described = await phone.getAttribute('aria-describedby');
      expect(await page.locator(`[id="${described}"]`).textContent()).toContain(TEXT[language].hint);
      // The placeholder is drawn greyed, apart from what a person types.
      const colours = await page.evaluate<[string, string]>(`(() => {
        const input = document.querySelector('[data-testid="send-phone"]');
        return [getComputedStyle(input, '::placeholder').color, getComputedStyle(input).color];
      })()`);
      expect(colours[0]).not.toBe(colours[1]);
      await look(page, `${language}-1366-01-send-empty`);

      await phone.fill('+7 912 345-67-89');
      await byTestId(page, 'send-text').fill(
        language === 'en' ? 'Your order has shipped' : 'Заказ отправлен',
      );
      await look(page, `${language}-1366-02-send-filled`);
      await byTestId(page, 'send').click();
      const eventId = (await byTestId(page, 'sent-event-id').textContent({ timeout: WAIT }))!.trim();
      expect(eventId).toMatch(/^[0-9a-f-]{36}$/);
      await look(page, `${language}-1366-03-send-accepted`);
      // The Clients page's number field reads the same way.
      await page.goto(`${stack.url}/clients`);
      await byTestId(page, 'client-phone').waitFor({ timeout: WAIT });
      expect(await byTestId(page, 'client-phone').getAttribute('placeholder')).toBe('+7 900 000-00-00');
      await look(page, `${language}-1366-03b-clients`);
      // No audit trail for a developer: not in the menu, and the page says so.
      expect(await page.getByRole('link', { name: TEXT[language].audit }).count()).toBe(0);
      await page.goto(`${stack.url}/audit`);
      await byTestId(page, 'audit-table').waitFor({ state: 'detached', timeout: WAIT });
      await page.getByRole('heading', { name: TEXT[language].audit }).waitFor({ timeout: WAIT });
      expect(await byTestId(page, 'audit-entry').count()).toBe(0);

      for (const width of [1366, 390]) {
        const owner = await signIn(browser, stack.url, language, width, acme.email);
        if (width === 1366) {
          await owner.getByRole('link', { name: TEXT[language].audit }).click();
        } else {
          await owner.goto(`${stack.url}/audit`);
        }
        const where = width === 1366 ? 'audit-table' : 'audit-cards';
        const sent = byTestId(owner, where).getByText(TEXT[language].sent);
        await sent.waitFor({ timeout: WAIT });
        expect(await byTestId(owner, where).textContent()).toContain(developer.email);
        expect(await byTestId(owner, where).textContent()).toContain(TEXT[language].role);
        await look(owner, `${language}-${width}-04-audit`);
        // The event id is the way to the message.
        await byTestId(owner, where).locator('[data-testid="audit-message-link"]').first().click();
        await owner.waitForURL(`**/messages/${eventId}`, { timeout: WAIT });
        // The message says who sent it: the member, from the dashboard (not a key id).
        await expect
          .poll(() => byTestId(owner, 'accepted-from').textContent(), { timeout: WAIT })
          .toContain(developer.email);
        if (width === 1366) await look(owner, `${language}-1366-05-message`);
        await owner.context().close();
      }
      await page.context().close();
    }, 120_000);
  }
});
