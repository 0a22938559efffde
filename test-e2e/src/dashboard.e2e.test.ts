// The company dashboard in a real browser (Debian's Chromium, driven by playwright-core) against the whole
// stack as real processes: a company's owner, made by the operator with mds-admin, does everything without a
// terminal, in English and in Russian. Every page is screenshotted into test-artifacts/dashboard/ and checked
// with axe-core for serious accessibility violations.
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, lookAt } from '@mds/testkit/browser';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEvent, topics, type MessageEvent } from '@mds/contracts';
import { createEventPublisher, createKafkaClient } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { eventually } from '@mds/local-infra/testing';
import type { Stack } from './harness.js';
import { startDeliveryStack, uniquePhone, type Sandbox } from './sandbox.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'test-artifacts', 'dashboard');
const PASSWORD = 'a long passphrase for the dashboard';
const WAIT = 60_000;

let stack: Stack;
let sandbox: Sandbox;
let browser: Browser;

/** What the first test leaves for the others: the company, its owner and its first message. */
const shared: {
  companyId: string;
  email: string;
  messageId: string;
  inspector: string;
  phone: string;
} = {
  companyId: '',
  email: '',
  messageId: '',
  inspector: '',
  phone: '',
};

beforeAll(async () => {
  ({ stack, sandbox } = await startDeliveryStack());
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await sandbox?.close();
  await stack?.stop();
});

