// The web inbox in a real headless Chromium (Debian's), driven by playwright-core.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closeAll, getJson, postJson, startSimulator, type PersonView } from '../../test/simulator.js';

const ARTIFACTS = join(import.meta.dirname, '../../test-artifacts');

let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
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
});
afterAll(async () => {
  await browser?.close();
});
afterEach(closeAll);

/** Clicks a button whose script posts to the control API and then reloads the page. */
async function clickAndReload(page: Page, testid: string): Promise<void> {
  await Promise.all([page.waitForEvent('load'), page.click(`[data-testid="${testid}"]`)]);
}

describe('web inbox', () => {
  it('creates a person, starts a bot, shows received messages with link buttons, shares contact, blocks and unblocks', async () => {
    const sim = await startSimulator({ TELEGRAM_CHAT_BURST: '20' });
    const bot = await sim.control.createBot('telegram', 'shop_bot', 'Shop');
    await sim.control.createBot('max', 'shop', 'Shop MAX');
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(sim.base);
    expect(await page.title()).toBe('Messenger simulator inbox');

    await page.fill('#create-person input[name="phone_number"]', '+7 912 345 67 89');
    await page.fill('#create-person input[name="first_name"]', 'Ivan');
    await Promise.all([page.waitForEvent('load'), page.click('[data-testid="create-person"]')]);
    const { people } = await sim.control.call<{ people: PersonView[] }>('GET', '/people');
    expect(people.map((p) => p.phone_number)).toEqual(['79123456789']);
    const person = people[0]!;
    const chat = `${person.id}-${bot.id}`;

    await clickAndReload(page, `start-${chat}`);
    expect(await page.textContent(`[data-testid="status-${chat}"]`)).toBe('active');

    await postJson(`${sim.base}/bot${bot.token}/sendMessage`, {
      chat_id: person.telegram_user_id,
      text: 'Your order #1 has shipped',
      reply_markup: { inline_keyboard: [[{ text: 'Track order', url: 'https://shop.example/track/1' }]] },
    });
    // The page notices the new message by itself (it polls the world's version).
    const link = await page.waitForSelector(`[data-chat="${chat}"] a.button.link`);
    expect(await link.textContent()).toBe('Track order');
    expect(await link.getAttribute('href')).toBe('https://shop.example/track/1');
    expect(await page.textContent(`[data-chat="${chat}"] .from-bot .text`)).toBe('Your order #1 has shipped');

    await clickAndReload(page, `share_contact-${chat}`);
    const updates = await getJson(`${sim.base}/bot${bot.token}/getUpdates`);
    const messages = (
      updates.body.result as {
        message?: { from: { id: number }; contact?: { user_id: number; phone_number: string } };
      }[]
    ).map((u) => u.message);
    const contact = messages.find((m) => m?.contact);
    expect(contact?.contact).toEqual({
      phone_number: '79123456789',
      first_name: 'Ivan',
      user_id: person.telegram_user_id,
    });
    expect(contact?.from.id).toBe(person.telegram_user_id);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'inbox.png'), fullPage: true });

    await clickAndReload(page, `block-${chat}`);
    expect(await page.textContent(`[data-testid="status-${chat}"]`)).toBe('blocked');
    const refused = await postJson(`${sim.base}/bot${bot.token}/sendMessage`, {
      chat_id: person.telegram_user_id,
      text: 'hello?',
    });
    expect(refused.body).toMatchObject({
      error_code: 403,
      description: 'Forbidden: bot was blocked by the user',
    });

    await clickAndReload(page, `unblock-${chat}`);
    expect(await page.textContent(`[data-testid="status-${chat}"]`)).toBe('active');
    const viewed = await sim.control.call<PersonView>('GET', `/people/${person.id}`);
    expect(viewed.chats).toEqual([expect.objectContaining({ bot_id: bot.id, status: 'active' })]);
    await page.close();
  });

  it('shows people whose names and words hold controls, broken characters and 64 K characters readably', async () => {
    const sim = await startSimulator();
    const bot = await sim.control.createBot('telegram', 'shop_bot', 'Shop');
    const person = await sim.control.createPerson(
      '79123456789',
      'Iv\u0000an \u0007\u001b[31m \ud800 \ufffe',
      {
        last_name: 'x'.repeat(65_536),
      },
    );
    await sim.control.act(person.id, { action: 'start', bot_id: bot.id });
    await sim.control.act(person.id, {
      action: 'send_text',
      bot_id: bot.id,
      text: 'hi\u0000 \u007f\nnext line',
    });
    await sim.control.act(person.id, {
      action: 'share_contact',
      bot_id: bot.id,
      contact: { phone_number: '7912\u0000\u001b', first_name: 'Other' },
    });
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(sim.base);
    const name = (await page.textContent(`[data-testid="name-${person.id}"]`))?.trim();
    // The first 80 characters (17 of the first name and the space), then how many there are.
    expect(name).toBe(`IvNULan BELESC[31m U+D800 U+FFFE ${'x'.repeat(63)}… (65553 characters)`);
    expect(await page.$$eval(`[data-testid="name-${person.id}"] .control`, (els) => els.length)).toBe(5);
    const words = await page.$$eval(`[data-chat="${person.id}-${bot.id}"] .from-person .text`, (els) =>
      els.map((e) => e.textContent),
    );
    expect(words).toEqual(['/start', 'hiNUL DEL\nnext line', 'shared a contact: Other 7912NULESC']);
    // Nothing runs past the page's width.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1200);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'inbox-hostile.png'), fullPage: true });
    await page.close();
  });

  it('shows why an action failed instead of failing silently', async () => {
    const sim = await startSimulator();
    const page = await browser.newPage();
    await page.goto(sim.base);
    await page.fill('#create-person input[name="phone_number"]', '12345');
    await page.fill('#create-person input[name="first_name"]', 'Bad');
    await page.click('[data-testid="create-person"]');
    await page.waitForSelector('#notice.bad');
    expect(await page.textContent('#notice')).toContain('phone_number');
    await page.close();
  });
});