function context(locale: 'en-US' | 'ru-RU'): Promise<BrowserContext> {
  return browser.newContext({ locale, viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/Moscow' });
}

const byTestId = (page: Page, id: string) => page.locator(`[data-testid="${id}"]`);

/** A screenshot of the whole page, nothing past its right edge, and axe-core's check of it. */
const look = (page: Page, language: string, name: string) => lookAt(page, join(ARTIFACTS, language), name);

/** Follows a link of the navigation and waits for its page's heading (each page's title is its link's name). */
async function open(page: Page, name: string): Promise<void> {
  await page.getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { level: 1, name, exact: true }).waitFor();
}

async function signIn(page: Page, email: string): Promise<void> {
  await page.goto(`${sandbox.dashboardUrl}/sign-in`);
  await byTestId(page, 'email').fill(email);
  await byTestId(page, 'password').fill(PASSWORD);
  await byTestId(page, 'sign-in').click();
  await byTestId(page, 'company-name').waitFor();
}

/** Opens a one-time link and sets the password: the member is signed in on the overview. */
async function acceptLink(page: Page, link: string, name: string): Promise<void> {
  await page.goto(link);
  await byTestId(page, 'name').fill(name);
  await byTestId(page, 'new-password').fill(PASSWORD);
  await byTestId(page, 'repeat-password').fill(PASSWORD);
  await byTestId(page, 'save-password').click();
  await byTestId(page, 'company-name').waitFor();
}

describe('the dashboard', () => {
  it("a new company's owner, made by the operator, creates a key, sets the webhook, adds a bot, sends and follows the message to sent and its webhook", async () => {
    const sim = stack.service('messenger-simulator').url;
    const { company_id: companyId } = await sandbox.admin<{ company_id: string }>('POST', '/companies', {
      name: 'Северный магазин',
    });
    const email = `owner-${companyId.slice(0, 8)}@north.test`;
    const link = await sandbox.member(companyId, email);
    Object.assign(shared, { companyId, email, inspector: `north-${companyId.slice(0, 8)}` });

    const ctx = await context('en-US');
    const page = await ctx.newPage();
    await page.goto(link);
    await look(page, 'en', '01-set-password');
    await acceptLink(page, link, 'Olga Owner');
    expect(await byTestId(page, 'member-email').textContent()).toContain(email);

    // An API key, shown once, with the default scopes: everything but change_phone.
    await open(page, 'API keys');
    const ticked = () =>
      Promise.all(
        ['send', 'check', 'change_phone', 'read'].map((s) => byTestId(page, `scope-${s}`).isChecked()),
      );
    expect(await ticked()).toEqual([true, true, false, true]);
    await byTestId(page, 'key-label').fill('shop backend');
    await byTestId(page, 'create-key').click();
    const apiKey = (await byTestId(page, 'new-api-key').textContent())!.trim();
    expect(apiKey).toMatch(/^mds_[a-z0-9]{12}_/);
    // A second key, made on purpose to change numbers: change_phone ticked, read left out.
    await byTestId(page, 'key-label').fill('number changes');
    await byTestId(page, 'scope-change_phone').check();
    await byTestId(page, 'scope-read').uncheck();
    await byTestId(page, 'create-key').click();
    await expect.poll(() => byTestId(page, 'new-api-key').textContent()).not.toContain(apiKey);
    const moverKey = (await byTestId(page, 'new-api-key').textContent())!.trim();
    const scopesOf = (key: string) =>
      byTestId(page, `key-scopes-${/^mds_([a-z0-9]{12})_/.exec(key)![1]}`)
        .locator('[data-testid="key-scope"]')
        .allTextContents();
    await expect.poll(() => scopesOf(moverKey)).toEqual(['send', 'check', 'change_phone']);
    expect(await scopesOf(apiKey)).toEqual(['send', 'check', 'read']);
    expect(await ticked()).toEqual([true, true, false, true]);
    await look(page, 'en', '04-keys');

    // The webhook: the simulator's inspector stands in for the company's endpoint, verifying with the secret
    // the developer copies from this page.
    await open(page, 'Webhook endpoints');
    await byTestId(page, 'add-endpoint').click();
    await byTestId(page, 'endpoint-url').fill(`${sim}/inspector/${shared.inspector}/hooks`);
    await byTestId(page, 'endpoint-description').fill('North shop backend');
    await byTestId(page, 'save-endpoint').click();
    // Its secret, shown once when it is added.
    const secret = (await byTestId(page, 'new-endpoint-secret').textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    await sandbox.simulator('PUT', `/control/inspector/${shared.inspector}`, { secrets: [secret] });
    await byTestId(page, 'send-test-event').click();
    await expect
      .poll(() => byTestId(page, 'test-outcome').textContent(), { timeout: WAIT })
      .toBe('succeeded');
    await look(page, 'en', '05-webhook');
    const inspector = await ctx.newPage();
    await inspector.goto(`${sim}/inspector/${shared.inspector}`);
    expect(await inspector.locator('[data-testid^="verdict-"]').first().textContent()).toBe('verified');
    await inspector.screenshot({
      path: join(ARTIFACTS, 'en', '05b-inspector-test-event.png'),
      fullPage: true,
    });

    // A bot, its token checked by the messenger (the simulator) before it is saved.
    const created = await sandbox.simulator<{ id: number; token: string }>('POST', '/control/bots', {
      messenger: 'telegram',
      username: `north_${companyId.slice(0, 6)}_bot`,
      name: 'North shop',
    });
    await open(page, 'Bots');
    await byTestId(page, 'bot-name').fill('north');
    await byTestId(page, 'bot-token').fill(created.token);
    await page.getByLabel('Make it the default bot of its messenger').check();
    await byTestId(page, 'add-bot').click();
    await byTestId(page, 'bot-north').waitFor();
    await look(page, 'en', '06-bots');

    // A person starts the bot and shares their number: now a client.
    const phone = uniquePhone();
    shared.phone = phone;
    const person = await sandbox.person(phone, 'Ivan');
    const bots = await sandbox.admin<{ bots: { bot_id: string }[] }>('GET', `/companies/${companyId}/bots`);
    const bot = {
      simulatorId: created.id,
      botId: bots.bots[0]!.bot_id,
      messenger: 'telegram' as const,
      name: 'north',
      token: created.token,
    };
    await sandbox.startAndShareContact(person, bot);
    await sandbox.waitForLink(companyId, phone, bot, true);
    await open(page, 'Clients');
    await byTestId(page, 'client-phone').fill(phone);
    await byTestId(page, 'lookup').click();
    expect(await byTestId(page, 'reachable').textContent()).toBe('yes');
    await look(page, 'en', '07-clients');
    // Changing the number as the owner, no key to paste: the links move to the new number, then back.
    const changeTo = async (from: string, to: string) => {
      await byTestId(page, 'client-phone').fill(from);
      await byTestId(page, 'lookup').click();
      await expect.poll(() => byTestId(page, 'reachable').textContent(), { timeout: WAIT }).toBe('yes');
      await byTestId(page, 'new-phone').fill(to);
      await byTestId(page, 'change-phone').click();
      await byTestId(page, 'change-phone-confirm').click();
      await byTestId(page, 'change-accepted').waitFor();
      await byTestId(page, 'change-phone-confirm').waitFor({ state: 'detached' });
      await sandbox.waitForLink(companyId, to, bot, true);
    };
    const moved = uniquePhone();
    await changeTo(phone, moved);
    await look(page, 'en', '07b-change-phone');
    await changeTo(moved, phone);

    // Send with the key just made, then follow the message on its timeline to sent and its webhook.
    await open(page, 'Send a message');
    expect(await byTestId(page, 'api-key').count()).toBe(0);
    await byTestId(page, 'send-phone').fill(phone);
    await byTestId(page, 'send-text').fill('Your order #12 has shipped');
    await byTestId(page, 'add-button').click();
    await byTestId(page, 'button-text-0').fill('Track it');
    await byTestId(page, 'button-url-0').fill('https://example.com/track/12');
    expect(await byTestId(page, 'preview-max').textContent()).toContain('Track it');
    await look(page, 'en', '08-send');
    await byTestId(page, 'send').click();
    const messageId = (await byTestId(page, 'sent-event-id').textContent())!.trim();
    shared.messageId = messageId;
    await byTestId(page, 'follow').click();
    await expect.poll(() => byTestId(page, 'message-state').textContent(), { timeout: WAIT }).toBe('sent');
    await expect
      .poll(() => byTestId(page, 'webhook-state').textContent(), { timeout: WAIT })
      .toBe('delivered');
    // Routing and the outcome arrive on different topics: wait until the story has its five steps.
    await expect
      .poll(async () => (await byTestId(page, 'timeline-type').allTextContents()).length, { timeout: WAIT })
      .toBeGreaterThanOrEqual(5);
    const types = await byTestId(page, 'timeline-type').allTextContents();
    expect(types.slice(0, 4)).toEqual([
      'Accepted by the API',
      'Routed to a bot',
      'Sent: the messenger accepted it',
      'Webhook attempt',
    ]);
    expect(await byTestId(page, 'request-body').textContent()).toContain('Your order #12 has shipped');
    await look(page, 'en', '03-message-timeline');
    expect((await sandbox.inbox(person, bot)).map((m) => m.text)).toContain('Your order #12 has shipped');
    const delivered = async () =>
      (
        await sandbox.simulator<{ webhooks: { event_id: string; verified: boolean; webhook_id: string }[] }>(
          'GET',
          `/control/inspector/${shared.inspector}/webhooks`,
        )
      ).webhooks.filter((w) => w.event_id === messageId);
    expect((await delivered()).map((w) => w.verified)).toEqual([true]);

    // Resend the webhook from the message's page: a second delivery, same webhook-id, on the timeline too.
    await byTestId(page, 'resend-webhook').click();
    await byTestId(page, 'resent').waitFor();
    await eventually('the resent webhook', async () => (await delivered()).length === 2, WAIT);
    expect(new Set((await delivered()).map((w) => w.webhook_id)).size).toBe(1);
    await expect
      .poll(
        async () =>
          (await byTestId(page, 'timeline-type').allTextContents()).filter((t) => t === 'Webhook attempt')
            .length,
        { timeout: WAIT },
      )
      .toBe(2);

    // The log, the deliveries, the overview and the members, as the owner sees them now.
    await open(page, 'Messages');
    await byTestId(page, `message-${messageId}`).waitFor();
    await look(page, 'en', '02-messages');
    await open(page, 'Webhook deliveries');
    await byTestId(page, 'delivery-status').getByText('delivered').click();
    await byTestId(page, 'deliveries-table').waitFor();
    await look(page, 'en', '09-deliveries');
    await open(page, 'Overview');
    await expect.poll(() => byTestId(page, 'total-sent').textContent(), { timeout: WAIT }).toBe('1');
    await look(page, 'en', '00-overview');
    await open(page, 'Members');
    await byTestId(page, 'members-table').waitFor();
    await look(page, 'en', '10-members');
    await page.goto(`${sandbox.dashboardUrl}/no-such-page`);
    await look(page, 'en', '11-not-found');
    await ctx.close();
  });

  it('refuses a viewer any write, in the page and at the API', async () => {
    const ctx = await context('en-US');
    const page = await ctx.newPage();
    await signIn(page, shared.email);
    await open(page, 'Members');
    const viewerEmail = `viewer-${shared.companyId.slice(0, 8)}@north.test`;
    await byTestId(page, 'invite-email').fill(viewerEmail);
    await byTestId(page, 'invite-role').click();
    await page.getByRole('option', { name: 'viewer' }).click();
    await byTestId(page, 'invite').click();
    const link = (await byTestId(page, 'invite-link').textContent())!.trim();
    await look(page, 'en', '10b-members-invited');
    await ctx.close();

    const viewerCtx = await context('en-US');
    const viewer = await viewerCtx.newPage();
    await acceptLink(viewer, link, 'Victor Viewer');
    await open(viewer, 'API keys');
    await viewer.getByText('Your role can look here but not change anything.').waitFor();
    expect(await byTestId(viewer, 'create-key').count()).toBe(0);
    await viewer.goto(`${sandbox.dashboardUrl}/messages/${shared.messageId}`);
    await expect.poll(() => byTestId(viewer, 'message-state').textContent(), { timeout: WAIT }).toBe('sent');
    expect(await byTestId(viewer, 'resend-webhook').count()).toBe(0);
    // Checking a bot asks the messenger with its token: not for a viewer either.
    await open(viewer, 'Bots');
    await byTestId(viewer, 'bot-north').waitFor();
    expect(await byTestId(viewer, 'check-bot').count()).toBe(0);
    await look(viewer, 'en', '10c-bots-viewer');
    // The same writes straight at the API, with the viewer's own session and CSRF token, are refused.
    const refused = await viewer.evaluate(async (messageId) => {
      const session = (await (await fetch('/api/session')).json()) as { csrf_token: string };
      const post = (path: string, body?: unknown) =>
        fetch(path, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token },
          body: JSON.stringify(body ?? {}),
        }).then(async (r) => [r.status, ((await r.json()) as { code: string }).code]);
      return [
        await post('/api/keys', { label: 'sneaky' }),
        await post(`/api/messages/${messageId}/resend-webhook`),
        await post('/api/webhook/rotate'),
      ];
    }, shared.messageId);
    expect(refused).toEqual([
      [403, 'forbidden'],
      [403, 'forbidden'],
      [403, 'forbidden'],
    ]);
    await viewerCtx.close();
  });

  it("keeps another company's message out of reach by URL", async () => {
    const { company_id: other } = await sandbox.admin<{ company_id: string }>('POST', '/companies', {
      name: 'Other shop',
    });
    const link = await sandbox.member(other, `owner-${other.slice(0, 8)}@other.test`);
    const ctx = await context('en-US');
    const page = await ctx.newPage();
    await acceptLink(page, link, 'Otto Other');
    await page.goto(`${sandbox.dashboardUrl}/messages/${shared.messageId}`);
    await byTestId(page, 'message-not-found').waitFor();
    await look(page, 'en', '12-other-company-message');
    const status = await page.evaluate(
      async (id) => (await fetch(`/api/messages/${id}`)).status,
      shared.messageId,
    );
    expect(status).toBe(404);
    await page.goto(`${sandbox.dashboardUrl}/messages`);
    await byTestId(page, 'no-messages').waitFor();
    await ctx.close();
  });

  it('speaks Russian from the browser language, on every page', async () => {
    const ctx = await context('ru-RU');
    const page = await ctx.newPage();
    await page.goto(`${sandbox.dashboardUrl}/sign-in`);
    await page.getByRole('heading', { name: 'Вход' }).waitFor();
    expect(await page.getAttribute('html', 'lang')).toBe('ru');
    await look(page, 'ru', '00-sign-in');
    await signIn(page, shared.email);
    const pages: [string, string, string][] = [
      ['/', 'Обзор', '01-overview'],
      ['/messages', 'Сообщения', '02-messages'],
      [`/messages/${shared.messageId}`, 'Сообщение', '03-message-timeline'],
      ['/keys', 'Ключи API', '04-keys'],
      ['/webhook', 'Адреса вебхуков', '05-webhook'],
      ['/bots', 'Боты', '06-bots'],
      ['/clients', 'Клиенты', '07-clients'],
      ['/send', 'Отправить сообщение', '08-send'],
      ['/deliveries', 'Доставка вебхуков', '09-deliveries'],
      ['/members', 'Участники', '10-members'],
      ['/audit', 'Журнал действий', '15-audit'],
    ];
    for (const [path, heading, name] of pages) {
      await page.goto(`${sandbox.dashboardUrl}${path}`);
      await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
      if (path.startsWith('/messages/')) {
        await expect
          .poll(() => byTestId(page, 'message-state').textContent(), { timeout: WAIT })
          .toBe('отправлено');
        expect(await byTestId(page, 'timeline-type').first().textContent()).toBe('Принято API');
      }
      await look(page, 'ru', name);
    }
    // Dates and numbers in the Russian way.
    await page.goto(`${sandbox.dashboardUrl}/messages/${shared.messageId}`);
    expect(await page.locator('time').first().textContent()).toMatch(/\d{1,2} [а-я]{3,}\.? \d{4}/);
    // Switched to English by hand: every string follows, and the choice is kept.
    await byTestId(page, 'language').getByText('English').click();
    await page.getByRole('heading', { level: 1, name: 'Message', exact: true }).waitFor();
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Message', exact: true }).waitFor();
    expect(await page.getAttribute('html', 'lang')).toBe('en');
    await ctx.close();
  });

  it('says on every page how far behind its data is, and that a message just sent waits for its first events', async () => {
    const ctx = await context('en-US');
    const page = await ctx.newPage();
    await signIn(page, shared.email);
    // The read models cannot store anything for a while (their tables locked against writes; reads go on)...
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    await db.query('begin');
    await db.query('lock table dashboard.messages, dashboard.timeline in exclusive mode');
    const kafka = createKafkaClient(
      { brokers: stack.infra.kafkaBrokers.split(','), clientId: 'dashboard-e2e' },
      createLogger({ service: 'dashboard-e2e', level: 'silent' }),
    );
    const publisher = createEventPublisher({
      kafka,
      logger: createLogger({ service: 'x', level: 'silent' }),
      topicPrefix: stack.topicPrefix,
    });
    await publisher.connect();
    try {
      // ...while an event of another company, from four minutes ago, is the oldest one they have not stored.
      const messageId = randomUUID();
      await publisher.publish([
        {
          topic: topics.message,
          key: messageId,
          record: newEvent<MessageEvent>({
            eventId: randomUUID(),
            occurredAt: new Date(Date.now() - 4 * 60_000 - 5_000),
            companyId: randomUUID(),
            streamId: messageId,
            producer: 'telegram-sender',
            event: {
              $case: 'messageSent',
              value: { botId: randomUUID(), providerMessageId: '1', attempts: 1 },
            },
          }),
        },
      ]);
      const banner = byTestId(page, 'freshness-banner');
      await expect
        .poll(() => banner.textContent(), { timeout: WAIT })
        .toMatch(/^Data is 4 min behind; new messages will appear when it catches up/);
      await look(page, 'en', '12-data-behind');

      // A message sent now is accepted; followed on its timeline, it waits for its first events.
      await open(page, 'Send a message');
      await byTestId(page, 'send-phone').fill(shared.phone);
      await byTestId(page, 'send-text').fill('Sent while the dashboard is behind');
      await byTestId(page, 'send').click();
      const sentId = (await byTestId(page, 'sent-event-id').textContent())!.trim();
      await byTestId(page, 'follow').click();
      await byTestId(page, 'message-waiting').waitFor();
      expect(await byTestId(page, 'message-waiting').textContent()).toContain(
        'Accepted, waiting for its first events',
      );
      expect(await byTestId(page, 'message-not-found').count()).toBe(0);
      await banner.waitFor();
      await look(page, 'en', '13-message-waiting');
      await byTestId(page, 'language').getByText('Русский').click();
      await expect.poll(() => banner.textContent()).toMatch(/^Данные отстают на 4 мин/);
      expect(await byTestId(page, 'message-waiting').textContent()).toContain('Принято, ждём первых событий');
      await look(page, 'ru', '13-message-waiting');
      await byTestId(page, 'language').getByText('English').click();

      // Once the read models can store again they catch up: the message is there, and the banner is gone.
      await db.query('commit');
      await expect.poll(() => byTestId(page, 'message-state').textContent(), { timeout: WAIT }).toBe('sent');
      expect(page.url()).toContain(sentId);
      await expect.poll(() => banner.count(), { timeout: WAIT }).toBe(0);
      await look(page, 'en', '14-caught-up');
    } finally {
      await db.query('rollback').catch(() => undefined);
      await db.end();
      await publisher.disconnect();
      await ctx.close();
    }
  });
});
